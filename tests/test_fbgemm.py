# test_fbgemm.py - torch.fbgemm_* on pygpu's kernels (pygpu/quantization/_fbgemm.py) against
# torch's fbgemm on every device. The weight's quantization (int8 levels, col_offsets, scale,
# zero point) is compared exactly. The int8 and fp16 linear results are compared with two
# tolerances, both stated. Against torch itself: within 8 float32 ulps of the output's largest
# magnitude (the same integer sums, with the epilogue's terms in another order). Against the
# float product x @ w^T + b: never further off than torch's own fbgemm result is, times 1.001.
import warnings

import numpy as np
import pytest
import torch

import pygpu

R = np.random.default_rng(4343)
SHAPES = [(3, 8, 6), (17, 64, 33), (64, 256, 128), (5, 3, 1), (2, 1000, 20)]


def _host(t):
    t = t.detach()
    return (t if str(t.device) == "cpu" else t.cpu()).numpy()


def _case(m, k, n, shift):
    w = (R.standard_normal((n, k)) * 0.2 + shift).astype(np.float32)
    x = R.standard_normal((m, k)).astype(np.float32)
    b = R.standard_normal(n).astype(np.float32)
    return x, w, b


def _torch(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
def test_int8_weight_linear_as_fbgemm(device, shape):
    for shift in (0.0, 0.05, -0.3):  # zero points 0-ish, small, large
        x, w, b = _case(*shape, shift)
        tq = _torch(torch.fbgemm_linear_quantize_weight, torch.tensor(w))
        pq = pygpu.fbgemm_linear_quantize_weight(pygpu.tensor(w).to(device))
        np.testing.assert_array_equal(_host(pq[0]), tq[0].numpy())
        np.testing.assert_array_equal(_host(pq[1]), tq[1].numpy())
        assert (pq[0].dtype, pq[1].dtype) == (pygpu.int8, pygpu.int32)
        assert (pq[2], pq[3]) == (tq[2], tq[3])
        tp = _torch(torch.fbgemm_pack_quantized_matrix, tq[0])
        pp = pygpu.fbgemm_pack_quantized_matrix(pq[0])
        assert pp.device == pygpu.device(device)
        args = (pq[1], pq[2], pq[3])
        xp, wp, bp = (pygpu.tensor(a).to(device) for a in (x, w, b))
        want = _torch(torch.fbgemm_linear_int8_weight, torch.tensor(x), torch.tensor(w), tp,
                      tq[1], tq[2], tq[3], torch.tensor(b)).numpy()
        for fn in (pygpu.fbgemm_linear_int8_weight,
                   pygpu.fbgemm_linear_int8_weight_fp32_activation):
            got = _host(fn(xp, wp, pp, *args, bp))
            assert got.shape == want.shape and got.dtype == np.float32
            ulp = np.spacing(np.float32(np.abs(want).max()))
            assert np.abs(got - want).max() <= 8 * ulp, (shape, shift)
            ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
            assert np.abs(got - ref).max() <= np.abs(want - ref).max() * 1.001 + 8 * ulp
        # leading batch dimensions, as torch's
        x3 = pygpu.tensor(np.stack([x, x])).to(device)
        got3 = _host(pygpu.fbgemm_linear_int8_weight(x3, wp, pp, *args, bp))
        assert got3.shape == (2, *want.shape)


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
def test_fp16_weight_linear_as_fbgemm(device, shape):
    x, w, b = _case(*shape, 0.0)
    tp = _torch(torch.fbgemm_pack_gemm_matrix_fp16, torch.tensor(w))
    pp = pygpu.fbgemm_pack_gemm_matrix_fp16(pygpu.tensor(w).to(device))
    assert pp.dtype == pygpu.float16 and tuple(pp.shape) == w.shape
    want = _torch(torch.fbgemm_linear_fp16_weight, torch.tensor(x), tp, torch.tensor(b)).numpy()
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
    xp, bp = pygpu.tensor(x).to(device), pygpu.tensor(b).to(device)
    for fn in (pygpu.fbgemm_linear_fp16_weight, pygpu.fbgemm_linear_fp16_weight_fp32_activation):
        got = _host(fn(xp, pp, bp))
        ulp = np.spacing(np.float32(np.abs(want).max()))
        assert np.abs(got - want).max() <= 8 * ulp * max(1, shape[1] // 64)
        assert np.abs(got - ref).max() <= np.abs(want - ref).max() * 1.001 + 8 * ulp


def test_refusals():
    w = pygpu.randn(4, 8)
    with pytest.raises(RuntimeError, match="expected a 2-D int8 weight"):
        pygpu.fbgemm_pack_quantized_matrix(w)
    q = pygpu.fbgemm_linear_quantize_weight(w)
    with pytest.raises(RuntimeError, match="do not match the weight's shape"):
        pygpu.fbgemm_pack_quantized_matrix(q[0], 9, 4)
    packed = pygpu.fbgemm_pack_quantized_matrix(q[0], 8, 4)
    with pytest.raises(RuntimeError, match="not a weight packed by"):
        pygpu.fbgemm_linear_int8_weight(pygpu.randn(2, 12), w, packed, q[1], q[2], q[3],
                                        pygpu.zeros(4))
    with pytest.raises(RuntimeError, match="must be the result of fbgemm_pack_gemm_matrix_fp16"):
        pygpu.fbgemm_linear_fp16_weight(pygpu.randn(2, 8), w, pygpu.zeros(4))
