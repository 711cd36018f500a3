"""pygpu.compile against eager (issue 45): every model of benchmarks/bench_models.py at tiny
shapes and the MLP trainer, on cpu and sim: the compiled model's outputs, gradients and a few
optimizer steps equal eager's. The API against torch's (the oracle): argument checks and their
exception types, decorator forms, OptimizedModule's `_orig_mod.` state_dict keys and round
trip, Module.compile in place, torch.compiler / torch._dynamo's functions, and the debug flag.

pygpu.compile captures nothing today (pygpu/_dynamo/compiled_function.py): a compiled call runs
eagerly. These tests hold any capture that comes later to the same results."""
import copy
import importlib.util
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICES = ["cpu", "sim"]


def _models():
    spec = importlib.util.spec_from_file_location(
        "bench_models_defs", os.path.join(ROOT, "benchmarks", "_models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


M = _models()


def _np(t):
    return t.detach().to("cpu").numpy()


def _pair(name, dev):
    """The same tiny model twice (the second a copy of the first's weights), on dev."""
    pygpu.manual_seed(0)
    eager = M.BUILDERS[name](pygpu, **M.TINY[name])
    twin = M.BUILDERS[name](pygpu, **M.TINY[name])
    twin.load_state_dict(eager.state_dict())
    return eager.to(dev), twin.to(dev)


def _batch(name, dev):
    x, y = M.example_batch(np.random.default_rng(0), name, M.TINY[name], 4)
    return pygpu.tensor(x).to(dev), pygpu.tensor(y).to(dev)


def _steps(model, call, name, x, y, n):
    """n training steps as bench_models runs them; each step's output, loss and gradients."""
    opt = M.optimizer(pygpu, name, model)
    clip = M.CLIP.get(name)
    seen = []
    for _ in range(n):
        opt.zero_grad()
        out = call(x)
        loss = M.loss_of(pygpu, name, out, y)
        loss.backward()
        seen.append((_np(out), float(loss.item()),
                     [_np(p.grad) for p in model.parameters() if p.grad is not None]))
        if clip is not None:
            pygpu.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
    return seen


def _assert_same(a, b):
    for (out_a, loss_a, grads_a), (out_b, loss_b, grads_b) in zip(a, b, strict=True):
        np.testing.assert_allclose(out_b, out_a, rtol=1e-5, atol=1e-6)
        assert loss_b == pytest.approx(loss_a, rel=1e-6, abs=1e-7)
        assert len(grads_a) == len(grads_b) > 0
        for ga, gb in zip(grads_a, grads_b):
            np.testing.assert_allclose(gb, ga, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("how", ["pygpu.compile", "Module.compile"])
@pytest.mark.parametrize("name", sorted(M.BUILDERS))
def test_every_bench_model_trains_as_eager(name, how, dev):
    eager, twin = _pair(name, dev)
    x, y = _batch(name, dev)
    if how == "pygpu.compile":
        call = pygpu.compile(twin)
        assert isinstance(call, pygpu._dynamo.OptimizedModule) and call._orig_mod is twin
    else:
        twin.compile()
        call = twin
    want = _steps(eager, eager, name, x, y, 3)
    got = _steps(twin, call, name, x, y, 3)
    _assert_same(want, got)
    for (k, a), (k2, b) in zip(eager.state_dict().items(), twin.state_dict().items(),
                               strict=True):
        assert k == k2
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("name", sorted(M.BUILDERS))
def test_every_bench_model_infers_as_eager(name, dev):
    eager, twin = _pair(name, dev)
    eager.eval()
    compiled = pygpu.compile(twin, mode="reduce-overhead")
    compiled.eval()
    assert not twin.training  # eval() on the OptimizedModule reaches the original
    x, _ = _batch(name, dev)
    with pygpu.no_grad():
        np.testing.assert_allclose(_np(compiled(x)), _np(eager(x)), rtol=1e-5, atol=1e-6)


def _mlp():
    nn = pygpu.nn
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))


@pytest.mark.parametrize("dev", DEVICES)
def test_the_mlp_trainer_fits_a_compiled_model_as_eager(dev):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((64, 12)).astype("float32")
    y = rng.integers(0, 3, 64)
    runs = []
    for compiled in (False, True):
        pygpu.manual_seed(0)
        model = _mlp()
        fwd = pygpu.compile(model) if compiled else model
        opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        trainer = pygpu.Trainer(fwd, opt, pygpu.nn.CrossEntropyLoss(), device=dev)
        hist = trainer.fit(X, y, epochs=2, batch_size=16, progress=False, shuffle=False)
        runs.append(([h["loss"] for h in hist], [_np(p) for p in model.parameters()]))
    (loss_e, params_e), (loss_c, params_c) = runs
    np.testing.assert_allclose(loss_c, loss_e, rtol=1e-6)
    for a, b in zip(params_e, params_c):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


# ---- OptimizedModule and its state_dict, against torch's ---------------------------------

def test_optimized_module_state_dict_keys_are_torchs():
    pygpu.manual_seed(0)
    mine = pygpu.compile(_mlp())
    theirs = torch.compile(torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(),
                                               torch.nn.Linear(16, 3)))
    assert list(mine.state_dict()) == list(theirs.state_dict())
    assert all(k.startswith("_orig_mod.") for k in mine.state_dict())
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert type(mine).__name__ == type(theirs).__name__ == "OptimizedModule"
    assert repr(mine).splitlines()[:2] == ["OptimizedModule(", "  (_orig_mod): Sequential("]


