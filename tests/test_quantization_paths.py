# test_quantization_paths.py - every path of the int8 linear layer (pygpu._C._qlinear) on each
# device besides the CPU (compared_device: sim, cuda) against the CPU's: float32 (dynamic or
# static) and u8 inputs, 7-bit and 8-bit activations, every activation, with and without a
# bias, float32 and u8 outputs, at shapes off the kernels' vector widths (1, 3, 17: not
# multiples of 4 or 16), and chains of three layers. On cuda (the emulated device in CI) these
# are kernels/quant.cu's packed kernels and cuda_quant.c's choices: the u8 input used as the
# GEMM's operand as it is, or copied; a static layer's u8 output requantized in cuBLASLt's
# epilogue (the requantizing GEMM) or by the exact epilogue kernel.
# Every output of the exact path equals the CPU's bit for bit (tanh and sigmoid: each
# device's own tanhf/expf). The requantizing GEMM (cuda, pygpu.cuda.set_int8_requant_in_gemm,
# on by default) rounds in cuBLASLt's order: its levels are within one of the CPU's, and
# nearly all equal; layers it cannot take stay exact with it on.
import numpy as np
import pytest

import pygpu
from pygpu import _C
from pygpu import quantization as Q
from pygpu import cuda as _cuda

ACTS = {None: 0, **{name: code for name, code, _ in _C._act_table()}}
SHAPES = [(1, 1, 1), (3, 17, 3), (17, 3, 17), (4, 16, 8), (5, 20, 12), (2, 33, 20)]


def _host(t):
    return (t if str(t.device) == "cpu" else t.cpu()).numpy()


def _u8(a, device):
    t = _C.from_numpy(np.ascontiguousarray(a, np.uint8).view(np.bool_))
    return t if device == "cpu" else t.to(device)


def _f32(a, device):
    t = _C.from_numpy(np.ascontiguousarray(a, np.float32))
    return t if device == "cpu" else t.to(device)


class Layer:
    """A random int8 layer's operands on the host, handed to any device."""

    def __init__(self, k, n, bias, seed):
        rng = np.random.default_rng(seed)
        self.k, self.n = k, n
        self.w = rng.integers(-127, 128, size=(n, k)).astype(np.int8)
        self.ws = (rng.random(n).astype(np.float32) + 0.5) * np.float32(0.01)
        self.b = rng.standard_normal(n).astype(np.float32) if bias else None

    def run(self, device, x, act, a_dynamic, a_scale, a_zp, a_max, out_u8, c_scale, c_zp, c_max):
        packed = Q.QTensor.from_int8(self.w).to(device).data
        b = None if self.b is None else _f32(self.b, device)
        return _C._qlinear(x, packed, _f32(self.ws, device), b, ACTS[act], a_dynamic, a_scale,
                           a_zp, a_max, out_u8, c_scale, c_zp, c_max)


# cuda's int8_requant_in_gemm option, a device-specific parameter (tests/conftest.py): the
# cuda tests that read `requant` run with it off and on; cpu and sim have only the exact
# path, so there they run once, exact.
DEVICE_PARAMS = {"requant": {"cuda": [("exact", False), ("requant_in_gemm", True)], None: False}}


@pytest.fixture
def requant(request, compared_device):
    """The cuda option int8_requant_in_gemm for the test (DEVICE_PARAMS), set back after it."""
    if not compared_device.startswith("cuda"):
        yield request.param
        return
    old = _cuda.get_int8_requant_in_gemm()
    _cuda.set_int8_requant_in_gemm(request.param)
    try:
        yield request.param
    finally:
        _cuda.set_int8_requant_in_gemm(old)


def _fused(act, c_zp, c_max, n):
    """Whether cuda_quant.c requantizes a static u8-out layer in the GEMM (its conditions)."""
    return c_max == 127 and n % 4 == 0 and (act is None or (act == "relu" and c_zp == 0))


def _same_levels(want, got, within_one):
    w, g = want.astype(np.int32), got.astype(np.int32)
    if not within_one:
        assert np.array_equal(w, g), np.argwhere(w != g)[:5]
        return
    assert np.abs(w - g).max(initial=0) <= 1, np.abs(w - g).max()
    assert (w != g).mean() <= 0.02, (w != g).mean()  # only values at half-way points move


def _same_float(want, got, act):
    if act in ("tanh", "sigmoid"):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    else:
        assert np.array_equal(want.view(np.int32), got.view(np.int32)), np.abs(want - got).max()


def _input(m, k, seed):
    x = np.random.default_rng(seed).standard_normal((m, k)).astype(np.float32) * 2
    if m >= 3 and k >= 2:
        x[1] = 0.0
        x[2, 1] = np.nan
    return x


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("a_max", [127, 255])
def test_dynamic_float_input(compared_device, shape, act, bias, a_max):
    m, k, n = shape
    lay = Layer(k, n, bias, seed=m * 7 + k + n)
    x = _input(m, k, seed=k)
    args = (act, True, 1.0, 0, a_max, False, 1.0, 0, 255)
    want = _host(lay.run("cpu", _f32(x, "cpu"), *args))
    got = _host(lay.run(compared_device, _f32(x, compared_device), *args))
    _same_float(want, got, act)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("u8_in", [False, True], ids=["f32_in", "u8_in"])
