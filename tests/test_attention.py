# test_attention.py - F.scaled_dot_product_attention (one fused node each way: the CPU's
# tiled kernel over the GEMM contract, csrc/backends/cpu/cpu_attention.c), nn.MultiheadAttention
# and the Transformer layers against torch as the oracle from the same weights and inputs
# (outputs and every gradient, float64); finite differences of the kernel, causal and masked;
# dropout's reproducibility and gradient; autocast's dtype; PyTorch's errors; and the memory
# counters showing that the kernel's peak memory grows with T, not T^2.
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


def _close(p, t, tol=1e-9):
    np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _leaves(arrays, device):
    return ([pygpu.tensor(a, device=device).requires_grad_() for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


# (query shape, key shape, value features, mask shape | None, mask kind, causal, gqa, scale):
# L and S cross the kernel's 64 x 128 tiles unevenly; masks broadcast from fewer axes
CASES = {
    "plain": ((2, 3, 5, 8), (2, 3, 7, 8), 8, None, None, False, False, None),
    "tiles": ((1, 2, 130, 16), (1, 2, 200, 16), 12, None, None, False, False, None),
    "causal": ((2, 2, 150, 8), (2, 2, 150, 8), 8, None, None, True, False, 0.3),
    "bool_mask": ((2, 3, 70, 8), (2, 3, 140, 8), 8, (70, 140), "bool", False, False, None),
    "float_mask": ((3, 2, 40, 8), (3, 2, 50, 8), 6, (2, 1, 50), "float", False, False, None),
    "masked_row": ((2, 2, 9, 4), (2, 2, 11, 4), 4, (2, 1, 9, 11), "rows", False, False, None),
    "gqa": ((2, 4, 33, 8), (2, 2, 65, 8), 8, None, None, False, True, None),
    "three_d": ((3, 20, 8), (3, 30, 8), 5, None, None, True, False, None),
    # the causal cut of each row and tile (cpu_attention.c): fewer queries than keys, more,
    # and query heads sharing a key/value head
    "causal_wide": ((1, 2, 70, 8), (1, 2, 300, 8), 8, None, None, True, False, None),
    "causal_tall": ((1, 2, 300, 8), (1, 2, 140, 8), 6, None, None, True, False, None),
    "causal_gqa": ((1, 4, 129, 8), (1, 2, 129, 8), 8, None, None, True, True, None),
}


def _mask(rng, shape, kind):
    if kind is None:
        return None
    if kind == "float":
        return rng.standard_normal(shape)
    m = rng.random(shape) > 0.3
    if kind == "rows":
        m[0, ..., 2, :] = False  # a fully masked row: zeros, as PyTorch's
    return m


@pytest.mark.parametrize("case", list(CASES))
def test_sdpa_matches_torch(device, case):
    qs, ks, ev, ms, mk, causal, gqa, scale = CASES[case]
    rng = np.random.default_rng(0)
    vs = ks[:-1] + (ev,)
    arrays = [rng.standard_normal(s) for s in (qs, ks, vs)]
    (pq, pk, pv), (tq, tk, tv) = _leaves(arrays, device)
    m = _mask(rng, ms, mk)
    pm = pygpu.tensor(m, device=device) if m is not None else None
    tm = torch.tensor(m) if m is not None else None
    po = F.scaled_dot_product_attention(pq, pk, pv, attn_mask=pm, is_causal=causal, scale=scale,
                                        enable_gqa=gqa)
    to = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, is_causal=causal, scale=scale,
                                         enable_gqa=gqa)
    _close(po, to)
    up = rng.standard_normal(to.shape)
    (po * pygpu.tensor(up, device=device)).sum().backward()
    (to * torch.tensor(up)).sum().backward()
    for p, t in ((pq, tq), (pk, tk), (pv, tv)):
        _close(p.grad, t.grad)


def test_sdpa_float32_and_autocast(device):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 4, 100, 32)).astype(np.float32) for _ in range(3))
    po = F.scaled_dot_product_attention(*(pygpu.tensor(a, device=device) for a in (q, k, v)),
                                        is_causal=True)
    to = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), is_causal=True)
    assert po.dtype == pygpu.float32
    _close(po, to, tol=2e-5)
    with pygpu.autocast(device_type=pygpu.device(device).type, dtype=pygpu.bfloat16):
        pb = F.scaled_dot_product_attention(*(pygpu.tensor(a, device=device) for a in (q, k, v)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tb = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)))
    assert pb.dtype == pygpu.bfloat16 and tb.dtype == torch.bfloat16
    np.testing.assert_allclose(pb.astype(pygpu.float32).numpy(), tb.float().numpy(), atol=3e-2)


