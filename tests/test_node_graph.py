"""The node graph of cpu and sim (pygpu.cpu.Graph / pygpu.sim.Graph, csrc/core/pg_graph.c):
torch.cuda.CUDAGraph's contract. A capture records the ops and runs none; a replay reruns them
from C with the captured scalars and writes the captured outputs in place; what a replay would
repeat wrongly (random draws, Adam's step) and what reads results that do not exist yet (host
reads, transfers, synchronize) raise RuntimeError and drop the capture. Replays are held to
eager's results bit for bit (the same nodes in the same order)."""
import threading

import numpy as np
import pytest

import pygpu

DEVICES = ["cpu", "sim"]


def _mod(dev):
    return pygpu.cpu if dev == "cpu" else pygpu.sim


def _np(t):
    return t.detach().to("cpu").numpy()


def _mlp(dev, seed=0):
    pygpu.manual_seed(seed)
    return pygpu.nn.Sequential(pygpu.nn.Linear(6, 8), pygpu.nn.ReLU(), pygpu.nn.Linear(8, 3)).to(dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_capture_runs_nothing_and_replay_follows_new_inputs(dev):
    m = _mod(dev)
    x = pygpu.ones(5, 6, device=dev)
    w = pygpu.full((6, 4), 0.5, device=dev)
    g = m.Graph()
    with m.graph(g):
        y = (x @ w).relu() * 2.0 - 1.0
    assert g.num_ops == 4
    rng = np.random.default_rng(1)
    for _ in range(3):
        xv = rng.standard_normal((5, 6)).astype(np.float32)
        x.copy_(pygpu.tensor(xv).to(dev))
        g.replay()
        want = np.maximum(xv @ np.full((6, 4), 0.5, np.float32), 0) * 2 - 1
        np.testing.assert_allclose(_np(y), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
def test_a_training_step_replays_as_eager_bit_for_bit(dev):
    """forward + backward + SGD with momentum, captured after a warm-up step, against the
    same steps run eagerly on a twin; the learning rate is that of the capture."""
    m = _mod(dev)
    model, twin = _mlp(dev), _mlp(dev)
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    topt = pygpu.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((4, 6)).astype(np.float32),
                rng.integers(0, 3, 4).astype(np.int64)) for _ in range(5)]
    sx = pygpu.tensor(batches[0][0]).to(dev)
    sy = pygpu.tensor(batches[0][1]).to(dev)

    def step(model, opt, x, y):
        opt.zero_grad(set_to_none=False)
        loss = pygpu.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step(model, opt, sx, sy)  # warm-up: creates the momentum buffers and .grad
    g = m.Graph()
    with m.graph(g):
        sloss = step(model, opt, sx, sy)
    step(twin, topt, sx, sy)  # the twin's warm-up, same batch
    for xv, yv in batches[1:]:
        sx.copy_(pygpu.tensor(xv).to(dev))
        sy.copy_(pygpu.tensor(yv).to(dev))
        g.replay()
        want = step(twin, topt, pygpu.tensor(xv).to(dev), pygpu.tensor(yv).to(dev))
        np.testing.assert_array_equal(_np(sloss), _np(want))
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_array_equal(_np(p), _np(q))
            np.testing.assert_array_equal(_np(p.grad), _np(q.grad))


HOST_ACTS = [(d, w) for d in DEVICES for w in ("item", "tolist", "numpy", "print", "transfer",
                                               "synchronize")
             if (d, w) != ("cpu", "synchronize")]  # pygpu.cpu.synchronize waits for nothing


@pytest.mark.parametrize("dev,what", HOST_ACTS)
def test_a_host_read_or_transfer_inside_a_capture_drops_it(dev, what, capsys):
    m = _mod(dev)
    x = pygpu.ones(3, device=dev)
    acts = {"item": lambda y: y.sum().item(), "tolist": lambda y: y.tolist(),
            "numpy": lambda y: y.cpu().numpy(), "print": lambda y: print(y),
            "transfer": lambda y: pygpu.ones(3).to(dev),
            "synchronize": lambda y: m.synchronize()}
    if dev == "cpu" and what == "transfer":
        acts[what] = lambda y: pygpu.ones(3, device="sim")  # a node of another device
    g = m.Graph()
    with pytest.raises(RuntimeError, match="inside a graph|captures one device"):
        with m.graph(g):
            acts[what](x * 2)
    assert g.num_ops == 0
    with pytest.raises(RuntimeError, match="nothing captured"):
        g.replay()
    assert (x * 2).tolist() == [2.0, 2.0, 2.0]  # the thread captures no more


