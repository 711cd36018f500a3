"""nn.utils.clip_grad_norm_ and clip_grad_value_: gradients rescaled or clamped in place.

The total norm is computed and applied on the gradients' device with tensor ops (no
read back to the host unless error_if_nonfinite asks for it), so clipping in a
training loop on an accelerator makes no transfer."""
import math

from ... import _C
from ...autograd import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _grads(parameters):
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm_type-norm of all tensors together, as a 0-d tensor (float32 unless the
    tensors are float64), on their device."""
    tensors = [tensors] if isinstance(tensors, _C.Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        from ..._tensor.create import tensor as _tensor
        return _tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            total = None
            for g in tensors:
                m = _C.abs(g).max() if g.numel() else g.sum() * 0.0
                total = m if total is None else _C.maximum(total, m)
        else:
            total = None
            for g in tensors:
                a = _C.abs(g)
                s = (a * a).sum() if norm_type == 2.0 else (
                    a.sum() if norm_type == 1.0 else _pow(a, norm_type).sum())
                total = s if total is None else total + s
            total = _C.sqrt(total) if norm_type == 2.0 else (
                total if norm_type == 1.0 else _pow(total, 1.0 / norm_type))
    if error_if_nonfinite and not math.isfinite(float(total.item())):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return total


def _pow(a, p):
    """a ** p for a >= 0, from exp and log (a == 0 gives 0)."""
    zero = (a == 0).astype(a.dtype)
    return _C.exp(_C.log(a + zero) * p) * (1.0 - zero)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)), in place."""
    grads = _grads(parameters)
    with no_grad():
        coef = _C.minimum(float(max_norm) / (total_norm + 1e-6), 1.0)
        for g in grads:
            g.copy_(g * coef.astype(g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Rescale the gradients of `parameters` in place so that their total norm is at most
    max_norm; returns the total norm before clipping (a 0-d tensor)."""
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if grads:
        clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of `parameters` to [-clip_value, clip_value], in place."""
    v = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.copy_(_C.minimum(_C.maximum(g, -v), v))
