"""Products with PyTorch's names: outer, dot, mm, mv, bmm, addmm, baddbmm, addbmm (and
their in-place forms), with einsum and tensordot from _tensor/einsum.py; all
over pygpu's matmul (csrc/core/pg_ops_matmul.c: any rank, broadcast batch axes, one
batched GEMM). Shape errors are pygpu.ShapeError (PyTorch's RuntimeError, and a
ValueError), in PyTorch's words."""
from .. import _C
from .einsum import einsum, tensordot

Tensor = _C.Tensor
_ShapeError = _C.ShapeError


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
        return a @ b  # its own __matmul__/__rmatmul__ (pygpu/sparse/__init__.py), not imported here
    _want("mm", a, 2, "input")
    _want("mm", b, 2, "mat2")
    return _C.matmul(a, b)


def mv(a, v):
    _want("mv", a, 2, "input")
    _want("mv", v, 1, "vec")
    return _C.matmul(a, v)


def _want_batches(a, b):
    """PyTorch's checks of bmm's operands: (b, n, m) and (b, m, p)."""
    for name, t in (("batch1", a), ("batch2", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"bmm: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim != 3:
            raise _ShapeError(f"{name} must be a 3D tensor (got a {t.ndim}-D tensor of shape "
                              f"{list(t.shape)})")
    if b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
        raise _ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                          f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, "
                          f"{b.shape[1]}].")


def bmm(a, b):
    """(b, n, m) @ (b, m, p) -> (b, n, p): one batched GEMM; no broadcasting (matmul has it)."""
    _want_batches(a, b)
    return _C.matmul(a, b)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * bmm(batch1, batch2); input broadcasts to (b, n, p)."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum_i batch1[i] @ batch2[i]: the batch is folded into the
    contracted axis, so the sum is one GEMM, (n, b*m) @ (b*m, p)."""
    _want_batches(batch1, batch2)
    nb, n, m = batch1.shape
    p = batch2.shape[2]
    a = batch1.permute(1, 0, 2).reshape(n, nb * m)
    return _scaled_sum(input, _C.matmul(a, batch2.reshape(nb * m, p)), beta, alpha)


def _scaled_sum(input, prod, beta, alpha):
    """beta * input + alpha * prod, with input broadcast to prod's shape (never prod to
    input's: PyTorch expands input, and says so when it cannot)."""
    if isinstance(input, Tensor):
        shape, own = tuple(prod.shape), tuple(input.shape)
        lead = len(shape) - len(own)
        for i, m in enumerate(own):
            if lead < 0 or (m != 1 and m != shape[lead + i]):
                raise _ShapeError(
                    f"The expanded size of the tensor ({shape[lead + i] if lead >= 0 else '?'}) "
                    f"must match the existing size ({m}) at non-singleton dimension {i}.  "
                    f"Target sizes: {list(shape)}.  Tensor sizes: {list(own)}")
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # PyTorch ignores input then (NaN in it does not propagate)
        return prod
    return prod + (input if beta == 1 else input * beta)


def _in_place(fn):
    """fn's in-place form: self becomes fn(self, ...) (self's shape is the result's)."""
    def method(self, *args, **kwargs):
        r = fn(self, *args, **kwargs)
        if tuple(r.shape) != tuple(self.shape):
            raise _ShapeError(f"{fn.__name__}_: the result's shape {list(r.shape)} is not "
                              f"self's {list(self.shape)}; an in-place op cannot broadcast self")
        return self.copy_(r)
    method.__name__ = fn.__name__ + "_"
    return method


METHODS = {
    "outer": outer, "dot": dot, "mm": mm, "mv": mv, "bmm": bmm,
    "matmul": lambda self, other: _C.matmul(self, other),
    "addmm": addmm, "baddbmm": baddbmm, "addbmm": addbmm,
    "addmm_": _in_place(addmm), "baddbmm_": _in_place(baddbmm), "addbmm_": _in_place(addbmm),
}

FUNCTIONS = {
    "einsum": einsum, "tensordot": tensordot, "outer": outer, "dot": dot, "mm": mm, "mv": mv,
    "bmm": bmm, "addmm": addmm, "baddbmm": baddbmm, "addbmm": addbmm,
}