@pytest.mark.parametrize("dev", DEVICES)
def test_nodes_a_replay_would_freeze_are_refused_by_the_graph_column(dev):
    m = _mod(dev)
    p = pygpu.nn.Parameter(pygpu.ones(4, device=dev))
    p.grad = pygpu.ones(4, device=dev)
    adam = pygpu.optim.Adam([p], lr=0.1)
    adam.step()
    for body, why in ((lambda: pygpu.rand(4, device=dev), "random seed"),
                      (lambda: adam.step(), "step count")):
        g = m.Graph()
        with pytest.raises(RuntimeError, match=why):
            with m.graph(g):
                body()
        assert g.num_ops == 0


@pytest.mark.parametrize("dev", DEVICES)
def test_an_error_caught_inside_the_capture_still_invalidates_it(dev):
    m = _mod(dev)
    g = m.Graph()
    x = pygpu.ones(2, device=dev)
    with pytest.raises(RuntimeError, match="capture invalidated: .*(host read|host and device)"):
        with m.graph(g):
            try:
                x.sum().item()
            except RuntimeError:
                pass
            x + 1  # refused too: the capture is already broken


@pytest.mark.parametrize("dev", DEVICES)
def test_the_graph_holds_its_memory_and_reset_frees_it(dev):
    m = _mod(dev)
    x = pygpu.ones(1 << 16, device=dev)
    g = m.Graph()
    with m.graph(g):
        t = x * 3.0           # a temporary the graph keeps
        y = t + 1.0
    tid = t.untyped_storage().data_ptr() if dev == "cpu" else None
    del t
    other = pygpu.zeros(1 << 16, device=dev)  # must not land on the temporary's memory
    if tid is not None:
        assert other.untyped_storage().data_ptr() != tid
    g.replay()
    assert _np(y)[:3].tolist() == [4.0, 4.0, 4.0]
    assert _np(other).max() == 0
    g.reset()
    assert g.num_ops == 0
    with m.graph(g):  # capturing again after reset
        z = x - 1.0
    g.replay()
    assert _np(z).max() == 0


def test_a_capture_belongs_to_its_thread_and_does_not_nest():
    g, h = pygpu.cpu.Graph(), pygpu.cpu.Graph()
    x = pygpu.ones(3)
    seen = []
    with pygpu.cpu.graph(g):
        y = x + 1
        t = threading.Thread(target=lambda: seen.append((x + 5).tolist()))  # runs eagerly
        t.start()
        t.join()
        with pytest.raises(RuntimeError, match="do not nest"):
            h.capture_begin()
    assert seen == [[6.0, 6.0, 6.0]] and g.num_ops == 1
    g.replay()
    assert y.tolist() == [2.0, 2.0, 2.0]


def test_replay_runs_no_python():
    """An autograd Function's Python forward runs at the capture, not at the replay: the
    replay is the recorded nodes."""
    calls = []

    class Twice(pygpu.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            calls.append(1)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = pygpu.ones(3)
    g = pygpu.cpu.Graph()
    with pygpu.cpu.graph(g):
        y = Twice.apply(x) + 1
    x.fill_(3.0)
    g.replay()
    g.replay()
    assert calls == [1] and y.tolist() == [7.0, 7.0, 7.0]


def test_the_device_modules_check_their_arguments():
    with pytest.raises(TypeError, match="Graph"):
        pygpu.sim.graph(pygpu.cpu.Graph())
    with pytest.raises(ValueError, match="sim ops"):
        pygpu.sim.Graph().capture_begin(device="cpu")
    with pytest.raises(RuntimeError, match="nothing captured"):
        pygpu.sim.Graph().replay()


@pytest.mark.parametrize("dev", DEVICES)
def test_autograd_sees_writes_made_inside_a_capture(dev):
    """A capture's writes move version counters as eager ones do, so autograd's check of a
    saved tensor modified in place raises at the capture, as eagerly."""
    m = _mod(dev)
    w = pygpu.ones(3, device=dev, requires_grad=True)
    g = m.Graph()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        with m.graph(g):
            a = w * 2
            b = a.exp()      # saves its output
            b.mul_(3)        # ... which is then written in place
            b.sum().backward()
