"""unbroadcast: a gradient summed back to its operand's shape, shared by the backward
rules (rules.py, rules_math.py), the Functions that broadcast (_tensor/math.py) and the
expand view (_tensor/views.py): the one place this sum is written."""
from .. import _C


def unbroadcast(g, shape):
    """Sum `g` over the axes broadcasting added or stretched, to get `shape`."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and g.shape[lead + i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


def unbroadcast_like(g, operand):
    """g summed back to `operand`'s shape where the operand is a tensor; None (no gradient)
    where it was a number."""
    return unbroadcast(g, operand.shape) if isinstance(operand, _C.Tensor) else None
