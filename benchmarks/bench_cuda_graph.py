# bench_cuda_graph.py - what a CUDA graph buys a small training step: the MLP step
# (batch 128, 32 -> 64 -> 10, ReLU, cross-entropy, SGD) run eagerly, op by op, against
# the same step captured once with pygpu.cuda.graph and replayed with one launch.
# Both end in a synchronize, so each timing is the step's wall time on the GPU. The
# ratio eager / replay is what to put in docs/cuda.md. Skips without a GPU; results
# are checked against each other before timing.
import numpy as np
import pytest

import pygpu
from pygpu import cuda

pytestmark = pytest.mark.skipif(not cuda.is_available(), reason="needs a CUDA GPU")

N, I, H, C = 128, 32, 64, 10


def _setup():
    pygpu.manual_seed(0)
    model = pygpu.nn.Sequential(pygpu.nn.Linear(I, H), pygpu.nn.ReLU(),
                                pygpu.nn.Linear(H, C)).to("cuda")
    opt = pygpu.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x = pygpu.tensor(rng.standard_normal((N, I)).astype(np.float32), device="cuda")  # (N, I)
    y = pygpu.tensor(rng.integers(0, C, N), device="cuda")  # (N,)

    def step():
        opt.zero_grad()
        loss = pygpu.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def test_mlp_step_eager(benchmark):
    benchmark.group = f"cuda MLP step {N}x{I}->{H}->{C}: eager vs graph replay"
    step = _setup()
    step()

    def run():
        step()
        cuda.synchronize()
    benchmark(run)


def test_mlp_step_graph_replay(benchmark):
    benchmark.group = f"cuda MLP step {N}x{I}->{H}->{C}: eager vs graph replay"
    eager, captured = _setup(), _setup()
    want = [eager().item() for _ in range(3)]
    first = captured().item()
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        loss = captured()
    got = [first]
    for _ in range(2):
        g.replay()
        got.append(loss.item())
    np.testing.assert_allclose(got, want, rtol=1e-5)

    def run():
        g.replay()
        cuda.synchronize()
    benchmark(run)
