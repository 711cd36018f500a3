"""pygpu.sparse: COO sparse tensors (torch.sparse_coo_tensor's layout) and the products
programs use them for (torch.sparse.mm, torch.spmm: graph convolutions).

A SparseTensor holds `indices` (sparse_dim, nnz) int64 and `values` (nnz, *dense_dims)
as ordinary pygpu tensors on one device; it is not a pygpu.Tensor (that type has no
sparse storage), but it has the methods programs call: indices(), values(), coalesce(),
is_coalesced(), to_dense(), to(), size(), shape, dtype, device, t(), the arithmetic
with numbers and other sparse tensors, and `@` with a dense matrix. Everything runs on
the device of the tensors through index_select / index_add_ (no host loop), so cpu, sim
and cuda all work; no cuSPARSE is used.

Products: sparse.mm(S, D) is out[r] += v * D[c] over the nonzeros (a gather of rows of
D, a scale and a scatter-add), differentiable with respect to D (Sᵀ g, the same kernel)
and to S's values (g[r] . D[c]), as PyTorch's. smm, hspmm and sspaddmm return that
product's rows where S has nonzeros as a COO tensor (2-d, hybrid, and added to another),
with PyTorch's uncoalesced layout; a dense Tensor's sparse_mask(S) takes its values at S's
indices."""
from .. import _C
from .._tensor import create as _tensor_create
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from .._tensor.join import cat

Tensor = _C.Tensor


class _Layout:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


sparse_coo = _Layout("sparse_coo")
strided = _Layout("strided")


def _linear(indices, size):
    """Row-major linear positions (nnz,) of indices (k, nnz) in a tensor of shape size[:k]."""
    k = indices.shape[0]
    lin = None
    for i in range(k):
        row = indices[i]
        lin = row if lin is None else lin * int(size[i]) + row
    if lin is None:
        return _tensor_create.zeros((indices.shape[1],), dtype="int64", device=indices.device)
    return lin


def _unlinear(lin, size, k):
    cols, rest = [], lin
    for i in range(k - 1, -1, -1):
        n = int(size[i])
        q = _C.floor_divide(rest, n)
        cols.append(rest - q * n)
        rest = q
    cols.reverse()
    return cat([c.unsqueeze(0) for c in cols], 0) if cols else \
        _tensor_create.zeros((0, lin.shape[0]), dtype="int64", device=lin.device)


class _SparseShape:
    """What a sparse tensor of any layout says of itself as a tensor does: its size (the
    subclass's _size) and its values' dtype and device (its _values_t)."""

    @property
    def shape(self):
        return self._size

    def size(self, dim=None):
        return self._size if dim is None else self._size[dim]

    def dim(self):
        return len(self._size)

    ndim = property(dim)

    @property
    def dtype(self):
        return self._values_t.dtype

    @property
    def device(self):
        return self._values_t.device

    @property
    def is_cuda(self):
        return self.device.type == "cuda"


