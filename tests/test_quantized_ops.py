# test_quantized_ops.py - the quantized pools and recurrent cells at torch's top level
# (pygpu/quantization/_quantized_ops.py) against torch on every device: quantized_max_pool1d/
# 2d/3d bit for bit (levels, scale, zero point; batched and unbatched, stride, padding,
# dilation, ceil_mode), and quantized_lstm/gru/rnn_tanh/rnn_relu_cell over fbgemm's packed
# int8 weights (the linear maps differ from torch's by float32 rounding only:
# tests/test_fbgemm.py; the cells' outputs are compared to 1e-5).
import warnings

import numpy as np
import pytest
import torch

import pygpu

R = np.random.default_rng(4371)
POOLS = [(1, (2, 3, 7), ([2],)), (2, (2, 3, 5, 6), ([2, 2],)),
         (2, (3, 5, 6), ([3, 3], [2, 2], [1, 1], [1, 1], True)), (3, (1, 2, 4, 5, 6), ([2, 2, 2],)),
         (1, (3, 9), (3, 2, 1, 2, True)), (3, (1, 2, 4, 5, 5), ([3, 2, 2], [1, 2, 1], [1, 0, 1]))]


def _host(t):
    t = t.detach()
    return (t if str(t.device) == "cpu" else t.cpu()).numpy()


def _torch(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


@pytest.mark.parametrize("case", range(len(POOLS)))
def test_quantized_max_pool_bit_exact(device, case):
    n, shape, args = POOLS[case]
    x = R.standard_normal(shape).astype(np.float32)
    for qdtype, zp in (("quint8", 3), ("qint8", -4)):
        qa = pygpu.quantize_per_tensor(pygpu.tensor(x).to(device), 0.1, zp, getattr(pygpu, qdtype))
        qb = _torch(torch.quantize_per_tensor, torch.tensor(x), 0.1, zp, getattr(torch, qdtype))
        got = getattr(pygpu, f"quantized_max_pool{n}d")(qa, *args)
        want = getattr(torch, f"quantized_max_pool{n}d")(qb, *args)
        assert tuple(got.shape) == tuple(want.shape) and got.device == qa.device
        assert (str(got.dtype), got.q_scale(), got.q_zero_point()) == (
            str(want.dtype), want.q_scale(), want.q_zero_point())
        np.testing.assert_array_equal(_host(got.int_repr()), want.int_repr().numpy())


def test_quantized_max_pool_refusals():
    for n, shape, words in [(1, (9,), "Expected 2D or 3D input tensor"),
                            (2, (2, 2, 3, 4, 5), "rank 3 or 4"), (3, (2, 4, 5, 5), "rank 5")]:
        x = np.zeros(shape, np.float32)
        qa = pygpu.quantize_per_tensor(pygpu.tensor(x), 0.1, 3, pygpu.quint8)
        qb = _torch(torch.quantize_per_tensor, torch.tensor(x), 0.1, 3, torch.quint8)
        for lib, q in ((pygpu, qa), (torch, qb)):
            with pytest.raises(RuntimeError, match=words):
                getattr(lib, f"quantized_max_pool{n}d")(q, [2] * n)
    with pytest.raises(NotImplementedError, match="aten::quantized_max_pool2d' with arguments "
                                                  "from the 'CPU' backend"):
        pygpu.quantized_max_pool2d(pygpu.randn(1, 2, 4, 4), [2, 2])
    with pytest.raises(NotImplementedError, match="aten::quantized_max_pool2d' with arguments "
                                                  "from the 'CPU' backend"):
        torch.quantized_max_pool2d(torch.randn(1, 2, 4, 4), [2, 2])


def _cell_params(lib, wih, whh, bih, bhh, device=None):
    def t(a):
        v = lib.tensor(a)
        return v.to(device) if device else v
    qi = lib.fbgemm_linear_quantize_weight(t(wih))
    qh = lib.fbgemm_linear_quantize_weight(t(whh))
    return (t(wih), t(whh), t(bih), t(bhh), lib.fbgemm_pack_quantized_matrix(qi[0]),
            lib.fbgemm_pack_quantized_matrix(qh[0]), qi[1], qh[1], qi[2], qh[2], qi[3], qh[3])


@pytest.mark.parametrize("cell,gates", [("lstm", 4), ("gru", 3), ("rnn_tanh", 1),
                                        ("rnn_relu", 1)])
def test_quantized_cells_as_pytorch(device, cell, gates):
    batch, inp, hid = 3, 5, 4
    x = R.standard_normal((batch, inp)).astype(np.float32)
    h = R.standard_normal((batch, hid)).astype(np.float32)
    c = R.standard_normal((batch, hid)).astype(np.float32)
    wih = (R.standard_normal((gates * hid, inp)) * 0.3 + 0.02).astype(np.float32)
    whh = (R.standard_normal((gates * hid, hid)) * 0.3 - 0.05).astype(np.float32)
    bih, bhh = (R.standard_normal(gates * hid).astype(np.float32) for _ in range(2))
    ours = _cell_params(pygpu, wih, whh, bih, bhh, device)
    theirs = _torch(_cell_params, torch, wih, whh, bih, bhh)
    px, ph, pc = (pygpu.tensor(a).to(device) for a in (x, h, c))
    hx_p = [ph, pc] if cell == "lstm" else ph
    hx_t = [torch.tensor(h), torch.tensor(c)] if cell == "lstm" else torch.tensor(h)
    got = getattr(pygpu, f"quantized_{cell}_cell")(px, hx_p, *ours)
    want = _torch(getattr(torch, f"quantized_{cell}_cell"), torch.tensor(x), hx_t, *theirs)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.device == px.device
        np.testing.assert_allclose(_host(g), w.numpy(), rtol=1e-5, atol=1e-5)