def test_sdpa_causal_float32_gradients_at_a_gpt_head(device):
    """A GPT head's shape (T = 256, head dim 64, float32): the kernel's real 64 x 128 tiles,
    whose diagonal ones it narrows to the columns a causal row can see, both directions."""
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((2, 2, 256, 64)).astype(np.float32) for _ in range(3)]
    (pq, pk, pv), (tq, tk, tv) = _leaves(arrays, device)
    po = F.scaled_dot_product_attention(pq, pk, pv, is_causal=True)
    to = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    _close(po, to, tol=2e-5)
    up = rng.standard_normal(to.shape).astype(np.float32)
    (po * pygpu.tensor(up, device=device)).sum().backward()
    (to * torch.tensor(up)).sum().backward()
    for p, t in ((pq, tq), (pk, tk), (pv, tv)):
        _close(p.grad, t.grad, tol=1e-4)


def _numeric(f, arr, eps=1e-6):
    g = np.zeros_like(arr)
    flat, gf = arr.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = f()
        flat[i] = old - eps
        lo = f()
        flat[i] = old
        gf[i] = (hi - lo) / (2 * eps)
    return g


@pytest.mark.parametrize("kind", ["causal", "masked"])
def test_sdpa_kernel_against_finite_differences(device, kind):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 2, 4, 3)) for _ in range(3))
    up = rng.standard_normal((1, 2, 4, 3))
    mask = rng.standard_normal((2, 4, 4)) if kind == "masked" else None
    causal = kind == "causal"

    def run(grad=False):
        ts = [pygpu.tensor(a, device=device) for a in (q, k, v)]
        if grad:
            for t in ts:
                t.requires_grad_()
        m = pygpu.tensor(mask, device=device) if mask is not None else None
        o = F.scaled_dot_product_attention(*ts, attn_mask=m, is_causal=causal)
        return ts, (o * pygpu.tensor(up, device=device)).sum()

    ts, loss = run(grad=True)
    loss.backward()
    for t, a in zip(ts, (q, k, v)):
        np.testing.assert_allclose(t.grad.numpy(), _numeric(lambda: run()[1].item(), a),
                                   rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_dropout_is_reproducible_and_differentiable(device, causal):
    """Dropout decisions come from pygpu's generator (Philox, drawn by the kernel): the same
    seed gives the same output, the kept weights are scaled by 1/(1-p), and the backward
    draws the same decisions (finite differences with the generator reseeded), with the
    causal cut too."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 6, 4)) for _ in range(3))

    def run(arrs, grad=False):
        pygpu.manual_seed(7)
        ts = [pygpu.tensor(a, device=device) for a in arrs]
        if grad:
            for t in ts:
                t.requires_grad_()
        return ts, F.scaled_dot_product_attention(*ts, dropout_p=0.3, is_causal=causal)

    _, a = run((q, k, v))
    _, b = run((q, k, v))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    plain = F.scaled_dot_product_attention(*(pygpu.tensor(x, device=device) for x in (q, k, v)),
                                           is_causal=causal)
    assert not np.allclose(a.numpy(), plain.numpy())
    ts, o = run((q, k, v), grad=True)
    (o ** 2).sum().backward()
    for t, arr in zip(ts, (q, k, v)):
        num = _numeric(lambda: float((run((q, k, v))[1] ** 2).sum().item()), arr)
        np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-5, atol=1e-7)


def test_sdpa_peak_memory_grows_with_t_not_t_squared():
    """sim's memory counters: forward + backward at T and 4T. Scores of T x T would make the
    peak grow 16x; the fused kernel's grows ~4x (the inputs, output, gradients and a
    logsumexp per row; its tiles are fixed-size scratch)."""
    def peak(T):
        rng = np.random.default_rng(4)
        arrs = [rng.standard_normal((1, 1, T, 16)).astype(np.float32) for _ in range(3)]
        ts = [pygpu.tensor(a, device="sim:0").requires_grad_() for a in arrs]
        pygpu.synchronize("sim:0")
        pygpu.sim.reset_peak_memory_stats(0)
        base = pygpu.sim.memory_allocated(0)
        F.scaled_dot_product_attention(*ts, is_causal=True).sum().backward()
        pygpu.synchronize("sim:0")
        return pygpu.sim.max_memory_allocated(0) - base

    small, big = peak(256), peak(1024)
    assert big < 6 * small, (small, big)
    assert big < 1024 * 1024 * 4 // 4  # far below one float32 T x T matrix (4 MiB)


def test_sdpa_errors():
    q = pygpu.zeros((2, 4, 5, 8))
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        F.scaled_dot_product_attention(q, pygpu.zeros((2, 2, 6, 8)), pygpu.zeros((2, 2, 6, 8)))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(5\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 2"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=pygpu.ones((3, 5), dtype=pygpu.bool))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=pygpu.ones((5, 5)), is_causal=True)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=pygpu.ones((5, 5), dtype=pygpu.int64))


# ---- nn.MultiheadAttention and the Transformer layers --------------------------------------------

def _load(pm, tm, device):
    pm.load_state_dict({k: pygpu.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return pm.to(device)


MHA = {  # batch_first, kdim/vdim, masks, need_weights, average
    "seq_first_weights": (False, None, "both_bool", True, True),
    "batch_first_sdpa": (True, None, "both_float", False, True),
    "kdim_vdim": (True, (6, 10), "padding", True, False),
    "causal_hint": (False, None, "causal", False, True),
}


def _mha_close(pm, tm, ps, ts, p_out, t_out, need_weights):
    """The module's output and weights, then the inputs' and parameters' gradients of
    sum(output ** 2), as torch's."""
    (po, pw), (to, tw) = p_out, t_out
    _close(po, to)
    if need_weights:
        _close(pw, tw)
    else:
        assert pw is None and tw is None
    (po ** 2).sum().backward()
    (to ** 2).sum().backward()
    for p, t in zip(ps, ts):
        _close(p.grad, t.grad)
    tp = dict(tm.named_parameters())
    for name, p in pm.named_parameters():
        _close(p.grad, tp[name].grad)