def test_state_dict_round_trip_through_the_orig_mod_prefix(tmp_path):
    pygpu.manual_seed(0)
    model = _mlp()
    compiled = pygpu.compile(model)
    path = str(tmp_path / "ckpt.pt")
    pygpu.save(compiled.state_dict(), path)
    state = pygpu.load(path)
    # into another compiled model: keys as saved
    pygpu.manual_seed(1)
    other = pygpu.compile(_mlp())
    other.load_state_dict(state)
    # into a plain model: the prefix stripped, as nanoGPT's sample.py does
    plain = _mlp()
    plain.load_state_dict({k[len("_orig_mod."):]: v for k, v in state.items()})
    x = pygpu.randn(5, 12)
    for m in (other, plain):
        np.testing.assert_array_equal(_np(m(x)), _np(model(x)))
    # the plain keys into a compiled model are missing/unexpected, as in torch
    with pytest.raises(RuntimeError, match="_orig_mod.0.weight"):
        pygpu.compile(_mlp()).load_state_dict(plain.state_dict())


def test_optimized_module_is_a_view_of_the_original():
    model = _mlp()
    compiled = pygpu.compile(model)
    assert compiled._orig_mod is model
    assert list(compiled.parameters()) == list(model.parameters())
    assert len(compiled) == 3 and compiled.forward is not model.forward
    assert compiled._modules["_orig_mod"] is model
    model.extra = pygpu.nn.Linear(2, 2)
    assert compiled.extra is model.extra  # what the wrapper lacks is read from the original
    compiled.note = "set through the wrapper"
    assert model.note == "set through the wrapper"
    compiled.eval()
    assert (compiled.training, model.training, model[0].training) == (False, False, False)
    compiled.train()
    assert compiled.training and model.training and model[0].training
    model.eval()
    assert not compiled.training  # training is the original's
    assert compiled.to("sim") is compiled and model[0].weight.device.type == "sim"


def test_module_compile_is_in_place_and_keeps_the_keys():
    model = _mlp()
    keys = list(model.state_dict())
    x = pygpu.randn(2, 12)
    want = _np(model(x))
    assert model.compile(mode="max-autotune") is None
    assert type(model) is pygpu.nn.Sequential and list(model.state_dict()) == keys
    np.testing.assert_array_equal(_np(model(x)), want)
    again = pickle.loads(pickle.dumps(model))  # a pickled module is not compiled, as in torch
    assert again._compiled_call_impl is None
    np.testing.assert_array_equal(_np(again(x)), want)


