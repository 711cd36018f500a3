"""Stacking, splitting, broadcasting and copied views, as PyTorch's torch functions and
Tensor methods: atleast_1d/2d/3d, hstack, vstack, row_stack, dstack, column_stack, hsplit,
vsplit, dsplit, split_with_sizes, unsafe_split, unsafe_chunk, fliplr, flipud, moveaxis,
swapdims, broadcast_shapes, broadcast_tensors, diagflat, combinations, narrow_copy, and the
*_copy forms of the views (permute_copy, transpose_copy, ...: the view, then a copy).

Each is pygpu's views, cat and index_select, differentiable through them; nothing loops
over elements."""
import itertools

from .. import _C, _dtype
from . import create as _tensor_create
from .join import cat

Tensor = _C.Tensor


def _tensors(args, name):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0]), True
    return list(args), len(args) != 1


def atleast_1d(*tensors):
    ts, many = _tensors(tensors, "atleast_1d")
    out = [t.reshape(1) if t.ndim == 0 else t for t in ts]
    return tuple(out) if many else out[0]


def atleast_2d(*tensors):
    ts, many = _tensors(tensors, "atleast_2d")
    out = [t.reshape(1, 1) if t.ndim == 0 else t.unsqueeze(0) if t.ndim == 1 else t
           for t in ts]
    return tuple(out) if many else out[0]


def atleast_3d(*tensors):
    ts, many = _tensors(tensors, "atleast_3d")

    def up(t):
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:
            return t.reshape(1, t.shape[0], 1)
        if t.ndim == 2:
            return t.unsqueeze(-1)
        return t
    out = [up(t) for t in ts]
    return tuple(out) if many else out[0]


def _need(tensors, name):
    ts = list(tensors)
    if not ts:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return ts


def hstack(tensors, *, out=None):
    """cat along axis 1 (axis 0 for 1-d tensors)."""
    ts = atleast_1d(_need(tensors, "hstack"))
    r = cat(list(ts), 0 if ts[0].ndim == 1 else 1)
    return r if out is None else out.copy_(r)


def vstack(tensors, *, out=None):
    """cat of the tensors made at least 2-d, along axis 0."""
    r = cat(list(atleast_2d(_need(tensors, "vstack"))), 0)
    return r if out is None else out.copy_(r)


row_stack = vstack


def dstack(tensors, *, out=None):
    """cat of the tensors made at least 3-d, along axis 2."""
    r = cat(list(atleast_3d(_need(tensors, "dstack"))), 2)
    return r if out is None else out.copy_(r)


def column_stack(tensors, *, out=None):
    """The 0-d and 1-d tensors as columns, then cat along axis 1."""
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _need(tensors, "column_stack")]
    r = cat(ts, 1)
    return r if out is None else out.copy_(r)


def _split_by(self, sections, dim, name, min_dims):
    if self.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} "
                           f"dimension, but got a tensor with {self.ndim} dimensions!")
    if isinstance(sections, int):
        if sections == 0 or self.shape[dim] % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but "
                               f"the size of the dimension {self.shape[dim]} is not divisible "
                               f"by the split_size {sections}!")
    return tuple(self.tensor_split(sections, dim))


def hsplit(self, indices_or_sections):
    return _split_by(self, indices_or_sections, 1 if self.ndim > 1 else 0, "hsplit", 1)


def vsplit(self, indices_or_sections):
    return _split_by(self, indices_or_sections, 0, "vsplit", 2)


def dsplit(self, indices_or_sections):
    return _split_by(self, indices_or_sections, 2, "dsplit", 3)


def split_with_sizes(self, split_sizes, dim=0):
    sizes = list(split_sizes)
    if sum(sizes) != self.shape[dim]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{self.shape[dim]} (input tensor's size at dimension {dim}), but "
                           f"got split_sizes={sizes}")
    return tuple(self.split(sizes, dim))


def unsafe_split(self, split_size, dim=0):
    return tuple(self.split(split_size, dim))


def unsafe_split_with_sizes(self, split_sizes, dim=0):
    return split_with_sizes(self, split_sizes, dim)


def unsafe_chunk(self, chunks, dim=0):
    return tuple(self.chunk(chunks, dim))


def fliplr(self):
    """Reverse the columns (axis 1) of an at least 2-d tensor."""
    if self.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return self.flip(1)


def flipud(self):
    """Reverse the rows (axis 0) of an at least 1-d tensor."""
    if self.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return self.flip(0)


