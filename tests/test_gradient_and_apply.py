# test_gradient_and_apply.py - torch.gradient (pygpu/_tensor_numeric.py) and Tensor.apply_,
# map_, map2_ (pygpu/_tensor_fill.py) against torch as the oracle: gradient with uniform
# spacing, per-axis spacing and coordinates, edge_order 1 and 2, chosen dims, integer input,
# and its autograd; apply_/map_/map2_ on CPU tensors (broadcast, the dtype kept) and
# PyTorch's refusals (a tensor that requires grad; a device tensor).
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

rng = np.random.default_rng(31)
A = rng.standard_normal((5, 6))
C0, C1 = np.sort(rng.random(5)), np.sort(rng.random(6))

CASES = [dict(), dict(spacing=2.0, edge_order=2), dict(spacing=[0.5, 3.0]),
         dict(dim=1, edge_order=2), dict(dim=(0,), spacing=[0.25]),
         dict(spacing=[C0, C1]), dict(spacing=[C0, C1], edge_order=2)]


@pytest.mark.parametrize("kw", CASES, ids=[str(i) for i in range(len(CASES))])
def test_gradient_matches_torch(device, kw):
    def spelled(lib, d):
        out = dict(kw)
        if "spacing" in kw and isinstance(kw["spacing"], list) and \
                isinstance(kw["spacing"][0], np.ndarray):
            out["spacing"] = [lib.tensor(c) if lib is torch else lib.tensor(c, device=d)
                              for c in kw["spacing"]]
        return out
    px = pygpu.tensor(A, device=device, requires_grad=True)
    tx = torch.tensor(A, requires_grad=True)
    po, to = pygpu.gradient(px, **spelled(pygpu, device)), torch.gradient(tx, **spelled(torch,
                                                                                        None))
    assert len(po) == len(to)
    for p, t in zip(po, to):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)
    sum(p.square().sum() for p in po).backward()
    sum(t.square().sum() for t in to).backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_gradient_of_integers_and_errors():
    x = [1, 4, 9, 16, 25]
    np.testing.assert_allclose(pygpu.gradient(pygpu.tensor(x))[0].numpy(),
                               torch.gradient(torch.tensor(x))[0].numpy())
    with pytest.raises(RuntimeError, match="edge_order"):
        pygpu.gradient(pygpu.tensor(A), edge_order=3)
    with pytest.raises(RuntimeError, match="same length"):
        pygpu.gradient(pygpu.tensor(A), spacing=[1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        pygpu.gradient(pygpu.tensor([1.0, 2.0]), edge_order=2)


def test_apply_map_map2_match_torch():
    for lib in (pygpu, torch):
        x = lib.arange(6.0).reshape(2, 3)
        assert x.apply_(lambda v: v * 2) is x
        x.map_(lib.ones(3), lambda a, b: a + b)
        x.map2_(lib.ones(3), lib.ones(2, 1), lambda a, b, c: a + b + c)
        np.testing.assert_array_equal(x.numpy(), [[3, 5, 7], [9, 11, 13]])
        i = lib.ones(3, dtype=lib.int64).apply_(lambda v: v * 2.7)
        assert i.dtype == lib.int64 and i.tolist() == [2, 2, 2]
        with pytest.raises(RuntimeError, match="Can't call apply_\\(\\) on Variable that "
                                               "requires grad"):
            lib.ones(2, requires_grad=True).apply_(lambda v: v)
    with pytest.raises(TypeError, match="apply_ is only implemented on CPU tensors"):
        pygpu.ones(2, device="sim").apply_(lambda v: v)
