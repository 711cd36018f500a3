"""The rest of nn.functional's pointwise activations, with PyTorch's formulas, arguments and
gradients: hardtanh, relu6, hardsigmoid, hardswish, softplus, softsign, softshrink,
hardshrink, tanhshrink, threshold, selu, celu, mish, logsigmoid, glu, prelu, rrelu, softmin,
gumbel_softmax, and the in-place spellings (relu_, hardtanh_, elu_, ...).

Each is a few elementwise tensor ops that autograd records, except hardtanh (and relu6):
one CLAMP node each way where the backend has it (issue 45: MobileNetV2's activation). Where PyTorch's gradient is
decided by a strict comparison (hardtanh passes it only strictly inside its range, at the
bounds it is 0), the op is written as the input times a mask computed without gradient, so
the recorded backward is that mask: the same gradient as PyTorch's at every point, the
bounds included. Exponentials are taken of clamped arguments, so no branch that where()
discards can overflow and turn a gradient into NaN."""
from .. import _C
from .._tensor import create as _tensor_create
from .._ops._clamp import clamp
from .._ops._common import fused as _fused
from .._ops._common import want_tensor as _want_tensor
from .._ops._softmax import softmax as _softmax
from ..autograd import Function, is_grad_enabled

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _mask(cond, like):
    """A 0/1 tensor of like's dtype: a constant to autograd."""
    return cond.astype(like.dtype)


def _inplace(input, out):
    """Write `out` into input (F.relu_ and the other in-place spellings); returns input."""
    return input.copy_(out)


class _Hardtanh(Function):
    """hardtanh as one CLAMP node forward and one backward (the node's gradient form: dy
    where the output is strictly inside the bounds, 0 at a NaN as PyTorch's vectorized
    kernel); with create_graph the backward is g times a constant mask, in recorded ops."""

    @staticmethod
    def forward(ctx, x, lo, hi, node):
        y = _C._clamp(x, lo, hi) if node else clamp(x, lo, hi)
        ctx.save(y)
        ctx.bounds, ctx.node = (lo, hi), node
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved
        lo, hi = ctx.bounds
        if ctx.node and not _C.is_grad_enabled() and g.dtype == y.dtype and \
                g.device == y.device and _C._has_node("CLAMP", y, "grad"):
            return _C._hardtanh_backward(g.contiguous(), y, lo, hi), None, None, None
        return g * _mask((y > lo) & (y < hi), g), None, None, None


def _hardtanh_node(x, lo, hi):
    """Two finite-or-infinite number bounds (no NaN) on a float32/float64 tensor whose backend
    runs the CLAMP node: hardtanh is that node each way."""
    return (type(lo) in (int, float) and type(hi) in (int, float) and lo == lo and hi == hi
            and _fused("CLAMP", x))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """min_val for x < min_val, max_val for x > max_val, x between (the gradient 1 strictly
    inside, 0 elsewhere, as PyTorch's): one CLAMP node each way where the backend has it."""
    _want_tensor(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    x = input
    node = _hardtanh_node(x, min_val, max_val)
    if node or x.is_floating_point():
        lo, hi = float(min_val), float(max_val)
        if is_grad_enabled() and x.requires_grad:
            y = _Hardtanh.apply(x.clone() if inplace else x, lo, hi, node)
            return _inplace(input, y) if inplace else y
        if node:
            return _C._clamp(x, lo, hi, inplace)
        return _inplace(input, clamp(x, lo, hi)) if inplace else clamp(x, lo, hi)
    inside = _mask((x > min_val) & (x < max_val), x)
    out = x * inside + _mask(x <= min_val, x) * float(min_val) + \
        _mask(x >= max_val, x) * float(max_val)
    return _inplace(input, out) if inplace else out


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6 (the gradient 1/6 strictly between -3 and 3)."""
    _want_tensor(input, "hardsigmoid")
    x = input
    out = (x + 3.0) * (_mask((x > -3.0) & (x < 3.0), x) / 6.0) + _mask(x >= 3.0, x)
    return _inplace(input, out) if inplace else out


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6 (PyTorch's gradient: 0 up to -3, x/3 + 1/2 strictly between,
    1 from 3 on)."""
    _want_tensor(input, "hardswish")
    x = input
    mid = _mask((x > -3.0) & (x < 3.0), x)
    out = x * (x + 3.0) * (mid / 6.0) + x * _mask(x >= 3.0, x)
    return _inplace(input, out) if inplace else out


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    _want_tensor(input, "softplus")
    bx = input * float(beta)
    soft = _C.log1p(_C.exp(clamp(bx, max=float(threshold)))) / float(beta)
    return _C.where(bx > threshold, input, soft)


def softsign(input):
    """x / (1 + |x|)."""
    return input / (_C.abs(input) + 1.0)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    _want_tensor(input, "softshrink")
    from .._tensor.compat import finfo
    top = finfo(input.dtype).max if input.dtype.is_floating_point else float("inf")
    if not 0 <= lambd <= top:
        kind = {"float32": "Float", "float64": "Double", "float16": "Half",
                "bfloat16": "BFloat16"}.get(input.dtype.name, input.dtype.name)
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype {kind}, but "
                           f"found {lambd:g}")
    x = input
    return (x - float(lambd)) * _mask(x > lambd, x) + (x + float(lambd)) * _mask(x < -lambd, x)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, 0 elsewhere."""
    _want_tensor(input, "hardshrink")
    return input * _mask((input > lambd) | (input < -lambd), input)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - _C.tanh(input)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, value elsewhere."""
    _want_tensor(input, "threshold")
    above = _mask(input > threshold, input)
    out = input * above + (1.0 - above) * float(value)
    return _inplace(input, out) if inplace else out


