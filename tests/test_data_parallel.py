# test_data_parallel.py - pygpu.nn.DataParallel on two sim devices: PyTorch's chunking, the
# mission's FooNet example, exact traffic per role, equivalence with one-device training,
# and the errors a user meets first.
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn.parallel import chunk_sizes
from pygpu.optim import _multi_tensor

pytestmark = pytest.mark.skipif(pygpu.sim.device_count() < 2, reason="needs two sim devices")


@pytest.mark.parametrize("n,k,expected", [(16, 2, [8, 8]), (5, 4, [2, 2, 1]), (1, 2, [1]),
                                          (7, 3, [3, 3, 1]), (6, 4, [2, 2, 2]), (0, 2, [])])
def test_chunk_sizes_follow_torch_chunk(n, k, expected):
    assert chunk_sizes(n, k) == expected


class FooNet(nn.Module):
    """The mission's example: three bias-free 3x3 linear layers, then relu."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3, bias=False) for _ in range(3)])
        self.rows_seen = []

    def forward(self, x):
        self.rows_seen.append((str(x.device), x.shape[0]))
        for layer in self.layers:
            x = layer(x)
        return pygpu.relu(x)


def test_the_missions_foonet_example_runs_as_written():
    model = FooNet().to("sim:0")
    dp = nn.DataParallel(model, device_ids=["sim:0", "sim:1"])
    out = dp(pygpu.randn(16, 3))
    assert out.shape == (16, 3) and str(out.device) == "sim:0"
    assert sorted(model.rows_seen) == [("sim:0", 8), ("sim:1", 8)]
    out.sum().backward()
    assert all(p.grad is not None and str(p.grad.device) == "sim:0" for p in model.parameters())
    assert dp.module is model


def _mlp(device, dtype=pygpu.float32, seed=0):
    pygpu.manual_seed(seed)
    return nn.MLP([20, 32, 16, 5]).to(dtype).to(device)


def _param_bytes(model):
    return sum(p.nbytes for p in model.parameters())


@pytest.mark.parametrize("x_device", ["cpu", "sim:0"])
def test_each_roles_bytes_equal_their_formula(x_device):
    model = _mlp("sim:0")
    dp = nn.DataParallel(model)  # device_ids=None: every sim device
    assert [str(d) for d in dp.device_ids] == [f"sim:{i}" for i in range(pygpu.sim.device_count())]
    dp = nn.DataParallel(model, device_ids=["sim:0", "sim:1"])
    batch, features, classes = 10, 20, 5
    x = pygpu.randn(batch, features).to(x_device)
    y = pygpu.tensor(np.arange(batch) % classes, device="sim:0")
    loss_fn = nn.CrossEntropyLoss()
    with pygpu.track() as t:
        loss = loss_fn(dp(x), y)
        loss.backward()
    roles = t.by_role
    rows1 = chunk_sizes(batch, 2)[1]
    moved_in = batch if x_device == "cpu" else rows1  # chunks that change device
    assert roles["scatter"]["bytes"] == moved_in * features * 4
    assert roles["replicate"]["bytes"] == _param_bytes(model) * (2 - 1)
    assert roles["gather"]["bytes"] == 2 * rows1 * classes * 4  # outputs in, their grads back
    assert roles["grad_reduce"]["bytes"] == _param_bytes(model) * (2 - 1)
    nparams = len(list(model.parameters()))
    assert roles["replicate"]["count"] == roles["grad_reduce"]["count"] == nparams
    pairs = {(p["src"], p["dst"]) for p in roles["grad_reduce"]["pairs"]}
    assert pairs == {("sim:1", "sim:0")}


def test_k_steps_equal_single_device_training():
    steps, batch = 4, 12
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((batch, 20)) for _ in range(steps)]
    ys = [rng.integers(0, 5, batch) for _ in range(steps)]
    results = []
    for parallel in (False, True):
        model = _mlp("sim:0", pygpu.float64, seed=1)
        net = nn.DataParallel(model, device_ids=["sim:0", "sim:1"]) if parallel else model
        opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss = loss_fn(net(pygpu.tensor(x, device="sim:0")), pygpu.tensor(y, device="sim:0"))
            loss.backward()
            opt.step()
        results.append([p.detach().numpy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_fewer_rows_than_devices_and_inference():
    model = _mlp("sim:0")
    dp = nn.DataParallel(model, device_ids=["sim:0", "sim:1"])
    out = dp(pygpu.randn(1, 20))
    assert out.shape == (1, 5)
    with pygpu.no_grad():
        ref = model(pygpu.randn(6, 20, device="sim:0"))
        got = dp(pygpu.randn(6, 20))
    assert got.shape == ref.shape and got.grad_fn is None


def test_state_dict_has_module_prefix_and_loads_into_a_bare_model():
    model = _mlp("sim:0", seed=3)
    dp = nn.DataParallel(model, device_ids=["sim:0", "sim:1"])
    sd = dp.state_dict()
    assert all(k.startswith("module.") for k in sd)
    bare = _mlp("cpu", seed=4)
    bare.load_state_dict(sd)
    for a, b in zip(bare.parameters(), model.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_output_device_and_errors():
    model = _mlp("sim:0")
    dp = nn.DataParallel(model, device_ids=[0, 1], output_device=1)  # indices of sim devices
    assert [str(d) for d in dp.device_ids] == ["sim:0", "sim:1"]
    assert str(dp(pygpu.randn(4, 20)).device) == "sim:1"
    dp = nn.DataParallel(model, device_ids=[0, 1], output_device="sim:1")
    assert str(dp(pygpu.randn(4, 20)).device) == "sim:1"
    out = nn.DataParallel(model, device_ids=[0, 1], output_device="cpu")(pygpu.randn(4, 20))
    assert str(out.device) == "cpu"
    out.sum().backward()
    assert all(str(p.grad.device) == "sim:0" for p in model.parameters())
    # the module's place is checked at forward time (PyTorch's rule), naming the fix
    with pytest.raises(RuntimeError, match=r"net.to\('sim:1'\)"):
        nn.DataParallel(model, device_ids=["sim:1", "sim:0"])(pygpu.randn(4, 20))
    with pytest.raises(RuntimeError, match="module is on the cpu"):
        nn.DataParallel(_mlp("cpu"), device_ids=[0, 1])(pygpu.randn(4, 20))
    with pytest.raises(ValueError, match="there are 2 sim devices"):
        nn.DataParallel(model, device_ids=[0, 7])(pygpu.randn(4, 20))
    with pytest.raises(ValueError, match="repeats"):
        nn.DataParallel(model, device_ids=["sim:0", "sim:0"])
    with pytest.raises(ValueError, match="empty"):
        nn.DataParallel(model, device_ids=[])
    with pytest.raises(ValueError, match="non-negative"):
        nn.DataParallel(model, device_ids=[0, -1])
    with pytest.raises(ValueError, match="unknown device type"):
        nn.DataParallel(model, device_ids=["gpu:0"])


def test_built_around_a_cpu_module_then_moved_as_in_the_guide():
    """net = FooNet(neural_num=3, layers=3); net = nn.DataParallel(net); net.to(device)."""
    pygpu.manual_seed(0)
    net = FooNet()
    net = nn.DataParallel(net)          # the module is still on the cpu here
    assert [str(d) for d in net.device_ids] == ["cpu"]
    net.to("sim")                       # "sim": the current sim device, sim:0
    assert [str(d) for d in net.device_ids] == [f"sim:{i}" for i in range(pygpu.sim.device_count())]
    out = net(pygpu.randn(16, 3).to("sim"))
    assert out.shape == (16, 3) and str(out.device) == "sim:0"
    assert sorted(net.module.rows_seen) == [("sim:0", 8), ("sim:1", 8)]
    # integer ids given before the move resolve against the module's type at forward time
    net2 = nn.DataParallel(FooNet(), device_ids=[0, 1], output_device=1)
    net2.to("sim:0")
    assert str(net2(pygpu.randn(4, 3)).device) == "sim:1"
    # a cpu module with device_ids=None runs as it is (PyTorch without GPUs)
    cpu = nn.DataParallel(FooNet())
    assert str(cpu(pygpu.randn(4, 3)).device) == "cpu"


def test_a_replica_that_raises_names_its_device():
    class Bad(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            if str(x.device) == "sim:1":
                raise ValueError("only on the second device")
            return self.lin(x)

    dp = nn.DataParallel(Bad().to("sim:0"), device_ids=["sim:0", "sim:1"])
    with pytest.raises(RuntimeError, match="replica on sim:1 raised ValueError"):
        dp(pygpu.randn(4, 3))


def test_mem_get_info_sees_what_is_allocated():
    pygpu.sim.empty_cache()
    before, total = pygpu.sim.mem_get_info(0)
    hog = pygpu.zeros(1 << 22, device="sim:0")  # 16 MiB
    after, total2 = pygpu.sim.mem_get_info("sim:0")
    assert total == total2 == pygpu.sim.mem_get_info(1)[1] > 0
    assert before - after >= 16 << 20
    free = [pygpu.sim.mem_get_info(i)[0] for i in range(pygpu.sim.device_count())]
    main = max(range(len(free)), key=free.__getitem__)  # the mission's pick of the main device
    assert free[main] >= free[0]
    del hog


def test_trainer_history_reports_traffic_per_step_by_role():
    model = _mlp("sim:0")
    dp = nn.DataParallel(model, device_ids=["sim:0", "sim:1"])
    trainer = pygpu.Trainer(dp, pygpu.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                            device="sim:0")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 20)).astype(np.float32)
    y = rng.integers(0, 5, 40)
    hist = trainer.fit(x, y, epochs=1, batch_size=10, progress=False)
    per_step = hist[0]["bytes_per_step_by_role"]
    assert per_step["replicate"] == per_step["grad_reduce"] == _param_bytes(model)
    assert per_step["gather"] == 2 * chunk_sizes(10, 2)[1] * 5 * 4


# -- the redesign: resident replicas, one Python thread, reduction during backward ------------
def _step(dp, model, opt, x, y):
    opt.zero_grad()
    loss = nn.CrossEntropyLoss()(dp(x), y)
    loss.backward()
    opt.step()
    return loss


def test_replicas_stay_resident_and_follow_in_place_changes():
    model = _mlp("sim:0", seed=5)
    dp = nn.DataParallel(model, device_ids=[0, 1])
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1)
    x, y = pygpu.randn(8, 20, device="sim:0"), pygpu.tensor(np.arange(8) % 5, device="sim:0")
    _step(dp, model, opt, x, y)
    copy_ = dp._replicas.copies[0]
    weights = [id(p) for p in copy_.parameters()]
    _step(dp, model, opt, x, y)
    assert dp._replicas.copies[0] is copy_ and [id(p) for p in copy_.parameters()] == weights
    assert all(str(p.device) == "sim:1" and p.grad is None for p in copy_.parameters())
    # an in-place change the optimizer did not make (load_state_dict) reaches the replica
    other = _mlp("sim:0", seed=9)
    model.load_state_dict(other.state_dict())
    with pygpu.no_grad():
        np.testing.assert_allclose(dp(x).numpy(), other(x).numpy(), rtol=1e-6)
    # train()/eval() reach the replicas (at the next forward); a dtype change rebuilds them
    dp.eval()
    with pygpu.no_grad():
        dp(x)
    assert not any(m.training for m in copy_.modules())
    dp.train()
    model.to(pygpu.float64)
    out = dp(x.to(pygpu.float64))
    assert dp._replicas.copies[0] is not copy_ and out.dtype == pygpu.float64


@pytest.mark.parametrize("where", ["cpu", "sim:0"])
def test_version_stamp_changes_on_every_write_and_only_then(where):
    a = pygpu.ones(6, device=where)
    view = a[1:4]
    v = a._write_stamp
    assert view._write_stamp == v
    _ = a + 1, a.sum(), a.numpy() if where == "cpu" else a.cpu()  # reads
    assert a._write_stamp == v
    with pygpu.no_grad():
        view.copy_(pygpu.zeros(3))  # a copy into a view writes the shared memory
    assert a._write_stamp != v and view._write_stamp == a._write_stamp
    v = a._write_stamp
    a.copy_(pygpu.zeros(6, device=where), non_blocking=True)
    assert a._write_stamp != v
    p = nn.Parameter(pygpu.ones(3, device=where))
    p.grad = pygpu.ones(3, device=where)
    v = p._write_stamp
    pygpu.optim.SGD([p], lr=0.1).step()  # the fused update op
    assert p._write_stamp != v
    v = p._write_stamp
    p.data = pygpu.ones(3, device=where)  # new memory: a new stamp
    assert p._write_stamp != v


def test_replicas_refresh_only_what_changed():
    """Each forward copies to the replicas only the tensors written since the last one (their
    _write_stamp changed): with the first layer frozen, a step re-sends the other layers'
    weights alone; every writer (optimizer, load_state_dict, an in-place edit, .data = ...,
    a write on the replica's own device) makes its tensor go again."""
    model = _mlp("sim:0", seed=3)
    first = model.layers[0]
    for p in first.parameters():
        p.requires_grad = False
    dp = nn.DataParallel(model, device_ids=[0, 1])
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = pygpu.optim.SGD(trained, lr=0.1, momentum=0.9)
    x, y = pygpu.randn(8, 20, device="sim:0"), pygpu.tensor(np.arange(8) % 5, device="sim:0")
    _step(dp, model, opt, x, y)  # builds the replicas
    with pygpu.track() as t:
        _step(dp, model, opt, x, y)
    assert t.by_role["replicate"]["bytes"] == sum(p.nbytes for p in trained)
    assert dp._replicas.copied == len(trained)
    # nothing written since the last forward: nothing copied
    with pygpu.no_grad():
        dp(x)  # the step's updates go
        with pygpu.track() as t:
            dp(x)
    assert "replicate" not in t.by_role and dp._replicas.copied == 0
    # an in-place edit of the frozen layer, .data swapped, a write on the replica itself
    with pygpu.no_grad():
        first.weight.copy_(first.weight * 0.5)
    model.layers[1].bias.data = pygpu.zeros(*model.layers[1].bias.shape, device="sim:0")
    replica = dp._replicas.copies[0]
    with pygpu.no_grad():
        replica.layers[2].weight.copy_(replica.layers[2].weight * 3.0)
        out = dp(x)
    assert dp._replicas.copied == 3
    with pygpu.no_grad():
        np.testing.assert_allclose(out.numpy(), model(x).numpy(), rtol=1e-6)
    for rp, p in zip(replica.parameters(), model.parameters()):
        np.testing.assert_array_equal(rp.detach().numpy(), p.detach().numpy())


def test_one_python_thread_drives_every_device():
    import threading
    model = FooNet().to("sim:0")
    seen = []
    original = FooNet.forward

    def forward(self, x):
        seen.append(threading.current_thread() is threading.main_thread())
        return original(self, x)

    FooNet.forward = forward
    try:
        started = []
        real_start = threading.Thread.start
        threading.Thread.start = lambda self: (started.append(self.name), real_start(self))[1]
        try:
            dp = nn.DataParallel(model, device_ids=["sim:0", "sim:1"])
            dp(pygpu.randn(16, 3)).sum().backward()
        finally:
            threading.Thread.start = real_start
        assert seen == [True, True] and started == []
    finally:
        FooNet.forward = original


def test_replica_gradients_are_reduced_during_backward():
    model = _mlp("sim:0")
    dp = nn.DataParallel(model, device_ids=["sim:0", "sim:1"])
    x, y = pygpu.randn(10, 20), pygpu.tensor(np.arange(10) % 5, device="sim:0")
    nn.CrossEntropyLoss()(dp(x), y).backward()  # builds the replica on sim:1
    model.zero_grad()
    replica_first = next(dp._replicas.copies[0].parameters())  # the last gradient the copy gets
    def reduced_so_far():
        return pygpu.stats().by_role.get("grad_reduce", {}).get("bytes", 0)

    events = []
    handle = pygpu.autograd.register_post_accumulate_grad_hook(
        replica_first, lambda p: events.append(reduced_so_far() - start))
    start = reduced_so_far()
    with pygpu.track() as t:
        nn.CrossEntropyLoss()(dp(x), y).backward()
    handle.remove()
    # when the copy's last gradient arrives, its other gradients are already on their way to sim:0
    assert events and _param_bytes(model) - replica_first.nbytes - 32 * 4 <= events[0] < _param_bytes(model)
    assert t.by_role["grad_reduce"]["bytes"] == _param_bytes(model)
    assert all(p.grad is None for p in dp._replicas.copies[0].parameters())


def _two_devices(kind):
    if kind == "cuda" and not (pygpu.cuda.is_available() and pygpu.cuda.device_count() >= 2):
        pytest.skip("needs two cuda devices")
    return [f"{kind}:0", f"{kind}:1"]


@pytest.mark.parametrize("kind", ["sim", "cuda"])
def test_a_temporary_wrapper_reduces_every_gradient(kind):
    # `loss_fn(DataParallel(model)(x), y).backward()`: the wrapper is gone before backward
    # runs; its replicas and their Reducer must live as long as the graph that needs them
    from pygpu.autograd import engine
    devices = _two_devices(kind)
    x = pygpu.randn(10, 20).to(devices[0])
    y = pygpu.tensor(np.arange(10) % 5, device=devices[0])
    loss_fn = nn.CrossEntropyLoss()
    single = _mlp(devices[0], pygpu.float64)
    loss_fn(single(x.to(pygpu.float64)), y).backward()
    hooks_before = len(engine._post_accumulate_hooks)
    twin = _mlp(devices[0], pygpu.float64)
    for _ in range(2):  # the second step accumulates into .grad, as PyTorch does
        loss_fn(nn.DataParallel(twin, device_ids=devices)(x.to(pygpu.float64)), y).backward()
    for p, q in zip(single.parameters(), twin.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), 2 * p.grad.numpy(), rtol=1e-10, atol=1e-12)
    # once backward has returned, nothing holds the replicas: their hooks are gone
    assert len(engine._post_accumulate_hooks) == hooks_before


