"""nn.functional's activations and dropout, composed from differentiable tensor ops.

Each is a few elementwise ops that autograd records (no Python loop over elements);
gelu is one op of the table each way (both forms). leaky_relu, silu, gelu,
softmax, log_softmax and dropout take PyTorch's arguments."""

from .. import _C
from .._tensor import create as _tensor_create
from .._dtype import float32
from .._ops._common import float_input as _float_input
from .._ops._common import want_tensor as _want_tensor
from .._ops._softmax import log_softmax as _log_softmax
from .._ops._softmax import softmax as _softmax

_relu = _C.relu


def relu(input, inplace=False):
    """max(x, 0), one node; inplace (nn.ReLU(inplace=True)): written into input in one pass
    (Tensor.relu_, which autograd records), as PyTorch's."""
    return input.relu_() if inplace else _relu(input)


tanh = _C.tanh
sigmoid = _C.sigmoid


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """max(0, x) + negative_slope * min(0, x)."""
    _want_tensor(input, "leaky_relu")
    return _C.maximum(input, 0.0) + _C.minimum(input, 0.0) * float(negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    _want_tensor(input, "elu")
    neg = (input <= 0).astype(input.dtype)  # no gradient: it selects; at 0 PyTorch's slope alpha
    return input * (1.0 - neg) + (_C.exp(input * neg) - 1.0) * (neg * float(alpha))


def silu(input, inplace=False):
    """x * sigmoid(x) (a.k.a. swish)."""
    _want_tensor(input, "silu")
    return input * _C.sigmoid(input)


def gelu(input, approximate="none"):
    """GELU: x * Phi(x) (approximate="none"), or the tanh form
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (approximate="tanh"): one node each way
    (the op table's gelu / gelu_tanh rows and their gradients' rows)."""
    _float_input(input, "gelu")
    if approximate == "none":
        return _C.gelu(input)
    if approximate == "tanh":
        return _C.gelu_tanh(input)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def _implicit_dim(name, ndim, stacklevel):
    """PyTorch's legacy choice when dim is not given (0 for 0-, 1- and 3-d input, else 1),
    with its deprecation warning."""
    import warnings
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim, computed stably."""
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim, _stacklevel)
    if dtype is not None:
        input = input.astype(dtype)
    return _softmax(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along dim, computed stably."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim, _stacklevel)
    if dtype is not None:
        input = input.astype(dtype)
    return _log_softmax(input, dim)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training);
    the identity when not training. The mask comes from pygpu's generator on input's
    device (pygpu.manual_seed makes it reproducible)."""
    _float_input(input, "dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = _tensor_create.rand(*input.shape, device=input.device, dtype=float32) >= p
    return input * (keep.astype(input.dtype) * (1.0 / (1.0 - p)))


def _feature_dropout(input, p, training, name, batched):
    """Zero whole channels (every element after the channel axis shares one draw) with
    probability p, scaling the rest by 1/(1-p): PyTorch's dropout1d/2d/3d. `batched` is
    whether the first axis is the batch (otherwise one is added and taken off again)."""
    _float_input(input, name)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    x = input if batched else input.unsqueeze(0)
    if p == 1.0:
        out = x * 0.0
    else:
        shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
        keep = _tensor_create.rand(*shape, device=x.device, dtype=float32) >= p
        out = x * (keep.astype(x.dtype) * (1.0 / (1.0 - p)))
    return out if batched else out.squeeze(0)


def _deprecated_rank(name, nd, spatial):
    import warnings
    warnings.warn(f"{name}: Received a {nd}-D input to {name}, which is deprecated and will "
                  f"result in an error in a future release. To retain the behavior and "
                  f"silence this warning, please use dropout instead. Note that {name} "
                  f"exists to provide channel-wise dropout on inputs with {spatial} spatial "
                  f"dimensions, a channel dimension, and an optional batch dimension (i.e. "
                  f"{spatial + 1}D or {spatial + 2}D inputs).", stacklevel=3)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) with probability p (training)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           f"input. Note that dropout1d exists to provide channel-wise dropout "
                           f"on inputs with 1 spatial dimension, a channel dimension, and an "
                           f"optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, "dropout1d", input.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) with probability p (training). As PyTorch: other
    ranks warn (deprecated) and count their first axis as the batch, a 3-D input included
    (taken as (N, C, L), with PyTorch's warning)."""
    nd = input.ndim
    if nd not in (3, 4):
        _deprecated_rank("dropout2d", nd, 2)
    if nd == 3:
        import warnings
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      stacklevel=2)
    return _feature_dropout(input, p, training, "dropout2d", nd >= 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p (training);
    other ranks warn (deprecated), as PyTorch."""
    nd = input.ndim
    if nd not in (4, 5):
        _deprecated_rank("dropout3d", nd, 3)
    return _feature_dropout(input, p, training, "dropout3d", nd == 5)


_SELU_ALPHA_PRIME = -1.7580993408473766  # -scale * alpha of SELU


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's zero mean and unit variance: dropped elements become
    SELU's negative saturation, then an affine correction (PyTorch's formula)."""
    _float_input(input, "alpha_dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    a = ((1.0 - p) * (1.0 + p * _SELU_ALPHA_PRIME ** 2)) ** -0.5
    b = -a * _SELU_ALPHA_PRIME * p
    keep = (_tensor_create.rand(*input.shape, device=input.device, dtype=float32) >= p).astype(
        input.dtype)
    return (input * keep + (keep * -1.0 + 1.0) * _SELU_ALPHA_PRIME) * a + b
