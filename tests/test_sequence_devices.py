# test_sequence_devices.py - the sequence-model kernels of each device against their CPU
# twins (no torch needed): the recurrent cells (RNN_CELL, RNN_CELL_BWD) through whole
# layers, and the fused attention (SDPA, SDPA_BWD) with a mask, causal, GQA and dropout,
# whose decisions every device draws alike from pygpu's generator (Philox, counter-based).
# On sim the same CPU kernels run behind sim's queue; on cuda (a real GPU, or the emulated
# device of tests/cuda_emu) kernels/rnn.cu and kernels/attention.cu.
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import functional as F


def _on(device, arrays, grad=True):
    ts = [pygpu.tensor(a, device=device) for a in arrays]
    if grad:
        for t in ts:
            t.requires_grad_()
    return ts


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_recurrent_layer_matches_the_cpu(device, mode):
    rng = np.random.default_rng(0)
    pygpu.manual_seed(0)
    kw = {"proj_size": 3} if mode == "LSTM" else {}
    ref = getattr(nn, mode)(4, 6, num_layers=2, bidirectional=True, **kw).double()
    dev = getattr(nn, mode)(4, 6, num_layers=2, bidirectional=True, **kw).double()
    dev.load_state_dict(ref.state_dict())
    dev = dev.to(device)
    x = rng.standard_normal((5, 3, 4))
    packed_lengths = [5, 3, 2]
    outs = []
    for m, d in ((ref, "cpu"), (dev, device)):
        (xt,) = _on(d, [x])
        pk = nn.utils.rnn.pack_padded_sequence(xt, packed_lengths)
        o, h = m(pk)
        o, _ = nn.utils.rnn.pad_packed_sequence(o)
        hs = h[0].sum() + h[1].sum() if mode == "LSTM" else h.sum()
        ((o ** 2).sum() + hs).backward()
        outs.append([o.detach().numpy(), xt.grad.numpy()]
                    + [p.grad.numpy() for p in m.parameters()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-5)])
def test_attention_matches_the_cpu_dropout_included(device, dtype, tol):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 4, 37, 16)).astype(dtype)
    k, v = (rng.standard_normal((2, 2, 45, 16)).astype(dtype) for _ in range(2))
    mask = rng.standard_normal((4, 37, 45)).astype(dtype)
    res = []
    for d in ("cpu", device):
        pygpu.manual_seed(3)
        tq, tk, tv = _on(d, [q, k, v])
        outs = []
        for kw in ({"attn_mask": pygpu.tensor(mask, device=d), "dropout_p": 0.25},
                   {"is_causal": True}):
            o = F.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True, **kw)
            (o * o).sum().backward()
            outs += [o.detach().numpy(), tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()]
            tq.grad = tk.grad = tv.grad = None
        res.append(outs)
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


@pytest.mark.parametrize("M", [1, 3, 4, 17, 32, 33])
def test_few_row_products_match_numpy(device, M):
    """x (M, K) @ W^T with W stored (N, K): the recurrent layers' per-step product, which
    runs unpacked on AVX-512 CPUs for M <= 32 (csrc/backends/cpu/cpu_sgemm_small.c); odd N
    and K cross its 4 x 4 tiles and 16-lane vectors."""
    rng = np.random.default_rng(M)
    for N, K in ((70, 65), (2048, 512), (67, 1000)):
        a = rng.standard_normal((M, K)).astype(np.float32)
        w = rng.standard_normal((N, K)).astype(np.float32)
        c = pygpu.tensor(a, device=device) @ pygpu.tensor(w, device=device).transpose(0, 1)
        np.testing.assert_allclose(c.numpy(), a.astype(np.float64) @ w.T.astype(np.float64),
                                   rtol=1e-4, atol=1e-3 * np.sqrt(K))


def test_dropout2d_zeroes_whole_channels(device):
    """nn.Dropout2d (mnist_rnn uses it): each (batch, channel) map is kept whole, scaled by
    1/(1-p), or zeroed; a 2-d input is taken as PyTorch takes it ((N, C): each element its own draw), with
    PyTorch's deprecation warning; eval() is the identity."""
    pygpu.manual_seed(0)
    x = pygpu.ones((8, 6, 3, 3), device=device)
    y = nn.Dropout2d(0.5)(x).numpy()
    per_map = y.reshape(48, 9)
    assert set(np.unique(per_map)) <= {0.0, 2.0} and (per_map.min(1) == per_map.max(1)).all()
    assert 0 < (per_map[:, 0] == 0).sum() < 48
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        r = nn.Dropout2d(0.5)(pygpu.ones((20, 4), device=device)).numpy()
    # PyTorch's feature noise of a 2-d (N, C) input has shape (N, C): element by element
    assert set(np.unique(r)) <= {0.0, 2.0} and not (r.min(1) == r.max(1)).all()
    m = nn.Dropout2d(0.5).eval()
    np.testing.assert_array_equal(m(x).numpy(), x.numpy())
