"""Index ops with PyTorch's names and the indexing that is not a view.

gather, scatter(_), scatter_add(_), index_select, index_add(_), index_copy(_),
masked_fill(_), masked_select, nonzero, cumsum, cumprod, sort, argsort, topk: each is one
C kernel of the index family (csrc/core/pg_ops_index.c, csrc/backends/cpu/cpu_index.c),
recorded for autograd through a Function whose backward is another kernel of the family
(gather <-> scatter_add, index_select <-> index_add).

`t[key]` and `t[key] = v` with a tensor, a list or a bool in the key (the C indexing keeps
ints, slices, ... and None, which are views) come here through _C._set_index_hooks:
- a bool mask over the leading axes selects the true elements (their count is read from
  the device first, as PyTorch does: one small counted transfer on a device);
- int tensors/lists select along their axis (negative indices count from the end); several
  of them, side by side, broadcast together (t[rows, cols]);
- assignment writes through index_copy_ / masked_fill_ into the tensor's own memory."""
from .. import _C
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from .reduce import _SORT_T, _TOPK_T, Gather
from .views import norm_dim
from .join import cat
from ..autograd import writes as _writes
from . import complex as _complex

Tensor = _C.Tensor
_c_getitem = Tensor.__getitem__
_c_setitem = Tensor.__setitem__


def _needs_grad(*ts):
    for t in ts:  # a loop, not any(<generator>): this runs on every index op's call
        if isinstance(t, Tensor) and t.requires_grad:
            return is_grad_enabled()
    return False


def _zeros(shape, like):
    from .create import zeros
    return zeros(shape, dtype=like.dtype, device=like.device)


def _one_d(op, t):
    """0-d -> (1,), for the kernels that need an axis; returns (tensor, was_0d)."""
    return (t.reshape(1), True) if t.ndim == 0 else (t, False)


# ---- gather / scatter ---------------------------------------------------------------------

def gather(self, dim, index, *, sparse_grad=False):
    if self.ndim == 0 and index.ndim == 0:
        return gather(self.reshape(1), 0, index.reshape(1)).reshape(())
    d = norm_dim("gather", dim, self.ndim)
    if self.dtype.is_complex:  # on the real pairs (pygpu/_tensor/complex.py)
        return _complex.gather(gather, self, d, index)
    if _needs_grad(self):
        return Gather.apply(self, d, index)
    return _C._gather(self, d, index)


def _one_d_index(self, index, src):
    """PyTorch counts a 0-d index (and src) as one element along a 1-d tensor's axis:
    torch.zeros(10).scatter_(0, torch.tensor(3), value=1) (the one-hot Lambda of the
    "Learn the Basics" transforms page)."""
    if isinstance(index, Tensor) and index.ndim == 0 and self.ndim <= 1:
        index = index.reshape(1)
        if isinstance(src, Tensor) and src.ndim == 0:
            src = src.reshape(1)
    return index, src


def _scatter_src(self, index, src, value, op):
    index, src = _one_d_index(self, index, src)
    if src is None and value is None:
        raise TypeError(f"{op}: give src (a tensor) or value (a number)")
    if src is None or not isinstance(src, Tensor):
        from .create import full
        v = value if src is None else src
        return full(index.shape, v, dtype=self.dtype, device=self.device)
    return src


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    index, src = _one_d_index(self, index, src)
    given = src
    src = _scatter_src(self, index, src, value, "scatter_")
    if reduce not in (None, "add"):
        raise ValueError(f"scatter_: reduce={reduce!r} is not supported (None or 'add')")
    d = norm_dim("scatter_", dim, self.ndim)
    op = "SCATTER_ADD" if reduce == "add" else "SCATTER"
    if _needs_grad(self, src):
        return _writes.scatter_(self, d, index, given if isinstance(given, Tensor) else None,
                                lambda: _C._scatter(op, self, d, index, src), add=op == "SCATTER_ADD")
    _C._scatter(op, self, d, index, src)
    return self


