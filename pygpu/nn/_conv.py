"""nn.functional's convolution and pooling with PyTorch's signatures: conv1d, conv2d,
conv_transpose1d, conv_transpose2d, max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d,
adaptive_max_pool1d/2d, max_unpool1d/2d, and pad.

Here the arguments are parsed and checked with PyTorch's messages (an int or a tuple,
'same'/'valid', ceil_mode's output size), 1-d and unbatched inputs become (N, C, H, W)
with H = 1 or N = 1, and the work goes to pygpu/_ops/_conv.py (one C op each way where the
device has the kernels, tensor ops elsewhere)."""
import numbers

from .. import _C
from .._ops import _conv as _conv_ops
from .._tensor import create as _tensor_create
from .._ops._conv import pad  # noqa: F401 - nn.functional.pad
from .._ops._common import float_input as _float_input
from ..amp.autocast_mode import cast_inputs as _autocast

Tensor = _C.Tensor


def _tuple(v, n, name, fn):
    if type(v) is int:  # the common cases first: numbers.Integral is an ABC check (issue 45)
        return (v,) * n
    if type(v) is tuple and len(v) == n and all(type(e) is int for e in v):
        return v
    if isinstance(v, numbers.Integral):
        return (int(v),) * n
    v = tuple(v)
    if len(v) == 1:
        v = v * n
    if len(v) != n or not all(isinstance(e, numbers.Integral) for e in v):
        raise TypeError(f"{fn}: {name} must be an int or a tuple of {n} ints, got {v!r}")
    return tuple(int(e) for e in v)


def _batched(x, dims, fn):
    """x with a batch axis (unbatched inputs get one), and whether one was added."""
    if x.ndim == dims + 1:
        return x.reshape(1, *x.shape), True
    if x.ndim != dims + 2:
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to "
                           f"{fn}, but got input of size: {list(x.shape)}")
    return x, False


