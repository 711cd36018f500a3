"""Differentiable ops that are not single C ops: cat, softmax, log_softmax,
cross_entropy, mse_loss and linear (pygpu.nn.functional re-exports them).

Each is an autograd Function (pygpu/autograd/function.py) with its backward
written out beside its forward, or a composition of recorded tensor ops.
linear and cross_entropy call one fused C op each way (csrc/core/pg_ops_train.c)."""
import numbers

from . import _C
from .autograd import Function
from .autograd.grad_mode import is_grad_enabled
from ._creation import empty
from ._dtype import ALL as _dtype_ALL
from ._dtype import bfloat16, float16, float32, float64, int64
from .amp.autocast_mode import cast_inputs as _autocast
from .amp.autocast_mode import linear_operands as _autocast_linear
from .amp.autocast_mode import region_dtype as _autocast_low

Tensor = _C.Tensor


def _want_tensor(x, fn, what="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: {what} must be a pygpu.Tensor, got {type(x).__name__} "
                        "(convert with pygpu.tensor(x))")


def _axis(dim, ndim, fn):
    if not isinstance(dim, numbers.Integral):
        raise TypeError(f"{fn}: dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < max(ndim, 1):
        raise IndexError(f"{fn}: dim {dim} is out of range for a {ndim}-d tensor")
    return dim % max(ndim, 1)


# ---- cat -----------------------------------------------------------------------------------

class _Cat(Function):
    @staticmethod
    def forward(ctx, *tensors, dim=0):
        first = tensors[0]
        ctx.dim, ctx.sizes = dim, [t.shape[dim] for t in tensors]
        shape = list(first.shape)
        shape[dim] = sum(ctx.sizes)
        out = empty(tuple(shape), dtype=first.dtype, device=first.device)
        lead = (slice(None),) * dim
        pos = 0
        for t in tensors:
            n = t.shape[dim]
            out[lead + (slice(pos, pos + n),)] = t
            pos += n
        return out

    @staticmethod
    def backward(ctx, g):
        lead = (slice(None),) * ctx.dim
        grads, pos = [], 0
        for n in ctx.sizes:
            grads.append(g[lead + (slice(pos, pos + n),)])
            pos += n
        return tuple(grads)


def cat(tensors, dim=0):
    """Join tensors along an existing axis `dim` (all on one device, one dtype)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    for i, t in enumerate(tensors):
        _want_tensor(t, "cat", f"tensors[{i}]")
    first = tensors[0]
    if first.ndim == 0:
        raise ValueError("cat: zero-dimensional tensors cannot be concatenated")
    dim = _axis(dim, first.ndim, "cat")
    for i, t in enumerate(tensors[1:], 1):
        if t.device != first.device:
            raise _C.DeviceMismatchError(
                f"cat: tensors[{i}] is on {t.device} but tensors[0] is on {first.device}; "
                "move them to one device first")
        if t.dtype != first.dtype:
            raise TypeError(f"cat: tensors[{i}] has dtype {t.dtype} but tensors[0] has "
                            f"{first.dtype}; convert with .astype()")
        if t.ndim != first.ndim or any(a != b for k, (a, b) in
                                       enumerate(zip(t.shape, first.shape)) if k != dim):
            raise ValueError(f"cat: tensors[{i}] has shape {t.shape}, which does not match "
                             f"tensors[0]'s {first.shape} except along dim {dim}")
    return _Cat.apply(*tensors, dim=dim)


# ---- softmax family --------------------------------------------------------------------------

class _LogSoftmax(Function):
    @staticmethod
    def forward(ctx, x, dim):
        shifted = x - x.max(axis=dim, keepdims=True)
        out = shifted - shifted.exp().sum(axis=dim, keepdims=True).log()
        ctx.save(out)  # Function.apply swaps a saved output for a detached alias
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return g - out.exp() * g.sum(axis=ctx.dim, keepdims=True), None


class _Softmax(Function):
    @staticmethod
    def forward(ctx, x, dim):
        out = None
        if dim == x.ndim - 1 and x.dtype in (float32, float64):
            out = _C._softmax_rows(x)  # one node; None where the backend has no kernel
        if out is None:
            e = (x - x.max(axis=dim, keepdims=True)).exp()
            out = e / e.sum(axis=dim, keepdims=True)
        ctx.save(out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return out * (g - (g * out).sum(axis=ctx.dim, keepdims=True)), None


class _LayerNorm(Function):
    """layer_norm over the last axis: one LAYER_NORM node forward where the backend has it
    (else the same formula from tensor ops); backward from tensor ops, with
    xhat = (x - mean) * rstd and gw = g * weight:
        dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)),
        dweight = sum over rows of g * xhat,  dbias = sum over rows of g."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        ctx.save(x, weight)
        ctx.eps, ctx.has_bias = eps, bias is not None
        out = _C._layer_norm_rows(x, weight, bias, eps)
        if out is None:
            out = _layer_norm_composed(x, weight, bias, eps)
        return out

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved
        mean = x.mean(axis=-1, keepdims=True)
        d = x - mean
        rstd = 1.0 / _C.sqrt((d * d).mean(axis=-1, keepdims=True) + ctx.eps)
        xhat = d * rstd
        gw = g if w is None else g * w
        dx = rstd * (gw - gw.mean(axis=-1, keepdims=True)
                     - xhat * (gw * xhat).mean(axis=-1, keepdims=True))
        lead = tuple(range(x.ndim - 1))
        dw = None if w is None else (g * xhat).sum(axis=lead) if lead else g * xhat
        db = None if not ctx.has_bias else g.sum(axis=lead) if lead else g
        return dx, dw, db, None


