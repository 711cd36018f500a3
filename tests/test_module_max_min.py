# test_module_max_min.py - module-level pygpu.max / pygpu.min with torch.max's forms:
# (x) the extreme element, (x, dim[, keepdim]) a (values, indices) namedtuple, (x, other)
# the elementwise extreme; pygpu's older (x, axis=, keepdims=) still gives the values.
import numpy as np
import pytest

import pygpu

from _helpers import to_device

X = np.array([[3.0, -1.0, 7.0, 7.0], [0.5, 2.0, -4.0, 9.0], [1.0, 1.0, 1.0, 1.0]])


@pytest.mark.parametrize("op", ["max", "min"])
def test_module_max_min_take_torchs_forms(op, device):
    torch = pytest.importorskip("torch")
    t, tt = to_device(X, device), torch.tensor(X)
    mine, theirs = getattr(pygpu, op), getattr(torch, op)
    for args, kwargs in [((1,), {}), ((0, True), {}), ((), {"dim": -1}),
                         ((), {"dim": 1, "keepdim": True})]:
        got, ref = mine(t, *args, **kwargs), theirs(tt, *args, **kwargs)
        assert type(got).__name__ == op and got._fields == ("values", "indices")
        np.testing.assert_array_equal(got.values.numpy(), ref.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), ref.indices.numpy())
    whole = mine(t)
    assert whole.shape == () and whole.item() == theirs(tt).item()
    other = to_device(np.zeros_like(X), device)
    np.testing.assert_array_equal(mine(t, other).numpy(), theirs(tt, torch.zeros(3, 4)).numpy())
    # pygpu's older spelling: values only
    np.testing.assert_array_equal(mine(t, axis=1).numpy(), getattr(np, op)(X, axis=1))
    np.testing.assert_array_equal(mine(t, axis=0, keepdims=True).numpy(),
                                  getattr(np, op)(X, axis=0, keepdims=True))


def test_module_max_dim_backward_matches_torch(device):
    torch = pytest.importorskip("torch")
    t = to_device(X, device).requires_grad_()
    tt = torch.tensor(X, requires_grad=True)
    pygpu.max(t, 1).values.sum().backward()
    torch.max(tt, 1).values.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), tt.grad.numpy())
