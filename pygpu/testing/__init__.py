"""torch.testing: assert_close, make_tensor and the deprecated assert_allclose, with
PyTorch's default tolerances per dtype, its checks (shape, dtype, device, layout, stride)
and its messages word for word, so a test suite written against torch runs unchanged.

The values are compared on the host (a device tensor is read back, counted as any read):
|actual - expected| <= atol + rtol * |expected| elementwise, NaN equal to NaN only with
equal_nan, infinities equal to themselves. Inputs may be tensors, NumPy arrays, Python
numbers, and sequences or mappings of them (compared item by item; the message says which
item failed)."""
import collections.abc
import math
import numbers

import numpy as np

from .. import _C, _dtype, _dtype_info
from .._tensor import create as _create
from ._filecheck import FileCheck

__all__ = ["assert_close", "assert_allclose", "make_tensor", "FileCheck"]

Tensor = _C.Tensor

# (rtol, atol) by dtype, PyTorch's defaults (torch/testing/_comparison.py); other dtypes 0, 0
_TOLERANCES = {
    _dtype.float16: (1e-3, 1e-5), _dtype.bfloat16: (1.6e-2, 1e-5),
    _dtype.float32: (1.3e-6, 1e-5), _dtype.float64: (1e-7, 1e-7),
    _dtype.complex64: (1.3e-6, 1e-5), _dtype.complex128: (1e-7, 1e-7),
}


class _Failure(Exception):
    """A mismatch: the exception type to raise, its message, and the item's path."""

    def __init__(self, kind, msg):
        super().__init__(msg)
        self.kind, self.msg, self.where = kind, msg, ""


def _tolerances(dtypes, rtol, atol):
    if (rtol is None) ^ (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but "
                         f"got no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    r, a = zip(*(_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes))
    return max(r), max(a)


def _host(t):
    """A NumPy array of t's values in the precision the comparison uses."""
    if t.dtype in (_dtype.float16, _dtype.bfloat16):
        t = t.to(_dtype.float32)
    return np.asarray(t.detach().cpu().numpy())


def _fmt(x):
    return repr(x.item() if isinstance(x, np.generic) else x)


def _compare_values(a, e, rtol, atol, equal_nan, scalar, exact):
    """Raise _Failure(AssertionError) with PyTorch's message if a and e are not close."""
    shown = (a.reshape(()).item(), e.reshape(()).item()) if scalar else None
    if a.dtype == np.bool_:
        a, e = a.astype(np.int64), e.astype(np.int64)
    close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan) if not exact \
        else ((a == e) | (equal_nan & np.isnan(a) & np.isnan(e)) if a.dtype.kind in "fc"
              else a == e)
    if np.all(close):
        return
    what = ("Scalars" if scalar else "Tensor-likes") + (" are not equal!" if exact
                                                        else " are not close!")
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.abs(a - e) if a.dtype.kind != "u" else \
            np.abs(a.astype(np.int64) - e.astype(np.int64))
        rel = diff / np.abs(e)
    bound = "" if exact else " (up to {} allowed)"
    if scalar:
        av, ev = a.reshape(()).item(), e.reshape(()).item()
        d = abs(av - ev)
        r = d / abs(ev) if ev != 0 else math.inf if d else math.nan
        lines = [f"Expected {shown[1]} but got {shown[0]}.", f"Absolute difference: {d}"
                 + bound.format(atol), f"Relative difference: {r}" + bound.format(rtol)]
    else:
        mismatched = int(np.sum(~close))
        total = close.size
        masked = np.where(close, 0, diff)
        masked_rel = np.where(close, 0, np.nan_to_num(rel, nan=0.0) if not np.isnan(diff).any()
                              else rel)
        ia = np.unravel_index(int(np.nanargmax(masked)) if not np.isnan(masked).all() else 0,
                              close.shape)
        ir = np.unravel_index(int(np.nanargmax(masked_rel)) if not np.isnan(masked_rel).all()
                              else 0, close.shape)
        nan_abs = np.isnan(masked).any()
        va = float("nan") if nan_abs else masked[ia]
        vr = float("nan") if nan_abs else masked_rel[ir]
        if nan_abs:
            ia = ir = np.unravel_index(int(np.argmax(np.isnan(masked))), close.shape)
        lines = [f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})",
                 f"Greatest absolute difference: {_fmt(va)} at index {tuple(int(i) for i in ia)}"
                 + bound.format(atol),
                 f"Greatest relative difference: {_fmt(vr)} at index {tuple(int(i) for i in ir)}"
                 + bound.format(rtol)]
    raise _Failure(AssertionError, what + "\n\n" + "\n".join(lines))


def _attr(name, a, e):
    if a != e:
        raise _Failure(AssertionError, f"The values for attribute '{name}' do not match: "
                                       f"{a} != {e}.")


def _item(actual, expected, where, opts):
    try:
        _compare(actual, expected, opts)
    except _Failure as f:
        f.where = where + f.where
        raise


