"""Tensor views with PyTorch's names: view (of a shape or of a dtype), view_as, permute, transpose(dim0, dim1), t, mT,
unsqueeze, squeeze, flatten, unflatten, expand, expand_as, narrow, split, chunk, unbind,
as_strided, flip-free movedim.

Every view here is zero-copy, as PyTorch's: it computes the new shape, strides and offset
from the input's (a few integers, in Python) and asks the C core for that layout on the
same storage (_C._as_strided, which checks the bounds once); no element is touched and
no byte crosses a link. flatten and reshape copy only where PyTorch's do (a layout that no
strides can describe). When the input requires grad, the view is recorded through an
autograd Function whose backward maps the gradient back to the input's shape. Installed
into the Tensor type by pygpu/_tensor/surface.py."""
from .. import _C, _dtype
from .create import shape_args
from ..autograd._broadcast import unbroadcast
from ..autograd.engine import number_outputs
from ..autograd.function import TRACING, Function
from ..autograd.grad_mode import is_grad_enabled

Tensor = _C.Tensor
_c_transpose = Tensor.transpose  # pygpu's transpose(*axes) (a permutation); recorded in C
_c_reshape = Tensor.reshape


def _axis_error(op, dim, ndim):
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    return _C.AxisError(f"{op}: axis {dim} is out of bounds for array of dimension {ndim} "
                        f"(dimension out of range: expected to be in range of [{lo}, {hi}])")


def norm_dim(op, dim, ndim, extra=0):
    """dim in [-n, n) with n = max(ndim + extra, 1) (PyTorch lets a 0-d tensor use 0/-1)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    n = max(ndim + extra, 1)
    if not -n <= dim < n:
        raise _axis_error(op, dim, ndim + extra)
    return dim + n if dim < 0 else dim


_as_strided = _C._as_strided


def _strided(x, shape, strides, offset):
    return _C._as_strided(x, tuple(shape), tuple(strides), offset)


# ---- autograd: one Function records any view; backward is a function of the gradient ----

def _named(name):
    return type(name, (_ViewFunction,), {})


class _ViewFunction(Function):
    view = True

    @staticmethod
    def forward(ctx, x, make, back):
        ctx.back = back
        return make(x)

    @staticmethod
    def backward(ctx, g):
        return ctx.back(g), None, None


_FNS = {}


def record(name, x, make, back):
    """make(x) as a view; recorded with backward `back` when x requires grad."""
    if not (x.requires_grad and is_grad_enabled()) and not TRACING[0]:
        return make(x)
    fn = _FNS.get(name) or _FNS.setdefault(name, _named(name))
    return fn.apply(x, make, back)


def _back_reshape(shape):
    return lambda g: g.reshape(shape)


# ---- shape-changing views -----------------------------------------------------------------

def _infer(op, shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred (got {tuple(shape)})")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"{op}: invalid shape dimension in {tuple(shape)}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _view_strides(old_shape, old_strides, new_shape):
    """PyTorch's computeStride: strides that give new_shape over the same memory, or None
    when a merged group of axes is not contiguous in memory."""
    numel = 1
    for s in old_shape:
        numel *= s
    if numel == 0 or not old_shape:
        strides, acc = [0] * len(new_shape), 1
        for i in range(len(new_shape) - 1, -1, -1):
            strides[i] = acc
            acc *= max(new_shape[i], 1)
        return strides
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_strides[-1]
    tensor_numel, view_numel = 1, 1
    for d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[d]
        if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = old_strides[d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return new_strides


def _view_args_error(args):
    got = ", ".join(type(a).__name__ for a in args)
    return TypeError(f"view() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n * (torch.dtype dtype)\n * (tuple of ints size)\n")


def view_dtype(self, dtype):
    """view(dtype): the same bytes as another dtype (PyTorch's Tensor.view(dtype)), sharing
    the storage and its version counter. Equal element sizes keep the shape and strides;
    otherwise the last axis (stride 1) splits each element into narrower ones or merges
    neighbours into a wider one, and the other strides and the offset scale (the C core
    checks PyTorch's rules and raises its RuntimeError texts). Not differentiable, as
    PyTorch's view.dtype: the result never requires grad."""
    return _C._view_dtype(self, dtype)


def view(self, *shape, dtype=None):
    """view(*shape): the same memory in a new shape (-1 infers one size); an error, as
    PyTorch's, when the strides cannot describe it (use reshape, which copies then).
    view(dtype): the same bytes as another dtype (view_dtype)."""
    if dtype is not None:
        if shape or not isinstance(dtype, _dtype.DType):
            raise _view_args_error(shape + (dtype,))
        return view_dtype(self, dtype)
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)):
        if isinstance(shape[0], _dtype.DType):
            return view_dtype(self, shape[0])
        raise _view_args_error(shape)
    if len(shape) > 1 and any(isinstance(a, (_dtype.DType, str, float)) for a in shape):
        raise _view_args_error(shape)
    if self.is_contiguous():  # the C reshape is then always a view (and records itself)
        try:
            return _c_reshape(self, *shape)
        except ValueError as e:  # PyTorch's type for a shape that does not fit
            raise RuntimeError(f"view: {e}") from None
    shape = _infer("view", shape_args("view", shape), self.numel())
    strides = _view_strides(self.shape, self.strides, shape)
    if strides is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    off = _C._storage_offset(self)
    return record("View", self, lambda x: _strided(x, shape, strides, off),
                  _back_reshape(self.shape))


