"""A Function with several outputs, on an engine whose nodes have one output each.

A multi-output Function's backward is one node (the "bundle", holding the Function's
operands and its backward); each differentiable output's grad_fn is a small selector node
whose one edge leads to the bundle. A selector hands its output's gradient on as a Slots
object, {output index: gradient}; the engine sums what meets at a node with `+` (its
_pieces.total), and Slots add slot by slot, so when the walk reaches the bundle it holds the
gradient of every output that received one. The bundle then calls the Function's backward
with one gradient per output: zeros for an output that got none (PyTorch's default), or
None after ctx.set_materialize_grads(False). Under create_graph the selectors pass the
recorded gradients on unchanged, so a backward written in differentiable ops has higher
derivatives as a single-output one has."""
from .._tensor import create as _create


class Slots:
    """Gradients of a multi-output Function's outputs, by output index."""
    __slots__ = ("grads",)

    def __init__(self, i, g):
        self.grads = {i: g}

    def __add__(self, other):
        merged = Slots.__new__(Slots)
        merged.grads = dict(self.grads)
        for i, g in other.grads.items():
            merged.grads[i] = g if i not in merged.grads else merged.grads[i] + g
        return merged


class _Placeholder:
    """The selectors' operand: it stands for the bundle's outputs, never for a tensor."""
    requires_grad = True
    _base = None
    grad_fn = None


PLACEHOLDER = _Placeholder()


def select_backward(i, g):
    """A selector's backward (ctx is its output index)."""
    return (Slots(i, g),)


def bundle_backward(run, metas):
    """The bundle's backward: the Slots unpacked into one gradient per output, then `run`
    (the Function's backward, returning a tuple)."""
    def backward(ctx, g):
        got = g.grads if g is not None else {}
        grads = []
        for i, meta in enumerate(metas):
            gi = got.get(i)
            if gi is None and meta is not None and ctx.materialize_grads:
                shape, dtype, device = meta
                gi = _create.zeros(shape, dtype=dtype, device=device)
            grads.append(gi)
        return run(ctx, *grads)
    return backward
