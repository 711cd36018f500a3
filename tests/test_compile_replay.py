"""pygpu.compile's capture and replay (mode="reduce-overhead", pygpu/_dynamo/replay.py) against
eager, on cpu and sim: every bench_models.py model's inference under no_grad and a whole
training step (forward, backward, clipping, optimizer step) compiled as a function, for several
calls with changing inputs and a parameter changed in place between calls, bit for bit (a replay
runs the same nodes in the same order). A callable a capture would get wrong (Adam's step count,
.item(), an input written in place) runs eagerly, says so under the debug flag, and is still
eager's. The guards: shapes, grad mode, training, the parameters' identity, the optimizer's
hyperparameters."""
import importlib.util
import os

import numpy as np
import pytest

import pygpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICES = ["cpu", "sim"]
CALLS = 5


def _models():
    spec = importlib.util.spec_from_file_location(
        "bench_models_defs_replay", os.path.join(ROOT, "benchmarks", "_models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


M = _models()


def _np(t):
    return t.detach().to("cpu").numpy()


def _pair(name, dev):
    pygpu.manual_seed(0)
    eager = M.BUILDERS[name](pygpu, **M.TINY[name])
    twin = M.BUILDERS[name](pygpu, **M.TINY[name])
    twin.load_state_dict(eager.state_dict())
    return eager.to(dev), twin.to(dev)


def _batches(name, dev, n):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        x, y = M.example_batch(rng, name, M.TINY[name], 4)
        out.append((pygpu.tensor(x).to(dev), pygpu.tensor(y).to(dev)))
    return out


def _replayer(compiled):
    fn = compiled.forward if isinstance(compiled, pygpu._dynamo.OptimizedModule) else compiled
    return fn._replayer


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("name", sorted(M.BUILDERS))
def test_every_bench_model_infers_as_eager_through_replays(name, dev):
    eager, twin = _pair(name, dev)
    eager.eval()
    compiled = pygpu.compile(twin, mode="reduce-overhead")
    compiled.eval()
    outs = []
    with pygpu.no_grad():
        for i, (x, _) in enumerate(_batches(name, dev, CALLS)):
            got, want = compiled(x), eager(x)
            np.testing.assert_array_equal(_np(got), _np(want))
            outs.append((got, _np(got)))
            if i == 2:  # a parameter changed in place between calls: the replay reads it
                for m in (eager, twin):
                    next(iter(m.parameters())).mul_(0.5)
    r = _replayer(compiled)
    assert r.eager_reason is None, r.eager_reason
    assert r.captures == 1 and r.replays == CALLS - 2  # warm-up and probe ran eagerly
    for t, seen in outs:  # an output is a clone: later calls never overwrite it
        np.testing.assert_array_equal(_np(t), seen)


def _step_fn(name, model, opt):
    clip = M.CLIP.get(name)

    def step(x, y):
        opt.zero_grad()
        loss = M.loss_of(pygpu, name, model(x), y)
        loss.backward()
        if clip is not None:
            pygpu.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        return loss
    return step


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("name", sorted(M.BUILDERS))
def test_every_bench_models_training_step_compiled_as_a_function_is_eagers(name, dev):
    # bit for bit: on pygpu's own convolution kernels. On oneDNN's (the default where the
    # library loads) a replay agreed to float32 rounding only in CI's run (2026-11-29: 3e-6 in
    # MobileNetV2's first weight after four steps, in a worker where torch's tests ran first;
    # not reproduced alone, not yet explained: the OpenMP state of the thread that runs the
    # node, which torch shares once imported, is the suspect)
    prev = pygpu.backends.mkldnn.get_conv_path()
    pygpu.backends.mkldnn.set_conv_path("own")
    try:
        _training_step_compiled_is_eagers(name, dev)
    finally:
        pygpu.backends.mkldnn.set_conv_path(prev)


def _training_step_compiled_is_eagers(name, dev):
    eager, twin = _pair(name, dev)
    step_e = _step_fn(name, eager, M.optimizer(pygpu, name, eager))
    step_c = pygpu.compile(_step_fn(name, twin, M.optimizer(pygpu, name, twin)),
                           mode="reduce-overhead")
    for i, (x, y) in enumerate(_batches(name, dev, CALLS)):
        got, want = step_c(x, y), step_e(x, y)
        np.testing.assert_array_equal(_np(got), _np(want))
        for (k, a), (_, b) in zip(eager.named_parameters(), twin.named_parameters()):
            np.testing.assert_array_equal(_np(b), _np(a), err_msg=k)
            np.testing.assert_array_equal(_np(b.grad), _np(a.grad), err_msg=k)
        if i == 2:
            with pygpu.no_grad():
                for m in (eager, twin):
                    next(iter(m.parameters())).mul_(0.5)
    r = _replayer(step_c)
    if name in ("gpt", "vit"):  # AdamW's step count would be frozen: eager, and said why
        assert r.captures == 0 and "step count" in r.eager_reason
    else:
        assert r.eager_reason is None and r.captures == 1 and r.replays == CALLS - 2


@pytest.mark.parametrize("dev", DEVICES)
def test_guards_recapture_on_shape_training_lr_and_new_parameters(dev):
    pygpu.manual_seed(0)
    nn = pygpu.nn
    model = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.0), nn.ReLU(), nn.Linear(8, 3)).to(dev)
    ref = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.0), nn.ReLU(), nn.Linear(8, 3)).to(dev)
    ref.load_state_dict(model.state_dict())
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ropt = pygpu.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)

    def make(m, o):
        def step(x, y):
            o.zero_grad()
            loss = pygpu.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            o.step()
            return loss
        return step
    step, rstep = pygpu.compile(make(model, opt), mode="reduce-overhead"), make(ref, opt and ropt)
    rng = np.random.default_rng(3)

    def batch(n):
        return (pygpu.tensor(rng.standard_normal((n, 6)).astype(np.float32)).to(dev),
                pygpu.tensor(rng.integers(0, 3, n)).to(dev))

    def check(n):
        x, y = batch(n)
        np.testing.assert_array_equal(_np(step(x, y)), _np(rstep(x, y)))
        for a, b in zip(model.parameters(), ref.parameters()):
            np.testing.assert_array_equal(_np(a), _np(b))

    r = step._replayer
    for _ in range(4):
        check(4)
    assert r.captures == 1 and r.replays == 2
    for _ in range(3):   # a new batch size: its own warm-up, probe and capture
        check(5)
    assert r.captures == 2
    for g in (opt.param_groups[0], ropt.param_groups[0]):  # a schedule changes the lr
        g["lr"] = 0.05
    for _ in range(3):
        check(4)
    assert r.captures == 3  # the captured lr would be wrong: captured again
    model.eval(), ref.eval()
    for _ in range(3):
        check(4)
    assert r.captures == 4
    model.train(), ref.train()
    for m, o in ((model, opt), (ref, ropt)):  # new parameter objects: the old graph reads
        new_w = pygpu.nn.Parameter(m[0].weight.detach().clone())  # the old ones
        m[0].weight = new_w
        o.param_groups[0]["params"][0] = new_w
    for _ in range(3):
        check(4)
    assert r.captures == 5 and r.eager_reason is None
    replays = r.replays
    check(4)
    assert r.replays == replays + 1


