# test_devices.py - devices as values, the device list, per-backend utilities, transfers.
#
# A Device is (type, index) parsed from "cpu" / "sim" / "sim:1" / "cuda:0",
# compares equal to other Devices and to its string. pygpu.devices() lists what
# is present; PYGPU_SIM_DEVICES sets how many sim devices exist (checked in a
# subprocess, since it is read at import). pygpu.sim and pygpu.cuda expose the
# same utility functions; cuda, when absent, says why. Transfers between every
# pair of devices give the same values, and an op mixing devices is refused
# with a message that names both and suggests .to(...). `python -m pygpu.smi`
# prints the device table. sim.configure refuses link figures that are not finite
# numbers; sim used after the interpreter's atexit shutdown (late atexit handlers,
# finalisers, daemon threads) works or raises, never crashes (checked in child processes).
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import pygpu

from _helpers import run_child, same_device

NAN = float("nan")

# subprocesses must import the pygpu under test (installed, or built in place), never the
# source tree's pygpu/ that lacks the compiled module: run them from where it lives
PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))


@pytest.mark.parametrize("spec,type_,index,text", [
    ("cpu", "cpu", 0, "cpu"), ("sim", "sim", 0, "sim:0"), ("sim:0", "sim", 0, "sim:0"),
    ("sim:1", "sim", 1, "sim:1"),
])
def test_device_parses_type_and_index(spec, type_, index, text):
    d = pygpu.device(spec)
    assert d.type == type_
    assert d.index == index
    assert str(d) == text


def test_device_equality_with_devices_and_strings():
    assert pygpu.device("sim") == pygpu.device("sim:0")
    assert pygpu.device("sim:0") == "sim:0"
    assert pygpu.device("cpu") == "cpu"
    assert pygpu.device("sim:1") != pygpu.device("sim:0")
    assert pygpu.device("cpu") != "sim:0"
    assert not (pygpu.device("sim:1") == "sim:0")
    assert pygpu.device(pygpu.device("sim:1")) == "sim:1"


def test_cuda_device_parses_even_when_absent():
    try:
        d = pygpu.device("cuda:0")
    except pygpu.DeviceUnavailableError:
        assert not pygpu.cuda.is_available()
        return
    assert d.type == "cuda" and d.index == 0 and str(d) == "cuda:0"


def test_devices_lists_cpu_and_every_sim(sim_count):
    names = [str(d) for d in pygpu.devices()]
    expected = ["cpu"] + [f"sim:{i}" for i in range(sim_count)]
    assert names[: len(expected)] == expected
    cuda = [n for n in names if n.startswith("cuda")]
    assert len(cuda) == pygpu.cuda.device_count()
    assert all(isinstance(d, type(pygpu.device("cpu"))) for d in pygpu.devices())


def _run_python(code, **env):
    full_env = dict(os.environ, PYTHONPATH=PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env,
                          timeout=120, cwd=PKG_ROOT)


@pytest.mark.parametrize("count", ["1", "3"])
def test_sim_device_count_follows_environment(count):
    code = ("import pygpu; print(pygpu.sim.device_count(), [str(d) for d in pygpu.devices()]);"
            f"t = pygpu.ones(2, device='sim:{int(count) - 1}'); print(t.numpy().sum())")
    proc = _run_python(code, PYGPU_SIM_DEVICES=count)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.strip().splitlines()
    assert first.split()[0] == count
    assert f"sim:{int(count) - 1}" in first and f"sim:{count}" not in first
    assert second == "2.0"


