"""The optimizers' multi-tensor step (foreach=/fused=, one MULTI node per group, device and
dtype) and clip_grad_norm_'s fused norm (one MULTI_NORM node), against the single-tensor
path bit for bit and against torch's foreach and fused paths over many steps, on every
device (a device whose backend has no MULTI node, cuda, steps per parameter: checked too)."""
import math

import numpy as np
import pytest

import pygpu
from pygpu import _C, optim
from pygpu.nn.utils import clip_grad_norm_, clip_grad_value_

torch = pytest.importorskip("torch")

# a parameter list of the shape of a small network's: matrices, biases, a norm's scalars
SHAPES = [(64, 48), (64,), (3, 5, 7), (1,), (48,), (40000,)]

CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=1e-3)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, weight_decay=1e-2, amsgrad=True)),
    ("Adam", dict(lr=1e-2, maximize=True)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1)),
    ("AdamW", dict(lr=1e-2, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=1e-3)),
    ("Adagrad", dict(lr=0.1, lr_decay=1e-3, weight_decay=1e-3)),
    ("Adadelta", dict(lr=1.0, weight_decay=1e-3, maximize=True)),
]
FUSED = {"SGD", "Adam", "AdamW", "Adagrad"}  # the ones torch gives fused=


def _ops(device):
    """Nodes launched on `device` so far."""
    return pygpu.stats().per_device.get(str(pygpu.device(device)), {}).get("ops", 0)


def _grads(steps, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]


def _run_pygpu(name, kw, device, grads, init, skip=(), **flags):
    params = [pygpu.tensor(a, device=device).requires_grad_() for a in init]
    opt = getattr(optim, name)(params, **kw, **flags)
    for step in grads:
        for i, (p, g) in enumerate(zip(params, step)):
            p.grad = None if i in skip else pygpu.tensor(g, device=device)
        opt.step()
    return [p.detach().numpy() for p in params], opt


def _run_torch(name, kw, grads, init, skip=(), **flags):
    params = [torch.tensor(a, requires_grad=True) for a in init]
    opt = getattr(torch.optim, name)(params, **kw, **flags)
    for step in grads:
        for i, (p, g) in enumerate(zip(params, step)):
            p.grad = None if i in skip else torch.tensor(g)
        opt.step()
    return [p.detach().numpy() for p in params]


@pytest.mark.parametrize("name,kw", CASES)
def test_multi_tensor_step_is_the_single_tensor_step_bit_for_bit_and_torchs(device, name, kw):
    grads = _grads(12)
    init = _grads(1, seed=7)[0]
    skip = (3,)  # a parameter with no grad: left as it is, as torch leaves it
    single, _ = _run_pygpu(name, kw, device, grads, init, skip, foreach=False)
    multi, _ = _run_pygpu(name, kw, device, grads, init, skip, foreach=True)
    default, _ = _run_pygpu(name, kw, device, grads, init, skip)
    for a, b, c in zip(single, multi, default):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(multi[3], init[3])
    flags = ({"fused": True},) if name in FUSED else ()
    for torch_flags in ({"foreach": True}, {"foreach": False}) + flags:
        want = _run_torch(name, kw, grads, init, skip, **torch_flags)
        for got, w in zip(multi, want):
            np.testing.assert_allclose(got, w, rtol=2e-5, atol=2e-6)
    if name in FUSED:
        fused, _ = _run_pygpu(name, kw, device, grads, init, skip, fused=True)
        for a, b in zip(single, fused):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,kw", [CASES[1], CASES[5], CASES[7]])
def test_mixed_dtypes_and_devices_in_one_group_step_per_device_and_dtype(name, kw):
    grads, init = _grads(5), _grads(1, seed=3)[0]
    dtypes = [np.float64 if i % 2 else np.float32 for i in range(len(SHAPES))]
    devices = ["cpu" if i % 3 else "sim:0" for i in range(len(SHAPES))]
    params = [pygpu.tensor(a.astype(dt), device=d).requires_grad_()
              for a, dt, d in zip(init, dtypes, devices)]
    tparams = [torch.tensor(a.astype(dt), requires_grad=True) for a, dt in zip(init, dtypes)]
    opt = getattr(optim, name)(params, **kw)
    topt = getattr(torch.optim, name)(tparams, **kw, foreach=True)
    for step in grads:
        for p, tp, g, dt, d in zip(params, tparams, step, dtypes, devices):
            p.grad = pygpu.tensor(g.astype(dt), device=d)
            tp.grad = torch.tensor(g.astype(dt))
        before = _ops("cpu")
        opt.step()
        topt.step()
    # the cpu's parameters: float32 and float64, one node each (plus no other op on the cpu)
    assert _ops("cpu") - before == 2
    for p, tp in zip(params, tparams):
        assert p.dtype == (pygpu.float64 if tp.dtype == torch.float64 else pygpu.float32)
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=2e-5, atol=2e-6)


def test_a_group_is_one_node_where_the_backend_has_it(device):
    params = [pygpu.zeros(s, device=device).requires_grad_() for s in SHAPES]
    opt = optim.AdamW(params, lr=1e-3)
    for p in params:
        p.grad = pygpu.ones(p.shape, device=device)
    opt.step()  # the state is made on the first step
    before = _ops(device)
    opt.step()
    launched = _ops(device) - before
    if _C._has_node("MULTI", params[0]):
        assert launched == 1
    else:  # cuda: the per-parameter fused op, as foreach=False
        assert launched == len(SHAPES)


