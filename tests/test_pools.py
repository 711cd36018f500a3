# test_pools.py - each device's own compute threads (csrc/core/pg_pool.c) and the
# splitting of large ops over them (csrc/backends/cpu/cpu_parallel*.c).
#
# The contract: a result never depends on how many threads computed it. Every
# case in CASES runs at a size that takes the threaded path (100,003 elements,
# odd shapes so slices have ragged tails) on the cpu device with 1, 2 and 3
# threads (3 > cores here: uneven slices) and must be bit-for-bit the same each
# time and match NumPy; the same cases on a sim device with PYGPU_SIM_THREADS=1
# and 3 (in subprocesses: the share is fixed per process) must agree too.
# Matmul is the one exception: BLAS may order a panel's sums differently, so
# it is compared with a tolerance. Then: PYGPU_SIM_THREADS is honoured (thread
# names in /proc/self/task/*/comm), a device's work runs only on its own
# threads, and set_num_threads/get_num_threads work and reject bad input.
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
N = 100_003  # odd: every slice boundary but the first has a tail


def _inputs(dtype, rng=None):
    rng = rng or np.random.default_rng(8)
    x = rng.standard_normal(N).astype(dtype)
    x[[5, 77_777]] = x[[9, 60_000]]  # exact ties, across what are different slices
    m = rng.standard_normal((317, 331)).astype(dtype)
    return {
        "x": x,
        "pos": np.abs(x) + np.asarray(0.5, dtype),
        "y": rng.standard_normal(N).astype(dtype),
        "m": m,
        "row": rng.standard_normal(331).astype(dtype),
        "tall": rng.standard_normal((40_001, 3)).astype(dtype),
        "wide": rng.standard_normal((3, 40_001)).astype(dtype),
        "cube": rng.standard_normal((7, 11, 1301)).astype(dtype),
        "nan": np.where(np.arange(N) == 70_001, np.nan, x).astype(dtype),
        "i": rng.integers(-1000, 1000, N),
        "kn": rng.standard_normal((331, 1001)).astype(dtype),
        "ba": rng.standard_normal((8, 65, 67)).astype(dtype),
        "bb": rng.standard_normal((8, 67, 71)).astype(dtype),
    }


