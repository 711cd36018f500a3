"""Views under autograd, as PyTorch has them: a write through a view rebases its base's
history (CopySlices), and a view whose base was written since is regenerated.

A view made under grad mode knows the tensor it views (Tensor._base, set by the C
bindings: csrc/bindings/autograd.h, pg_ag_note_view), and its node remembers the base's
grad_fn when it was made (Node.base_fn). Then:

- assign(t, node): an in-place write on t (an elementwise op, item assignment, copy_, a
  masked or indexed write: inplace.py, writes.py) recorded as `node`, whose first input is
  t as it was. A tensor that is not a view just takes `node` as its grad_fn. A view's base
  takes a CopySlices node instead: its gradient outside the view's elements goes to the
  base's earlier history, the gradient of the view's elements to `node` (which sends the
  part for the view's old value back through the view's own history, into the base's
  earlier history again). The view then gets a fresh view node over the base's new
  history.
- refresh(t): before a view is used by an op (engine.hold), a view whose base's grad_fn is
  not the one its node was made from (the base, or another view of it, was written in
  place since) gets a fresh view node over the base's current history, as PyTorch
  regenerates a view's grad_fn when its base's version changed.

The geometry of a view within its base (shape, strides, offset in elements) is read from
the two tensors; the base must be contiguous (every result pygpu's ops make is). The three
Functions below move a gradient between a base's shape and the view's elements, each the
other's backward, so all of this is differentiable again (higher_order.py)."""
from .. import _C
from . import engine
from .engine import Node, hold
from .function import Function

Tensor = _C.Tensor


def geometry(view, base):
    """(base shape, view shape, view strides, view offset from the base's first element)."""
    if not base.is_contiguous():
        raise RuntimeError(
            "pygpu rebases the history of an in-place write to a view only when the base is "
            f"contiguous; this view's base (shape {list(base.shape)}, strides "
            f"{list(base.strides)}) is not: clone() the base first")
    off = _C._storage_offset(view) - _C._storage_offset(base)
    return (tuple(base.shape), tuple(view.shape), tuple(view.strides), off)


def _region_of(g, geom):
    base_shape, shape, strides, off = geom
    g = g.contiguous()
    return _C._as_strided(g, shape, strides, _C._storage_offset(g) + off)


class _Region(Function):
    """The view's elements of a tensor of the base's shape."""

    @staticmethod
    def forward(ctx, g, geom):
        ctx.geom = geom
        return _region_of(g, geom).contiguous()

    @staticmethod
    def backward(ctx, gg):
        return _Embed.apply(gg, ctx.geom), None


class _Embed(Function):
    """A tensor of the base's shape, zero outside the view's elements, g inside them."""

    @staticmethod
    def forward(ctx, g, geom):
        from .._tensor.create import zeros
        ctx.geom = geom
        out = zeros(geom[0], dtype=g.dtype, device=g.device)
        _region_of(out, geom).copy_(g)
        return out

    @staticmethod
    def backward(ctx, gg):
        return _Region.apply(gg, ctx.geom), None


class _ZeroRegion(Function):
    """g with the view's elements set to zero (its own backward)."""

    @staticmethod
    def forward(ctx, g, geom):
        ctx.geom = geom
        out = g.contiguous().clone()
        _region_of(out, geom).fill_(0)
        return out

    @staticmethod
    def backward(ctx, gg):
        return _ZeroRegion.apply(gg, ctx.geom), None


def _view_backward(ctx, g):
    return (_Embed.apply(g, ctx),)


def _copy_slices_backward(ctx, g):
    return _ZeroRegion.apply(g, ctx), _Region.apply(g, ctx)


def _view_node(view, base):
    geom = geometry(view, base)
    h, fn = hold(base)
    node = Node("AsStrided", (h,), (fn,), _view_backward, geom, view=True)
    node.base_fn = base.grad_fn
    return node


def refresh(t):
    """Regenerate t's history if its base gained or changed one since t's was made."""
    base = t._base
    fn = t.grad_fn
    if fn is None:
        if not base.requires_grad:
            return
    elif not fn.view or fn.base_fn is base.grad_fn:
        return
    if base.grad_fn is None and not base.requires_grad:
        t._set_grad_fn(None)
        return
    t._set_grad_fn(_view_node(t, base))


def check_writable(t):
    """PyTorch's refusals before an in-place write with autograd on t (after refresh)."""
    base = t._base
    if base is not None:
        if base.grad_fn is None and base.requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in "
                               "an in-place operation.")
    elif t.grad_fn is None and t.requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def assign(t, node):
    """t was written in place; `node` records the write (its first input: t as it was)."""
    base = t._base
    if base is None:
        t._set_grad_fn(node)
        return
    geom = geometry(t, base)
    h, fn = hold(base)  # the base's history before the write
    part = t.detach()   # stands for the view's new values (its dtype, for engine._fit)
    cs = Node("CopySlices", (h, part), (fn, node), _copy_slices_backward, geom)
    base._set_grad_fn(cs)
    t._set_grad_fn(_view_node(t, base))


engine.plug(refresh_view=refresh)
