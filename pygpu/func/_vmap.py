"""torch.vmap / torch.func.vmap: func mapped over a dimension of its inputs, with PyTorch's
arguments (in_dims, out_dims, randomness, chunk_size), nesting and errors.

How it runs. PyTorch pushes the map into every op through BatchedTensors and batching rules,
and falls back to a per-sample loop and a stack for ops without a rule. pygpu has no
BatchedTensor: vmap runs that fallback for every function, with one exception.
  - A function that is itself one of the batched ops below runs as ONE call on the whole
    batch, the batch dimension moved to the front: the elementwise ops (the op table's
    unary and binary rows: pygpu.add, mul, exp, ...; their operands broadcast with the
    batch kept apart), matmul/mm/bmm (batch folded into matmul's broadcast batch), and
    sum/mean over the other dimensions. vmap(pygpu.mul)(x, y) costs one mul.
  - Anything else (a lambda, a module, a composite) is called once per sample, on views
    selected along each input's in_dim, and the outputs are stacked along out_dims: B calls
    of func and one stack per output, the cost of a Python loop over the batch. Results
    and gradients are PyTorch's; the speed is not vmap's.
Where the loop differs from PyTorch: .item() and data-dependent Python control flow work
per sample (PyTorch refuses them); an out_dims=None output is checked for being the same
in every sample (PyTorch checks that it is not batched); randomness="error" finds a random
op by the default generators' offsets having moved after the first sample, and raises
PyTorch's RuntimeError then, not at the op; a batch of size 0 runs no sample, so only the
one-call ops accept it."""
import functools

from .. import _C

Tensor = _C.Tensor

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def _name(func):
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


# ---- pytrees: tuples, lists and dicts of leaves (what vmap's in_dims and out_dims follow) --