# name -> (pygpu function of the input dict, NumPy reference); every one an exact match
CASES = {
    "neg": (lambda t: -t["x"], lambda a: -a["x"]),
    "abs": (lambda t: t["x"].abs(), lambda a: np.abs(a["x"])),
    "exp": (lambda t: t["x"].exp(), lambda a: np.exp(a["x"])),
    "log": (lambda t: t["pos"].log(), lambda a: np.log(a["pos"])),
    "sqrt": (lambda t: t["pos"].sqrt(), lambda a: np.sqrt(a["pos"])),
    "tanh": (lambda t: t["x"].tanh(), lambda a: np.tanh(a["x"])),
    "sigmoid": (lambda t: t["x"].sigmoid(), lambda a: 1 / (1 + np.exp(-a["x"]))),
    "relu": (lambda t: t["x"].relu(), lambda a: np.maximum(a["x"], 0)),
    "add": (lambda t: t["x"] + t["y"], lambda a: a["x"] + a["y"]),
    "div": (lambda t: t["x"] / t["y"], lambda a: a["x"] / a["y"]),
    "mul_scalar": (lambda t: t["x"] * 3.0, lambda a: a["x"] * a["x"].dtype.type(3.0)),
    "bias_add": (lambda t: t["m"] + t["row"], lambda a: a["m"] + a["row"]),
    "transposed_add": (lambda t: t["m"].T + t["m"].T, lambda a: a["m"].T + a["m"].T),
    "maximum": (lambda t: pygpu.maximum(t["x"], t["y"]), lambda a: np.maximum(a["x"], a["y"])),
    "less": (lambda t: t["x"] < t["y"], lambda a: a["x"] < a["y"]),
    "int_add": (lambda t: t["i"] + t["i"], lambda a: a["i"] + a["i"]),
    "cast": (lambda t: t["x"].astype(pygpu.int64), lambda a: a["x"].astype(np.int64)),
    "strided_copy": (lambda t: t["m"].T.contiguous(), lambda a: np.ascontiguousarray(a["m"].T)),
    "sum_all": (lambda t: t["x"].sum(), None),
    "sum_axis0": (lambda t: t["tall"].sum(axis=0), None),
    "sum_axis1": (lambda t: t["m"].sum(axis=1), None),
    "sum_wide0": (lambda t: t["wide"].sum(axis=0), None),
    "sum_cube1": (lambda t: t["cube"].sum(axis=1), None),
    "int_sum": (lambda t: t["i"].sum(), lambda a: a["i"].sum()),
    "mean_all": (lambda t: t["x"].mean(), None),
    "max_all": (lambda t: t["x"].max(), lambda a: a["x"].max()),
    "min_axis0": (lambda t: t["tall"].min(axis=0), lambda a: a["tall"].min(axis=0)),
    "max_axis1": (lambda t: t["m"].max(axis=1), lambda a: a["m"].max(axis=1)),
    "argmax_all": (lambda t: t["x"].argmax(), lambda a: a["x"].argmax()),
    "argmax_ties": (lambda t: (-t["x"].abs()).argmax(), lambda a: (-np.abs(a["x"])).argmax()),
    "argmax_axis0": (lambda t: t["tall"].argmax(axis=0), lambda a: a["tall"].argmax(axis=0)),
    "argmax_cube1": (lambda t: t["cube"].argmax(axis=1), lambda a: a["cube"].argmax(axis=1)),
    "max_nan": (lambda t: t["nan"].max(), lambda a: a["nan"].max()),
    "argmax_nan": (lambda t: t["nan"].argmax(), lambda a: a["nan"].argmax()),
    "rand": (lambda t: (pygpu.manual_seed(5), pygpu.rand(N, dtype=t["x"].dtype, device=t["x"].device))[1], None),
    "randn": (lambda t: (pygpu.manual_seed(5), pygpu.randn(317, 331, dtype=t["x"].dtype, device=t["x"].device))[1], None),
    "full": (lambda t: pygpu.full((317, 331), 2.5, dtype=t["x"].dtype, device=t["x"].device), lambda a: np.full((317, 331), 2.5, a["x"].dtype)),
}
MATMULS = {  # name -> operands from the input dict: row panels, column panels, batches
    "rows": lambda d: (d["m"], d["m"].T),
    "cols": lambda d: (d["m"][:3], d["kn"]),
    "batch": lambda d: (d["ba"], d["bb"]),
}
# sums over many terms: compared to NumPy (float64 accumulation) with a tolerance;
# across thread counts they must still be exactly equal
SUM_REF = {
    "sum_all": lambda a: a["x"].sum(dtype=np.float64),
    "sum_axis0": lambda a: a["tall"].sum(axis=0, dtype=np.float64),
    "sum_axis1": lambda a: a["m"].sum(axis=1, dtype=np.float64),
    "sum_wide0": lambda a: a["wide"].sum(axis=0, dtype=np.float64),
    "sum_cube1": lambda a: a["cube"].sum(axis=1, dtype=np.float64),
    "mean_all": lambda a: a["x"].mean(dtype=np.float64),
}


def _compute(device, dtype):
    arrays = _inputs(dtype)
    tensors = {k: pygpu.tensor(v, device=device) for k, v in arrays.items()}
    out = {name: np.asarray(fn(tensors).numpy()) for name, (fn, _) in CASES.items()}
    for name, operands in MATMULS.items():
        a, b = operands(arrays)
        out["matmul_" + name] = (pygpu.tensor(a, device=device) @ pygpu.tensor(b, device=device)).numpy()
    return out


@pytest.fixture
def cpu_threads():
    before = pygpu.get_num_threads()
    yield pygpu.set_num_threads
    pygpu.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_results_do_not_depend_on_the_thread_count(cpu_threads, dtype):
    results = {}
    for n in (1, 2, 3):
        cpu_threads(n)
        results[n] = _compute("cpu", dtype)
    arrays = _inputs(dtype)
    for name, serial in results[1].items():
        for n in (2, 3):
            if name.startswith("matmul"):
                np.testing.assert_allclose(results[n][name], serial, rtol=1e-5, atol=1e-4, err_msg=name)
            else:
                np.testing.assert_array_equal(results[n][name], serial, err_msg=f"{name}: {n} threads vs 1")
        ref = CASES.get(name, (None, None))[1]
        if ref is not None:
            rtol = {"exp": 1e-6, "tanh": 1e-6, "sigmoid": 1e-6, "log": 1e-6}.get(name, 0)
            expect = ref(arrays)
            if rtol and dtype == np.float32:
                np.testing.assert_allclose(serial, expect, rtol=rtol * 10, atol=1e-7, err_msg=name)
            elif rtol:
                np.testing.assert_allclose(serial, expect, rtol=1e-13, err_msg=name)
            else:
                np.testing.assert_array_equal(serial, expect, err_msg=name)
        elif name in SUM_REF:
            rtol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(serial, SUM_REF[name](arrays), rtol=rtol, atol=rtol * 10, err_msg=name)