@pytest.mark.parametrize("case", list(MHA))
def test_multihead_attention_matches_torch(device, case):
    bf, kv, masks, nw, avg = MHA[case]
    E, H, N, L, S = 16, 4, 3, 5, 7
    kdim, vdim = kv or (None, None)
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, H, batch_first=bf, kdim=kdim, vdim=vdim).double()
    pm = nn.MultiheadAttention(E, H, batch_first=bf, kdim=kdim, vdim=vdim).double()
    assert list(pm.state_dict()) == list(tm.state_dict())
    pm = _load(pm, tm, device)
    rng = np.random.default_rng(5)
    self_attn = kv is None and masks != "padding"
    Sx = L if self_attn else S
    shape = lambda n, f: (N, n, f) if bf else (n, N, f)  # noqa: E731
    arrays = [rng.standard_normal(shape(L, E))]
    if not self_attn:
        arrays += [rng.standard_normal(shape(S, kdim or E)), rng.standard_normal(shape(S, vdim or E))]
    ps, ts = _leaves(arrays, device)
    pargs = ps * 3 if self_attn else ps
    targs = ts * 3 if self_attn else ts
    kw_p, kw_t = {}, {}
    if masks in ("both_bool", "both_float", "padding"):
        kp = rng.random((N, Sx)) > 0.7
        kp[:, 0] = False
        kpf = np.where(kp, -1e9, rng.standard_normal((N, Sx)))
        kpm = kp if masks != "both_float" else kpf
        kw_p["key_padding_mask"] = pygpu.tensor(kpm, device=device)
        kw_t["key_padding_mask"] = torch.tensor(kpm)
    if masks in ("both_bool", "both_float", "causal"):
        am = torch.nn.Transformer.generate_square_subsequent_mask(L).double()
        if masks == "both_bool":
            am = am != 0
        kw_p["attn_mask"], kw_t["attn_mask"] = pygpu.tensor(am.numpy(), device=device), am
        if masks == "causal":
            kw_p["is_causal"] = kw_t["is_causal"] = True
    po, pw = pm(*pargs, need_weights=nw, average_attn_weights=avg, **kw_p)
    to, tw = tm(*targs, need_weights=nw, average_attn_weights=avg, **kw_t)
    _mha_close(pm, tm, ps, ts, (po, pw), (to, tw), nw)


# The module's forward is F.multi_head_attention_forward (one path, as PyTorch's): the
# options it gained that way, and the input forms that keep or break `query is key`.
# (add_bias_kv, add_zero_attn, inputs, batch_first, need_weights, eval: torch's fast path)
MHA_PATHS = {
    "bias_kv_zero_attn": (True, True, "cross", False, True, False),
    "bias_kv_self_sdpa": (True, False, "self", True, False, False),
    "key_is_value": (False, False, "key_is_value", True, True, False),
    "unbatched_self": (False, True, "unbatched", True, True, False),
    "eval_fast_path": (False, False, "self", True, False, True),  # batch_first, no grad
}


