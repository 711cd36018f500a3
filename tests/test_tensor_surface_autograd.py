# test_tensor_surface_autograd.py - the autograd extras of issue 27 against PyTorch:
# pygpu.autograd.grad (leaf and non-leaf inputs, grad_outputs, allow_unused, .grad left
# alone), Tensor.register_hook on leaves and non-leaves (a returned tensor replaces the
# gradient; remove() stops it), detach_, retain_graph and backward(gradient) on non-scalars.
import numpy as np
import pytest

import pygpu

from _helpers import OptionalTorch, to_device, to_numpy

torch = OptionalTorch()  # PyTorch is the oracle where installed; tests without it still run

A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])


def _pair(device):
    return to_device(A, device).requires_grad_(), torch.tensor(A, requires_grad=True)


def test_grad_of_leaf_and_non_leaf(device):
    x, tx = _pair(device)
    h, th = x * x, tx * tx
    y, ty = (h.exp() * 0.1).sum(), (th.exp() * 0.1).sum()
    gx, gh = pygpu.autograd.grad(y, [x, h])
    tgx, tgh = torch.autograd.grad(ty, [tx, th])
    np.testing.assert_allclose(to_numpy(gx), tgx.numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(gh), tgh.numpy(), rtol=1e-12)
    assert x.grad is None  # grad() accumulates nothing


def test_grad_with_grad_outputs_and_several_outputs(device):
    x, tx = _pair(device)
    g = np.arange(6.0).reshape(2, 3)
    outs = (x * 3.0, (x * x).sum())
    touts = (tx * 3.0, (tx * tx).sum())
    (gx,) = pygpu.autograd.grad(outs, x, grad_outputs=[to_device(g, device), None])
    (tgx,) = torch.autograd.grad(touts, tx, grad_outputs=[torch.tensor(g), None])
    np.testing.assert_allclose(to_numpy(gx), tgx.numpy())


def test_grad_unused_inputs(device):
    x, _ = _pair(device)
    other = to_device(A, device).requires_grad_()
    y = (x * 2.0).sum()
    with pytest.raises(RuntimeError, match="allow_unused"):
        pygpu.autograd.grad(y, [x, other], retain_graph=True)
    gx, go = pygpu.autograd.grad(y, [x, other], allow_unused=True)
    assert go is None
    np.testing.assert_array_equal(to_numpy(gx), np.full(A.shape, 2.0))


def test_grad_frees_the_graph_unless_retained(device):
    x, _ = _pair(device)
    y = (x.exp()).sum()
    pygpu.autograd.grad(y, x, retain_graph=True)
    pygpu.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="second time"):
        pygpu.autograd.grad(y, x)


def test_register_hook_on_leaf_and_non_leaf(device):
    x, tx = _pair(device)
    seen = []
    z, tz = x * 2.0, tx * 2.0
    z.register_hook(lambda g: g * 10.0)
    tz.register_hook(lambda g: g * 10.0)
    hx = x.register_hook(lambda g: seen.append(to_numpy(g).copy()))
    (z * z).sum().backward()
    (tz * tz).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), tx.grad.numpy())
    np.testing.assert_allclose(seen[0], tx.grad.numpy())
    hx.remove()
    x.grad = None
    (x * 1.0).sum().backward()
    assert len(seen) == 1


def test_register_hook_needs_requires_grad():
    with pytest.raises(RuntimeError):
        pygpu.ones(2).register_hook(lambda g: g)


def test_detach_in_place(device):
    x, _ = _pair(device)
    y = x * 3.0
    assert y.detach_() is y
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(to_numpy(y), A * 3.0)


def test_retain_graph_and_non_scalar_backward(device):
    x, tx = _pair(device)
    y, ty = x * x, tx * tx
    g = np.ones_like(A) * 0.5
    y.backward(to_device(g, device), retain_graph=True)
    y.backward(to_device(g, device))
    ty.backward(torch.tensor(g), retain_graph=True)
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(to_numpy(x.grad), tx.grad.numpy())