def test_hooks_run_once_per_call():
    model = _mlp()
    calls = []
    model.register_forward_pre_hook(lambda m, a: calls.append("pre"))
    model.register_forward_hook(lambda m, a, out: out * 2)
    x = pygpu.randn(2, 12)
    want = _np(model(x))
    calls.clear()
    for compiled in (pygpu.compile(model), copy.deepcopy(model)):
        if not isinstance(compiled, pygpu._dynamo.OptimizedModule):
            compiled.compile()
        np.testing.assert_allclose(_np(compiled(x)), want, rtol=1e-6)
    assert calls == ["pre", "pre"]


def test_compiled_module_pickles_and_copies():
    model = _mlp()
    compiled = pygpu.compile(model, backend="eager")
    x = pygpu.randn(3, 12)
    want = _np(model(x))
    for again in (pickle.loads(pickle.dumps(compiled)), copy.deepcopy(compiled)):
        assert isinstance(again, pygpu._dynamo.OptimizedModule)
        assert list(again.state_dict()) == list(compiled.state_dict())
        np.testing.assert_array_equal(_np(again(x)), want)


# ---- the API: forms, arguments and their errors, against torch ------------------------------

def test_call_decorator_and_decorator_factory():
    def f(x, scale=1.0):
        return (x * scale).relu() + 1

    x = pygpu.randn(4, 3)
    want = _np(f(x, scale=2.0))
    g = pygpu.compile(f)
    assert g.__wrapped__ is f and g.__name__ == "f"
    np.testing.assert_array_equal(_np(g(x, scale=2.0)), want)

    @pygpu.compile
    def h(x, scale=1.0):
        return (x * scale).relu() + 1

    @pygpu.compile(mode="reduce-overhead", fullgraph=True, dynamic=True)
    def k(x, scale=1.0):
        return (x * scale).relu() + 1

    for fn in (h, k):
        np.testing.assert_array_equal(_np(fn(x, scale=2.0)), want)

    class Scaler:
        factor = 3.0

        @pygpu.compile
        def apply(self, x):
            return x * self.factor

    np.testing.assert_array_equal(_np(Scaler().apply(x)), _np(x * 3.0))


def test_disable_hands_the_callable_back_as_torch():
    def f(x):
        return x

    model = _mlp()
    assert pygpu.compile(f, disable=True) is f and torch.compile(f, disable=True) is f
    assert pygpu.compile(model, disable=True) is model
    pygpu._dynamo.config.disable = True
    try:
        assert pygpu.compile(model) is model
    finally:
        pygpu._dynamo.config.disable = False


@pytest.mark.parametrize("kwargs", [dict(mode="fast"), dict(mode="default", options={}),
                                    dict(backend="no_such_backend")])
def test_bad_arguments_raise_as_torch(kwargs):
    def f(x):
        return x + 1

    with pytest.raises(RuntimeError) as theirs:
        torch.compile(f, **kwargs)
    with pytest.raises(RuntimeError) as mine:
        pygpu.compile(f, **kwargs)
    assert type(mine.value).__name__ == type(theirs.value).__name__
    assert str(mine.value) == str(theirs.value).replace("torch._dynamo", "pygpu._dynamo")
    with pytest.raises(RuntimeError):
        pygpu.compile(_mlp(), **kwargs)  # a module is checked the same way


def test_none_and_non_callables_raise_as_torch():
    with pytest.raises(RuntimeError, match="Model can't be None"):
        pygpu.compile()(None)
    with pytest.raises(AssertionError, match="A callable function is expected"):
        pygpu.compile(5)


@pytest.mark.parametrize("backend", ["inductor", "eager", "aot_eager", "cudagraphs"])
def test_pytorchs_backend_names_are_accepted(backend):
    assert backend in torch._dynamo.list_backends(exclude_tags=None)
    f = pygpu.compile(lambda x: x * 2, backend=backend, mode="reduce-overhead")
    np.testing.assert_array_equal(_np(f(pygpu.ones(2))), [2.0, 2.0])