class SparseTensor(_SparseShape):
    """A COO sparse tensor; build it with pygpu.sparse_coo_tensor or Tensor.to_sparse()."""
    is_sparse = True
    layout = sparse_coo

    def __init__(self, indices, values, size, coalesced=False):
        self._indices_t, self._values_t = indices, values
        self._size = tuple(int(n) for n in size)
        self._coalesced = bool(coalesced)

    # ---- what it is ---------------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._values_t.requires_grad

    def requires_grad_(self, flag=True):
        self._values_t.requires_grad_(flag)
        return self

    @property
    def grad(self):
        return self._values_t.grad

    def sparse_dim(self):
        return self._indices_t.shape[0]

    def dense_dim(self):
        return self._values_t.ndim - 1

    def _nnz(self):
        return self._indices_t.shape[1]

    def is_coalesced(self):
        return self._coalesced

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._indices_t

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._values_t

    def _indices(self):
        return self._indices_t

    def _values(self):
        return self._values_t

    def __repr__(self):
        return (f"tensor(indices={self._indices_t!r},\n       values={self._values_t!r},\n"
                f"       size={self._size}, nnz={self._nnz()}, layout=torch.sparse_coo)")

    def __len__(self):
        return self._size[0]

    # ---- conversions --------------------------------------------------------------------
    def coalesce(self):
        """Indices sorted (row-major) and unique, the values of duplicates summed."""
        if self._coalesced:
            return self
        k = self.sparse_dim()
        lin = _linear(self._indices_t, self._size)
        if lin.numel() == 0:
            return SparseTensor(self._indices_t, self._values_t, self._size, True)
        uniq, inverse = lin.unique(return_inverse=True)
        shape = (uniq.shape[0],) + tuple(self._values_t.shape[1:])
        vals = _IndexAdd.apply(self._values_t, inverse, shape)
        return SparseTensor(_unlinear(uniq, self._size, k), vals, self._size, True)

    def to_dense(self):
        k = self.sparse_dim()
        dense_shape = self._size[k:]
        rows = 1
        for n in self._size[:k]:
            rows *= n
        lin = _linear(self._indices_t, self._size)
        flat = _IndexAdd.apply(self._values_t, lin, (rows,) + tuple(dense_shape))
        return flat.reshape(self._size)

    def to(self, *args, **kwargs):
        values = self._values_t.to(*args, **kwargs)
        return SparseTensor(self._indices_t.to(values.device), values, self._size,
                            self._coalesced)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def detach(self):
        return SparseTensor(self._indices_t, self._values_t.detach(), self._size, self._coalesced)

    def clone(self):
        return SparseTensor(self._indices_t.clone(), self._values_t.clone(), self._size,
                            self._coalesced)

    def float(self):
        return self.to("float32")

    def double(self):
        return self.to("float64")

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout in (None, sparse_coo):
            return self
        if not _is_compressed_layout(layout):
            raise RuntimeError(f"to_sparse: unsupported layout {layout}")
        return _COMPRESSED["from_coo"](self, layout, blocksize)

    def to_sparse_csr(self, dense_dim=None):
        return self.to_sparse(layout=_compressed_layout("sparse_csr"))

    def to_sparse_csc(self, dense_dim=None):
        return self.to_sparse(layout=_compressed_layout("sparse_csc"))

    def to_sparse_bsr(self, blocksize, dense_dim=None):
        return self.to_sparse(layout=_compressed_layout("sparse_bsr"), blocksize=blocksize)

    def to_sparse_bsc(self, blocksize, dense_dim=None):
        return self.to_sparse(layout=_compressed_layout("sparse_bsc"), blocksize=blocksize)

    def t(self):
        if self.sparse_dim() != 2 or self.dense_dim():
            raise RuntimeError("t() expects a 2-D sparse tensor")
        idx = self._indices_t.flip(0)
        return SparseTensor(idx, self._values_t, (self._size[1], self._size[0]))

    def transpose(self, dim0, dim1):
        if sorted((dim0 % self.ndim, dim1 % self.ndim)) != [0, 1] or self.ndim != 2:
            raise RuntimeError("transpose of a sparse tensor: only its two dimensions")
        return self.t()

    # ---- arithmetic ---------------------------------------------------------------------
    def __mul__(self, other):
        if isinstance(other, (int, float)):
            return SparseTensor(self._indices_t, self._values_t * other, self._size,
                                self._coalesced)
        if isinstance(other, SparseTensor):
            return (self.to_dense() * other.to_dense()).to_sparse()
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, (int, float)):
            return self * (1.0 / other)
        return NotImplemented

    def __neg__(self):
        return self * -1.0

    def __add__(self, other):
        if isinstance(other, SparseTensor):
            if other._size != self._size:
                raise RuntimeError(f"add: expected sizes to match, got {self._size} and "
                                   f"{other._size}")
            idx = cat([self._indices_t, other._indices_t], 1)
            vals = cat([self._values_t, other._values_t.to(self.dtype)], 0)
            return SparseTensor(idx, vals, self._size).coalesce()
        if isinstance(other, Tensor):
            return self.to_dense() + other
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-other)

    def __matmul__(self, other):
        return mm(self, other)

    def __rmatmul__(self, other):
        return mm(other, self)

    def mm(self, other):
        return mm(self, other)

    def matmul(self, other):
        return mm(self, other)

    def sum(self, dim=None):
        return sum(self, dim)


# The compressed layouts (pygpu/sparse/_compressed.py, which imports this module) register
# here at their import: "layouts" {name: layout}, "from_dense", "from_coo" and "mm".
_COMPRESSED = {"layouts": {}}


def _compressed_layout(name):
    return _COMPRESSED["layouts"][name]


def _is_compressed_layout(layout):
    return any(layout is lay for lay in _COMPRESSED["layouts"].values())


def _is_compressed(x):
    return not isinstance(x, (Tensor, SparseTensor)) and _is_compressed_layout(
        getattr(x, "layout", None))