def test_sim_default_is_two_devices():
    env = {k: v for k, v in os.environ.items() if k != "PYGPU_SIM_DEVICES"}
    env["PYTHONPATH"] = PKG_ROOT
    proc = subprocess.run([sys.executable, "-c", "import pygpu; print(pygpu.sim.device_count())"],
                          capture_output=True, text=True, env=env, timeout=120, cwd=PKG_ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2"


def test_sim_utilities(sim_count, sim_device_restored):
    sim = pygpu.sim
    assert sim.is_available() is True
    assert sim.device_count() == sim_count
    for i in range(sim_count):
        name = sim.get_device_name(i)
        assert isinstance(name, str) and name
    assert sim.current_device() == 0
    sim.set_device(1)
    assert sim.current_device() == 1
    sim.set_device(0)
    assert sim.current_device() == 0
    sim.synchronize()
    for i in range(sim_count):
        assert isinstance(sim.memory_allocated(i), int)
        assert sim.max_memory_allocated(i) >= sim.memory_allocated(i)
        assert isinstance(sim.memory_summary(i), str)
    sim.empty_cache()


def test_sim_set_device_out_of_range_is_refused(sim_count, sim_device_restored):
    with pytest.raises((pygpu.DeviceUnavailableError, ValueError)):
        pygpu.sim.set_device(sim_count)
    assert pygpu.sim.current_device() == 0


def test_cuda_utilities_when_absent():
    if pygpu.cuda.is_available():
        pytest.skip("cuda is present; test_cuda_utilities_when_present covers it")
    cuda = pygpu.cuda
    assert cuda.is_available() is False
    assert cuda.device_count() == 0
    reason = cuda.unavailable_reason()
    assert isinstance(reason, str) and reason
    with pytest.raises(pygpu.DeviceUnavailableError) as info:
        pygpu.zeros(2, device="cuda")
    assert reason in str(info.value)
    # The spec does not say whether these are no-ops or refusals without cuda
    # (PyTorch refuses synchronize); either is fine, any other error is not.
    for call in (cuda.synchronize, cuda.empty_cache, lambda: cuda.manual_seed(1), lambda: cuda.manual_seed_all(1)):
        try:
            call()
        except pygpu.DeviceUnavailableError as e:
            assert reason in str(e)


def test_cuda_utilities_when_present():
    if not pygpu.cuda.is_available():
        pytest.skip(f"cuda absent: {pygpu.cuda.unavailable_reason()}")
    cuda = pygpu.cuda
    assert cuda.device_count() >= 1
    assert isinstance(cuda.get_device_name(0), str) and cuda.get_device_name(0)
    assert cuda.current_device() == 0
    t = pygpu.ones(1000, device="cuda:0")
    cuda.synchronize()
    assert cuda.memory_allocated(0) >= 4000
    assert cuda.max_memory_allocated(0) >= cuda.memory_allocated(0)
    assert isinstance(cuda.memory_summary(0), str)
    assert "cuda:0" in [str(d) for d in pygpu.devices()]
    del t


PAIRS = [("cpu", "sim:0"), ("sim:0", "cpu"), ("sim:0", "sim:1"), ("sim:1", "sim:0"), ("sim:0", "sim:0"),
         ("cpu", "cpu")]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{s}->{d}" for s, d in PAIRS])
def test_transfer_between_devices_keeps_values(src, dst, dtype):
    a = (np.arange(30).reshape(5, 6) % 7).astype(dtype)
    t = pygpu.tensor(a, device=src)
    for moved in (t.to(dst), t.to(pygpu.device(dst)), t.to(dst, non_blocking=True), t.T.to(dst)):
        assert same_device(moved.device, dst)
        assert moved.dtype.name == dtype
    np.testing.assert_array_equal(t.to(dst).numpy(), a)
    np.testing.assert_array_equal(t.T.to(dst).numpy(), a.T)
    nb = t.to(dst, non_blocking=True)
    nb.wait()
    np.testing.assert_array_equal(nb.numpy(), a)
    np.testing.assert_array_equal(t.to(dst).cpu().numpy(), a)


def test_transfer_copies_rather_than_aliases():
    a = np.arange(4.0)
    t = pygpu.from_numpy(a)
    s = t.to("sim")
    a[:] = -1.0
    np.testing.assert_array_equal(s.numpy(), np.arange(4.0))


def test_results_stay_on_their_device():
    for name in ("sim:0", "sim:1"):
        x = pygpu.ones(3, 3, device=name)
        for r in (x + x, x @ x, x.sum(), pygpu.exp(x), x > 0, x * 2, 2 - x, x.T.contiguous()):
            assert same_device(r.device, name), f"{r.device} != {name}"


def test_python_scalars_mix_with_any_device(device):
    x = pygpu.ones(3, device=device)
    np.testing.assert_array_equal((2.0 * x - 1 + x / 2).numpy(), np.full(3, 1.5, np.float32))


@pytest.mark.parametrize("a,b", [("cpu", "sim:0"), ("sim:0", "cpu"), ("sim:0", "sim:1")])
@pytest.mark.parametrize("op", [
    lambda x, y: x + y, lambda x, y: x @ y, lambda x, y: x < y, lambda x, y: pygpu.minimum(x, y),
], ids=["add", "matmul", "lt", "minimum"])
def test_op_on_two_devices_raises_mismatch(a, b, op):
    x, y = pygpu.ones(2, 2, device=a), pygpu.ones(2, 2, device=b)
    with pytest.raises(pygpu.DeviceMismatchError) as info:
        op(x, y)
    msg = str(info.value)
    assert a in msg and b in msg, msg
    assert ".to(" in msg, msg
    assert isinstance(info.value, RuntimeError)


def test_smi_prints_the_devices(sim_count):
    proc = subprocess.run([sys.executable, "-m", "pygpu.smi"], capture_output=True, text=True, timeout=120,
                          cwd=PKG_ROOT, env=dict(os.environ, PYTHONPATH=PKG_ROOT))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "cpu" in out
    for i in range(sim_count):
        assert f"sim:{i}" in out, out
    assert ("cuda" in out) or not pygpu.cuda.is_available()
    assert len(out.strip().splitlines()) >= 1 + sim_count


# ---- sim.configure refuses values that hang or mean something else ------------------------

@pytest.mark.parametrize("kwargs", [
    {"latency_us": NAN}, {"latency_us": math.inf}, {"latency_us": -1.0},
    {"h2d_gbps": NAN}, {"h2d_gbps": math.inf}, {"d2h_gbps": -math.inf}, {"d2h_gbps": NAN},
], ids=lambda k: f"{next(iter(k))}={next(iter(k.values()))}")
def test_sim_configure_refuses_non_finite(kwargs, link_model_off):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=f"{name} must be a finite number"):
        pygpu.sim.configure(**kwargs)
    assert pygpu.sim.link() == {"latency_us": 0.0, "h2d_gbps": 0.0, "d2h_gbps": 0.0}
    # the next transfer still completes
    assert pygpu.ones(4).to("sim:0").cpu().tolist() == [1.0] * 4


