# test_autograd_extras.py - gradients of the surface ops issue 27 left without one, against
# torch: cumprod (with and without zeros along the dim, every dim).
import numpy as np
import pytest

import pygpu

from _helpers import to_device

CUMPROD_INPUTS = {
    "no_zeros": np.array([[1.5, 2.0, -0.5, 3.0], [0.25, -2.0, 1.5, 4.0]]),
    "zeros": np.array([[1.5, 0.0, -0.5, 3.0], [0.0, 2.0, 0.0, 4.0]]),
    "3d_zeros": np.array([[[1.0, 0.0], [2.0, 3.0]], [[0.0, 0.0], [4.0, -1.0]]]),
}


@pytest.mark.parametrize("name", sorted(CUMPROD_INPUTS))
def test_cumprod_backward_matches_torch(device, name):
    torch = pytest.importorskip("torch")
    a = CUMPROD_INPUTS[name]
    g = np.random.default_rng(3).standard_normal(a.shape)
    for d in range(-1, a.ndim):
        x = to_device(a, device).requires_grad_()
        out = x.cumprod(d)
        out.backward(to_device(g, device))
        tx = torch.tensor(a, requires_grad=True)
        tout = tx.cumprod(d)
        tout.backward(torch.tensor(g))
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_cumprod_module_function_and_dtype(device):
    torch = pytest.importorskip("torch")
    a = CUMPROD_INPUTS["zeros"].astype(np.float32)
    x = to_device(a, device).requires_grad_()
    pygpu.cumprod(x, 1, dtype=pygpu.float64).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    torch.cumprod(tx, 1, dtype=torch.float64).sum().backward()
    assert x.grad.dtype == pygpu.float32
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
