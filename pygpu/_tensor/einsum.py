"""einsum and tensordot with PyTorch's rules, contracted pair by pair in a chosen order.

An equation is parsed into integer labels (the letters, then one label per dimension an
ellipsis covers, right-aligned across the operands), checked with PyTorch's messages
(RuntimeError; pygpu.ShapeError is a ValueError too), and each operand prepared on its own:
a label repeated within it becomes its diagonal (`diagonal`, a view), a dimension of size 1
whose label is larger elsewhere is dropped (it broadcasts: the operand is constant along
it), and a label nothing else needs is summed at once. The operands are then contracted two
at a time (as PyTorch's sumproduct_pair): labels both share that are needed later are batch
axes, those needed nowhere later are contracted, and the pair becomes one batched matmul
(pygpu's matmul: the GEMM contract's batched product), or one broadcast multiply when
nothing is contracted. The order of the pairs is opt_einsum's where that package is
installed and torch.backends.opt_einsum enables it (PyTorch's behaviour), else pygpu's own
search: exhaustive ('optimal', and 'auto' up to four operands) or greedy (the pair whose
result frees the most memory, then the fewest multiply-adds). With enabled = False the
operands are contracted left to right, as PyTorch does without opt_einsum.

Everything is composed of differentiable tensor ops (diagonal, squeeze, sum, permute,
reshape, matmul, multiply), so gradients, and gradients of gradients, follow."""
import string

from .. import _C

Tensor = _C.Tensor
_ShapeError = _C.ShapeError
_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # PyTorch's label order: A-Z, a-z
_NLETTERS = len(_LETTERS)


def _fail(msg):
    raise _ShapeError("einsum(): " + msg)


# ---- parsing ---------------------------------------------------------------------------------

def _scan(term, where, offset):
    """The labels of one operand's (or the output's) subscript: letter codes, with None for
    its ellipsis; `offset` is the term's position in the equation (for messages)."""
    out, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "..." or None in out:
                _fail(f"found '.' for {where} that is not part of any ellipsis")
            out.append(None)
            i += 3
            continue
        if c not in _LETTERS:
            _fail(f"invalid subscript given at index {offset + i} in the equation string, "
                  f"subscripts must be in [a-zA-Z]")
        out.append(_LETTERS.index(c))
        i += 1
    return out


def _parse_equation(equation, n):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if arrow and "->" in rhs:
        _fail(f"invalid subscript given at index {len(lhs) + 2 + rhs.index('-')} in the equation "
              f"string, subscripts must be in [a-zA-Z]")
    terms, pos = [], 0
    for k, term in enumerate(lhs.split(",")):
        terms.append(_scan(term, f"operand {k}", pos))
        pos += len(term) + 1
    if len(terms) < n:
        _fail("more operands were provided than specified in the equation")
    if len(terms) > n:
        _fail("fewer operands were provided than specified in the equation")
    return terms, (_scan(rhs, "output", len(lhs) + 2) if arrow else None)


