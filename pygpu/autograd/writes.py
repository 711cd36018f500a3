"""Indexed and masked writes under autograd: t[key] = v, copy_, masked_fill_, index_put_,
masked_scatter_, index_copy_, index_add_, scatter_, scatter_add_.

Each writes the target's own memory, as without autograd (no copy of the target), and
then records the write as the target's new history (views.assign: a view's base is
rebased, PyTorch's CopySlices): a node whose first input is the target as it was and
whose other inputs are the written values, with PyTorch's gradients:
- the target's earlier history gets the gradient of the elements that were not
  overwritten (zero where the write landed; all of it for the accumulating writes,
  index_add_, scatter_add_ and index_put_(accumulate=True));
- each written value gets the gradient of the elements it landed on (g[key], gathered,
  selected), summed back to its own shape where it was broadcast.
The C bindings send item assignment and copy_ here (the hooks "setitem_grad" and
"copy_grad", csrc/bindings/autograd.c) when grad mode is on and the target or the value
requires grad; the other writes are routed by their Python methods (_tensor/index.py).

Every gradient formula is written in differentiable ops (item assignment, getitem,
masked_fill, gather, index_select), so these writes have higher-order gradients too. The
index and mask tensors a backward reads are stamped for the version check."""
from .. import _C
from ._broadcast import unbroadcast
from .engine import Node, hold
from .grad_mode import no_grad
from . import views
from .inplace import prepare

Tensor = _C.Tensor


def _write(self, name, raw, values, backward, ctx):
    """Run raw() (the write itself) under no_grad, then record it: inputs self as it was and
    `values` (tensors or None)."""
    prepare(self, name)
    old, old_fn = hold(self)
    with no_grad():
        raw()
    inputs, fns = [old], [old_fn]
    for v in values:
        if isinstance(v, Tensor):
            h, fn = hold(v)
            inputs.append(h)
            fns.append(fn)
        else:
            inputs.append(None)
            fns.append(None)
    stamped = [x for x in _tensors(ctx)]
    node = Node(name, tuple(inputs), tuple(fns), backward, ctx, stamped)
    views.assign(self, node)
    return self


def _tensors(ctx):
    for x in ctx if isinstance(ctx, tuple) else (ctx,):
        if isinstance(x, Tensor):
            yield x
        elif isinstance(x, tuple):
            yield from _tensors(x)


def _is_advanced(key):
    for k in key if isinstance(key, tuple) else (key,):
        if isinstance(k, (Tensor, list, bool, range)) or (
                hasattr(k, "__array__") and getattr(k, "ndim", 0) > 0):
            return True
    return False


# ---- item assignment and copy_ (the C hooks) -------------------------------------------------

def _zero_at(g, key):
    gz = g.clone()
    gz[key] = 0.0
    return gz


def _setitem_backward(ctx, g):
    key, vshape, accumulate = ctx
    gs = g if accumulate else _zero_at(g, key)
    gv = None if vshape is None else unbroadcast(g[key], vshape)
    return gs, gv


def setitem_grad(self, key, value):
    """t[key] = value with autograd: the hook of csrc/bindings/tensor_operators.c (the
    backward indexes the gradient with the same key, read the same way)."""
    vshape = tuple(value.shape) if isinstance(value, Tensor) else None
    name = "IndexPut" if _is_advanced(key) else "CopySlices"
    return _write(self, name, lambda: self.__setitem__(key, value),
                  (value if isinstance(value, Tensor) else None,), _setitem_backward,
                  (key, vshape, False))


def _copy_backward(ctx, g):
    shape, device = ctx
    gs = unbroadcast(g, shape)
    if gs.device != device:
        gs = gs.to(device)
    return None, gs


def copy_grad(self, src, non_blocking=False):
    """t.copy_(src) with autograd: the hook of csrc/bindings/tensor_methods.c."""
    return _write(self, "CopyBackwards", lambda: _C.Tensor.copy_(self, src, non_blocking),
                  (src,), _copy_backward, (tuple(src.shape), src.device))


# ---- masked writes ---------------------------------------------------------------------------

def _masked_fill_backward(ctx, g):
    mask, value_shape = ctx
    gs = g.masked_fill(mask, 0.0)
    gv = None
    if value_shape is not None:
        gv = _C.where(mask, g, 0.0).sum().reshape(value_shape)
    return gs, gv


def masked_fill_(self, mask, value, raw):
    vshape = tuple(value.shape) if isinstance(value, Tensor) else None
    return _write(self, "MaskedFill", raw, (value if isinstance(value, Tensor) else None,),
                  _masked_fill_backward, (mask, vshape))


def _masked_scatter_backward(ctx, g):
    mask, shape = ctx
    from .._tensor.create import zeros
    gs = g.masked_fill(mask, 0.0)
    picked = g[mask.expand(g.shape) if tuple(mask.shape) != tuple(g.shape) else mask]
    n = 1
    for d in shape:
        n *= d
    if picked.shape[0] == n:
        return gs, picked.reshape(shape)
    full = zeros((n,), dtype=g.dtype, device=g.device)  # the source's unused tail: zero
    full[:picked.shape[0]] = picked
    return gs, full.reshape(shape)


def masked_scatter_(self, mask, source, raw):
    return _write(self, "MaskedScatter", raw, (source,), _masked_scatter_backward,
                  (mask, tuple(source.shape)))


def index_put_(self, indices, values, accumulate, raw):
    key = tuple(indices)
    vshape = tuple(values.shape) if isinstance(values, Tensor) else None
    return _write(self, "IndexPut", raw, (values if isinstance(values, Tensor) else None,),
                  _setitem_backward, (key, vshape, bool(accumulate)))


# ---- writes along one dimension --------------------------------------------------------------

def _index_copy_backward(ctx, g):
    dim, index, shape, add, alpha = ctx
    picked = g.index_select(dim, index)
    if add:
        return g, picked if alpha == 1 else picked * alpha
    from .._tensor.create import zeros
    return g.index_copy(dim, index, zeros(shape, dtype=g.dtype, device=g.device)), picked


def index_copy_(self, dim, index, source, raw, add=False, alpha=1):
    return _write(self, "IndexAdd" if add else "IndexCopy", raw, (source,),
                  _index_copy_backward, (dim, index, tuple(source.shape), add, alpha))


def _scatter_backward(ctx, g):
    dim, index, add, src_shape = ctx
    gs = g if add else g.scatter(dim, index, value=0.0)
    if src_shape is None:
        return gs, None
    gsrc = g.gather(dim, index)
    if tuple(gsrc.shape) != src_shape:  # src may be larger than index: the rest unused
        from .._tensor.create import zeros
        full = zeros(src_shape, dtype=g.dtype, device=g.device)
        full[tuple(slice(0, n) for n in gsrc.shape)] = gsrc
        gsrc = full
    return gs, gsrc


def scatter_(self, dim, index, src, raw, add=False):
    src_shape = tuple(src.shape) if isinstance(src, Tensor) else None
    return _write(self, "ScatterAdd" if add else "Scatter", raw,
                  (src if src_shape is not None else None,), _scatter_backward,
                  (dim, index, add, src_shape))