def view_as(self, other):
    return view(self, other.shape)


def unsqueeze(self, dim):
    nd = self.ndim
    if type(dim) is int and -nd - 1 <= dim <= nd:  # the common case, without a call
        d = dim + nd + 1 if dim < 0 else dim
    else:
        d = norm_dim("unsqueeze", dim, nd, extra=1)
    shape, strides = self.shape, self.strides
    st = strides[d] * shape[d] if d < nd else 1
    shape = shape[:d] + (1,) + shape[d:]
    strides = strides[:d] + (st,) + strides[d:]
    off = _C._storage_offset(self)
    if not self.requires_grad:  # record()'s test, first: a view chain is per-call overhead
        return _as_strided(self, shape, strides, off)
    return record("Unsqueeze", self, lambda x: _strided(x, shape, strides, off),
                  _back_reshape(self.shape))


def squeeze(self, dim=None):
    """squeeze(): drop every size-1 axis; squeeze(dim) (an int or a tuple): those of them
    that have size 1 (others are kept, as PyTorch does)."""
    if dim is None:
        dims = {i for i, s in enumerate(self.shape) if s == 1}
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {norm_dim("squeeze", d, self.ndim) for d in dims}
        dims = {d for d in dims if self.ndim and self.shape[d] == 1}
    shape = [s for i, s in enumerate(self.shape) if i not in dims]
    strides = [s for i, s in enumerate(self.strides) if i not in dims]
    off = _C._storage_offset(self)
    return record("Squeeze", self, lambda x: _strided(x, shape, strides, off),
                  _back_reshape(self.shape))