def _from_sublists(args):
    """einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]): integers 0..51 and
    Ellipsis, as PyTorch's second form."""
    def term(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append(None)
            elif isinstance(s, int) and 0 <= s < _NLETTERS:
                out.append(s)
            else:
                _fail(f"subscript in subscript list is not within the valid range [0, "
                      f"{_NLETTERS}), got {s!r}")
        return out
    ops, terms = list(args[0::2][:len(args) // 2]), [term(s) for s in args[1::2]]
    out = term(args[-1]) if len(args) % 2 else None
    return ops, terms, out


def _check_operands(operands):
    for k, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): expected Tensor as element {k} of the operands, but got "
                            f"{type(t).__name__}")


def _expand_ellipses(terms, output, operands):
    """Labels with each ellipsis replaced by one label per dimension it covers (right
    aligned, codes _NLETTERS + k), the output (implicit: the ellipsis dimensions, then the
    labels used once, in PyTorch's order), and each label's size (broadcast: size 1 gives
    way to any other). Checks PyTorch's rules."""
    counts = []
    for k, (term, t) in enumerate(zip(terms, operands)):
        named = len([c for c in term if c is not None])
        if None in term:
            if named > t.ndim:
                _fail(f"the number of subscripts in the equation ({named}) is more than the "
                      f"number of dimensions ({t.ndim}) for operand {k}")
            counts.append(t.ndim - named)
        else:
            if named != t.ndim:
                _fail(f"the number of subscripts in the equation ({named}) does not match the "
                      f"number of dimensions ({t.ndim}) for operand {k} and no ellipsis was "
                      f"given")
            counts.append(0)
    nell = max(counts) if counts else 0
    labels, sizes = [], {}
    for k, (term, t, n) in enumerate(zip(terms, operands, counts)):
        own = []
        for c in term:
            own.extend(range(_NLETTERS + nell - n, _NLETTERS + nell) if c is None else [c])
        first = {}
        for c, m in zip(own, t.shape):  # a label repeated within one operand: one size
            if first.setdefault(c, m) != m:
                _fail(f"subscript {_LETTERS[c] if c < _NLETTERS else '...'} is repeated for "
                      f"operand {k} but the sizes don't match, {m} != {first[c]}")
        for c, m in zip(own, t.shape):
            seen = sizes.get(c)
            if seen is not None and m != seen and m != 1 and seen != 1:
                if c >= _NLETTERS:
                    _fail(f"dimension {c - _NLETTERS} covered by ellipsis in operand {k} has "
                          f"size {m} which does not broadcast with previously seen ellipsis "
                          f"with size {seen} for the respective dimension")
                _fail(f"subscript {_LETTERS[c]} has size {m} for operand {k} which does not "
                      f"broadcast with previously seen size {seen}")
            sizes[c] = m if seen is None or seen == 1 else seen
        labels.append(own)
    ell = list(range(_NLETTERS, _NLETTERS + nell))
    if output is None:
        used = [c for own in labels for c in own if c < _NLETTERS]
        out = ell + sorted(c for c in set(used) if used.count(c) == 1)
    else:
        out = []
        for c in output:
            if c is None:
                out.extend(ell)
                continue
            if c in out:
                _fail(f"output subscript {_LETTERS[c]} appears more than once in the output")
            if c not in sizes:
                _fail(f"output subscript {_LETTERS[c]} does not appear in the equation for any "
                      f"input operand")
            out.append(c)
    return labels, out, sizes


# ---- preparing one operand -------------------------------------------------------------------

def _sum_labels(t, labels, drop):
    axes = tuple(i for i, c in enumerate(labels) if c in drop)
    if axes:
        t = t.sum(axis=axes)
        labels = [c for c in labels if c not in drop]
    return t, labels


def _prepare(t, labels, sizes, needed):
    """Operand k with its diagonals taken, its broadcast dimensions dropped and the labels
    `needed` does not hold summed."""
    labels = list(labels)
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(c)
        j = labels.index(c, i + 1)  # one size: checked by _expand_ellipses
        t = t.diagonal(0, i, j)  # the label's axis moves to the end
        labels = [x for n, x in enumerate(labels) if n not in (i, j)] + [c]
    ones = [i for i, c in enumerate(labels) if t.shape[i] == 1 and sizes[c] != 1]
    if ones:
        t = t.reshape(tuple(n for i, n in enumerate(t.shape) if i not in ones))
        labels = [c for i, c in enumerate(labels) if i not in ones]
    return _sum_labels(t, labels, set(labels) - needed)


# ---- the order of the pairs ------------------------------------------------------------------

def _numel(labels, sizes):
    n = 1
    for c in labels:
        n *= sizes[c]
    return n


def _pair_cost(la, lb, keep, sizes):
    """(elements of the result, multiply-adds) of contracting label sets la and lb."""
    both = la | lb
    return _numel(both & keep, sizes), _numel(both, sizes)


def _keep_after(sets, i, j, output):
    keep = set(output)
    for n, s in enumerate(sets):
        if n not in (i, j):
            keep |= s
    return keep


def _greedy(sets, output, sizes):
    sets, path = list(sets), []
    while len(sets) > 1:
        best = None
        for i in range(len(sets)):
            for j in range(i + 1, len(sets)):
                shared = bool(sets[i] & sets[j])
                res, flops = _pair_cost(sets[i], sets[j], _keep_after(sets, i, j, output), sizes)
                key = (not shared, res - _numel(sets[i], sizes) - _numel(sets[j], sizes), flops)
                if best is None or key < best[0]:
                    best = (key, i, j, res)
        _, i, j, _ = best
        keep = _keep_after(sets, i, j, output)
        new = (sets[i] | sets[j]) & keep
        sets = [s for n, s in enumerate(sets) if n not in (i, j)] + [new]
        path.append((i, j))
    return path


def _optimal(sets, output, sizes):
    """The order with the fewest multiply-adds in all, by exhaustive search."""
    best = [None, None]

    def search(sets, path, cost):
        if best[0] is not None and cost >= best[0]:
            return
        if len(sets) == 1:
            best[0], best[1] = cost, list(path)
            return
        for i in range(len(sets)):
            for j in range(i + 1, len(sets)):
                keep = _keep_after(sets, i, j, output)
                _, flops = _pair_cost(sets[i], sets[j], keep, sizes)
                rest = [s for n, s in enumerate(sets) if n not in (i, j)]
                search(rest + [(sets[i] | sets[j]) & keep], path + [(i, j)], cost + flops)
    search(list(sets), [], 0)
    return best[1]


def contraction_path(sets, output, sizes, strategy="auto", enabled=True):
    """The pairs to contract, in opt_einsum's convention (each step removes its two operands
    from the list and appends their product), for operands with these label sets."""
    n = len(sets)
    if not enabled:  # ((a b) c) d: the product so far is always the last of the list
        return [(0, 1)] + [(0, n - 1 - k) for k in range(1, n - 1)]
    if strategy == "optimal" or (strategy == "auto" and n <= 4):
        return _optimal(sets, output, sizes)
    return _greedy(sets, output, sizes)


def _path(equation, operands, sets, output, sizes):
    from ..backends import opt_einsum as flags
    if len(sets) < 3:
        return [(0, 1)] if len(sets) == 2 else []
    pkg = flags.get_opt_einsum()
    if flags.enabled and pkg is not None and equation is not None:
        path = pkg.contract_path(equation, *operands, optimize=flags.strategy)[0]
        return [tuple(p) for p in path]
    return contraction_path(sets, output, sizes, flags.strategy, flags.enabled)


# ---- contracting a pair ----------------------------------------------------------------------

def _contract_pair(a, la, b, lb, keep, sizes):
    """(a la) * (b lb) with every label not in `keep` that both share summed: a batched
    matmul, or a broadcast multiply when nothing is summed."""
    a, la = _sum_labels(a, la, set(la) - set(lb) - keep)
    b, lb = _sum_labels(b, lb, set(lb) - set(la) - keep)
    batch = [c for c in la if c in lb and c in keep]
    contr = [c for c in la if c in lb and c not in keep]
    fa = [c for c in la if c not in lb]
    fb = [c for c in lb if c not in la]
    if not contr:
        pa = a.permute(*[la.index(c) for c in batch + fa]) if la != batch + fa else a
        pb = b.permute(*[lb.index(c) for c in batch + fb]) if lb != batch + fb else b
        pa = pa.reshape(tuple(sizes[c] for c in batch + fa) + (1,) * len(fb))
        pb = pb.reshape(tuple(sizes[c] for c in batch) + (1,) * len(fa)
                        + tuple(sizes[c] for c in fb))
        return pa * pb, batch + fa + fb
    order_a, order_b = batch + fa + contr, batch + contr + fb
    a3 = (a.permute(*[la.index(c) for c in order_a]) if la != order_a else a).reshape(
        _numel(batch, sizes), _numel(fa, sizes), _numel(contr, sizes))
    b3 = (b.permute(*[lb.index(c) for c in order_b]) if lb != order_b else b).reshape(
        _numel(batch, sizes), _numel(contr, sizes), _numel(fb, sizes))
    r = _C.matmul(a3, b3).reshape(tuple(sizes[c] for c in batch + fa + fb))
    return r, batch + fa + fb


def contract(operands, labels, output, sizes, path):
    """Contract prepared operands (each with its label list) along `path` into `output`."""
    ops = list(zip(operands, labels))
    for step in path:
        step = sorted(step, reverse=True)
        picked = [ops.pop(i) for i in step][::-1]
        t, lt = picked[0]
        for n in range(1, len(picked)):
            keep = set(output)
            for _, lo in ops + picked[n + 1:]:  # what the rest of the path still needs
                keep |= set(lo)
            t, lt = _contract_pair(t, lt, picked[n][0], picked[n][1], keep, sizes)
        ops.append((t, lt))
    (t, lt), = ops
    t, lt = _sum_labels(t, lt, set(lt) - set(output))
    if lt != list(output):
        t = t.permute(*[lt.index(c) for c in output])
    return t


def einsum(*args):
    """torch.einsum(equation, *operands) (operands may come as one list) or
    torch.einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])."""
    if not args:
        raise TypeError("einsum(): expected an equation and operands")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
            operands = tuple(operands[0])
        _check_operands(operands)
        terms, output = _parse_equation(equation, len(operands))
    else:
        equation = None
        operands, terms, output = _from_sublists(args)
        _check_operands(operands)
    labels, out, sizes = _expand_ellipses(terms, output, operands)
    prepared = []
    for k, (t, own) in enumerate(zip(operands, labels)):
        needed = set(out)
        for n, other in enumerate(labels):
            if n != k:
                needed |= set(other)
        prepared.append(_prepare(t, own, sizes, needed))
    tensors = [p[0] for p in prepared]
    lists = [p[1] for p in prepared]
    path = _path(equation, operands, [set(x) for x in lists], out, sizes)
    return contract(tensors, lists, out, sizes, path)


# ---- tensordot -------------------------------------------------------------------------------

def _dims_lists(dims, a, b):
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, bool) or not isinstance(dims, (int, list, tuple)):
        raise _ShapeError(f"tensordot expects dims to be int or tuple[list[int], list[int]] or "
                          f"list[list[int]] containing two lists, but got dims={dims}")
    if isinstance(dims, int):
        if dims < 0:
            raise _ShapeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise _ShapeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(-dims, 0)), list(range(dims))  # PyTorch's numbering in messages
    if len(dims) != 2:
        raise _ShapeError(f"tensordot expects dims to be int or tuple[list[int], list[int]] or "
                          f"list[list[int]] containing two lists, but got dims={dims}")
    da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise _ShapeError("both dimension lists should have same length")
    return da, db


