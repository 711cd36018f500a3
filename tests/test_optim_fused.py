"""The optimizers' multi-tensor step (foreach=/fused=, MULTI nodes per group, device and
dtype, one from each large parameter on a queuing device) and clip_grad_norm_'s fused norm (one MULTI_NORM node), against the single-tensor
path bit for bit and against torch's foreach and fused paths over many steps, on every
device: cpu and sim cut the list over their threads, cuda runs it as PyTorch's
multi_tensor_apply does (a chunk table by value, a few launches per list: lists long enough
to take several launches are checked, and the list nodes inside a CUDA graph)."""
import math

import numpy as np
import pytest

import pygpu
from pygpu import _C, optim
from pygpu.optim import _multi_tensor
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
    # RAdam's step is rectified from the sixth on (rho_t > 5): both branches in 12 steps
    ("RAdam", dict(lr=1e-2)),
    ("RAdam", dict(lr=1e-2, weight_decay=1e-2, decoupled_weight_decay=True, maximize=True)),
    ("Adamax", dict(lr=1e-2, weight_decay=1e-3)),
    ("Adamax", dict(lr=1e-2, betas=(0.8, 0.99), maximize=True)),
    ("NAdam", dict(lr=1e-2, weight_decay=1e-3, maximize=True)),  # composed: foreach changes nothing
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
    # every backend has the list kernel of every kind pygpu.optim lists
    for kind in ("SGD", "ADAM", "RMSPROP", "ADAGRAD", "ADADELTA", "RADAM", "ADAMAX", "BINARY"):
        assert _C._has_node("MULTI", params[0], kind), kind
    assert launched == 1


