"""nn.functional's resampling of images, with PyTorch's signatures and index rules:
interpolate (nearest, linear, bilinear with align_corners), unfold and fold (im2col and its
sum back, as tensors), pixel_shuffle and pixel_unshuffle.

All are compositions that autograd differentiates: interpolate gathers rows and columns
(index_select) and blends them; unfold gathers each window (pygpu/_ops/_conv.py's _windows);
fold is its adjoint, one scatter-add with unfold as its backward."""
import math
import numbers

import numpy as np

from .. import _C
from .._ops import _conv as _conv_ops
from .._tensor import create as _tensor_create
from .._ops._common import float_input as _float_input
from ..autograd import Function

Tensor = _C.Tensor


def _index(values, device):
    return _tensor_create.tensor(np.ascontiguousarray(values, dtype=np.int64), device=device)


def _out_sizes(x, size, scale_factor, n, fn):
    spatial = x.shape[2:]
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        size = (int(size),) * n if isinstance(size, numbers.Integral) else tuple(int(s) for s in size)
        if len(size) != n:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, "
                             f"but got input with spatial dimensions of {list(spatial)} and "
                             f"output size of {list(size)}. Please provide input tensor in (N, C, "
                             f"d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        return size, [None] * n
    sf = (float(scale_factor),) * n if isinstance(scale_factor, numbers.Number) else \
        tuple(float(s) for s in scale_factor)
    if len(sf) != n:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of {list(spatial)} "
                         f"and scale_factor of shape {list(sf)}.")
    return tuple(int(math.floor(s * f)) for s, f in zip(spatial, sf)), list(sf)


def _nearest_index(n_in, n_out, sf):
    scale = 1.0 / sf if sf else n_in / n_out
    src = np.arange(n_out).astype(np.float32) * np.float32(scale)  # in float, as PyTorch
    return np.minimum(np.floor(src).astype(np.int64), n_in - 1)


