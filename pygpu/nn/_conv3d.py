"""nn.functional's 3-d convolutions and pools over (N, C, D, H, W), with PyTorch's
signatures: conv3d, conv_transpose3d, max_pool3d (and _with_indices), avg_pool3d,
adaptive_avg_pool3d, adaptive_max_pool3d (and _with_indices), max_unpool3d, lp_pool3d.

The CONV and POOL nodes are 2-d, so each 3-d op is the 2-d op (pygpu/nn/_conv.py, one node
where the device has it) over depth slices, in ONE call, not a loop over depth:
- conv3d gathers, for each output depth, the kD input slices its kernel covers and stacks
  them on the channel axis (grouped as (group, tap, channel)), so that one conv2d with the
  weight's taps on its channel axis sums over depth, height and width at once;
- conv_transpose3d runs one conv_transpose2d with the depth taps on the output channel
  axis, then adds each tap's slices into their output depths (index_add);
- the pools pool height and width with the 2-d pool, then reduce each depth window of
  those planes (max with argmax, or a sum divided by PyTorch's divisor).
All are compositions of differentiable ops: autograd derives their gradients."""
import numbers

import numpy as np

from .. import _C

from .._tensor import create as _tensor_create
from .._tensor.join import cat
from .._ops._common import float_input as _float_input
from . import _conv as F2

Tensor = _C.Tensor


def _index(values, device):
    return _tensor_create.tensor(np.ascontiguousarray(values, dtype=np.int64), device=device)


