"""Creation, joining and product functions with PyTorch's names: eye, linspace, logspace,
randint, randperm, full_like, empty_like, rand_like, randn_like, cat, stack, einsum (two operands or
one), outer, dot, mm, mv, bmm, addmm, baddbmm; and the Tensor methods new_zeros, new_ones,
new_full, new_empty, new_tensor.

All compose pygpu's C ops (fill, arange, random, matmul, cat, the strided view); none loops
over elements in Python. einsum reduces to one batched matmul: the subscripts are sorted
into batch, contracted and free labels, each operand is permuted and reshaped to
(batch, rows, contracted) / (batch, contracted, cols), and the product is reshaped and
permuted to the output's order. Labels repeated within one operand (traces, diagonals)
are not supported and say so."""
from . import _C, _creation, _dtype
from ._ops._common import axis, want_tensor
from ._tensor_views import shape_args
from .autograd import Function

Tensor = _C.Tensor


def _like_kw(t, dtype, device):
    return (t.dtype if dtype is None else dtype), (t.device if device is None else device)


@_creation.factory
def eye(n, m=None, *, dtype=None, device=None):
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be >= 0, got n={n}, m={m}")
    out = _creation.zeros((n, m), dtype=dtype, device=device)
    k = min(n, m)
    if k:
        diag = _C._as_strided(out, (k,), (m + 1,), 0)
        diag[...] = 1
    return out


@_creation.factory
def linspace(start, end, steps, *, dtype=None, device=None):
    """steps points from start to end, both included; computed from both ends as PyTorch's
    (the first half counts up from start, the second down from end)."""
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    dt = _dtype.float32 if dtype is None else _dtype.to_dtype(dtype)
    if steps <= 1:
        return _creation.full((steps,), float(start), dtype=dt, device=device)
    step = (float(end) - float(start)) / (steps - 1)
    i = _creation.arange(steps, dtype=_dtype.float64, device=device)
    half = steps // 2
    lo = (i < half).astype(_dtype.float64)
    vals = (i * step + float(start)) * lo + ((i - (steps - 1)) * step + float(end)) * (1.0 - lo)
    return vals.astype(dt) if dt is not _dtype.float64 else vals


@_creation.factory
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None):
    import math
    dt = _dtype.float32 if dtype is None else _dtype.to_dtype(dtype)
    e = linspace(start, end, steps, dtype=_dtype.float64, device=device)
    out = (e * math.log(base)).exp()
    return out.astype(dt) if dt is not _dtype.float64 else out


