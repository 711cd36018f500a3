# test_rnn.py - the recurrent layers (RNN tanh/relu, LSTM with proj_size, GRU), the cells
# and nn.utils.rnn against torch as the oracle, from the same weights: outputs, final
# states and every gradient, over pairwise-covering option combinations (num_layers,
# bidirectional, batch_first, bias, initial states), packed sequences of uneven lengths
# sorted and unsorted, PyTorch's errors; and finite-difference checks of the fused cells
# (csrc/backends/cpu/cpu_rnn.c through pygpu/_ops/_rnn.py) in float64.
import warnings

import numpy as np
import pytest

import pygpu
from pygpu import nn

torch = pytest.importorskip("torch")

MODES = {"RNN_TANH": ("RNN", {"nonlinearity": "tanh"}), "RNN_RELU": ("RNN", {"nonlinearity": "relu"}),
         "LSTM": ("LSTM", {}), "GRU": ("GRU", {})}

# (num_layers, bidirectional, batch_first, bias, give hx): every option on and off
CONFIGS = [(1, False, False, True, False), (2, True, True, False, True),
           (2, False, True, True, True), (1, True, False, False, False),
           (3, True, False, True, True)]


def _pair_modules(mode, device, dtype=torch.float64, **kw):
    cls, extra = MODES[mode]
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(**extra, **kw).to(dtype)
    pm = getattr(nn, cls)(**extra, **kw)
    if dtype == torch.float64:
        pm = pm.double()
    pm.load_state_dict({k: pygpu.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, pm.to(device)


def _leaf(a, device):
    return pygpu.tensor(a, device=device).requires_grad_(), torch.tensor(a, requires_grad=True)


def _close(p, t, tol=1e-9):
    np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _grads_close(pm, tm, tol=1e-9):
    pp = dict(pm.named_parameters())
    for name, t in tm.named_parameters():
        assert pp[name].grad is not None, name
        np.testing.assert_allclose(pp[name].grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol,
                                   err_msg=name)


def _states(mode, hx):
    return (hx[0] + 2 * hx[1]) if mode == "LSTM" else hx


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "L%d-bi%d-bf%d-bias%d-hx%d" % c)
@pytest.mark.parametrize("mode", list(MODES))
def test_layer_matches_torch(device, mode, config):
    L, bi, bf, bias, give_hx = config
    H, I, T, B = 5, 4, 6, 3
    tm, pm = _pair_modules(mode, device, input_size=I, hidden_size=H, num_layers=L,
                           bidirectional=bi, batch_first=bf, bias=bias)
    rng = np.random.default_rng(1)
    px, tx = _leaf(rng.standard_normal((B, T, I) if bf else (T, B, I)), device)
    D = 2 if bi else 1
    args_p, args_t = [px], [tx]
    if give_hx:
        ph, th = _leaf(rng.standard_normal((L * D, B, H)), device)
        if mode == "LSTM":
            pc, tc = _leaf(rng.standard_normal((L * D, B, H)), device)
            args_p.append((ph, pc))
            args_t.append((th, tc))
        else:
            args_p.append(ph)
            args_t.append(th)
    po, phn = pm(*args_p)
    to, thn = tm(*args_t)
    _close(po, to)
    if mode == "LSTM":
        _close(phn[0], thn[0])
        _close(phn[1], thn[1])
    else:
        _close(phn, thn)
    up = rng.standard_normal(to.shape)
    ((po * pygpu.tensor(up, device=device)).sum() + (_states(mode, phn) ** 2).sum()).backward()
    ((to * torch.tensor(up)).sum() + (_states(mode, thn) ** 2).sum()).backward()
    _close(px.grad, tx.grad)
    _grads_close(pm, tm)
    if give_hx:
        _close(args_p[1][0].grad if mode == "LSTM" else args_p[1].grad,
               args_t[1][0].grad if mode == "LSTM" else args_t[1].grad)
        if mode == "LSTM":
            _close(args_p[1][1].grad, args_t[1][1].grad)


@pytest.mark.parametrize("config", [(1, False, True), (2, True, False)], ids=["L1", "L2-bi"])
def test_lstm_projection_matches_torch(device, config):
    L, bi, give_hx = config
    H, P, I, T, B = 6, 3, 4, 5, 2
    tm, pm = _pair_modules("LSTM", device, input_size=I, hidden_size=H, num_layers=L,
                           bidirectional=bi, proj_size=P)
    assert "weight_hr_l0" in pm.state_dict()
    rng = np.random.default_rng(2)
    px, tx = _leaf(rng.standard_normal((T, B, I)), device)
    D = 2 if bi else 1
    if give_hx:
        (ph, th), (pc, tc) = (_leaf(rng.standard_normal((L * D, B, P)), device),
                              _leaf(rng.standard_normal((L * D, B, H)), device))
        po, (phn, pcn) = pm(px, (ph, pc))
        to, (thn, tcn) = tm(tx, (th, tc))
    else:
        po, (phn, pcn) = pm(px)
        to, (thn, tcn) = tm(tx)
    for p, t in ((po, to), (phn, thn), (pcn, tcn)):
        _close(p, t)
    (po.sum() + (phn * pcn.sum()).sum()).backward()
    (to.sum() + (thn * tcn.sum()).sum()).backward()
    _close(px.grad, tx.grad)
    _grads_close(pm, tm)
    if give_hx:
        _close(ph.grad, th.grad)
        _close(pc.grad, tc.grad)


@pytest.mark.parametrize("sorted_", [True, False], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("mode", list(MODES))
def test_packed_sequences_of_uneven_lengths(device, mode, sorted_):
    """Packed input (sorted lengths with enforce_sorted, or unsorted without), a
    bidirectional 2-layer stack with an initial state: the packed output, the padded
    output and lengths, the final states (each sequence's last step) and the gradients."""
    H, I, T, B = 4, 3, 6, 4
    lengths = [6, 4, 4, 1] if sorted_ else [2, 6, 1, 5]
    tm, pm = _pair_modules(mode, device, input_size=I, hidden_size=H, num_layers=2,
                           bidirectional=True)
    rng = np.random.default_rng(3)
    px, tx = _leaf(rng.standard_normal((B, T, I)), device)
    ph, th = _leaf(rng.standard_normal((4, B, H)), device)
    hx_p = (ph, ph * 0.5) if mode == "LSTM" else ph
    hx_t = (th, th * 0.5) if mode == "LSTM" else th
    ppk = nn.utils.rnn.pack_padded_sequence(px, lengths, batch_first=True,
                                            enforce_sorted=sorted_)
    tpk = torch.nn.utils.rnn.pack_padded_sequence(tx, torch.tensor(lengths), batch_first=True,
                                                  enforce_sorted=sorted_)
    np.testing.assert_array_equal(ppk.batch_sizes.numpy(), tpk.batch_sizes.numpy())
    _close(ppk.data, tpk.data)
    po, phn = pm(ppk, hx_p)
    to, thn = tm(tpk, hx_t)
    _close(po.data, to.data)
    pp, plen = nn.utils.rnn.pad_packed_sequence(po, batch_first=True, total_length=T + 1)
    tp, tlen = torch.nn.utils.rnn.pad_packed_sequence(to, batch_first=True, total_length=T + 1)
    _close(pp, tp)
    np.testing.assert_array_equal(plen.numpy(), tlen.numpy())
    _close(_states(mode, phn), _states(mode, thn))
    (pp.sum() + (_states(mode, phn) ** 2).sum()).backward()
    (tp.sum() + (_states(mode, thn) ** 2).sum()).backward()
    _close(px.grad, tx.grad)
    _close(ph.grad, th.grad)
    _grads_close(pm, tm)


@pytest.mark.parametrize("mode", list(MODES))
def test_cells_match_torch(device, mode):
    cls = {"RNN_TANH": "RNNCell", "RNN_RELU": "RNNCell", "LSTM": "LSTMCell", "GRU": "GRUCell"}[mode]
    extra = {"nonlinearity": "relu"} if mode == "RNN_RELU" else {}
    torch.manual_seed(0)
    tc = getattr(torch.nn, cls)(3, 5, **extra).double()
    pc = getattr(nn, cls)(3, 5, **extra).double()
    pc.load_state_dict({k: pygpu.tensor(v.detach().numpy()) for k, v in tc.state_dict().items()})
    pc = pc.to(device)
    assert sorted(pc.state_dict()) == sorted(tc.state_dict())
    rng = np.random.default_rng(4)
    px, tx = _leaf(rng.standard_normal((2, 3)), device)
    ph, th = _leaf(rng.standard_normal((2, 5)), device)
    if mode == "LSTM":
        pcc, tcc = _leaf(rng.standard_normal((2, 5)), device)
        po, pc2 = pc(px, (ph, pcc))
        to, tc2 = tc(tx, (th, tcc))
        _close(pc2, tc2)
        po, to = po * pc2, to * tc2
    else:
        po, to = pc(px, ph), tc(tx, th)
    _close(po, to)
    (po ** 2).sum().backward()
    (to ** 2).sum().backward()
    for p, t in ((px, tx), (ph, th)):
        _close(p.grad, t.grad)
    _grads_close(pc, tc)
    # unbatched, no state given
    u = rng.standard_normal(3)
    pu = pc(pygpu.tensor(u, device=device))
    tu = tc(torch.tensor(u))
    _close(pu[0] if mode == "LSTM" else pu, tu[0] if mode == "LSTM" else tu)


def test_unbatched_input_and_state_dict_keys(device):
    tm, pm = _pair_modules("LSTM", device, input_size=3, hidden_size=4, num_layers=2,
                           bidirectional=True)
    assert list(pm.state_dict()) == list(tm.state_dict())
    assert repr(pm) == repr(tm)
    pm.flatten_parameters()
    x = np.random.default_rng(5).standard_normal((5, 3))
    po, (ph, pc) = pm(pygpu.tensor(x, device=device))
    to, (th, tc) = tm(torch.tensor(x))
    for p, t in ((po, to), (ph, th), (pc, tc)):
        assert p.shape == tuple(t.shape)
        _close(p, t)


def test_float32_and_no_grad(device):
    tm, pm = _pair_modules("GRU", device, dtype=torch.float32, input_size=8, hidden_size=16,
                           num_layers=2)
    x = np.random.default_rng(6).standard_normal((7, 3, 8)).astype(np.float32)
    with pygpu.no_grad():
        po, ph = pm(pygpu.tensor(x, device=device))
    assert po.grad_fn is None and po.dtype == pygpu.float32
    to, th = tm(torch.tensor(x))
    _close(po, to, tol=2e-5)
    _close(ph, th, tol=2e-5)


# ---- finite differences of the fused cells (float64) -----------------------------------------

def _numeric_grad(f, arr, eps=1e-6):
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


@pytest.mark.parametrize("mode", list(MODES) + ["LSTM_PROJ"])
def test_fused_cells_against_finite_differences(device, mode):
    """d(loss)/d(input, h0, every weight) of a 2-step bidirectional layer against central
    differences: the fused forward and backward cells checked by themselves."""
    proj = mode == "LSTM_PROJ"
    mode = "LSTM" if proj else mode
    cls, extra = MODES[mode]
    pygpu.manual_seed(0)
    m = getattr(nn, cls)(2, 3, bidirectional=True, **({"proj_size": 2} if proj else {}), **extra)
    m = m.double().to(device)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 2, 2))
    P = 2 if proj else 3
    h0 = rng.standard_normal((2, 2, P))
    c0 = rng.standard_normal((2, 2, 3))
    wts = {n: p.detach().numpy().copy() for n, p in m.named_parameters()}
    up = rng.standard_normal((2, 2, 2 * P))

    def loss(xv, hv, w):
        with pygpu.no_grad():
            for n, p in m.named_parameters():
                p.copy_(pygpu.tensor(w[n], device=device))
            h = pygpu.tensor(hv, device=device)
            hx = (h, h * 0.3) if mode == "LSTM" else h
            if mode == "LSTM" and proj:
                hx = (h, pygpu.tensor(c0, device=device))
            o, hn = m(pygpu.tensor(xv, device=device), hx)
            return float(scalar(o, hn).item())

    def scalar(o, hn):
        hs = (hn[0] ** 2).sum() * 1.5 + (hn[1] ** 3).sum() if mode == "LSTM" else (hn ** 2).sum()
        return (o * pygpu.tensor(up, device=device)).sum() + hs

    with pygpu.no_grad():
        for n, p in m.named_parameters():
            p.copy_(pygpu.tensor(wts[n], device=device))
    px = pygpu.tensor(x, device=device).requires_grad_()
    ph = pygpu.tensor(h0, device=device).requires_grad_()
    hx = (ph, ph * 0.3) if mode == "LSTM" else ph
    if proj:
        hx = (ph, pygpu.tensor(c0, device=device))
    o, hn = m(px, hx)
    scalar(o, hn).backward()
    np.testing.assert_allclose(px.grad.numpy(), _numeric_grad(lambda: loss(x, h0, wts), x),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ph.grad.numpy(), _numeric_grad(lambda: loss(x, h0, wts), h0),
                               rtol=1e-5, atol=1e-6)
    grads = {n: p.grad.numpy() for n, p in m.named_parameters()}
    for n in wts:
        num = _numeric_grad(lambda: loss(x, h0, wts), wts[n])
        np.testing.assert_allclose(grads[n], num, rtol=1e-5, atol=1e-6, err_msg=n)