def _batched5(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: input must be a pygpu.Tensor, got {type(x).__name__}")
    return F2._batched(x, 3, fn)


# ---- convolution -----------------------------------------------------------------------------

def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution of input (N, C_in, D, H, W) or (C_in, D, H, W) by weight
    (C_out, C_in/groups, kD, kH, kW); padding an int, a triple, 'valid' or 'same'."""
    fn = "conv3d"
    _float_input(input, fn)
    if not isinstance(weight, Tensor):
        raise TypeError(f"{fn}: weight must be a pygpu.Tensor, got {type(weight).__name__}")
    if weight.ndim != 5:
        raise RuntimeError(f"{fn}: weight should be 5-d, got {weight.ndim}-d weight of size "
                           f"{list(weight.shape)}")
    x, unbatched = _batched5(input, fn)
    stride = F2._tuple(stride, 3, "stride", fn)
    dilation = F2._tuple(dilation, 3, "dilation", fn)
    if not isinstance(groups, numbers.Integral) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    G = int(groups)
    O, Cg, KD, KH, KW = weight.shape
    N, C, D, H, W = x.shape
    if C != Cg * G:
        raise RuntimeError(f"Given groups={G}, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {Cg * G} channels, but got {C} "
                           f"channels instead")
    if O % G:
        raise RuntimeError(f"Given groups={G}, expected weight to be divisible by {G} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    pads = F2._conv_padding(padding, 3, (KD, KH, KW), dilation, stride, fn)
    sd, dd = stride[0], dilation[0]
    (pd0, pd1), (ph0, ph1), (pw0, pw1) = pads
    sizes = (D + pd0 + pd1, H + ph0 + ph1, W + pw0 + pw1)
    spans = tuple(d * (k - 1) + 1 for d, k in zip(dilation, (KD, KH, KW)))
    if any(s < k for s, k in zip(sizes, spans)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, sizes))}). Kernel size: "
                           f"({' x '.join(map(str, spans))}). Kernel size can't be greater than "
                           f"actual input size")
    symmetric = ph0 == ph1 and pw0 == pw1
    pad6 = (0 if symmetric else pw0, 0 if symmetric else pw1, 0 if symmetric else ph0,
            0 if symmetric else ph1, pd0, pd1)
    if any(pad6):
        x = F2.pad(x, pad6)
    OD = (sizes[0] - spans[0]) // sd + 1
    Hx, Wx = x.shape[3], x.shape[4]
    # (kD, OD): the input depth each tap of each output depth reads
    depth = np.arange(KD)[:, None] * dd + np.arange(OD)[None, :] * sd
    cols = x.index_select(2, _index(depth.reshape(-1), x.device))  # (N, C, kD*OD, H, W)
    cols = cols.reshape(N, G, Cg, KD, OD, Hx, Wx).permute(0, 4, 1, 3, 2, 5, 6)
    cols = cols.reshape(N * OD, G * KD * Cg, Hx, Wx)  # channels as (group, tap, channel)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(O, KD * Cg, KH, KW)
    y = F2.conv2d(cols, w2, bias, stride[1:], (ph0, pw0) if symmetric else 0, dilation[1:], G)
    y = y.reshape(N, OD, O, y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4)
    return y.reshape(*y.shape[1:]) if unbatched else y


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 3-d convolution of input (N, C_in, D, H, W) by weight
    (C_in, C_out/groups, kD, kH, kW)."""
    fn = "conv_transpose3d"
    _float_input(input, fn)
    if not isinstance(weight, Tensor) or weight.ndim != 5:
        raise RuntimeError(f"{fn}: weight should be a 5-d tensor")
    if isinstance(padding, str):
        raise ValueError(f"{fn}: padding must be an int or a tuple of ints, not a string")
    x, unbatched = _batched5(input, fn)
    stride = F2._tuple(stride, 3, "stride", fn)
    dilation = F2._tuple(dilation, 3, "dilation", fn)
    pad_ = F2._tuple(padding, 3, "padding", fn)
    opad = F2._tuple(output_padding, 3, "output_padding", fn)
    if not isinstance(groups, numbers.Integral) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(p < 0 for p in pad_):
        raise RuntimeError("negative padding is not supported")
    for o, s, d in zip(opad, stride, dilation):
        if o >= s and o >= d:
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={list(opad)}, stride={list(stride)}, "
                               f"dilation={list(dilation)}")
    G = int(groups)
    Cin, Cgo, KD, KH, KW = weight.shape
    N, C, D, H, W = x.shape
    if C != Cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {Cin} channels, but got {C} channels "
                           f"instead")
    Cout = Cgo * G
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != Cout):
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"bias to be 1-dimensional with {Cout} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    sd, dd, pd, od = stride[0], dilation[0], pad_[0], opad[0]
    OD = (D - 1) * sd - 2 * pd + dd * (KD - 1) + od + 1
    if OD <= 0:
        raise RuntimeError(f"Given input size per channel: ({D} x {H} x {W}). Calculated output "
                           f"size per channel: ({OD} x ...). Output size is too small")
    planes = x.permute(0, 2, 1, 3, 4).reshape(N * D, C, H, W)
    # the depth taps on the output channel axis, ordered (group, tap, channel)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(Cin, KD * Cgo, KH, KW)
    y = F2.conv_transpose2d(planes, w2, None, stride[1:], pad_[1:], opad[1:], G, dilation[1:])
    OH, OW = y.shape[2], y.shape[3]
    y = y.reshape(N, D, G, KD, Cgo, OH, OW).permute(0, 2, 4, 3, 1, 5, 6)
    y = y.reshape(N, Cout, KD * D, OH, OW)
    full = (D - 1) * sd + dd * (KD - 1) + 1
    where = np.arange(KD)[:, None] * dd + np.arange(D)[None, :] * sd  # (kD, D): output depth
    out = _tensor_create.zeros((N, Cout, full, OH, OW), dtype=y.dtype, device=y.device)
    out = out.index_add(2, _index(where.reshape(-1), y.device), y)
    if od > pd:
        out = F2.pad(out, (0, 0, 0, 0, 0, od - pd))
    out = out[:, :, pd:pd + OD]
    if bias is not None:
        out = out + bias.reshape(1, Cout, 1, 1, 1)
    return out.reshape(*out.shape[1:]) if unbatched else out


# ---- pooling ---------------------------------------------------------------------------------

def _pool_args(kernel_size, stride, padding, dilation, fn):
    return F2.pool_args(kernel_size, stride, padding, dilation, 3, fn)


def _planes(x):
    """(N, C, D, H, W) -> (N*D, C, H, W): each depth slice a 2-d image."""
    N, C, D, H, W = x.shape
    return x.permute(0, 2, 1, 3, 4).reshape(N * D, C, H, W)


def _unplanes(y, N, D):
    """(N*D, C, OH, OW) -> (N, C, D, OH, OW)."""
    return y.reshape(N, D, y.shape[1], y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4)