# ---- sim use after the atexit shutdown ----------------------------------------------------

SHUTDOWN_CASES = {
    "atexit_before_import": """
        import atexit
        def late():  # registered before pygpu's own handler, so it runs after it
            import pygpu
            t = pygpu.ones(4, device="sim:0")
            print("late", (t + 1).tolist(), (t * 3).sum().item())
            pygpu.synchronize()
            h = pygpu.zeros(4).pin_memory()
            h.copy_(t, non_blocking=True)
            print("copied", h.tolist())
        atexit.register(late)
        import pygpu
        keep = pygpu.ones(1000, device="sim:0") * 2  # streams exist and storages hold events
        keep2 = pygpu.ones(10, device="sim:1") + 1
    """,
    "del_during_finalisation": """
        import pygpu
        class Holder:
            def __init__(self):
                self.t = pygpu.arange(6.0, device="sim:0") * 2
            def __del__(self):
                try:
                    print("del", (self.t + 1).tolist())
                except Exception as e:  # raising is allowed; crashing is not
                    print("del raised", type(e).__name__)
        h = Holder()
        h.self_ref = h  # freed only by the final collection, after atexit
        x = pygpu.ones(4, device="sim:0") + 1
    """,
    "daemon_thread": """
        import threading, time
        import pygpu
        started = threading.Event()
        def work():
            t = pygpu.ones(256, device="sim:0")
            while True:
                t = (t + 1) - 1
                t.sum().item()
                started.set()
        threading.Thread(target=work, daemon=True).start()
        started.wait(30)
        time.sleep(0.05)
        print("exiting")
    """,
    "first_use_after_shutdown": """
        import atexit
        def late():
            import pygpu
            print("late", (pygpu.ones(3, device="sim:1") * 5).tolist())
        atexit.register(late)
        import pygpu
        pygpu.ones(2, device="sim:0") + 1  # sim:1 is never touched before exit
    """,
}


@pytest.mark.parametrize("name", list(SHUTDOWN_CASES))
def test_sim_use_after_shutdown_works_or_raises(name):
    rc, out, err = run_child(SHUTDOWN_CASES[name])
    assert rc == 0, f"child died with {rc}:\n{out}\n{err[-3000:]}"
    assert "Sanitizer" not in err and "Fatal Python error" not in err, err[-3000:]
    if name == "atexit_before_import":
        assert "late [2.0, 2.0, 2.0, 2.0] 12.0" in out and "copied [1.0, 1.0, 1.0, 1.0]" in out
    elif name == "del_during_finalisation":
        assert "del [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]" in out or "del raised" in out, out
    elif name == "daemon_thread":
        assert "exiting" in out
    else:
        assert "late [5.0, 5.0, 5.0]" in out