def scatter_add_(self, dim, index, src):
    index, src = _one_d_index(self, index, src)
    d = norm_dim("scatter_add_", dim, self.ndim)
    if _needs_grad(self, src):
        return _writes.scatter_(self, d, index, src, lambda: _C._scatter("SCATTER_ADD", self, d, index, src),
                                add=True)
    _C._scatter("SCATTER_ADD", self, d, index, src)
    return self


class _ScatterFn(Function):
    @staticmethod
    def forward(ctx, x, src, dim, index, add):
        ctx.dim, ctx.index, ctx.add = dim, index, add
        ctx.src_shape = src.shape
        out = x.clone()
        _C._scatter("SCATTER_ADD" if add else "SCATTER", out, dim, index, src)
        return out

    @staticmethod
    def backward(ctx, g):  # differentiable ops only (higher-order gradients)
        gx = g
        if not ctx.add:  # the overwritten elements get no gradient
            gx = _ScatterFn.apply(g, _zeros(ctx.index.shape, g), ctx.dim, ctx.index, False)
        gs = Gather.apply(g, ctx.dim, ctx.index)
        if gs.shape != ctx.src_shape:
            full = _zeros(ctx.src_shape, g)
            full[tuple(slice(0, n) for n in gs.shape)] = gs
            gs = full
        return gx, gs, None, None, None


def scatter(self, dim, index, src=None, *, value=None, reduce=None):
    index, src = _one_d_index(self, index, src)
    src = _scatter_src(self, index, src, value, "scatter")
    d = norm_dim("scatter", dim, self.ndim)
    if reduce not in (None, "add"):
        raise ValueError(f"scatter: reduce={reduce!r} is not supported (None or 'add')")
    if _needs_grad(self, src):
        return _ScatterFn.apply(self, src, d, index, reduce == "add")
    out = self.clone()
    _C._scatter("SCATTER_ADD" if reduce == "add" else "SCATTER", out, d, index, src)
    return out


def scatter_add(self, dim, index, src):
    return scatter(self, dim, index, src, reduce="add")


# ---- index_select / index_add / index_copy ------------------------------------------------