def _depth_windows(D, OD, k, s, p, d):
    """(k, OD) input depths of each window tap, -1 where the tap is padding."""
    pos = np.arange(k)[:, None] * d + np.arange(OD)[None, :] * s - p
    return np.where((pos >= 0) & (pos < D), pos, -1)


def _max_over_depth(v, idx2, pos, HW):
    """The maximum over each depth window of v (N, C, D, OH, OW) given its taps `pos`
    (k, OD; -1: padding, never the maximum), with PyTorch's flat index d*H*W + h*W + w."""
    N, C, D, OH, OW = v.shape
    k, OD = pos.shape
    neg = _tensor_create.full((N, C, 1, OH, OW), float("-inf"), dtype=v.dtype, device=v.device)
    vp = cat([v, neg], 2)  # depth D: the padding tap's -inf
    taps = np.where(pos >= 0, pos, D)
    cand = vp.index_select(2, _index(taps.reshape(-1), v.device)).reshape(N, C, k, OD, OH, OW)
    best = cand.argmax(axis=2, keepdims=True)  # the first maximum: the lowest depth
    y = cand.gather(2, best).reshape(N, C, OD, OH, OW)
    if idx2 is None:
        return y, None
    depth = _index(taps, v.device).reshape(1, 1, k, OD, 1, 1).expand(N, C, k, OD, OH, OW)
    dsel = depth.gather(2, best).reshape(N, C, OD, OH, OW)  # the winning depth
    safe = dsel.clamp(0, D - 1)
    within = idx2.gather(2, safe)  # that depth's h*W + w
    return y, dsel * HW + within


def _check_pool_out(x, out, fn):
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated "
                           f"output size: ({'x'.join(map(str, (x.shape[1],) + tuple(out)))}). "
                           f"Output size is too small")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over (kD, kH, kW) windows of (N, C, D, H, W); return_indices: the flat
    d*H*W + h*W + w index of each maximum (the first, in that order, on ties)."""
    fn = "max_pool3d"
    _float_input(input, fn)
    x, unbatched = _batched5(input, fn)
    k, s, p, d = _pool_args(kernel_size, stride, padding, dilation, fn)
    N, C, D, H, W = x.shape
    out = tuple(F2._pool_out(n, k[i], s[i], p[i], d[i], ceil_mode)
                for i, n in enumerate((D, H, W)))
    _check_pool_out(x, out, fn)
    y2, i2 = F2.max_pool2d(_planes(x), k[1:], s[1:], p[1:], d[1:], ceil_mode, True)
    v, idx2 = _unplanes(y2, N, D), _unplanes(i2, N, D)
    pos = _depth_windows(D, out[0], k[0], s[0], p[0], d[0])
    y, idx = _max_over_depth(v, idx2, pos, H * W)
    if unbatched:
        y, idx = y.reshape(*y.shape[1:]), idx.reshape(*idx.shape[1:])
    return (y, idx) if return_indices else y


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _counts(n, OD, k, s, p, include_pad):
    """PyTorch's per-axis window sizes for average pooling: with include_pad the window
    clipped to the padded input, else to the input itself."""
    start = np.arange(OD) * s - p
    end = np.minimum(start + k, n + p)
    if include_pad:
        return (end - start).astype(np.float64)
    return (np.minimum(end, n) - np.maximum(start, 0)).astype(np.float64)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over (kD, kH, kW) windows of (N, C, D, H, W), divided as PyTorch divides:
    divisor_override, else the window's size (count_include_pad: padding counted)."""
    fn = "avg_pool3d"
    _float_input(input, fn)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    x, unbatched = _batched5(input, fn)
    k, s, p, _ = _pool_args(kernel_size, stride, padding, 1, fn)
    N, C, D, H, W = x.shape
    out = tuple(F2._pool_out(n, k[i], s[i], p[i], 1, ceil_mode)
                for i, n in enumerate((D, H, W)))
    _check_pool_out(x, out, fn)
    sums = _unplanes(F2.avg_pool2d(_planes(x), k[1:], s[1:], p[1:], ceil_mode, True, 1), N, D)
    pos = _depth_windows(D, out[0], k[0], s[0], p[0], 1)  # (kD, OD)
    # the depth sums as one product: (D, OD) ones where a depth is in a window
    sel = np.zeros((D, out[0]))
    for t in range(pos.shape[0]):
        ok = pos[t] >= 0
        sel[pos[t][ok], np.arange(out[0])[ok]] += 1.0
    selt = _tensor_create.tensor(sel, dtype=x.dtype, device=x.device)
    y = (sums.permute(0, 1, 3, 4, 2) @ selt).permute(0, 1, 4, 2, 3)  # (N, C, OD, OH, OW)
    if divisor_override:
        y = y * (1.0 / float(divisor_override))
    else:
        div = (_counts(D, out[0], k[0], s[0], p[0], count_include_pad)[:, None, None]
               * _counts(H, out[1], k[1], s[1], p[1], count_include_pad)[None, :, None]
               * _counts(W, out[2], k[2], s[2], p[2], count_include_pad)[None, None, :])
        y = y * _tensor_create.tensor(1.0 / div, dtype=x.dtype, device=x.device)
    return y.reshape(*y.shape[1:]) if unbatched else y