def _layer_norm_composed(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    d = x - mean
    out = d / _C.sqrt((d * d).mean(axis=-1, keepdims=True) + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def layer_norm_rows(x, weight, bias, eps):
    """layer_norm over x's last axis (weight, bias: None or (C,) of x's dtype)."""
    if is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias)):
        return _LayerNorm.apply(x, weight, bias, float(eps))
    out = _C._layer_norm_rows(x, weight, bias, float(eps))  # nothing to record: no Function
    return _layer_norm_composed(x, weight, bias, float(eps)) if out is None else out


def _float_input(x, fn):
    _want_tensor(x, fn)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{fn}: expected a float tensor ({_FLOATS}), got {x.dtype}")


def _widened(fn, x, *args):
    """fn on x, with float16/bfloat16 x computed in float32 and the result rounded back once
    (exponentials and sums want float32's range and precision)."""
    if x.dtype is float16 or x.dtype is bfloat16:
        return fn(x.astype(float32), *args).astype(x.dtype)
    return fn(x, *args)


def log_softmax(x, dim=-1):
    """log(softmax(x)) along dim, computed stably (x - max - log-sum-exp).
    Under pygpu.autocast: float32."""
    _float_input(x, "log_softmax")
    (x,) = _autocast("log_softmax", x)
    return _widened(_LogSoftmax.apply, x, _axis(dim, x.ndim, "log_softmax"))


def softmax(x, dim=-1):
    """exp(x) / sum(exp(x)) along dim, computed stably. Under pygpu.autocast: float32."""
    _float_input(x, "softmax")
    (x,) = _autocast("softmax", x)
    axis = _axis(dim, x.ndim, "softmax")
    if axis == x.ndim - 1 and x.dtype in (float32, float64) and not (
            x.requires_grad and is_grad_enabled()):
        out = _C._softmax_rows(x)  # nothing to record: the node alone, no Function
        if out is not None:
            return out
    return _widened(_Softmax.apply, x, axis)


# ---- losses ----------------------------------------------------------------------------------

def _check_labels(logits, labels, fn):
    _float_input(logits, fn)
    _want_tensor(labels, fn, "target")
    if logits.ndim != 2:
        raise ValueError(f"{fn}: input must be (batch, classes), got shape {logits.shape}")
    if labels.dtype != int64:
        raise TypeError(f"{fn}: target must hold int64 class indices, got {labels.dtype} "
                        "(convert with .astype(pygpu.int64))")
    if labels.shape != (logits.shape[0],):
        raise ValueError(f"{fn}: target must have shape ({logits.shape[0]},) to match input "
                         f"{logits.shape}, got {labels.shape}")
    if labels.device != logits.device:
        raise _C.DeviceMismatchError(f"{fn}: input is on {logits.device} but target is on "
                                     f"{labels.device}; move the labels with .to(device)")


class _CrossEntropy(Function):
    """Fused softmax + negative log-likelihood: one C op each way."""

    @staticmethod
    def forward(ctx, logits, labels, mean):
        loss, probs = _C._softmax_xent_fwd(logits, labels, mean)
        ctx.save(probs, labels)
        ctx.mean = mean
        return loss

    @staticmethod
    def backward(ctx, g):
        probs, labels = ctx.saved
        return _C._softmax_xent_bwd(probs, labels, g, ctx.mean), None, None


