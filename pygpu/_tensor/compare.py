"""Whole-tensor comparisons, as PyTorch's: equal, allclose, isclose, isin, isreal.

isclose is |a - b| <= atol + rtol * |b| elementwise, with PyTorch's infinities (equal ones
are close) and NaN (close to NaN only with equal_nan); allclose and equal reduce on the
device and read back one flag. isin sorts the test elements once and binary-searches them
(searchsorted), so it costs O((n + m) log m), not O(n m)."""
from .. import _C, _dtype
from . import create as _tensor_create

Tensor = _C.Tensor


def _tensor_of(x, like):
    if isinstance(x, Tensor):
        return x
    return _tensor_create.tensor(x, device=like.device)


def equal(input, other):
    """True when both have the same shape and the same elements (dtypes promote)."""
    if getattr(input, "is_quantized", False):  # pygpu/quantization/_quantized.py
        return input.equal(other)
    if tuple(input.shape) != tuple(other.shape):
        return False
    if input.numel() == 0:
        return True
    return bool((input == other).all())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise (a bool tensor)."""
    other = _tensor_of(other, input)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    same = input == other
    if not input.dtype.is_floating_point:
        if input.dtype is _dtype.bool_:
            return same
        diff = (input - other).abs().astype(_dtype.float64)
        return same | (diff <= atol + rtol * other.abs().astype(_dtype.float64))
    if equal_nan:
        same = same | (_C.isnan(input) & _C.isnan(other))
    finite = _C.isfinite(input) & _C.isfinite(other)
    diff = _C.abs(input - other)
    close = finite & (diff <= atol + rtol * _C.abs(other))
    return same | close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """isclose everywhere (one flag read back)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` is one of `test_elements` (a bool tensor of
    elements' shape; either may be a number)."""
    scalar = not isinstance(elements, Tensor)
    if scalar:
        elements = _tensor_create.tensor(elements, device=test_elements.device)
    test = _tensor_of(test_elements, elements).reshape(-1)
    if test.numel() == 0:
        found = _tensor_create.zeros(*elements.shape, dtype=_dtype.bool_,
                                     device=elements.device)
    else:
        srt = test.sort().values
        flat = elements.reshape(-1)
        from .shape import searchsorted
        pos = searchsorted(srt, flat).clamp(max=srt.numel() - 1)
        found = (srt.gather(0, pos) == flat).reshape(elements.shape)
    return ~found if invert else found


def isreal(input):
    """True for every element of a real tensor (pygpu's dtypes are real)."""
    return _tensor_create.ones(*input.shape, dtype=_dtype.bool_, device=input.device)


METHODS = {"equal": equal, "isclose": isclose, "allclose": allclose, "isreal": isreal}
FUNCTIONS = dict(METHODS, isin=isin)
