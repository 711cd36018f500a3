# bench_small_ops.py - what one tiny op costs: the per-call overhead, not the math.
#
# `a + b` on 100-element float32 inputs measures dispatch (argument parsing,
# checks, allocation) - pygpu on cpu against NumPy. On sim, two more numbers:
# the enqueue cost of one small op (what an asynchronous op costs the calling
# Python thread, in the same group as NumPy's whole op), and a tiny op's round
# trip from enqueue to a completed wait(), which is the latency a dependent
# Python loop pays per step.
import numpy as np
import pytest

import pygpu

SIZE = 100
BATCH = 100


@pytest.fixture
def operands(rng):
    a = rng.standard_normal(SIZE, dtype=np.float32)  # (100,)
    b = rng.standard_normal(SIZE, dtype=np.float32)  # (100,)
    return a, b


def test_add_numpy(benchmark, operands):
    benchmark.group = "add 100 float32: per call"
    a, b = operands
    out = benchmark(lambda: a + b)
    np.testing.assert_array_equal(out, a + b)


def test_add_pygpu_cpu(benchmark, operands):
    benchmark.group = "add 100 float32: per call"
    a, b = (pygpu.from_numpy(x) for x in operands)
    out = benchmark(lambda: a + b)
    np.testing.assert_array_equal(out.numpy(), operands[0] + operands[1])


def test_add_torch_cpu(benchmark, operands):
    torch = pytest.importorskip("torch")
    benchmark.group = "add 100 float32: per call"
    a, b = (torch.from_numpy(x) for x in operands)
    out = benchmark(lambda: a + b)
    np.testing.assert_array_equal(out.numpy(), operands[0] + operands[1])


def test_add_pygpu_sim_enqueue(benchmark, operands):
    benchmark.group = "add 100 float32: per call"
    a, b = (pygpu.tensor(x, device="sim:0") for x in operands)
    pygpu.synchronize()
    # Timed per op (iterations=BATCH per round); the worker drains the queue
    # meanwhile, as it would under a Python loop issuing ops.
    out = benchmark.pedantic(lambda: a + b, rounds=200, iterations=BATCH, warmup_rounds=5)
    pygpu.synchronize()
    np.testing.assert_array_equal(out.numpy(), operands[0] + operands[1])
    if benchmark.stats:  # None under --benchmark-disable
        benchmark.extra_info["enqueue_us_per_op"] = round(benchmark.stats.stats.mean * 1e6, 3)


def test_add_pygpu_sim_round_trip(benchmark, operands):
    benchmark.group = "add 100 float32: enqueue -> completed wait"
    a, b = (pygpu.tensor(x, device="sim:0") for x in operands)

    def one_step():
        r = a + b
        r.wait()
        return r

    out = benchmark(one_step)
    np.testing.assert_array_equal(out.numpy(), operands[0] + operands[1])


def test_add_numpy_reference_for_round_trip(benchmark, operands):
    benchmark.group = "add 100 float32: enqueue -> completed wait"
    a, b = operands
    benchmark(lambda: a + b)