def test_matmul_panels_match_numpy(cpu_threads):
    arrays = _inputs(np.float64)
    cpu_threads(3)
    for name, operands in MATMULS.items():
        a, b = operands(arrays)
        got = (pygpu.tensor(a) @ pygpu.tensor(b)).numpy()
        np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-10, err_msg=name)
        ai, bi = (np.rint(v * 10).astype(np.int64) for v in (a, b))  # int64 has its own loop
        np.testing.assert_array_equal((pygpu.tensor(ai) @ pygpu.tensor(bi)).numpy(), ai @ bi, err_msg=name)


_SIM_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    import pygpu, test_pools
    out = {{}}
    for dt in (np.float32, np.float64):
        for name, v in test_pools._compute("sim:0", dt).items():
            out[name + "/" + np.dtype(dt).name] = v
    np.savez({path!r}, **out)
    print(json.dumps(pygpu.sim.num_threads(0)))
""")


def _run(code, env_extra, timeout=300):
    env = dict(os.environ, PYTHONPATH=ROOT, **env_extra)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.mark.slow
def test_sim_results_do_not_depend_on_its_thread_share(tmp_path):
    got = {}
    for threads in ("1", "3"):
        path = str(tmp_path / f"sim{threads}.npz")
        r = _run(_SIM_SCRIPT.format(tests=HERE, path=path), {"PYGPU_SIM_THREADS": threads})
        assert json.loads(r.stdout.strip().splitlines()[-1]) == int(threads)
        got[threads] = dict(np.load(path))
    cpu = {}
    for dt in (np.float32, np.float64):
        for name, v in _compute("cpu", dt).items():
            cpu[name + "/" + np.dtype(dt).name] = v
    for key, one in got["1"].items():
        if key.startswith("matmul"):
            np.testing.assert_allclose(got["3"][key], one, rtol=1e-5, atol=1e-4, err_msg=key)
        else:
            np.testing.assert_array_equal(got["3"][key], one, err_msg=key)
            np.testing.assert_array_equal(cpu[key], one, err_msg=key + " (cpu vs sim)")


_THREADS_SCRIPT = textwrap.dedent("""
    import json, os
    import pygpu

    def names():
        out = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    name = f.read().strip()
                with open(f"/proc/self/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except FileNotFoundError:
                continue
            out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])  # utime + stime
        return out

    x = pygpu.rand(2_000_000, device="sim:0")
    y = pygpu.rand(2_000_000, device="sim:1")
    for _ in range(3):
        (y + y).wait()  # sim:1 starts its threads, then stays idle
    before = names()
    for _ in range(400):  # about half a second of work for sim:0 alone (tick-counted below)
        x = (x * 0.5 + 0.25).tanh()
    x.wait()
    after = names()
    print(json.dumps({"threads": pygpu.sim.num_threads(0), "before": before, "after": after}))
