# bench_transfers.py - host <-> sim copy bandwidth for 64 MiB, against a plain memcpy.
#
# The sim device lives in host memory, so the best a transfer can do is what
# np.copyto does for the same bytes (into an existing array), or a.copy()
# (into a new one, paying for fresh pages, as a d2h into a new host tensor
# must); the ratio column shows how much pygpu's transfer path (allocation,
# staging, queueing, counting) adds on top. The link
# model is off (benchmarks/conftest.py), so nothing is slowed on purpose.
# extra_info has GB/s (1e9 bytes per second).
import numpy as np
import pytest

import pygpu

NBYTES = 64 << 20
GROUP = "transfer 64 MiB"


@pytest.fixture
def host_array():
    return np.ones(NBYTES // 4, np.float32)  # (16 Mi,) = 64 MiB


def _record(benchmark):
    benchmark.extra_info["bytes"] = NBYTES
    if benchmark.stats:  # None under --benchmark-disable
        benchmark.extra_info["gb_per_s"] = round(NBYTES / benchmark.stats.stats.mean / 1e9, 2)


def test_numpy_copyto(benchmark, host_array):
    benchmark.group = GROUP
    dst = np.empty_like(host_array)
    benchmark(np.copyto, dst, host_array)
    assert dst[-1] == 1.0
    _record(benchmark)


def test_numpy_copy_to_new_array(benchmark, host_array):
    """The fair baseline for d2h, which must allocate (and fault in) its destination."""
    benchmark.group = GROUP
    out = benchmark(host_array.copy)
    assert out[-1] == 1.0
    _record(benchmark)


def test_h2d_to_sim(benchmark, host_array):
    benchmark.group = GROUP
    src = pygpu.from_numpy(host_array)

    def h2d():
        t = src.to("sim:0")
        t.wait()
        return t

    with pygpu.track() as counted:
        out = h2d()
    assert (counted.h2d_count, counted.h2d_bytes) == (1, NBYTES)
    benchmark(h2d)
    assert out.nbytes == NBYTES
    _record(benchmark)


def test_d2h_from_sim(benchmark, host_array):
    benchmark.group = GROUP
    on_device = pygpu.tensor(host_array, device="sim:0")
    on_device.wait()
    with pygpu.track() as counted:
        back = on_device.to("cpu")
    assert (counted.d2h_count, counted.d2h_bytes) == (1, NBYTES)
    benchmark(lambda: on_device.to("cpu"))
    assert back.numpy()[-1] == 1.0
    _record(benchmark)


def test_d2d_sim0_to_sim1(benchmark, host_array):
    benchmark.group = GROUP
    on_device = pygpu.tensor(host_array, device="sim:0")

    def d2d():
        t = on_device.to("sim:1")
        t.wait()
        return t

    benchmark(d2d)
    _record(benchmark)


def test_d2h_into_pinned_buffer(benchmark, host_array):
    """The training-loop pattern: results copied back into a reused pinned buffer
    (Tensor.copy_), so the destination's pages are already there."""
    benchmark.group = GROUP
    on_device = pygpu.tensor(host_array, device="sim:0")
    buffer = pygpu.empty(host_array.shape).pin_memory()
    with pygpu.track() as counted:
        buffer.copy_(on_device)
    assert (counted.d2h_count, counted.d2h_bytes) == (1, NBYTES)
    benchmark(buffer.copy_, on_device)
    assert buffer.numpy()[-1] == 1.0
    _record(benchmark)


def test_d2h_nonblocking_from_sim(benchmark, host_array):
    """x.to("cpu", non_blocking=True) each step: a new pinned tensor every time, which
    the caching pinned-host allocator (csrc/core/pg_pinned.c) serves from its free list
    after the first, so the pages are already there (compare test_d2h_from_sim, which
    pays for fresh pages, and numpy's copy into a new array)."""
    benchmark.group = GROUP
    on_device = pygpu.tensor(host_array, device="sim:0")
    on_device.wait()

    def d2h():
        t = on_device.to("cpu", non_blocking=True)
        t.wait()
        return t

    d2h()
    hits = pygpu.sim.memory_stats()["pinned_cache_hits"]
    benchmark(d2h)
    assert pygpu.sim.memory_stats()["pinned_cache_hits"] > hits
    assert d2h().numpy()[-1] == 1.0
    _record(benchmark)
