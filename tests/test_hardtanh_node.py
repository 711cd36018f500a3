# test_hardtanh_node.py - hardtanh and relu6 as one CLAMP node each way (issue 45: they were
# about ten elementwise nodes forward): values and gradients against torch at and around the
# bounds, NaN, equal bounds, float32 and float64, cpu and sim, non-contiguous inputs, the in-place
# spellings, create_graph (the composite backward), 1 and 2 threads, every ISA variant.

import numpy as np
import pytest

import pygpu
from pygpu.nn import functional as F
from pygpu.profiler import profile
from _helpers import run_under_isa

torch = pytest.importorskip("torch")
TF = torch.nn.functional

BOUNDS = [(-1.0, 1.0), (0.0, 6.0), (0.5, 0.5), (-3, 2)]


def _x(dtype, n=4099, seed=0):
    """Values at, just beside and far from every bound, a NaN, and random ones: odd length."""
    r = np.random.default_rng(seed)
    special = [-1, 1, 0, 6, 0.5, -3, 2, np.nan, -np.inf, np.inf, 5.999, 6.001, -1e-7, 1e-7]
    x = np.concatenate([special, r.standard_normal(n - len(special)) * 5])
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lo,hi", BOUNDS)
def test_matches_torch_each_way(device, lo, hi, dtype):
    x = _x(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    px = pygpu.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    py, ty = F.hardtanh(px, lo, hi), TF.hardtanh(tx, lo, hi)
    np.testing.assert_array_equal(py.detach().numpy(), ty.detach().numpy())
    py.backward(pygpu.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(px.grad.numpy(), tx.grad.numpy())


def test_nan_stops_the_gradient_as_torch_vector_kernel():
    """torch's vectorized hardtanh_backward gives 0 at a NaN (its scalar tail, under 16
    elements, passes the gradient): pygpu gives 0 at any length, as its composite did."""
    x = np.full(40, np.nan, dtype=np.float32)
    x[1] = 0.5
    px, tx = pygpu.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    F.relu6(px).backward(pygpu.ones(40))
    TF.relu6(tx).backward(torch.ones(40))
    np.testing.assert_array_equal(px.grad.numpy()[:32], tx.grad.numpy()[:32])
    assert px.grad.numpy()[1] == 1 and (px.grad.numpy()[2:] == 0).all()


def test_one_node_each_way(device):
    x = pygpu.randn(3, 5, 7, device=device).requires_grad_()
    g = pygpu.ones(3, 5, 7, device=device)
    with profile() as prof:
        y = F.relu6(x)
    assert [e.name for e in prof.events() if not e.name.startswith("Memcpy")] == ["clamp"]
    with profile() as prof:
        y.backward(g)
    assert [e.name for e in prof.events()
            if not e.name.startswith("Memcpy")] == ["hardtanh_backward"]


def test_non_contiguous_and_inplace(device):
    x = _x("float32", 4 * 6 * 5).reshape(4, 6, 5)
    px, tx = pygpu.tensor(x, device=device), torch.tensor(x)
    for view in (lambda t: t.transpose(0, 2), lambda t: t[:, ::2, 1:]):
        pv, tv = view(px), view(tx)
        assert not pv.is_contiguous()
        np.testing.assert_array_equal(F.relu6(pv).numpy(), TF.relu6(tv).numpy())
        leaf = pygpu.tensor(x, device=device, requires_grad=True)
        tleaf = torch.tensor(x, requires_grad=True)
        F.hardtanh(view(leaf), -1, 1).sum().backward()
        TF.hardtanh(view(tleaf), -1, 1).sum().backward()
        np.testing.assert_array_equal(leaf.grad.numpy(), tleaf.grad.numpy())
    # in place, without and with autograd
    a, ta = pygpu.tensor(x, device=device), torch.tensor(x)
    assert F.hardtanh_(a, -1, 1) is a
    TF.hardtanh_(ta, -1, 1)
    np.testing.assert_array_equal(a.numpy(), ta.numpy())
    leaf = pygpu.tensor(x, device=device, requires_grad=True)
    tleaf = torch.tensor(x, requires_grad=True)
    y, ty = leaf * 2, tleaf * 2
    F.relu6(y, inplace=True).sum().backward()
    TF.relu6(ty, inplace=True).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), tleaf.grad.numpy())


def test_create_graph_matches_torch():
    """create_graph: the backward is g times a constant mask in recorded ops, so the gradient
    of the gradient with respect to g (the mask) is torch's."""
    x = _x("float64", 50)
    x = x[np.isfinite(x)]
    px, tx = pygpu.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    pg, tg = pygpu.ones(x.shape, dtype=pygpu.float64, requires_grad=True), \
        torch.ones(x.shape, dtype=torch.float64, requires_grad=True)
    (pdx,) = pygpu.autograd.grad(F.relu6(px), px, pg, create_graph=True)
    (tdx,) = torch.autograd.grad(TF.relu6(tx), tx, tg, create_graph=True)
    np.testing.assert_array_equal(pdx.detach().numpy(), tdx.detach().numpy())
    pdx.sum().backward()
    tdx.sum().backward()
    np.testing.assert_array_equal(pg.grad.numpy(), tg.grad.numpy())


def test_modules_and_half_dtypes():
    """nn.ReLU6 runs the node; bfloat16 and float16 run clamp's composite (maximum, minimum)
    with the same gradient: infinities clamp to the bounds (the old composite, x times a
    mask, gave NaN there)."""
    x = _x("float32", 100)
    y = pygpu.nn.ReLU6()(pygpu.tensor(x)).numpy()
    np.testing.assert_array_equal(y, torch.nn.ReLU6()(torch.tensor(x)).numpy())
    for pdt, tdt in ((pygpu.bfloat16, torch.bfloat16), (pygpu.float16, torch.float16)):
        xb = pygpu.tensor(x).astype(pdt).requires_grad_()
        tb = torch.tensor(x).to(tdt).requires_grad_()
        yb, tyb = F.hardtanh(xb, -1, 1), TF.hardtanh(tb, -1, 1)
        np.testing.assert_array_equal(yb.detach().astype(pygpu.float32).numpy(),
                                      tyb.detach().float().numpy())
        yb.sum().backward()
        tyb.sum().backward()
        np.testing.assert_array_equal(xb.grad.astype(pygpu.float32).numpy()[16:],
                                      tb.grad.float().numpy()[16:])


@pytest.fixture
def threads():
    before = pygpu.get_num_threads()
    yield pygpu.set_num_threads
    pygpu.set_num_threads(before)


def test_same_bits_at_1_and_2_threads(threads):
    x = pygpu.tensor(_x("float32", 1 << 20, seed=3), requires_grad=True)
    g = pygpu.tensor(np.random.default_rng(4).standard_normal(1 << 20).astype(np.float32))
    runs = []
    for n in (1, 2):
        threads(n)
        x.grad = None
        y = F.relu6(x)
        y.backward(g)
        runs.append((y.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_every_isa_variant_matches_torch(isa):
    code = ("import test_hardtanh_node as t\n"
            "for lo, hi in t.BOUNDS:\n"
            "    t.test_matches_torch_each_way('cpu', lo, hi, 'float32')\n"
            "t.test_nan_stops_the_gradient_as_torch_vector_kernel()\n")
    run_under_isa(isa, code)
