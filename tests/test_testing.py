# test_testing.py - torch.testing against torch's: assert_close's verdicts and messages word
# for word (tensors, scalars, nested sequences and mappings, tolerances per dtype, the
# attribute checks), assert_allclose's deprecation, make_tensor's ranges and flags.
import numpy as np
import pytest

import pygpu
import pygpu.testing

torch = pytest.importorskip("torch")
import torch.testing  # noqa: E402

CASES = [  # (actual, expected, kwargs) as NumPy / Python values, built in each library
    ("t", [1.0, 2.0, 3.0], [1.0, 2.5, 3.0], {}),
    ("t", [1.0, 2.0, 3.0], [1.0, 2.0000001, 3.0], {}),
    ("t", [1, 2, 3], [1, 4, 3], {}),
    ("t64", [[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.5]], {}),
    ("t", [[1.0, np.nan]], [[1.0, np.nan]], {}),
    ("t", [[1.0, np.nan]], [[1.0, np.nan]], {"equal_nan": True}),
    ("t", [1.0, np.inf], [1.0, np.inf], {}),
    ("t", [1.0, 2.0], [1.0, 2.1], {"rtol": 0.1, "atol": 0.0}),
    ("t", [1.0, 2.0], [1.0, 2.1], {"rtol": 0.0, "atol": 0.01}),
    ("t", [1.0, 2.0], [1.0, 2.1], {"rtol": 0.0, "atol": 0.01, "msg": "custom"}),
    ("t", [1.0, 2.0], [1.0, 2.1], {"rtol": 0.1}),
    ("t0", 1.0, 2.0, {}),
    ("b0", True, False, {}),
    ("list", [1.0, 2.0], [1.0, 3.0], {}),
    ("dict", {"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 2.5}, {}),
    ("num", 1.0, 1.5, {}),
    ("num", 1, 1, {}),
    ("shape", [1.0, 2.0], [1.0, 2.0, 3.0], {}),
    ("dtype", [1.0, 2.0], [1.0, 2.0], {}),
    ("dtype", [1.0, 2.0], [1.0, 2.0], {"check_dtype": False}),
    ("half", [1.0, 2.0], [1.0, 2.001], {}),
]


def _build(lib, kind, value, second=False):
    if kind in ("t", "shape"):
        return lib.tensor(value)
    if kind == "t64":
        return lib.tensor(value, dtype=lib.float64)
    if kind in ("t0", "b0"):
        return lib.tensor(value)
    if kind == "list":
        return [lib.tensor(v) for v in value]
    if kind == "dict":
        return {k: lib.tensor(v) for k, v in value.items()}
    if kind == "dtype":
        return lib.tensor(value, dtype=lib.float64 if second else lib.float32)
    if kind == "half":
        return lib.tensor(value, dtype=lib.float16)
    return value


def _outcome(lib, kind, a, e, kw):
    try:
        lib.testing.assert_close(_build(lib, kind, a), _build(lib, kind, e, True), **kw)
        return "ok"
    except (AssertionError, ValueError, TypeError) as err:
        return type(err).__name__, str(err)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_assert_close_agrees_with_torch_word_for_word(case):
    kind, a, e, kw = CASES[case]
    assert _outcome(pygpu, kind, a, e, kw) == _outcome(torch, kind, a, e, kw)


def test_assert_close_checks_devices_strides_and_callable_messages():
    with pytest.raises(AssertionError, match="attribute 'device' do not match: cpu != sim:0"):
        pygpu.testing.assert_close(pygpu.ones(2), pygpu.ones(2, device="sim"))
    pygpu.testing.assert_close(pygpu.ones(2), pygpu.ones(2, device="sim"), check_device=False)
    with pytest.raises(AssertionError, match=r"'stride\(\)' do not match: \(3, 1\) != \(1, 2\)"):
        pygpu.testing.assert_close(pygpu.ones(2, 3), pygpu.ones(3, 2).t(), check_stride=True)
    with pytest.raises(AssertionError, match="^wrapped: Tensor-likes are not close!"):
        pygpu.testing.assert_close(pygpu.ones(2), pygpu.zeros(2),
                                   msg=lambda m: "wrapped: " + m)
    with pytest.raises(TypeError, match="No comparison pair was able to handle"):
        pygpu.testing.assert_close(pygpu.ones(2), [1.0, 1.0])
    pygpu.testing.assert_close(np.ones(3), np.ones(3))  # NumPy arrays, as torch takes them


def test_assert_allclose_is_deprecated_and_lenient_about_dtype():
    with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated"):
        pygpu.testing.assert_allclose(pygpu.ones(2), [1.0, 1.0])
    with pytest.warns(FutureWarning), pytest.raises(AssertionError):
        pygpu.testing.assert_allclose(pygpu.ones(2), [1.0, 2.0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool", "float16"])
def test_make_tensor_ranges_and_flags(dtype):
    dt = getattr(pygpu, dtype)
    t = pygpu.testing.make_tensor(50, 4, dtype=dt, device="cpu")
    assert t.shape == (50, 4) and t.dtype == dt
    v = t.to(pygpu.float64).numpy()
    if dtype != "bool":
        lo = 0 if dtype == "uint8" else -9
        assert v.min() >= lo and v.max() <= 9 + (dtype in ("int64", "uint8"))
    t = pygpu.testing.make_tensor((6, 4), dtype=dt, device="sim", low=1, high=3,
                                  exclude_zero=True, noncontiguous=True)
    assert t.device.type == "sim" and not t.is_contiguous() and t.shape == (6, 4)
    if dtype != "bool":
        assert (t.to(pygpu.float64).cpu().numpy() >= 1).all()
    if dtype.startswith("float"):
        assert pygpu.testing.make_tensor(3, dtype=dt, device="cpu",
                                         requires_grad=True).requires_grad
    else:
        with pytest.raises(ValueError, match="requires_grad must be False for integral dtype"):
            pygpu.testing.make_tensor(3, dtype=dt, device="cpu", requires_grad=True)
