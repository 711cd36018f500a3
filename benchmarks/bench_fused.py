# bench_fused.py - what fusion buys: one hidden layer of the MLP (batch 64, 784 -> 512,
# ReLU), forward + backward, as pygpu's fused linear op vs the same layer built from
# separate pygpu ops (matmul, add, relu; autograd's composite backward) vs PyTorch CPU.
# Also one SGD-with-momentum step over the MLP's parameters: one fused op per parameter vs
# the same rule as separate tensor ops. Results are checked once before timing.
import numpy as np
import pytest

import pygpu
from pygpu import nn, optim
from pygpu.nn import functional as F

N, I, O = 64, 784, 512


@pytest.fixture
def layer_data(rng):
    x = rng.standard_normal((N, I), dtype=np.float32)  # (N, I)
    w = (rng.standard_normal((O, I), dtype=np.float32) * 0.03)  # (O, I)
    b = rng.standard_normal(O, dtype=np.float32) * 0.1  # (O,)
    return x, w, b


def _pygpu_layer(x, w, b, fused):
    xt = pygpu.tensor(x)
    wt, bt = pygpu.tensor(w).requires_grad_(), pygpu.tensor(b).requires_grad_()
    g = pygpu.ones(N, O)

    def step():
        wt.grad = bt.grad = None
        if fused:
            y = F.linear(xt, wt, bt, "relu")
        else:
            y = pygpu.relu(xt @ wt.T + bt)
        y.backward(g)
        return wt.grad
    return step


def _reference_grad(x, w, b):
    z = x @ w.T + b
    return ((z > 0).astype(np.float32)).T @ x


@pytest.mark.parametrize("kind", ["fused", "composite"])
def test_linear_relu_fwd_bwd_pygpu(benchmark, layer_data, kind):
    benchmark.group = f"linear {N}x{I}->{O} relu: forward + backward"
    step = _pygpu_layer(*layer_data, fused=kind == "fused")
    np.testing.assert_allclose(step().numpy(), _reference_grad(*layer_data), rtol=1e-3, atol=1e-3)
    benchmark(step)


def test_linear_relu_fwd_bwd_torch(benchmark, layer_data):
    torch = pytest.importorskip("torch")
    benchmark.group = f"linear {N}x{I}->{O} relu: forward + backward"
    x, w, b = (torch.tensor(a) for a in layer_data)
    w.requires_grad_()
    b.requires_grad_()
    g = torch.ones(N, O)

    def step():
        w.grad = b.grad = None
        torch.relu(torch.nn.functional.linear(x, w, b)).backward(g)
        return w.grad
    np.testing.assert_allclose(step().numpy(), _reference_grad(*layer_data), rtol=1e-3, atol=1e-3)
    benchmark(step)


@pytest.mark.parametrize("kind", ["fused", "composite"])
def test_sgd_momentum_step(benchmark, kind):
    benchmark.group = "SGD momentum step, MLP 784-512-512-10 parameters"
    pygpu.manual_seed(0)
    model = nn.MLP([784, 512, 512, 10])
    params = list(model.parameters())
    for p in params:
        p.grad = pygpu.ones(p.shape)
    opt = optim.SGD(params, lr=0.01, momentum=0.9)
    bufs = [pygpu.zeros(p.shape) for p in params]

    def composite():
        with pygpu.no_grad():
            for p, buf in zip(params, bufs):
                buf[...] = buf * 0.9 + p.grad
                p[...] = p - buf * 0.01

    step = opt.step if kind == "fused" else composite
    before = params[0].detach().numpy().copy()
    step()
    np.testing.assert_allclose(params[0].detach().numpy(), before - 0.01, rtol=1e-5, atol=1e-6)
    benchmark(step)