class _IndexSelectFn(Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.shape, ctx.dim, ctx.index = x.shape, dim, index
        return _C._index_select(x, dim, index)

    @staticmethod
    def backward(ctx, g):  # index_add into zeros, itself differentiable (_IndexAddFn)
        return _IndexAddFn.apply(_zeros(ctx.shape, g), g, ctx.dim, ctx.index), None, None


class _IndexAddFn(Function):
    """x with source added at index along dim (index_add out of place): index_select's
    backward, and index_select is its own, so both have gradients of every order."""
    @staticmethod
    def forward(ctx, x, source, dim, index):
        ctx.dim, ctx.index = dim, index
        out = x.clone()
        _C._scatter("INDEX_ADD", out, dim, index, source.contiguous())
        return out

    @staticmethod
    def backward(ctx, g):
        return g, _IndexSelectFn.apply(g, ctx.dim, ctx.index), None, None


def index_select(self, dim, index):
    if self.ndim == 0:
        return index_select(self.reshape(1), 0, index).reshape(())
    d = norm_dim("index_select", dim, self.ndim)
    if self.dtype.is_complex:  # on the real pairs (pygpu/_tensor/complex.py)
        return _complex.on_pairs(index_select, self, d, index)
    if _needs_grad(self):
        return _IndexSelectFn.apply(self, d, index)
    return _C._index_select(self, d, index)


def index_add_(self, dim, index, source, *, alpha=1):
    d = norm_dim("index_add_", dim, self.ndim)
    if _needs_grad(self, source):
        scaled = source * alpha if alpha != 1 else source
        return _writes.index_copy_(self, d, index, source,
                                   lambda: _C._scatter("INDEX_ADD", self, d, index, scaled), add=True,
                                   alpha=alpha)
    if alpha != 1:
        source = source * alpha
    _C._scatter("INDEX_ADD", self, d, index, source)
    return self


def index_copy_(self, dim, index, source):
    d = norm_dim("index_copy_", dim, self.ndim)
    if _needs_grad(self, source):
        return _writes.index_copy_(self, d, index, source,
                                   lambda: _C._scatter("INDEX_COPY", self, d, index, source))
    _C._scatter("INDEX_COPY", self, d, index, source)
    return self


def index_add(self, dim, index, source, *, alpha=1):
    return index_add_(self.clone(), dim, index, source, alpha=alpha)


def index_copy(self, dim, index, source):
    return index_copy_(self.clone(), dim, index, source)


# ---- masks --------------------------------------------------------------------------------

def _scalar(value, op):
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        return value.item()
    return value


def _masked_fill_raw(self, mask, v):
    """One MASKED_FILL node (a complex tensor's: one per part, pygpu/_tensor/complex.py)."""
    if self.dtype.is_complex:
        _complex.masked_fill_parts(self, mask, v)
    else:
        _C._masked_fill_(self, mask, v)


def masked_fill_(self, mask, value):
    v = _scalar(value, "masked_fill_")
    if _needs_grad(self, value):
        return _writes.masked_fill_(self, mask, value, lambda: _masked_fill_raw(self, mask, v))
    _masked_fill_raw(self, mask, v)
    return self


class _MaskedFillFn(Function):
    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.mask = mask
        out = x.clone()
        _C._masked_fill_(out, mask, value)
        return out

    @staticmethod
    def backward(ctx, g):  # itself: differentiable to every order
        return _MaskedFillFn.apply(g, ctx.mask, 0), None, None


def masked_fill(self, mask, value):
    if self.dtype.is_complex:  # a where of the pairs: differentiable in self and value
        return _complex.where(mask, value, self).to(self.dtype)
    if isinstance(value, Tensor) and _needs_grad(value):  # the fill value's gradient too
        return _C.where(mask, value.reshape(()), self)
    value = _scalar(value, "masked_fill")
    if _needs_grad(self):
        return _MaskedFillFn.apply(self, mask, value)
    out = self.clone()
    _C._masked_fill_(out, mask, value)
    return out


def _count(mask):
    return int(mask.sum().item())


def _flat_positions(mask):
    return _C._nonzero(mask, _count(mask))


def _floordiv(a, n):
    """a // n for non-negative int64 a below 2**53 (exact in float64) and n >= 1."""
    return (a / float(max(n, 1))).astype(a.dtype)


def nonzero(self, *, as_tuple=False):
    """The indices of the non-zero elements, (n, ndim) int64 (or a tuple of 1-D tensors)."""
    b = self if self.dtype.name == "bool" else self != 0
    flat = _flat_positions(b)
    cols, rest = [], flat
    for i in range(self.ndim - 1, -1, -1):
        n = self.shape[i]
        q = _floordiv(rest, n)
        cols.append(rest - q * n)  # rest % n
        rest = q
    cols.reverse()
    if as_tuple:
        return tuple(cols) if self.ndim else (flat,)
    from .join import stack
    return stack(cols, 1) if self.ndim else flat.reshape(-1, 0)


def masked_select(self, mask):
    if mask.shape != self.shape:
        mask = mask.expand(self.shape)
    return _getitem_mask(self, mask)


# ---- running sums, sorting ----------------------------------------------------------------

def _flip(t, d):
    return t.flip(d)


class _CumsumFn(Function):
    @staticmethod
    def forward(ctx, x, d):
        ctx.d = d
        return _C._cumulative(x, d, False)

    @staticmethod
    def backward(ctx, g):  # a reversed cumsum: itself differentiable
        d = ctx.d
        return _flip(cumsum(_flip(g, d), d), d), None


def cumsum(self, dim, *, dtype=None):
    x = self if dtype is None else self.to(dtype=dtype)
    x, was0 = _one_d("cumsum", x)
    d = norm_dim("cumsum", dim, x.ndim)
    out = _CumsumFn.apply(x, d) if _needs_grad(x) else _C._cumulative(x, d, False)
    return out.reshape(()) if was0 else out


class _CumprodFn(Function):
    """d out_j / d x_k = prod_{i <= j, i != k} x_i for j >= k. Without zeros in x that is
    out_j / x_k, so grad_k = (reverse cumsum of g * out)_k / x_k; with a zero (the check
    reads one flag back) every k's product leaving x_k out is formed at once: an (n, n)
    cumprod per row along the dim, n its length, as PyTorch's exact zero handling."""
    @staticmethod
    def forward(ctx, x, d):
        out = _C._cumulative(x, d, True)
        ctx.save(x, out)
        ctx.d = d
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved
        d = ctx.d
        if not bool((x == 0).any()):
            return _flip(cumsum(_flip(g * out, d), d), d) / x, None
        from .create import arange
        from .create import eye
        xm, gm = x.movedim(d, -1), g.movedim(d, -1)            # (..., n)
        n = xm.shape[-1]
        one = eye(n, dtype=x.dtype, device=x.device)           # (k, i)
        leave_out = xm.unsqueeze(-2) * (1 - one) + one         # (..., k, i): x_i, 1 at i == k
        prods = cumprod(leave_out, leave_out.ndim - 1)        # (..., k, j)
        idx = arange(n, device=x.device)
        later = (idx.unsqueeze(0) >= idx.unsqueeze(1)).astype(x.dtype)  # (k, j): j >= k
        gk = (prods * later * gm.unsqueeze(-2)).sum(axis=-1)   # (..., k)
        return gk.movedim(-1, d), None


def cumprod(self, dim, *, dtype=None):
    """Cumulative product along dim (differentiable, zeros included, as PyTorch's)."""
    x = self if dtype is None else self.to(dtype=dtype)
    x, was0 = _one_d("cumprod", x)
    d = norm_dim("cumprod", dim, x.ndim)
    out = _CumprodFn.apply(x, d) if _needs_grad(x) else _C._cumulative(x, d, True)
    return out.reshape(()) if was0 else out


def argsort(self, dim=-1, descending=False, stable=False):
    """A stable sort always (stable=False allows any order of ties; this one keeps theirs)."""
    if self.dtype.is_complex:
        _complex.refuse_sort(self)
    x, was0 = _one_d("argsort", self)
    out = _C._argsort(x, norm_dim("argsort", dim, x.ndim), bool(descending))
    return out.reshape(()) if was0 else out


def sort(self, dim=-1, descending=False, stable=False):
    if self.dtype.is_complex:
        _complex.refuse_sort(self)
    x, was0 = _one_d("sort", self)
    d = norm_dim("sort", dim, x.ndim)
    idx = _C._argsort(x, d, bool(descending))
    vals = gather(x, d, idx)
    if was0:
        return _SORT_T(vals.reshape(()), idx.reshape(()))
    return _SORT_T(vals, idx)


def topk(self, k, dim=-1, largest=True, sorted=True):
    if self.dtype.is_complex:
        _complex.refuse_sort(self, "topk")
    x, was0 = _one_d("topk", self)
    d = norm_dim("topk", dim, x.ndim)
    if not 0 <= k <= x.shape[d]:
        raise RuntimeError(f"topk: selected index k ({k}) out of range for dimension {d} of "
                           f"size {x.shape[d]}")
    idx = _C._topk(x, d, k, bool(largest))  # sorted; ties in input order
    vals = Gather.apply(x, d, idx) if _needs_grad(x) else _C._gather(x, d, idx)
    if was0:
        return _TOPK_T(vals.reshape(()), idx.reshape(()))
    return _TOPK_T(vals, idx)


def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements, in ascending order (always sorted, as PyTorch's CPU), from one
    stable sort, a changed-from-previous mask and a cumulative sum; dim= is not taken."""
    if dim is not None:
        raise NotImplementedError("unique(dim=...) is not supported by pygpu; flatten first")
    flat = self.reshape(-1)
    n = flat.shape[0]
    order = _C._argsort(flat, 0, False)
    s = _C._gather(flat, 0, order)
    from .create import ones
    change = ones((n,), dtype="bool", device=self.device)
    if n > 1:
        change[1:] = s[1:] != s[:-1]
    values = _getitem_mask(s, change)
    out = [values]
    if return_inverse:
        group = _C._cumulative(change, 0, False) - 1  # int64: each sorted element's group
        inv = _zeros((n,), group)
        _C._scatter("SCATTER", inv, 0, order, group)
        out.append(inv.reshape(self.shape))
    if return_counts:
        starts = _flat_positions(change)
        from .create import full
        bounds = cat([starts, full((1,), n, dtype="int64", device=self.device)], 0)
        ends = bounds[1:] - bounds[:-1]
        out.append(ends)
    return out[0] if len(out) == 1 else tuple(out)


# ---- indexing with tensors, lists and masks -----------------------------------------------

def _as_index(k, device):
    if isinstance(k, (list, range)) or (not isinstance(k, Tensor) and hasattr(k, "__array__")):
        from .create import tensor
        import numpy as np
        if not isinstance(k, list):
            k = np.asarray(k)
            k = k.astype(np.int64) if k.dtype.kind in "iu" else k
        k = tensor(k, device=device)
        if k.dtype.name not in ("bool", "int64"):
            raise IndexError(f"tensors used as indices must be long, int or bool tensors; the "
                             f"list gave {k.dtype.name}")
    elif isinstance(k, bool):
        raise IndexError("pygpu does not index with a Python bool (t[True]); use a bool tensor")
    if k.device != device:
        raise IndexError(f"indices are on {k.device}, the tensor on {device}; move them with "
                         f".to({str(device)!r})")
    if k.dtype.name == "int32":  # PyTorch takes int indices as long ones
        return k.long()
    if k.dtype.name == "uint8":  # PyTorch's deprecated byte mask
        import warnings
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                      "torch.bool instead.", UserWarning, stacklevel=3)
        return k != 0
    if k.dtype.name not in ("bool", "int64"):
        raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got "
                         f"{k.dtype.name}")
    return k


def _sequence_is_tuple(key):
    """PyTorch's (and old NumPy's) rule for a list key: t[[0, 1], [2, 0]] (a list holding a
    list, a slice, None, ... or a tensor) indexes as the tuple t[[0, 1], [2, 0]] would; a
    list of ints (t[[0, 2]]) is one index. torch 2.13 still does this, with a warning that it
    will change."""
    if not isinstance(key, list) or len(key) >= 32:
        return False
    for k in key:
        if isinstance(k, (Tensor, list, tuple, range, slice)) or k is None or k is Ellipsis:
            return True
        if hasattr(k, "__array__") and getattr(k, "ndim", 0) > 0:
            return True
    return False


def _check_host_index(values, size, dim):
    """A list's indices are known on the host: check them at the call, on every device,
    with PyTorch's words. (An index tensor is checked where it runs: on an asynchronous
    device the error comes at the next wait, as AsyncOpError.)"""
    import numpy as np
    bad = values[(values >= size) | (values < -size)]
    if bad.size:
        raise IndexError(f"index {int(bad.flat[0])} is out of bounds for dimension {dim} with "
                         f"size {size}")


def _split_key(self, key):
    """(basic key with ':' in place of each advanced entry, [(axis in the view, index)]),
    where a bool mask of k dims becomes k int indices over those axes."""
    import numpy as np
    if _sequence_is_tuple(key):
        key = tuple(key)
    items = key if isinstance(key, tuple) else (key,)
    items = tuple(list(k) if isinstance(k, tuple) else k for k in items)

    def advanced(k):
        return isinstance(k, (Tensor, list, bool, range)) or (
            hasattr(k, "__array__") and getattr(k, "ndim", 0) > 0)
    # an index's values when they are on the host (a list, range or NumPy array), kept for
    # the bounds check below
    hosts = [np.asarray(k) if advanced(k) and not isinstance(k, (Tensor, bool)) else None
             for k in items]
    items = tuple(_as_index(k, self.device) if advanced(k) else k
                  for k in items)
    consumed = sum(k.ndim if isinstance(k, Tensor) and k.dtype.name == "bool" else 1
                   for k in items if k is not None and k is not Ellipsis)
    basic, adv, axis, self_axis = [], [], 0, 0
    for k, host in zip(items, hosts):
        if isinstance(k, Tensor) and k.dtype.name == "bool":
            want = tuple(self.shape[self_axis:self_axis + k.ndim])
            if k.ndim == 0 or tuple(k.shape) != want:
                raise IndexError(f"The shape of the mask {list(k.shape)} does not match the "
                                 f"shape of the indexed tensor {list(self.shape)} at its "
                                 f"dimensions {self_axis}..{self_axis + max(k.ndim, 1) - 1}")
            for c in nonzero(k, as_tuple=True):
                basic.append(slice(None))
                adv.append((axis, c))
                axis += 1
            self_axis += k.ndim
        elif isinstance(k, Tensor):
            if host is not None and self_axis < self.ndim:
                _check_host_index(host, self.shape[self_axis], axis)
            basic.append(slice(None))
            adv.append((axis, k))
            axis += 1
            self_axis += 1
        elif k is Ellipsis:
            basic.append(k)
            axis += self.ndim - consumed
            self_axis += self.ndim - consumed
        elif k is None:
            basic.append(k)
            axis += 1
        elif isinstance(k, slice):
            basic.append(k)
            axis += 1
            self_axis += 1
        else:  # an int: the axis goes away
            basic.append(k)
            self_axis += 1
    return tuple(basic), adv


def _linear_index(view, adv):
    """One int64 index over the merged advanced axes (they must be side by side)."""
    axes = [a for a, _ in adv]
    if axes != list(range(axes[0], axes[0] + len(axes))):
        raise IndexError("pygpu indexes with several index tensors only when they are side by "
                         "side (t[:, i, j]); separate them with a slice by indexing twice")
    lin = None
    for a, k in adv:
        n = view.shape[a]
        k = k + (k < 0).astype(k.dtype) * n  # negative indices count from the end
        lin = k if lin is None else lin * n + k
    return axes[0], len(axes), lin


def _getitem_mask(self, mask):
    """self[mask] for a mask of self's leading shape: (count,) + trailing shape."""
    k = mask.ndim
    flat = self.reshape((-1,) + self.shape[k:])
    return index_select(flat, 0, _flat_positions(mask.reshape(-1)))


