"""Differentiable ops that are one fused C op each way: cross_entropy and linear (with its
autocast and pruned-mask forms), and the fused optimizer updates (pygpu.nn.functional and
pygpu.optim call these).

Each is an autograd Function (pygpu/autograd/function.py) with its backward written out
beside its forward, calling one fused C op each way (csrc/core/pg_ops_train.c). The
composite ops (softmax, log_softmax, layer_norm, clamp, mse_loss) live in pygpu/_ops/; cat
is with the tensor surface (pygpu/_tensor/join.py)."""
from .. import _C
from ..autograd import Function
from .._dtype import bfloat16, float32, int64
from ._common import float_input as _float_input
from ._common import want_tensor as _want_tensor
from ._common import widened as _widened
from ..amp.autocast_mode import cast_inputs as _autocast
from ..amp.autocast_mode import linear_operands as _autocast_linear
from ..amp.autocast_mode import region_dtype as _autocast_low

Tensor = _C.Tensor


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


def _cross_entropy_composite(logits, labels, mean):
    """The same loss from differentiable ops (higher-order gradients: autograd/higher_order)."""
    from ._softmax import log_softmax
    picked = log_softmax(logits, 1).gather(1, labels.reshape(-1, 1))
    return -(picked.mean() if mean else picked.sum())


class _CrossEntropy(Function):
    """Fused softmax + negative log-likelihood: one C op each way; the composite for
    create_graph=True."""
    composite = staticmethod(_cross_entropy_composite)

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


# ---- linear ----------------------------------------------------------------------------------

# activation name -> code of the fused layers, from the op table's PG_ACT rows (pg_ops.def)
ACT_TABLE = _C._act_table()  # ((name, code, nn module class name), ...)
_ACTS = {None: 0, **{name: code for name, code, _ in ACT_TABLE}}


def _activation(y, act):
    """The fused layers' activation `act` (a PG_ACT code) from differentiable ops."""
    if not act:
        return y
    name = _ACT_NAMES[act]
    if name == "leaky_relu":  # x / 100 below zero, as the PG_ACT row
        return _C.where(y > 0, y, y / 100.0)
    return getattr(_C, name)(y)  # relu, tanh, sigmoid: the op table's own rows


_ACT_NAMES = {code: name for name, code, _ in ACT_TABLE}


def _linear_composite(x, weight, bias, act, b_low=None, weight_dtype_of_x=False):
    w = weight.astype(x.dtype) if weight_dtype_of_x and weight.dtype is not x.dtype else weight
    y = x @ w.T
    if bias is not None:
        y = y + (bias.astype(y.dtype) if bias.dtype is not y.dtype else bias)
    return _activation(y, act)


class _Linear(Function):
    """y = act(x @ weight.T + bias): one fused C op forward, one backward; under
    create_graph=True the composite (matmul, add, activation) gives the gradients."""
    composite = staticmethod(_linear_composite)

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
    composite = staticmethod(lambda x, weight, bias, act, b_low:
                             _linear_composite(x, weight, bias, act, None, True))

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
    composite = staticmethod(lambda x, weight, mask, bias, act, b, low:
                             _linear_composite(x, weight * mask, bias, act, None, True))

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
        raise _C.ShapeError("linear: input must have at least one dimension")
    lead = x.shape[:-1]
    y = _linear2d(x.reshape(-1, x.shape[-1]), weight, bias, act, low, _mask)
    return y.reshape(*lead, weight.shape[0])


def _fuses_mask(x, weight, mask, low):
    """Whether linear's GEMM can take the pruning mask (pg_gemm.h b_mask): float32 weight
    and mask on cpu or sim, float32 x, or autocast's bfloat16 x with the float32 weight."""
    if weight.dtype is not float32 or mask.dtype is not float32 or weight.ndim != 2:
        return False
    if not _C._linear_mask_runs(weight) or mask.device != weight.device:
        return False
    if tuple(mask.shape) != tuple(weight.shape):
        return False
    return x.dtype is float32 or (low is not None and x.dtype is bfloat16)


def mask_fusion_pays(weight, mask, x):
    """Whether a pruned Linear should hand its mask to the GEMM rather than cache weight *
    mask: the GEMM that will run packs the weight itself (pygpu's own float32 kernel, or the
    AVX512_BF16 kernel under autocast bfloat16), so the mask costs no copy there."""
    if not isinstance(x, Tensor) or not _C._linear_mask_runs(weight):
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


def optim_update_(kind, p, grad, states, hyper, step, flag0=False, flag1=False):
    """p and its state tensors updated in place by one adaptive optimizer rule (kind: the
    name of one of the op table's PG_OPTIM rows, "adam", "rmsprop", "adagrad" or "adadelta";
    states: three tensors or None, hyper: five floats, as pg_ops_train.c lists them
    per kind): ONE op on p's device."""
    s0, s1, s2 = states
    _C._optim_update(kind, p, grad, s0, s1, s2, tuple(float(h) for h in hyper), int(step),
                     bool(flag0), bool(flag1))


# The convolutional layers' Functions live in _ops/_conv.py; the op table's rows name them
# here, beside the other fused ops' (tests/test_op_registry.py looks them up in this module).
from ._conv import _BatchNorm, _Convolution, _Pool2d  # noqa: E402,F401
# the sequence layers' Functions live beside their own ops; the op table's rows name them here
from ._rnn import _RNN  # noqa: E402,F401 - pg_ops.def's "RNN" row
from ._attention import _SDPA  # noqa: E402,F401 - pg_ops.def's "SDPA" row
