"""Quantization-aware training's ops, PyTorch's numerics: fake quantization (per tensor and
per channel, with the straight-through gradient), the fused moving-average observer with
fake quantization, the greedy min/max search of choose_qparams_optimized and the quantized
batch norm.

fake_quantize_*(x) = (clamp(zero_point + nearbyint(x * (1.0f / scale)), qmin, qmax) -
zero_point) * scale, as ATen's fake_quantize_tensor_cachemask kernels; the gradient is the
incoming one where the unclamped level lies in [qmin, qmax] and 0 elsewhere (the mask torch
keeps). They run as pygpu ops on the input's device. The observer's running min/max and
the qparams are a handful of numbers: they are read to the host and updated there in
float32, element by element, as ATen's loops do. choose_qparams_optimized is ATen's
sequential search (a float32 sum per step, in order): it runs on the host, as torch's runs
on the CPU only."""
import numpy as np

from .. import _C
from ..autograd import Function
from ._quantized import QuantizedTensor, _channel_shape, choose_qparams, not_implemented
from .._dtype import per_tensor_affine

Tensor = _C.Tensor
f32 = np.float32


def _host_numpy(t):
    return (t if t.device.type == "cpu" else t.cpu()).detach().numpy()


def _check_range(quant_min, quant_max, who):
    if quant_min > quant_max:
        raise RuntimeError(f"`quant_min` should be less than or equal to `quant_max`. "
                           f"({who})")


def _fake(x, inv, zp, scale, qmin, qmax, float_zp=False):
    """(output, mask): ATen's fake quantization of x with inv = 1.0f / scale (numbers or
    tensors broadcast against x), in x's dtype."""
    if float_zp:  # a float zero point is added before rounding (the per-channel kernel's)
        level = (x * inv + zp).round()
    else:
        level = (x * inv).round() + zp
    mask = (level >= qmin) & (level <= qmax)
    out = ((level.clamp(qmin, qmax) - zp) * scale).to(x.dtype)
    return out, mask


class _FakeQuantize(Function):
    """The straight-through estimator: forward the fake-quantized x, backward the gradient
    where x's level was inside [qmin, qmax]."""

    @staticmethod
    def forward(ctx, x, inv, zp, scale, qmin, qmax, float_zp):
        out, mask = _fake(x, inv, zp, scale, qmin, qmax, float_zp)
        ctx.save_for_backward(mask)
        return out

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g * mask.to(g.dtype), None, None, None, None, None, None


def _float_tensor(x, who):
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{who}: input must be a floating point tensor, got {x.dtype}")
    return x


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """torch.fake_quantize_per_tensor_affine (scale and zero_point numbers or one-element
    tensors); differentiable in input (the straight-through estimator)."""
    x = _float_tensor(input, "fake_quantize_per_tensor_affine")
    _check_range(quant_min, quant_max, "fake_quantize_per_tensor_affine")
    sc = float(f32(scale.item() if isinstance(scale, Tensor) else scale))
    zp = int(zero_point.item() if isinstance(zero_point, Tensor) else zero_point)
    if not quant_min <= zp <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    inv = float(f32(1.0) / f32(sc))
    return _FakeQuantize.apply(x, inv, zp, sc, int(quant_min), int(quant_max), False)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """torch.fake_quantize_per_channel_affine: scale (C,) float32 and zero_point (C,) int32
    (or float: added before rounding) along `axis`; differentiable in input."""
    x = _float_tensor(input, "fake_quantize_per_channel_affine")
    _check_range(quant_min, quant_max, "fake_quantize_per_channel_affine")
    if not 0 <= axis < x.ndim:
        raise RuntimeError(f"`axis` must be between 0 and number of dimensions of input "
                           f"(fake_quantize_per_channel_affine: axis {axis}, {x.ndim} dims)")
    c = x.shape[axis]
    if scale.dim() != 1 or scale.numel() != c:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input "
                           "tensor")
    if zero_point.dim() != 1 or zero_point.numel() != c:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input "
                           "tensor")
    shape = _channel_shape(x, axis)
    sc = scale.to(x.device).float().reshape(*shape)
    inv = 1.0 / sc
    float_zp = zero_point.dtype.is_floating_point
    zp = zero_point.to(x.device)
    if not float_zp:
        lo, hi = int(zp.min().item()), int(zp.max().item())
        if lo < quant_min or hi > quant_max:
            raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    zp = (zp.float() if float_zp else zp.to("int64")).reshape(*shape)
    if x.dtype.name == "float64":
        sc, inv = sc.double(), inv.double()
    return _FakeQuantize.apply(x, inv, zp, sc, int(quant_min), int(quant_max), float_zp)


