# bench_matmul.py - float32 matmul, pygpu vs NumPy (and PyTorch CPU if installed).
#
# One group per n (64, 128, 200, 256, 384, 512, 1024, 2048: issue 15's sizes,
# where pygpu must be no slower than NumPy) so the ratio column compares
# implementations at the same size: NumPy (its BLAS, named in the session
# header), pygpu on cpu, pygpu on sim (enqueue + wait), and torch when it is
# importable. Every row records GFLOP/s (2 n^3 / mean time) in extra_info and
# checks its result against NumPy once, so a fast wrong kernel cannot win.
# At the end a table prints NumPy time / pygpu-cpu time per n (>= 1: pygpu
# is no slower). NumPy, PyTorch and pygpu use the same thread count (the
# cores this process may run on; threadpoolctl and torch.set_num_threads).
import os

import numpy as np
import pytest

import pygpu

SIZES = [64, 128, 200, 256, 384, 512, 1024, 2048]
IMPLS = ["numpy", "pygpu-cpu", "pygpu-sim", "torch"]
THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
_best = {}


@pytest.fixture(scope="module", autouse=True)
def same_threads():
    """NumPy's BLAS, PyTorch and pygpu's cpu device use the same number of threads."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = pygpu.get_num_threads()
    pygpu.set_num_threads(THREADS)
    try:
        import torch
        torch.set_num_threads(THREADS)
    except ImportError:
        pass
    with threadpoolctl.threadpool_limits(THREADS):
        yield
    pygpu.set_num_threads(before)


def _callable(impl, a, b):
    if impl == "numpy":
        return lambda: a @ b, lambda r: r
    if impl == "pygpu-cpu":
        ta, tb = pygpu.from_numpy(a), pygpu.from_numpy(b)
        return lambda: ta @ tb, lambda r: r.numpy()
    if impl == "pygpu-sim":
        ta, tb = pygpu.tensor(a, device="sim:0"), pygpu.tensor(b, device="sim:0")

        def run():
            r = ta @ tb
            r.wait()
            return r

        return run, lambda r: r.numpy()
    torch = pytest.importorskip("torch")
    xa, xb = torch.from_numpy(a), torch.from_numpy(b)
    return lambda: xa @ xb, lambda r: r.numpy()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", SIZES, ids=[f"n{n}" for n in SIZES])
def test_matmul(benchmark, rng, n, impl):
    benchmark.group = f"matmul float32 n={n}"
    a = rng.standard_normal((n, n), dtype=np.float32)  # (n, n)
    b = rng.standard_normal((n, n), dtype=np.float32)  # (n, n)
    run, to_numpy = _callable(impl, a, b)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert (np.abs(to_numpy(run()) - expected) <= 1e-4 * scale + 1e-5).all(), f"{impl} is wrong at n={n}"
    if n >= 1024:
        benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)
    else:
        benchmark(run)
    benchmark.extra_info["n"] = n
    if benchmark.stats:  # None under --benchmark-disable
        benchmark.extra_info["gflops"] = round(2 * n**3 / benchmark.stats.stats.mean / 1e9, 2)
        _best[(n, impl)] = benchmark.stats.stats.min


def teardown_module(module):
    if not _best:
        return
    lines = [f"\nmatmul float32, best time in us, {THREADS} threads each:",
             f"{'n':>6}" + "".join(f"{i:>12}" for i in IMPLS) + f"{'numpy/cpu':>11}{'GFLOP/s cpu':>13}"]
    for n in SIZES:
        row = [_best.get((n, i)) for i in IMPLS]
        cells = "".join(f"{v * 1e6:>12,.1f}" if v else f"{'-':>12}" for v in row)
        ratio = f"{row[0] / row[1]:>11.2f}" if row[0] and row[1] else f"{'-':>11}"
        gf = f"{2 * n**3 / row[1] / 1e9:>13.1f}" if row[1] else f"{'-':>13}"
        lines.append(f"{n:>6}{cells}{ratio}{gf}")
    print("\n".join(lines))