def flatten(self, start_dim=0, end_dim=-1):
    if self.ndim == 0:
        return reshape(self, 1)
    s = norm_dim("flatten", start_dim, self.ndim)
    e = norm_dim("flatten", end_dim, self.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    n = 1
    for k in self.shape[s:e + 1]:
        n *= k
    return reshape(self, self.shape[:s] + (n,) + self.shape[e + 1:])


def unflatten(self, dim, sizes):
    d = norm_dim("unflatten", dim, self.ndim)
    sizes = _infer("unflatten", shape_args("unflatten", (sizes,)), self.shape[d])
    return view(self, self.shape[:d] + sizes + self.shape[d + 1:])


def reshape(self, *shape):
    """pygpu's reshape (C): a view when the strides allow, else a copy (PyTorch's rule)."""
    return _c_reshape(self, *shape)


# ---- axis order ---------------------------------------------------------------------------

def permute(self, *dims):
    if len(dims) == 1 and type(dims[0]) in (tuple, list):
        dims = tuple(dims[0])
    if len(dims) == self.ndim and all(type(d) is int for d in dims):
        try:  # the C transpose checks the axes; PyTorch's messages come from below
            return _c_transpose(self, dims)
        except (ValueError, IndexError, _C.AxisError):
            pass
    dims = shape_args("permute", dims)
    if len(dims) != self.ndim:
        raise RuntimeError(f"permute: number of dims don't match in permute: the tensor has "
                           f"{self.ndim} dimensions, got {len(dims)}")
    perm = tuple(norm_dim("permute", d, self.ndim) for d in dims)
    if len(set(perm)) != len(perm):
        raise RuntimeError(f"permute: repeated dim in {dims}")
    return _c_transpose(self, perm)


def transpose(self, *args):
    """transpose(dim0, dim1) swaps two axes (PyTorch's form); transpose(perm) with a tuple or
    list, transpose(*perm) with other than two axes, or transpose() keeps pygpu's NumPy-style
    permutation."""
    if len(args) == 2 and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        a = norm_dim("transpose", args[0], self.ndim)
        b = norm_dim("transpose", args[1], self.ndim)
        if self.ndim == 0:
            return self
        perm = list(range(self.ndim))
        perm[a], perm[b] = perm[b], perm[a]
        return _c_transpose(self, perm)
    return _c_transpose(self, *args)


def swapaxes(self, axis0, axis1):
    return transpose(self, axis0, axis1)


def t(self):
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{self.ndim}D")
    return self if self.ndim < 2 else _c_transpose(self, (1, 0))


def _mT(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return transpose(self, -2, -1)


def movedim(self, source, destination):
    src = source if isinstance(source, (tuple, list)) else (source,)
    dst = destination if isinstance(destination, (tuple, list)) else (destination,)
    if len(src) != len(dst):
        raise RuntimeError("movedim: Invalid source or destination dims: source and destination "
                           "must have the same number of dims")
    src = [norm_dim("movedim", d, self.ndim) for d in src]
    dst = [norm_dim("movedim", d, self.ndim) for d in dst]
    rest = [d for d in range(self.ndim) if d not in src]
    perm = [None] * self.ndim
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return _c_transpose(self, perm)


# ---- expand -------------------------------------------------------------------------------

def _unbroadcast(shape):
    return lambda g: unbroadcast(g, shape)


def expand(self, *sizes):
    """expand(*sizes): size-1 axes (and new leading ones) repeated with stride 0; -1 keeps
    a size. No memory is allocated; write to the result only through a copy."""
    if len(sizes) == 1 and type(sizes[0]) in (tuple, list):
        sizes = tuple(sizes[0])
    if not all(type(s) is int for s in sizes):
        sizes = shape_args("expand", sizes)
    if len(sizes) < self.ndim:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({self.ndim})")
    lead = len(sizes) - self.ndim
    own_shape, own_strides = self.shape, self.strides  # each read builds a tuple
    shape, strides = [], []
    for i, want in enumerate(sizes):
        if i < lead:
            if want < 0:
                raise RuntimeError(f"expand: the expanded size of the tensor ({want}) isn't "
                                   f"allowed in a leading, non-existing dimension {i}")
            shape.append(want)
            strides.append(0)
            continue
        have, st = own_shape[i - lead], own_strides[i - lead]
        if want == -1 or want == have:
            shape.append(have)
            strides.append(st)
        elif have == 1 and want >= 0:
            shape.append(want)
            strides.append(0)
        else:
            raise RuntimeError(f"expand: the expanded size of the tensor ({want}) must match the "
                               f"existing size ({have}) at non-singleton dimension {i}.  Target "
                               f"sizes: {list(sizes)}.  Tensor sizes: {list(self.shape)}")
    off = _C._storage_offset(self)
    if not self.requires_grad:
        return _as_strided(self, tuple(shape), tuple(strides), off)
    return record("Expand", self, lambda x: _strided(x, shape, strides, off),
                  _unbroadcast(self.shape))


def expand_as(self, other):
    return expand(self, other.shape)


# ---- pieces -------------------------------------------------------------------------------

def _zeros_with(shape, g, place):
    """zeros of `shape` with g written by place(out) -> the view g goes into."""
    from .create import zeros
    out = zeros(shape, dtype=g.dtype, device=g.device)
    place(out)[...] = g
    return out


def _narrow_view(x, d, start, length):
    strides = list(x.strides)
    shape = list(x.shape)
    shape[d] = length
    off = _C._storage_offset(x) + (start * strides[d] if length else 0)
    return _strided(x, shape, strides, off)


def narrow(self, dim, start, length):
    nd = self.ndim
    if type(dim) is int and -nd <= dim < nd and type(start) is int and type(length) is int:
        d = dim + nd if dim < 0 else dim  # the common case, without the calls below
        n = self.shape[d]
        s0 = start + n if start < 0 else start
        if 0 <= s0 and 0 <= length and s0 + length <= n and not self.requires_grad:
            strides = self.strides
            off = _C._storage_offset(self) + (s0 * strides[d] if length else 0)
            return _as_strided(self, self.shape[:d] + (length,) + self.shape[d + 1:], strides,
                               off)
    d = norm_dim("narrow", dim, self.ndim)
    if self.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    n = self.shape[d]
    if isinstance(start, Tensor):
        start = int(start.item())
    if not -n <= start <= n:
        raise IndexError(f"narrow: start ({start}) is out of range for dimension {d} of size {n}")
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size "
                           f"({n}).")
    shape = self.shape

    def place(o):
        return _narrow_view(o, d, start, length)

    def back(g):
        return _zeros_with(shape, g, place)
    back.pieces = (shape, d, start, length, place)  # the engine may sum pieces lazily
    return record("Narrow", self, place, back)


def split(self, split_size_or_sections, dim=0):
    d = norm_dim("split", dim, self.ndim)
    n = self.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and n:
            raise RuntimeError(f"split: split_size must be positive, got {size}")
        sizes = [min(size, n - i) for i in range(0, n, size)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(self, d, start, s))
        start += s
    return number_outputs(tuple(out), self)


def chunk(self, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = norm_dim("chunk", dim, self.ndim)
    n = self.shape[d]
    size = -(-n // chunks) if n else 0
    if size == 0:
        return tuple(narrow(self, d, 0, 0) for _ in range(min(chunks, 1) if n else chunks))
    return split(self, size, d)


def _select_view(x, d, i):
    shape = list(x.shape)
    strides = list(x.strides)
    off = _C._storage_offset(x) + i * strides[d]
    del shape[d], strides[d]
    return _strided(x, shape, strides, off)


def select(self, dim, index):
    d = norm_dim("select", dim, self.ndim)
    n = self.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(self.shape)} at dimension {d}")
    i = index + n if index < 0 else index
    shape = self.shape
    return record("Select", self, lambda x: _select_view(x, d, i),
                  lambda g: _zeros_with(shape, g, lambda o: _select_view(o, d, i)))


def unbind(self, dim=0):
    d = norm_dim("unbind", dim, self.ndim)
    return number_outputs(tuple(select(self, d, i) for i in range(self.shape[d])), self)


def _positions(shape, strides, offset, device):
    """The storage index of every element of the layout (shape, strides, offset), C order:
    an int64 tensor of numel elements on `device`."""
    from .create import arange, zeros
    pos = zeros((), dtype="int64", device=device) + offset
    for i, (n, st) in enumerate(zip(shape, strides)):
        axis = [1] * len(shape)
        axis[i] = n
        pos = pos + arange(n, device=device).reshape(tuple(axis)) * st
    return pos.reshape(-1)


def _as_strided_back(x, size, stride, off):
    """PyTorch's as_strided backward: the output's gradient summed into the storage elements
    it views (elements viewed twice get both), read back at x's own elements."""
    xs, xo = tuple(x.strides), _C._storage_offset(x)
    if any(st == 0 and n > 1 for n, st in zip(x.shape, xs)):
        raise RuntimeError("as_strided: pygpu differentiates it only on an input whose "
                           "elements do not share memory (not an expand()ed tensor); call "
                           "it on t.contiguous()")
    shape = tuple(x.shape)

    def back(g):
        from .create import zeros
        span = 1 + max(off + sum((n - 1) * st for n, st in zip(size, stride) if n),
                       xo + sum((n - 1) * st for n, st in zip(shape, xs) if n))
        acc = zeros((span,), dtype=g.dtype, device=g.device)
        if g.numel():
            acc.index_add_(0, _positions(size, stride, off, g.device), g.reshape(-1))
        return acc.index_select(0, _positions(shape, xs, xo, g.device)).reshape(shape)
    return back


def as_strided(self, size, stride, storage_offset=None):
    """as_strided(size, stride, storage_offset=None): PyTorch's, bounds checked against the
    storage; differentiable as PyTorch's (overlapping outputs sum their gradients)."""
    off = _C._storage_offset(self) if storage_offset is None else storage_offset
    size, stride = shape_args("as_strided", (size,)), shape_args("as_strided", (stride,))
    if self.requires_grad and is_grad_enabled():
        return record("AsStrided", self, lambda x: _strided(x, size, stride, off),
                      _as_strided_back(self, size, stride, off))
    return _strided(self, size, stride, off)


def flip(self, dims):
    """flip(dims): the elements in reverse order along dims, a copy as PyTorch's (a
    negative-stride view made contiguous)."""
    dims = dims if isinstance(dims, (tuple, list)) else (dims,)
    ds = {norm_dim("flip", d, self.ndim) for d in dims}

    def make(x):
        shape, strides = list(x.shape), list(x.strides)
        off = _C._storage_offset(x)
        for d in ds:
            if shape[d]:
                off += (shape[d] - 1) * strides[d]
            strides[d] = -strides[d]
        return _strided(x, shape, strides, off).contiguous()
    return record("Flip", self, make, lambda g: flip(g, tuple(ds)))


def repeat(self, *sizes):
    """repeat(*sizes): the tensor tiled sizes[i] times along each axis: a stride-0 expand
    of an interleaved view, then one reshape, and always new memory, as PyTorch's (where
    the reshape could stay a view, of x with shape[0] == 1 say, it is copied: an in-place
    op on the result must not write one element through several indices, nor into x)."""
    sizes = shape_args("repeat", sizes)
    if len(sizes) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"repeat: the repeats must be non-negative, got {list(sizes)}")
    shape = (1,) * (len(sizes) - self.ndim) + tuple(self.shape)
    x = self.reshape(shape)
    inter, target, final = [], [], []
    for r, n in zip(sizes, shape):
        inter += [1, n]
        target += [r, n]
        final.append(r * n)
    out = expand(x.reshape(tuple(inter)), *target).reshape(tuple(final))
    if _C._storage_info(out)[0] == _C._storage_info(self)[0]:  # still a view: copy it
        out = out.clone()
    return out


def tile(self, dims):
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(dims) < self.ndim:
        dims = (1,) * (self.ndim - len(dims)) + dims
    return repeat(self, dims)


METHODS = {
    "repeat": repeat, "tile": tile,
    "view": view, "view_as": view_as, "unsqueeze": unsqueeze,
    "squeeze": squeeze, "flatten": flatten, "unflatten": unflatten, "permute": permute,
    "transpose": transpose, "swapaxes": swapaxes, "t": t, "mT": property(_mT),
    "movedim": movedim, "expand": expand, "expand_as": expand_as, "narrow": narrow,
    "split": split, "chunk": chunk, "select": select, "unbind": unbind,
    "as_strided": as_strided, "flip": flip,
}