@_creation.factory
def randint(low, high=None, size=None, *, dtype=None, device=None):
    """randint(high, size) or randint(low, high, size): uniform integers in [low, high)."""
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    elif high is None and size is not None:  # randint(high, size=...), as PyTorch
        low, high = 0, low
    if high is None:
        raise TypeError("randint() needs high and size: randint(high, size) or "
                        "randint(low, high, size)")
    if size is None:
        raise TypeError("randint() missing 1 required argument: 'size'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    u = _creation.rand(*shape_args("randint", (size,)), dtype=_dtype.float64, device=device)
    out = (u * float(high - low)).astype(_dtype.int64) + int(low)  # u < 1: never high
    dt = _dtype.int64 if dtype is None else _dtype.to_dtype(dtype)
    return out if dt is _dtype.int64 else out.astype(dt)


@_creation.factory
def randperm(n, *, dtype=None, device=None):
    """A random permutation of 0..n-1: the stable order of n uniform keys."""
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    keys = _creation.rand(n, dtype=_dtype.float64, device=device)
    out = _C._argsort(keys, 0, False)
    return out if dtype is None or _dtype.to_dtype(dtype) is _dtype.int64 else out.astype(dtype)


@_creation.factory
def full_like(t, fill_value, *, dtype=None, device=None):
    dt, dev = _like_kw(t, dtype, device)
    return _creation.full(t.shape, fill_value, dtype=dt, device=dev)


@_creation.factory
def empty_like(t, *, dtype=None, device=None):
    dt, dev = _like_kw(t, dtype, device)
    return _creation.empty(t.shape, dtype=dt, device=dev)


@_creation.factory
def rand_like(t, *, dtype=None, device=None):
    dt, dev = _like_kw(t, dtype, device)
    return _creation.rand(*t.shape, dtype=dt, device=dev)


@_creation.factory
def randn_like(t, *, dtype=None, device=None):
    dt, dev = _like_kw(t, dtype, device)
    return _creation.randn(*t.shape, dtype=dt, device=dev)


# ---- joining: cat (an autograd Function: one copy into each slice) and stack ---------------

class _Cat(Function):
    @staticmethod
    def forward(ctx, *tensors, dim=0):
        first = tensors[0]
        ctx.dim, ctx.sizes = dim, [t.shape[dim] for t in tensors]
        shape = list(first.shape)
        shape[dim] = sum(ctx.sizes)
        out = _creation.empty(tuple(shape), dtype=first.dtype, device=first.device)
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
        for n in ctx.sizes:
            grads.append(g[lead + (slice(pos, pos + n),)])
            pos += n
        return tuple(grads)


def cat(tensors, dim=0):
    """Join tensors along an existing axis `dim` (all on one device, one dtype)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    for i, t in enumerate(tensors):
        want_tensor(t, "cat", f"tensors[{i}]")
    first = tensors[0]
    if first.ndim == 0:
        raise ValueError("cat: zero-dimensional tensors cannot be concatenated")
    dim = axis(dim, first.ndim, "cat")
    for i, t in enumerate(tensors[1:], 1):
        if t.device != first.device:
            raise _C.DeviceMismatchError(
                f"cat: tensors[{i}] is on {t.device} but tensors[0] is on {first.device}; "
                "move them to one device first")
        if t.dtype != first.dtype:
            raise TypeError(f"cat: tensors[{i}] has dtype {t.dtype} but tensors[0] has "
                            f"{first.dtype}; convert with .astype()")
        if t.ndim != first.ndim or any(a != b for k, (a, b) in
                                       enumerate(zip(t.shape, first.shape)) if k != dim):
            raise ValueError(f"cat: tensors[{i}] has shape {t.shape}, which does not match "
                             f"tensors[0]'s {first.shape} except along dim {dim}")
    return _Cat.apply(*tensors, dim=dim)


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    from ._tensor_views import norm_dim
    first = tensors[0]
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"stack: tensors[{i}] is a {type(t).__name__}, not a Tensor")
        if t.shape != first.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(first.shape)} at entry 0 and {list(t.shape)} at entry {i}")
    d = norm_dim("stack", dim, first.ndim, extra=1)
    return cat([t.unsqueeze(d) for t in tensors], d)


# ---- products -----------------------------------------------------------------------------

def _want(op, t, ndim, name):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if t.ndim != ndim:
        raise RuntimeError(f"{op}: {name} must be a {ndim}-D tensor, got {t.ndim}-D "
                           f"(shape {list(t.shape)})")


def outer(a, b):
    _want("outer", a, 1, "input")
    _want("outer", b, 1, "vec2")
    return a.reshape(-1, 1) * b.reshape(1, -1)


def dot(a, b):
    _want("dot", a, 1, "input")
    _want("dot", b, 1, "tensor")
    if a.shape != b.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements")
    return _C.matmul(a, b)


def mm(a, b):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):  # a sparse operand:
        return a @ b  # its own __matmul__/__rmatmul__ (pygpu/sparse.py), not imported here
    _want("mm", a, 2, "input")
    _want("mm", b, 2, "mat2")
    return _C.matmul(a, b)


def mv(a, v):
    _want("mv", a, 2, "input")
    _want("mv", v, 1, "vec")
    return _C.matmul(a, v)


def bmm(a, b):
    _want("bmm", a, 3, "input")
    _want("bmm", b, 3, "mat2")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"bmm: batch sizes differ: {a.shape[0]} and {b.shape[0]}")
    return _C.matmul(a, b)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def _scaled_sum(input, prod, beta, alpha):
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # PyTorch ignores input then (NaN in it does not propagate)
        return prod
    return prod + (input if beta == 1 else input * beta)


def _einsum_ellipsis(equation, eq, operands):
    """'...' replaced by labels of its own (right-aligned, broadcast as PyTorch: a size-1
    dimension is expanded to the others' size); without '->', the output is the ellipsis
    dimensions, then the labels used once, sorted (torch.einsum's implicit form)."""
    import string
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {equation!r} names {len(ins)} operands, got {len(operands)}")
    counts = []
    for sub, t in zip(ins, operands):
        if sub.count("...") > 1 or sub.replace("...", "").count(".") or (
                "..." not in sub and "." in sub):
            raise ValueError(f"einsum: {sub!r}: at most one '...' per operand")
        n = t.ndim - len(sub.replace("...", "")) if "..." in sub else 0
        if n < 0:
            raise ValueError(f"einsum: the subscript {sub!r} has more labels than the operand's "
                             f"{t.ndim} dimensions")
        counts.append(n)
    ndim = max(counts)
    free = [c for c in string.ascii_letters if c not in eq][:ndim]
    sizes = [1] * ndim
    for sub, t, n in zip(ins, operands, counts):
        if "..." in sub:
            start = sub.index("...")
            for k in range(n):
                m, slot = t.shape[start + k], ndim - n + k
                if m != 1 and sizes[slot] not in (1, m):
                    raise ValueError(f"einsum: the '...' dimensions of the operands do not "
                                     f"broadcast ({sizes[slot]} and {m})")
                sizes[slot] = max(sizes[slot], m)
    new_ins, new_ops = [], []
    for sub, t, n in zip(ins, operands, counts):
        if "..." in sub:
            start = sub.index("...")
            labels = "".join(free[ndim - n:])
            shape = list(t.shape)
            shape[start:start + n] = sizes[ndim - n:]
            if tuple(shape) != tuple(t.shape):
                t = t.expand(*shape)
            sub = sub.replace("...", labels)
        new_ins.append(sub)
        new_ops.append(t)
    ell = "".join(free)
    if arrow:
        if "." in out.replace("...", "", 1):
            raise ValueError(f"einsum: {out!r}: at most one '...' in the output")
        out = out.replace("...", ell)
    else:
        letters = "".join(new_ins)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                   and c not in ell))
    return ",".join(new_ins) + "->" + out, tuple(new_ops)


def einsum(equation, *operands):
    """einsum for one or two operands without repeated labels in one operand ('ij,jk->ik',
    'bij,bjk->bik', 'i,j->ij', 'ij->ji', 'ij->', 'bhqd,bhkd->bhqk', '...ij,...jk->...ik',
    ...); '...' broadcasts as in PyTorch."""
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    if "..." in eq:
        eq, operands = _einsum_ellipsis(equation, eq, operands)
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs = eq
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != len(operands) or len(ins) not in (1, 2):
        raise ValueError(f"einsum: {equation!r} names {len(ins)} operands, got "
                         f"{len(operands)} (pygpu supports one or two)")
    sizes = {}
    for sub, t in zip(ins, operands):
        if len(sub) != t.ndim:
            raise ValueError(f"einsum: the subscript {sub!r} has {len(sub)} labels for an "
                             f"operand with {t.ndim} dimensions")
        if len(set(sub)) != len(sub):
            raise NotImplementedError(f"einsum: a label repeated within one operand ({sub!r}: "
                                      f"traces, diagonals) is not supported by pygpu")
        for c, n in zip(sub, t.shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"einsum: label {c!r} has sizes {sizes[c]} and {n}")
    if len(set(out)) != len(out) or any(c not in sizes for c in out):
        raise ValueError(f"einsum: the output {out!r} repeats a label or names one no operand "
                         f"has")

    def sum_out(sub, t, keep):  # labels seen nowhere else are summed at once
        drop = [i for i, c in enumerate(sub) if c not in keep]
        if drop:
            t = t.sum(axis=tuple(drop))
            sub = "".join(c for c in sub if c in keep)
        return sub, t

    if len(ins) == 1:
        sub, t = sum_out(ins[0], operands[0], out)
        return t.permute(*[sub.index(c) for c in out]) if sub != out else t
    (sa, sb), (a, b) = ins, operands
    sa, a = sum_out(sa, a, set(out) | set(sb))
    sb, b = sum_out(sb, b, set(out) | set(sa))
    batch = [c for c in sa if c in sb and c in out]
    contr = [c for c in sa if c in sb and c not in out]
    fa = [c for c in sa if c not in sb]
    fb = [c for c in sb if c not in sa]

    def prod(labels):
        n = 1
        for c in labels:
            n *= sizes[c]
        return n
    a3 = a.permute(*[sa.index(c) for c in batch + fa + contr]).reshape(
        prod(batch), prod(fa), prod(contr))
    b3 = b.permute(*[sb.index(c) for c in batch + contr + fb]).reshape(
        prod(batch), prod(contr), prod(fb))
    r = _C.matmul(a3, b3).reshape(tuple(sizes[c] for c in batch + fa + fb))
    order = batch + fa + fb
    return r.permute(*[order.index(c) for c in out]) if order != list(out) else r


# ---- Tensor.new_* -------------------------------------------------------------------------

def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    return _creation.zeros(shape_args("new_zeros", size), dtype=dt, device=dev) \
        .requires_grad_(requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    return _creation.ones(shape_args("new_ones", size), dtype=dt, device=dev) \
        .requires_grad_(requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    return _creation.empty(shape_args("new_empty", size), dtype=dt, device=dev) \
        .requires_grad_(requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    return _creation.full(shape_args("new_full", (size,)), fill_value, dtype=dt, device=dev) \
        .requires_grad_(requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    if isinstance(data, Tensor):
        data = data.detach().clone()
        return data.to(device=dev, dtype=dt).requires_grad_(requires_grad)
    return _creation.tensor(data, dtype=dt, device=dev).requires_grad_(requires_grad)


METHODS = {
    "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty,
    "new_full": new_full, "new_tensor": new_tensor,
    "outer": outer, "dot": dot, "mm": mm, "mv": mv, "bmm": bmm,
    "matmul": lambda self, other: _C.matmul(self, other),
    "addmm": lambda self, mat1, mat2, *, beta=1, alpha=1: addmm(self, mat1, mat2, beta=beta,
                                                                alpha=alpha),
    "baddbmm": lambda self, b1, b2, *, beta=1, alpha=1: baddbmm(self, b1, b2, beta=beta,
                                                                alpha=alpha),
}

FUNCTIONS = {
    "eye": eye, "linspace": linspace, "logspace": logspace, "randint": randint,
    "randperm": randperm, "full_like": full_like, "empty_like": empty_like,
    "rand_like": rand_like, "randn_like": randn_like, "stack": stack, "einsum": einsum,
    "outer": outer, "dot": dot, "mm": mm, "mv": mv, "bmm": bmm, "addmm": addmm,
    "baddbmm": baddbmm,
}
