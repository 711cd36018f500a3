"""Writes of one tensor into a copy of another, as PyTorch's: diagonal_scatter,
select_scatter, slice_scatter, as_strided_scatter (the copy with the view replaced by src),
scatter_reduce/scatter_reduce_ and index_reduce/index_reduce_ (sum, prod, mean, amax, amin,
include_self), and histogram.

The *_scatter ones address the view's elements by their flat positions in the (contiguous)
input and write src there with one index_copy. The reductions group the contributions by
destination with one stable sort of the flat destinations, reduce each group with log2(n)
rounds of a segmented scan (the same elementwise step over a shifted copy, kept within a
group), and take each destination's result from its group's last element with a gather: no
Python loop over elements, and ties are resolved in the sources' order."""
from .. import _C, _dtype
from . import create as _tensor_create
from .join import cat

Tensor = _C.Tensor

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _positions(shape, device):
    return _tensor_create.arange(int(_numel(shape)), device=device).reshape(shape)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _write_view(input, view_of, src):
    """input with the elements view_of(positions) selects taken from src: each output
    element gathers from src or from input (index_select and where: differentiable with
    respect to both, as PyTorch's)."""
    base = input.contiguous()
    n = base.numel()
    where = view_of(_positions(tuple(base.shape), base.device))
    if tuple(where.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(where.shape)}")
    k = where.numel()
    which = _tensor_create.full((n,), -1, dtype=_dtype.int64, device=base.device)
    which = which.index_copy(0, where.reshape(-1), _tensor_create.arange(k, device=base.device))
    taken = src.reshape(-1).astype(base.dtype).index_select(0, which.clamp(min=0))
    return _C.where(which >= 0, taken, base.reshape(-1)).reshape(base.shape)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return _write_view(input, lambda p: p.diagonal(offset, dim1, dim2), src)


def select_scatter(input, src, dim, index):
    return _write_view(input, lambda p: p.select(dim, index), src)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    def view(p):
        idx = [slice(None)] * p.ndim
        idx[dim] = slice(start, end, step)
        return p[tuple(idx)]
    return _write_view(input, view, src)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    return _write_view(input, lambda p: p.as_strided(size, stride, storage_offset), src)


def _shift(x, s, fill):
    n = x.shape[0]
    head = _tensor_create.full((min(s, n),), fill, dtype=x.dtype, device=x.device)
    return cat([head, x[:n - s]], 0) if s < n else head


def _segmented(values, keys, op):
    """Each element combined with every earlier one of its group (keys sorted, equal keys
    adjacent): after the scan, a group's last element holds the group's reduction."""
    n = values.shape[0]
    s = 1
    while s < n:
        left = _shift(values, s, 0)
        same = _shift(keys, s, -1) == keys
        values = _C.where(same, op(left, values), values)
        s *= 2
    return values


_OPS = {"sum": lambda a, b: a + b, "mean": lambda a, b: a + b, "prod": lambda a, b: a * b,
        "amax": _C.maximum, "amin": _C.minimum}


