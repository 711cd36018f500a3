# test_rnn_aten.py - ATen's functional recurrent stacks at torch's level (torch.lstm, gru,
# rnn_tanh, rnn_relu, both overloads, and miopen_rnn: pygpu/_ops/_rnn_aten.py) and
# nn.functional.multi_head_attention_forward (pygpu/nn/_mha.py) against torch on every
# device: values, gradients, every option, and PyTorch's errors.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def P(t, device, grad=False):
    if t is None:
        return None
    return pygpu.tensor(t.detach().numpy(), device=device, requires_grad=grad)


def close(p, t, tol=1e-9):
    np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


MODULES = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN,
           "rnn_relu": torch.nn.RNN}
CASES = [("lstm", 0), ("lstm", 2), ("gru", 0), ("rnn_tanh", 0), ("rnn_relu", 0)]


def _module(mode, proj, bias=True):
    torch.manual_seed(3)
    kw = {"proj_size": proj} if proj else {}
    if mode == "rnn_relu":
        kw["nonlinearity"] = "relu"
    return MODULES[mode](3, 4, num_layers=2, bidirectional=True, bias=bias,
                         dtype=torch.float64, **kw)


def _states(mode, proj, B):
    h0 = torch.randn(4, B, proj or 4, dtype=torch.float64)
    c0 = torch.randn(4, B, 4, dtype=torch.float64)
    return ([h0, c0] if mode == "lstm" else h0), (h0, c0)


@pytest.mark.parametrize("mode,proj", CASES, ids=[f"{m}-p{p}" for m, p in CASES])
@pytest.mark.parametrize("batch_first", [False, True])
def test_padded_stack_matches_torch(device, mode, proj, batch_first):
    m = _module(mode, proj, bias=not batch_first)
    params = [p.detach().requires_grad_() for p in m._flat_weights]
    x = torch.randn(2, 5, 3, dtype=torch.float64) if batch_first else \
        torch.randn(5, 2, 3, dtype=torch.float64)
    x.requires_grad_()
    hx, _ = _states(mode, proj, 2)
    args = (not batch_first, 2, 0.0, False, True, batch_first)
    ref = getattr(torch, mode)(x, hx, params, *args)
    px = P(x, device, True)
    pp = [P(p, device, True) for p in params]
    phx = [P(h, device) for h in hx] if mode == "lstm" else P(hx, device)
    out = getattr(pygpu, mode)(px, phx, pp, *args)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        close(o, r)
    sum(o.sum() for o in ref).backward()
    sum(o.sum() for o in out).backward()
    close(px.grad, x.grad)
    for a, b in zip(pp, params):
        close(a.grad, b.grad)


@pytest.mark.parametrize("mode,proj", CASES, ids=[f"{m}-p{p}" for m, p in CASES])
def test_packed_overload_matches_torch(device, mode, proj):
    m = _module(mode, proj)
    params = [p.detach() for p in m._flat_weights]
    data = torch.randn(6, 3, dtype=torch.float64)
    bs = torch.tensor([3, 2, 1])
    hx, _ = _states(mode, proj, 3)
    ref = getattr(torch, mode)(data, bs, hx, params, True, 2, 0.0, False, True)
    phx = [P(h, device) for h in hx] if mode == "lstm" else P(hx, device)
    out = getattr(pygpu, mode)(P(data, device), pygpu.tensor([3, 2, 1]), phx,
                               [P(p, device) for p in params], True, 2, 0.0, False, True)
    for o, r in zip(out, ref):
        close(o, r)


def test_miopen_rnn_runs_the_same_stacks(device):
    for mode, kind in ((0, "rnn_relu"), (1, "rnn_tanh"), (2, "lstm"), (3, "gru")):
        m = _module(kind, 0)
        params = [p.detach() for p in m._flat_weights]
        x = torch.randn(5, 2, 3, dtype=torch.float64)
        hx, (h0, c0) = _states(kind, 0, 2)
        ref = getattr(torch, kind)(x, hx, params, True, 2, 0.0, False, True, False)
        out = pygpu.miopen_rnn(P(x, device), [P(p, device) for p in params], 4, P(h0, device),
                               P(c0, device) if kind == "lstm" else None, mode, 4, 2, False,
                               0.0, False, True, [], None)
        assert len(out) == 5
        close(out[0], ref[0])
        close(out[1], ref[1])
        if kind == "lstm":
            close(out[2], ref[2])
        assert out[3].numel() == 0 and out[4].numel() == 0
    with pytest.raises(RuntimeError, match="Unknown miopen RNN mode"):
        pygpu.miopen_rnn(P(x, device), [], 4, P(h0, device), None, 7, 4, 2, False, 0.0, False,
                         True, [], None)


def test_errors_are_atens():
    x = pygpu.zeros(5, 2, 3)
    with pytest.raises(RuntimeError, match="lstm expects two hidden states"):
        pygpu.lstm(x, [pygpu.zeros(1, 2, 4)], [], True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="lstm expects two hidden states"):
        torch.lstm(torch.zeros(5, 2, 3), [torch.zeros(1, 2, 4)], [], True, 1, 0.0, False,
                   False, False)
    with pytest.raises(RuntimeError, match="incorrect number of RNN parameters"):
        pygpu.gru(x, pygpu.zeros(1, 2, 4), [pygpu.zeros(12, 3)], True, 1, 0.0, False, False,
                  False)


E, H, L, S, N = 8, 2, 3, 4, 2


