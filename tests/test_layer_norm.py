# test_layer_norm.py - layer_norm's one node each way (LAYER_NORM, sub-ops FWD and BWD:
# csrc/core/pg_ops_norm.c, csrc/backends/cpu/cpu_layer_norm.c, kernels/rows.cu) against
# torch as the oracle, on every device: the values and the three gradients for float32 and
# float64 with every affine form (the half dtypes take the composite: checked too), that
# the backward is that one node, higher-order gradients through the composite, the same
# bits at any thread count, rows of nothing, and the binding's refusals.
import numpy as np
import pytest

import pygpu
from pygpu import _C
from pygpu.nn import functional as F
from pygpu.profiler import profile

torch = pytest.importorskip("torch")

TOL = {"float32": 3e-5, "float64": 1e-10, "bfloat16": 5e-2, "float16": 1e-2}
AFFINE = ("wb", "w", "b", "")


def _run(lib, device, x, w, b, g, C, eps=1e-5):
    """layer_norm of x (a float32/float64 array) and its gradients under the upstream g:
    (y, dx, dw | None, db | None) as arrays."""
    if lib is torch:
        mk = lambda a: torch.tensor(a).requires_grad_()  # noqa: E731
    else:
        mk = lambda a: pygpu.tensor(a, device=device).requires_grad_()  # noqa: E731
    tx = mk(x)
    tw = mk(w) if w is not None else None
    tb = mk(b) if b is not None else None
    y = lib.nn.functional.layer_norm(tx, (C,), tw, tb, eps)
    y.backward(mk(g).detach())
    out = lambda t: None if t is None else t.detach().cpu().numpy()  # noqa: E731
    return out(y), out(tx.grad), out(tw.grad if tw is not None else None), \
        out(tb.grad if tb is not None else None)