def test_what_a_capture_would_get_wrong_runs_eagerly_and_says_why(capsys):
    def reads(x):
        return x * (x.sum().item() + 1)

    def writes(x):
        x.add_(1)
        return x * 2

    def draws(x):
        return x + pygpu.rand(x.shape)

    pygpu._dynamo.config.verbose = True
    try:
        for fn, why in ((reads, "host read"), (writes, "writes into its input"),
                        (draws, "random seed")):
            c = pygpu.compile(fn, mode="reduce-overhead")
            xs, xe = pygpu.ones(3), pygpu.ones(3)
            for _ in range(4):
                got, want = c(xs), fn(xe)
                if fn is not draws:
                    np.testing.assert_array_equal(_np(got), _np(want))
                    np.testing.assert_array_equal(_np(xs), _np(xe))
            assert c._replayer.captures == 0 and why in c._replayer.eager_reason
            assert why in capsys.readouterr().err
    finally:
        pygpu._dynamo.config.verbose = False


def test_a_training_forward_of_a_compiled_module_runs_eagerly():
    model = pygpu.nn.Linear(3, 2)
    compiled = pygpu.compile(model, mode="reduce-overhead")
    x = pygpu.ones(4, 3)
    for _ in range(3):
        compiled(x).sum().backward()   # the output carries its graph, as eagerly
    r = compiled.forward._replayer
    assert r.eager_reason is None and "grad mode on" in r.eager_calls_reason
    with pygpu.no_grad():  # evaluation of the same module still replays
        for _ in range(4):
            np.testing.assert_array_equal(_np(compiled(x)), _np(model(x)))
    assert r.captures == 1 and r.replays == 2


def test_the_default_mode_captures_nothing():
    c = pygpu.compile(lambda x: x + 1)
    assert c._replayer is None
    assert pygpu.compile(lambda x: x + 1, backend="cudagraphs")._replayer is not None


def test_captures_are_bounded_by_the_cache_size_limit():
    c = pygpu.compile(lambda x: x * 2, mode="reduce-overhead")
    old = pygpu._dynamo.config.cache_size_limit
    c._replayer.limit = 2
    try:
        for n in range(1, 6):
            for _ in range(3):
                np.testing.assert_array_equal(_np(c(pygpu.ones(n))), [2.0] * n)
    finally:
        pygpu._dynamo.config.cache_size_limit = old
    assert c._replayer.captures == 2 and "cache_size_limit" in c._replayer.eager_reason


def test_python_values_the_function_reads_are_guards():
    state = {"scale": 2.0}

    def helper(x):
        return x + OFFSET[0]

    def f(x):
        return helper(x * state["scale"])

    c = pygpu.compile(f, mode="reduce-overhead")
    x = pygpu.ones(2)
    for scale, offset in ((2.0, 0.0), (2.0, 0.0), (2.0, 0.0), (2.0, 0.0), (5.0, 0.0),
                          (5.0, 0.0), (5.0, 1.0), (5.0, 1.0), (5.0, 1.0)):
        state["scale"], OFFSET[0] = scale, offset
        assert c(x).tolist() == [scale + offset] * 2
    # each new value: warm-up, probe, then capture (5.0 with 0.0 got two calls only)
    assert c._replayer.eager_reason is None and c._replayer.captures == 2


OFFSET = [0.0]


def test_a_function_that_changes_python_state_it_reads_runs_eagerly():
    count = {"n": 0}

    def f(x):
        count["n"] += 1
        return x * count["n"]

    c = pygpu.compile(f, mode="reduce-overhead")
    c._replayer.limit = 2
    x = pygpu.ones(2)
    for i in range(1, 13):  # its key is new at every call: never probed, never captured
        assert c(x).tolist() == [float(i)] * 2
    assert c._replayer.captures == 0 and "every call" in c._replayer.eager_reason

    c = pygpu.compile(f, mode="reduce-overhead")
    for _ in range(4):  # the caller resets the counter: each call starts from the same key,
        count["n"] = 0  # but a replay would not bump it
        assert c(x).tolist() == [1.0, 1.0] and count["n"] == 1
    assert c._replayer.captures == 0 and "changes Python values" in c._replayer.eager_reason