def cross_entropy(input, target, reduction="mean"):
    """Cross-entropy of logits `input` (N, C) against int64 class labels `target` (N,).
    reduction: "mean" (default) or "sum". A label outside [0, C) is an error naming it."""
    _check_labels(input, target, "cross_entropy")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"cross_entropy: reduction must be 'mean' or 'sum', got {reduction!r}")
    (input,) = _autocast("cross_entropy", input)
    return _widened(_CrossEntropy.apply, input, target, reduction == "mean")


def mse_loss(input, target, reduction="mean"):
    """Mean (or summed) squared error between input and target (same shape)."""
    _want_tensor(input, "mse_loss")
    _want_tensor(target, "mse_loss", "target")
    if input.shape != target.shape:
        raise ValueError(f"mse_loss: input has shape {input.shape} but target has "
                         f"{target.shape}; they must match")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"mse_loss: reduction must be 'mean' or 'sum', got {reduction!r}")
    input, target = _autocast("mse_loss", input, target)
    d = input - target
    sq = d * d
    return sq.mean() if reduction == "mean" else sq.sum()


_FLOATS = ", ".join(d.name for d in _dtype_ALL if d.is_floating_point)  # the dtype table's

# ---- linear ----------------------------------------------------------------------------------

# activation name -> code of the fused layers, from the op table's PG_ACT rows (pg_ops.def)
ACT_TABLE = _C._act_table()  # ((name, code, nn module class name), ...)
_ACTS = {None: 0, **{name: code for name, code, _ in ACT_TABLE}}


class _Linear(Function):
    """y = act(x @ weight.T + bias): one fused C op forward, one backward."""

    @staticmethod
    def forward(ctx, x, weight, bias, act):
        y = _C._linear_fwd(x, weight, bias, act)
        ctx.save(x, weight, y.detach() if act else None)  # detached: no cycle y -> node -> y
        ctx.act, ctx.has_bias = act, bias is not None
        return y

    @staticmethod
    def backward(ctx, g):
        x, weight, y = ctx.saved
        dx, dw, db = _C._linear_bwd(g, x, weight, y, ctx.act, ctx.has_bias,
                                    x.requires_grad)
        return dx, dw, db, None


class _LinearLow(Function):
    """linear under autocast: x in the low dtype, the float32 weight rounded to it inside
    the GEMM, the bias's cached low copy b_low; dW and db come back in float32, as the
    parameters are (pygpu/amp/autocast_mode.py, linear_operands)."""

    @staticmethod
    def forward(ctx, x, weight, bias, act, b_low):
        y = _C._linear_fwd(x, weight, b_low, act)
        ctx.save(x, weight, y.detach() if act else None)
        ctx.act, ctx.has_bias = act, bias is not None
        return y

    @staticmethod
    def backward(ctx, g):
        x, weight, y = ctx.saved
        dx, dw, db = _C._linear_bwd(g, x, weight, y, ctx.act, ctx.has_bias, x.requires_grad,
                                    True)
        return dx, dw, db, None, None


class _LinearMasked(Function):
    """A pruned layer's y = act(x @ (weight * mask).T + bias) with the mask multiplied in as
    the GEMM packs the weight (csrc/core/pg_gemm.h b_mask): no masked product in memory.
    Backward: dx through the masked weight (fused the same way), dW = (g^T x) * mask.
    low: under autocast (as _LinearLow), b is the bias's low copy, the float32 weight times
    its mask is rounded to the low dtype as the bfloat16 kernel packs it, and dW comes back
    in float32; otherwise b is the bias itself."""

    @staticmethod
    def forward(ctx, x, weight, mask, bias, act, b, low):
        y = _C._linear_fwd(x, weight, b, act, mask)
        ctx.save(x, weight, mask, y.detach() if act else None)
        ctx.act, ctx.has_bias, ctx.low = act, bias is not None, low
        return y

    @staticmethod
    def backward(ctx, g):
        x, weight, mask, y = ctx.saved
        dx, dw, db = _C._linear_bwd(g, x, weight, y, ctx.act, ctx.has_bias, x.requires_grad,
                                    ctx.low, mask)
        return dx, dw, None, db, None, None, None


def _linear2d(x, weight, bias, act, low, mask=None):
    if mask is not None:
        if low is None:
            return _LinearMasked.apply(x, weight, mask, bias, act, bias, False)
        return _LinearMasked.apply(x, weight, mask, bias, act, low[0], True)
    if low is None:
        return _Linear.apply(x, weight, bias, act)
    return _LinearLow.apply(x, weight, bias, act, low[0])


