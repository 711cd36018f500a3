"""Higher-order gradients: a node's backward under create_graph=True, recorded.

engine.execute runs every backward under grad mode when create_graph=True; this module
gives each node's backward the inputs it needs for that:

- Saved tensors with their history. A node holds detached aliases of its operands and of
  its output (engine.hold: no cycles); here each alias gets its grad_fn back (the
  operand's, or the node itself for its output, as PyTorch's SavedVariable unpacks), so a
  rule such as tanh's g * (1 - out * out) records its dependence on the input through
  `out`. The C-recorded ops' rules (rules.py, rules_math.py) and the Functions whose
  backward is written in tensor ops then need nothing else: their backward is
  differentiable, as PyTorch's derivatives.yaml formulas are.
- A composite for the fused ops. A Function whose backward is one fused C kernel (linear,
  convolution, pooling, batch norm, cross-entropy, attention, the RNN) names a `composite`:
  its forward from differentiable tensor ops. Its gradients are then those of the
  composite, computed with create_graph (partial derivatives: the walk stops at the
  node's own operands), so double backward goes through the composite and the first-order
  backward keeps its one fused kernel.
- PyTorch's error for the rest. A backward marked @once_differentiable runs under
  no_grad, and the gradients it returns get a node that raises "trying to differentiate
  twice a function that was marked with @once_differentiable" if a later backward
  reaches it: when the incoming gradient requires grad (PyTorch's rule), or, for pygpu's
  own fused backwards (function.fused_backward: the RNN), when anything they read does."""
from .. import _C
from . import engine
from .engine import Node, execute, hold
from .grad_mode import enable_grad

Tensor = _C.Tensor


def _attached(alias, fn):
    """A tensor over alias's memory whose grad_fn is fn (alias itself for a leaf)."""
    if fn is None:
        return alias
    t = alias.detach()
    t._set_grad_fn(fn)
    return t


def _live(node):
    """id(alias) -> the alias with its history, for every tensor the node holds."""
    live = {}
    for t, fn in zip(node.inputs, node.fns):
        if t is not None and fn is not None:
            live[id(t)] = _attached(t, fn)
    if node.out_ref is not None:
        live[id(node.out_ref)] = _attached(node.out_ref, node)
    return live


def _swap(items, live):
    return tuple(live.get(id(x), x) if isinstance(x, Tensor) else x for x in items)


def backward(node, g):
    """node's gradients for g, recorded (grad mode is on: engine.execute)."""
    cls = node.cls
    if cls is None:  # a C-recorded op: its rule's ctx is a tuple
        ctx = node.ctx
        if isinstance(ctx, tuple):
            ctx = _swap(ctx, _live(node))
        return node._backward(ctx, g)
    if cls.composite is not None and node.args is not None:
        return _through_composite(node, g)
    once = getattr(cls.backward, "once_differentiable", None)
    if once:
        return _once(node, g, once)
    ctx = node.ctx
    kept = ctx.saved
    live = _live(node)
    ctx.saved = _swap(kept, live)
    swapped = {k: v for k, v in ctx.__dict__.items() if isinstance(v, Tensor) and id(v) in live}
    for k, v in swapped.items():
        setattr(ctx, k, live[id(v)])
    try:
        return node._backward(ctx, g)
    finally:
        ctx.saved = kept
        for k, v in swapped.items():
            setattr(ctx, k, v)


class _Identity:
    """A node that passes its gradient through: the composite's operands hang from one
    each, so the walk can stop at exactly the node's own operands."""


def _through_composite(node, g):
    args = list(node.args)
    targets, where = [], []
    for i, (a, fn) in enumerate(zip(node.inputs, node.fns)):
        if a is None or not (fn is not None or a.requires_grad):
            continue
        ident = Node("Identity", (a,), (fn,), _pass, None)
        t = a.detach()
        t._set_grad_fn(ident)
        args[i] = t
        targets.append(t)
        where.append(i)
    with enable_grad():
        out = node.cls.composite(*args, **(node.kwargs or {}))
        if g.dtype is not out.dtype:
            g = g.astype(out.dtype)
        grads = execute([out], [g], targets, accumulate=False, retain_graph=True,
                        create_graph=True, allow_unused=True, stop_at_inputs=True)
    result = [None] * len(node.inputs)
    for i, gi in zip(where, grads):
        result[i] = gi
    return tuple(result)


def _pass(ctx, g):
    return (g,)


def _once(node, g, when):
    grads = node._backward(node.ctx, g)  # under no_grad (the decorator)
    needs = g.requires_grad or (when == "inputs" and (
        any(fn is not None for fn in node.fns) or
        any(t is not None and t.requires_grad for t in node.inputs)))
    if not needs:
        return grads
    return tuple(_erroring(gi, g) if isinstance(gi, Tensor) else gi for gi in grads)


def _raise(ctx, g):
    raise RuntimeError("trying to differentiate twice a function that was marked with "
                       "@once_differentiable")


def _erroring(gi, g):
    """gi, with a node (PyTorch's Error node) that raises if it is differentiated."""
    h, fn = hold(g)
    out = gi.detach()
    out._set_grad_fn(Node("Error", (h,), (fn,), _raise, None))
    return out


engine.plug(recorded_backward=backward)