@pytest.mark.parametrize("out_u8", [False, True], ids=["f32_out", "u8_out"])
def test_static_layer(compared_device, requant, shape, act, bias, u8_in, out_u8):
    m, k, n = shape
    lay = Layer(k, n, bias, seed=m + 3 * k + n)
    rng = np.random.default_rng(n)
    x = rng.integers(0, 128, size=(m, k)) if u8_in else _input(m, k, seed=n)
    mk = _u8 if u8_in else _f32
    # output zero point 0 with relu (as the observers give it), 40 otherwise
    c_zp = 0 if act == "relu" else 40
    args = (act, False, 0.03, 51, 127, out_u8, 0.02, c_zp, 127)
    want = lay.run("cpu", mk(x, "cpu"), *args)
    got = lay.run(compared_device, mk(x, compared_device), *args)
    if out_u8:
        w8, g8 = _host(want).view(np.uint8), _host(got).view(np.uint8)
        assert w8.max() <= 127 and g8.max() <= 127
        _same_levels(w8, g8, requant and _fused(act, c_zp, 127, n))
    else:
        _same_float(_host(want), _host(got), act)


@pytest.mark.parametrize("a_max", [127, 255])
@pytest.mark.parametrize("c_zp", [0, 9])
@pytest.mark.parametrize("act", list(ACTS))
def test_requantized_levels_over_a_wide_layer(compared_device, requant, act, c_zp, a_max):
    """Many levels, every one of 0..127 reached: the requantizing GEMM's within one of the CPU's
    (and nearly all equal), the exact path's the same; the clamps at 0 and 127 both hit. An
    8-bit input (a_max 255) is shifted by 128 into s8 first, the fold undoing it."""
    m, k, n = 64, 96, 128
    lay = Layer(k, n, True, seed=11)
    x = np.random.default_rng(2).integers(0, a_max + 1, size=(m, k))
    s_in = 0.05 * 127 / a_max
    args = (act, False, s_in, 60 * a_max // 127, a_max, True, 0.15, c_zp, 127)
    w8 = _host(lay.run("cpu", _u8(x, "cpu"), *args)).view(np.uint8)
    g8 = _host(lay.run(compared_device, _u8(x, compared_device), *args)).view(np.uint8)
    if act in (None, "relu"):
        lowest = c_zp if act == "relu" else 0
        assert w8.min() == lowest and w8.max() == 127 and len(np.unique(w8)) > 100
    _same_levels(w8, g8, requant and _fused(act, c_zp, 127, n))


@pytest.mark.parametrize("widths", [(17, 20, 3, 5), (16, 32, 12, 8), (3, 1, 17, 4),
                                    (24, 64, 48, 8)],
                         ids=lambda w: "-".join(map(str, w)))
@pytest.mark.parametrize("act", [None, "relu", "tanh"])
def test_chain_of_three_static_layers(compared_device, requant, widths, act):
    """u8 between the layers, float32 out of the last: the device's chain is the CPU's (each
    hidden layer's levels within one with the requantizing GEMM; then the next layer is fed
    the CPU's levels, so each layer is held on its own)."""
    m = 9
    layers = [Layer(a, b, True, seed=a * b) for a, b in zip(widths, widths[1:])]
    x = _input(m, widths[0], seed=1)
    zp = 0 if act == "relu" else 30
    h_cpu, h_dev = _f32(x, "cpu"), _f32(x, compared_device)
    scale_in, zp_in = 0.05, 64
    for i, lay in enumerate(layers):
        last = i == len(layers) - 1
        args = (None if last else act, False, scale_in, zp_in, 127, not last, 0.04, zp, 127)
        want = lay.run("cpu", h_cpu, *args)
        got = lay.run(compared_device, h_dev, *args)
        if last:
            _same_float(_host(want), _host(got), None)
        else:
            w8, g8 = _host(want).view(np.uint8), _host(got).view(np.uint8)
            _same_levels(w8, g8, requant and _fused(act, zp, 127, lay.n))
            h_cpu, h_dev = want, _u8(w8, compared_device)
        scale_in, zp_in = 0.04, zp


@pytest.mark.skipif(not pygpu.cuda.is_available(), reason="cuda unavailable")
def test_the_option_is_kept():
    assert _cuda.get_int8_requant_in_gemm() is True  # on by default
    _cuda.set_int8_requant_in_gemm(False)
    try:
        assert _cuda.get_int8_requant_in_gemm() is False
    finally:
        _cuda.set_int8_requant_in_gemm(True)


@pytest.mark.parametrize("shape", [(64, 256, 128), (4, 1024, 256)], ids=["rows", "panels"])
@pytest.mark.parametrize("out_u8", [False, True], ids=["f32_out", "u8_out"])
def test_the_cpu_split_over_two_threads_gives_one_threads_bits(shape, out_u8):
    """A layer large enough for the CPU's pool (cpu_gemm_int8.c: M*N*K >= 2^20) is cut by rows
    (16 rows or more for 2 threads) or by 64-column panels (fewer rows), each piece's output
    pointer moved to its place: the result equals one thread's bit for bit."""
    m, k, n = shape
    lay = Layer(k, n, True, seed=m + k)
    x = _input(m, k, seed=m)
    args = ("relu", False, 0.03, 51, 127, out_u8, 0.02, 0, 127)
    old = pygpu.get_num_threads()
    try:
        pygpu.set_num_threads(1)
        one = _host(lay.run("cpu", _f32(x, "cpu"), *args))
        pygpu.set_num_threads(2)
        two = _host(lay.run("cpu", _f32(x, "cpu"), *args))
    finally:
        pygpu.set_num_threads(old)
    assert np.array_equal(one.view(np.uint8), two.view(np.uint8))
    if out_u8:
        assert one.view(np.uint8).max() > 0  # not all zero: the pieces wrote their rows
