# test_segments.py - torch.segment_reduce and torch.histogramdd (pygpu/_tensor/segments.py)
# against torch on every device: every reduction with and without initial, lengths and
# offsets, an axis past 0 with per-row lengths, empty segments, the gradient, histogramdd's
# bin forms (one count, per-dimension counts, edges), range, weight and density, and
# PyTorch's errors.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

rng = np.random.default_rng(9)


def P(t, device):
    return pygpu.tensor(t.numpy() if isinstance(t, torch.Tensor) else np.asarray(t),
                        device=device)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "amax", "amin"])
@pytest.mark.parametrize("initial", [None, 2.5])
def test_segment_reduce_lengths_and_offsets(device, reduce, initial):
    d = torch.tensor(rng.standard_normal(9))
    lengths = torch.tensor([2, 0, 3, 1, 3])
    ref = torch.segment_reduce(d, reduce, lengths=lengths, initial=initial)
    out = pygpu.segment_reduce(P(d, device), reduce, lengths=P(lengths, device),
                               initial=initial)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, equal_nan=True)
    offsets = torch.tensor([0, 2, 2, 5, 6, 9])
    ref = torch.segment_reduce(d, reduce, offsets=offsets, initial=initial)
    out = pygpu.segment_reduce(P(d, device), reduce, offsets=P(offsets, device),
                               initial=initial)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, equal_nan=True)


def test_segment_reduce_axis_and_gradient(device):
    x = torch.tensor(rng.standard_normal((2, 6, 3)), requires_grad=True)
    lengths = torch.tensor([[2, 4], [3, 3]])
    for reduce in ("sum", "mean", "max"):
        ref = torch.segment_reduce(x, reduce, lengths=lengths, axis=1)
        px = P(x.detach(), device).requires_grad_()
        out = pygpu.segment_reduce(px, reduce, lengths=P(lengths, device), axis=1)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
        g = rng.standard_normal(tuple(ref.shape))
        (gx,) = torch.autograd.grad(ref, x, torch.tensor(g))
        out.backward(P(g, device))
        np.testing.assert_allclose(px.grad.numpy(), gx.numpy(), rtol=1e-12)


def test_segment_reduce_errors():
    d = pygpu.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean"):
        pygpu.segment_reduce(d, "foo", lengths=pygpu.tensor([3]))
    with pytest.raises(RuntimeError, match="to sum to data.size"):
        pygpu.segment_reduce(d, "sum", lengths=pygpu.tensor([1, 1]))
    with pytest.raises(RuntimeError, match="to sum to data.size"):
        torch.segment_reduce(torch.tensor([1.0, 2, 3]), "sum", lengths=torch.tensor([1, 1]))
    with pytest.raises(RuntimeError, match="indices based reduction is not supported yet"):
        pygpu.segment_reduce(d, "sum", indices=pygpu.tensor([0, 0, 1]))


HIST = [dict(bins=4), dict(bins=[3, 4, 5], density=True),
        dict(bins=[2, 3, 2], range=[-1.0, 1, -2, 2, 0, 1]), dict(bins="edges", weight=True)]


@pytest.mark.parametrize("case", range(len(HIST)))
def test_histogramdd_matches_torch(device, case):
    x = torch.tensor(rng.standard_normal((50, 3)))
    kw, pkw = dict(HIST[case]), dict(HIST[case])
    if kw["bins"] == "edges":
        edges = [torch.tensor([-1.0, 0, 1], dtype=torch.float64),
                 torch.tensor([-2.0, 0, 0.5, 2], dtype=torch.float64),
                 torch.tensor([-3.0, 3], dtype=torch.float64)]
        kw["bins"], pkw["bins"] = edges, [P(e, device) for e in edges]
    if kw.get("weight"):
        w = torch.tensor(rng.uniform(size=50))
        kw["weight"], pkw["weight"] = w, P(w, device)
    ref = torch.histogramdd(x, **kw)
    out = pygpu.histogramdd(P(x, device), **pkw)
    np.testing.assert_allclose(out.hist.numpy(), ref.hist.numpy(), rtol=1e-12)
    assert isinstance(out.bin_edges, tuple) and len(out.bin_edges) == len(ref.bin_edges)
    for a, b in zip(out.bin_edges, ref.bin_edges):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_histogramdd_point_data_and_errors():
    ref = torch.histogramdd(torch.ones(3, 2), bins=2)
    out = pygpu.histogramdd(pygpu.ones(3, 2), bins=2)
    np.testing.assert_array_equal(out.hist.numpy(), ref.hist.numpy())
    np.testing.assert_array_equal(out.bin_edges[0].numpy(), ref.bin_edges[0].numpy())
    with pytest.raises(RuntimeError, match="sequences of bin edges"):
        pygpu.histogramdd(pygpu.ones(3, 2), bins=[2, 2, 2])
    with pytest.raises(RuntimeError, match="range should have 4 elements"):
        pygpu.histogramdd(pygpu.ones(3, 2), bins=2, range=[0.0, 1.0])