def test_flags_raise_as_torch():
    p = [pygpu.zeros(3).requires_grad_()]
    for cls in (optim.SGD, optim.Adam, optim.AdamW):
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
            cls(p, lr=0.1, fused=True, foreach=True)
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            cls(p, lr=0.1, fused=True, differentiable=True)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        torch.optim.SGD([torch.zeros(3, requires_grad=True)], lr=0.1, fused=True, foreach=True)
    q = pygpu.zeros(3, dtype=pygpu.int64)
    q.grad = pygpu.ones(3, dtype=pygpu.int64)
    opt = optim.SGD([q], lr=0.1, fused=True)
    with pytest.raises(RuntimeError, match="`fused=True` requires all the params to be floating "
                                           "point Tensors of supported devices"):
        opt.step()
    g = optim.Adam(p, lr=0.1).param_groups[0]
    tg = torch.optim.Adam([torch.zeros(3, requires_grad=True)], lr=0.1).param_groups[0]
    for key in ("foreach", "fused", "maximize", "capturable", "differentiable",
                "decoupled_weight_decay"):
        assert g[key] == tg[key], key
    assert optim.AdamW(p).param_groups[0]["decoupled_weight_decay"] is True


def test_half_parameters_step_their_float32_masters_in_the_list(device):
    init = _grads(1, seed=5)[0]
    grads = _grads(4)
    out = []
    for foreach in (False, True):
        params = [pygpu.tensor(a, device=device).astype(pygpu.bfloat16).requires_grad_()
                  for a in init]
        opt = optim.Adam(params, lr=1e-2, foreach=foreach)
        for step in grads:
            for p, g in zip(params, step):
                p.grad = pygpu.tensor(g, device=device).astype(pygpu.bfloat16)
            opt.step()
        out.append([p.detach().astype(pygpu.float32).numpy() for p in params])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm_matches_torch(device, norm_type, foreach):
    grads = _grads(1, seed=11)[0]
    grads[1] = grads[1] * 50  # one large gradient, so the clip bites
    params = [pygpu.zeros(g.shape, device=device).requires_grad_() for g in grads]
    tparams = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for p, tp, g in zip(params, tparams, grads):
        p.grad, tp.grad = pygpu.tensor(g, device=device), torch.tensor(g)
    total = clip_grad_norm_(params, 5.0, norm_type=norm_type, foreach=foreach)
    want = torch.nn.utils.clip_grad_norm_(tparams, 5.0, norm_type=norm_type,
                                          foreach=foreach if foreach is not True else None)
    assert total.shape == () and total.device == params[0].device
    np.testing.assert_allclose(float(total.item()), float(want), rtol=1e-5)
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_is_two_nodes_and_mixed_dtypes_combine(device):
    grads = _grads(1, seed=2)[0]
    params = [pygpu.zeros(g.shape, device=device).requires_grad_() for g in grads]
    for p, g in zip(params, grads):
        p.grad = pygpu.tensor(g, device=device)
    before = _ops(device)
    clip_grad_norm_(params, 1.0)
    if _C._has_node("MULTI_NORM", params[0]):
        # the norm, the coefficient (add, div, minimum), its cast, the scaling: not 7 per grad
        assert _ops(device) - before <= 6
    # float32 and float64 gradients: one norm node each, combined as torch's stack of norms
    mixed = [pygpu.tensor(g.astype(np.float64 if i % 2 else np.float32), device=device)
             for i, g in enumerate(grads)]
    tmixed = [torch.tensor(g.astype(np.float64 if i % 2 else np.float32))
              for i, g in enumerate(grads)]
    for nt in (2.0, math.inf):
        got = pygpu.nn.utils.get_total_norm(mixed, nt)
        want = torch.nn.utils.get_total_norm(tmixed, nt)
        np.testing.assert_allclose(float(got.item()), float(want), rtol=1e-6)


def test_clip_grad_norm_error_if_nonfinite(device):
    p = pygpu.zeros(4, device=device).requires_grad_()
    p.grad = pygpu.tensor([1.0, float("nan"), 2.0, 3.0], device=device)
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert math.isnan(float(clip_grad_norm_([p], 1.0, norm_type=math.inf).item()))


def test_clip_grad_value_and_foreach_mul(device):
    g = _grads(1, seed=4)[0]
    params = [pygpu.zeros(a.shape, device=device).requires_grad_() for a in g]
    for p, a in zip(params, g):
        p.grad = pygpu.tensor(a, device=device)
    clip_grad_value_(params, 0.5, foreach=True)
    for p, a in zip(params, g):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(a, -0.5, 0.5))
    xs = [pygpu.tensor(a, device=device) for a in g]
    if _C._has_node("MULTI", xs[0]):
        _C._foreach_binary_("multiply", xs, pygpu.tensor(0.25, device=device))
        for x, a in zip(xs, g):
            np.testing.assert_array_equal(x.numpy(), a * np.float32(0.25))
        with pytest.raises(RuntimeError, match="one element"):
            _C._foreach_binary_("multiply", xs, pygpu.ones(2, device=device))