def _adaptive_windows(n, o):
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def _adaptive_out(x, output_size, fn):
    if isinstance(output_size, numbers.Integral) or output_size is None:
        output_size = (output_size,) * 3
    output_size = tuple(output_size)
    if len(output_size) != 3:
        raise ValueError(f"{fn}: output_size must be an int or a tuple of 3")
    out = tuple(x.shape[2 + i] if o is None else int(o) for i, o in enumerate(output_size))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(out)}")
    if any(n == 0 for n in x.shape[2:]):
        raise RuntimeError(f"{fn}: Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(x.shape)}")
    return out


def adaptive_avg_pool3d(input, output_size):
    """Mean over the adaptive windows (start floor(i*n/o), end ceil((i+1)*n/o)) of each axis."""
    fn = "adaptive_avg_pool3d"
    _float_input(input, fn)
    x, unbatched = _batched5(input, fn)
    OD, OH, OW = _adaptive_out(x, output_size, fn)
    N, C, D, H, W = x.shape
    planes = _unplanes(F2.adaptive_avg_pool2d(_planes(x), (OH, OW)), N, D)
    sel = np.zeros((D, OD))
    for j, (a, b) in enumerate(_adaptive_windows(D, OD)):
        sel[a:b, j] = 1.0 / (b - a)
    selt = _tensor_create.tensor(sel, dtype=x.dtype, device=x.device)
    y = (planes.permute(0, 1, 3, 4, 2) @ selt).permute(0, 1, 4, 2, 3)
    return y.reshape(*y.shape[1:]) if unbatched else y


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over the adaptive windows of each axis; return_indices: flat d*H*W + h*W + w."""
    fn = "adaptive_max_pool3d"
    _float_input(input, fn)
    x, unbatched = _batched5(input, fn)
    OD, OH, OW = _adaptive_out(x, output_size, fn)
    N, C, D, H, W = x.shape
    y2, i2 = F2.adaptive_max_pool2d(_planes(x), (OH, OW), True)
    wins = _adaptive_windows(D, OD)
    k = max(b - a for a, b in wins)
    pos = np.full((k, OD), -1, dtype=np.int64)
    for j, (a, b) in enumerate(wins):
        pos[:b - a, j] = np.arange(a, b)
    y, idx = _max_over_depth(_unplanes(y2, N, D), _unplanes(i2, N, D), pos, H * W)
    if unbatched:
        y, idx = y.reshape(*y.shape[1:]), idx.reshape(*idx.shape[1:])
    return (y, idx) if return_indices else y


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool3d(input, output_size, True)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d: each value put at its index in a zero (N, C, D, H, W)."""
    return F2._max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                          "max_unpool3d")


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x**p) ** (1/p), over the last three axes."""
    from ._lp_pool import _lp
    kd, kh, kw = F2._tuple(kernel_size, 3, "kernel_size", "lp_pool3d")
    return _lp(input, norm_type, kd * kh * kw,
               lambda x: avg_pool3d(x, kernel_size, stride, 0, ceil_mode),
               lambda x: max_pool3d(x, kernel_size, stride, 0, 1, ceil_mode))


FUNCTIONS = {f.__name__: f for f in (
    conv3d, conv_transpose3d, max_pool3d, max_pool3d_with_indices, avg_pool3d,
    adaptive_avg_pool3d, adaptive_max_pool3d, adaptive_max_pool3d_with_indices, max_unpool3d,
    lp_pool3d)}