def tensordot(a, b, dims=2, out=None):
    """torch.tensordot: the sum over a's axes dims[0] and b's axes dims[1] (or a's last
    `dims` and b's first `dims`) of their product, a's other axes then b's: one matmul."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"tensordot(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    da, db = _dims_lists(dims, a, b)
    from .views import norm_dim
    na = [norm_dim("tensordot", d, a.ndim) for d in da]
    nb = [norm_dim("tensordot", d, b.ndim) for d in db]
    for x, y, gx, gy in zip(na, nb, da, db):
        if a.shape[x] != b.shape[y] and a.shape[x] != 1 and b.shape[y] != 1:
            raise _ShapeError(f"contracted dimensions need to match, but first has size "
                              f"{a.shape[x]} in dim {gx} and second has size {b.shape[y]} in "
                              f"dim {gy}")
    if len(set(na)) != len(na) or len(set(nb)) != len(nb):
        raise _ShapeError("tensordot: a dimension is listed twice")
    la = list(range(a.ndim))
    lb = [la[na[nb.index(d)]] if d in nb else a.ndim + d for d in range(b.ndim)]
    output = [c for c in la if c not in na] + [c for c in lb if c >= a.ndim]
    sizes = {}
    for c, m in list(zip(la, a.shape)) + list(zip(lb, b.shape)):
        sizes[c] = max(sizes.get(c, 1), m)
    prepared = [_prepare(a, la, sizes, set(output) | set(lb)),
                _prepare(b, lb, sizes, set(output) | set(la))]
    r = contract([p[0] for p in prepared], [p[1] for p in prepared], output, sizes, [(0, 1)])
    if out is not None:
        out.copy_(r)
        return out
    return r
