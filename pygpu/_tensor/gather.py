"""Indexing by flat or per-axis positions, as PyTorch's: take, take_along_dim, put/put_,
index_fill/index_fill_, fill_diagonal_, unravel_index, unique_consecutive.

Compositions of pygpu's index_select, gather, masked_fill and index_copy_/index_add_ on the
tensor's device; the out-of-place forms are differentiable through them."""
from .. import _C, _dtype
from . import create as _tensor_create
from .join import cat

Tensor = _C.Tensor


def _check_range(index, n, what):
    if index.numel() and bool(((index < -n) | (index >= n)).any()):
        bad = int(index[(index < -n) | (index >= n)].reshape(-1)[0].item())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         f"elements.")


def take(self, index):
    """The elements at flat positions `index` (of any shape) of the tensor as if 1-d."""
    flat = self.reshape(-1)
    n = flat.numel()
    _check_range(index, n, "take")
    idx = index.reshape(-1) % max(n, 1)
    return flat.index_select(0, idx).reshape(index.shape)


def take_along_dim(self, indices, dim=None):
    """gather along dim with indices broadcast against the input (flat when dim is None)."""
    if dim is None:
        return take(self, indices.reshape(-1)) if indices.ndim else take(self, indices)
    n = self.ndim
    d = dim % n
    shape_i, shape_s = list(indices.shape), list(self.shape)
    shape_i[d] = shape_s[d] = 1
    from .stack import broadcast_shapes
    common = list(broadcast_shapes(tuple(shape_i), tuple(shape_s)))
    idx_shape = common[:]
    idx_shape[d] = indices.shape[d]
    src_shape = common[:]
    src_shape[d] = self.shape[d]
    return self.expand(*src_shape).gather(d, indices.expand(*idx_shape))


def put_(self, index, source, accumulate=False):
    """Write source's elements at the flat positions `index` (added there with accumulate),
    in place; returns self."""
    n = self.numel()
    _check_range(index, n, "put_")
    flat = self.reshape(-1)
    if flat.data_ptr() != self.data_ptr() or not self.is_contiguous():
        raise RuntimeError("put_: the tensor must be contiguous")
    idx = index.reshape(-1) % max(n, 1)
    src = source.reshape(-1).astype(self.dtype)
    if accumulate:
        flat.index_add_(0, idx, src)
    else:
        flat.index_copy_(0, idx, src)
    return self


def put(self, index, source, accumulate=False):
    return put_(self.clone(), index, source, accumulate)


def _index_fill_mask(self, dim, index, value, what):
    """(mask, value) for index_fill(_): a bool mask true on the slices at `index` along dim,
    shaped to broadcast over self, and the fill value as a number."""
    d = dim % max(self.ndim, 1)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        value = value.item()
    n = self.shape[d] if self.ndim else 1
    _check_range(index, n, what)
    hit = _tensor_create.zeros(n, dtype=_dtype.bool_, device=self.device)
    hit[index.reshape(-1) % max(n, 1)] = True
    shape = [1] * max(self.ndim, 1)
    shape[d] = n
    return hit.reshape(shape if self.ndim else ()), value


def index_fill_(self, dim, index, value):
    """Fill the slices at `index` along dim with value (a number or a 0-d tensor)."""
    return self.masked_fill_(*_index_fill_mask(self, dim, index, value, "index_fill_"))


def index_fill(self, dim, index, value):
    """index_fill_ on a copy (differentiable: the filled slices get no gradient)."""
    return self.masked_fill(*_index_fill_mask(self, dim, index, value, "index_fill"))


def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all dims equal, or a tall 2-d matrix, wrapping every
    cols + 1 rows with wrap=True), in place."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(self.shape)
    step = sum(self.stride())
    flat_n = self.numel()
    if self.ndim == 2 and wrap and self.shape[0] > self.shape[1] + 1:
        count = (flat_n + step - 1) // step
    else:
        count = n
    positions = _tensor_create.arange(count, device=self.device) * step
    positions = positions[positions < flat_n]
    if not self.is_contiguous():
        raise RuntimeError("fill_diagonal_: the tensor must be contiguous")
    flat = self.reshape(-1)
    flat[positions] = fill_value
    return self


def unravel_index(indices, shape):
    """The coordinates (one tensor per axis of `shape`) of flat indices into `shape`."""
    if isinstance(indices, int):
        indices = _tensor_create.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is _dtype.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    total = 1
    for s in shape:
        if s < 0:
            raise ValueError("'shape' cannot have negative values, but got "
                             f"{tuple(shape)}")
        total *= s
    rest = indices % max(total, 1)  # out of range wraps, as PyTorch's (its docs ask for range)
    out = []
    for s in reversed(shape):
        out.append(rest % s)
        rest = rest // s
    return tuple(reversed(out))


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """The tensor with each run of equal consecutive elements (or slices along dim) kept
    once; optionally the run each element is in, and the runs' lengths."""
    if dim is None:
        x = self.reshape(-1)
        n = x.numel()
        if n == 0:
            empty = _tensor_create.empty(0, dtype=_dtype.int64, device=self.device)
            outs = [x] + ([empty.reshape(self.shape)] if return_inverse else []) + \
                ([empty] if return_counts else [])
            return tuple(outs) if len(outs) > 1 else outs[0]
        change = _tensor_create.ones(n, dtype=_dtype.bool_, device=self.device)
        if n > 1:
            change[1:] = x[1:] != x[:-1]
        values = x[change]
    else:
        d = dim % self.ndim
        x = self.movedim(d, 0)
        n = x.shape[0]
        change = _tensor_create.ones(n, dtype=_dtype.bool_, device=self.device)
        if n > 1:
            rows = x.reshape(n, -1)
            change[1:] = (rows[1:] != rows[:-1]).any(1)
        values = x[change].movedim(0, d)
    outs = [values]
    run = change.astype(_dtype.int64).cumsum(0) - 1
    if return_inverse:
        outs.append(run.reshape(self.shape) if dim is None else run)
    if return_counts:
        starts = _tensor_create.arange(n, device=self.device)[change]
        ends = cat([starts[1:], _tensor_create.tensor([n], device=self.device)])
        outs.append(ends - starts)
    return tuple(outs) if len(outs) > 1 else outs[0]


METHODS = {name: globals()[name] for name in (
    "take", "take_along_dim", "put_", "put", "index_fill_", "index_fill", "fill_diagonal_",
    "unique_consecutive")}
FUNCTIONS = {name: globals()[name] for name in (
    "take", "take_along_dim", "put", "index_fill", "unravel_index", "unique_consecutive")}