def _flatten(tree):
    """(leaves, spec): spec rebuilds the tree from its leaves (_unflatten)."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for x in tree:
            lv, sp = _flatten(x)
            leaves += lv
            specs.append((sp, len(lv)))
        return leaves, (type(tree), None, specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for k, x in tree.items():
            lv, sp = _flatten(x)
            leaves += lv
            specs.append((sp, len(lv)))
        return leaves, (dict, list(tree), specs)
    return [tree], None


def _unflatten(leaves, spec):
    if spec is None:
        return leaves[0]
    kind, keys, specs = spec
    parts, at = [], 0
    for sp, n in specs:
        parts.append(_unflatten(leaves[at:at + n], sp))
        at += n
    if kind is dict:
        return dict(zip(keys, parts))
    if kind is tuple or kind is list:
        return kind(parts)
    return kind(*parts)  # a namedtuple


def _broadcast(dims, tree):
    """dims (an int or None, or a tuple/list/dict prefix of tree's structure) as one dim per
    leaf of tree; None when the two do not match."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(_flatten(tree)[0])
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(dims) != len(tree):
            return None
        out = []
        for d, t in zip(dims, tree):
            sub = _broadcast(d, t)
            if sub is None:
                return None
            out += sub
        return out
    if isinstance(dims, dict) and isinstance(tree, dict):
        if set(dims) != set(tree):
            return None
        out = []
        for k in tree:
            sub = _broadcast(dims[k], tree[k])
            if sub is None:
                return None
            out += sub
        return out
    return [dims] * len(_flatten(tree)[0]) if not isinstance(dims, (tuple, list, dict)) \
        else None


def _structure(tree):
    """A short spelling of a tree's structure, for the mismatch errors."""
    if isinstance(tree, (tuple, list)):
        return f"{type(tree).__name__}({', '.join(_structure(x) for x in tree)})"
    if isinstance(tree, dict):
        return "dict(" + ", ".join(f"{k}: {_structure(v)}" for k, v in tree.items()) + ")"
    return "*"


# ---- randomness: the default generators' states, watched or replayed ----------------------

def _generators(leaves):
    from .. import _defaults, _random
    from .._device import device
    devs = {device("cpu"), device(_defaults.get_default_device())}
    devs.update(x.device for x in leaves if isinstance(x, Tensor))
    return [_random.default_for(d) for d in devs]


def _states(gens):
    return [g._state() for g in gens]


def _restore(gens, states):
    for g, s in zip(gens, states):
        _C._rng_set_state(*g._where(), *s)


# ---- the ops that are batched already: one call on the whole batch ------------------------

def _front(x, d, rank):
    """x with its batch dim d first and ones after it up to `rank` sample dims, so that it
    broadcasts against unbatched operands as each of its samples would."""
    x = x.movedim(d, 0)
    for _ in range(rank - (x.ndim - 1)):
        x = x.unsqueeze(1)
    return x


# A rule: (func, the batch's arguments, the per-sample keywords) -> (function, arguments,
# keywords) of the one call, or None where the per-sample loop must run.

def _elementwise(func, args, dims, kwargs):
    tensors = [a for a in args if isinstance(a, Tensor)]
    if any(isinstance(v, Tensor) for v in kwargs.values()) or \
            len({t.dtype for t in tensors}) != 1:
        return None  # tensor keywords, or mixed dtypes (0-d promotion differs per sample)
    rank = max(t.ndim - (d is not None) for t, d in zip(args, dims) if isinstance(t, Tensor))
    return func, [_front(a, d, rank) if d is not None else a for a, d in zip(args, dims)], kwargs


def _matmul_of(sample_ndim):
    def rule(func, args, dims, kwargs):
        if kwargs or len(args) != 2 or not all(isinstance(a, Tensor) for a in args) or \
                args[0].dtype != args[1].dtype:
            return None
        ranks = [a.ndim - (d is not None) for a, d in zip(args, dims)]
        if any(r < 2 or (sample_ndim and r != sample_ndim) for r in ranks):
            return None  # a vector operand: matmul's 1-d rules do not broadcast a batch
        rank = max(ranks)
        # mm's and bmm's batch is matmul's broadcast
        return _C.matmul, [_front(a, d, rank) if d is not None else a for a, d in zip(args, dims)], {}
    return rule


def _reduction(func, args, dims, kwargs):
    if len(args) not in (1, 2) or dims[0] is None or any(d is not None for d in dims[1:]):
        return None
    x = args[0]
    if not isinstance(x, Tensor) or x.ndim < 2:
        return None  # a 0-d sample: dim=() would mean "all" to the batched call
    kw = dict(kwargs)
    dim = args[1] if len(args) == 2 else kw.pop("dim", None)
    if len(args) == 2 and "dim" in kw:
        return None
    r = x.ndim - 1
    if dim is None:
        dim = tuple(range(1, r + 1))
    elif isinstance(dim, int):
        if not -r <= dim < r:
            return None  # the per-sample call raises PyTorch's error
        dim = dim % r + 1
    elif isinstance(dim, (tuple, list)) and all(isinstance(i, int) and -r <= i < r for i in dim):
        dim = tuple(i % r + 1 for i in dim)
    else:
        return None
    kw["dim"] = dim
    return func, [x.movedim(dims[0], 0)], kw


_RULES = None


def _rule(func):
    """The batching rule of func when func is one of the ops above, else None."""
    global _RULES
    if _RULES is None:
        from .._tensor.products import bmm, mm
        from ..sparse._compressed import matmul  # pygpu.matmul: C's, or a sparse product
        # a row's _C function is pygpu.<name> and its aliases (pygpu.mul is pygpu.multiply);
        # rows whose pygpu function is a Python wrapper (divide's rounding_mode) loop
        rules = {getattr(_C, row[0]): _elementwise for row in _C._op_table()
                 if row[1] in ("unary", "binary") and hasattr(_C, row[0])}
        rules.update({_C.matmul: _matmul_of(0), matmul: _matmul_of(0), mm: _matmul_of(2),
                      bmm: _matmul_of(3),
                      _C.sum: _reduction, _C.mean: _reduction})
        # pygpu.mm is the __torch_function__ dispatcher of the function imported here, or
        # that function itself (pygpu/overrides): either finds the rule
        for k, v in list(rules.items()):
            rules.setdefault(getattr(k, "__wrapped__", k), v)
        _RULES = rules
    try:
        return _RULES.get(func) or _RULES.get(getattr(func, "__wrapped__", None))
    except TypeError:  # an unhashable callable
        return None


def _one_call(func, args, dims, kwargs):
    """func's result for the whole batch, batch first, or None where the rule declines."""
    rule = _rule(func)
    if rule is None:
        return None
    got = rule(func, args, dims, kwargs)
    if got is None:
        return None
    fn, args, kwargs = got
    return fn(*args, **kwargs)


# ---- vmap ----------------------------------------------------------------------------------

def _check_out_dims(out_dims, func):
    leaves = _flatten(out_dims)[0]
    if not all(d is None or isinstance(d, int) for d in leaves):
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an "
                         f"int, None or a python collection of ints representing where in the "
                         f"outputs the vmapped dimension should appear.")


def _in_dims_per_leaf(func, in_dims, args):
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected "
                         f"`in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to "
                         f"add inputs, or you are trying to vmap over a function with no "
                         f"inputs. The latter is unsupported.")
    leaves, spec = _flatten(args)
    dims = _broadcast(in_dims, args)
    if dims is None:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is "
                         f"not compatible with the structure of `inputs`. in_dims has "
                         f"structure {_structure(in_dims)} but inputs has structure "
                         f"{_structure(args)}.")
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but in_dim must be either an integer "
                             f"dimension or None.")
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but the input is of type {type(x)}. "
                             f"We cannot vmap over non-Tensor arguments, please use None as "
                             f"the respective in_dim")
        if not -x.ndim <= d < x.ndim:
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for some input, but that input is a Tensor of "
                             f"dimensionality {x.ndim} so expected in_dim to satisfy "
                             f"-{x.ndim} <= in_dim < {x.ndim}.")
    dims = [None if d is None else d % x.ndim for x, d in zip(leaves, dims)]
    sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return leaves, spec, dims, sizes[0]


