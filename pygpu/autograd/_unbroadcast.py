"""unbroadcast: a gradient summed back to the shape of an operand that broadcasting
stretched. One home for the backward rules of rules.py and rules_math.py (both import
it from here, so neither imports the other)."""


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
