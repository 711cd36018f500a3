# test_autograd_extras.py - gradients of the surface ops issue 27 left without one, against
# torch: cumprod (with and without zeros along the dim, every dim), einsum with '...'.
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
    y = pygpu.cumprod(x, 1, dtype=pygpu.float64)
    assert y.dtype == pygpu.float64
    y.sum().backward()
    # the reference: the cast's backward is the identity, so cumprod with dtype=float64 has the
    # gradient of cumprod on the float64 input (PyTorch 2.11's own backward with a dtype fails
    # in masked_scatter, so the dtype argument is not handed to it)
    tx = torch.tensor(a.astype(np.float64), requires_grad=True)
    ty = torch.cumprod(tx, 1)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    ty.sum().backward()
    assert x.grad.dtype == pygpu.float32
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy().astype(np.float32), rtol=1e-6)


# einsum with '...' (broadcast as PyTorch's), values and gradients against torch
EINSUM = [
    ("...ij,...jk->...ik", (2, 3, 4), (4, 5)),
    ("...ij,...jk", (2, 3, 4), (2, 4, 5)),
    ("b...,b...->b", (2, 3, 4), (2, 3, 4)),
    ("...i,...i->...", (1, 3), (2, 3)),
    ("i...->...", (3, 2, 4), None),
    ("...ij->...ji", (2, 3, 4), None),
    ("...,...", (2, 3), (3,)),
    ("ij...,jk...->ik...", (2, 3, 5), (3, 4, 1)),
]


@pytest.mark.parametrize("eq,sa,sb", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum_ellipsis_matches_torch(device, eq, sa, sb):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(sa)] + ([rng.standard_normal(sb)] if sb else [])
    mine = [to_device(a, device).requires_grad_() for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = pygpu.einsum(eq, *mine), torch.einsum(eq, *theirs)
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    g = rng.standard_normal(tuple(ref.shape))
    out.backward(to_device(g, device))
    ref.backward(torch.tensor(g))
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_einsum_ellipsis_errors_say_what_is_wrong():
    a, b = pygpu.ones(2, 3), pygpu.ones(4, 3)
    # PyTorch's RuntimeError in PyTorch's words (pygpu.ShapeError: a ValueError too)
    with pytest.raises(RuntimeError, match="does not broadcast"):
        pygpu.einsum("...i,...i->...", a, b)
    with pytest.raises(ValueError, match="is more than the number of dimensions"):
        pygpu.einsum("...ijk->...", a)


@pytest.mark.parametrize("slope", [0.01, 0.2])
def test_linear_leaky_relu_in_a_sequential_matches_torch(device, slope):
    # slope 0.01 runs as one fused op (the op table's leaky_relu row); another slope does not
    torch = pytest.importorskip("torch")
    from pygpu import nn
    rng = np.random.default_rng(11)
    x0 = rng.standard_normal((6, 3))
    w0, b0 = rng.standard_normal((5, 3)), rng.standard_normal(5)
    m = nn.Sequential(nn.Linear(3, 5, dtype=pygpu.float64), nn.LeakyReLU(slope)).to(device)
    with pygpu.no_grad():
        m[0].weight.copy_(to_device(w0, device))
        m[0].bias.copy_(to_device(b0, device))
    x = to_device(x0, device).requires_grad_()
    y = m(x)
    assert (y.grad_fn.name == "_Linear") == (slope == 0.01)
    tx = torch.tensor(x0, requires_grad=True)
    tw, tb = torch.tensor(w0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    ty = torch.nn.functional.leaky_relu(tx @ tw.T + tb, slope)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-15)
    g = rng.standard_normal((6, 5))
    y.backward(to_device(g, device))
    ty.backward(torch.tensor(g))
    for mine, ref in ((x.grad, tx.grad), (m[0].weight.grad, tw.grad), (m[0].bias.grad, tb.grad)):
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-12, atol=1e-14)


AS_STRIDED = [((2, 2), (1, 2), 1), ((3, 3), (1, 1), 0), ((4,), (3,), 0), ((2, 3), (4, 1), None),
              ((2, 2), (0, 1), 2)]


@pytest.mark.parametrize("args", AS_STRIDED, ids=[str(a) for a in AS_STRIDED])
@pytest.mark.parametrize("transposed", [False, True])
def test_as_strided_backward_matches_torch(device, args, transposed):
    # overlapping outputs ((3, 3) with strides (1, 1), a zero stride) sum their gradients
    torch = pytest.importorskip("torch")
    a = np.arange(12.0).reshape(3, 4)
    g = np.random.default_rng(1).standard_normal(args[0])
    leaf = to_device(a, device).requires_grad_()
    tleaf = torch.tensor(a, requires_grad=True)
    x, tx = (leaf.t(), tleaf.t()) if transposed else (leaf * 1, tleaf * 1)
    y, ty = x.as_strided(*args), tx.as_strided(*args)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    y.backward(to_device(g, device))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=1e-12)


def test_as_strided_of_an_expanded_tensor_is_refused_under_autograd():
    x = pygpu.ones(1, 3).requires_grad_()
    with pytest.raises(RuntimeError, match="expand"):
        (x * 1).expand(2, 3).as_strided((2,), (1,))


def test_private_grad_is_the_grad_field_as_in_pytorch():
    """Tensor._grad is PyTorch's alias of .grad: A3C's Hogwild workers set a shared model's
    parameters' _grad to their own gradients before the shared optimizer steps."""
    import torch
    for lib in (pygpu, torch):
        p = lib.zeros(3, requires_grad=True)
        g = lib.ones(3)
        assert p._grad is None
        p._grad = g
        assert p.grad is g and p._grad is g
        p.grad = None
        assert p._grad is None
    with pytest.raises(RuntimeError, match="assigning a gradient|assign a gradient"):
        pygpu.zeros(3, requires_grad=True)._grad = pygpu.ones(4)


def test_optimizer_state_of_a_new_parameter_is_an_empty_dict_as_in_pytorch():
    """optimizer.state is PyTorch's defaultdict(dict): a subclass may fill a parameter's state
    before the first step (A3C's SharedAdam: state = self.state[p]; state['step'] = ...)."""
    import torch
    for lib in (pygpu, torch):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.Adam([p], lr=0.1)
        assert p not in opt.state
        state = opt.state[p]
        assert state == {} and p in opt.state and opt.state[p] is state
