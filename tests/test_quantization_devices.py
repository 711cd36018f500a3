# test_quantization_devices.py - the int8 linear layer on every device gives the CPU's bits.
#
# The int8 GEMM's sums are exact int32 on every device (cpu/sim: the CPU kernels; cuda:
# cuBLASLt's IMMA GEMM with any u8 -> s8 shift undone in the epilogue, csrc/backends/cuda/kernels/quant.cu), and
# the quantize and epilogue steps round like the CPU's step for step, so the outputs are the
# CPU's bit for bit: float32 out with no activation or ReLU, and u8 out (static chains).
# tanh and sigmoid go through each device's own tanhf/expf: a few ulp apart.
#   - dynamic and static layers over the GEMM contract's edge shapes (M = 1, K not a multiple
#     of 4, N not a multiple of 16 or of 64), rows with NaN, inf and all zeros;
#   - a static chain (u8 between the layers) on the device equals the chain on cpu;
#   - the packed weight follows its device (cuBLASLt's rows on cuda, the CPU's panels
#     elsewhere: pygpu/quantization/_pack.py), round-trips, and the move counts its bytes.
# On cuda these hold the exact path: the requantizing GEMM (a static layer's u8 output
# requantized in cuBLASLt's epilogue, within one level of the CPU's) is turned off here and
# held by tests/test_quantization_paths.py.
# Run on the emulated cuda device by .ci/run (tests/cuda_emu/green.txt).
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu import quantization as Q
from pygpu.nn import quantized as nnq
from pygpu.quantization import _pack

SHAPES = [(1, 1, 1), (5, 7, 17), (33, 64, 16), (3, 130, 129), (70, 3, 65)]


@pytest.fixture(autouse=True)
def _exact_path(device):
    if not device.startswith("cuda"):
        yield
        return
    old = pygpu.cuda.get_int8_requant_in_gemm()
    pygpu.cuda.set_int8_requant_in_gemm(False)
    try:
        yield
    finally:
        pygpu.cuda.set_int8_requant_in_gemm(old)


def _host(t):
    return (t if str(t.device) == "cpu" else t.cpu()).numpy()


def _input(m, k, seed):
    x = np.random.default_rng(seed).standard_normal((m, k)).astype(np.float32) * 3
    if m >= 3:
        x[1] = 0.0  # an all-zero row: scale 1, zero point 0
        x[2, 0] = np.nan  # NaN quantizes to level 0, the range skips it
    if m >= 5:
        x[4, -1] = np.inf  # an infinite range: scale 1, zero point 0
    return x


def _same(a, b, act):
    if act in ("tanh", "sigmoid"):  # each device's own tanhf/expf
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    else:
        assert np.array_equal(a.view(np.int32), b.view(np.int32)), np.abs(a - b).max()


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("act", [None, "relu", "tanh", "sigmoid"])
def test_dynamic_layer_gives_the_cpu_bits(device, shape, act):
    m, k, n = shape
    pygpu.manual_seed(k * 31 + n)
    lin = nn.Linear(k, n)
    q = nnq.dynamic.Linear.from_float(lin, activation=act)
    x = _input(m, k, seed=m + k + n)
    want = _host(q(pygpu.tensor(x)))
    got = _host(q.to(device)(pygpu.tensor(x, device=device)))
    _same(want, got, act)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("emit_int8", [False, True])
def test_static_layer_gives_the_cpu_bits(device, shape, emit_int8):
    m, k, n = shape
    pygpu.manual_seed(k + n)
    lin = nn.Linear(k, n)
    q = nnq.Linear.from_observed(lin, (0.021, 61), (0.037, 3), activation="relu",
                                 emit_int8=emit_int8)
    x = _input(m, k, seed=2 * m + k)
    want = q(pygpu.tensor(x))
    got = q.to(device)(pygpu.tensor(x, device=device))
    if emit_int8:
        assert isinstance(got, Q.QuantizedActivation) and str(got.device).startswith(device)
        assert np.array_equal(want.int_repr(), got.int_repr())
        # and the u8 input path: the next layer fed the device's u8
        nxt = nnq.Linear.from_observed(nn.Linear(n, 4), (0.037, 3), (1.0, 0))
        _same(_host(nxt(want)), _host(nxt.to(device)(got)), None)
    else:
        _same(_host(want), _host(got), None)


def test_static_chain_on_the_device_is_the_cpu_chain(device):
    pygpu.manual_seed(3)
    seq = nn.Sequential(nn.Linear(20, 36), nn.ReLU(), nn.Linear(36, 30), nn.ReLU(),
                        nn.Linear(30, 5))
    p = Q.prepare(seq)
    for _ in range(3):
        p(pygpu.randn(32, 20))
    q = Q.convert(p)
    x = np.random.default_rng(5).standard_normal((17, 20)).astype(np.float32)
    want_h, want = q[0](pygpu.tensor(x)), _host(q(pygpu.tensor(x)))
    qd = q.to(device)
    xd = pygpu.tensor(x, device=device)
    h = qd[0](xd)
    assert isinstance(h, Q.QuantizedActivation)
    assert np.array_equal(h.int_repr(), want_h.int_repr())
    _same(want, _host(qd(xd)), None)


def test_packed_weight_follows_the_device(device):
    rng = np.random.default_rng(1)
    w = rng.integers(-127, 128, size=(70, 37)).astype(np.int8)
    qt = Q.QTensor.from_int8(w)
    on = qt.to(device)
    assert on.nbytes == qt.nbytes == _pack.packed_bytes(70, 37)
    assert np.array_equal(on.int_repr(), w)
    raw = _host(on.data).view(np.uint8)
    want = _pack.pack_weight_rows(w) if device.startswith("cuda") else _pack.pack_weight(w)
    assert np.array_equal(raw, want)
    back = on.to("cpu")
    assert np.array_equal(_host(back.data).view(np.uint8), _pack.pack_weight(w))
    assert np.array_equal(back.int_repr(), w)
    # the rows layout: W's rows, zero-padded, then the same column sums
    rows = _pack.pack_weight_rows(w)
    assert rows.size == _pack.packed_bytes(70, 37)
    np_, k4 = _pack.padded(70, 37)
    mat = rows[:np_ * k4 * 4].view(np.int8).reshape(np_, k4 * 4)
    assert np.array_equal(mat[:70, :37], w) and not mat[70:].any() and not mat[:, 37:].any()
    colsums = rows[np_ * k4 * 4:].view("<i4")
    assert np.array_equal(colsums, _pack.pack_weight(w)[np_ * k4 * 4:].view("<i4"))
    assert np.array_equal(_pack.unpack_weight_rows(rows, 70, 37), w)


def test_moving_a_quantized_model_counts_the_packed_bytes(compared_device):
    """Every device besides the host's own memory (compared_device: a move to cpu crosses no
    link)."""
    device = compared_device
    m = nn.MLP([64, 96, 10])
    q = Q.quantize_dynamic(m)
    want = sum(_pack.packed_bytes(lin.out_features, lin.in_features) + 4 * lin.out_features * 2
               for lin in (q.layers[0], q.layers[1]))  # packed weight, scales, bias
    with pygpu.track() as t:
        q.to(device)
    assert t.stats.h2d_bytes == want
