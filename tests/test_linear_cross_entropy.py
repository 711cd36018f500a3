# test_linear_cross_entropy.py - PyTorch 2.13's newer nn names, against torch on every
# device: F.linear_cross_entropy (the reference path and the chunked one of
# LinearCrossEntropyOptions, values and gradients for every reduction, class weights,
# ignore_index, K-dimensional weights), nn.LinearCrossEntropyLoss (its flat Linear and
# state_dict keys), the options' checks; F.grouped_mm's four operand forms; and
# optim.swap_in_optimizer_params_and_state (steps on the swapped-in tensors and state,
# everything restored after, PyTorch's checks). Also the small names is_distributed,
# slice_inverse and has_spectral.
import copy
import warnings

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(17)


def P(t, device, grad=False):
    if t is None:
        return None
    a = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    return pygpu.tensor(a, device=device, requires_grad=grad)


N, IN, C = 10, 4, 7


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("chunked", [False, True])
def test_linear_cross_entropy_matches_torch(device, reduction, weighted, chunked):
    x = torch.tensor(rng.standard_normal((N, IN)), requires_grad=True)
    W = torch.tensor(rng.standard_normal((C, IN)), requires_grad=True)
    b = torch.tensor(rng.standard_normal(C), requires_grad=True)
    t = torch.tensor(rng.integers(0, C, N))
    kw = {"reduction": reduction}
    if weighted:
        kw.update(weight=torch.tensor(rng.uniform(size=C)), ignore_index=2)
        t[3] = 2
    else:
        t[3] = -100  # the default ignore_index (None: cross_entropy's -100)
    opts = (torch.nn.LinearCrossEntropyOptions(batch_chunk_size=3) if chunked else None,
            pygpu.nn.LinearCrossEntropyOptions(batch_chunk_size=3) if chunked else None)
    ref = TF.linear_cross_entropy(x, W, t, linear_bias=b, options=opts[0], **kw)
    gref = torch.autograd.grad(ref.sum(), (x, W, b))
    px, pW, pb = (P(v, device, True) for v in (x, W, b))
    pkw = dict(kw, weight=P(kw.get("weight"), device)) if weighted else kw
    out = pygpu.nn.functional.linear_cross_entropy(px, pW, P(t, device), linear_bias=pb,
                                                   options=opts[1], **pkw)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    for g, r in zip(pygpu.autograd.grad(out.sum(), (px, pW, pb)), gref):
        np.testing.assert_allclose(g.numpy(), r.numpy(), atol=1e-12)


def test_linear_cross_entropy_module_and_k_dims(device):
    torch.manual_seed(0)
    tm = torch.nn.LinearCrossEntropyLoss(IN, C, out_features=(3,), bias=True,
                                         dtype=torch.float64)
    pm = pygpu.nn.LinearCrossEntropyLoss(IN, C, out_features=(3,), bias=True,
                                         dtype=pygpu.float64, device=device)
    assert list(pm.state_dict()) == list(tm.state_dict()) == ["linear.weight", "linear.bias"]
    assert repr(pm) == repr(tm)
    pm.load_state_dict({k: P(v, device) for k, v in tm.state_dict().items()})
    x = torch.tensor(rng.standard_normal((5, IN)))
    t = torch.tensor(rng.integers(0, C, (5, 3)))
    np.testing.assert_allclose(pm(P(x, device), P(t, device)).item(), tm(x, t).item(),
                               rtol=1e-12)
    with pytest.raises(RuntimeError, match="expected weight shape"):
        pygpu.nn.LinearCrossEntropyLoss(IN, C, weight=pygpu.ones(3))


def test_linear_cross_entropy_errors_and_options():
    x, W = pygpu.zeros(N, IN), pygpu.zeros(C, IN)
    with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2"):
        pygpu.nn.functional.linear_cross_entropy(pygpu.zeros(2, 2, IN), W, pygpu.zeros(2))
    with pytest.raises(RuntimeError, match="expected equal input and linear_weight last"):
        pygpu.nn.functional.linear_cross_entropy(x, pygpu.zeros(C, 3), pygpu.zeros(N))
    for bad in (dict(acc_policy="fast"), dict(chunking_method="rows"),
                dict(batch_chunk_size=0)):
        with pytest.raises(ValueError):
            torch.nn.LinearCrossEntropyOptions(**bad)
        with pytest.raises(ValueError):
            pygpu.nn.LinearCrossEntropyOptions(**bad)
    t = pygpu.randint(0, C, (N,))
    with pytest.warns(UserWarning, match="``options`` ignored"):
        pygpu.nn.functional.linear_cross_entropy(x, W, t, label_smoothing=0.1,
                                                 options=pygpu.nn.LinearCrossEntropyOptions())


GROUPED = [((6, 16), (3, 16, 8), [2, 2, 5]), ((3, 6, 16), (3, 16, 8), None),
           ((3, 6, 16), (16, 24), [8, 16, 24]), ((6, 32), (32, 8), [16, 32])]