def getitem(self, key):
    basic, adv = _split_key(self, key)
    view = _c_getitem(self, basic) if basic else self
    if not adv:
        return view
    p, m, lin = _linear_index(view, adv)
    shape = view.shape
    merged = view.reshape(shape[:p] + (-1,) + shape[p + m:])
    out = index_select(merged, p, lin.reshape(-1))
    return out.reshape(shape[:p] + tuple(lin.shape) + shape[p + m:])


def setitem(self, key, value):
    items = key if isinstance(key, tuple) else (key,)
    if (len(items) == 1 and isinstance(items[0], Tensor) and items[0].dtype.name == "bool"
            and not isinstance(value, Tensor)):
        m = items[0]
        if tuple(m.shape) != tuple(self.shape[:m.ndim]):
            raise IndexError(f"The shape of the mask {list(m.shape)} does not match the shape of "
                             f"the indexed tensor {list(self.shape)}")
        _masked_fill_raw(self, m.reshape(tuple(m.shape) + (1,) * (self.ndim - m.ndim)), value)
        return
    basic, adv = _split_key(self, key)
    view = _c_getitem(self, basic) if basic else self
    p, m, lin = _linear_index(view, adv)
    shape = view.shape
    target_shape = shape[:p] + tuple(lin.shape) + shape[p + m:]
    merged_shape = shape[:p] + (-1,) + shape[p + m:]
    lin = lin.reshape(-1)
    if isinstance(value, Tensor):
        src = value.to(dtype=self.dtype) if value.dtype != self.dtype else value
        if src.device != self.device:
            raise RuntimeError(f"index assignment: the value is on {src.device}, the tensor on "
                               f"{self.device}")
        src = src.expand(target_shape).reshape(shape[:p] + (lin.shape[0],) + shape[p + m:])
    else:
        from .create import full
        src = full(shape[:p] + (lin.shape[0],) + shape[p + m:], value, dtype=self.dtype,
                   device=self.device)
    try:
        merged = view.view(merged_shape)  # writes land in self's memory
    except RuntimeError:
        merged = None
    if merged is not None:
        _index_copy_raw(merged, p, lin, src.contiguous())
        return
    # a layout no view reaches: copy, write, copy back
    tmp = view.reshape(merged_shape).contiguous()
    _index_copy_raw(tmp, p, lin, src.contiguous())
    _c_setitem(view, Ellipsis, tmp.reshape(shape))