@pytest.mark.parametrize("case", list(MHA_PATHS))
def test_multihead_attention_paths_match_torch(device, case):
    bias_kv, zero_attn, inputs, bf, nw, eval_ = MHA_PATHS[case]
    E, H, N, L, S = 8, 2, 3, 4, 6
    torch.manual_seed(1)
    kw = dict(add_bias_kv=bias_kv, add_zero_attn=zero_attn, batch_first=bf)
    tm = torch.nn.MultiheadAttention(E, H, **kw).double()
    pm = nn.MultiheadAttention(E, H, **kw).double()
    assert list(pm.state_dict()) == list(tm.state_dict())
    pm = _load(pm, tm, device)
    if eval_:
        tm.eval()
        pm.eval()
    rng = np.random.default_rng(9)
    batch = (lambda n: (N, n, E)) if bf else (lambda n: (n, N, E))
    if inputs == "unbatched":
        arrays = [rng.standard_normal((L, E))]
    elif inputs == "self":
        arrays = [rng.standard_normal(batch(L))]
    elif inputs == "key_is_value":
        arrays = [rng.standard_normal(batch(L)), rng.standard_normal(batch(S))]
    else:
        arrays = [rng.standard_normal(batch(L)), rng.standard_normal(batch(S)),
                  rng.standard_normal(batch(S))]
    ps, ts = _leaves(arrays, device)
    pick = {"unbatched": lambda a: a * 3, "self": lambda a: a * 3,
            "key_is_value": lambda a: [a[0], a[1], a[1]], "cross": lambda a: a}[inputs]
    if eval_:
        with torch.no_grad():
            to, tw = tm(*pick(ts), need_weights=nw)
        with pygpu.no_grad():
            po, pw = pm(*pick(ps), need_weights=nw)
        _close(po, to)
        assert pw is None and tw is None
        return
    po, pw = pm(*pick(ps), need_weights=nw)
    to, tw = tm(*pick(ts), need_weights=nw)
    _mha_close(pm, tm, ps, ts, (po, pw), (to, tw), nw)


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_matches_torch(device, norm_first, activation):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation=activation,
                                          batch_first=True, norm_first=norm_first).double()
    te = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(16).double(),
                                     enable_nested_tensor=False)
    pl = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation=activation,
                                    batch_first=True, norm_first=norm_first).double()
    pe = nn.TransformerEncoder(pl, 2, norm=nn.LayerNorm(16).double())
    assert list(pe.state_dict()) == list(te.state_dict())
    pe = _load(pe, te, device)
    rng = np.random.default_rng(6)
    (px,), (tx,) = _leaves([rng.standard_normal((3, 9, 16))], device)
    kp = rng.random((3, 9)) > 0.7
    kp[:, 0] = False
    mask = torch.nn.Transformer.generate_square_subsequent_mask(9) != 0  # bool: True masks out
    tol = 1e-9 if activation == "relu" else 1e-6  # pygpu's erf in gelu: ~1e-8 from libm's
    po = pe(px, mask=pygpu.tensor(mask.numpy(), device=device),
            src_key_padding_mask=pygpu.tensor(kp, device=device))
    to = te(tx, mask=mask, src_key_padding_mask=torch.tensor(kp))
    _close(po, to, tol)
    (po ** 2).sum().backward()
    (to ** 2).sum().backward()
    _close(px.grad, tx.grad, tol)
    tp = dict(te.named_parameters())
    for name, p in pe.named_parameters():
        _close(p.grad, tp[name].grad, tol)


def test_transformer_matches_torch(device):
    torch.manual_seed(0)
    tt = torch.nn.Transformer(16, 4, 2, 2, 32, dropout=0.0).double()
    pt = nn.Transformer(16, 4, 2, 2, 32, dropout=0.0).double()
    assert list(pt.state_dict()) == list(tt.state_dict())
    pt = _load(pt, tt, device)
    rng = np.random.default_rng(7)
    (ps, pg), (ts, tg) = _leaves([rng.standard_normal((6, 2, 16)), rng.standard_normal((5, 2, 16))],
                                 device)
    tmask = tt.generate_square_subsequent_mask(5).double()
    pmask = nn.Transformer.generate_square_subsequent_mask(5, device=device, dtype=pygpu.float64)
    _close(pmask, tmask)
    mkp = rng.random((2, 6)) > 0.6
    mkp[:, 0] = False
    po = pt(ps, pg, tgt_mask=pmask, memory_key_padding_mask=pygpu.tensor(mkp, device=device),
            tgt_is_causal=True)
    to = tt(ts, tg, tgt_mask=tmask, memory_key_padding_mask=torch.tensor(mkp), tgt_is_causal=True)
    _close(po, to)
    (po ** 2).sum().backward()
    (to ** 2).sum().backward()
    _close(ps.grad, ts.grad)
    _close(pg.grad, tg.grad)