def linear(x, weight, bias=None, activation=None, _mask=None):
    """activation(x @ weight.T + bias) for x (N, in), weight (out, in), bias (out,);
    activation: None or a name of the op table's activations ("relu", "tanh", "sigmoid",
    "leaky_relu": slope 0.01).
    One fused op each way. _mask (internal: pruned Linear layers, pygpu/nn/utils/prune.py):
    the weight's float32 pruning mask, multiplied in as the GEMM packs the weight; where
    that cannot run (not float32 weights and inputs or autocast bfloat16, not cpu/sim) the
    product weight * mask is used instead."""
    _want_tensor(x, "linear")
    _want_tensor(weight, "linear", "weight")
    if activation not in _ACTS:
        raise ValueError(f"linear: activation must be None or one of "
                         f"{[n for n in _ACTS if n]}, got {activation!r}")
    act = _ACTS[activation]
    if bias is not None:
        _want_tensor(bias, "linear", "bias")
    low = _autocast_linear(x, weight, bias)  # pygpu.autocast: the low dtype
    if low is not None:
        x, low = low[0], (low[1],)
    else:
        x, weight, bias = _autocast("linear", x, weight, bias)
    if _mask is not None and not _fuses_mask(x, weight, _mask, low):
        m = _mask if _mask.dtype == weight.dtype else _mask.astype(weight.dtype)
        weight, _mask = weight * m, None  # the product, as an unfused pruned layer has it
    if x.ndim == 2:
        return _linear2d(x, weight, bias, act, low, _mask)
    if x.ndim == 0:
        raise ValueError("linear: input must have at least one dimension")
    lead = x.shape[:-1]
    y = _linear2d(x.reshape(-1, x.shape[-1]), weight, bias, act, low, _mask)
    return y.reshape(*lead, weight.shape[0])


def _fuses_mask(x, weight, mask, low):
    """Whether linear's GEMM can take the pruning mask (pg_gemm.h b_mask): float32 weight
    and mask on cpu or sim, float32 x, or autocast's bfloat16 x with the float32 weight."""
    if weight.dtype is not float32 or mask.dtype is not float32 or weight.ndim != 2:
        return False
    if weight.device.type not in ("cpu", "sim") or mask.device != weight.device:
        return False
    if tuple(mask.shape) != tuple(weight.shape):
        return False
    return x.dtype is float32 or (low is not None and x.dtype is bfloat16)


def mask_fusion_pays(weight, mask, x):
    """Whether a pruned Linear should hand its mask to the GEMM rather than cache weight *
    mask: the GEMM that will run packs the weight itself (pygpu's own float32 kernel, or the
    AVX512_BF16 kernel under autocast bfloat16), so the mask costs no copy there."""
    if not isinstance(x, Tensor) or weight.device.type not in ("cpu", "sim"):
        return False
    if weight.dtype is not float32 or mask.dtype is not float32:
        return False
    low = _autocast_low(weight.device.type)
    if low is not None:
        return low is bfloat16 and _C._gemm_packs_b("bfloat16")
    return x.dtype is float32 and _C._gemm_packs_b("float32")


# ---- fused optimizer updates (in place; pygpu.optim calls these) ----------------------------

def sgd_update_(p, grad, buf, lr, momentum, dampening, weight_decay, nesterov, first):
    """p (and buf) updated in place by PyTorch's SGD rule: ONE op on p's device.
    buf: the momentum buffer (None when momentum is 0); first: its first step."""
    _C._sgd_update(p, grad, buf, lr, momentum, dampening, weight_decay, nesterov, first)


def adam_update_(p, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step):
    """p, exp_avg, exp_avg_sq updated in place by PyTorch's Adam rule (step >= 1 is the
    step number, for bias correction): ONE op on p's device."""
    _C._adam_update(p, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step)


# the kinds of _C._optim_update (csrc/core/pg_optim.h's PG_OPTIM_*)
OPTIM_ADAM, OPTIM_RMSPROP, OPTIM_ADAGRAD, OPTIM_ADADELTA = 0, 1, 2, 3


def optim_update_(kind, p, grad, states, hyper, step, flag0=False, flag1=False):
    """p and its state tensors updated in place by one adaptive optimizer rule (kind: one of
    OPTIM_*; states: three tensors or None, hyper: five floats, as pg_ops_train.c lists them
    per kind): ONE op on p's device."""
    s0, s1, s2 = states
    _C._optim_update(kind, p, grad, s0, s1, s2, tuple(float(h) for h in hyper), int(step),
                     bool(flag0), bool(flag1))


# The convolutional layers' Functions live in _conv_ops.py; the op table's rows name them
# here, beside the other fused ops' (tests/test_op_registry.py looks them up in this module).
from ._conv_ops import _BatchNorm, _Convolution, _Pool2d  # noqa: E402,F401