def _moving_average(running, current, averaging_const):
    """ATen's calculate_moving_average: float32, element by element; an infinite running
    value (never observed) takes the current one."""
    c = f32(averaging_const)
    with np.errstate(invalid="ignore"):  # inf - inf where never observed: not taken
        return np.where(np.isinf(running), current,
                        running + c * (current - running)).astype(f32)


def _write(dst, values):
    """Copy host values into a (small) tensor in place, on its device."""
    src = _C.from_numpy(np.ascontiguousarray(values, dtype=dst.dtype.numpy))
    dst.copy_(src.reshape(*dst.shape) if dst.device.type == "cpu" else
              src.reshape(*dst.shape).to(dst.device))


def fused_moving_avg_obs_fake_quant(input, observer_on, fake_quant_on, running_min,
                                    running_max, scale, zero_point, averaging_const,
                                    quant_min, quant_max, ch_axis, per_row_fake_quant=False,
                                    symmetric_quant=False):
    """torch.fused_moving_avg_obs_fake_quant: when observer_on, update running_min/max (in
    place) by a moving average of input's min/max (per row along ch_axis when
    per_row_fake_quant); when fake_quant_on, compute scale and zero_point from them (in
    place, ATen's ChooseQuantizationParams; symmetric_quant preserves sparsity) and return
    input fake-quantized with them (differentiable), else input's copy."""
    x = _float_tensor(input, "fused_moving_avg_obs_fake_quant")
    if x.numel() == 0:
        return x.clone()
    if ch_axis >= x.ndim:
        raise RuntimeError("Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < "
                           "self.dim()")
    observe = int(observer_on.item()) if isinstance(observer_on, Tensor) else int(observer_on)
    fake = int(fake_quant_on.item()) if isinstance(fake_quant_on, Tensor) else int(fake_quant_on)
    if per_row_fake_quant:
        if ch_axis != 0:
            raise RuntimeError("Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only "
                               "supported on axis == 0")
        rows = x.reshape(x.shape[0], -1)
        if observe:
            cur_min, cur_max = _host_numpy(rows.amin(1)), _host_numpy(rows.amax(1))
    elif observe:
        cur_min, cur_max = _host_numpy(x.min()).reshape(1), _host_numpy(x.max()).reshape(1)
    if observe:
        _write(running_min, _moving_average(_host_numpy(running_min).reshape(-1), cur_min,
                                            averaging_const))
        _write(running_max, _moving_average(_host_numpy(running_max).reshape(-1), cur_max,
                                            averaging_const))
    if not fake:
        return x.clone()
    lo, hi = _host_numpy(running_min).reshape(-1), _host_numpy(running_max).reshape(-1)
    params = [choose_qparams(a, b, quant_min, quant_max, preserve_sparsity=symmetric_quant)
              for a, b in zip(lo, hi)]
    _write(scale, np.array([p[0] for p in params], f32))
    _write(zero_point, np.array([p[1] for p in params]))
    if per_row_fake_quant:
        return fake_quantize_per_channel_affine(x, scale, zero_point, ch_axis, quant_min,
                                                quant_max)
    return fake_quantize_per_tensor_affine(x, float(f32(params[0][0])), params[0][1],
                                           quant_min, quant_max)


def _quant_loss(x, xmin, xmax, bit_width):
    """ATen's calculate_quant_loss: the L2 error of quantizing x to bit_width levels over
    [xmin (rounded to half), xmax], summed in float32 in order."""
    xmin = f32(np.float16(xmin))
    data_range = f32(xmax - xmin)
    qmax = f32((1 << bit_width) - 1)
    scale = f32(1.0) if data_range == 0 else f32(np.float16(data_range / qmax))
    inv = f32(1.0) if scale == 0 else f32(f32(1.0) / scale)
    q = np.maximum(f32(0), np.minimum(np.rint((x - xmin) * inv), qmax))
    d = x - (q * scale + xmin)
    return f32(np.sqrt(np.add.accumulate(d * d, dtype=f32)[-1])) if x.size else f32(0)


