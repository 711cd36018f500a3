"""nn.functional's batch_norm, group_norm, instance_norm and one_hot, from tensor ops,
layer_norm (written once in pygpu/_ops/_layer_norm.py: one fused node where the backend has
it) and embedding (pygpu/_ops/_embedding.py: a gather, its backward a scatter-add).

batch_norm normalizes with means and variances over axes (biased variance for
normalizing; running_var takes the unbiased one, as PyTorch's). one_hot compares the
indices with arange(C)."""
from .. import _C
from .._ops import _conv as _conv_ops
from .._tensor import create as _tensor_create
from .._dtype import int64
from .._ops._common import float_input as _float_input
from .._ops._common import want_tensor as _want_tensor
from .._ops._embedding import embedding  # noqa: F401 - written once in _ops
from .._ops._layer_norm import layer_norm  # noqa: F401 - written once in _ops
from ..autograd import is_grad_enabled, no_grad
from ._pointwise import relu6 as _relu6


def one_hot(tensor, num_classes=-1):
    """int64 indices (...) -> int64 (..., num_classes) with a 1 at each index.
    num_classes=-1 takes max(index) + 1 (which reads the indices: one small d2h copy on
    a device)."""
    _want_tensor(tensor, "one_hot")
    if tensor.dtype != int64:
        raise TypeError(f"one_hot is only applicable to index tensor of dtype int64, got "
                        f"{tensor.dtype}")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min().item()) < 0 or
                           int(tensor.max().item()) >= num_classes):
        raise RuntimeError(f"one_hot: class values must be in [0, {num_classes})")
    cols = _tensor_create.arange(num_classes, device=tensor.device)
    return (tensor.reshape(*tensor.shape, 1) == cols).astype(int64)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5, _relu=False):
    """Normalize (N, C, ...) per channel C: with the batch's statistics when training
    (updating running_mean/running_var in place with `momentum`; running_var takes the
    unbiased variance), with the running ones otherwise. Training is one BATCH_NORM node
    each way where the device has it (pygpu/_ops/_conv.py); evaluation is a per-channel
    scale and shift: one BATCH_NORM EVAL_FWD node when no gradient is wanted, else tensor
    ops. _relu (internal: nn.Sequential's BatchNorm + ReLU or ReLU6): True or "relu",
    "relu6" (evaluation only), the activation of the result fused into the node."""
    _float_input(input, "batch_norm")
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of 2 or more dimensions (N, C, ...), "
                         f"got {input.ndim}D input of shape {input.shape}")
    C = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
    if training:
        count = input.numel() // C if C else 0
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
        if _relu == "relu6":  # the training node fuses ReLU only
            return _relu6(_conv_ops.batch_norm_train(input, weight, bias, running_mean,
                                                     running_var, momentum, eps, False))
        return _conv_ops.batch_norm_train(input, weight, bias, running_mean, running_var,
                                          momentum, eps, bool(_relu))
    if running_mean is None or running_var is None:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    if _eval_node(input, running_mean, running_var, weight, bias):
        return _C._batch_norm_eval(input, weight, bias, running_mean, running_var, float(eps),
                                   _ACT[_relu])
    bshape = (1, C) + (1,) * (input.ndim - 2)
    scale = 1.0 / _C.sqrt(running_var.astype(input.dtype) + eps)
    if weight is not None:
        scale = scale * weight
    shift = running_mean.astype(input.dtype) * scale * -1.0
    if bias is not None:
        shift = shift + bias
    out = input * scale.reshape(*bshape) + shift.reshape(*bshape)
    if _relu == "relu6":
        return _relu6(out)  # hardtanh's gradient: 1 strictly inside (0, 6)
    return out.relu() if _relu else out


# _relu's values -> the EVAL_FWD node's fused activation (pg_ops_conv.h's PG_BN_F_*)
_ACT = {False: 0, None: 0, True: 1, "relu": 1, "relu6": 2}


def _eval_node(x, running_mean, running_var, weight, bias):
    """Whether evaluation runs as one BATCH_NORM EVAL_FWD node: no gradient wanted (the node
    has no backward), every operand of x's dtype and device, and x's backend runs it (cuda
    does not: the composite below)."""
    if is_grad_enabled() and any(t is not None and t.requires_grad
                                 for t in (x, weight, bias)):
        return False
    if any(t is not None and (t.dtype != x.dtype or t.device != x.device)
           for t in (running_mean, running_var, weight, bias)):
        return False
    return _conv_ops.has_node("BATCH_NORM", x, "EVAL_FWD")


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize (N, C, ...) over each group of C/num_groups channels and everything after
    them (one layer_norm row each), then weight and bias per channel."""
    _float_input(input, "group_norm")
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    N, C = input.shape[0], input.shape[1]
    if C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    rows = input.reshape(N * num_groups, -1)
    out = layer_norm(rows, (rows.shape[1],), None, None, eps).reshape(*input.shape)
    return _affine(out, weight, bias)


def _affine(out, weight, bias):
    bshape = (1, out.shape[1]) + (1,) * (out.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(*bshape)
    if bias is not None:
        out = out + bias.reshape(*bshape)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) plane of (N, C, ...) by its own statistics (or the
    running ones when not use_input_stats); running_mean/running_var, when given, follow
    the per-channel averages of the planes' statistics with momentum."""
    _float_input(input, "instance_norm")
    N, C = input.shape[0], input.shape[1]
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    rows = input.reshape(N * C, -1)
    if running_mean is not None and running_var is not None:
        count = rows.shape[1]
        with no_grad():
            m = float(momentum)
            mean = rows.detach().mean(axis=1).reshape(N, C).mean(axis=0)
            d = rows.detach() - rows.detach().mean(axis=1, keepdims=True)
            var = ((d * d).sum(axis=1) * (1.0 / max(count - 1, 1))).reshape(N, C).mean(axis=0)
            running_mean.copy_(running_mean * (1.0 - m) + mean.astype(running_mean.dtype) * m)
            running_var.copy_(running_var * (1.0 - m) + var.astype(running_var.dtype) * m)
    out = layer_norm(rows, (rows.shape[1],), None, None, eps).reshape(*input.shape)
    return _affine(out, weight, bias)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta, PyTorch's
    composition (the channel window zero-padded, averaged by an average pooling)."""
    _float_input(input, "local_response_norm")
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    from ._conv import avg_pool2d, pad
    N, C = input.shape[0], input.shape[1]
    div = (input * input).reshape(N, 1, C, -1)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).reshape(*input.shape)
    div = (div * alpha + k) ** beta
    return input / div
