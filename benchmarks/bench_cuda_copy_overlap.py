# bench_cuda_copy_overlap.py - what the copy stream buys (issue 18, defect 5): a training-
# loop shape where each step copies the next batch host -> cuda:0 (pinned, 16 MiB) and
# multiplies two 2048x2048 matrices. With non_blocking=True the copy runs on the device's
# copy stream beside the matmuls (cuda_queue.c); blocking, it runs on the compute stream
# between them. The ratio of the two means (blocking / non-blocking) is the overlap gained;
# it is > 1 only where the copy engine and the SMs work at once. Needs a GPU (skips here).
import numpy as np
import pytest

import pygpu

pytestmark = pytest.mark.skipif(not pygpu.cuda.is_available(),
                                reason=f"cuda unavailable: {pygpu.cuda.unavailable_reason()}")
GROUP = "cuda: h2d batch + matmul per step"
STEPS = 8


@pytest.fixture
def work():
    batches = [pygpu.full((4 << 20,), float(k)).pin_memory() for k in range(2)]  # (4 Mi,) f32
    a = pygpu.tensor(np.random.default_rng(0).standard_normal((2048, 2048), np.float32),
                     device="cuda:0")
    pygpu.cuda.synchronize()
    return batches, a


def _loop(batches, a, non_blocking):
    def run():
        acc = a
        for k in range(STEPS):
            d = batches[k % 2].to("cuda:0", non_blocking=non_blocking)
            acc = (acc @ a) * 1e-3
            acc = acc + d[:2048].reshape((1, 2048))
        pygpu.cuda.synchronize()
        return acc
    return run


@pytest.mark.parametrize("non_blocking", [False, True], ids=["blocking", "copy_stream"])
def test_h2d_overlaps_matmul(benchmark, work, non_blocking):
    benchmark.group = GROUP
    batches, a = work
    run = _loop(batches, a, non_blocking)
    ref = _loop(batches, a, False)()
    np.testing.assert_allclose(run().numpy(), ref.numpy(), rtol=1e-5)
    benchmark(run)