def _mha_case(case):
    torch.manual_seed(case)
    q, k, v = (torch.randn(L, N, E, dtype=torch.float64), torch.randn(S, N, E, dtype=torch.float64),
               torch.randn(S, N, E, dtype=torch.float64))
    kw = dict(bias_k=None, bias_v=None, add_zero_attn=False, key_padding_mask=None,
              attn_mask=None, need_weights=True, average_attn_weights=True)
    if case == 1:
        kw.update(bias_k=torch.randn(1, 1, E, dtype=torch.float64),
                  bias_v=torch.randn(1, 1, E, dtype=torch.float64))
    if case == 2:
        kw.update(add_zero_attn=True, key_padding_mask=torch.tensor(
            [[False, False, True, False], [False, True, False, False]]))
    if case == 3:
        kw.update(attn_mask=torch.randn(L, S, dtype=torch.float64), need_weights=False)
    if case == 4:
        am = torch.rand(L, S) > 0.7
        am[:, 0] = False
        kw.update(attn_mask=am, average_attn_weights=False)
    if case == 5:  # self-attention, key padding, the fused path
        q = k = v = torch.randn(L, N, E, dtype=torch.float64)
        kw.update(need_weights=False, key_padding_mask=torch.tensor(
            [[False, False, True], [False, True, False]]))
    if case == 6:  # unbatched, a 3-d mask of one per head
        q, k, v = q[:, 0], k[:, 0], v[:, 0]
        kw.update(attn_mask=torch.randn(H, L, S, dtype=torch.float64))
    return q, k, v, kw


@pytest.mark.parametrize("case", range(7))
def test_multi_head_attention_forward_matches_torch(device, case):
    q, k, v, kw = _mha_case(case)
    W = torch.randn(3 * E, E, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3 * E, dtype=torch.float64)
    ow, ob = torch.randn(E, E, dtype=torch.float64), torch.randn(E, dtype=torch.float64)
    ref = TF.multi_head_attention_forward(q, k, v, E, H, W, b, kw["bias_k"], kw["bias_v"],
                                          kw["add_zero_attn"], 0.0, ow, ob, training=False,
                                          key_padding_mask=kw["key_padding_mask"],
                                          need_weights=kw["need_weights"],
                                          attn_mask=kw["attn_mask"],
                                          average_attn_weights=kw["average_attn_weights"])
    pq = P(q, device)
    pk = pq if k is q else P(k, device)
    pv = pq if v is q else P(v, device)
    pW = P(W, device, True)
    out = pygpu.nn.functional.multi_head_attention_forward(
        pq, pk, pv, E, H, pW, P(b, device), P(kw["bias_k"], device), P(kw["bias_v"], device),
        kw["add_zero_attn"], 0.0, P(ow, device), P(ob, device), training=False,
        key_padding_mask=P(kw["key_padding_mask"], device), need_weights=kw["need_weights"],
        attn_mask=P(kw["attn_mask"], device),
        average_attn_weights=kw["average_attn_weights"])
    close(out[0], ref[0])
    assert (out[1] is None) == (ref[1] is None)
    if ref[1] is not None:
        close(out[1], ref[1])
    ref[0].sum().backward()
    out[0].sum().backward()
    close(pW.grad, W.grad)


def test_multi_head_attention_forward_separate_weights_and_static_kv(device):
    torch.manual_seed(7)
    q = torch.randn(L, N, E, dtype=torch.float64)
    k = torch.randn(S, N, 5, dtype=torch.float64)
    v = torch.randn(S, N, 6, dtype=torch.float64)
    wq, wk, wv = (torch.randn(E, E, dtype=torch.float64), torch.randn(E, 5, dtype=torch.float64),
                  torch.randn(E, 6, dtype=torch.float64))
    ow = torch.randn(E, E, dtype=torch.float64)
    ref = TF.multi_head_attention_forward(q, k, v, E, H, None, None, None, None, False, 0.0, ow,
                                          None, training=False, use_separate_proj_weight=True,
                                          q_proj_weight=wq, k_proj_weight=wk, v_proj_weight=wv)
    out = pygpu.nn.functional.multi_head_attention_forward(
        P(q, device), P(k, device), P(v, device), E, H, None, None, None, None, False, 0.0,
        P(ow, device), None, training=False, use_separate_proj_weight=True,
        q_proj_weight=P(wq, device), k_proj_weight=P(wk, device), v_proj_weight=P(wv, device))
    close(out[0], ref[0])
    close(out[1], ref[1])
    sk = torch.randn(N * H, 5, E // H, dtype=torch.float64)
    sv = torch.randn(N * H, 5, E // H, dtype=torch.float64)
    W = torch.randn(3 * E, E, dtype=torch.float64)
    k = torch.randn(S, N, E, dtype=torch.float64)
    ref = TF.multi_head_attention_forward(q, k, k, E, H, W, None, None, None, False, 0.0, ow,
                                          None, training=False, static_k=sk, static_v=sv)
    out = pygpu.nn.functional.multi_head_attention_forward(
        P(q, device), P(k, device), P(k, device), E, H, P(W, device), None, None, None, False,
        0.0, P(ow, device), None, training=False, static_k=P(sk, device),
        static_v=P(sv, device))
    close(out[0], ref[0])
    close(out[1], ref[1])


def test_multi_head_attention_forward_errors():
    q = pygpu.zeros(L, N, E)
    W, ow = pygpu.zeros(3 * E, E), pygpu.zeros(E, E)
    args = (E, H, W, None, None, None, False, 0.0, ow, None)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 6"):
        pygpu.nn.functional.multi_head_attention_forward(q, q, q, 6, *args[1:])
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        pygpu.nn.functional.multi_head_attention_forward(q, q, q, *args, is_causal=True)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask"):
        pygpu.nn.functional.multi_head_attention_forward(q, q, q, *args,
                                                         attn_mask=pygpu.zeros(2, 2))
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D"):
        pygpu.nn.functional.multi_head_attention_forward(pygpu.zeros(E), q, q, *args)
