# test_fake_quantize.py - quantization-aware training's ops (pygpu/quantization/
# _fake_quantize.py) bit for bit against torch on every device: fake_quantize_per_tensor_affine
# and fake_quantize_per_channel_affine (outputs and straight-through gradients, halfway
# values, every axis, int and float zero points), fused_moving_avg_obs_fake_quant over
# several steps (the running min/max, scale and zero point it updates in place, per tensor
# and per row, affine and symmetric), choose_qparams_optimized, quantized_batch_norm (1d to
# 3d, quint8 and qint8), and the refusals.
import warnings

import numpy as np
import pytest
import torch

import pygpu

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")
R = np.random.default_rng(4307)


def _host(t):
    t = t.detach()
    return (t if str(t.device) == "cpu" else t.cpu()).numpy()


def _inputs(shape, scale):
    x = (R.standard_normal(shape) * 60 * scale).astype(np.float32)
    flat = x.reshape(-1)
    k = min(flat.size, 80)
    flat[:k] = ((np.arange(k) - 40 + 0.5) * scale).astype(np.float32)  # the halfway points
    return x


def _both_with_grad(x, device):
    a = pygpu.tensor(x).to(device)
    a.requires_grad_()
    return a, torch.tensor(x, requires_grad=True)


def _same(got, want, label):
    np.testing.assert_array_equal(_host(got), want.detach().numpy(), err_msg=label)


@pytest.mark.parametrize("qrange", [(0, 255), (-128, 127), (0, 15), (-2 ** 31, 2 ** 31 - 1)])
def test_fake_quantize_per_tensor_bit_exact_with_gradient(device, qrange):
    qmin, qmax = qrange
    for scale, zp in [(0.1, 3), (0.0173, 0), (1 / 3, 1)]:
        zp = min(max(zp, qmin), qmax)
        x = _inputs((7, 41), scale)
        a, b = _both_with_grad(x, device)
        ya = pygpu.fake_quantize_per_tensor_affine(a, scale, zp, qmin, qmax)
        yb = torch.fake_quantize_per_tensor_affine(b, scale, zp, qmin, qmax)
        _same(ya, yb, f"forward scale={scale} zp={zp} {qrange}")
        g = R.standard_normal(x.shape).astype(np.float32)
        ya.backward(pygpu.tensor(g).to(device))
        yb.backward(torch.tensor(g))
        _same(a.grad, b.grad, f"straight-through gradient {qrange}")
    # one-element tensors as scale and zero point (torch's tensor_qparams overload)
    ya = pygpu.fake_quantize_per_tensor_affine(a, pygpu.tensor([0.1]), pygpu.tensor([2]), 0, 255)
    yb = torch.fake_quantize_per_tensor_affine(b, torch.tensor([0.1]), torch.tensor([2]), 0, 255)
    _same(ya, yb, "tensor qparams")


def test_fake_quantize_per_channel_bit_exact_with_gradient(device):
    x = _inputs((3, 4, 5), 0.1)
    for axis in range(3):
        c = x.shape[axis]
        scale = np.linspace(0.05, 0.3, c).astype(np.float32)
        for zp in (np.arange(c).astype(np.int32), np.arange(c).astype(np.float32) + 0.25):
            a, b = _both_with_grad(x, device)
            ya = pygpu.fake_quantize_per_channel_affine(a, pygpu.tensor(scale), pygpu.tensor(zp),
                                                        axis, 0, 15)
            yb = torch.fake_quantize_per_channel_affine(b, torch.tensor(scale),
                                                        torch.tensor(zp), axis, 0, 15)
            _same(ya, yb, f"axis={axis} zero points {zp.dtype}")
            g = R.standard_normal(x.shape).astype(np.float32)
            ya.backward(pygpu.tensor(g).to(device))
            yb.backward(torch.tensor(g))
            _same(a.grad, b.grad, f"gradient axis={axis} {zp.dtype}")


@pytest.mark.parametrize("per_row,symmetric", [(False, False), (False, True), (True, False),
                                               (True, True)])
