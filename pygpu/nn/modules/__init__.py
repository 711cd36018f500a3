"""torch.nn.modules and its submodules: the import paths programs use for nn's classes
(`from torch.nn.modules.module import Module`, `from torch.nn.modules.loss import _Loss`).

They hold no code: each submodule PyTorch has is made here from a table, as a module whose
names are pygpu.nn's own objects (`pygpu.nn.modules.linear.Linear is pygpu.nn.Linear`),
and registered in sys.modules so `import pygpu.nn.modules.linear` finds it. A class that
another issue adds to pygpu.nn (Conv2d, LSTM, ...) appears under its PyTorch path when
its name is in the table and pygpu.nn has it."""
import sys as _sys
import types as _types

# PyTorch's torch/nn/modules/<file>.py -> the names programs import from it
_PATHS = {
    "module": ["Module"],
    "linear": ["Linear", "Identity", "Bilinear", "LazyLinear"],
    "activation": ["ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax",
                   "LogSoftmax", "ELU", "Softplus", "Mish", "Hardtanh", "ReLU6", "PReLU",
                   "MultiheadAttention"],
    "container": ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"],
    "loss": ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
             "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "_Loss", "_WeightedLoss"],
    "dropout": ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"],
    "flatten": ["Flatten", "Unflatten"],
    "normalization": ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"],
    "batchnorm": ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "_BatchNorm", "LazyBatchNorm1d",
                  "LazyBatchNorm2d", "LazyBatchNorm3d"],
    "instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
                     "LazyInstanceNorm2d", "LazyInstanceNorm3d"],
    "sparse": ["Embedding", "EmbeddingBag"],
    "conv": ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
             "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
             "LazyConvTranspose2d", "LazyConvTranspose3d"],
    "pooling": ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
                "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
                "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "MaxUnpool3d", "LPPool3d"],
    "rnn": ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "RNNBase"],
    "transformer": ["Transformer", "TransformerEncoder", "TransformerDecoder",
                    "TransformerEncoderLayer", "TransformerDecoderLayer"],
    "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "padding": ["ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad2d"],
    "upsampling": ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"],
}


def _lookup(name):
    """pygpu.nn's object of that name (the loss bases live in pygpu.nn.loss), or None. Read
    when asked, so a layer another module adds to pygpu.nn later is found too."""
    nn = _sys.modules["pygpu.nn"]
    obj = getattr(nn, name, None)
    if obj is None and name.startswith("_"):
        from .. import loss
        obj = getattr(loss, name, None)
    return obj


def _path_module(name, names):
    mod = _types.ModuleType(f"{__name__}.{name}",
                            f"torch.nn.modules.{name}: pygpu.nn's {', '.join(names[:3])}, ...")

    def __getattr__(attr):
        obj = _lookup(attr) if attr in names else None
        if obj is None:
            raise AttributeError(f"module 'torch.nn.modules.{name}' has no attribute {attr!r}"
                                 + ("" if attr not in names else " in pygpu (not yet built)"))
        return obj
    mod.__getattr__ = __getattr__
    mod.__all__ = list(names)
    return mod


for _name, _names in _PATHS.items():
    _mod = _path_module(_name, _names)
    globals()[_name] = _mod
    _sys.modules[_mod.__name__] = _mod


def __getattr__(attr):  # from torch.nn.modules import Linear
    for names in _PATHS.values():
        if attr in names:
            obj = _lookup(attr)
            if obj is not None:
                return obj
    raise AttributeError(f"module 'torch.nn.modules' has no attribute {attr!r}")