def threshold_(input, threshold_value, value):
    return threshold(input, threshold_value, value, inplace=True)


def _elu_like(x, alpha, scale, input_scale):
    """scale * (x for x > 0, alpha * (exp(x * input_scale) - 1) otherwise): the ELU family's
    one form (elu, selu, celu), exp taken of min(x, 0)."""
    neg = _mask(x <= 0, x)
    negative = (_C.exp(clamp(x, max=0.0) * float(input_scale)) - 1.0) * float(alpha)
    return (x * (1.0 - neg) + negative * neg) * float(scale)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with SELU's constants (Klambauer et al. 2017)."""
    _want_tensor(input, "selu")
    out = _elu_like(input, _SELU_ALPHA, _SELU_SCALE, 1.0)
    return _inplace(input, out) if inplace else out


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    _want_tensor(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    out = _elu_like(input, alpha, 1.0, 1.0 / alpha)
    return _inplace(input, out) if inplace else out


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def elu_(input, alpha=1.0):
    from ._activations import elu
    return _inplace(input, elu(input, alpha))


def relu_(input):
    return input.relu_()


def leaky_relu_(input, negative_slope=0.01):
    from ._activations import leaky_relu
    return _inplace(input, leaky_relu(input, negative_slope))


def mish(input, inplace=False):
    """x * tanh(softplus(x)) (Misra 2019)."""
    _want_tensor(input, "mish")
    out = input * _C.tanh(softplus(input))
    return _inplace(input, out) if inplace else out


class _LogSigmoid(Function):
    """log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), stable for any x; backward
    g * sigmoid(-x) (1/2 at 0, where the composition's kinks would not say so)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save(x)
        return clamp(x, max=0.0) - _C.log1p(_C.exp(-_C.abs(x)))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        return (g * _C.sigmoid(-x),)


def logsigmoid(input):
    """log(sigmoid(x)), stable for any x."""
    _want_tensor(input, "logsigmoid")
    return _LogSigmoid.apply(input)


def glu(input, dim=-1):
    """a * sigmoid(b), where a and b are the halves of input along dim."""
    _want_tensor(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.ndim
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * _C.sigmoid(b)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight one number or one per channel (axis 1)."""
    _want_tensor(input, "prelu")
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.ndim >= 2 else (input.shape[0] if input.ndim else 1)
        if n != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
        shape = [1] * input.ndim
        shape[1 if input.ndim >= 2 else 0] = n
        w = weight.reshape(shape)
    else:
        w = weight.reshape(())
    pos = _mask(input > 0, input)
    return input * pos + w * input * (1.0 - pos)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """leaky_relu with a slope drawn from U(lower, upper) per element while training (the
    mean slope (lower + upper) / 2 otherwise)."""
    _want_tensor(input, "rrelu")
    if training:
        slope = _tensor_create.empty(*input.shape, dtype=input.dtype, device=input.device)
        slope.uniform_(float(lower), float(upper))
    else:
        slope = (float(lower) + float(upper)) / 2.0
    pos = _mask(input > 0, input)  # 0 takes the negative side's slope, as PyTorch's
    out = input * pos + input * (1.0 - pos) * slope
    return _inplace(input, out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim."""
    if dim is None:
        from ._activations import _implicit_dim
        dim = _implicit_dim("softmin", input.ndim, _stacklevel)
    if dtype is not None:
        input = input.astype(dtype)
    return _softmax(-input, dim)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau) along dim; hard=True: the one-hot of its
    argmax forward, the soft sample's gradient backward (straight-through)."""
    gumbels = -_tensor_create.empty(*logits.shape, dtype=logits.dtype,
                                    device=logits.device).exponential_().log()
    y_soft = _softmax((logits + gumbels) / float(tau), dim)
    if not hard:
        return y_soft
    index = y_soft.detach().argmax(dim, keepdim=True)
    y_hard = _tensor_create.zeros(*logits.shape, dtype=logits.dtype, device=logits.device)
    y_hard.scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


_SELU_ALPHA_PRIME = _SELU_ALPHA * _SELU_SCALE


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels: one draw per (sample, channel) of (N, C, *)."""
    _want_tensor(input, "feature_alpha_dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
        return _inplace(input, out) if inplace else out
    a = ((1.0 - p) * (1.0 + p * _SELU_ALPHA_PRIME ** 2)) ** -0.5
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = (_tensor_create.rand(*shape, device=input.device) >= p).astype(input.dtype)
    out = input * keep * a + (keep - 1.0) * (_SELU_ALPHA_PRIME * a) + _SELU_ALPHA_PRIME * a * p
    return _inplace(input, out) if inplace else out


FUNCTIONS = {name: globals()[name] for name in (
    "feature_alpha_dropout",
    "hardtanh", "hardtanh_", "relu6", "hardsigmoid", "hardswish", "softplus", "softsign",
    "softshrink", "hardshrink", "tanhshrink", "threshold", "threshold_", "selu", "selu_",
    "celu", "celu_", "elu_", "relu_", "leaky_relu_", "mish", "logsigmoid", "glu", "prelu",
    "rrelu", "rrelu_", "softmin", "gumbel_softmax")}
