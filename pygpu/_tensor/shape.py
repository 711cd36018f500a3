"""Shape and matrix functions with PyTorch's signatures, composed of pygpu's views and ops
(so autograd differentiates them through the rules of their parts, or through the view
recorder of _tensor/views.py): diagonal (a view), diag, diag_embed, tril, triu, trace,
roll, rot90, repeat_interleave, kron, cross, cov, corrcoef, histc, bincount,
searchsorted, bucketize, tensor_split, broadcast_to, tril_indices, triu_indices,
block_diag, cartesian_prod.

Costs: tril/triu are one comparison of two aranges and a where; searchsorted and
bucketize compare every value with every boundary (O(n m) memory, one reduction), fine
for the sizes programs bucket by; bincount and histc read the largest index (or the range)
back to size their result, as PyTorch's do, then scatter-add on the device."""
from .. import _C
from .views import _strided, norm_dim, record
from .join import cat

Tensor = _C.Tensor


def _arange(n, like):
    from .create import arange
    return arange(n, device=like.device)


def _zeros(shape, like, dtype=None):
    from .create import zeros
    return zeros(tuple(shape), dtype=dtype or like.dtype, device=like.device)


# ---- diagonals and triangles -----------------------------------------------------------------

def _diag_layout(x, offset, d1, d2):
    shape, strides = list(x.shape), list(x.strides)
    off = _C._storage_offset(x)
    n1, n2 = shape[d1], shape[d2]
    if offset >= 0:
        n = max(0, min(n1, n2 - offset))
        if n:
            off += offset * strides[d2]
    else:
        n = max(0, min(n1 + offset, n2))
        if n:
            off -= offset * strides[d1]
    st = strides[d1] + strides[d2]
    keep = [i for i in range(x.ndim) if i not in (d1, d2)]
    return [shape[i] for i in keep] + [n], [strides[i] for i in keep] + [st], off


