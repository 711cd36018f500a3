# bench_seed_experiment.py - is a device worth it for one n x n float32 matmul?
#
# The experiment that motivates the transfer counters and the cost model, for
# n = 64 .. 2048: one group per n ("seed: matmul n=N") with three members:
#   numpy       - a @ b on the host;
#   resident    - the inputs already on the device; launch, wait;
#   round_trip  - upload both inputs, multiply, download the result, every call.
# The device is cuda:0 when present, else sim:0 with the sim link model on
# (10 us + 16 GB/s each way, as `python -m pygpu` uses), so that the round trip
# pays a PCIe-like link. pygpu.track() counters for one call, and the cost
# model's prediction (the link model's own profile for sim, h100_pcie's
# datasheet for cuda), are stored in extra_info. Plot a saved run with
# `python -m pygpu.tools.plot_benchmarks RUN.json -o bench.png`.
import numpy as np
import pytest

import pygpu
from pygpu import cost

SIZES = (64, 128, 200, 512, 1024, 2048)
LINK = dict(latency_us=10.0, h2d_gbps=16.0, d2h_gbps=16.0)
DEVICE = "cuda:0" if pygpu.cuda.is_available() else "sim:0"


@pytest.fixture
def link():
    """The link model on for this benchmark (conftest turns it off around each one)."""
    if DEVICE.startswith("sim"):
        pygpu.sim.configure(**LINK)
        return cost.link_model_profile(pygpu.sim.link(), DEVICE)
    return cost.load_profile("h100_pcie")


@pytest.fixture(params=SIZES, ids=[f"n{n}" for n in SIZES])
def inputs(request, rng):
    n = request.param
    a = rng.standard_normal((n, n), dtype=np.float32)  # (n, n)
    b = rng.standard_normal((n, n), dtype=np.float32)  # (n, n)
    return n, a, b


def _setup(benchmark, n):
    benchmark.group = f"seed: matmul n={n}"
    benchmark.extra_info["n"] = n
    benchmark.extra_info["device"] = DEVICE
    # a 2048 matmul takes a second on a loaded 2-core machine: fewer rounds there
    return dict(rounds=3 if n >= 1024 else 10, iterations=1, warmup_rounds=1)


def _record_counters(benchmark, call):
    with pygpu.track() as t:
        result = call()
        pygpu.synchronize()
    for key in ("h2d_count", "h2d_bytes", "d2h_count", "d2h_bytes", "implicit_count", "ops"):
        benchmark.extra_info[key] = getattr(t, key)
    return result


def _check(result, a, b):
    out = result if isinstance(result, np.ndarray) else result.numpy()
    np.testing.assert_allclose(out, a @ b, rtol=1e-3, atol=1e-2 * np.sqrt(a.shape[0]))


def test_numpy(benchmark, inputs):
    n, a, b = inputs
    opts = _setup(benchmark, n)
    _check(a @ b, a, b)
    benchmark.pedantic(lambda: a @ b, **opts)


def test_resident(benchmark, inputs, link):
    n, a, b = inputs
    opts = _setup(benchmark, n)
    da, db = pygpu.tensor(a, device=DEVICE), pygpu.tensor(b, device=DEVICE)

    def call():
        r = da @ db
        r.wait()
        return r

    result = _record_counters(benchmark, call)
    assert benchmark.extra_info["h2d_count"] == 0 and benchmark.extra_info["d2h_count"] == 0
    _check(result, a, b)
    benchmark.extra_info["predicted_s"] = link.launch_overhead_s  # the model has no sim compute
    benchmark.pedantic(call, **opts)


def test_round_trip(benchmark, inputs, link):
    n, a, b = inputs
    opts = _setup(benchmark, n)

    def call():
        da, db = pygpu.tensor(a, device=DEVICE), pygpu.tensor(b, device=DEVICE)
        return (da @ db).to("cpu")

    result = _record_counters(benchmark, call)
    assert benchmark.extra_info["h2d_count"] == 2 and benchmark.extra_info["d2h_count"] == 1
    assert benchmark.extra_info["h2d_bytes"] == 2 * 4 * n * n
    _check(result, a, b)
    nb = 4 * n * n
    benchmark.extra_info["predicted_transfer_s"] = (2 * link.transfer_seconds("h2d", nb)
                                                    + link.transfer_seconds("d2h", nb))
    benchmark.pedantic(call, **opts)