@pytest.mark.parametrize("a_shape,b_shape,offs", GROUPED, ids=["2x3", "3x3", "3x2", "2x2"])
def test_grouped_mm_matches_torch(device, a_shape, b_shape, offs):
    a = torch.tensor(rng.standard_normal(a_shape), dtype=torch.float32)
    b = torch.tensor(rng.standard_normal(b_shape), dtype=torch.float32)
    b = b.transpose(-2, -1).contiguous().transpose(-2, -1)  # the layout torch's kernel wants
    o = None if offs is None else torch.tensor(offs, dtype=torch.int32)
    ref = TF.grouped_mm(a, b, offs=o)
    out = pygpu.nn.functional.grouped_mm(P(a, device), P(b, device), offs=P(o, device))
    assert tuple(out.shape) == tuple(ref.shape)
    rows = slice(None) if offs is None or len(a_shape) != 2 or len(b_shape) != 3 \
        else slice(0, offs[-1])  # rows past offs[-1] are unspecified in torch
    np.testing.assert_allclose(out.numpy()[rows], ref.numpy()[rows], rtol=1e-5, atol=1e-5)


def test_grouped_mm_errors():
    a, b = pygpu.zeros(6, 16), pygpu.zeros(3, 16, 8)
    with pytest.raises(RuntimeError, match="Have to provide offsets"):
        pygpu.nn.functional.grouped_mm(a, b)
    with pytest.raises(RuntimeError, match="Have to provide offsets"):
        TF.grouped_mm(torch.zeros(6, 16), torch.zeros(3, 16, 8))
    with pytest.raises(RuntimeError, match="output dtype must match"):
        pygpu.nn.functional.grouped_mm(a, b, offs=pygpu.tensor([2, 4, 6], dtype=pygpu.int32),
                                       out_dtype=pygpu.float64)


def _swap(lib, name):
    w0 = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    b0 = np.ones(3, np.float32)
    w = lib.tensor(w0.copy(), requires_grad=True)
    b = lib.tensor(b0.copy(), requires_grad=True)
    kw = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
    opt = getattr(lib.optim, name)([{"params": [w]}, {"params": [b], "lr": 0.05}], **kw)
    (w.sum() * 2 + (b * b).sum()).backward()
    opt.step()
    sd = opt.state_dict()
    swap_sd = {"state": {k: {kk: (vv.clone() if isinstance(vv, lib.Tensor) else vv)
                             for kk, vv in v.items()} for k, v in sd["state"].items()},
               "param_groups": copy.deepcopy(sd["param_groups"])}
    swap_sd["param_groups"][0]["lr"] = 1.0
    fw = lib.tensor(w0.copy(), requires_grad=True)
    fb = lib.tensor(b0.copy(), requires_grad=True)
    fw.grad, fb.grad = lib.ones(2, 3), lib.ones(3)
    live_w = w.detach().clone()
    groups = opt.param_groups[0]["params"]
    with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": fw, "b": fb}, swap_sd):
        assert opt.param_groups[0]["lr"] == 1.0 and opt.param_groups[0]["params"][0] is fw
        opt.step()
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"] is groups
    assert (w.detach() == live_w).all().item()  # the live parameter was not stepped
    errors = []
    for bad in ({"w": fw}, ):  # too few tensors for the groups
        try:
            with lib.optim.swap_in_optimizer_params_and_state(opt, bad, swap_sd):
                pass
        except RuntimeError as e:
            errors.append(str(e))
    return fw.detach().numpy(), fb.detach().numpy(), swap_sd["state"][0], errors


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_swap_in_optimizer_params_and_state(name):
    tw, tb, tstate, terr = _swap(torch, name)
    pw, pb, pstate, perr = _swap(pygpu, name)
    # float32 steps of lr 1.0: the optimizers' own rounding differs by a few ulps per step
    np.testing.assert_allclose(pw, tw, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pb, tb, rtol=1e-4, atol=1e-5)
    for key, value in tstate.items():  # the swapped-in state's tensors stepped in place
        if key != "step":
            np.testing.assert_allclose(pstate[key].numpy(), value.numpy(), rtol=1e-4,
                                       atol=1e-6)
    assert perr == terr and perr


def test_swap_in_needs_initialized_state():
    w = pygpu.zeros(2, requires_grad=True)
    opt = pygpu.optim.SGD([w], lr=0.1)
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        with pygpu.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, opt.state_dict()):
            pass


def test_small_names(device):
    base = pygpu.arange(6.0, device=device)
    view = base[1:4]
    for inv in (pygpu.slice_inverse(view, base, 0, 1, 4), view.slice_inverse(base)):
        assert tuple(inv.shape) == (6,) and inv.data_ptr() == base.data_ptr()
        np.testing.assert_array_equal(inv.numpy(), np.arange(6.0))
    tb = torch.arange(6.0)
    np.testing.assert_array_equal(torch.slice_inverse(tb[1:4], tb, 0, 1, 4).numpy(),
                                  np.arange(6.0))
    assert pygpu.is_distributed(base) is False and base.is_distributed() is False
    assert torch.is_distributed(tb) is False
    assert pygpu.has_spectral is True and torch.has_spectral is True