""")


@pytest.mark.slow
@pytest.mark.parametrize("env_threads", ["2", "3", None], ids=["2", "3", "default"])
def test_sim_threads_are_the_device_s_own(env_threads):
    env = {"PYGPU_SIM_DEVICES": "2"}
    if env_threads:
        env["PYGPU_SIM_THREADS"] = env_threads
    else:
        env["PYGPU_SIM_THREADS"] = ""  # set but empty: treated as unset, no warning
    r = _run(_THREADS_SCRIPT, env)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    expect = int(env_threads) if env_threads else max(1, len(os.sched_getaffinity(0)) // 2)
    assert res["threads"] == expect
    after, before = res["after"], res["before"]
    for dev in (0, 1):
        own = sorted(n for n in after if n.startswith(f"pygpu-sim{dev}-") and not n.endswith("-cp"))
        want = [f"pygpu-sim{dev}-op"] + [f"pygpu-sim{dev}-w{k}" for k in range(1, expect)]
        assert own == sorted(want), f"sim:{dev} threads {own}, expected {want}"
    busy = lambda n: after[n] - before.get(n, 0)  # noqa: E731 - clock ticks spent meanwhile
    if expect > 1:  # sim:0's pool threads did part of its work
        assert all(busy(f"pygpu-sim0-w{k}") > 0 for k in range(1, expect)), res
    others = [n for n in after if n.startswith(("pygpu-sim1-", "pygpu-cpu-"))]
    assert sum(busy(n) for n in others) <= 2, f"sim:0's work ran on other devices' threads: {res}"


def test_invalid_sim_threads_warns_and_uses_the_default():
    code = "import pygpu, os; print(pygpu.sim.num_threads(0))"
    r = _run(code, {"PYGPU_SIM_THREADS": "many", "PYGPU_SIM_DEVICES": "2"})
    assert "PYGPU_SIM_THREADS='many'" in r.stderr
    assert int(r.stdout.split()[-1]) == max(1, len(os.sched_getaffinity(0)) // 2)


def test_set_num_threads(cpu_threads):
    assert pygpu.get_num_threads() >= 1
    for n in (3, 1, 2):
        cpu_threads(n)
        assert pygpu.get_num_threads() == n
        (pygpu.rand(300_000) + 1.0).numpy()  # a large op: the pool is up
        names = []
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    names.append(f.read().strip())
            except FileNotFoundError:
                pass
        assert sorted(x for x in names if x.startswith("pygpu-cpu-")) == [f"pygpu-cpu-w{k}" for k in range(1, n)]


@pytest.mark.parametrize("bad, exc, match", [
    (0, ValueError, "need 1 to 1024 threads, got 0"),
    (-2, ValueError, "got -2"),
    (10**6, ValueError, "need 1 to 1024"),
    (2.0, TypeError, "expected an int, got float"),
    ("4", TypeError, "expected an int, got str"),
])
def test_set_num_threads_rejects_bad_input(cpu_threads, bad, exc, match):
    before = pygpu.get_num_threads()
    with pytest.raises(exc, match=match):
        pygpu.set_num_threads(bad)
    assert pygpu.get_num_threads() == before


def test_sim_num_threads_checks_the_device():
    assert pygpu.sim.num_threads(0) >= 1
    with pytest.raises(Exception, match="sim"):
        pygpu.sim.num_threads(99)


def test_two_callers_at_once_each_get_their_whole_result(cpu_threads):
    """Two threads (the GIL released around each op) run large cpu ops at the same time: the
    one that finds the pool busy runs its job on its own thread (pg_pool_run's trylock), and
    each result is the one a lone caller gets, bit for bit."""
    import threading
    cpu_threads(2)
    rng = np.random.default_rng(5)
    data = [rng.standard_normal(400_003).astype(np.float32) for _ in range(2)]
    want = [np.exp(d) * 2.0 for d in data]
    alone = [pygpu.tensor(d).exp().mul(2.0).numpy() for d in data]
    errors, start = [], threading.Barrier(2)

    def run(i):
        try:
            x = pygpu.tensor(data[i])
            start.wait()
            for _ in range(40):
                got = x.exp().mul(2.0).numpy()
                if not np.array_equal(got, alone[i]):
                    errors.append(i)
                    return
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for a, w in zip(alone, want):
        np.testing.assert_allclose(a, w, rtol=1e-6)


# PYGPU_POOL_SPIN_US: idle workers' spin window (csrc/core/pg_pool.c). Whatever it is set to, a
# worker stops spinning within 10 ms of the last job and sleeps while the program does
# something else (here: time.sleep), and results are unchanged. The worker's CPU time comes
# from /proc/self/task/<tid>/schedstat (nanoseconds on the CPU).
_SPIN_SCRIPT = textwrap.dedent("""
    import json, os, time
    import numpy as np
    import pygpu
    pygpu.set_num_threads(2)
    def worker_ns():
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().strip() == "pygpu-cpu-w1":
                    with open(f"/proc/self/task/{tid}/schedstat") as f:
                        return int(f.read().split()[0])
        raise AssertionError("no pygpu-cpu-w1 thread")
    x = pygpu.tensor(np.arange(1 << 20, dtype=np.float32))
    for _ in range(50):  # a burst of split jobs
        y = (x * 0.5 + 1.0).exp().sum()
    want = np.float32(np.arange(1 << 20, dtype=np.float32) * 0.5 + 1.0)
    got = (x * 0.5 + 1.0).numpy()
    n0 = worker_ns()
    time.sleep(0.3)
    print(json.dumps({"idle_ms": (worker_ns() - n0) / 1e6, "same": bool((got == want).all())}))
""")


@pytest.mark.parametrize("spin", [None, "0", "10000", "99999999", "junk"])
def test_pool_spin_knob_is_bounded_and_keeps_results(spin):
    r = _run(_SPIN_SCRIPT, {"PYGPU_POOL_SPIN_US": spin} if spin is not None else {})
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["same"], res
    # at most 10 ms of spin (the cap), plus scheduling slack; an uncapped 99999999 us would
    # spin through the whole 300 ms sleep
    assert res["idle_ms"] < 40, res
