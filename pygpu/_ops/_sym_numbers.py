"""torch's sym_* functions (sym_int, sym_float, sym_max, sym_min, sym_not, sym_sqrt,
sym_sum, sym_ite, sym_fresh_size, sym_constrain_range, sym_constrain_range_for_size).

In PyTorch they keep a symbolic shape symbolic while torch.compile traces; on a concrete
number they are Python's own arithmetic, with PyTorch's type rules and checks. pygpu has no
symbolic shapes (every size is a concrete int), so this concrete behaviour is all of their
semantics here: sym_max(2, 3.5) is 3.5, a mixed int/float pair gives a float, sym_ite wants
a bool and two values of one type, and the range checks raise PyTorch's RuntimeError."""
import builtins
import math

import numpy as np

from .. import _C

_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)
_INT_MAX = 9223372036854775807


def sym_int(a):
    """int(a): a float truncated toward zero."""
    return builtins.int(a)


def sym_float(a):
    return builtins.float(a)


def _minmax(fn, a, b):
    if isinstance(a, _C.Tensor) or not isinstance(a, _NUMBERS):
        raise AssertionError(f"expected {_NUMBERS}, got {type(a)}")
    if not isinstance(b, _NUMBERS):
        raise AssertionError(f"expected {_NUMBERS}, got {type(b)}")
    r = fn(a, b)
    if isinstance(a, (np.floating, builtins.float)) or isinstance(b, (np.floating,
                                                                      builtins.float)):
        return builtins.float(r)
    return r


def sym_max(a, b):
    """max(a, b), a float when either is one."""
    return _minmax(builtins.max, a, b)


def sym_min(a, b):
    """min(a, b), a float when either is one."""
    return _minmax(builtins.min, a, b)


def sym_not(a):
    """not a (a tensor: its logical not)."""
    if isinstance(a, _C.Tensor):
        return _C.logical_not(a)
    return not a


def sym_sqrt(a):
    return math.sqrt(a)


def sym_sum(args):
    return builtins.sum(args)


def sym_ite(b, t, f):
    """t if b else f: b a bool, t and f of one type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_fresh_size(expr):
    """A size as a plain int (a fresh unbacked size while PyTorch traces)."""
    return builtins.int(expr)


def sym_constrain_range(size, min=None, max=None):  # noqa: A002 - PyTorch's names
    """Check that the size lies in [min, max] (no bound where None)."""
    lo = -_INT_MAX - 1 if min is None else min
    hi = _INT_MAX if max is None else max
    if isinstance(size, builtins.int) and not lo <= size <= hi:
        raise RuntimeError(f"Invalid value range for {size} between [{lo}, {hi}].")


def sym_constrain_range_for_size(size, min=None, max=None):  # noqa: A002
    """Check that a size is one: in [max(min, 0), max]."""
    lo = 0 if min is None else builtins.max(min, 0)
    hi = _INT_MAX if max is None else max
    if isinstance(size, builtins.int) and not lo <= size <= hi:
        raise RuntimeError(f"Invalid value range for {size} between [{lo}, {hi}].")


FUNCTIONS = {name: globals()[name] for name in (
    "sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum", "sym_ite",
    "sym_fresh_size", "sym_constrain_range", "sym_constrain_range_for_size")}
