# test_nn.py - pygpu.nn and pygpu.optim: modules (registration, state_dict and
# load_state_dict key reporting, Module.to in place vs Tensor.to new), initialisation
# (PyTorch's bounds, same seed same weights on every device), optimizers against a
# hand-written NumPy reference of PyTorch's update rules over several steps, the fused
# ops' launch counts, and a training step on sim that moves nothing but the batch.
import math

import numpy as np
import pytest

import pygpu
from pygpu import nn, optim
from pygpu.nn import functional as F

from _helpers import to_device, to_numpy


class FooNet(nn.Module):
    """The mission's example, translated."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3, bias=False) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = pygpu.relu(layer(x))
        return x


# ---- modules ------------------------------------------------------------------------------

def test_mission_foonet_runs_and_trains(device):
    pygpu.manual_seed(0)
    model = FooNet().to(device)
    assert [n for n, _ in model.named_parameters()] == [f"layers.{i}.weight" for i in range(3)]
    x = pygpu.randn(4, 3, device=device)
    out = model(x)
    assert out.shape == (4, 3) and str(out.device) == str(pygpu.device(device))
    out.sum().backward()
    assert all(p.grad is not None and p.grad.shape == (3, 3) for p in model.parameters())


def test_module_registration_and_traversal():
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(list(model.children())) == 3 and len(list(model.modules())) == 4
    assert all(isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf
               for p in model.parameters())
    assert not isinstance(pygpu.zeros(2), nn.Parameter)
    mlp = nn.MLP([4, 8, 3])
    assert [n for n, _ in mlp.named_parameters()] == ["layers.0.weight", "layers.0.bias",
                                                      "layers.1.weight", "layers.1.bias"]
    assert model.train() is model and model.training and model[1].training
    model.eval()
    assert not model.training and not model[2].training



@pytest.mark.parametrize("make", [lambda mods: nn.Sequential(*mods), lambda mods: nn.ModuleList(mods)],
                         ids=["Sequential", "ModuleList"])
def test_containers_share_list_behaviour(make):
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    box = make([a, b])
    assert len(box) == 2 and list(box) == [a, b] and box[0] is a and box[-1] is b
    assert box.append(c) is box and box[2] is c and len(box) == 3
    assert box.extend([nn.Tanh()]) is box and len(box) == 4
    part = box[1:3]
    assert type(part) is type(box) and list(part) == [b, c]  # a slice: same kind, same children
    assert [n for n, _ in box.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    with pytest.raises(IndexError):
        box[7]


def test_sequential_slice_still_fuses_and_computes():
    pygpu.manual_seed(0)
    seq = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    x = pygpu.randn(3, 4)
    np.testing.assert_allclose(to_numpy(seq[2:](seq[:2](x))), to_numpy(seq(x)), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="iterate over it"):
        nn.ModuleList([nn.ReLU()])(x)

def test_linear_init_bounds_and_shapes():
    pygpu.manual_seed(1)
    layer = nn.Linear(50, 20)
    w, b = to_numpy(layer.weight), to_numpy(layer.bias)
    assert w.shape == (20, 50) and b.shape == (20,)
    bound = 1 / math.sqrt(50)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.8 * bound  # really spread over the interval
    assert nn.Linear(3, 2, bias=False).bias is None


@pytest.mark.parametrize("other", ["sim", "sim:1"])
def test_same_seed_same_weights_on_every_device(other):
    pygpu.manual_seed(7)
    a = nn.MLP([6, 5, 4])
    pygpu.manual_seed(7)
    b = nn.MLP([6, 5, 4], device=other)
    assert str(next(b.parameters()).device) == str(pygpu.device(other))
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(to_numpy(p), to_numpy(q), err_msg=n)


def test_module_to_is_in_place_tensor_to_is_new():
    model = nn.Linear(3, 2)
    params = list(model.parameters())
    opt = optim.SGD(model.parameters(), lr=0.1)
    assert model.to("sim") is model
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert all(str(p.device) == "sim:0" for p in params)
    assert opt.param_groups[0]["params"][0] is model.weight
    t = pygpu.zeros(3)
    u = t.to("sim")
    assert u is not t and str(t.device) == "cpu" and str(u.device) == "sim:0"
    assert t.to("cpu") is t


def test_state_dict_roundtrip_and_key_reporting():
    src, dst = nn.MLP([3, 4, 2]), nn.MLP([3, 4, 2])
    sd = src.state_dict()
    assert list(sd) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]
    assert not any(v.requires_grad for v in sd.values())
    dst.load_state_dict(sd)
    for k in sd:
        np.testing.assert_array_equal(to_numpy(dst.state_dict()[k]), to_numpy(sd[k]))
    # DataParallel's "module." prefix is accepted
    dst.load_state_dict({"module." + k: v for k, v in sd.items()})
    bad = dict(sd)
    del bad["layers.1.bias"]
    bad["layers.9.weight"] = sd["layers.0.weight"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "layers.1.bias"\. '
                                           r'\n\tUnexpected key\(s\) in state_dict: '
                                           r'"layers.9.weight"'):
        dst.load_state_dict(bad)
    res = dst.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["layers.1.bias"] and res.unexpected_keys == ["layers.9.weight"]
    wrong = dict(sd)
    wrong["layers.0.weight"] = pygpu.zeros(5, 5)
    with pytest.raises(RuntimeError, match=r"size mismatch for layers.0.weight: copying a param "
                                           r"with shape torch.Size\(\[5, 5\]\) from checkpoint"):
        dst.load_state_dict(wrong)


def test_load_state_dict_onto_a_device_model():
    src = nn.Linear(3, 2)
    dst = nn.Linear(3, 2).to("sim")
    dst.load_state_dict(src.state_dict())
    assert str(dst.weight.device) == "sim:0"
    np.testing.assert_array_equal(to_numpy(dst.weight), to_numpy(src.weight))


def test_zero_grad_and_accumulation(device):
    model = nn.Linear(3, 1).to(device)
    x = pygpu.ones(2, 3, device=device)
    model(x).sum().backward()
    g1 = to_numpy(model.weight.grad).copy()
    model(x).sum().backward()
    np.testing.assert_allclose(to_numpy(model.weight.grad), 2 * g1, rtol=1e-6)
    model.zero_grad(set_to_none=False)
    assert np.all(to_numpy(model.weight.grad) == 0)
    model.zero_grad()
    assert model.weight.grad is None


# ---- autograd rules -----------------------------------------------------------------------

def test_no_grad_detach_and_leaf_rules(device):
    x = pygpu.ones(3, device=device).requires_grad_()
    assert x.is_leaf and x.grad_fn is None
    with pygpu.no_grad():
        y = x * 2.0
        assert not pygpu.is_grad_enabled()
        with pygpu.enable_grad():
            z = x * 2.0
    assert pygpu.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and not z.is_leaf and z.grad_fn is not None
    d = z.detach()
    assert not d.requires_grad and d.is_leaf

    @pygpu.no_grad()
    def f(t):
        return t * 3.0
    assert not f(x).requires_grad
    with pytest.raises(RuntimeError, match="leaf"):
        z.requires_grad = False
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        pygpu.zeros(2, dtype=pygpu.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation"):
        x[0] = 1.0
    target = pygpu.zeros(3, device=device)
    target[...] = x * 2.0  # an indexed write of a value that requires grad is recorded
    assert target.requires_grad and target.grad_fn is not None
    target.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), [2.0, 2.0, 2.0])


def test_backward_errors(device):
    x = pygpu.ones(2, 2, device=device).requires_grad_()
    y = x * 2.0
    with pytest.raises(RuntimeError, match=r"grad can be implicitly created only for scalar outputs"):
        y.backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        pygpu.ones(2, device=device).sum().backward()
    s = (x * x).sum()
    s.backward()
    with pytest.raises(RuntimeError, match="second time"):
        s.backward()
    s2 = (x * x).sum()
    s2.backward(retain_graph=True)
    s2.backward()
    np.testing.assert_allclose(to_numpy(x.grad), 3 * 2 * np.ones((2, 2)))  # 3 backwards of x*x


def test_cross_entropy_label_out_of_range_names_label_and_classes():
    logits = pygpu.zeros(3, 4)
    with pytest.raises(IndexError, match="label 7 .*out of range for 4 classes"):
        F.cross_entropy(logits, pygpu.tensor([0, 7, 1]))
    with pytest.raises(IndexError, match="label -1 "):
        nn.CrossEntropyLoss()(logits, pygpu.tensor([0, -1, 1]))
    with pytest.raises(TypeError, match="int64"):
        F.cross_entropy(logits, pygpu.tensor([0.0, 1.0, 1.0]))


def test_cross_entropy_label_out_of_range_on_sim_fails_the_op():
    logits = pygpu.zeros(3, 4, device="sim")
    loss = F.cross_entropy(logits, pygpu.tensor([0, 9, 1], device="sim"))
    with pytest.raises(pygpu.AsyncOpError, match="label 9 .*out of range for 4 classes"):
        loss.item()
    pygpu.synchronize("sim")  # delivered once, to .item(): the device is clean ...
    assert (pygpu.ones(2, device="sim") + 1).tolist() == [2.0, 2.0]  # ... and usable again


def test_cross_entropy_is_stable_for_huge_logits(device):
    logits = to_device(np.array([[1000.0, 0.0, -1000.0], [0.0, 1e4, 0.0]], np.float32), device)
    loss = F.cross_entropy(logits, to_device(np.array([0, 1]), device))
    assert abs(loss.item()) < 1e-4


# ---- optimizers vs NumPy references -------------------------------------------------------

def _torch_sgd_ref(p, grads, lr, momentum, dampening, wd, nesterov):
    buf = None
    for g in grads:
        d = g + wd * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
    return p


def _torch_adam_ref(p, grads, lr, b1, b2, eps, wd):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr / (1 - b1 ** t) * m / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
    return p


def _run(opt_factory, p0, grads, device):
    p = nn.Parameter(to_device(p0, device))
    opt = opt_factory([p])
    for g in grads:
        p.grad = to_device(g, device)
        opt.step()
    return to_numpy(p)


SGD_CASES = [dict(lr=0.1), dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3),
             dict(lr=0.05, momentum=0.8, nesterov=True), dict(lr=0.1, momentum=0.5,
                                                              weight_decay=0.01)]


@pytest.mark.parametrize("kw", SGD_CASES, ids=[str(k) for k in SGD_CASES])
def test_sgd_matches_pytorch_rule(kw, device):
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(5)]
    got = _run(lambda ps: optim.SGD(ps, **kw), p0, grads, device)
    ref = _torch_sgd_ref(p0, grads, kw["lr"], kw.get("momentum", 0), kw.get("dampening", 0),
                         kw.get("weight_decay", 0), kw.get("nesterov", False))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


ADAM_CASES = [dict(), dict(lr=0.01, betas=(0.8, 0.99)), dict(lr=0.003, eps=1e-6, weight_decay=0.1)]


@pytest.mark.parametrize("kw", ADAM_CASES, ids=[str(k) for k in ADAM_CASES])
def test_adam_matches_pytorch_rule(kw, device):
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal(7)
    grads = [rng.standard_normal(7) for _ in range(6)]
    got = _run(lambda ps: optim.Adam(ps, **kw), p0, grads, device)
    ref = _torch_adam_ref(p0, grads, kw.get("lr", 1e-3), *kw.get("betas", (0.9, 0.999)),
                          kw.get("eps", 1e-8), kw.get("weight_decay", 0))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_optimizer_matches_torch_itself():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    p0 = rng.standard_normal((3, 2)).astype(np.float32)
    grads = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(4)]
    for ours, theirs in [(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
                          lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)),
                         (lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.01),
                          lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.01))]:
        tp = torch.nn.Parameter(torch.tensor(p0))
        topt = theirs([tp])
        for g in grads:
            tp.grad = torch.tensor(g)
            topt.step()
        np.testing.assert_allclose(_run(ours, p0, grads, "cpu"), tp.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_optimizer_state_dict_roundtrip():
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal(5)
    grads = [rng.standard_normal(5) for _ in range(4)]
    p = nn.Parameter(to_device(p0, "cpu"))
    opt = optim.Adam([p], lr=0.01)
    for g in grads[:2]:
        p.grad = to_device(g, "cpu")
        opt.step()
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0] and sd["state"][0]["step"] == 2
    q = nn.Parameter(p.detach().clone().to("sim"))
    opt2 = optim.Adam([q], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    assert str(opt2.state[id(q)]["exp_avg"].device) == "sim:0"
    for g in grads[2:]:
        p.grad = to_device(g, "cpu")
        opt.step()
        q.grad = to_device(g, "sim")
        opt2.step()
    np.testing.assert_allclose(to_numpy(q), to_numpy(p), rtol=1e-12)


def test_optimizer_rejects_bad_arguments():
    with pytest.raises(ValueError, match="empty"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="single Tensor"):
        optim.SGD(pygpu.zeros(2), lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="betas"):
        optim.Adam(nn.Linear(2, 2).parameters(), betas=(1.5, 0.9))


# ---- launches and transfers ---------------------------------------------------------------

def _ops(stats, device):
    return stats.per_device.get(str(pygpu.device(device)), {}).get("ops", 0)


def test_fused_layer_is_one_launch_each_way(device):
    layer = nn.Linear(8, 4).to(device)
    x = pygpu.randn(5, 8, device=device)
    pygpu.synchronize()
    with pygpu.track() as fwd:
        y = layer(x, activation="relu")
    assert _ops(fwd.stats, device) == 1
    g = pygpu.ones(5, 4, device=device)
    with pygpu.track() as bwd:
        y.backward(g)
    assert _ops(bwd.stats, device) == 1  # dx, dW, db and the relu derivative in one node
    params = list(layer.parameters())
    # by default, one multi-tensor node where the backend has Adam's list kernel (all three)
    multi = 1 if pygpu._C._has_node("MULTI", params[0], "ADAM") else len(params)
    for foreach, launches in ((False, len(params)), (None, multi)):
        opt = optim.Adam(params, foreach=foreach)
        opt.step()  # creates the moments
        with pygpu.track() as step:
            opt.step()
        # one fused update per parameter, or one multi-tensor node for the group
        assert _ops(step.stats, device) == launches


def test_training_step_on_sim_moves_only_the_batch():
    pygpu.manual_seed(0)
    model = nn.MLP([20, 32, 16, 5]).to("sim")
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 20)).astype(np.float32)
    y = rng.integers(0, 5, 64)
    xb, yb = pygpu.tensor(X), pygpu.tensor(y)
    losses = []
    for step in range(3):
        with pygpu.track() as t:
            bx, by = xb.to("sim"), yb.to("sim")
            opt.zero_grad()
            loss = loss_fn(model(bx), by)
            loss.backward()
            opt.step()
            pygpu.synchronize()
        assert t.h2d_count == 2 and t.h2d_bytes == X.nbytes + y.nbytes
        assert t.d2h_count == 0 and t.d2d_count == 0 and t.implicit_count == 0
        with pygpu.track() as t:
            losses.append(loss.item())  # asked for: exactly one small transfer out
        assert t.d2h_count == 1 and t.d2h_bytes == 4
    assert losses[-1] < losses[0]


def test_to_device_gradient_flows_back_to_the_source_device():
    x = pygpu.ones(3).requires_grad_()
    y = x.to("sim") * 2.0
    y.sum().backward()
    assert str(x.grad.device) == "cpu"
    np.testing.assert_array_equal(to_numpy(x.grad), [2.0, 2.0, 2.0])
    parts = [pygpu.ones(2, 3, device="sim").requires_grad_(),
             pygpu.ones(1, 3).requires_grad_()]
    out = pygpu.cat([parts[0], parts[1].to("sim")])
    out.sum().backward()
    assert str(parts[1].grad.device) == "cpu" and parts[1].grad.shape == (1, 3)


def test_cat_errors():
    with pytest.raises(pygpu.DeviceMismatchError):
        pygpu.cat([pygpu.zeros(2), pygpu.zeros(2, device="sim")])
    with pytest.raises(ValueError, match="match"):
        pygpu.cat([pygpu.zeros(2, 3), pygpu.zeros(2, 4)])
    with pytest.raises(ValueError, match="non-empty"):
        pygpu.cat([])


def test_training_steps_leave_no_memory_behind():
    """The graph (with its saved tensors) is freed after backward or when the loss dies:
    device memory returns to parameters + gradients + optimizer state."""
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)).to("sim:1")
    opt = optim.Adam(model.parameters())
    x = pygpu.randn(8, 16, device="sim:1")
    y = pygpu.tensor([0, 1, 2, 3, 0, 1, 2, 3], device="sim:1")

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(pygpu.log_softmax(model(x)) * 1.0, y)
        loss.backward()
        opt.step()

    step()
    pygpu.synchronize()
    base = pygpu.sim.memory_allocated("sim:1")
    for _ in range(20):
        step()
    unused = F.mse_loss(pygpu.softmax(model(x)), pygpu.zeros(8, 4, device="sim:1"))
    del unused  # a graph never backpropagated is freed with its output
    pygpu.synchronize()
    assert pygpu.sim.memory_allocated("sim:1") == base


def test_grad_assignment_and_buffers():
    t = pygpu.zeros(2, 3).requires_grad_()
    with pytest.raises(RuntimeError, match=r"assign a gradient of size '\[3\]' to a tensor of size "
                                           r"'\[2, 3\]'"):
        t.grad = pygpu.zeros(3)
    with pytest.raises(TypeError, match="grad must be"):
        t.grad = 1.0
    m = nn.Module()
    m.register_buffer("running", pygpu.zeros(2))
    m.running = pygpu.ones(2)  # stays a buffer: saved and moved with the module
    assert list(m.state_dict()) == ["running"] and not list(m.parameters())
    m.to("sim")
    assert str(m.running.device) == "sim:0"
    with pytest.raises(ValueError, match="in_features and out_features must be >= 1"):
        F.linear(pygpu.zeros(2, 0), pygpu.zeros(3, 0))
