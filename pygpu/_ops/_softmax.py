"""softmax and log_softmax along any axis, written once.

The fork (_common.fused): over the last axis of a float32/float64 tensor whose backend has
the SOFTMAX node, the forward is that one node; elsewhere max, exp, sum and divide (or
log) from tensor ops. Either way the backward is written out from the saved output
(one Function each: the hand-written backward reads only the output, where the recorded
composition would keep every intermediate). float16/bfloat16 compute in float32."""
from .. import _C
from ..amp.autocast_mode import cast_inputs as _autocast
from ..autograd import Function
from ..autograd.grad_mode import is_grad_enabled
from ._common import axis as _axis
from ._common import float_input, fused, widened


def _forward(x, dim, log):
    """softmax (log: log_softmax) of x along dim: the SOFTMAX node, or its composition."""
    if dim == x.ndim - 1 and fused("SOFTMAX", x):
        return _C._softmax_rows(x, log)
    shifted = x - x.max(axis=dim, keepdims=True)
    if log:
        return shifted - shifted.exp().sum(axis=dim, keepdims=True).log()
    e = shifted.exp()
    return e / e.sum(axis=dim, keepdims=True)


class _LogSoftmax(Function):
    @staticmethod
    def forward(ctx, x, dim):
        out = _forward(x, dim, True)
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
        out = _forward(x, dim, False)
        ctx.save(out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return out * (g - (g * out).sum(axis=ctx.dim, keepdims=True)), None


def _apply(fn, x, dim, log):
    if x.requires_grad and is_grad_enabled():
        return widened(fn.apply, x, dim)
    return widened(_forward, x, dim, log)  # nothing to record: no Function


def log_softmax(x, dim=-1):
    """log(softmax(x)) along dim, computed stably (x - max - log-sum-exp).
    Under pygpu.autocast: float32."""
    float_input(x, "log_softmax")
    (x,) = _autocast("log_softmax", x)
    return _apply(_LogSoftmax, x, _axis(dim, x.ndim, "log_softmax"), True)


def softmax(x, dim=-1):
    """exp(x) / sum(exp(x)) along dim, computed stably. Under pygpu.autocast: float32."""
    float_input(x, "softmax")
    (x,) = _autocast("softmax", x)
    return _apply(_Softmax, x, _axis(dim, x.ndim, "softmax"), False)
