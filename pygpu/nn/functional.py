"""pygpu.nn.functional: the stateless ops layers are made of, with PyTorch's signatures.

linear(x, weight, bias=None, activation=None) is the fused layer: matmul,
bias and activation in one op each way (see pygpu/_ops/_train.py and
csrc/core/pg_ops_train.c). Activations and dropout: _activations.py and _pointwise.py;
losses: _losses.py and _losses_margin.py; distances, normalize, rms_norm, bilinear:
_distance.py; normalization, embedding and one_hot: _normalization.py; convolution, pooling
and pad: _conv.py. All are
differentiable compositions of tensor ops (or fused C ops), never Python loops
over elements."""
from .._ops._attention import scaled_dot_product_attention
import warnings as _warnings

from .. import _C
from .._ops._train import linear
from ._activations import (alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, elu, gelu,
                           leaky_relu, log_softmax, relu, sigmoid, silu, softmax, tanh)
from .._ops._nn_losses import (binary_cross_entropy, binary_cross_entropy_with_logits,
                               cross_entropy, huber_loss, kl_div, l1_loss, mse_loss, nll_loss,
                               smooth_l1_loss)
from ._normalization import (batch_norm, embedding, group_norm, instance_norm, layer_norm,
                             local_response_norm, one_hot)
from ._resample import (fold, interpolate, pixel_shuffle, pixel_unshuffle, unfold, upsample)
from ._pointwise import FUNCTIONS as _POINTWISE
from ._distance import FUNCTIONS as _DISTANCES
from ._losses_margin import FUNCTIONS as _MARGIN_LOSSES
from ._lp_pool import FUNCTIONS as _LP_POOL
from ._conv3d import FUNCTIONS as _CONV3D
from ._grid_sample import FUNCTIONS as _GRID_SAMPLE
from ._fractional_pool import FUNCTIONS as _FRACTIONAL
from ._conv import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,
                    adaptive_max_pool2d, avg_pool1d, avg_pool2d, conv1d, conv2d,
                    conv_transpose1d, conv_transpose2d, max_pool1d, max_pool2d, max_unpool1d,
                    max_unpool2d, pad)

__all__ = ["linear", "elu", "relu", "leaky_relu", "gelu", "silu", "tanh", "sigmoid", "softmax",
           "log_softmax", "dropout", "one_hot", "layer_norm", "batch_norm", "embedding",
           "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "pad", "max_pool1d",
           "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "max_unpool1d",
           "max_unpool2d", "scaled_dot_product_attention", "dropout1d", "dropout2d", "dropout3d",
           "alpha_dropout", "group_norm", "instance_norm", "local_response_norm", "interpolate", "upsample", "unfold", "fold",
           "pixel_shuffle", "pixel_unshuffle"]

# the rest of PyTorch's nn.functional (issue 43): activations (_pointwise.py), distances and
# normalize/rms_norm/bilinear (_distance.py), the margin and likelihood losses
# (_losses_margin.py), and the spellings below
globals().update(_POINTWISE)
globals().update(_DISTANCES)
globals().update(_MARGIN_LOSSES)
globals().update(_LP_POOL)
globals().update(_CONV3D)
globals().update(_GRID_SAMPLE)
globals().update(_FRACTIONAL)
__all__ += (sorted(_POINTWISE) + sorted(_DISTANCES) + sorted(_MARGIN_LOSSES) + sorted(_LP_POOL)
            + sorted(_CONV3D) + sorted(_GRID_SAMPLE) + sorted(_FRACTIONAL))


def conv_tbc(input, weight, bias, pad=0):
    """Time-batch-channel 1-d convolution (torch.conv_tbc): input (T, B, C_in), weight
    (k, C_in, C_out), bias (C_out,) -> (T + 2*pad - k + 1, B, C_out), one conv1d."""
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, int(pad))
    return y.permute(2, 0, 1)


from .._ops._embedding_bag import embedding_bag  # noqa: E402
from .._ops._ctc_loss import ctc_loss  # noqa: E402

__all__ += ["conv_tbc", "embedding_bag", "ctc_loss"]
Tensor = _C.Tensor  # torch.nn.functional.Tensor, as PyTorch's module re-exports it
from ..autograd.overrides import (handle_torch_function, has_torch_function,  # noqa: E402
                                  has_torch_function_unary, has_torch_function_variadic)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool2d(input, output_size, True)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='nearest'), with PyTorch's warning."""
    _warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                   "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='bilinear', align_corners=True), PyTorch's warning."""
    _warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                   "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


__all__ += ["Tensor", "handle_torch_function", "has_torch_function", "has_torch_function_unary",
            "has_torch_function_variadic", "max_pool1d_with_indices", "max_pool2d_with_indices",
            "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
            "upsample_nearest", "upsample_bilinear"]

# multi-head attention as one function of its weights (_mha.py), and the linear layer fused
# into cross-entropy (_linear_cross_entropy.py)
from ._mha import multi_head_attention_forward  # noqa: E402

__all__ += ["multi_head_attention_forward"]
from ._linear_cross_entropy import linear_cross_entropy  # noqa: E402
from ._grouped_mm import grouped_mm  # noqa: E402
# float8 products with their scaling recipes (_scaled_mm.py)
from ._scaled_mm import ScalingType, SwizzleType, scaled_grouped_mm, scaled_mm  # noqa: E402

__all__ += ["linear_cross_entropy", "grouped_mm", "ScalingType", "SwizzleType", "scaled_mm",
            "scaled_grouped_mm"]

# torch._jit_internal's helpers as torch.nn.functional re-exports them (pygpu/_jit_internal.py),
# and the two names of its own module that are about TorchScript (not in __all__: no
# __torch_function__ dispatch for them, as PyTorch's have none): DType (int, what the JIT
# reads for a dtype argument) and assert_int_or_pair
from .._ops._torch_internals import (BroadcastingList1, BroadcastingList2,  # noqa: E402
                             BroadcastingList3, boolean_dispatch)
DType = int


def assert_int_or_pair(arg, arg_name, message):
    """AssertionError(message.format(arg_name)) unless arg is an int or has two elements."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))

