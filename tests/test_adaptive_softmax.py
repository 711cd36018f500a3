# test_adaptive_softmax.py - nn.AdaptiveLogSoftmaxWithLoss (pygpu/nn/adaptive.py) against torch
# as the oracle on every device, with torch's weights: forward's (output, loss) and every
# parameter's and the input's gradient, batched and unbatched, with and without a head bias;
# log_prob and predict; the parameter layout (state_dict keys and shapes); PyTorch's errors.
import numpy as np
import pytest

import pygpu
from pygpu import nn

torch = pytest.importorskip("torch")

rng = np.random.default_rng(3)


def _pair(device, head_bias, cutoffs=(4, 9, 15), n_classes=20, in_features=16):
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs),
                                                 div_value=2.0, head_bias=head_bias,
                                                 dtype=torch.float64)
    ours = nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs), div_value=2.0,
                                         head_bias=head_bias, device=device,
                                         dtype=pygpu.float64)
    sd = theirs.state_dict()
    assert list(ours.state_dict()) == list(sd)
    for k, v in ours.state_dict().items():
        assert tuple(v.shape) == tuple(sd[k].shape), k
    ours.load_state_dict({k: pygpu.tensor(v.numpy(), device=device) for k, v in sd.items()})
    return ours, theirs


@pytest.mark.parametrize("head_bias", [False, True])
def test_forward_and_gradients_match_torch(device, head_bias):
    ours, theirs = _pair(device, head_bias)
    x = rng.standard_normal((12, 16))
    target = np.array([0, 3, 4, 8, 9, 14, 15, 19, 2, 10, 16, 5])
    px = pygpu.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    po = ours(px, pygpu.tensor(target, device=device))
    to = theirs(tx, torch.tensor(target))
    np.testing.assert_allclose(po.output.detach().numpy(), to.output.detach().numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(po.loss.item(), to.loss.item(), rtol=1e-12)
    po.loss.backward()
    to.loss.backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-13)
    for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-13,
                                   err_msg=n)
    # unbatched: a 1-d input and a 0-d target
    o1 = ours(px[3].detach(), pygpu.tensor(target[3], device=device))
    t1 = theirs(tx[3].detach(), torch.tensor(target[3]))
    assert tuple(o1.output.shape) == tuple(t1.output.shape) == ()
    np.testing.assert_allclose(o1.output.item(), t1.output.item(), rtol=1e-12)


def test_log_prob_and_predict_match_torch(device):
    ours, theirs = _pair(device, True)
    x = rng.standard_normal((30, 16)) * 3
    lp, tlp = ours.log_prob(pygpu.tensor(x, device=device)), theirs.log_prob(torch.tensor(x))
    np.testing.assert_allclose(lp.detach().numpy(), tlp.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.exp(lp.detach().numpy()).sum(1), 1.0, rtol=1e-12)
    pred = ours.predict(pygpu.tensor(x, device=device)).numpy()
    np.testing.assert_array_equal(pred, theirs.predict(torch.tensor(x)).numpy())
    assert (pred >= 4).any() and (pred < 4).any()  # both paths of predict taken


def test_errors_match_torch():
    for mod in (nn, torch.nn):
        with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger"):
            mod.AdaptiveLogSoftmaxWithLoss(8, 10, [])
        for bad in ([5, 3], [0, 4], [4, 10], [4, 4]):
            with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
                mod.AdaptiveLogSoftmaxWithLoss(8, 10, bad)
    ours = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
    for m, lib in ((ours, pygpu), (theirs, torch)):
        with pytest.raises(RuntimeError, match="Target values should be in \\[0, 9\\]"):
            m(lib.zeros(2, 8), lib.tensor([1, 10]))
        with pytest.raises(RuntimeError, match="same size in the batch dimension"):
            m(lib.zeros(3, 8), lib.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
            m(lib.zeros(2, 8), lib.zeros(2, 1, dtype=lib.int64))