def _conv_padding(padding, n, kernel, dilation, stride, fn):
    """(before, after) per axis from an int, a tuple, 'valid' or 'same'."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * n
        if padding != "same":
            raise ValueError(f"Invalid padding string '{padding}', should be one of "
                             f"{{'valid', 'same'}}")
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        out = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            out.append((total // 2, total - total // 2))
        return out
    p = _tuple(padding, n, "padding", fn)
    if any(v < 0 for v in p):
        raise RuntimeError("negative padding is not supported")
    return [(v, v) for v in p]


def _convnd(x, weight, bias, stride, padding, dilation, groups, n, fn):
    _float_input(x, fn)
    if not isinstance(weight, Tensor):
        raise TypeError(f"{fn}: weight must be a pygpu.Tensor, got {type(weight).__name__}")
    if weight.ndim != n + 2:
        raise RuntimeError(f"{fn}: weight should be {n + 2}-d, got {weight.ndim}-d weight of "
                           f"size {list(weight.shape)}")
    x, weight, bias = _autocast("conv2d", x, weight, bias)  # the conv2d row: amp low
    x, unbatched = _batched(x, n, fn)
    stride = _tuple(stride, n, "stride", fn)
    dilation = _tuple(dilation, n, "dilation", fn)
    if not isinstance(groups, numbers.Integral) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    pads = _conv_padding(padding, n, weight.shape[2:], dilation, stride, fn)
    if n == 1:  # as (N, C, 1, L)
        x = x.reshape(x.shape[0], x.shape[1], 1, x.shape[2])
        weight = weight.reshape(weight.shape[0], weight.shape[1], 1, weight.shape[2])
        stride, dilation, pads = (1,) + stride, (1,) + dilation, [(0, 0)] + pads
    geom = (stride[0], stride[1], dilation[0], dilation[1], pads[0][0], pads[0][1], pads[1][0],
            pads[1][1], int(groups))
    if x.shape[1] != weight.shape[1] * groups:
        w = [weight.shape[0], weight.shape[1]] + ([weight.shape[3]] if n == 1 else
                                                  list(weight.shape[2:]))
        xs = [x.shape[0], x.shape[1]] + ([x.shape[3]] if n == 1 else list(x.shape[2:]))
        raise RuntimeError(f"Given groups={groups}, weight of size {w}, expected input{xs} to "
                           f"have {weight.shape[1] * groups} channels, but got {x.shape[1]} "
                           f"channels instead")
    y = _conv_ops.conv2d(x, weight, bias, geom)
    if n == 1:
        y = y.reshape(y.shape[0], y.shape[1], y.shape[3])
    return y.reshape(*y.shape[1:]) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution of input (N, C_in, L) or (C_in, L) by weight (C_out, C_in/groups, k)."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution of input (N, C_in, H, W) or (C_in, H, W) by weight
    (C_out, C_in/groups, kH, kW); padding an int, a pair, 'valid' or 'same'."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def _conv_transposend(x, weight, bias, stride, padding, output_padding, groups, dilation, n,
                      fn, output_size=None):
    _float_input(x, fn)
    if not isinstance(weight, Tensor) or weight.ndim != n + 2:
        raise RuntimeError(f"{fn}: weight should be a {n + 2}-d tensor")
    if isinstance(padding, str):
        raise ValueError(f"{fn}: padding must be an int or a tuple of ints, not a string")
    x, weight, bias = _autocast("conv2d", x, weight, bias)
    x, unbatched = _batched(x, n, fn)
    stride = _tuple(stride, n, "stride", fn)
    dilation = _tuple(dilation, n, "dilation", fn)
    pad_ = _tuple(padding, n, "padding", fn)
    opad = _tuple(output_padding, n, "output_padding", fn)
    if not isinstance(groups, numbers.Integral) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(p < 0 for p in pad_):
        raise RuntimeError("negative padding is not supported")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[0]} channels, but got "
                           f"{x.shape[1]} channels instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    ks = weight.shape[2:]
    spatial = x.shape[2:]
    if output_size is not None:
        output_size = tuple(output_size)[-n:]
        opad = []
        for d in range(n):
            base = (spatial[d] - 1) * stride[d] - 2 * pad_[d] + dilation[d] * (ks[d] - 1) + 1
            extra = output_size[d] - base
            if not 0 <= extra < max(stride[d], dilation[d]):
                raise ValueError(f"requested an output size of {list(output_size)}, but valid "
                                 f"sizes range from {base} to {base + stride[d] - 1} (for an "
                                 f"input of {list(spatial)})")
            opad.append(extra)
        opad = tuple(opad)
    for d in range(n):
        if opad[d] >= stride[d] and opad[d] >= dilation[d]:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation,"
                               f" but got output_padding={list(opad)}, stride={list(stride)}, "
                               f"dilation={list(dilation)}")
    out = [(spatial[d] - 1) * stride[d] - 2 * pad_[d] + dilation[d] * (ks[d] - 1) + opad[d] + 1
           for d in range(n)]
    if any(o <= 0 for o in out):
        raise RuntimeError(f"{fn}: the output size {out} is too small")
    if n == 1:
        x = x.reshape(x.shape[0], x.shape[1], 1, x.shape[2])
        weight = weight.reshape(weight.shape[0], weight.shape[1], 1, weight.shape[2])
        stride, dilation, pad_, out = (1,) + stride, (1,) + dilation, (0,) + pad_, [1] + out
    geom = (stride[0], stride[1], dilation[0], dilation[1], pad_[0], pad_[0], pad_[1], pad_[1],
            int(groups))
    y = _conv_ops.conv_transpose2d(x, weight, bias, geom, tuple(out))
    if n == 1:
        y = y.reshape(y.shape[0], y.shape[1], y.shape[3])
    return y.reshape(*y.shape[1:]) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 1-d convolution: weight (C_in, C_out/groups, k)."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 2-d convolution: weight (C_in, C_out/groups, kH, kW)."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 2, "conv_transpose2d")


# ---- pooling ---------------------------------------------------------------------------------

def _pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size (pooling_output_shape): with ceil_mode the last window
    must start inside the input or its left padding."""
    num = size + 2 * p - d * (k - 1) - 1
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_input(x, n, fn):
    _float_input(x, fn)
    x, unbatched = _batched(x, n, fn)
    if n == 1:
        x = x.reshape(x.shape[0], x.shape[1], 1, x.shape[2])
    return x, unbatched


def _pool_result(y, n, unbatched):
    if n == 1:
        y = y.reshape(y.shape[0], y.shape[1], y.shape[3])
    return y.reshape(*y.shape[1:]) if unbatched else y