def _reduce_into(flat_self, dest, src, reduce, include_self):
    """flat_self (n,) with each destination reduced with the src values sent to it."""
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    n = flat_self.shape[0]
    if dest.numel() == 0:
        return flat_self.clone()
    order = dest.argsort(stable=True)
    keys = dest.index_select(0, order)
    vals = src.reshape(-1).astype(flat_self.dtype).index_select(0, order)
    ones = _tensor_create.ones(keys.shape[0], dtype=flat_self.dtype, device=keys.device)
    group = _segmented(vals, keys, _OPS[reduce])
    counts = _segmented(ones, keys, _OPS["sum"])
    # the last element of each group: where the next key differs
    last = _tensor_create.ones(keys.shape[0], dtype=_dtype.bool_, device=keys.device)
    if keys.shape[0] > 1:
        last[:-1] = keys[1:] != keys[:-1]
    pos = _tensor_create.full((n,), -1, dtype=_dtype.int64, device=keys.device)
    ids = _tensor_create.arange(keys.shape[0], device=keys.device)
    pos = pos.index_copy(0, keys[last], ids[last])
    hit = pos >= 0
    safe = pos.clamp(min=0)
    got = group.index_select(0, safe)
    cnt = counts.index_select(0, safe)
    if reduce == "mean":
        total = got + flat_self if include_self else got
        n_items = cnt + 1.0 if include_self else cnt
        red = total / n_items
        if not flat_self.dtype.is_floating_point:
            red = (total // n_items.astype(total.dtype))
    elif include_self:
        red = _OPS[reduce](flat_self, got)
    else:
        red = got
    return _C.where(hit, red.astype(flat_self.dtype), flat_self)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with src[i] reduced into position index[i] along dim (sum, prod, mean, amax,
    amin; include_self: input's own value takes part)."""
    d = dim % max(input.ndim, 1)
    if index.ndim != input.ndim or src.ndim != input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self "
                           "tensor")
    base = input.contiguous()
    # the flat destination of each index element: its coordinates with axis d replaced
    coords = [_tensor_create.arange(s, device=index.device).reshape(
        [s if k == i else 1 for k in range(index.ndim)]).expand(*index.shape)
        for i, s in enumerate(index.shape)]
    coords[d] = index
    strides = base.stride()
    dest = sum(c * st for c, st in zip(coords, strides)).reshape(-1)
    srcs = src[tuple(slice(0, s) for s in index.shape)]
    out = _reduce_into(base.reshape(-1), dest, srcs, reduce, include_self)
    return out.reshape(base.shape)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    return self.copy_(scatter_reduce(self, dim, index, src, reduce, include_self=include_self))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with the slices of source reduced into the slices index names along dim
    (prod, mean, amax, amin)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = dim % max(input.ndim, 1)
    shape = [1] * input.ndim
    shape[d] = index.numel()
    idx = index.reshape(shape).expand(*source.shape)
    return scatter_reduce(input, d, idx, source, reduce, include_self=include_self)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return self.copy_(index_reduce(self, dim, index, source, reduce, include_self=include_self))


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """(hist, bin_edges): counts (or weights) of input in `bins` equal bins over range (the
    data's min and max by default) or in the given edges."""
    import collections
    x = input.reshape(-1).astype(_dtype.float64)
    if isinstance(bins, Tensor):
        edges = bins.astype(_dtype.float64)
    else:
        lo, hi = (float(x.min().item()), float(x.max().item())) if range is None and \
            x.numel() else (range if range is not None else (0.0, 1.0))
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = _tensor_create.linspace(lo, hi, int(bins) + 1, dtype=_dtype.float64,
                                        device=input.device)
    nb = edges.shape[0] - 1
    from .shape import searchsorted
    k = searchsorted(edges, x, right=True) - 1
    k = _C.where(x == edges[-1], _tensor_create.full((), nb - 1, dtype=_dtype.int64,
                                                     device=x.device), k)
    inside = (k >= 0) & (k < nb)
    w = weight.reshape(-1).astype(_dtype.float64) if weight is not None else \
        _tensor_create.ones(x.shape[0], dtype=_dtype.float64, device=x.device)
    w = w * inside.astype(_dtype.float64)
    hist = _tensor_create.zeros(nb, dtype=_dtype.float64, device=x.device)
    hist.index_add_(0, k.clamp(0, nb - 1), w)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    t = collections.namedtuple("histogram", ["hist", "bin_edges"])
    return t(hist.astype(input.dtype), edges.astype(input.dtype))


METHODS = {name: globals()[name] for name in (
    "diagonal_scatter", "select_scatter", "slice_scatter", "as_strided_scatter",
    "scatter_reduce", "scatter_reduce_", "index_reduce", "index_reduce_", "histogram")}
FUNCTIONS = {name: globals()[name] for name in (
    "diagonal_scatter", "select_scatter", "slice_scatter", "as_strided_scatter",
    "scatter_reduce", "index_reduce", "histogram")}