def test_list_backends_and_register_backend():
    assert set(pygpu._dynamo.list_backends()) <= set(torch._dynamo.list_backends())
    assert {"inductor", "cudagraphs"} <= set(pygpu.compiler.list_backends())
    assert "eager" in pygpu._dynamo.list_backends(exclude_tags=None)

    @pygpu._dynamo.register_backend(name="counting_backend_test")
    def counting(gm, example_inputs):
        return gm

    assert "counting_backend_test" in pygpu._dynamo.list_backends()
    f = pygpu.compile(lambda x: x + 1, backend="counting_backend_test")
    g = pygpu.compile(lambda x: x + 1, backend=counting)  # a callable backend
    for fn in (f, g):
        np.testing.assert_array_equal(_np(fn(pygpu.zeros(2))), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="duplicate name"):
        pygpu._dynamo.register_backend(counting, name="counting_backend_test")


def test_compiler_and_dynamo_functions():
    assert pygpu.compiler.is_compiling() is False is torch.compiler.is_compiling()
    assert pygpu._dynamo.is_compiling() is False and pygpu.compiler.is_dynamo_compiling() is False
    assert pygpu.compiler.is_exporting() is False
    pygpu.compiler.reset()
    pygpu._dynamo.reset()

    def f(x):
        return x * 2

    for disable in (pygpu.compiler.disable, pygpu._dynamo.disable):
        d = disable(f)
        assert d.__wrapped__ is f and d._torchdynamo_disable
        assert disable()(f)(3) == 6 and disable(recursive=False)(f)(3) == 6
    m = pygpu._dynamo.disable(_mlp())
    assert type(m).__name__ == "OptimizedModule" == type(torch._dynamo.disable(
        torch.nn.Linear(2, 2))).__name__
    assert pygpu.compiler.allow_in_graph(f) is f and pygpu.compiler.assume_constant_result(f) is f
    pygpu.compiler.cudagraph_mark_step_begin()
    t = pygpu.ones(3, 4)
    pygpu._dynamo.mark_dynamic(t, 0)
    pygpu._dynamo.maybe_mark_dynamic(t, 1)
    pygpu._dynamo.mark_static(t, 0)
    opt = pygpu._dynamo.optimize("eager")(f)
    assert opt(2) == 4
    with pytest.raises(RuntimeError, match="Invalid backend"):
        pygpu._dynamo.optimize("no_such_backend")


def test_set_stance_as_call_context_and_decorator():
    g = pygpu.compile(lambda x: x + 1)
    with pygpu.compiler.set_stance("force_eager"):
        assert g(1) == 2
    pygpu.compiler.set_stance("eager_on_recompile")
    pygpu.compiler.set_stance("default")

    @pygpu.compiler.set_stance("force_eager")
    def run():
        return g(2)
    assert run() == 3
    with pygpu.compiler.set_stance("no_such_stance"):  # checked when a compiled call runs
        with pytest.raises(RuntimeError, match="invalid torch.compile stance"):
            g(1)
    assert g(1) == 2


def test_dynamo_config_has_torchs_settings_and_refuses_others():
    cfg = pygpu._dynamo.config
    for name in ("suppress_errors", "verbose", "cache_size_limit", "recompile_limit",
                 "automatic_dynamic_shapes", "optimize_ddp", "capture_scalar_outputs"):
        assert getattr(cfg, name) == getattr(torch._dynamo.config, name), name
    old = cfg.suppress_errors
    cfg.suppress_errors = True
    cfg.suppress_errors = old
    with pytest.raises(AttributeError, match="does not exist"):
        cfg.suppress_errorz = True
    with pytest.raises(AttributeError, match="does not exist"):
        cfg.no_such_setting


# ---- always correct: control flow on values, new shapes, Python state, in-place -------------

def _branchy(x):
    if x.sum().item() > 0:  # data-dependent Python control flow: no graph can hold it
        return x * 2
    return x - 1


def test_data_dependent_control_flow_falls_back_and_says_so(capsys):
    f = pygpu.compile(_branchy)
    pos, neg = pygpu.ones(3), -pygpu.ones(3)
    pygpu._dynamo.config.verbose = True
    try:
        pygpu._dynamo.reset()
        np.testing.assert_array_equal(_np(f(pos)), [2.0, 2.0, 2.0])
        np.testing.assert_array_equal(_np(f(neg)), [-2.0, -2.0, -2.0])
    finally:
        pygpu._dynamo.config.verbose = False
    err = capsys.readouterr().err
    assert err.count("[pygpu.compile]") == 1  # once per function until reset
    assert "_branchy" in err and "runs eagerly" in err
    f(pos)
    assert capsys.readouterr().err == ""  # no debug flag, no message


