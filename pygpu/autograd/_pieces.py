"""Gradients made of slices: the engine's lazy sum of narrow's (and split's, chunk's)
backward.

A narrow's backward is zeros of its input's shape with the gradient written into the slice.
split(x) is one narrow per piece, so x's gradient used to be, per piece, a zero fill and a
copy, then an addition per further piece: for a transformer's q, k, v split of a (B, T, 3C)
projection, three fills, three copies and two additions of the whole (B, T, 3C) buffer
(PyTorch's SplitBackward is one concatenation). Here the engine keeps a narrow's gradient as
its piece while the other edges into the same tensor arrive, and writes the sum only when
it is read: pieces that tile the tensor along one axis are copied into one buffer that is
never zeroed; pieces that do not overlap are copied into zeros, others added; pieces of
differing dtype or device sum as before. Only outside create_graph (a recorded backward
composes its own ops) and without tensor hooks (a hook sees each edge's gradient as
PyTorch passes it).

A view's backward opts in by carrying `pieces = (shape, dim, start, length, place)`:
back(g) is zeros(shape) with g written into place(zeros) (pygpu/_tensor/views.py's narrow)."""
from .._tensor import create as _tensor_create


class Pieces:
    """The gradient of one tensor still kept as slices: [(piece, g)], piece a view
    backward's `pieces` tuple."""
    __slots__ = ("items",)

    def __init__(self, piece, g):
        self.items = [(piece, g)]

    def tensor(self):
        items = self.items
        g0 = items[0][1]
        if any(g.dtype is not g0.dtype or g.device != g0.device for _, g in items):
            out = None
            for (shape, _, _, _, place), g in items:  # as the backwards would have: summed
                one = _tensor_create.zeros(shape, dtype=g.dtype, device=g.device)
                place(one)[...] = g
                out = one if out is None else out + one
            return out
        shape = items[0][0][0]
        disjoint, covers = _layout(items)
        make = _tensor_create.empty if covers else _tensor_create.zeros
        out = make(shape, dtype=g0.dtype, device=g0.device)
        for (_, _, _, _, place), g in items:
            view = place(out)
            if disjoint:
                view[...] = g
            else:
                view += g
        return out


def _layout(items):
    """(disjoint, covers): whether the pieces overlap nowhere (all along one axis), and
    whether they also cover the whole tensor."""
    shape, dim = items[0][0][0], items[0][0][1]
    if any(p[1] != dim for p, _ in items):
        return False, False
    spans = sorted((p[2], p[3]) for p, _ in items)
    at, gaps = 0, False
    for start, length in spans:
        if start < at:
            return False, False
        gaps = gaps or start > at
        at = start + length
    return True, not gaps and at == shape[dim]


def piece_for(node, g):
    """The node's piece when its backward is a narrow's and g is the slice it expects (the
    input's dtype, the slice's shape), else None."""
    piece = getattr(getattr(node.ctx, "back", None), "pieces", None)
    if piece is None:
        return None
    t, d = node.inputs[0], piece[1]
    if t is None or g.dtype is not t.dtype:
        return None
    return piece if g.shape == t.shape[:d] + (piece[3],) + t.shape[d + 1:] else None


def add(prev, piece, g):
    """prev (None, a Tensor or Pieces) plus the narrow backward of g."""
    if prev is None:
        return Pieces(piece, g)
    if type(prev) is Pieces:
        prev.items.append((piece, g))
        return prev
    return prev + Pieces(piece, g).tensor()


def total(prev, g):
    """prev (None, a Tensor or Pieces) plus the Tensor g."""
    if prev is None:
        return g
    if type(prev) is Pieces:
        prev = prev.tensor()
    return prev + g