class _IndexAdd(Function):
    """zeros(shape).index_add_(0, index, src), differentiable in src (a gather of g)."""
    @staticmethod
    def forward(ctx, src, index, shape):
        ctx.index = index
        out = _tensor_create.zeros(tuple(shape), dtype=src.dtype, device=src.device)
        return out.index_add_(0, index, src) if index.numel() else out

    @staticmethod
    def backward(ctx, g):
        return g.index_select(0, ctx.index), None, None


def _spmm_values(rows, cols, values, dense, m):
    """out (m, n) with out[r] += v * dense[c] over the nonzeros."""
    out = _tensor_create.zeros((m, dense.shape[1]), dtype=dense.dtype, device=dense.device)
    if rows.numel():
        out.index_add_(0, rows, dense.index_select(0, cols) * values.reshape(-1, 1))
    return out


class _SparseMM(Function):
    @staticmethod
    def forward(ctx, values, dense, rows, cols, m):
        ctx.save(values, dense)
        ctx.rows, ctx.cols = rows, cols
        return _spmm_values(rows, cols, values.to(dense.dtype), dense, m)

    @staticmethod
    def backward(ctx, g):
        values, dense = ctx.saved
        gd = _spmm_values(ctx.cols, ctx.rows, values.to(g.dtype), g, dense.shape[0])
        gv = (g.index_select(0, ctx.rows) * dense.index_select(0, ctx.cols)).sum(1)
        return gv.to(values.dtype), gd, None, None, None


def mm(mat1, mat2):
    """torch.sparse.mm / torch.spmm: a sparse (m, k) matrix times a dense (k, n) one (a
    dense result), or a dense times a sparse one; differentiable in the dense operand and
    in the sparse one's values. A CSR/CSC/BSR/BSC operand: pygpu/sparse/_compressed.py's mm."""
    if _is_compressed(mat1) or _is_compressed(mat2):
        return _COMPRESSED["mm"](mat1, mat2)
    if isinstance(mat1, SparseTensor) and isinstance(mat2, Tensor):
        if mat1.ndim != 2 or mat1.dense_dim():
            raise RuntimeError("sparse.mm: the sparse operand must be a 2-D matrix")
        vector = mat2.ndim == 1
        d = mat2.reshape(-1, 1) if vector else mat2
        if d.ndim != 2 or d.shape[0] != mat1.shape[1]:
            raise RuntimeError(f"sparse.mm: mat1 and mat2 shapes cannot be multiplied "
                               f"({mat1.shape[0]}x{mat1.shape[1]} and {tuple(mat2.shape)})")
        if str(d.device) != str(mat1.device):
            raise _C.DeviceMismatchError(f"sparse.mm: expected all tensors on the same device, "
                                         f"but found {mat1.device} and {d.device}")
        rows, cols = mat1._indices_t[0], mat1._indices_t[1]
        out = _SparseMM.apply(mat1._values_t, d, rows, cols, mat1.shape[0])
        return out.reshape(-1) if vector else out
    if isinstance(mat1, Tensor) and isinstance(mat2, SparseTensor):
        return mm(mat2.t(), mat1.transpose(0, 1)).transpose(0, 1)
    if isinstance(mat1, SparseTensor) and isinstance(mat2, SparseTensor):
        return mm(mat1, mat2.to_dense()).to_sparse()
    return _C.matmul(mat1, mat2)


def addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0):
    out = mm(mat1, mat2)
    dense = input.to_dense() if isinstance(input, SparseTensor) or _is_compressed(input) \
        else input
    return dense * beta + out * alpha