def test_torch_logs_env_turns_the_message_on():
    code = ("import pygpu\n"
            "f = pygpu.compile(lambda x: x + 1, mode='max-autotune')\n"
            "assert f(pygpu.ones(2)).tolist() == [2.0, 2.0]\n")
    env = dict(os.environ, TORCH_LOGS="graph_breaks", PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[pygpu.compile]" in out.stderr and "'max-autotune'" in out.stderr


@pytest.mark.parametrize("dev", DEVICES)
def test_new_shapes_dtypes_and_grad_modes_recompute(dev):
    def f(x, w):
        return (x @ w).tanh().sum(dim=0)

    g = pygpu.compile(f, dynamic=False)
    for shape, dtype, grad in [((4, 3), pygpu.float32, False), ((7, 3), pygpu.float32, True),
                               ((2, 3), pygpu.float64, True), ((4, 3), pygpu.float32, False)]:
        x = pygpu.randn(*shape, dtype=dtype, device=dev)
        w = pygpu.randn(3, 5, dtype=dtype, device=dev, requires_grad=grad)
        got, want = g(x, w), f(x, w)
        assert got.shape == want.shape and got.dtype == want.dtype == dtype
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-6)
        assert got.requires_grad == grad
        if grad:
            (gw,) = pygpu.autograd.grad(got.sum(), [w])
            (ww,) = pygpu.autograd.grad(f(x, w).sum(), [w])
            np.testing.assert_allclose(_np(gw), _np(ww), rtol=1e-6)


def test_python_state_read_by_the_function_is_read_each_call():
    state = {"scale": 2.0}

    def f(x):
        return x * state["scale"]

    g = pygpu.compile(f)
    x = pygpu.ones(2)
    assert g(x).tolist() == [2.0, 2.0]
    state["scale"] = 5.0
    assert g(x).tolist() == [5.0, 5.0]


def test_in_place_on_inputs_happens_once_per_call():
    def bump(x):
        x.add_(1)
        return x * 2

    g = pygpu.compile(bump)
    x = pygpu.zeros(3)
    out = g(x)
    assert x.tolist() == [1.0, 1.0, 1.0] and out.tolist() == [2.0, 2.0, 2.0]
    g(x)
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_exceptions_pass_through_unchanged():
    g = pygpu.compile(lambda a, b: a @ b)
    with pytest.raises(RuntimeError) as mine:
        g(pygpu.ones(2, 3), pygpu.ones(2, 3))
    with pytest.raises(RuntimeError) as plain:
        pygpu.ones(2, 3) @ pygpu.ones(2, 3)
    assert str(mine.value) == str(plain.value)


def test_torch_programs_reach_it_through_install_as_torch():
    code = ("import pygpu\n"
            "pygpu.install_as_torch()\n"
            "import torch, torch._dynamo\n"
            "from torch._dynamo.eval_frame import OptimizedModule\n"
            "torch._dynamo.config.suppress_errors = True\n"
            "model = torch.compile(torch.nn.Linear(3, 2), mode='max-autotune')\n"
            "assert isinstance(model, OptimizedModule) and not torch.compiler.is_compiling()\n"
            "state = {k.removeprefix('_orig_mod.'): v for k, v in model.state_dict().items()}\n"
            "plain = torch.nn.Linear(3, 2)\n"
            "plain.load_state_dict(state)\n"
            "x = torch.randn(4, 3)\n"
            "assert plain(x).tolist() == model(x).tolist()\n"
            "torch._dynamo.reset()\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=ROOT),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_bench_compile_runs(capsys):
    spec = importlib.util.spec_from_file_location(
        "bench_compile", os.path.join(ROOT, "benchmarks", "bench_compile.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["--calls", "20", "--reps", "1"])
    out = capsys.readouterr().out
    assert out.count("| identity module:") == 3 and "| x + 1: pygpu.compile(fn) |" in out
    assert pygpu.nn.Module.__call__ is not pygpu.nn.Module._call_impl  # restored