def diagonal(self, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes as a view (the last axis of the result)."""
    d1, d2 = norm_dim("diagonal", dim1, self.ndim), norm_dim("diagonal", dim2, self.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    shape = tuple(self.shape)

    def make(x):
        return _strided(x, *_diag_layout(x, offset, d1, d2))

    def back(g):
        z = _zeros(shape, g)
        _strided(z, *_diag_layout(z, offset, d1, d2)).copy_(g)
        return z
    return record("Diagonal", self, make, back)


def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """A tensor whose (dim1, dim2) planes have the last axis of self on their diagonal."""
    n = self.shape[-1] + abs(offset) if self.ndim else 1 + abs(offset)
    nd = self.ndim + 1
    d1, d2 = dim1 % nd, dim2 % nd
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    shape = list(self.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    return _EmbedFn.apply(self, tuple(shape), offset, d1, d2)


def _make_embed_fn():
    from ..autograd.function import Function

    class DiagEmbed(Function):
        @staticmethod
        def forward(ctx, x, shape, offset, d1, d2):
            ctx.args = (offset, d1, d2)
            z = _zeros(shape, x)
            _strided(z, *_diag_layout(z, offset, d1, d2)).copy_(x)
            return z

        @staticmethod
        def backward(ctx, g):
            offset, d1, d2 = ctx.args
            return diagonal(g, offset, d1, d2).contiguous(), None, None, None, None
    return DiagEmbed


_EmbedFn = _make_embed_fn()


def diag(self, diagonal=0):
    """1-D: the square matrix with self on a diagonal; 2-D: that diagonal (a copy)."""
    if self.ndim == 1:
        return diag_embed(self, diagonal)
    if self.ndim == 2:
        return globals()["diagonal"](self, diagonal, 0, 1).contiguous()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")


def _tri_mask(self, k, lower):
    r, c = self.shape[-2], self.shape[-1]
    rows = _arange(r, self).reshape(r, 1)
    cols = _arange(c, self).reshape(1, c)
    return (cols - rows <= k) if lower else (cols - rows >= k)


def tril(self, diagonal=0):
    if self.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return _C.where(_tri_mask(self, diagonal, True), self, _zero_of(self))


def triu(self, diagonal=0):
    if self.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return _C.where(_tri_mask(self, diagonal, False), self, _zero_of(self))


def _zero_of(x):
    return False if x.dtype.name == "bool" else (0 if not x.dtype.is_floating_point else 0.0)


def tril_(self, diagonal=0):
    return self.copy_(tril(self, diagonal))


def triu_(self, diagonal=0):
    return self.copy_(triu(self, diagonal))


def trace(self):
    if self.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
    return diagonal(self, 0, 0, 1).sum()


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    return _tri_indices(row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    return _tri_indices(row, col, offset, False, dtype, device)


def _tri_indices(row, col, offset, lower, dtype, device):
    import numpy as np
    from .create import tensor
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return tensor(np.stack([r, c]).astype(np.int64), dtype=dtype or "int64", device=device)


# ---- moving elements -------------------------------------------------------------------------

def roll(self, shifts, dims=None):
    """Elements shifted along dims (wrapping around); with no dims, over the flattened tensor."""
    if dims is None:
        if not isinstance(shifts, int) and len(shifts) != 1:
            raise RuntimeError("roll: shifts must be one number when dims is not given")
        s = shifts if isinstance(shifts, int) else shifts[0]
        return roll(self.reshape(-1), s, 0).reshape(tuple(self.shape))
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    out = self
    for s, d in zip(shifts, dims):
        d = norm_dim("roll", d, self.ndim)
        n = out.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            out = cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], dim=d)
    return out if out is not self else self.clone()


def rot90(self, k=1, dims=(0, 1)):
    d0, d1 = (norm_dim("rot90", d, self.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return self.flip(d1).transpose(d0, d1)
    if k == 2:
        return self.flip((d0, d1))
    if k == 3:
        return self.flip(d0).transpose(d0, d1)
    return self.clone()


def repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along dim) repeated `repeats` times (a number, or one count
    per element: then the counts are read back to size the result, as PyTorch does).
    torch.repeat_interleave(counts) alone gives the indices 0, 0, 1, ... repeated."""
    if repeats is None:  # torch.repeat_interleave(repeats_tensor)
        return repeat_interleave(_arange(self.shape[0], self), self, 0)
    x = self.reshape(-1) if dim is None else self
    d = 0 if dim is None else norm_dim("repeat_interleave", dim, x.ndim)
    if isinstance(repeats, Tensor) and repeats.numel() == 1:
        repeats = int(repeats.item())
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        shape = list(x.shape)
        y = x.unsqueeze(d + 1)
        target = shape[:d + 1] + [repeats] + shape[d + 1:]
        return y.expand(*target).reshape(tuple(shape[:d] + [shape[d] * repeats] + shape[d + 1:]))
    counts = [int(c) for c in repeats.tolist()]
    if len(counts) != x.shape[d]:
        raise RuntimeError("repeats must have the same size as input along dim")
    if any(c < 0 for c in counts):
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    from .create import tensor
    idx = [i for i, c in enumerate(counts) for _ in range(c)]
    return x.index_select(d, tensor(idx, dtype="int64", device=x.device))


def kron(self, other):
    """The Kronecker product: every element of self times all of other, blocks laid out
    as self's elements are."""
    nd = max(self.ndim, other.ndim)
    a = self.reshape((1,) * (nd - self.ndim) + tuple(self.shape))
    b = other.reshape((1,) * (nd - other.ndim) + tuple(other.shape))
    ia, ib = [], []
    for i in range(nd):
        ia += [a.shape[i], 1]
        ib += [1, b.shape[i]]
    prod = a.reshape(tuple(ia)) * b.reshape(tuple(ib))
    return prod.reshape(tuple(a.shape[i] * b.shape[i] for i in range(nd)))


def cross(self, other, dim=None):
    """The cross product of 3-vectors along dim (the first axis of size 3 when dim is
    None, as torch.cross; torch.linalg.cross defaults to the last)."""
    from .join import stack
    if dim is None:
        dim = next((i for i, n in enumerate(self.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    shape = _broadcast(self.shape, other.shape)
    a, b = self.expand(*shape), other.expand(*shape)
    d = norm_dim("cross", dim, len(shape))
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{self.shape[d] if d < self.ndim else '?'} and "
                           f"{other.shape[d] if d < other.ndim else '?'}")
    a0, a1, a2 = (a.select(d, i) for i in range(3))
    b0, b1, b2 = (b.select(d, i) for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim=d)


def _broadcast(s1, s2):
    s1, s2 = tuple(s1), tuple(s2)
    n = max(len(s1), len(s2))
    s1, s2 = (1,) * (n - len(s1)) + s1, (1,) * (n - len(s2)) + s2
    return tuple(max(a, b) if a and b else 0 for a, b in zip(s1, s2))


def broadcast_to(self, size):
    return self.expand(*size)


def tensor_split(self, indices_or_sections, dim=0):
    """Pieces along dim: n sections (the first size % n one longer), or cut at indices."""
    d = norm_dim("tensor_split", dim, self.ndim)
    n = self.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        cuts, at = [], 0
        for s in sizes[:-1]:
            at += s
            cuts.append(at)
    else:
        cuts = list(indices_or_sections)
    out, start = [], 0
    for c in cuts + [n]:
        c = max(min(c if c >= 0 else c + n, n), 0)
        stop = max(c, start)
        out.append(self.narrow(d, start, stop - start))
        start = stop
    return tuple(out)


# ---- statistics and counting -----------------------------------------------------------------

def cov(self, *, correction=1, fweights=None, aweights=None):
    """The covariance of the rows (variables) over the columns (observations)."""
    x = self if self.ndim == 2 else self.reshape(1, -1)
    if not x.dtype.is_floating_point:
        x = x.to("float32")
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights
    if w is None:
        mean = x.mean(1, keepdim=True)
        total = float(n)
        norm = total - correction
    else:
        total = w.sum()
        mean = (x * w).sum(1, keepdim=True) / total
        if correction == 0:
            norm = total
        elif aweights is None:
            norm = total - correction
        else:
            norm = total - correction * (w * aweights.to(x.dtype)).sum() / total
    xc = x - mean
    xw = xc if w is None else xc * w
    c = (xw @ xc.transpose(0, 1)) / (_C.maximum(norm, 0.0) if isinstance(norm, Tensor)
                                      else max(norm, 0.0))
    return c.reshape(()) if self.ndim < 2 else c


def corrcoef(self):
    c = cov(self)
    if c.ndim == 0:
        return c / c
    d = diagonal(c, 0, 0, 1)
    std = d.sqrt()
    r = c / std.unsqueeze(1) / std.unsqueeze(0)
    return r.clamp(-1, 1)


def bincount(self, weights=None, minlength=0):
    """Counts of each value of a 1-D int64 tensor of non-negative values (the largest
    value is read back to size the result)."""
    if self.ndim != 1 or self.dtype.is_floating_point or self.dtype.name == "bool":
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if self.numel() and int(self.min().item()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    size = max(int(self.max().item()) + 1 if self.numel() else 0, int(minlength))
    if weights is None:
        out = _zeros((size,), self, "int64")
        from .create import ones_like
        src = ones_like(self)
    else:
        out = _zeros((size,), self, weights.dtype if weights.dtype.is_floating_point else "float64")
        src = weights.to(out.dtype)
    return out.index_add_(0, self, src)


def histc(self, bins=100, min=0, max=0):  # noqa: A002 - PyTorch's names
    """A histogram of `bins` equal bins over [min, max] (the data's range when both are
    0); values outside are ignored, max itself falls in the last bin."""
    lo, hi = float(min), float(max)
    if lo == hi == 0.0 and self.numel():
        lo, hi = float(self.min().item()), float(self.max().item())
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = self.reshape(-1).to(self.dtype if self.dtype.is_floating_point else "float32")
    inside = (x >= lo) & (x <= hi)
    idx = _C.floor((x - lo) * (bins / (hi - lo))).to("int64").clamp(0, bins - 1)
    counts = _zeros((bins,), x, x.dtype)
    return counts.index_add_(0, idx, inside.to(x.dtype))


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Where each value would go in the sorted last axis of sorted_sequence: the count of
    elements below it (right=False) or at most it (right=True)."""
    if side is not None:
        right = side == "right"
    seq = sorted_sequence
    if sorter is not None:
        seq = seq.gather(-1, sorter)
    scalar = not isinstance(input, Tensor)
    if scalar:
        from .create import tensor
        input = tensor([input], dtype=seq.dtype, device=seq.device)
    if seq.ndim == 1:
        cmp = (seq <= input.unsqueeze(-1)) if right else (seq < input.unsqueeze(-1))
    else:
        cmp = (seq.unsqueeze(-2) <= input.unsqueeze(-1)) if right else \
            (seq.unsqueeze(-2) < input.unsqueeze(-1))
    r = cmp.to("int64").sum(-1)
    if out_int32:
        r = r.to("int32")
    return r.reshape(()) if scalar else r


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value: searchsorted(boundaries, input, right=right)."""
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def block_diag(*tensors):
    mats = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    rows = sum(m.shape[0] for m in mats)
    cols = sum(m.shape[1] for m in mats)
    parts, c0 = [], 0
    for m in mats:
        left = _zeros((m.shape[0], c0), m)
        right = _zeros((m.shape[0], cols - c0 - m.shape[1]), m)
        parts.append(cat([left, m, right], dim=1))
        c0 += m.shape[1]
    return cat(parts, dim=0) if parts else _zeros((rows, cols), tensors[0])


def cartesian_prod(*tensors):
    from .join import stack
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], dim=1)


def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = [t.numel() for t in tensors]
    if indexing == "xy" and len(tensors) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, t in enumerate(tensors):
        axis = i
        if indexing == "xy" and len(tensors) >= 2 and i < 2:
            axis = 1 - i
        view = [1] * len(tensors)
        view[axis] = t.numel()
        out.append(t.reshape(tuple(view)).expand(*shape))
    return tuple(out)


METHODS = {
    "diagonal": diagonal, "diag": diag, "diag_embed": diag_embed, "tril": tril, "triu": triu,
    "tril_": tril_, "triu_": triu_, "trace": trace, "roll": roll, "rot90": rot90,
    "repeat_interleave": repeat_interleave, "kron": kron, "cross": cross,
    "broadcast_to": broadcast_to, "tensor_split": tensor_split, "cov": cov,
    "corrcoef": corrcoef, "bincount": bincount, "histc": histc,
}
# module functions of the same names (first argument the tensor)
AS_FUNCTIONS = ("diagonal", "diag", "diag_embed", "tril", "triu", "trace", "roll", "rot90",
                "repeat_interleave", "kron", "cross", "broadcast_to", "tensor_split", "cov",
                "corrcoef", "bincount", "histc")
FUNCTIONS = {"searchsorted": searchsorted, "bucketize": bucketize,
             "tril_indices": tril_indices, "triu_indices": triu_indices,
             "block_diag": block_diag, "cartesian_prod": cartesian_prod, "meshgrid": meshgrid}