def test_fused_moving_avg_obs_fake_quant_over_steps(device, per_row, symmetric):
    c = 4
    n = c if per_row else 1
    init = [np.full(n, np.inf, np.float32), np.full(n, -np.inf, np.float32),
            np.ones(n, np.float32), np.zeros(n, np.int32)]
    ours = [pygpu.tensor(v).to(device) for v in init]
    theirs = [torch.tensor(v) for v in init]
    qmin, qmax = (-128, 127) if symmetric else (0, 255)
    for step, (observe, fake) in enumerate([(1, 0), (1, 1), (0, 1), (1, 1), (1, 0), (1, 1)]):
        x = (R.standard_normal((c, 6)) * (step + 1)).astype(np.float32)
        a, b = _both_with_grad(x, device)
        ya = pygpu.fused_moving_avg_obs_fake_quant(
            a, pygpu.tensor([observe]).to(device), pygpu.tensor([fake]).to(device), *ours,
            0.01, qmin, qmax, 0, per_row, symmetric)
        yb = torch.fused_moving_avg_obs_fake_quant(
            b, torch.tensor([observe]), torch.tensor([fake]), *theirs, 0.01, qmin, qmax, 0,
            per_row, symmetric)
        _same(ya, yb, f"step {step}")
        ya.sum().backward()
        yb.sum().backward()
        _same(a.grad, b.grad, f"gradient, step {step}")
        for name, o, t in zip(("running_min", "running_max", "scale", "zero_point"), ours,
                              theirs):
            _same(o, t, f"{name} after step {step}")


def test_choose_qparams_optimized_as_pytorch(device):
    for bit_width in (8, 4, 2):
        for ratio in (0.16, 0.5, 0.9):
            d = (R.standard_normal(300) * 2).astype(np.float32)
            for numel in (300, 120):
                got = pygpu.choose_qparams_optimized(pygpu.tensor(d).to(device), numel, 200,
                                                     ratio, bit_width)
                want = torch.choose_qparams_optimized(torch.tensor(d), numel, 200, ratio,
                                                      bit_width)
                assert len(got) == 2
                for g, w in zip(got, want):
                    assert g.shape == (1,) and g.dtype == pygpu.float32
                    _same(g, w, f"bit_width={bit_width} ratio={ratio} numel={numel}")
    with pytest.raises(RuntimeError, match="numel is out of the bound of input tensor"):
        pygpu.choose_qparams_optimized(pygpu.tensor(d), 301, 200, 0.16, 8)
    with pytest.raises(RuntimeError, match="numel is out of the bound of input tensor"):
        torch.choose_qparams_optimized(torch.tensor(d), 301, 200, 0.16, 8)


@pytest.mark.parametrize("qdtype", ["quint8", "qint8"])
def test_quantized_batch_norm_bit_exact(device, qdtype):
    for shape in [(2, 3, 4, 5), (2, 20, 3), (2, 40, 2, 2, 2), (3, 5), (1, 37, 2, 3)]:
        x = (R.standard_normal(shape) * 2).astype(np.float32)
        c = shape[1]
        w, b, m, v = (R.standard_normal(c).astype(np.float32) for _ in range(4))
        v = np.abs(v) + 0.1
        zp = 3 if qdtype == "quint8" else -3
        qa = pygpu.quantize_per_tensor(pygpu.tensor(x).to(device), 0.05, zp,
                                       getattr(pygpu, qdtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            qb = torch.quantize_per_tensor(torch.tensor(x), 0.05, zp, getattr(torch, qdtype))
        args = [pygpu.tensor(t).to(device) for t in (w, b, m, v)]
        ra = pygpu.quantized_batch_norm(qa, *args, 1e-5, 0.07, 5)
        rb = torch.quantized_batch_norm(qb, *(torch.tensor(t) for t in (w, b, m, v)), 1e-5,
                                        0.07, 5)
        assert ra.device == qa.device
        assert (ra.q_scale(), ra.q_zero_point(), str(ra.dtype)) == (
            rb.q_scale(), rb.q_zero_point(), str(rb.dtype))
        np.testing.assert_array_equal(_host(ra.int_repr()), rb.int_repr().numpy(),
                                      err_msg=f"{qdtype} {shape}")
        for label, fn in (("pygpu", lambda: pygpu.quantized_batch_norm(
                qa, None, args[1], args[2], args[3], 1e-5, 0.07, 5)), ("torch", lambda:
                torch.quantized_batch_norm(qb, None, torch.tensor(b), torch.tensor(m),
                                           torch.tensor(v), 1e-5, 0.07, 5))):
            with pytest.raises(RuntimeError, match="Weight must be provided"):
                fn()


def test_refusals(device):
    x = pygpu.tensor([1.0, 2.0]).to(device)
    with pytest.raises(RuntimeError, match="`zero_point` must be between `quant_min` and"):
        pygpu.fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255)
    with pytest.raises(RuntimeError, match="`zero_point` must be between `quant_min` and"):
        torch.fake_quantize_per_tensor_affine(torch.tensor([1.0, 2.0]), 0.1, 300, 0, 255)
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or equal"):
        pygpu.fake_quantize_per_tensor_affine(x, 0.1, 0, 10, 5)
    with pytest.raises(NotImplementedError, match="aten::quantized_batch_norm"):
        pygpu.quantized_batch_norm(x.reshape(1, 2), None, None, x, x, 1e-5, 0.1, 0)