def sum(input, dim=None):  # noqa: A001 - torch.sparse.sum's name
    if dim is None:
        return input._values_t.sum()
    return input.to_dense().sum(dim)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor: a COO tensor of the given (or inferred) size."""
    if not isinstance(indices, Tensor):
        indices = _tensor_create.tensor(indices, dtype="int64", device=device)
    if not isinstance(values, Tensor):
        values = _tensor_create.tensor(values, dtype=dtype, device=device)
    if dtype is not None:
        values = values.to(dtype)
    if device is not None:
        indices, values = indices.to(device), values.to(device)
    if indices.dtype != _tensor_create.tensor([0]).dtype:
        indices = indices.to("int64")
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {tuple(indices.shape)}")
    if values.ndim < 1 or values.shape[0] != indices.shape[1]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: "
                           f"{values.shape[0] if values.ndim else 0}")
    k = indices.shape[0]
    if size is None:
        if indices.shape[1] == 0:
            raise RuntimeError("sparse_coo_tensor: give size= for an empty tensor")
        size = tuple(int(n) + 1 for n in indices.max(1).values.tolist()) + tuple(values.shape[1:])
    size = tuple(int(n) for n in size)
    if len(size) != k + values.ndim - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({k}) + dense_dim "
                           f"({values.ndim - 1}), but got {len(size)}")
    if indices.shape[1]:
        hi = indices.max(1).values.tolist()
        lo = indices.min(1).values.tolist()
        for d in range(k):
            if lo[d] < 0 or hi[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{size[d]} but found index {hi[d] if hi[d] >= size[d] else lo[d]}")
    if requires_grad:
        values = values.detach().requires_grad_()
    return SparseTensor(indices, values, size, bool(is_coalesced))


def _legacy(dtype):
    def make(indices, values, size=None):
        """torch.sparse.FloatTensor(indices, values, size) and its kin: the legacy spellings."""
        return sparse_coo_tensor(indices, values, size, dtype=dtype)
    return make


FloatTensor, DoubleTensor, LongTensor = _legacy("float32"), _legacy("float64"), _legacy("int64")


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """Tensor.to_sparse(): the nonzero elements as a coalesced COO tensor (sparse_dim of
    the leading axes; the rest stay dense in each value)."""
    if layout not in (None, sparse_coo):  # the compressed layouts: pygpu/sparse/_compressed.py
        if not _is_compressed_layout(layout):
            raise RuntimeError(f"to_sparse: unsupported layout {layout}")
        return _COMPRESSED["from_dense"](self, layout, blocksize, dense_dim)
    k = self.ndim if sparse_dim is None else int(sparse_dim)
    lead = self.reshape(tuple(self.shape[:k]) + (-1,)) if k < self.ndim else self
    mask = (lead != 0).any(-1) if k < self.ndim else (self != 0)
    idx = mask.nonzero().transpose(0, 1).contiguous() if k else \
        _tensor_create.zeros((0, 1), dtype="int64", device=self.device)
    lin = _linear(idx, self.shape)
    rows = 1
    for n in self.shape[:k]:
        rows *= n
    flat = self.reshape((rows,) + tuple(self.shape[k:]))
    values = flat.index_select(0, lin)
    return SparseTensor(idx, values, tuple(self.shape), True)


def _is_sparse(self):
    return False


# ---- the products with a sparse result, and a dense tensor's sparse views ------------------

def _check_mm(fn, mat1, mat2):
    if not isinstance(mat1, SparseTensor):
        raise RuntimeError(f"{fn}: expected mat1 to be a sparse COO tensor, got a strided one")
    if not isinstance(mat2, Tensor):
        raise TypeError(f"{fn}: expected mat2 to be a dense Tensor, got {type(mat2).__name__}")
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"{fn}: Argument #2: matrices expected, got {mat1.ndim}D, "
                           f"{mat2.ndim}D tensors")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"{fn}: Argument #3: Expected dim 0 size {mat1.shape[1]}, got "
                           f"{mat2.shape[0]}")


def _rows_product(mat1, mat2):
    """(rows, product rows): the rows of mat1 holding nonzeros (sorted, unique) and those
    rows of mat1 @ mat2 (rows, n)."""
    rows = mat1._indices_t[0].unique()
    return rows, mm(mat1, mat2).index_select(0, rows)


def hspmm(mat1, mat2):
    """torch.hspmm: sparse (m, k) @ dense (k, n) as a hybrid COO tensor (one sparse dim,
    one dense): the rows of mat1 that hold nonzeros, each with its whole product row."""
    _check_mm("hspmm", mat1, mat2)
    rows, prod = _rows_product(mat1, mat2)
    return SparseTensor(rows.reshape(1, -1), prod, (mat1.shape[0], mat2.shape[1]), False)


def _rows_as_coo(rows, prod):
    """The (r, n) rows of a product at row numbers `rows` as 2-d COO indices and values."""
    n = prod.shape[1]
    cols = _tensor_create.arange(n, device=prod.device)
    r = rows.reshape(-1, 1).expand(rows.shape[0], n).reshape(-1)
    c = cols.reshape(1, n).expand(rows.shape[0], n).reshape(-1)
    return cat([r.unsqueeze(0), c.unsqueeze(0)], 0), prod.reshape(-1)


def smm(input, mat2):
    """torch.smm / SparseTensor.smm: sparse (m, k) @ dense (k, n) as a 2-d COO tensor
    holding every column of the rows of input that have nonzeros (uncoalesced, as
    PyTorch's)."""
    _check_mm("smm", input, mat2)
    rows, prod = _rows_product(input, mat2)
    idx, vals = _rows_as_coo(rows, prod)
    return SparseTensor(idx, vals, (input.shape[0], mat2.shape[1]), False)


def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1):
    """torch.sspaddmm: beta * input + alpha * (mat1 @ mat2) as a COO tensor: input's entries,
    then the product's rows where mat1 has nonzeros (uncoalesced, as PyTorch's)."""
    if not isinstance(input, SparseTensor):
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    _check_mm("sspaddmm", mat1, mat2)
    if tuple(input.shape) != (mat1.shape[0], mat2.shape[1]):
        raise RuntimeError(f"sspaddmm: Argument #1: Expected self of size "
                           f"{[mat1.shape[0], mat2.shape[1]]}, got {list(input.shape)}")
    rows, prod = _rows_product(mat1, mat2)
    idx, vals = _rows_as_coo(rows, prod)
    return SparseTensor(cat([input._indices_t, idx], 1),
                        cat([input._values_t * beta, vals * alpha], 0), input.shape, False)


