"""pygpu.sparse._compressed: the compressed sparse layouts as PyTorch has them (sparse_csr,
sparse_csc, sparse_bsr, sparse_bsc), beside pygpu.sparse's COO tensors.

A SparseCompressedTensor holds, as ordinary pygpu tensors on one device:
  compressed_indices (n_compressed + 1,) int64/int32  crow_indices (CSR, BSR), ccol_indices
                                                      (CSC, BSC): where each row's (column's)
                                                      entries start in plain_indices
  plain_indices      (nnz,)                           col_indices / row_indices
  values             (nnz, *dense)  CSR/CSC           one element per entry, or
                     (nnz, R, C, *dense)  BSR/BSC     one R x C block per entry
Like pygpu.sparse.SparseTensor it is a Python class over pygpu tensors, not a pygpu.Tensor;
it has the methods programs call on torch's compressed tensors (crow_indices() ...
values(), to_dense(), to_sparse*, t(), +, * a number, @ a dense matrix, to(), _nnz()).
Only two sparse dims: torch's batched compressed tensors (indices with leading batch
dims) are refused by name.

Every operation goes through the entries' (row, column) coordinates, "triplets", computed
on the device: a compressed index expands to one row per entry by repeat_interleave, and
coordinates compress back by bincount + cumsum; conversions sort by a linear position
(argsort, stable). Products: CSR/CSC @ dense is pygpu.sparse's SpMM node chain (a gather
of dense rows, a scale and one index_add_: _SparseMM, differentiable in the dense operand
and in the values), BSR/BSC @ dense is one bmm of the blocks against the gathered dense
row blocks and one index_add_. No host loop over rows, on cpu, sim and cuda alike (no
cuSPARSE: on cuda the same pygpu kernels run, nothing crosses to the host but the sizes
repeat_interleave and nonzero read, which every device counts as a transfer)."""
from .. import _C
from .. import sparse as _coo
from .._tensor import create as _tensor_create
from .._tensor.join import cat

Tensor = _C.Tensor

sparse_csr = _coo._Layout("sparse_csr")
sparse_csc = _coo._Layout("sparse_csc")
sparse_bsr = _coo._Layout("sparse_bsr")
sparse_bsc = _coo._Layout("sparse_bsc")

# per layout: ATen's name, whether rows are compressed, whether entries are blocks, and
# the names of its compressed and plain index accessors
_LAYOUTS = {
    sparse_csr: ("SparseCsr", True, False, "crow_indices", "col_indices"),
    sparse_csc: ("SparseCsc", False, False, "ccol_indices", "row_indices"),
    sparse_bsr: ("SparseBsr", True, True, "crow_indices", "col_indices"),
    sparse_bsc: ("SparseBsc", False, True, "ccol_indices", "row_indices"),
}
_LAYOUT_BY_ROWS = {(True, False): sparse_csr, (False, False): sparse_csc,
                   (True, True): sparse_bsr, (False, True): sparse_bsc}


def _int64(t):
    return t if t.dtype.name == "int64" else t.to("int64")


def _expand(compressed, nnz):
    """(nnz,) the compressed coordinate of each entry: i repeated compressed[i+1]-compressed[i]
    times."""
    if nnz == 0:
        return _tensor_create.zeros((0,), dtype="int64", device=compressed.device)
    n = compressed.shape[0] - 1
    counts = _int64(compressed[1:] - compressed[:-1])
    return _tensor_create.arange(n, device=compressed.device).repeat_interleave(counts)


def _compress(coords, n, dtype="int64"):
    """(n + 1,) the compressed index of sorted coordinates coords (nnz,) in [0, n)."""
    zero = _tensor_create.zeros((1,), dtype="int64", device=coords.device)
    if coords.shape[0] == 0:
        return _tensor_create.zeros((n + 1,), dtype=dtype, device=coords.device)
    counts = coords.bincount(minlength=n)
    return cat([zero, counts.cumsum(0)], 0).to(dtype)