@pytest.mark.parametrize("kind", ["sim", "cuda"])
def test_a_held_gradient_is_never_written_by_the_reduction(kind):
    # each replica's gradient is added into .grad in place when .grad's memory is its own
    # (as PyTorch's AccumulateGrad does); a .grad the caller still holds is replaced instead
    devices = _two_devices(kind)
    x = pygpu.randn(10, 20).to(devices[0]).to(pygpu.float64)
    y = pygpu.tensor(np.arange(10) % 5, device=devices[0])
    loss_fn = nn.CrossEntropyLoss()
    single = _mlp(devices[0], pygpu.float64)
    loss_fn(single(x), y).backward()
    model = _mlp(devices[0], pygpu.float64)
    net = nn.DataParallel(model, device_ids=devices)
    loss_fn(net(x), y).backward()
    held = [p.grad for p in model.parameters()]
    first = [g.numpy().copy() for g in held]
    loss_fn(net(x), y).backward()
    for g, f, p, q in zip(held, first, single.parameters(), model.parameters()):
        np.testing.assert_array_equal(g.numpy(), f)  # untouched
        np.testing.assert_allclose(f, p.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(q.grad.numpy(), 2 * p.grad.numpy(), rtol=1e-10, atol=1e-12)
        assert q.grad is not g


def test_replicas_of_a_graph_never_backpropagated_are_released():
    from pygpu.autograd import engine
    hooks_before = len(engine._post_accumulate_hooks)
    model = _mlp("sim:0")
    out = nn.DataParallel(model, device_ids=["sim:0", "sim:1"])(pygpu.randn(6, 20))
    assert len(engine._post_accumulate_hooks) > hooks_before  # the graph holds the replicas
    del out
    assert len(engine._post_accumulate_hooks) == hooks_before


def test_a_rebuild_between_forward_and_backward_keeps_the_first_graphs_reducer():
    # the module's parameters change identity after a forward: the next forward rebuilds the
    # copies, and the first graph's backward still reduces through the copies it was built on
    x, y = pygpu.randn(10, 20).to("sim:0"), pygpu.tensor(np.arange(10) % 5, device="sim:0")
    loss_fn = nn.CrossEntropyLoss()
    single = _mlp("sim:0", pygpu.float64)
    loss_fn(single(x.to(pygpu.float64)), y).backward()
    model = _mlp("sim:0", pygpu.float64)
    dp = nn.DataParallel(model, device_ids=["sim:0", "sim:1"])
    first = loss_fn(dp(x.to(pygpu.float64)), y)
    model.layers[0].bias = nn.Parameter(model.layers[0].bias.detach().clone())
    dp(x.to(pygpu.float64))  # rebuilds dp's copies
    first.backward()
    for name, p in single.named_parameters():
        if name != "layers.0.bias":  # the replaced bias is not the one the first graph used
            np.testing.assert_allclose(dict(model.named_parameters())[name].grad.numpy(),
                                       p.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["sim", "cuda"])
def test_float32_training_with_a_large_first_layer_equals_one_device(kind):
    # the benchmark's shape of step (SGD with momentum, a first layer of over 256 KiB, so the
    # optimizer's step is two nodes and the first layer's refresh copy starts after its own):
    # every weight after k steps as one device's, to 1e-6 in float32 (two half-batch
    # gradients summed against one full-batch gradient: rounding only)
    devices = _two_devices(kind)
    steps, batch = 3, 16
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((batch, 300)).astype(np.float32) for _ in range(steps)]
    ys = [rng.integers(0, 10, batch) for _ in range(steps)]
    results = []
    for parallel in (False, True):
        pygpu.manual_seed(3)
        model = nn.MLP([300, 256, 64, 10]).to(devices[0])
        assert model.layers[0].weight.nbytes >= _multi_tensor.NODE_START_BYTES
        net = nn.DataParallel(model, device_ids=devices) if parallel else model
        opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss_fn(net(pygpu.tensor(x, device=devices[0])), pygpu.tensor(y, device=devices[0])).backward()
            opt.step()
        results.append([p.detach().numpy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