def _linear_weights(n_in, n_out, sf, align_corners):
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        src = np.arange(n_out) * scale
    else:
        scale = 1.0 / sf if sf else n_in / n_out
        src = np.maximum((np.arange(n_out) + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    return i0, i1, lam


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, L) or (N, C, H, W): mode 'nearest' (PyTorch's floor rule), 'linear'
    (3-d) or 'bilinear' (4-d), with align_corners for the linear modes."""
    _float_input(input, "interpolate")
    if mode not in ("nearest", "linear", "bilinear"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (nearest, "
                                  f"linear, bilinear)")
    if antialias:
        raise NotImplementedError("interpolate: antialias is not supported")
    n = input.ndim - 2
    if n not in (1, 2):
        raise NotImplementedError(f"Input Error: Only 3D and 4D input Tensors supported (got "
                                  f"{input.ndim}D) for the modes: nearest | linear | bilinear "
                                  f"(got {mode})")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if (mode == "linear" and n != 1) or (mode == "bilinear" and n != 2):
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{3 if mode == 'linear' else 4}D input")
    out, sf = _out_sizes(input, size, scale_factor, n, "interpolate")
    if recompute_scale_factor:
        sf = [None] * n
    y = input
    for k in range(n):
        d = 2 + k
        n_in = input.shape[d]
        if mode == "nearest":
            y = y.index_select(d, _index(_nearest_index(n_in, out[k], sf[k]), input.device))
            continue
        i0, i1, lam = _linear_weights(n_in, out[k], sf[k], bool(align_corners))
        shape = [1] * y.ndim
        shape[d] = out[k]
        w = _tensor_create.tensor(lam.reshape(shape), dtype=input.dtype, device=input.device)
        a = y.index_select(d, _index(i0, input.device))
        b = y.index_select(d, _index(i1, input.device))
        y = a + (b - a) * w
    return y


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def _pair(v, name):
    if isinstance(v, numbers.Integral):
        return (int(v), int(v))
    v = tuple(int(e) for e in v)
    if len(v) != 2:
        raise TypeError(f"{name} must be an int or a pair of ints, got {v!r}")
    return v


def _fold_geometry(kernel_size, dilation, padding, stride):
    return (_pair(kernel_size, "kernel_size"), _pair(dilation, "dilation"),
            _pair(padding, "padding"), _pair(stride, "stride"))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C, H, W) -> (N, C*kh*kw, L): each sliding window as a column (im2col)."""
    _float_input(input, "unfold")
    k, d, p, s = _fold_geometry(kernel_size, dilation, padding, stride)
    if input.ndim != 4:
        raise NotImplementedError(f"Input Error: Only 4D input Tensors are supported (got "
                                  f"{input.ndim}D)")
    x = _conv_ops.pad(input, (p[1], p[1], p[0], p[0])) if p[0] or p[1] else input
    N, C, H, W = x.shape
    oh = (H - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (W - d[1] * (k[1] - 1) - 1) // s[1] + 1
    if oh <= 0 or ow <= 0:
        raise RuntimeError(f"Given input with spatial size ({input.shape[2]}, {input.shape[3]}), "
                           f"kernel_size={list(k)}, dilation={list(d)}, padding={list(p)}, "
                           f"calculated shape of the array of sliding blocks as ({oh}, {ow}), "
                           f"but its components must be at least one.")
    cols = _conv_ops._windows(x, k[0], k[1], s[0], s[1], d[0], d[1], oh, ow)
    return cols.reshape(N, C * k[0] * k[1], oh * ow)


class _Fold(Function):
    """Columns summed back into their windows' places (col2im): one scatter-add; backward:
    the gradient's windows gathered (unfold)."""

    @staticmethod
    def forward(ctx, cols, N, C, Hp, Wp, idx):
        out = _tensor_create.zeros((N, C, Hp * Wp), dtype=cols.dtype, device=cols.device)
        out.index_add_(2, idx, cols.reshape(N, C, -1))
        ctx.idx, ctx.shape = idx, tuple(cols.shape)
        return out.reshape(N, C, Hp, Wp)

    @staticmethod
    def backward(ctx, g):
        N, C = g.shape[0], g.shape[1]
        cols = g.reshape(N, C, -1).index_select(2, ctx.idx)
        return cols.reshape(*ctx.shape), None, None, None, None, None


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C*kh*kw, L) -> (N, C, *output_size): columns summed into their windows (col2im)."""
    _float_input(input, "fold")
    k, d, p, s = _fold_geometry(kernel_size, dilation, padding, stride)
    H, W = _pair(output_size, "output_size")
    unbatched = input.ndim == 2
    if unbatched:
        input = input.reshape(1, *input.shape)
    if input.ndim != 3:
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input "
                                  f"Tensors are supported (got {input.ndim}D)")
    N, CK, L = input.shape
    if CK % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={CK} and "
                           f"kernel_size={list(k)}")
    Hp, Wp = H + 2 * p[0], W + 2 * p[1]
    oh = (Hp - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (Wp - d[1] * (k[1] - 1) - 1) // s[1] + 1
    if oh * ow != L:
        raise RuntimeError(f"Given output_size=({H}, {W}), kernel_size={list(k)}, "
                           f"dilation={list(d)}, padding={list(p)}, stride={list(s)}, expected "
                           f"size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {oh} * {ow} = {oh * ow}, but got input.size(2)={L}.")
    i = (np.arange(k[0]) * d[0])[:, None, None, None]
    j = (np.arange(k[1]) * d[1])[None, :, None, None]
    r = (np.arange(oh) * s[0])[None, None, :, None]
    c = (np.arange(ow) * s[1])[None, None, None, :]
    idx = _index(((r + i) * Wp + c + j).reshape(-1), input.device)
    out = _Fold.apply(input, N, CK // (k[0] * k[1]), Hp, Wp, idx)
    if p[0] or p[1]:
        out = out[:, :, p[0]:p[0] + H, p[1]:p[1] + W]
    return out.reshape(*out.shape[1:]) if unbatched else out


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    x = input.reshape(-1, c // (r * r), r, r, h, w).permute(0, 1, 4, 2, 5, 3).contiguous()
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but got {h} and {w} for {r}")
    x = input.reshape(-1, c, h // r, r, w // r, r).permute(0, 1, 3, 5, 2, 4).contiguous()
    return x.reshape(*lead, c * r * r, h // r, w // r)