def _compare(actual, expected, opts):
    if isinstance(actual, (Tensor, np.ndarray)) or isinstance(expected, (Tensor, np.ndarray)):
        both_t = isinstance(actual, Tensor) and isinstance(expected, Tensor)
        both_np = isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray)
        if not (both_t or both_np):
            raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type "
                                      f"{type(actual)} and {type(expected)}.")
        if both_np:
            actual, expected = _create.tensor(actual), _create.tensor(expected)
        if not opts["allow_subclasses"] and type(actual) is not type(expected):
            raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type "
                                      f"{type(actual)} and {type(expected)}.")
        _attr("shape", actual.shape, expected.shape)
        if opts["check_device"]:
            _attr("device", actual.device, expected.device)
        if opts["check_dtype"]:
            _attr("dtype", actual.dtype, expected.dtype)
        if opts["check_stride"] and actual.numel() > 0:
            _attr("stride()", actual.stride(), expected.stride())
        rtol, atol = _tolerances([actual.dtype, expected.dtype], opts["rtol"], opts["atol"])
        _compare_values(_host(actual), _host(expected), rtol, atol, opts["equal_nan"],
                        actual.ndim == 0, rtol == 0 and atol == 0)
        return
    if isinstance(actual, (bool, numbers.Number)) and isinstance(expected,
                                                                (bool, numbers.Number)):
        if type(actual) is not type(expected) and opts["check_dtype"] and not (
                isinstance(actual, numbers.Real) and isinstance(expected, numbers.Real)
                and not isinstance(actual, bool) and not isinstance(expected, bool)
                and isinstance(actual, int) == isinstance(expected, int)):
            _attr("type", type(actual), type(expected))
        kind = (_dtype.bool_ if isinstance(actual, bool) else _dtype.int64
                if isinstance(actual, int) else _dtype.complex128
                if isinstance(actual, complex) else _dtype.float64)
        rtol, atol = _tolerances([kind], opts["rtol"], opts["atol"])
        _compare_values(np.asarray(actual), np.asarray(expected), rtol, atol,
                        opts["equal_nan"], True, rtol == 0 and atol == 0)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected,
                                                                  collections.abc.Mapping):
        ka, ke = set(actual), set(expected)
        if ka != ke:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {sorted(ke - ka)}\n"
                           f"Additional keys in the actual mapping: {sorted(ka - ke)}")
        for k in expected:
            _item(actual[k], expected[k], f"[{k!r}]", opts)
        return
    if isinstance(actual, collections.abc.Sequence) and isinstance(
            expected, collections.abc.Sequence) and not isinstance(actual, str):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: "
                                           f"{len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _item(a, e, f"[{i}]", opts)
        return
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type "
                              f"{type(actual)} and {type(expected)}.")


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that actual and expected are close (torch.testing.assert_close)."""
    opts = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                check_device=check_device, check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, opts)
    except _Failure as f:
        text = f.msg
        if f.kind is AssertionError:
            if f.where:
                text += f"\n\nThe failure occurred for item {f.where}"
            if callable(msg):
                text = msg(text)
            elif msg is not None:
                text = msg
        raise f.kind(text) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated in PyTorch for assert_close (it warns the same way)."""
    import warnings
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = _create.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = _create.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _tolerances([actual.dtype, expected.dtype], None, None)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of `shape` with random values in [low, high) (PyTorch's defaults: -9..9
    for floats and signed ints, 0..10 for uint8; bool either), as torch.testing's."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    if requires_grad and not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError("make_tensor: requires_grad must be False for integral dtype")
    if low is not None and high is not None and low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    rng = np.random.default_rng(int(_create.randint(0, 2 ** 31 - 1, ()).item()))
    n = shape
    if dtype == _dtype.bool_:
        values = rng.integers(0, 2, n).astype(bool)
    elif dtype.is_floating_point or dtype.is_complex:
        lo = -9.0 if low is None else float(low)
        hi = 9.0 if high is None else float(high)
        values = rng.uniform(lo, hi, n)
        if dtype.is_complex:
            values = values + 1j * rng.uniform(lo, hi, n)
    else:
        lo = (0 if dtype == _dtype.uint8 else -9) if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high) if high != int(high) else int(high)
        values = rng.integers(lo, max(hi, lo + 1), n)
    t = _create.tensor(np.asarray(values), dtype=dtype, device=device)
    if exclude_zero:
        eps = 1 if not (dtype.is_floating_point or dtype.is_complex) else \
            (_dtype_info.finfo(dtype).tiny if dtype.is_floating_point else 1e-38)
        t = t.masked_fill(t == 0, eps if dtype != _dtype.bool_ else True)
    if noncontiguous and t.numel() > 1:
        t = t.repeat_interleave(2, dim=-1)[..., ::2]
    if requires_grad:
        t.requires_grad_(True)
    return t
