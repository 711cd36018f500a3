"""Products with PyTorch's names: outer, dot, mm, mv, bmm, addmm, baddbmm and einsum (two
operands or one), all over pygpu's matmul.

einsum reduces to one batched matmul: the subscripts are sorted into batch, contracted and
free labels, each operand is permuted and reshaped to (batch, rows, contracted) /
(batch, contracted, cols), and the product is reshaped and permuted to the output's order.
Labels repeated within one operand (traces, diagonals) are not supported and say so."""
from . import _C

Tensor = _C.Tensor


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


METHODS = {
    "outer": outer, "dot": dot, "mm": mm, "mv": mv, "bmm": bmm,
    "matmul": lambda self, other: _C.matmul(self, other),
    "addmm": lambda self, mat1, mat2, *, beta=1, alpha=1: addmm(self, mat1, mat2, beta=beta,
                                                                alpha=alpha),
    "baddbmm": lambda self, b1, b2, *, beta=1, alpha=1: baddbmm(self, b1, b2, beta=beta,
                                                                alpha=alpha),
}

FUNCTIONS = {
    "einsum": einsum, "outer": outer, "dot": dot, "mm": mm, "mv": mv, "bmm": bmm,
    "addmm": addmm, "baddbmm": baddbmm,
}
