"""nn.functional.fractional_max_pool2d/3d (and _with_indices) and the FractionalMaxPool2d/3d
modules, with PyTorch's signatures and its window placement
(aten/src/ATen/native/FractionalMaxPool2d.cpp): each (sample, channel) plane has random
samples u in [0, 1), one per spatial axis, and window i along an axis of n inputs, k wide,
o outputs starts at int((i + u) * a) - int(u * a), a = (n - k) / (o - 1) computed in the
input's dtype, the last at n - k.

The windows' flat input positions are laid out on the host (from the samples, which come
to the host for that), the values gathered in one gather, and the first maximum of each
window (in d, h, w order, as PyTorch's loop) taken with argmax: the gradient goes back
through the gather to the maxima."""
import numbers

import numpy as np

from .. import _C

from .._tensor import create as _tensor_create
from .._dtype import float64
from .._ops._common import float_input as _float_input
from .module import Module

Tensor = _C.Tensor
_AXIS_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _ntuple(v, n):
    if v is None:
        return None
    if isinstance(v, numbers.Number):
        return (v,) * n
    v = tuple(v)
    return v * n if len(v) == 1 else v


def _intervals(u, n, o, k, np_dtype):
    """Window starts (..., o) along an axis for samples u (...): PyTorch's
    generate_intervals, in the input's precision."""
    starts = np.empty(u.shape + (o,), dtype=np.int64)
    if o > 1:
        alpha = np_dtype(n - k) / np_dtype(o - 1)
        i = np.arange(o - 1, dtype=np_dtype)
        u = u.astype(np_dtype)[..., None]
        starts[..., :o - 1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    if o > 0:
        starts[..., o - 1] = n - k
    return starts


def _fractional(x, kernel_size, output_size, output_ratio, return_indices, samples, n, fn):
    _float_input(x, fn)
    if x.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{fn}(): Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"{list(x.shape)}")
    unbatched = x.ndim == n + 1
    if unbatched:
        x = x.reshape(1, *x.shape)
    k = _ntuple(kernel_size, n)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fn} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = _ntuple(output_ratio, n)
        output_size = [int(x.shape[2 + a] * ratio[a]) for a in range(n)]
    out = tuple(int(o) for o in _ntuple(output_size, n))
    N, C = x.shape[0], x.shape[1]
    spatial = tuple(x.shape[2:])
    for a in range(n):
        if out[a] + k[a] - 1 > spatial[a]:
            name = _AXIS_NAMES[n][a]
            raise RuntimeError(f"{fn}{'_out' if n == 3 else ''}(): pool {name} {k[a]} too large "
                               f"relative to input {name} {spatial[a]}")
    if samples is None:
        samples = _tensor_create.rand(N, C, n, dtype=x.dtype, device=x.device)
    if tuple(samples.shape) != (N, C, n):
        raise RuntimeError(f"{fn}(): expected _random_samples of shape ({N}, {C}, {n}), got "
                           f"{list(samples.shape)}")
    np_dtype = np.float64 if x.dtype is float64 else np.float32
    u = samples.detach().numpy().astype(np_dtype)  # (N, C, n): 2-d's are (w, h), 3-d's (t, h, w)
    order = (1, 0) if n == 2 else (0, 1, 2)  # which sample each axis (in x's order) uses
    strides = [int(np.prod(spatial[a + 1:])) for a in range(n)]
    K, L = int(np.prod(k)), int(np.prod(out))
    pos = np.zeros((N, C) + tuple(k) + tuple(out), dtype=np.int64)
    for a in range(n):
        starts = _intervals(u[:, :, order[a]], spatial[a], out[a], k[a], np_dtype)  # (N,C,o)
        sh_start = [N, C] + [1] * n + [1] * n
        sh_start[2 + n + a] = out[a]
        sh_tap = [1, 1] + [1] * n + [1] * n
        sh_tap[2 + a] = k[a]
        pos += (starts.reshape(sh_start) + np.arange(k[a]).reshape(sh_tap)) * strides[a]
    pos = pos.reshape(N, C, K * L)
    idx = _tensor_create.tensor(pos, device=x.device)
    cand = x.reshape(N, C, -1).gather(2, idx).reshape(N, C, K, L)
    best = cand.argmax(axis=2, keepdims=True)
    y = cand.gather(2, best).reshape(N, C, *out)
    where = idx.reshape(N, C, K, L).gather(2, best).reshape(N, C, *out)
    if unbatched:
        y, where = y.reshape(*y.shape[1:]), where.reshape(*where.shape[1:])
    return (y, where) if return_indices else y


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Max over pseudo-random (kH, kW) windows of (N, C, H, W) to output_size (or
    int(size * output_ratio)); return_indices: each maximum's flat h*W + w."""
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples, 2, "fractional_max_pool2d")


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, True, _random_samples,
                       2, "fractional_max_pool2d")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Max over pseudo-random (kT, kH, kW) windows of (N, C, T, H, W)."""
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples, 3, "fractional_max_pool3d")


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, True, _random_samples,
                       3, "fractional_max_pool3d")


class _FractionalMaxPoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        self.kernel_size = _ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n)
        self.output_ratio = _ntuple(output_ratio, n)
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = fractional_max_pool2d if self._n == 2 else fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, H, W) (Graham, 2014)."""
    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, T, H, W)."""
    _n = 3


FUNCTIONS = {f.__name__: f for f in (
    fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
    fractional_max_pool3d_with_indices)}
