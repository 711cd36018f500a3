# bench_reduce.py - reductions that leave few output rows: sum() of a whole
# 16M-element float32 tensor (one row) and sum(axis=0) of a tall (4M, 4)
# matrix (four long strided rows). On cuda these take the split (two-pass)
# kernels of csrc/backends/cuda/kernels/reduce.cu, which spread one row over every SM; the
# one-pass kernels ran them on one block (whole tensor) or four (axis 0).
# Compared in each group with NumPy and, where installed, torch on the same
# device kind (CPU here; torch.cuda where pygpu runs on cuda). Device results
# are timed to completion (item() / synchronize), not to enqueue.
import numpy as np
import pytest

import pygpu

WHOLE = 1 << 24      # (16M,) float32, 64 MiB
TALL = (1 << 22, 4)  # (4M, 4) float32, 64 MiB


def _devices():
    out = ["cpu", "sim:0"]
    if pygpu.cuda.is_available():
        out.append("cuda:0")
    return out


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(0)
    return rng.standard_normal(WHOLE, dtype=np.float32), rng.standard_normal(TALL, dtype=np.float32)


def test_sum_all_numpy(benchmark, arrays):
    benchmark.group = "sum() of 16M float32"
    benchmark(lambda: arrays[0].sum())


@pytest.mark.parametrize("dev", _devices())
def test_sum_all_pygpu(benchmark, arrays, dev):
    benchmark.group = "sum() of 16M float32"
    x = pygpu.tensor(arrays[0], device=dev)
    got = benchmark(lambda: x.sum().item())
    assert abs(got - float(arrays[0].astype(np.float64).sum())) < 1e-2 * np.abs(arrays[0]).sum()


def test_sum_axis0_numpy(benchmark, arrays):
    benchmark.group = "sum(axis=0) of (4M, 4) float32"
    benchmark(lambda: arrays[1].sum(axis=0))


@pytest.mark.parametrize("dev", _devices())
def test_sum_axis0_pygpu(benchmark, arrays, dev):
    benchmark.group = "sum(axis=0) of (4M, 4) float32"
    x = pygpu.tensor(arrays[1], device=dev)

    def run():
        y = x.sum(axis=0)
        pygpu.synchronize(dev if dev != "cpu" else None)
        return y

    y = benchmark(run)
    np.testing.assert_allclose(y.numpy(), arrays[1].sum(axis=0, dtype=np.float64), rtol=1e-3,
                               atol=1e-1)


def test_sum_all_torch(benchmark, arrays):
    torch = pytest.importorskip("torch")
    benchmark.group = "sum() of 16M float32"
    x = torch.from_numpy(arrays[0])
    benchmark(lambda: x.sum().item())