def test_dropout_between_layers_is_reproducible_and_differentiable(device):
    """Dropout masks come from pygpu's generator: the same seed gives the same output, eval
    mode none, and the gradient is that of the masked forward (finite differences with the
    generator reseeded before each evaluation)."""
    pygpu.manual_seed(1)
    m = nn.LSTM(3, 4, num_layers=2, dropout=0.5).double().to(device)
    x = np.random.default_rng(8).standard_normal((3, 2, 3))

    def run(xv, grad=False):
        pygpu.manual_seed(123)
        t = pygpu.tensor(xv, device=device)
        if grad:
            t.requires_grad_()
        return t, m(t)[0]

    _, a = run(x)
    _, b = run(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    m.eval()
    _, e = run(x)
    m.train()
    assert not np.allclose(a.detach().numpy(), e.detach().numpy())
    t, o = run(x, grad=True)
    (o ** 2).sum().backward()

    def f():
        with pygpu.no_grad():
            return float((run(x)[1] ** 2).sum().item())

    np.testing.assert_allclose(t.grad.numpy(), _numeric_grad(f, x), rtol=1e-5, atol=1e-6)


# ---- nn.utils.rnn ------------------------------------------------------------------------------

def test_pad_and_pack_sequence_utilities(device):
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal((n, 2)) for n in (3, 5, 2)]
    ps = [pygpu.tensor(a, device=device).requires_grad_() for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    for kw in ({}, {"batch_first": True, "padding_value": -1.0}, {"padding_side": "left"}):
        _close(nn.utils.rnn.pad_sequence(ps, **kw), torch.nn.utils.rnn.pad_sequence(ts, **kw))
    ppk = nn.utils.rnn.pack_sequence(ps, enforce_sorted=False)
    tpk = torch.nn.utils.rnn.pack_sequence(ts, enforce_sorted=False)
    _close(ppk.data, tpk.data)
    np.testing.assert_array_equal(ppk.sorted_indices.numpy(), tpk.sorted_indices.numpy())
    np.testing.assert_array_equal(ppk.unsorted_indices.numpy(), tpk.unsorted_indices.numpy())
    for p, t in zip(nn.utils.rnn.unpack_sequence(ppk), torch.nn.utils.rnn.unpack_sequence(tpk)):
        _close(p, t)
    (ppk.data * ppk.data).sum().backward()
    (tpk.data * tpk.data).sum().backward()
    for p, t in zip(ps, ts):
        _close(p.grad, t.grad)


def test_pytorch_errors():
    m = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 3, got 5"):
        m(pygpu.zeros((2, 1, 5)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 1, 4\), got \[1, 1, 4\]"):
        m(pygpu.zeros((2, 1, 3)), (pygpu.zeros((1, 1, 4)), pygpu.zeros((2, 1, 4))))
    with pytest.raises(RuntimeError, match=r"Expected cell size \(2, 1, 4\), got \[2, 1, 3\]"):
        m(pygpu.zeros((2, 1, 3)), (pygpu.zeros((2, 1, 4)), pygpu.zeros((2, 1, 3))))
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when "
                                           "`enforce_sorted` is True"):
        nn.utils.rnn.pack_padded_sequence(pygpu.zeros((4, 2, 3)), [2, 4])
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        nn.GRU(3, 4)(pygpu.zeros((1, 2, 3, 3)))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 2 expected 3"):
        nn.GRUCell(3, 4)(pygpu.zeros((1, 2)))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="total_length"):
        pk = nn.utils.rnn.pack_padded_sequence(pygpu.zeros((4, 2, 3)), [4, 2])
        nn.utils.rnn.pad_packed_sequence(pk, total_length=3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nn.GRU(3, 4, dropout=0.2)
    assert any("non-zero dropout expects num_layers greater than 1" in str(x.message) for x in w)


def test_autocast_runs_the_input_projections_low(device):
    """Under autocast the one GEMM of every step's input projection (and its backward) runs
    in bfloat16; the recurrence stays float32: close to the float32 layer, not equal."""
    tm, pm = _pair_modules("LSTM", device, dtype=torch.float32, input_size=16, hidden_size=8,
                           num_layers=2)
    x = np.random.default_rng(9).standard_normal((6, 3, 16)).astype(np.float32)
    px = pygpu.tensor(x, device=device).requires_grad_()
    with pygpu.autocast(device_type=pygpu.device(device).type, dtype=pygpu.bfloat16):
        po, _ = pm(px)
    assert po.dtype == pygpu.float32
    (po ** 2).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    to, _ = tm(tx)
    (to ** 2).sum().backward()
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), atol=3e-2)
    assert not np.array_equal(po.detach().numpy(), to.detach().numpy())
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), atol=5e-2)
    assert pm.weight_ih_l0.grad.dtype == pygpu.float32