def test_a_large_parameter_starts_a_node_so_its_readers_wait_for_its_own_update():
    # the benchmark MLP's shapes: [W1, b1] [W2, b2, W3, b3] on a queuing device; one node on cpu
    shapes = [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
    if pygpu.sim.device_count() < 2:
        pytest.skip("needs two sim devices")
    params = [pygpu.zeros(s, device="sim:0").requires_grad_() for s in shapes]
    cpu_params = [pygpu.zeros(s).requires_grad_() for s in shapes]
    for p in params + cpu_params:
        p.grad = pygpu.ones(p.shape, device=p.device)
    opt, cpu_opt = optim.SGD(params, lr=0.1, momentum=0.9), optim.SGD(cpu_params, lr=0.1, momentum=0.9)
    opt.step()
    cpu_opt.step()  # the momentum buffers are made
    # W1's gradient comes from a slow op, so its node is still pending when the copy is queued
    a = pygpu.ones(784, 4096, device="sim:0")
    params[0].grad = (a @ a.T)[:512].contiguous() / 4096
    before = _ops("cpu")
    cpu_opt.step()
    assert _ops("cpu") - before == 1
    before = _ops("sim:0")
    with pygpu.sim.timeline("sim:0") as tl:
        opt.step()
        nodes = _ops("sim:0") - before
        w1 = params[0].to("sim:1", non_blocking=True)  # DataParallel's refresh of W1
        pygpu.synchronize()
    assert nodes == 2
    sgd = sorted((s for s in tl.spans if s.name == "sgd"), key=lambda s: s.seq)
    copy = next(s for s in tl.spans if s.queue == "copy")
    assert len(sgd) == 2
    # ordered after W1's node (if it was still pending), never after the second node
    assert ("sim:0 compute", sgd[1].seq) not in copy.after
    assert ("sim:0 compute", sgd[0].seq) in copy.after or sgd[0].end <= copy.queued
    for p, q in zip(params[1:], cpu_params[1:]):  # the split changes no value
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    np.testing.assert_array_equal(w1.detach().numpy(), params[0].detach().numpy())


def test_flags_raise_as_torch():
    p = [pygpu.zeros(3).requires_grad_()]
    for name in ("NAdam", "RAdam", "Adamax"):  # torch's keys and defaults, foreach among them
        g = getattr(optim, name)(p).param_groups[0]
        tg = getattr(torch.optim, name)([torch.zeros(3, requires_grad=True)]).param_groups[0]
        assert {k: v for k, v in g.items() if k != "params"} == {
            k: v for k, v in tg.items() if k != "params"}, name
        with pytest.raises(TypeError):
            getattr(optim, name)(p, fused=True)  # torch gives these three no fused=
        with pytest.raises(TypeError):
            getattr(torch.optim, name)([torch.zeros(3, requires_grad=True)], fused=True)
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
    if _C._has_node("MULTI", xs[0], "BINARY"):
        _C._foreach_binary_("multiply", xs, pygpu.tensor(0.25, device=device))
        for x, a in zip(xs, g):
            np.testing.assert_array_equal(x.numpy(), a * np.float32(0.25))
        with pytest.raises(RuntimeError, match="one element"):
            _C._foreach_binary_("multiply", xs, pygpu.ones(2, device=device))
        with pytest.raises(TypeError, match="result must be a float"):
            _C._foreach_binary_("equal", xs, pygpu.tensor(0.25, device=device))
        for op, want in (("add", np.add), ("divide", np.divide), ("maximum", np.maximum)):
            ys = [pygpu.tensor(a, device=device) for a in g]
            _C._foreach_binary_(op, ys, pygpu.tensor(-0.5, device=device))
            for y, a in zip(ys, g):
                np.testing.assert_array_equal(y.numpy(), want(a, np.float32(-0.5)))


# A list longer than one launch's table on cuda (pg_multi_tensor.cuh: 39 entries of five
# operands, 320 chunks of 65536 elements): 130 parameters, small and a few chunks long
LONG = [(int(n),) for n in np.random.default_rng(9).integers(1, 3000, 126)] + [
    (65536 * 3 + 17,), (65536,), (1,), (40, 50)]


@pytest.mark.parametrize("name,kw", [CASES[2], CASES[5], CASES[9], CASES[10], CASES[11],
                                     CASES[13], CASES[14]])
def test_a_list_of_many_launches_is_the_single_tensor_step_bit_for_bit(device, name, kw):
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s).astype(np.float32) for s in LONG]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in LONG] for _ in range(3)]
    out = []
    for foreach in (False, True):
        params = [pygpu.tensor(a, device=device).requires_grad_() for a in init]
        opt = getattr(optim, name)(params, **kw, foreach=foreach)
        for step in grads:
            for p, g in zip(params, step):
                p.grad = pygpu.tensor(g, device=device)
            before = _ops(device)
            opt.step()
            launched = _ops(device) - before
        if foreach:  # one node for the list (and maximize's negated grads, one each); on a
            # queuing device, one more from each large parameter on (_multi_tensor.node_parts)
            starts = 0 if pygpu.device(device).type == "cpu" else sum(
                4 * math.prod(s) >= _multi_tensor.NODE_START_BYTES for s in LONG[1:])
            assert launched == 1 + starts + len(LONG) * bool(kw.get("maximize"))
        out.append([p.detach().numpy() for p in params])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
    tparams = [torch.tensor(a, requires_grad=True) for a in init]
    topt = getattr(torch.optim, name)(tparams, **kw, foreach=True)
    for step in grads:
        for p, g in zip(tparams, step):
            p.grad = torch.tensor(g)
        topt.step()
    for got, tp in zip(out[1], tparams):
        np.testing.assert_allclose(got, tp.detach().numpy(), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 0.0, math.inf, 3.0])
