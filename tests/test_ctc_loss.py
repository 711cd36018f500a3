# test_ctc_loss.py - F.ctc_loss, torch.ctc_loss and nn.CTCLoss (pygpu/_ops/_ctc_loss.py)
# against torch as the oracle on every device: padded and concatenated targets, repeated
# labels, empty targets, shorter inputs, impossible alignments (inf, or 0 with zero_infinity),
# every reduction, unbatched input; the loss and the gradient of the logits under
# log_softmax in float64 (PyTorch's own gradient for log_probs assumes that log_softmax and
# adds its term, so the two agree on the logits), and PyTorch's errors.
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(9)
T, N, C = 12, 4, 6
X = rng.standard_normal((T, N, C))
TG_LEN = [3, 0, 5, 2]
IN_LEN = [12, 9, 10, 3]
TARGETS = rng.integers(1, C, (N, 5))
TARGETS[0, :3] = [2, 2, 3]  # a repeated label needs a blank between


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_matches_torch(device, reduction, concatenated, zero_infinity):
    in_len = list(IN_LEN)
    if zero_infinity:
        in_len[3] = 1  # two labels in one frame: impossible
    targets = (np.concatenate([TARGETS[n, :TG_LEN[n]] for n in range(N)]) if concatenated
               else TARGETS)
    px = pygpu.tensor(X, device=device, requires_grad=True)
    tx = torch.tensor(X, requires_grad=True)
    po = F.ctc_loss(px.log_softmax(2), pygpu.tensor(targets, device=device),
                    pygpu.tensor(in_len, device=device), pygpu.tensor(TG_LEN, device=device),
                    reduction=reduction, zero_infinity=zero_infinity)
    to = TF.ctc_loss(tx.log_softmax(2), torch.tensor(targets), torch.tensor(in_len),
                     torch.tensor(TG_LEN), reduction=reduction, zero_infinity=zero_infinity)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    po.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_impossible_alignment_is_inf_and_the_spellings_agree(device):
    lp = torch.tensor(X).log_softmax(2)
    in_len = [12, 9, 10, 1]
    ours = pygpu.ctc_loss(pygpu.tensor(lp.numpy(), device=device),
                          pygpu.tensor(TARGETS, device=device), in_len, TG_LEN, 0, 0, False)
    theirs = torch.ctc_loss(lp, torch.tensor(TARGETS), in_len, TG_LEN, 0, 0, False)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    assert np.isinf(ours.numpy()[3])
    m, tm = nn.CTCLoss(blank=0, reduction="sum"), torch.nn.CTCLoss(blank=0, reduction="sum")
    np.testing.assert_allclose(
        m(pygpu.tensor(lp.numpy(), device=device), pygpu.tensor(TARGETS, device=device), IN_LEN,
          TG_LEN).item(), tm(lp, torch.tensor(TARGETS), IN_LEN, TG_LEN).item(), rtol=1e-12)
    # another blank index, and unbatched input (T, C)
    tg = np.array([0, 1, 3])
    np.testing.assert_allclose(
        F.ctc_loss(pygpu.tensor(lp.numpy()[:, 0], device=device), pygpu.tensor(tg, device=device),
                   12, 3, blank=5).item(),
        TF.ctc_loss(lp[:, 0], torch.tensor(tg), torch.tensor(12), torch.tensor(3),
                    blank=5).item(), rtol=1e-12)


def test_errors_match_torch():
    lp = pygpu.zeros(5, 2, 4)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 5"):
        F.ctc_loss(lp, pygpu.ones(2, 2, dtype=pygpu.int64), [6, 5], [2, 2])
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 5"):
        TF.ctc_loss(torch.zeros(5, 2, 4), torch.ones(2, 2, dtype=torch.int64), [6, 5], [2, 2])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, pygpu.ones(2, 2, dtype=pygpu.int64), [5, 5], [2, 2], blank=4)
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        TF.ctc_loss(torch.zeros(5, 2, 4), torch.ones(2, 2, dtype=torch.int64), [5, 5], [2, 2],
                    blank=4)
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.ctc_loss(lp, pygpu.ones(2, 2, dtype=pygpu.int64), [5, 5], [2, 2], reduction="avg")
