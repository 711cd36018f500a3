# test_relu_inplace.py - nn.functional.relu's inplace argument and nn.ReLU(inplace=True), as
# PyTorch's (issue 45's in-place ReLU): one node written into the input (Tensor.relu_), which
# autograd records; F.relu(x, inplace=True) raised TypeError before and nn.ReLU(inplace=True)
# returned a new tensor, leaving its input as it was.
import numpy as np
import pytest

import pygpu
from pygpu.profiler import profile

torch = pytest.importorskip("torch")


def test_functional_inplace_writes_the_input_in_one_node(device):
    x = np.random.default_rng(0).standard_normal((3, 7, 5)).astype(np.float32)
    px, tx = pygpu.tensor(x, device=device), torch.tensor(x)
    with profile() as prof:
        y = pygpu.nn.functional.relu(px, True)
    assert y is px and [e.name for e in prof.events()
                        if not e.name.startswith("Memcpy")] == ["relu"]
    torch.nn.functional.relu(tx, inplace=True)
    np.testing.assert_array_equal(px.numpy(), tx.numpy())
    assert pygpu.nn.functional.relu(pygpu.tensor(x, device=device)) is not None


def test_module_inplace_and_gradients_match_torch(device):
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float64)
    pw = pygpu.tensor(x, device=device, requires_grad=True)
    tw = torch.tensor(x, requires_grad=True)
    ph, th = pw * 3.0, tw * 3.0
    py, ty = pygpu.nn.ReLU(inplace=True)(ph), torch.nn.ReLU(inplace=True)(th)
    assert py is ph and ty is th
    g = np.random.default_rng(2).standard_normal(x.shape)
    py.backward(pygpu.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(pw.grad.numpy(), tw.grad.numpy())
    not_inplace = pygpu.tensor(x, device=device)
    out = pygpu.nn.ReLU()(not_inplace)
    assert out is not not_inplace and (not_inplace.numpy() == x).all()


def test_leaf_that_requires_grad_refuses_as_torch():
    w = pygpu.randn(5, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        pygpu.nn.functional.relu(w, inplace=True)