def test_the_list_norm_of_many_launches(device, norm_type):
    """MULTI_NORM over lists that fill cuda's tables: 130 tensors (several tables by their
    count), then one tensor of more than a table's 320 chunks and a list whose chunks fill a
    table exactly at an entry's end; every chunk counted once (a chunk is 65536 elements:
    missing or doubling one moves the norm far)."""
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(s).astype(np.float32) for s in LONG]
    xs[5][3] = 0.0
    got = _C._multi_norm([pygpu.tensor(a, device=device) for a in xs], norm_type)
    flat = np.concatenate([a.ravel() for a in xs]).astype(np.float64)
    want = (np.count_nonzero(flat) if norm_type == 0 else
            np.linalg.norm(flat, norm_type))
    np.testing.assert_allclose(float(got.item()), want, rtol=1e-6)
    chunk = 65536
    for sizes in ((320 * chunk + 1,), (300 * chunk, 20 * chunk, 1000)):
        big = [pygpu.full(s, 0.5, device=device) for s in sizes]
        big[-1][-1] = 3.0  # in the last chunk, after the first table's launch
        n = sum(sizes)
        want = {2.0: math.sqrt((n - 1) * 0.25 + 9), 1.0: (n - 1) * 0.5 + 3, 0.0: n,
                math.inf: 3.0, 3.0: ((n - 1) * 0.125 + 27) ** (1 / 3)}[norm_type]
        np.testing.assert_allclose(float(_C._multi_norm(big, norm_type).item()), want,
                                   rtol=1e-6)
        del big


needs_cuda = pytest.mark.skipif(not pygpu.cuda.is_available(), reason="needs a CUDA GPU "
                                "(real, or the emulated one of tests/cuda_emu)")


@needs_cuda
def test_a_cuda_graph_captures_the_list_step_and_norm():
    """A CUDA graph captures clip_grad_norm_ (MULTI_NORM, the BINARY list) and an RMSprop
    multi-tensor step (MULTI): the chunk table is a kernel argument, captured with the launch,
    so each replay steps the parameters as an eager step does."""
    rng = np.random.default_rng(4)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) * 3 for s in SHAPES] for _ in range(4)]

    def setup():
        params = [pygpu.tensor(a, device="cuda").requires_grad_() for a in init]
        for p in params:
            p.grad = pygpu.zeros(p.shape, device="cuda")
        return params, optim.RMSprop(params, lr=1e-2, momentum=0.9, foreach=True)

    def step(params, opt):
        clip_grad_norm_(params, 1.0)
        opt.step()

    eager, eopt = setup()
    for gs in grads:
        for p, g in zip(eager, gs):
            p.grad.copy_(pygpu.tensor(g))
        step(eager, eopt)
    params, opt = setup()
    for p, g in zip(params, grads[0]):
        p.grad.copy_(pygpu.tensor(g))
    step(params, opt)  # warm up (the state is made on the first step), then capture
    graph = pygpu.cuda.CUDAGraph()
    with pygpu.cuda.graph(graph):
        step(params, opt)
    assert graph.num_ops <= 8  # the norm, its coefficient, the scaling, the step: not per tensor
    for gs in grads[1:]:
        for p, g in zip(params, gs):
            p.grad.copy_(pygpu.tensor(g))
        graph.replay()
    for p, e in zip(params, eager):
        np.testing.assert_array_equal(p.detach().numpy(), e.detach().numpy())


@needs_cuda
def test_a_list_step_is_refused_in_a_graph_as_its_kind_is():
    """MULTI's graph column is its entries' kind's: Adam's bias corrections and SGD's first
    momentum step would be frozen in the capture, so both are refused, in their words."""
    params = [pygpu.zeros(s, device="cuda").requires_grad_() for s in SHAPES]
    for p in params:
        p.grad = pygpu.ones(p.shape, device="cuda")
    for opt, why in ((optim.Adam(params, foreach=True), "Adam's step count"),
                     (optim.SGD(params, lr=0.1, momentum=0.9, foreach=True),
                      "SGD's first step with momentum")):
        graph = pygpu.cuda.CUDAGraph()
        with pytest.raises(RuntimeError, match=why):
            with pygpu.cuda.graph(graph):
                opt.step()
    opt.step()  # SGD's buffer made: its later steps are captured
    graph = pygpu.cuda.CUDAGraph()
    with pygpu.cuda.graph(graph):
        opt.step()
    assert graph.num_ops == 1