def sparse_mask(self, mask):
    """Tensor.sparse_mask: self's values at mask's coalesced indices, as a coalesced COO
    tensor of self's shape (mask's values are ignored)."""
    if not isinstance(mask, SparseTensor):
        raise RuntimeError("sparse_mask(): mask is expected to be a sparse COO tensor")
    if tuple(mask.shape) != tuple(self.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self.shape)} but mask has size {list(mask.shape)}")
    m = mask.coalesce()
    k = m.sparse_dim()
    rows = 1
    for n in self.shape[:k]:
        rows *= n
    flat = self.reshape((rows,) + tuple(self.shape[k:]))
    values = flat.index_select(0, _linear(m._indices_t, self.shape))
    return SparseTensor(m._indices_t, values, tuple(self.shape), True)


def _dense_sparse_dim(self):
    """A strided tensor's sparse dims: none (PyTorch's answer)."""
    return 0


def _dense_dense_dim(self):
    """A strided tensor's dense dims: all of them (PyTorch's answer)."""
    return self.ndim


SparseTensor.smm = smm
SparseTensor.sspaddmm = lambda self, mat1, mat2, *, beta=1, alpha=1: sspaddmm(
    self, mat1, mat2, beta=beta, alpha=alpha)
SparseTensor.hspmm = hspmm


# c10's words for a layout in "expected ... layout but got X"
_LAYOUT_WORDS = {"strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr",
                 "sparse_csc": "SparseCsc", "sparse_bsr": "SparseBsr", "sparse_bsc": "SparseBsc"}


def _layout_word(t):
    return _LAYOUT_WORDS[getattr(t, "layout", strided).name]


def indices_copy(input):
    """torch.indices_copy(input): functionalization's copy of a COO tensor's indices()
    (a new (sparse_dim, nnz) int64 tensor, not an alias). A coalesced input, as indices()."""
    if not isinstance(input, SparseTensor):
        raise RuntimeError(f"indices expected sparse coordinate tensor layout but got "
                           f"{_layout_word(input)}")
    return input.indices().clone()


def values_copy(input):
    """torch.values_copy(input): a copy of a sparse tensor's values() (COO, coalesced; or
    a compressed layout's)."""
    if getattr(input, "layout", strided) is strided:
        raise RuntimeError(f"values expected sparse tensor layout but got "
                           f"{_layout_word(input)}")
    return input.values().clone()


METHODS = {"to_sparse": to_sparse, "to_sparse_coo": to_sparse, "is_sparse": property(_is_sparse),
           "to_dense": lambda self, dtype=None, masked_grad=None: self if dtype is None else self.to(dtype),
           "sparse_mask": sparse_mask, "sparse_dim": _dense_sparse_dim,
           "dense_dim": _dense_dense_dim}
FUNCTIONS = {"sparse_coo_tensor": sparse_coo_tensor, "spmm": mm, "sparse_coo": sparse_coo,
             "strided": strided, "smm": smm, "hspmm": hspmm, "sspaddmm": sspaddmm,
             # PyTorch's own older names of the same functions
             "dsmm": mm, "hsmm": hspmm, "saddmm": sspaddmm,
             "indices_copy": indices_copy, "values_copy": values_copy}
