"""clamp / clip (and the in-place clamp_ / clip_), written once: min(max(x, lo), hi), either
bound None (not both), the bounds Tensors or numbers. NaN stays NaN; min > max gives max,
as PyTorch.

The fork (_common.fused): two number bounds (not NaN) on a float32/float64 tensor whose
backend has the CLAMP node are that one node (one pass), where nothing is recorded;
elsewhere maximum then minimum, whose rows record their own backward (a bound that
requires grad gets its share). clamp_ under autograd (the tensor or a bound requires
grad) is the out-of-place clamp of a copy written back with copy_, which autograd records
(pygpu/autograd/writes.py), so the tensor's history goes through the clamp."""
from .. import _C
from ..autograd.grad_mode import is_grad_enabled
from ._common import fused

Tensor = _C.Tensor


def _checked(x, lo, hi, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} expects a pygpu.Tensor, got {type(x).__name__}")
    if lo is None and hi is None:
        raise RuntimeError(f"{name}: at least one of 'min' or 'max' must not be None")


def _one_node(x, lo, hi):
    """Two number bounds (int or float, not bool, not NaN) on a backend with CLAMP."""
    return (type(lo) in (int, float) and type(hi) in (int, float) and lo == lo and hi == hi
            and fused("CLAMP", x))


def _clamp(x, lo, hi, name):
    _checked(x, lo, hi, name)
    if _one_node(x, lo, hi) and not (x.requires_grad and is_grad_enabled()):
        return _C._clamp(x, float(lo), float(hi))
    out = x if lo is None else _C.maximum(x, lo)
    return out if hi is None else _C.minimum(out, hi)


def _clamp_(x, lo, hi, name):
    _checked(x, lo, hi, name)
    if is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in (x, lo, hi)):
        return x.copy_(_clamp(x.clone(), lo, hi, name))  # recorded (the clone keeps x's values)
    if _one_node(x, lo, hi):
        return _C._clamp(x, float(lo), float(hi), True)
    if lo is not None:  # checks x against both bounds before it writes
        _C._clamp_bound_(x, lo, False, name, hi)
    if hi is not None:
        _C._clamp_bound_(x, hi, True, name)
    return x


def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's keywords
    """clamp(input, min=None, max=None): each element into [min, max] (Tensors or numbers;
    NaN stays NaN)."""
    return _clamp(input, min, max, "clamp")


def clip(input, min=None, max=None):  # noqa: A002
    """clip(input, min=None, max=None): clamp's other name."""
    return _clamp(input, min, max, "clip")


def _method(name, fn):
    def method(self, min=None, max=None):  # noqa: A002
        return fn(self, min, max, name)
    method.__name__ = name
    method.__doc__ = (f"{name}(min=None, max=None): each element into [min, max] (Tensors or "
                      "numbers)" + (", in place (into self)" if name.endswith("_") else ""))
    return method


METHODS = {name: _method(name, _clamp_ if name.endswith("_") else _clamp)
           for name in ("clamp", "clip", "clamp_", "clip_")}
FUNCTIONS = {"clamp": clamp, "clip": clip}