class SparseCompressedTensor(_coo._SparseShape):
    """A CSR, CSC, BSR or BSC tensor: build it with pygpu.sparse_csr_tensor (and its
    siblings) or Tensor.to_sparse_csr() (to_sparse_csc/bsr/bsc)."""
    is_sparse = False

    def __init__(self, compressed, plain, values, size, layout):
        self._compressed, self._plain, self._values_t = compressed, plain, values
        self._size = tuple(int(n) for n in size)
        self.layout = layout

    # ---- what it is ---------------------------------------------------------------------
    @property
    def is_sparse_csr(self):
        return self.layout is sparse_csr

    @property
    def requires_grad(self):
        return self._values_t.requires_grad

    def requires_grad_(self, flag=True):
        """The values become the leaf: gradients arrive at them (grad holds them in this
        tensor's layout; torch's own leaf gets a strided gradient, equal at the entries)."""
        self._values_t.requires_grad_(flag)
        return self

    @property
    def grad(self):
        g = self._values_t.grad
        return None if g is None else self._with_values(g)

    def sparse_dim(self):
        return 2

    def dense_dim(self):
        return self._values_t.ndim - (3 if self._blocked else 1)

    def _nnz(self):
        return self._plain.shape[0]

    def numel(self):
        n = 1
        for s in self._size:
            n *= s
        return n

    @property
    def _rows_compressed(self):
        return _LAYOUTS[self.layout][1]

    @property
    def _blocked(self):
        return _LAYOUTS[self.layout][2]

    def _blocksize(self):
        return tuple(self._values_t.shape[1:3]) if self._blocked else (1, 1)

    def _with_values(self, values):
        return SparseCompressedTensor(self._compressed, self._plain, values, self._size,
                                      self.layout)

    # ---- the index accessors (torch's names, each for its layouts) ----------------------
    def _index(self, name, rows_compressed, compressed):
        if self._rows_compressed != rows_compressed:
            kind = "row" if rows_compressed else "column"
            raise RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but "
                               f"got {_LAYOUTS[self.layout][0]}")
        return self._compressed if compressed else self._plain

    def crow_indices(self):
        return self._index("crow_indices", True, True)

    def col_indices(self):
        return self._index("col_indices", True, False)

    def ccol_indices(self):
        return self._index("ccol_indices", False, True)

    def row_indices(self):
        return self._index("row_indices", False, False)

    def values(self):
        return self._values_t

    def indices(self):
        raise RuntimeError(f"indices expected sparse coordinate tensor layout but got "
                           f"{_LAYOUTS[self.layout][0]}")

    def __repr__(self):
        c, p = _LAYOUTS[self.layout][3:]
        return (f"tensor({c}={self._compressed!r},\n       {p}={self._plain!r},\n"
                f"       values={self._values_t!r}, size={self._size}, nnz={self._nnz()},\n"
                f"       layout={self.layout!r})")

    def __len__(self):
        return self._size[0]

    # ---- coordinates --------------------------------------------------------------------
    def _entry_coords(self):
        """(rows, cols) (nnz,) int64 each: the entries' (block) row and column."""
        major = _expand(self._compressed, self._nnz())
        minor = _int64(self._plain)
        return (major, minor) if self._rows_compressed else (minor, major)

    def _grid(self):
        """The (block) grid's (rows, cols)."""
        r, c = self._blocksize()
        return self._size[0] // r, self._size[1] // c

    # ---- conversions --------------------------------------------------------------------
    def to_dense(self, dtype=None, *, masked_grad=None):
        rows, cols = self._entry_coords()
        nr, nc = self._grid()
        dense = tuple(self._values_t.shape[1:])  # (R, C, *d) blocked, (*d) otherwise
        flat = _coo._IndexAdd.apply(self._values_t, rows * nc + cols, (nr * nc,) + dense)
        if self._blocked:
            r, c = self._blocksize()
            rest = dense[2:]
            flat = flat.reshape((nr, nc, r, c) + rest)
            perm = (0, 2, 1, 3) + tuple(range(4, 4 + len(rest)))
            out = flat.permute(perm).reshape(self._size)
        else:
            out = flat.reshape(self._size)
        return out if dtype is None else out.to(dtype)

    def _element_triplets(self):
        """(rows, cols, values (nnz_elements, *dense)) of every element the entries hold (a
        block's every element, zeros included, as torch's conversions keep them)."""
        rows, cols = self._entry_coords()
        if not self._blocked:
            return rows, cols, self._values_t
        r, c = self._blocksize()
        dev = rows.device
        ir = _tensor_create.arange(r, device=dev).reshape(1, r, 1)
        ic = _tensor_create.arange(c, device=dev).reshape(1, 1, c)
        er = (rows.reshape(-1, 1, 1) * r + ir).expand(rows.shape[0], r, c).reshape(-1)
        ec = (cols.reshape(-1, 1, 1) * c + ic).expand(rows.shape[0], r, c).reshape(-1)
        vals = self._values_t.reshape((-1,) + tuple(self._values_t.shape[3:]))
        return er, ec, vals

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """To COO (the default) or another compressed layout."""
        if layout not in (None, _coo.sparse_coo):
            return self._to_layout(layout, blocksize, "to_sparse")
        if sparse_dim not in (None, 2):
            raise RuntimeError(f"sparse_compressed_to_sparse: sparse_dim argument must be 2 "
                               f"for a compressed tensor, got {sparse_dim}")
        rows, cols, vals = self._element_triplets()
        order = (rows * self._size[1] + cols).argsort(stable=True)
        idx = cat([rows.index_select(0, order).unsqueeze(0),
                   cols.index_select(0, order).unsqueeze(0)], 0)
        return _coo.SparseTensor(idx, vals.index_select(0, order), self._size, True)

    def _to_layout(self, layout, blocksize, fn):
        if layout not in _LAYOUTS:
            raise RuntimeError(f"{fn}: unsupported layout {layout}")
        name, rows_compressed, blocked = _LAYOUTS[layout][:3]
        if layout is self.layout and (blocksize is None or tuple(blocksize) == self._blocksize()):
            return self
        if not blocked and self._blocked:
            raise RuntimeError(f"sparse_compressed_to_{name[6:].lower()}: expected SparseCsr "
                               f"or SparseCsc layout but got {_LAYOUTS[self.layout][0]}")
        if blocked:
            if blocksize is None:
                if self._blocked:
                    blocksize = self._blocksize()
                else:
                    raise RuntimeError(f"to_sparse_{name[6:].lower()}: blocksize is required")
            if self._blocked and tuple(blocksize) != self._blocksize():
                return self.to_dense().to_sparse(layout=layout, blocksize=blocksize)
        rows, cols, vals = self._element_triplets()
        return _from_triplets(rows, cols, vals, self._size, layout, blocksize,
                              self._compressed.dtype)

    def to_sparse_csr(self, dense_dim=None):
        return self._to_layout(sparse_csr, None, "to_sparse_csr")

    def to_sparse_csc(self, dense_dim=None):
        return self._to_layout(sparse_csc, None, "to_sparse_csc")

    def to_sparse_bsr(self, blocksize, dense_dim=None):
        return self._to_layout(sparse_bsr, blocksize, "to_sparse_bsr")

    def to_sparse_bsc(self, blocksize, dense_dim=None):
        return self._to_layout(sparse_bsc, blocksize, "to_sparse_bsc")

    def to(self, *args, **kwargs):
        values = self._values_t.to(*args, **kwargs)
        dev = values.device
        return SparseCompressedTensor(self._compressed.to(dev), self._plain.to(dev), values,
                                      self._size, self.layout)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def detach(self):
        return self._with_values(self._values_t.detach())

    def clone(self):
        return SparseCompressedTensor(self._compressed.clone(), self._plain.clone(),
                                      self._values_t.clone(), self._size, self.layout)

    def float(self):
        return self.to("float32")

    def double(self):
        return self.to("float64")

    def t(self):
        """The transpose without moving data: CSR <-> CSC, BSR <-> BSC (a block's own
        transpose in the values)."""
        if self.dense_dim():
            raise RuntimeError("t() expects a tensor with <= 2 dimensions")
        values = self._values_t.transpose(1, 2) if self._blocked else self._values_t
        layout = _LAYOUT_BY_ROWS[(not self._rows_compressed, self._blocked)]
        return SparseCompressedTensor(self._compressed, self._plain, values,
                                      (self._size[1], self._size[0]), layout)

    def transpose(self, dim0, dim1):
        if sorted((dim0 % self.ndim, dim1 % self.ndim)) == [0, 1]:
            return self.t()
        if dim0 % self.ndim == dim1 % self.ndim:
            return self
        raise RuntimeError("transpose(): a compressed tensor's dense dims stay in place; pygpu "
                           "transposes its two sparse dims only")

    # ---- arithmetic ---------------------------------------------------------------------
    def __mul__(self, other):
        if isinstance(other, (int, float)) or (isinstance(other, Tensor) and other.ndim == 0):
            return self._with_values(self._values_t * other)
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, (int, float)) or (isinstance(other, Tensor) and other.ndim == 0):
            return self._with_values(self._values_t / other)
        return NotImplemented

    def __neg__(self):
        return self._with_values(-self._values_t)

    def add(self, other, *, alpha=1):
        if isinstance(other, SparseCompressedTensor):
            return _add(self, other, alpha)
        if isinstance(other, Tensor):
            return self.to_dense() + (other * alpha if alpha != 1 else other)
        return NotImplemented

    def __add__(self, other):
        return self.add(other)

    __radd__ = __add__

    def __sub__(self, other):
        return self.add(other, alpha=-1)

    def __matmul__(self, other):
        return mm(self, other)

    def __rmatmul__(self, other):
        return mm(other, self)

    def mm(self, other):
        return mm(self, other)

    def matmul(self, other):
        return mm(self, other)