def pool_args(kernel_size, stride, padding, dilation, n, fn):
    """A pool's (kernel, stride, padding, dilation) as n-tuples, checked as PyTorch checks
    them (stride defaults to the kernel), for the 1-d/2-d pools here and the 3-d ones
    (nn/_conv3d.py)."""
    k = _tuple(kernel_size, n, "kernel_size", fn)
    s = k if stride is None or (not isinstance(stride, numbers.Integral) and
                                len(tuple(stride)) == 0) else _tuple(stride, n, "stride", fn)
    p = _tuple(padding, n, "padding", fn)
    d = _tuple(dilation, n, "dilation", fn)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{fn}: kernel_size must be greater than zero, but got {list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{fn}: stride must be greater than zero, but got {list(s)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{fn}: dilation must be greater than zero, but got {list(d)}")
    for pi, ki, di in zip(p, k, d):
        if pi < 0:
            raise RuntimeError("negative padding is not supported")
        if pi > ((ki - 1) * di + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={pi}, kernel_size={ki} and dilation={di}")
    return k, s, p, d


def _windowed(x, kind, kernel_size, stride, padding, dilation, ceil_mode, cip, divisor, n, fn,
              return_indices=False):
    x, unbatched = _pool_input(x, n, fn)
    k, s, p, d = pool_args(kernel_size, stride, padding, dilation, n, fn)
    if n == 1:
        k, s, p, d = (1,) + k, (1,) + s, (0,) + p, (1,) + d
    out = tuple(_pool_out(x.shape[2 + i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(2))
    if out[0] <= 0 or out[1] <= 0:
        shown = x.shape[1:] if n == 2 else (x.shape[1], x.shape[3])
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, shown))}). Calculated output "
                           f"size: ({'x'.join(map(str, (x.shape[1],) + out[2 - n:]))}). Output "
                           f"size is too small")
    r = _conv_ops.pool2d(x, kind, k, s, p, d, out, cip, divisor, return_indices)
    if return_indices:
        y, idx = r
        return _pool_result(y, n, unbatched), _pool_result(idx, n, unbatched)
    return _pool_result(r, n, unbatched)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _windowed(input, _conv_ops.POOL_MAX, kernel_size, stride, padding, dilation,
                     ceil_mode, True, 0, 1, "max_pool1d", return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _windowed(input, _conv_ops.POOL_MAX, kernel_size, stride, padding, dilation,
                     ceil_mode, True, 0, 2, "max_pool2d", return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return _windowed(input, _conv_ops.POOL_AVG, kernel_size, stride, padding, 1, ceil_mode,
                     count_include_pad, 0, 1, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    return _windowed(input, _conv_ops.POOL_AVG, kernel_size, stride, padding, 1, ceil_mode,
                     count_include_pad, int(divisor_override or 0), 2, "avg_pool2d")


def _adaptive(x, output_size, kind, n, fn, return_indices=False):
    x, unbatched = _pool_input(x, n, fn)
    if isinstance(output_size, numbers.Integral) or output_size is None:
        output_size = (output_size,) * n
    output_size = tuple(output_size)
    if len(output_size) != n:
        raise ValueError(f"{fn}: output_size must be an int or a tuple of {n}")
    spatial = x.shape[2:] if n == 2 else x.shape[3:]
    out = tuple(spatial[i] if o is None else int(o) for i, o in enumerate(output_size))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(out)}")
    if any(s == 0 for s in spatial):
        raise RuntimeError(f"{fn}: Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(x.shape)}")
    if n == 1:
        out = (1,) + out
    one = (1, 1)
    r = _conv_ops.pool2d(x, kind, one, one, (0, 0), one, out, True, 0, return_indices)
    if return_indices:
        return _pool_result(r[0], n, unbatched), _pool_result(r[1], n, unbatched)
    return _pool_result(r, n, unbatched)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive(input, output_size, _conv_ops.POOL_ADAPTIVE_AVG, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    return _adaptive(input, output_size, _conv_ops.POOL_ADAPTIVE_AVG, 2, "adaptive_avg_pool2d")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive(input, output_size, _conv_ops.POOL_ADAPTIVE_MAX, 1, "adaptive_max_pool1d",
                     return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive(input, output_size, _conv_ops.POOL_ADAPTIVE_MAX, 2, "adaptive_max_pool2d",
                     return_indices)


def _max_unpool(x, indices, kernel_size, stride, padding, output_size, n, fn):
    _float_input(x, fn)
    x, unbatched = _batched(x, n, fn)
    if indices.ndim == x.ndim - 1:
        indices = indices.reshape(1, *indices.shape)
    k = _tuple(kernel_size, n, "kernel_size", fn)
    s = k if stride is None else _tuple(stride, n, "stride", fn)
    p = _tuple(padding, n, "padding", fn)
    spatial = x.shape[2:]
    default = [(spatial[d] - 1) * s[d] - 2 * p[d] + k[d] for d in range(n)]
    if output_size is not None:
        out = list(output_size)[-n:]
        for d in range(n):
            if not default[d] - s[d] < out[d] < default[d] + s[d]:
                raise ValueError(f"invalid output_size \"{list(output_size)}\" (dim {d} must be "
                                 f"between {default[d] - s[d]} and {default[d] + s[d]})")
    else:
        out = default
    N, C = x.shape[0], x.shape[1]
    size = 1
    for o in out:
        size *= o
    z = _tensor_create.zeros((N, C, size), dtype=x.dtype, device=x.device)
    y = z.scatter(2, indices.reshape(N, C, -1), x.reshape(N, C, -1)).reshape(N, C, *out)
    return y.reshape(*y.shape[1:]) if unbatched else y


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")
