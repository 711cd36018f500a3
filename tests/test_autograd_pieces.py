# test_autograd_pieces.py - the engine's lazy sum of narrow's gradients
# (pygpu/autograd/_pieces.py): split/chunk/narrow gradients equal torch's on every device
# whether the pieces tile the tensor, leave gaps or overlap; a split that tiles costs one
# copy per piece (no zero fill, no additions); hooks, create_graph and retain_graph keep
# PyTorch's semantics.
import numpy as np
import pytest

import pygpu
from pygpu.profiler import profile

torch = pytest.importorskip("torch")

CASES = {
    "split-tiles": lambda y: sum((p * (i + 1)).sum() for i, p in enumerate(y.split(3, dim=1))),
    "chunk-3d": lambda y: sum((p * p).sum() for p in y.reshape(2, 2, 9).chunk(3, dim=2)),
    "gaps": lambda y: (y.narrow(1, 0, 2) * 3).sum() + y.narrow(1, 5, 2).sum(),
    "overlap": lambda y: (y.narrow(1, 0, 5) * 2).sum() + (y.narrow(1, 3, 5) ** 2).sum(),
    "mixed-with-dense": lambda y: (y * y).sum() + y.narrow(1, 1, 4).sum() + y.split(
        [4, 5], dim=1)[1].sum(),
    "two-axes": lambda y: y.narrow(0, 1, 2).sum() + (y.narrow(1, 2, 3) * 5).sum(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_match_torch(device, case):
    x = np.random.default_rng(1).standard_normal((4, 9))
    px = pygpu.tensor(x, device=device).requires_grad_()
    tx = torch.tensor(x, requires_grad=True)
    CASES[case](px * 1.0).backward()  # a non-leaf: its gradient is the sum of the pieces
    CASES[case](tx * 1.0).backward()
    np.testing.assert_allclose(px.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_a_split_that_tiles_is_one_copy_per_piece(device):
    x = pygpu.randn(4, 9, device=device).requires_grad_()
    q, k, v = (x * 1.0).split(3, dim=1)
    loss = (q * 1.0).sum() + (k * 2.0).sum() + (v * 3.0).sum()
    with profile() as prof:
        loss.backward()
    names = [e.name for e in prof.events()]
    assert names.count("copy") == 3 and "add" not in names[names.index("copy"):], names
    assert x.grad[0].tolist() == [1.0] * 3 + [2.0] * 3 + [3.0] * 3


def test_hooks_see_each_pieces_gradient():
    x = pygpu.randn(2, 4).requires_grad_()
    y = x * 1.0
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    a, b = y.split(2, dim=1)
    (a.sum() + (b * 2).sum()).backward()
    assert seen == [[[1.0, 1.0, 2.0, 2.0]] * 2]
    assert x.grad.tolist() == seen[0]


def test_double_backward_through_split():
    x = np.random.default_rng(2).standard_normal((3, 4))
    px, tx = pygpu.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    outs = []
    for lib, t in ((pygpu, px), (torch, tx)):
        a, b = (t * t).split(2, dim=1)
        (g,) = lib.autograd.grad((a * b).sum(), t, create_graph=True)
        (g * g).sum().backward()
        outs.append(t.grad.detach().cpu().numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)


def test_retain_graph_runs_twice():
    x = pygpu.randn(2, 6).requires_grad_()
    y = x * 1.0
    a, b, c = y.chunk(3, dim=1)
    loss = a.sum() + (b * 2).sum() + (c * 3).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert x.grad[1].tolist() == [2.0, 2.0, 4.0, 4.0, 6.0, 6.0]