def _out_dims_per_leaf(func, out_dims, outputs):
    def incompatible():
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims "
                         f"is not compatible with the structure of `outputs`. out_dims has "
                         f"structure {_structure(out_dims)} but outputs has structure "
                         f"{_structure(outputs)}.")
    if isinstance(outputs, Tensor):  # PyTorch's edge case: a 1-tuple of out_dims is fine
        if out_dims is None or isinstance(out_dims, int):
            return [out_dims]
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        incompatible()
    dims = _broadcast(out_dims, outputs)
    if dims is None:
        incompatible()
    return dims


def _samples(func, leaves, spec, dims, start, stop, kwargs, randomness, gens):
    """func on each sample start..stop-1 (views of the batched leaves); the outputs."""
    outs = []
    before = _states(gens)
    for i in range(start, stop):
        if randomness == "same" and i > start:
            _restore(gens, before)
        sample = [x.select(d, i) if d is not None else x for x, d in zip(leaves, dims)]
        outs.append(func(*_unflatten(sample, spec), **kwargs))
        if randomness == "error" and i == start and _states(gens) != before:
            _restore(gens, before)
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags "
                               "on vmap or perform the randomness operation out of vmap")
    return outs


def _stacked(func, out_dims, outs):
    """The per-sample outputs stacked along out_dims, in the outputs' structure."""
    from .._tensor.join import stack
    flat = [_flatten(o) for o in outs]
    spec = flat[0][1]
    dims = _out_dims_per_leaf(func, out_dims, outs[0])
    result = []
    for j, d in enumerate(dims):
        column = [f[0][j] for f in flat]
        if d is None:
            first = column[0]
            if isinstance(first, Tensor) and any(
                    not (c.shape == first.shape and bool((c == first).all())) for c in column[1:]):
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a "
                                 f"BatchedTensor when out_dim is None")
            result.append(first)
            continue
        for c in column:
            if not isinstance(c, Tensor):
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return "
                                 f"Tensors, got type {type(c)}. Did you mean to set out_dims= "
                                 f"to None for output?")
        result.append(stack(column, d))
    return _unflatten(result, spec)


def _placed(func, out_dims, out):
    """A one-call result (batch first) with its batch dim where out_dims puts it."""
    d = _out_dims_per_leaf(func, out_dims, out)[0]
    if d is None:
        raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a "
                         f"BatchedTensor when out_dim is None")
    return out.movedim(0, d)


def _chunks(batch, chunk_size):
    step = chunk_size or max(batch, 1)
    return [(s, min(s + step, batch)) for s in range(0, batch, step)] or [(0, 0)]


def _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    leaves, spec, dims, batch = _in_dims_per_leaf(func, in_dims, args)
    _check_out_dims(out_dims, func)
    gens = _generators(leaves) if randomness != "different" else []
    parts = []
    for start, stop in _chunks(batch, chunk_size):
        if spec is not None and spec[0] is tuple and all(s is None for s, _ in spec[2]):
            sliced = [x.narrow(d, start, stop - start) if d is not None else x
                      for x, d in zip(leaves, dims)]
            before = _states(gens)
            out = _one_call(func, sliced, dims, kwargs)
            if out is not None:
                if randomness == "error" and _states(gens) != before:
                    raise RuntimeError("vmap: called random operation while in randomness "
                                       "error mode. Please either use the 'same' or 'different' "
                                       "randomness flags on vmap or perform the randomness "
                                       "operation out of vmap")
                parts.append(("one", _placed(func, out_dims, out)))
                continue
        if stop == start:
            raise RuntimeError(f"vmap({_name(func)}): a batch of size 0: pygpu runs vmap as a "
                               f"loop over the samples (pygpu/func/_vmap.py), and with none "
                               f"it cannot know what {_name(func)} returns")
        outs = _samples(func, leaves, spec, dims, start, stop, kwargs, randomness, gens)
        parts.append(("loop", _stacked(func, out_dims, outs)))
    if len(parts) == 1:
        return parts[0][1]
    return _concat_chunks(func, out_dims, [p for _, p in parts])


def _concat_chunks(func, out_dims, parts):
    """chunk_size's pieces joined along each output's out_dim (an out_dim None output is the
    first chunk's)."""
    from .._tensor.join import cat
    flat = [_flatten(p) for p in parts]
    spec = flat[0][1]
    dims = _out_dims_per_leaf(func, out_dims, parts[0])
    out = []
    for j, d in enumerate(dims):
        column = [f[0][j] for f in flat]
        out.append(column[0] if d is None else cat(column, d))
    return _unflatten(out, spec)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.vmap: func mapped over dimension in_dims of its inputs, the results' mapped
    dimension at out_dims. in_dims/out_dims: an int or None for all, or a (nested) tuple
    following the inputs'/outputs' structure; randomness: "error" (a random op inside
    raises), "different" (each sample draws its own), "same" (every sample draws the same
    numbers); chunk_size: run at most that many samples at a time. Keyword arguments of
    the returned function are passed to func unmapped. See the module's docstring for how
    pygpu runs it (one call for the ops that are batched already, else a loop)."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)
    try:
        return functools.wraps(func)(wrapped)
    except (AttributeError, TypeError):  # a callable without __name__ and friends
        return wrapped