def _index_copy_raw(target, dim, index, src):
    """One INDEX_COPY node into target (a complex one through its real pairs: the node
    moves whole elements, so a pair moves as two)."""
    if target.dtype.is_complex:
        target, src = _C._view_as_real(target), _C._view_as_real(src)
    _C._scatter("INDEX_COPY", target, dim, index, src)


# ---- index_put and masked_scatter ----------------------------------------------------------

def index_put_(self, indices, values, accumulate=False):
    """self[indices] = values (accumulate=True: +=, with repeated indices adding up), indices
    a tuple of index tensors (long or bool) as PyTorch's."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put_(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    key = tuple(indices)
    if _needs_grad(self, values):
        return _writes.index_put_(self, key, values, accumulate,
                                  lambda: _index_put_raw(self, key, values, accumulate))
    _index_put_raw(self, key, values, accumulate)
    return self


def _index_put_raw(self, key, values, accumulate):
    if not accumulate:
        _c_setitem(self, key, values)
        return
    basic, adv = _split_key(self, key)
    view = _c_getitem(self, basic) if basic else self
    p, m, lin = _linear_index(view, adv)
    shape = view.shape
    target = shape[:p] + tuple(lin.shape) + shape[p + m:]
    src = values if isinstance(values, Tensor) else _full_like_shape(target, values, self)
    src = src.to(dtype=self.dtype) if src.dtype != self.dtype else src
    src = src.expand(target).reshape(shape[:p] + (-1,) + shape[p + m:]).contiguous()
    merged = view.reshape(shape[:p] + (-1,) + shape[p + m:])
    if not _C._same_storage(merged, self):
        raise RuntimeError("index_put_(accumulate=True): pygpu needs a target whose indexed "
                           "axes can be viewed as one (make it contiguous first)")
    _C._scatter("INDEX_ADD", merged, p, lin.reshape(-1), src)


def _full_like_shape(shape, value, like):
    from .create import full
    return full(shape, value, dtype=like.dtype, device=like.device)


def index_put(self, indices, values, accumulate=False):
    return index_put_(self.clone(), indices, values, accumulate)


def masked_scatter_(self, mask, source):
    """The elements of self where mask (broadcast to self's shape) is True, in order, set to
    source's first elements."""
    if not isinstance(mask, Tensor) or mask.dtype.name != "bool":
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {getattr(mask, 'dtype', type(mask).__name__)}")
    m = mask if tuple(mask.shape) == tuple(self.shape) else mask.expand(self.shape)
    if source.dtype != self.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but "
                           f"got {self.dtype} and {source.dtype}")

    def raw():
        n = _count(m)
        if n > source.numel():
            raise RuntimeError("masked_scatter_: expected source to have at least as many "
                               f"elements as ones in mask ({n}), got {source.numel()}")
        if n:
            _c_setitem(self, m, source.reshape(-1)[:n])
    if _needs_grad(self, source):
        return _writes.masked_scatter_(self, m, source, raw)
    raw()
    return self


def masked_scatter(self, mask, source):
    return masked_scatter_(self.clone(), mask, source)


METHODS = {
    "index_put_": index_put_, "index_put": index_put, "masked_scatter_": masked_scatter_,
    "masked_scatter": masked_scatter,
    "gather": gather, "scatter_": scatter_, "scatter": scatter, "scatter_add_": scatter_add_,
    "scatter_add": scatter_add, "index_select": index_select, "index_add_": index_add_,
    "index_add": index_add, "index_copy_": index_copy_, "index_copy": index_copy,
    "masked_fill_": masked_fill_, "masked_fill": masked_fill, "masked_select": masked_select,
    "nonzero": nonzero, "cumsum": cumsum, "cumprod": cumprod, "argsort": argsort, "sort": sort,
    "topk": topk, "unique": unique,
}