def test_transformer_dropout_trains_and_evaluates(device):
    """With dropout (the layers' default 0.1) training differs from evaluation, which matches
    torch's evaluation from the same weights."""
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16).double()
    pl = _load(nn.TransformerEncoderLayer(8, 2, 16).double(), tl, device)
    x = np.random.default_rng(8).standard_normal((4, 2, 8))
    train = pl(pygpu.tensor(x, device=device))
    pl.eval()
    tl.eval()
    ev = pl(pygpu.tensor(x, device=device))
    _close(ev, tl(torch.tensor(x)))
    assert not np.allclose(train.detach().numpy(), ev.detach().numpy())


def test_a_head_dimension_a_backend_declines_gives_the_same_result(device):
    """Head dimensions above 128 have no cuda kernel: cuda's supports_node declines the node
    (_C._has_node asks it; Python never asks the device type) and the op is composed, with
    PyTorch's result on every device, gradients included."""
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((1, 2, 5, 160)) for _ in range(3))
    pq, pk, pv = (pygpu.tensor(a, device=device).requires_grad_() for a in (q, k, v))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    po = F.scaled_dot_product_attention(pq, pk, pv, is_causal=True)
    to = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    _close(po, to)
    po.sum().backward()
    to.sum().backward()
    _close(pq.grad, tq.grad)


def _sdpa_inputs(device, E=8):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((2, 2, 9, E)) for _ in range(3)]
    return [pygpu.tensor(a, device=device) for a in arrays], [torch.tensor(a) for a in arrays]


def test_the_attention_switches_choose_the_implementation_with_the_same_result(device):
    """torch.backends.cuda.enable_flash_sdp/enable_mem_efficient_sdp switch cuda's fused
    kernels (the plugin's flash_sdp option, read by its supports_node): with both off the
    node is declined there and the op composed; the result is PyTorch's either way, on every
    device. sdpa_kernel sets the switches for a block and restores them."""
    from pygpu.backends import cuda as bc
    from pygpu.nn.attention import SDPBackend, sdpa_kernel
    (q, k, v), (tq, tk, tv) = _sdpa_inputs(device)
    want = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    fused = pygpu._C._has_node("SDPA", q, k, v, None)
    with sdpa_kernel(SDPBackend.MATH):
        assert (bc.flash_sdp_enabled(), bc.mem_efficient_sdp_enabled(),
                bc.math_sdp_enabled()) == (False, False, True)
        # only cuda declines: the cpu's and sim's fused kernels have no switch, as PyTorch's
        assert pygpu._C._has_node("SDPA", q, k, v, None) == (fused and device != "cuda")
        _close(F.scaled_dot_product_attention(q, k, v, is_causal=True), want)
    assert bc.flash_sdp_enabled() and bc.mem_efficient_sdp_enabled()
    assert pygpu._C._has_node("SDPA", q, k, v, None) == fused
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        assert pygpu._C._has_node("SDPA", q, k, v, None) == fused
        _close(F.scaled_dot_product_attention(q, k, v, is_causal=True), want)
    with pytest.raises(AssertionError, match="SDPBackend"):
        with sdpa_kernel(["math"]):
            pass


def test_no_implementation_left_is_pytorchs_error(device):
    """With the fused kernels and the math path both switched off, a call cuda's kernels
    decline raises PyTorch's 'No available kernel' RuntimeError; cpu and sim, whose kernels
    take every call, still answer."""
    from pygpu.nn.attention import SDPBackend, sdpa_kernel
    (q, k, v), (tq, tk, tv) = _sdpa_inputs(device)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        if device == "cuda":
            with pytest.raises(RuntimeError, match="No available kernel"):
                F.scaled_dot_product_attention(q, k, v)
        else:
            _close(F.scaled_dot_product_attention(q, k, v),
                   TF.scaled_dot_product_attention(tq, tk, tv))