def _from_triplets(rows, cols, vals, size, layout, blocksize, index_dtype="int64"):
    """A compressed tensor of layout from element coordinates rows, cols (nnz,) and values
    (nnz, *dense), each coordinate once (a sum where two meet)."""
    name, rows_compressed, blocked = _LAYOUTS[layout][:3]
    m, n = size[0], size[1]
    r, c = (int(blocksize[0]), int(blocksize[1])) if blocked else (1, 1)
    if blocked and (m % r or n % c):
        raise RuntimeError(f"sparse_compressed_to_{name[6:].lower()}: tensor sparse size "
                           f"({m},{n}) must be divisible by given blocksize ({r},{c})")
    nr, nc = m // r, n // c
    br, bc = (rows // r, cols // c) if blocked else (rows, cols)
    key = br * nc + bc if rows_compressed else bc * nr + br
    dense = tuple(vals.shape[1:])
    if key.shape[0] == 0:
        uniq, inverse = key, key
    else:
        uniq, inverse = key.unique(return_inverse=True)
    major_n, minor_n = (nr, nc) if rows_compressed else (nc, nr)
    major = _C.floor_divide(uniq, minor_n)
    minor = uniq - major * minor_n
    if blocked:
        within = (rows - br * r) * c + (cols - bc * c)
        flat = _coo._IndexAdd.apply(vals, inverse * (r * c) + within,
                                    (uniq.shape[0] * r * c,) + dense)
        values = flat.reshape((uniq.shape[0], r, c) + dense)
    else:
        values = _coo._IndexAdd.apply(vals, inverse, (uniq.shape[0],) + dense)
    return SparseCompressedTensor(_compress(major, major_n, index_dtype), minor.to(index_dtype),
                                  values, size, layout)


def _add(a, b, alpha=1):
    if a.layout is not b.layout:
        raise RuntimeError(f"add: expected both operands in one compressed layout, got "
                           f"{a.layout} and {b.layout}")
    if a.shape != b.shape:
        raise RuntimeError(f"add: expected sizes to match, got {a.shape} and {b.shape}")
    if a._blocksize() != b._blocksize():
        raise RuntimeError(f"add: expected equal blocksizes, got {a._blocksize()} and "
                           f"{b._blocksize()}")
    ra, ca, va = a._element_triplets()
    rb, cb, vb = b._element_triplets()
    vb = vb.to(va.dtype) * alpha if alpha != 1 else vb.to(va.dtype)
    return _from_triplets(cat([ra, rb], 0), cat([ca, cb], 0), cat([va, vb], 0), a.shape,
                          a.layout, a._blocksize(), a._compressed.dtype)


# ---- the products ----------------------------------------------------------------------------

def _check_dense(fn, s, d):
    if d.ndim not in (1, 2) or d.shape[0] != s.shape[1]:
        shape = "x".join(str(n) for n in d.shape)
        raise RuntimeError(f"{fn}: mat1 and mat2 shapes cannot be multiplied "
                           f"({s.shape[0]}x{s.shape[1]} and {shape})")
    if str(d.device) != str(s.device):
        raise _C.DeviceMismatchError(f"{fn}: expected all tensors on the same device, but "
                                     f"found {s.device} and {d.device}")
    if s.dense_dim():
        raise RuntimeError(f"{fn}: a hybrid compressed tensor (dense dims in its values) "
                           f"times a dense one is not supported")


def _spmm(s, d):
    """s (m, k) compressed @ d (k, n) strided -> (m, n)."""
    rows, cols = s._entry_coords()
    if not s._blocked:  # one entry per element: pygpu.sparse's SpMM
        return _coo._SparseMM.apply(s._values_t, d, rows, cols, s.shape[0])
    r, c = s._blocksize()
    nr, nc = s._grid()
    n = d.shape[1]
    gathered = d.reshape(nc, c, n).index_select(0, cols)      # (nnz, C, n)
    prod = s._values_t.to(d.dtype).bmm(gathered)              # (nnz, R, n)
    out = _coo._IndexAdd.apply(prod, rows, (nr, r, n))        # (nr, R, n)
    return out.reshape(nr * r, n)


def mm(mat1, mat2):
    """A compressed (m, k) matrix times a strided (k, n) one (or (k,)), or a strided one
    times a compressed one; differentiable in the strided operand and in the values."""
    if isinstance(mat1, SparseCompressedTensor) and isinstance(mat2, Tensor):
        _check_dense("mm", mat1, mat2)
        vector = mat2.ndim == 1
        out = _spmm(mat1, mat2.reshape(-1, 1) if vector else mat2)
        return out.reshape(-1) if vector else out
    if isinstance(mat1, Tensor) and isinstance(mat2, SparseCompressedTensor):
        if mat1.ndim != 2:
            raise RuntimeError(f"mm: a strided {mat1.ndim}-D tensor times a compressed one")
        return mm(mat2.t(), mat1.transpose(0, 1)).transpose(0, 1)
    if isinstance(mat1, SparseCompressedTensor) and isinstance(mat2, SparseCompressedTensor):
        return mm(mat1, mat2.to_dense()).to_sparse(layout=mat1.layout,
                                                  blocksize=mat1._blocksize()
                                                  if mat1._blocked else None)
    return _C.matmul(mat1, mat2)


_c_matmul = _C.matmul


def matmul(input, other, *args, **kwargs):
    """torch.matmul: pygpu's C matmul, or, when an operand is sparse (COO or compressed),
    the sparse product (torch.matmul takes both)."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _c_matmul(input, other, *args, **kwargs)
    return _coo.mm(input, other)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    out = mm(mat1, mat2)
    dense = input.to_dense() if isinstance(input, SparseCompressedTensor) else input
    if beta == 0:
        return out * alpha
    return dense * beta + out * alpha


# ---- construction, with torch's checks -------------------------------------------------------

def _as_index(x, device):
    if not isinstance(x, Tensor):
        x = _tensor_create.tensor(x, dtype="int64", device=device)
    elif device is not None:
        x = x.to(device)
    return x


def _check_invariants(name, compressed, plain, size, blocksize, rows_compressed):
    """torch's check_invariants=True checks, in torch's words (one read of the indices)."""
    c_name, p_name = ("crow_indices", "col_indices") if rows_compressed else \
        ("ccol_indices", "row_indices")
    major_n = size[0] // blocksize[0] if rows_compressed else size[1] // blocksize[1]
    minor_n = size[1] // blocksize[1] if rows_compressed else size[0] // blocksize[0]
    minor_word = "ncols" if rows_compressed else "nrows"
    major_word = "nrows" if rows_compressed else "ncols"
    comp = _int64(compressed).tolist()
    pl = _int64(plain).tolist()
    nnz = len(pl)
    if comp[0] != 0:
        raise RuntimeError(f"`{c_name}[..., 0] == 0` is not satisfied.")
    if comp[-1] != nnz:
        raise RuntimeError(f"`{c_name}[..., -1] == nnz` is not satisfied.")
    if any(not 0 <= p < minor_n for p in pl):
        raise RuntimeError(f"`0 <= {p_name} < {minor_word}` is not satisfied.")
    for i in range(1, major_n + 1):  # row by row, as ATen's kernel reads them
        if not 0 <= comp[i] - comp[i - 1] <= minor_n:
            raise RuntimeError(f"`0 <= {c_name}[..., 1:] - {c_name}[..., :-1] <= {minor_word}` "
                               f"is not satisfied.")
        seg = pl[comp[i - 1]:comp[i]]
        if any(a >= b for a, b in zip(seg, seg[1:])):
            raise RuntimeError(f"`{p_name}[..., {c_name}[..., i - 1]:{c_name}[..., i]] for all "
                               f"i = 1, ..., {major_word} are sorted and distinct along the "
                               f"last dimension values` is not satisfied.")


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory=False,
                             requires_grad=False, check_invariants=None):
    """torch.sparse_compressed_tensor: a CSR/CSC/BSR/BSC tensor (layout= says which) from
    its compressed indices, plain indices and values; size is inferred when not given."""
    if layout not in _LAYOUTS:
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor "
                           f"layout but got {layout}")
    name, rows_compressed, blocked, c_name, p_name = _LAYOUTS[layout]
    if not isinstance(values, Tensor):
        values = _tensor_create.tensor(values, dtype=dtype, device=device)
    if dtype is not None:
        values = values.to(dtype)
    if device is not None:
        values = values.to(device)
    compressed = _as_index(compressed_indices, values.device)
    plain = _as_index(plain_indices, values.device)
    for t, what in ((compressed, c_name), (plain, p_name)):
        if t.dtype.name not in ("int32", "int64"):
            raise RuntimeError(f"{what} must be an int32 or int64 tensor, but got "
                               f"{t.dtype.name}")
    if compressed.dtype != plain.dtype:
        raise RuntimeError(f"compressed_indices and plain_indices must have the same dtype, "
                           f"bot got {compressed.dtype.name} and {plain.dtype.name}")
    if compressed.ndim != 1 or plain.ndim != 1:
        raise RuntimeError(f"pygpu: batched compressed sparse tensors ({c_name} of "
                           f"{compressed.ndim} dims) are not supported; {c_name} and {p_name} "
                           f"must be 1-D")
    nnz = plain.shape[0]
    base = 3 if blocked else 1
    if values.ndim < base or values.shape[0] != nnz:
        raise RuntimeError(f"values.shape[0] must be equal to the number of specified "
                           f"elements ({nnz}), but got values of shape {tuple(values.shape)}")
    blocksize = tuple(values.shape[1:3]) if blocked else (1, 1)
    dense = tuple(values.shape[base:])
    n_major = compressed.shape[0] - 1
    if size is None:
        n_minor = int(_int64(plain).max().item()) + 1 if nnz else 0
        major, minor = n_major * (blocksize[0] if rows_compressed else blocksize[1]), \
            n_minor * (blocksize[1] if rows_compressed else blocksize[0])
        size = ((major, minor) if rows_compressed else (minor, major)) + dense
    size = tuple(int(n) for n in size)
    if len(size) != 2 + len(dense):
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense "
                           f"dimensionalities (=0 + 2 + {len(dense)}) but got {len(size)}")
    if tuple(size[2:]) != dense:
        raise RuntimeError(f"dense dimensions of the tensor {list(size[2:])} must match the "
                           f"dense dimensions of values {list(dense)}")
    if size[0] % blocksize[0] or size[1] % blocksize[1]:
        raise RuntimeError(f"tensor shape[0] ({size[0]}) and shape[1] ({size[1]}) must be "
                           f"divisible by blocksize ({blocksize[0]}, {blocksize[1]})")
    want = (size[0] // blocksize[0] if rows_compressed else size[1] // blocksize[1]) + 1
    if compressed.shape[0] != want:
        word = "rows" if rows_compressed else "columns"
        raise RuntimeError(f"{c_name}.shape[-1] must be equal to the number of {word} + 1 "
                           f"(={want}), but got {compressed.shape[0]}")
    if check_invariants:
        _check_invariants(name, compressed, plain, size, blocksize, rows_compressed)
    if requires_grad:
        values = values.detach().requires_grad_()
    return SparseCompressedTensor(compressed, plain, values, size, layout)


def _constructor(layout):
    c_name, p_name = _LAYOUTS[layout][3:]

    def make(compressed_indices, plain_indices, values, size=None, *, dtype=None, device=None,
             pin_memory=False, requires_grad=False, check_invariants=None):
        return sparse_compressed_tensor(compressed_indices, plain_indices, values, size,
                                        dtype=dtype, layout=layout, device=device,
                                        requires_grad=requires_grad,
                                        check_invariants=check_invariants)
    make.__name__ = f"{layout.name}_tensor"
    make.__doc__ = (f"torch.{layout.name}_tensor({c_name}, {p_name}, values, size=None, *, "
                    f"dtype=None, device=None, requires_grad=False, check_invariants=None)")
    return make


sparse_csr_tensor = _constructor(sparse_csr)
sparse_csc_tensor = _constructor(sparse_csc)
sparse_bsr_tensor = _constructor(sparse_bsr)
sparse_bsc_tensor = _constructor(sparse_bsc)


# ---- a strided or COO tensor's conversions ----------------------------------------------------

def dense_to_compressed(x, layout, blocksize=None, dense_dim=None, fn="to_sparse"):
    """A strided tensor's nonzeros (nonzero blocks, for BSR/BSC) in layout."""
    name, rows_compressed, blocked = _LAYOUTS[layout][:3]
    dd = 0 if dense_dim is None else int(dense_dim)
    if x.ndim - dd != 2:
        raise RuntimeError(f"{fn}: pygpu converts tensors of two sparse dims (plus dense_dim "
                           f"dense ones), got a {x.ndim}-D tensor with dense_dim={dd}; "
                           f"batched compressed tensors are not supported")
    m, n = x.shape[0], x.shape[1]
    rest = tuple(x.shape[2:])
    if blocked:
        if blocksize is None or len(tuple(blocksize)) != 2:
            raise RuntimeError(f"{fn}: blocksize needs to be a tuple of size 2, but got "
                               f"{blocksize}")
        r, c = int(blocksize[0]), int(blocksize[1])
        if m % r or n % c:
            raise RuntimeError(f"{fn}: tensor sparse size ({m},{n}) must be divisible by given "
                               f"blocksize ({r},{c})")
    else:
        if blocksize is not None:
            raise RuntimeError(f"{fn}: blocksize is given for the unblocked layout {layout}")
        r, c = 1, 1
    nr, nc = m // r, n // c
    blocks = x.reshape((nr, r, nc, c) + rest).permute(
        (0, 2, 1, 3) + tuple(range(4, 4 + len(rest))))            # (nr, nc, R, C, *rest)
    mask = blocks != 0
    for _ in range(2 + len(rest)):
        mask = mask.any(-1)                                       # (nr, nc)
    coords = (mask if rows_compressed else mask.transpose(0, 1)).nonzero()  # sorted (major, minor)
    major, minor = coords[:, 0].contiguous(), coords[:, 1].contiguous()
    br, bc = (major, minor) if rows_compressed else (minor, major)
    flat = blocks.reshape((nr * nc, r, c) + rest)
    values = flat.index_select(0, br * nc + bc)
    if not blocked:
        values = values.reshape((values.shape[0],) + rest)
    major_n = nr if rows_compressed else nc
    return SparseCompressedTensor(_compress(major, major_n), minor, values, tuple(x.shape),
                                  layout)


def coo_to_compressed(s, layout, blocksize=None, fn="to_sparse"):
    """A COO tensor (pygpu.sparse.SparseTensor, two sparse dims) in layout."""
    if s.sparse_dim() != 2:
        raise RuntimeError(f"{fn}: expected a COO tensor of two sparse dims, got "
                           f"{s.sparse_dim()}; batched compressed tensors are not supported")
    c = s.coalesce()
    idx = c._indices_t
    if _LAYOUTS[layout][2] and blocksize is None:
        raise RuntimeError(f"{fn}: blocksize is required for {layout}")
    return _from_triplets(idx[0], idx[1], c._values_t, s.shape, layout, blocksize)


def _tensor_to(layout, fn):
    def convert(self, *args, **kwargs):
        blocked = _LAYOUTS[layout][2]
        blocksize = (args[0] if args else kwargs.get("blocksize")) if blocked else None
        dense_dim = kwargs.get("dense_dim", args[1] if blocked and len(args) > 1 else
                               (args[0] if not blocked and args else None))
        if isinstance(self, _coo.SparseTensor):
            return coo_to_compressed(self, layout, blocksize, fn)
        return dense_to_compressed(self, layout, blocksize, dense_dim, fn)
    convert.__name__ = fn
    convert.__doc__ = (f"Tensor.{fn}(" + ("blocksize, " if _LAYOUTS[layout][2] else "") +
                       f"dense_dim=None): this tensor in the {layout.name} layout")
    return convert


def _copy_of(accessor):
    def copy(input):
        return getattr(input, accessor)().clone()
    copy.__name__ = f"{accessor}_copy"
    copy.__doc__ = f"torch.{accessor}_copy(input): a copy of input.{accessor}()"
    return copy


def _wrong_layout(accessor, rows_compressed):
    def refuse(self):
        kind = "row" if rows_compressed else "column"
        raise RuntimeError(f"{accessor} expected sparse {kind} compressed tensor layout but got "
                           f"Strided")
    refuse.__name__ = accessor
    return refuse


METHODS = {"to_sparse_csr": _tensor_to(sparse_csr, "to_sparse_csr"),
           "to_sparse_csc": _tensor_to(sparse_csc, "to_sparse_csc"),
           "to_sparse_bsr": _tensor_to(sparse_bsr, "to_sparse_bsr"),
           "to_sparse_bsc": _tensor_to(sparse_bsc, "to_sparse_bsc"),
           "crow_indices": _wrong_layout("crow_indices", True),
           "col_indices": _wrong_layout("col_indices", True),
           "ccol_indices": _wrong_layout("ccol_indices", False),
           "row_indices": _wrong_layout("row_indices", False)}

FUNCTIONS = {"sparse_csr": sparse_csr, "sparse_csc": sparse_csc, "sparse_bsr": sparse_bsr,
             "sparse_bsc": sparse_bsc, "sparse_compressed_tensor": sparse_compressed_tensor,
             "matmul": matmul,
             "sparse_csr_tensor": sparse_csr_tensor, "sparse_csc_tensor": sparse_csc_tensor,
             "sparse_bsr_tensor": sparse_bsr_tensor, "sparse_bsc_tensor": sparse_bsc_tensor}
FUNCTIONS.update({f"{a}_copy": _copy_of(a) for a in
                  ("crow_indices", "col_indices", "ccol_indices", "row_indices")})

# pygpu.sparse (COO) reaches the compressed layouts through its registry, not an import
_coo._COMPRESSED.update(layouts={lay.name: lay for lay in _LAYOUTS}, from_dense=dense_to_compressed,
                        from_coo=coo_to_compressed, mm=mm)
