"""layer_norm, written once: (x - mean) / sqrt(var + eps) over the last k axes, then
* weight + bias (biased variance, as PyTorch's).

The fork (_common.fused): over one axis, with weight and bias None or 1-d of x's dtype, on
a backend that has the LAYER_NORM node, the op is that node each way (_LayerNorm): the
forward saves each row's mean and rstd (PyTorch's native_layer_norm), and the backward is
one node computing dx, dweight and dbias from them. Under create_graph the gradients are
those of the composite (_composed, Function.composite), so higher-order gradients still
work. Elsewhere the same formula from tensor ops, which autograd records op by op."""
import numbers

from .. import _C
from ..autograd import Function
from ..autograd.grad_mode import is_grad_enabled
from ._common import float_input, fused


def _composed(x, weight, bias, eps, axes):
    mean = x.mean(axis=axes, keepdims=True)
    d = x - mean
    out = d / _C.sqrt((d * d).mean(axis=axes, keepdims=True) + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


class _LayerNorm(Function):
    """layer_norm over the last axis as one LAYER_NORM node each way. The backward node
    computes, with xhat = (x - mean) * rstd and gw = g * weight (mean and rstd saved by the
    forward):
        dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)),
        dweight = sum over rows of g * xhat,  dbias = sum over rows of g."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, save = _C._layer_norm_rows(x, weight, bias, eps, True)
        ctx.save(x, weight, save)
        ctx.needs = (weight is not None and weight.requires_grad,
                     bias is not None and bias.requires_grad)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, save = ctx.saved
        dx, dw, db = _C._layer_norm_backward(g, x, w, save, *ctx.needs)
        return dx, dw, db, None


def _layer_norm_composite(x, weight, bias, eps):
    """The one-node layer_norm from tensor ops (create_graph's path: higher_order.py)."""
    return _composed(x, weight, bias, eps, (x.ndim - 1,))


_LayerNorm.composite = staticmethod(_layer_norm_composite)


def _one_node(x, weight, bias, k):
    return k == 1 and fused("LAYER_NORM", x) and all(
        t is None or (t.dtype == x.dtype and t.ndim == 1) for t in (weight, bias))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over the last len(normalized_shape) axes, then
    * weight + bias (each of normalized_shape)."""
    float_input(input, "layer_norm")
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if input.shape[input.ndim - k:] != normalized_shape:
        raise RuntimeError(f"layer_norm: input of shape {input.shape} does not end with "
                           f"normalized_shape {list(normalized_shape)}")
    eps = float(eps)
    if _one_node(input, weight, bias, k):
        if is_grad_enabled() and any(t is not None and t.requires_grad
                                     for t in (input, weight, bias)):
            return _LayerNorm.apply(input, weight, bias, eps)
        return _C._layer_norm_rows(input, weight, bias, eps)  # nothing to record: no Function
    return _composed(input, weight, bias, eps, tuple(range(input.ndim - k, input.ndim)))
