# bench_seed_experiment.py - is a device worth it for one 200x200 float32 matmul?
#
# The experiment that motivates the transfer counters: the same matmul done by
# NumPy, by pygpu on cpu, on sim with the data already resident, and on sim
# with a round trip every time (upload both inputs, matmul, download the
# result). The ratio between "resident" and "round trip" is what moving data
# costs; pygpu.track() counters for one call of each variant are stored in
# extra_info so the report shows how many copies and bytes each call made.
import numpy as np
import pytest

import pygpu

N = 200
GROUP = "seed: matmul 200x200 float32"


@pytest.fixture
def inputs(rng):
    a = rng.standard_normal((N, N), dtype=np.float32)  # (200, 200)
    b = rng.standard_normal((N, N), dtype=np.float32)  # (200, 200)
    return a, b


def _record_counters(benchmark, call):
    with pygpu.track() as t:
        result = call()
    for key in ("h2d_count", "h2d_bytes", "d2h_count", "d2h_bytes", "implicit_count", "ops", "syncs"):
        benchmark.extra_info[key] = getattr(t, key)
    return result


def _check(result, a, b):
    out = result if isinstance(result, np.ndarray) else result.numpy()
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)


def test_numpy(benchmark, inputs):
    benchmark.group = GROUP
    a, b = inputs
    _check(benchmark(lambda: a @ b), a, b)


def test_pygpu_cpu(benchmark, inputs):
    benchmark.group = GROUP
    a, b = inputs
    ta, tb = pygpu.from_numpy(a), pygpu.from_numpy(b)
    result = _record_counters(benchmark, lambda: ta @ tb)
    assert benchmark.extra_info["h2d_count"] == 0
    benchmark(lambda: ta @ tb)
    _check(result, a, b)


def test_sim_resident(benchmark, inputs):
    benchmark.group = GROUP
    a, b = inputs
    da, db = pygpu.tensor(a, device="sim:0"), pygpu.tensor(b, device="sim:0")

    def call():
        r = da @ db
        r.wait()
        return r

    result = _record_counters(benchmark, call)
    assert benchmark.extra_info["h2d_count"] == 0 and benchmark.extra_info["d2h_count"] == 0
    benchmark(call)
    _check(result, a, b)


def test_sim_round_trip(benchmark, inputs):
    benchmark.group = GROUP
    a, b = inputs

    def call():
        da, db = pygpu.tensor(a, device="sim:0"), pygpu.tensor(b, device="sim:0")
        return (da @ db).to("cpu")

    result = _record_counters(benchmark, call)
    assert benchmark.extra_info["h2d_count"] == 2 and benchmark.extra_info["d2h_count"] == 1
    assert benchmark.extra_info["h2d_bytes"] == 2 * 4 * N * N
    benchmark(call)
    _check(result, a, b)
