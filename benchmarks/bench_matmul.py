# bench_matmul.py - float32 matmul, pygpu vs NumPy (and PyTorch CPU if installed).
#
# One group per n (64, 200, 1024, 2048) so the ratio column compares
# implementations at the same size: NumPy (its BLAS, named in the session
# header), pygpu on cpu, pygpu on sim (enqueue + wait), and torch when it is
# importable. Every row records GFLOP/s (2 n^3 / mean time) in extra_info and
# checks its result against NumPy once, so a fast wrong kernel cannot win.
import numpy as np
import pytest

import pygpu

SIZES = [64, 200, 1024, 2048]
IMPLS = ["numpy", "pygpu-cpu", "pygpu-sim", "torch"]


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
