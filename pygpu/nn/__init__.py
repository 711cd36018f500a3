"""pygpu.nn: modules, layers and losses with PyTorch's interface, on the tensor API."""
from . import functional, init
from .activation import ELU, GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .layers import (MLP, Linear, ModuleDict, ModuleList, ParameterDict, ParameterList,
                     Sequential)
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss,
                   MSELoss, NLLLoss, SmoothL1Loss)
from .module import Module
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d
from .flatten import Flatten, Identity, Unflatten
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d,
                            InstanceNorm2d, LayerNorm, LocalResponseNorm)
from .resample import (Fold, PixelShuffle, PixelUnshuffle, Unfold, Upsample,
                       UpsamplingBilinear2d, UpsamplingNearest2d)
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,
                      AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d, MaxUnpool1d,
                      MaxUnpool2d)
from .sparse import Embedding
from .parameter import Parameter
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder,
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from . import utils
from . import attention  # torch.nn.attention: SDPBackend, sdpa_kernel
from . import parallel
from .parallel import DataParallel
from .sync_batchnorm import SyncBatchNorm

__all__ = ["functional", "init", "utils", "Module", "Parameter", "Linear", "ReLU", "Tanh",
           "Sigmoid", "LeakyReLU", "ELU", "GELU", "SiLU", "Softmax", "LogSoftmax", "Sequential",
           "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "MLP", "Flatten",
           "Unflatten", "Identity", "Dropout", "LayerNorm", "BatchNorm1d", "Embedding",
           "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "parallel", "DataParallel", "SyncBatchNorm",
           "BatchNorm2d", "BatchNorm3d", "Conv1d", "Conv2d", "ConvTranspose1d",
           "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "MaxUnpool1d", "MaxUnpool2d",
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
           "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerEncoderLayer",
           "TransformerDecoder", "TransformerDecoderLayer", "Dropout3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
           "LocalResponseNorm", "Dropout1d", "Dropout2d", "AlphaDropout", "Upsample",
           "UpsamplingNearest2d", "UpsamplingBilinear2d", "Unfold", "Fold", "PixelShuffle",
           "PixelUnshuffle"]

from .memory import MemoryEstimate, estimate_memory  # noqa: E402 - trainloop's addition
__all__ += ["estimate_memory", "MemoryEstimate"]

# the rest of torch.nn's modules (issue 43): activations, losses, distances, padding, ...
from .activation import (CELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish,  # noqa: E402
                         Hardtanh, LogSigmoid, Mish, PReLU, ReLU6, RReLU, Softmax2d, Softmin,
                         Softplus, Softshrink, Softsign, Tanhshrink, Threshold)
from .loss import (CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss,  # noqa: E402
                   MarginRankingLoss, MultiLabelMarginLoss, MultiLabelSoftMarginLoss,
                   MultiMarginLoss, NLLLoss2d, PoissonNLLLoss, SoftMarginLoss,
                   TripletMarginLoss, TripletMarginWithDistanceLoss)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .padding import CLASSES as _PADDING  # noqa: E402
from .layers import Bilinear, Container  # noqa: E402
from .normalization import CrossMapLRN2d, RMSNorm  # noqa: E402
from .dropout import FeatureAlphaDropout  # noqa: E402
from .pooling import ChannelShuffle, LPPool1d, LPPool2d  # noqa: E402
globals().update(_PADDING)
__all__ += ["CELU", "GLU", "SELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
            "LogSigmoid", "Mish", "PReLU", "ReLU6", "RReLU", "Softmax2d", "Softmin", "Softplus",
            "Softshrink", "Softsign", "Tanhshrink", "Threshold", "CosineEmbeddingLoss",
            "GaussianNLLLoss", "HingeEmbeddingLoss", "MarginRankingLoss", "MultiLabelMarginLoss",
            "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss2d", "PoissonNLLLoss",
            "SoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
            "CosineSimilarity", "PairwiseDistance", "Bilinear", "Container", "CrossMapLRN2d",
            "RMSNorm", "FeatureAlphaDropout", "ChannelShuffle", "LPPool1d", "LPPool2d",
            *sorted(_PADDING)]

# the 3-d layers (over pygpu/nn/_conv3d.py), fractional pooling, the adaptive softmax,
# EmbeddingBag, CTCLoss, buffers and lazy modules (issue 43)
from .conv import Conv3d, ConvTranspose3d  # noqa: E402
from .pooling import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, LPPool3d,  # noqa: E402
                      MaxPool3d, MaxUnpool3d)
from .normalization import InstanceNorm3d  # noqa: E402
from ._fractional_pool import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: E402
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from .sparse import EmbeddingBag  # noqa: E402
from .loss import CTCLoss, LinearCrossEntropyLoss  # noqa: E402
from ._linear_cross_entropy import LinearCrossEntropyOptions  # noqa: E402
from .parameter import Buffer, UninitializedBuffer, UninitializedParameter  # noqa: E402
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,  # noqa: E402
                   LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
                   LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d,
                   LazyInstanceNorm3d, LazyLinear)
__all__ += ["Conv3d", "ConvTranspose3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d",
            "LPPool3d", "MaxPool3d", "MaxUnpool3d", "InstanceNorm3d", "FractionalMaxPool2d",
            "FractionalMaxPool3d", "AdaptiveLogSoftmaxWithLoss", "EmbeddingBag", "CTCLoss", "LinearCrossEntropyLoss", "LinearCrossEntropyOptions",
            "Buffer", "UninitializedBuffer", "UninitializedParameter", "LazyBatchNorm1d",
            "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
            "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
            "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear"]


def factory_kwargs(kwargs):
    """torch.nn.factory_kwargs: the device/dtype/memory_format entries of a module's **kwargs
    as one dict for a factory (pygpu.empty(3, **nn.factory_kwargs(kwargs))); a nested
    "factory_kwargs" dict gives them too. An unknown key, or one given both ways, is PyTorch's
    TypeError."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r


from . import modules  # noqa: E402 - torch.nn.modules.* import paths (names read when asked)
