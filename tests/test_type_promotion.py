# test_type_promotion.py - the dtype of an elementwise op on mixed operands is PyTorch's
# (torch.result_type): tensor with tensor over every pair of dtypes, with a 0-d tensor on
# either side, and tensor with a Python bool, int or float; true division and the
# float-only unary ops of integers give float32 (PyTorch's default dtype), not float64.
import numpy as np
import pytest

import pygpu

from _helpers import to_device

DTYPES = ["bool", "int64", "float32", "float64", "float16", "bfloat16"]


def _ones(lib, dt, shape, device=None):
    if lib is pygpu:
        return pygpu.ones(shape, dtype=getattr(pygpu, dt), device=device)
    return lib.ones(shape, dtype=getattr(lib, dt))


def _name(dtype):
    return str(dtype).replace("torch.", "").replace("pygpu.", "")


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_tensor_with_tensor_matches_torch_result_type(device, a, b):
    torch = pytest.importorskip("torch")
    # each pairing of dimensioned and 0-d operands (a 0-d one counts only by its kind)
    for shapes in [((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())]:
        want = _name(torch.result_type(_ones(torch, a, shapes[0]), _ones(torch, b, shapes[1])))
        x, y = _ones(pygpu, a, shapes[0], device), _ones(pygpu, b, shapes[1], device)
        op = pygpu.logical_or if want == "bool" else pygpu.maximum  # defined for every dtype
        got = op(x, y).dtype
        assert _name(got) == want, (a, b, shapes)
        if "bool" not in (a, b):
            assert _name((x + y).dtype) == want, (a, b, shapes)


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("scalar", [True, 3, 2.5])
def test_tensor_with_python_scalar_matches_torch(device, a, scalar):
    torch = pytest.importorskip("torch")
    want = _name(torch.result_type(_ones(torch, a, (2,)), scalar))
    x = _ones(pygpu, a, (2,), device)
    for got in (pygpu.maximum(x, scalar), pygpu.where(x > 2, x, scalar)):
        assert _name(got.dtype) == want, (a, scalar)
    if a != "bool" and not isinstance(scalar, bool):
        assert _name((x * scalar).dtype) == _name((torch.ones(2, dtype=getattr(torch, a))
                                                   * scalar).dtype)


def test_int64_with_float_is_float32(device):
    i = to_device(np.array([1, 2, 3]), device)
    f = to_device(np.array([0.5, 0.5, 0.5], dtype=np.float32), device)
    assert (i + 0.5).dtype == pygpu.float32
    assert (i + f).dtype == pygpu.float32
    assert (i / i).dtype == pygpu.float32
    assert i.exp().dtype == pygpu.float32
    np.testing.assert_allclose((i + f).numpy(), [1.5, 2.5, 3.5])
    np.testing.assert_allclose((i / 2).numpy(), [0.5, 1.0, 1.5])