def _arrays(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    C = shape[-1]
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    return x, rng.standard_normal(C).astype(dtype), rng.standard_normal(C).astype(dtype), \
        rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", AFFINE)
@pytest.mark.parametrize("shape", [(3, 5), (2, 7, 33), (70, 64), (4, 1)])
def test_values_and_gradients_match_torch(device, dtype, affine, shape):
    x, w, b, g = _arrays(shape, dtype)
    w = w if "w" in affine else None
    b = b if "b" in affine else None
    got = _run(pygpu, device, x, w, b, g, shape[-1])
    want = _run(torch, None, x, w, b, g, shape[-1])
    tol = TOL[dtype]
    for name, p, t in zip(("y", "dx", "dw", "db"), got, want):
        if t is None:
            assert p is None, name
            continue
        scale = np.sqrt(np.prod(shape[:-1]))  # dw, db sum over the rows
        np.testing.assert_allclose(p, t, rtol=tol * 10, atol=tol * 10 * scale, err_msg=name)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_dtypes_compose_and_match_torch(device, dtype):
    x, w, b, g = _arrays((6, 16), "float32", seed=3)
    pd = getattr(pygpu, dtype)
    td = getattr(torch, dtype)
    px = pygpu.tensor(x, device=device).to(dtype=pd).detach().requires_grad_()
    pw = pygpu.tensor(w, device=device).to(dtype=pd).detach().requires_grad_()
    pb = pygpu.tensor(b, device=device).to(dtype=pd).detach().requires_grad_()
    tx, tw, tb = (torch.tensor(a).to(td).requires_grad_() for a in (x, w, b))
    py = F.layer_norm(px, (16,), pw, pb)
    ty = torch.nn.functional.layer_norm(tx, (16,), tw, tb)
    assert py.dtype == pd
    (py.float() * pygpu.tensor(g, device=device)).sum().backward()
    (ty.float() * torch.tensor(g)).sum().backward()
    tol = TOL[dtype] * 4
    for p, t in ((py, ty), (px.grad, tx.grad), (pw.grad, tw.grad), (pb.grad, tb.grad)):
        np.testing.assert_allclose(p.detach().float().cpu().numpy(), t.detach().float().numpy(),
                                   rtol=tol, atol=tol * 4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_backward_is_one_node(device, dtype):
    """forward and backward are one LAYER_NORM node each: no elementwise op runs for them."""
    dt = getattr(pygpu, dtype)
    x = pygpu.randn(8, 3, 16, device=device, dtype=dt).requires_grad_()
    w = pygpu.randn(16, device=device, dtype=dt).requires_grad_()
    b = pygpu.randn(16, device=device, dtype=dt).requires_grad_()
    g = pygpu.randn(8, 3, 16, device=device, dtype=dt)
    y = F.layer_norm(x, (16,), w, b)
    with profile() as prof:
        y.backward(g)
    names = [e.name for e in prof.events() if not e.name.startswith("Memcpy")]
    assert names == ["layer_norm_backward"], names
    assert x.grad.shape == x.shape and w.grad.shape == (16,) and b.grad.shape == (16,)


def test_second_derivatives_match_torch(device):
    """create_graph=True: the gradients of the gradients (through the composite)."""
    x, w, b, g = _arrays((5, 6), "float64", seed=7)
    px = pygpu.tensor(x, device=device).requires_grad_()
    pw = pygpu.tensor(w, device=device).requires_grad_()
    pb = pygpu.tensor(b, device=device).requires_grad_()
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    pg, tg = pygpu.tensor(g, device=device), torch.tensor(g)
    py = F.layer_norm(px, (6,), pw, pb)
    ty = torch.nn.functional.layer_norm(tx, (6,), tw, tb)
    pdx, pdw = pygpu.autograd.grad((py * pg).sum(), (px, pw), create_graph=True)
    tdx, tdw = torch.autograd.grad((ty * tg).sum(), (tx, tw), create_graph=True)
    np.testing.assert_allclose(pdx.detach().cpu().numpy(), tdx.detach().numpy(), atol=1e-10)
    ((pdx * pdx).sum() + (pdw * pdw).sum()).backward()
    ((tdx * tdx).sum() + (tdw * tdw).sum()).backward()
    for p, t in ((px, tx), (pw, tw)):
        np.testing.assert_allclose(p.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-9)


def test_same_bits_at_any_thread_count():
    """dw and db sum the rows' blocks in block order, fixed by the shape: 1 and 2 threads
    agree bit for bit (5000 rows: the 64 blocks' cap, and a cut among threads)."""
    x, w, b, g = _arrays((5000, 40), "float32", seed=5)
    before = pygpu.get_num_threads()
    got = []
    try:
        for th in (1, 2):
            pygpu.set_num_threads(th)
            got.append(_run(pygpu, "cpu", x, w, b, g, 40))
    finally:
        pygpu.set_num_threads(before)
    for a, c in zip(*got):
        np.testing.assert_array_equal(a, c)
    want = _run(torch, None, x, w, b, g, 40)
    np.testing.assert_allclose(got[0][2], want[2], rtol=1e-4, atol=2e-3)


def test_no_rows_gives_zero_weight_and_bias_gradients(device):
    x = pygpu.zeros(0, 4, device=device).requires_grad_()
    w = pygpu.ones(4, device=device).requires_grad_()
    b = pygpu.zeros(4, device=device).requires_grad_()
    F.layer_norm(x, (4,), w, b).sum().backward()
    assert x.grad.shape == (0, 4)
    assert w.grad.tolist() == [0.0] * 4 and b.grad.tolist() == [0.0] * 4


def test_backward_binding_refuses_bad_operands():
    x = pygpu.randn(3, 4)
    y, save = _C._layer_norm_rows(x, None, None, 1e-5, True)
    assert save.shape == (3, 2)
    np.testing.assert_allclose(save.numpy()[:, 0], x.numpy().mean(axis=1), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="grad_output is not shaped as the input"):
        _C._layer_norm_backward(pygpu.randn(3, 5), x, None, save, False, False)
    with pytest.raises(RuntimeError, match=r"saved statistics must be \(3, 2\)"):
        _C._layer_norm_backward(pygpu.randn(3, 4), x, None, save[:2], False, False)
    with pytest.raises(RuntimeError, match="weight has shape"):
        _C._layer_norm_backward(pygpu.randn(3, 4), x, pygpu.randn(5), save, True, False)
    with pytest.raises(TypeError):
        _C._layer_norm_backward(pygpu.randn(3, 4), x, "w", save, True, False)
    with pytest.raises(RuntimeError, match="float64"):
        _C._layer_norm_backward(pygpu.randn(3, 4).double(), x, None, save, False, False)