def moveaxis(self, source, destination):
    return self.movedim(source, destination)


def swapdims(self, dim0, dim1):
    return self.transpose(dim0, dim1)


def broadcast_shapes(*shapes):
    """The shape all `shapes` broadcast to (RuntimeError, with PyTorch's words, if none)."""
    dims = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    n = max((len(d) for d in dims), default=0)
    out = [1] * n
    for k, d in enumerate(dims):
        for i in reversed(range(len(d))):  # from the last axis, as PyTorch checks
            size = d[i]
            if size < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {size}: "
                                   f"{list(d)}")
            j = n - len(d) + i
            if size == 1 or size == out[j]:
                continue
            if out[j] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {size} at "
                                   f"{i - len(d)}! Mismatching argument at index {k} had "
                                   f"{tuple(d)}; but expected shape should be broadcastable to "
                                   f"{out}")
            out[j] = size
    return _C.Size(out) if hasattr(_C, "Size") else tuple(out)


def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common shape."""
    ts = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) \
        else list(tensors)
    try:
        shape = broadcast_shapes(*(tuple(t.shape) for t in ts))
    except RuntimeError:
        for i in range(1, len(ts)):
            a, b = tuple(ts[0].shape), tuple(ts[i].shape)
            n = max(len(a), len(b))
            a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
            for k, (x, y) in enumerate(zip(a, b)):
                if x != y and 1 not in (x, y):
                    raise RuntimeError(f"The size of tensor a ({x}) must match the size of "
                                       f"tensor b ({y}) at non-singleton dimension {k}") from None
        raise
    return tuple(t.expand(*shape) for t in ts)


def diagflat(self, offset=0):
    """A 2-d tensor with the flattened input on its offset-th diagonal."""
    return self.reshape(-1).diag(offset)


def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-d tensor's elements, as rows (itertools' order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _tensor_create.empty(0, dtype=input.dtype, device=input.device)
    n = input.shape[0]
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(range(n), r))
    if not rows:
        return _tensor_create.empty(0, r, dtype=input.dtype, device=input.device)
    idx = _tensor_create.tensor(rows, dtype=_dtype.int64, device=input.device)
    return input.index_select(0, idx.reshape(-1)).reshape(len(rows), r)


def unfold(self, dimension, size, step):
    """The windows of `size` elements every `step` along `dimension`, as a new last axis: a
    view (as_strided), differentiable."""
    n = max(self.ndim, 1)
    if not -n <= dimension < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dimension})")
    d = dimension % n
    length = self.shape[d] if self.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    strides = list(self.stride()) if self.ndim else [1]
    shape = list(self.shape) if self.ndim else [1]
    shape[d] = (length - size) // step + 1
    new_strides = strides[:d] + [strides[d] * step] + strides[d + 1:] + [strides[d]]
    new_shape = shape + [size]
    if not self.ndim:
        new_shape, new_strides = [size], [1]
    return self.as_strided(new_shape, new_strides)


def narrow_copy(self, dim, start, length):
    return self.narrow(dim, start, length).clone()


def _copy_of(view):
    def fn(input, *args, **kwargs):
        out = getattr(input, view)(*args, **kwargs)
        if isinstance(out, (tuple, list)):
            return type(out)(o.clone() for o in out)
        return out.clone()
    fn.__name__ = f"{view}_copy"
    fn.__doc__ = f"torch.{view}_copy: input.{view}(...), copied into new memory."
    return fn


_COPIES = {f"{v}_copy": _copy_of(v) for v in (
    "permute", "transpose", "t", "squeeze", "unsqueeze", "expand", "select", "detach",
    "diagonal", "unbind", "split", "split_with_sizes", "as_strided", "view", "unfold")}
_COPIES["alias_copy"] = lambda input: input.clone()
_COPIES["alias_copy"].__name__ = "alias_copy"


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """input sliced along dim [start:end:step], copied."""
    idx = [slice(None)] * input.ndim
    idx[dim] = slice(start, end, step)
    return input[tuple(idx)].clone()


METHODS = {name: globals()[name] for name in (
    "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes",
    "unsafe_chunk", "fliplr", "flipud", "moveaxis", "swapdims", "diagflat", "narrow_copy",
    "unfold")}
FUNCTIONS = dict({k: v for k, v in METHODS.items() if k != "unfold"}, **{name: globals()[name] for name in (
    "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack", "dstack",
    "column_stack", "broadcast_shapes", "broadcast_tensors", "combinations", "slice_copy")},
    **_COPIES)
