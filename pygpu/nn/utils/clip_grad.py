"""nn.utils.clip_grad_norm_ and clip_grad_value_: gradients rescaled or clamped in place.

The total norm is computed and applied on the gradients' device (no read back to the host
unless error_if_nonfinite asks for it), so clipping in a training loop on an accelerator
makes no transfer. With foreach=None or True (PyTorch's argument), the gradients of each
device and dtype go as one list: the norm of them all is ONE node (MULTI_NORM: on cpu and
sim one pass over every gradient, cut over the device's threads by the total element count;
on cuda per-chunk partial sums, then one block combining them), and the scaling another
(torch._foreach_mul_'s MULTI node); where the device's backend has no such node, and with
foreach=False, each gradient is a few tensor ops of its own."""
import math

from ... import _C
from ..._dtype import float32, float64
from ...autograd import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _grads(parameters):
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _lists(tensors, foreach, scaling=False):
    """The tensors grouped by (device, dtype) as lists the list nodes take (the norm's
    MULTI_NORM, or with scaling the BINARY list that multiplies them), and the rest (other
    dtypes, non-contiguous, a device without the node, or foreach=False)."""
    groups, rest = {}, []
    for g in tensors:
        if (foreach is not False and g.dtype in (float32, float64) and g.is_contiguous()
                and (_C._has_node("MULTI", g, "BINARY") if scaling
                     else _C._has_node("MULTI_NORM", g))):
            groups.setdefault((g.device, g.dtype), []).append(g)
        else:
            rest.append(g)
    return list(groups.values()), rest


def _norm_each(tensors, norm_type):
    """The composite path: each tensor's contribution by tensor ops (norm_type inf: the
    largest |x|; else the sum of |x|^p), summed or maxed over the tensors."""
    total = None
    for g in tensors:
        if norm_type == math.inf:
            m = _C.abs(g).max() if g.numel() else g.sum() * 0.0
            total = m if total is None else _C.maximum(total, m)
        else:
            a = _C.abs(g)
            s = (a * a).sum() if norm_type == 2.0 else (
                a.sum() if norm_type == 1.0 else _pow(a, norm_type).sum())
            total = s if total is None else total + s
    return total


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm_type-norm of all tensors together, as a 0-d tensor (float32 unless the
    tensors are float64), on their device."""
    tensors = [tensors] if isinstance(tensors, _C.Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        from ..._tensor.create import tensor as _tensor
        return _tensor(0.0)
    with no_grad():
        lists, rest = _lists(tensors, foreach if norm_type > 0 else False)
        if len(lists) == 1 and not rest:  # the common case: one node gives the norm itself
            total = _C._multi_norm(lists[0], norm_type)
        else:
            parts = [_C._multi_norm(ts, norm_type) for ts in lists]
            if norm_type != math.inf:  # each list's norm back to its sum of |x|^p
                parts = [n * n if norm_type == 2.0 else (n if norm_type == 1.0 else
                                                         _pow(n, norm_type)) for n in parts]
            if rest:
                parts.append(_norm_each(rest, norm_type))
            dev = tensors[0].device
            total = None
            for part in parts:
                part = part.to(dev)
                total = part if total is None else (
                    _C.maximum(total, part) if norm_type == math.inf else total + part)
            if norm_type != math.inf:
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
        lists, rest = _lists(grads, foreach, scaling=True)
        for gs in lists:  # one node per device and dtype: torch._foreach_mul_(grads, coef)
            _C._foreach_binary_("multiply", gs, coef.astype(gs[0].dtype).to(gs[0].device))
        for g in rest:
            g.copy_(g * coef.astype(g.dtype).to(g.device))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Rescale the gradients of `parameters` in place so that their total norm is at most
    max_norm; returns the total norm before clipping (a 0-d tensor)."""
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    if grads:
        clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of `parameters` to [-clip_value, clip_value], in place."""
    v = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.copy_(_C.minimum(_C.maximum(g, -v), v))
