# test_embedding_bag.py - F.embedding_bag and nn.EmbeddingBag (pygpu/_ops/_embedding_bag.py)
# against torch as the oracle on every device: sum, mean and max over bags given by offsets
# (empty bags too, CSR-style include_last_offset) or by a 2-d input, padding_idx left out and
# not counted, per_sample_weights; the output and the weight's (and the per-sample weights')
# gradients in float64; scale_grad_by_freq's documented rule; the module, from_pretrained, and
# PyTorch's errors.
import itertools

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(17)
W = rng.standard_normal((10, 4))
INPUT = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
OFFSETS = np.array([0, 3, 3, 7])

CASES = [(mode, pad, psw, ilo, False)
         for mode, pad, psw, ilo in itertools.product(
             ("sum", "mean", "max"), (None, 2), (False, True), (False, True))
         if not (psw and mode != "sum")]


@pytest.mark.parametrize("mode,pad,psw,ilo,freq", CASES,
                         ids=[f"{m}-pad{p}-{'psw' if w else 'nopsw'}-{'ilo' if i else 'noilo'}"
                              f"{'-freq' if f else ''}" for m, p, w, i, f in CASES])
def test_embedding_bag_matches_torch(device, mode, pad, psw, ilo, freq):
    offsets = np.append(OFFSETS, len(INPUT)) if ilo else OFFSETS
    weights = rng.standard_normal(len(INPUT)) if psw else None
    pw = pygpu.tensor(W, device=device, requires_grad=True)
    tw = torch.tensor(W, requires_grad=True)
    pp = None if weights is None else pygpu.tensor(weights, device=device, requires_grad=True)
    tp = None if weights is None else torch.tensor(weights, requires_grad=True)
    kw = dict(mode=mode, padding_idx=pad, include_last_offset=ilo, scale_grad_by_freq=freq)
    po = F.embedding_bag(pygpu.tensor(INPUT, device=device), pw,
                         pygpu.tensor(offsets, device=device), per_sample_weights=pp, **kw)
    to = TF.embedding_bag(torch.tensor(INPUT), tw, torch.tensor(offsets), per_sample_weights=tp,
                          **kw)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    g = rng.standard_normal(tuple(to.shape))
    (po * pygpu.tensor(g, device=device)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(pw.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-14)
    if psw:
        np.testing.assert_allclose(pp.grad.numpy(), tp.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_scale_grad_by_freq_divides_each_rows_gradient_by_its_count(device):
    # PyTorch's documented rule (and F.embedding's): "scale gradients by the inverse of
    # frequency of the words in the mini-batch". torch 2.13's CPU embedding_bag gives a row
    # used once 1/3 here (its counts are misindexed), so the rule is checked, not torch.
    w = pygpu.ones(10, 2, device=device, requires_grad=True)
    F.embedding_bag(pygpu.tensor([1, 1, 1, 2], device=device), w,
                    pygpu.tensor([0, 2], device=device), mode="sum",
                    scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(w.grad.numpy()[:3], [[0, 0], [1, 1], [1, 1]])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_a_2d_input_is_bags_of_equal_length(device, mode):
    inp = rng.integers(0, 10, (3, 5))
    po = F.embedding_bag(pygpu.tensor(inp, device=device), pygpu.tensor(W, device=device),
                         mode=mode)
    to = TF.embedding_bag(torch.tensor(inp), torch.tensor(W), mode=mode)
    np.testing.assert_allclose(po.numpy(), to.numpy(), rtol=1e-12)


def test_module_matches_torch(device):
    theirs = torch.nn.EmbeddingBag(10, 4, mode="sum", padding_idx=2, dtype=torch.float64)
    ours = nn.EmbeddingBag(10, 4, mode="sum", padding_idx=2, device=device, dtype=pygpu.float64)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_array_equal(ours.weight.detach().numpy()[2], 0.0)
    ours.load_state_dict({"weight": pygpu.tensor(theirs.weight.detach().numpy(), device=device)})
    np.testing.assert_allclose(
        ours(pygpu.tensor(INPUT, device=device), pygpu.tensor(OFFSETS, device=device))
        .detach().numpy(),
        theirs(torch.tensor(INPUT), torch.tensor(OFFSETS)).detach().numpy(), rtol=1e-12)
    pre = nn.EmbeddingBag.from_pretrained(pygpu.tensor(W, device=device), mode="max")
    tpre = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(W), mode="max")
    assert not pre.weight.requires_grad and not tpre.weight.requires_grad
    np.testing.assert_allclose(pre(pygpu.tensor(INPUT[:8].reshape(2, 4), device=device)).numpy(),
                               tpre(torch.tensor(INPUT[:8].reshape(2, 4))).numpy())


def test_errors_match_torch():
    for fn, lib in ((F.embedding_bag, pygpu), (TF.embedding_bag, torch)):
        w = lib.zeros(10, 3)
        with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
            fn(lib.zeros(2, 3, dtype=lib.int64), w, lib.zeros(2, dtype=lib.int64))
        with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
            fn(lib.zeros(3, dtype=lib.int64), w)
        with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
            fn(lib.zeros(2, 3, dtype=lib.int64), w, mode="min")
        with pytest.raises(NotImplementedError, match="per_sample_weights is only supported "
                                                      "for mode='sum'"):
            fn(lib.zeros(2, 3, dtype=lib.int64), w, mode="mean",
               per_sample_weights=lib.ones(2, 3))
        with pytest.raises(ValueError, match="max mode does not support scaling the gradient"):
            fn(lib.zeros(2, 3, dtype=lib.int64), w, mode="max", scale_grad_by_freq=True)
        with pytest.raises(ValueError, match="weight has to be a 2D Tensor"):
            fn(lib.zeros(2, 3, dtype=lib.int64), lib.zeros(10))
        with pytest.raises(ValueError, match="must have the same shape as the input"):
            fn(lib.zeros(2, 3, dtype=lib.int64), w, mode="sum", per_sample_weights=lib.ones(3))