def choose_qparams_optimized(input, numel, n_bins, ratio, bit_width):
    """torch.choose_qparams_optimized: ATen's greedy search for the [xmin, xmax] of the first
    numel elements that minimizes the L2 error of bit_width-bit quantization, moving one
    bound by (max - min) / n_bins at a time while more than n_bins * (1 - ratio) bins
    remain. Returns (xmax, xmin) as float32 (1,) tensors, in torch's order."""
    x = _float_tensor(input, "choose_qparams_optimized")
    if x.numel() == 0:
        raise ValueError("input tensor is empty and has no data")
    if numel < 0 or numel > x.numel():
        raise RuntimeError("numel is out of the bound of input tensor")
    data = _host_numpy(x.float()).reshape(-1)[:numel].astype(f32)
    xmin, xmax = f32(data.min()), f32(data.max())
    nb = f32(n_bins)
    step = f32((xmax - xmin) / nb)
    min_bins = f32(float(nb) * (1.0 - ratio))
    best = cur_loss = _quant_loss(data, xmin, xmax, bit_width)
    cur_min, cur_max = xmin, xmax
    thr = f32(min_bins * step)
    while f32(cur_min + thr) < cur_max:
        loss1 = _quant_loss(data, f32(cur_min + step), cur_max, bit_width)
        loss2 = _quant_loss(data, cur_min, f32(cur_max - step), bit_width)
        if cur_loss < loss1 and cur_loss < loss2 and cur_loss < best:
            best, xmin, xmax = cur_loss, cur_min, cur_max
        if loss1 < loss2:
            cur_min, cur_loss = f32(cur_min + step), loss1
        else:
            cur_max, cur_loss = f32(cur_max - step), loss2
    dev = x.device
    out = [_C.from_numpy(np.array([v], f32)) for v in (xmax, xmin)]
    return tuple(t if dev.type == "cpu" else t.to(dev) for t in out)


def quantized_batch_norm(input, weight, bias, mean, var, eps, output_scale,
                         output_zero_point):
    """torch.quantized_batch_norm on a per-tensor quantized (N, C, ...) input: ATen's fused
    parameters alpha = weight / sqrt(var + eps) * (in_scale / out_scale) and beta = (bias -
    mean * weight / sqrt(var + eps)) / out_scale, then level = out_zero_point +
    nearbyint(fma(alpha, x_level - in_zero_point, beta)), clamped, per channel."""
    if not isinstance(input, QuantizedTensor):
        raise not_implemented("quantized_batch_norm", input.device, quantized=False)
    if input.qscheme() is not per_tensor_affine:
        raise RuntimeError("quantized_batch_norm: a per-tensor quantized input is expected")
    if input.dim() not in (2, 3, 4, 5):
        raise RuntimeError(f"quantized::batch_norm: Expecting input to be 2d, 3d, 4d or 5d, "
                           f"got {input.dim()}d")
    if weight is None:
        raise RuntimeError("Weight must be provided")
    if bias is None:
        raise RuntimeError("Bias must be provided")
    c = input.shape[1]
    in_scale, in_zp = f32(input.q_scale()), input.q_zero_point()
    out_scale = float(output_scale)
    var_h = _host_numpy(var).astype(f32)
    mean_h = _host_numpy(mean).astype(f32)
    w, b = _host_numpy(weight).astype(f32), _host_numpy(bias).astype(f32)
    inv_sigma = (1.0 / np.sqrt(var_h + f32(eps)).astype(np.float64)).astype(f32)
    iw = (inv_sigma * w).astype(f32)
    alpha = (iw.astype(np.float64) * (float(in_scale) / out_scale)).astype(f32)
    beta = ((b - (mean_h * inv_sigma).astype(f32) * w).astype(f32).astype(np.float64) /
            out_scale).astype(f32)
    shape = [c if d == 1 else 1 for d in range(input.dim())]
    dev = input.device
    a_t = _C.from_numpy(alpha.astype(np.float64)).reshape(*shape)
    b_t = _C.from_numpy(beta.astype(np.float64)).reshape(*shape)
    if dev.type != "cpu":
        a_t, b_t = a_t.to(dev), b_t.to(dev)
    # the exact alpha * (x - zp) + beta rounded once to float32 (fma), as ATen's AVX2 loop
    y = ((input.ints.double() - in_zp) * a_t + b_t).float().round().double() + \
        int(output_zero_point)
    qd = input.dtype
    levels = y.clamp(qd.qmin, qd.qmax).to(qd.storage)
    return QuantizedTensor(levels, qd, per_tensor_affine, out_scale, int(output_zero_point))


FUNCTIONS = {f.__name__: f for f in (
    fake_quantize_per_tensor_affine, fake_quantize_per_channel_affine,
    fused_moving_avg_obs_fake_quant, choose_qparams_optimized, quantized_batch_norm)}
