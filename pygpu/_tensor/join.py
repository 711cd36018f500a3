"""Joining tensors: cat (an autograd Function: one copy into each slice of the result,
the gradient sliced back) and stack (cat of unsqueezed views), with PyTorch's names. Mixed
dtypes join in their promoted dtype (torch.promote_types over all of them), as PyTorch's."""
from .. import _C
from .._ops._common import axis, want_tensor
from .create import empty
from .views import norm_dim
from .._dtype import promote_types
from ..autograd import Function

Tensor = _C.Tensor


class _Cat(Function):
    @staticmethod
    def forward(ctx, *tensors, dim=0, dtype=None):
        first = tensors[0]
        ctx.dim, ctx.sizes = dim, [t.shape[dim] for t in tensors]
        ctx.dtypes = [t.dtype for t in tensors]
        shape = list(first.shape)
        shape[dim] = sum(ctx.sizes)
        out = empty(tuple(shape), dtype=dtype, device=first.device)
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
        for n, dt in zip(ctx.sizes, ctx.dtypes):
            part = g[lead + (slice(pos, pos + n),)]
            grads.append(part if part.dtype == dt else part.to(dtype=dt))
            pos += n
        return tuple(grads)


def cat(tensors, dim=0):
    """Join tensors along an existing axis `dim` (all on one device; mixed dtypes promote)."""
    tensors = list(tensors)
    if not tensors:
        raise _C.InvalidValueError("torch.cat(): expected a non-empty list of Tensors")
    if type(tensors[0]) is not _C.Tensor and getattr(tensors[0], "is_quantized", False):
        return tensors[0]._cat(tensors, dim)  # a quantized tensor's own (quantization/)
    for i, t in enumerate(tensors):
        want_tensor(t, "cat", f"tensors[{i}]")
    first = tensors[0]
    if first.ndim == 0:
        raise _C.ShapeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    dim = axis(dim, first.ndim, "cat")
    for i, t in enumerate(tensors[1:], 1):
        if t.device != first.device:
            raise _C.DeviceMismatchError(
                f"cat: tensors[{i}] is on {t.device} but tensors[0] is on {first.device}; "
                "move them to one device first")
        if t.ndim != first.ndim:
            raise _C.ShapeError(f"Tensors must have same number of dimensions: got {first.ndim} "
                                f"and {t.ndim} (cat: tensors[{i}] has shape {t.shape})")
        bad = [k for k, (a, b) in enumerate(zip(t.shape, first.shape)) if k != dim and a != b]
        if bad:
            raise _C.ShapeError(f"Sizes of tensors must match except in dimension {dim}. "
                                f"Expected size {first.shape[bad[0]]} but got size "
                                f"{t.shape[bad[0]]} for tensor number {i} in the list (cat: "
                                f"tensors[{i}] has shape {t.shape}, tensors[0] {first.shape})")
    dtype = first.dtype  # mixed dtypes promote, as PyTorch's cat
    for t in tensors[1:]:
        dtype = promote_types(dtype, t.dtype)
    return _Cat.apply(*tensors, dim=dim, dtype=dtype)


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0]
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"stack: tensors[{i}] is a {type(t).__name__}, not a Tensor")
        if t.shape != first.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(first.shape)} at entry 0 and {list(t.shape)} at entry {i}")
    d = norm_dim("stack", dim, first.ndim, extra=1)
    return cat([t.unsqueeze(d) for t in tensors], d)


FUNCTIONS = {"stack": stack}
