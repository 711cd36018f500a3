"""PyTorch's other spellings of what pygpu has, and its small process-wide names:

- the torch.* function forms of in-place methods (torch.exp_(x), torch.sigmoid_(x), ...) and
  of nn.functional's ops, with ATen's argument order (torch.dropout(input, p, train),
  torch.embedding(weight, indices), torch.batch_norm(input, weight, bias, running_mean,
  running_var, training, momentum, eps, cudnn_enabled), a loss's reduction as ATen's
  int: 0 none, 1 mean, 2 sum, ...);
- the window functions (hann, hamming, blackman, bartlett, kaiser), computed on the device;
- rsub, range (deprecated, inclusive end), frombuffer (sharing the buffer), empty_strided,
  get_device, typename, set_default_tensor_type (deprecated), the deterministic debug mode,
  warn_always, the interop thread count, has_lapack/has_mkl/has_openmp/has_spectral,
  GradScaler, is_distributed (False), slice_inverse (as_strided with the base's geometry);
- Tensor properties of PyTorch's other backends and layouts (is_mps, is_xla, is_nested,
  is_quantized, ...: False for every pygpu tensor), layout, H, mH, adjoint,
  const_data_ptr, new_empty_strided.
Each is a call of an op pygpu already runs: no kernel lives here."""
import math
import warnings

from .. import _C, _defaults, _dtype
from . import create as _tensor_create

Tensor = _C.Tensor

# torch.<name>_(input, ...) -> input.<name>_(...), where the Tensor method exists
_INPLACE = ("abs", "acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
            "arctanh", "asin", "asinh", "atan", "atanh", "ceil", "clamp", "clip", "cos", "cosh",
            "deg2rad", "detach", "erf", "erfc", "exp2", "exp", "expm1", "fix", "floor", "frac",
            "i0", "ldexp", "log10", "log1p", "log2", "log", "neg", "negative", "rad2deg",
            "reciprocal", "relu", "round", "rsqrt", "sigmoid", "sin", "sinc", "sinh", "sqrt",
            "square", "tan", "tanh", "trunc", "xlogy", "zero", "fill")


def _inplace_function(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name + "_")(*args, **kwargs)
    fn.__name__ = name + "_"
    fn.__doc__ = f"torch.{name}_(input, ...): input.{name}_(...), in place."
    return fn


def fill(input, value):
    """A new tensor of input's shape, dtype and device filled with value."""
    return input.clone().fill_(value)


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(r):
    return _REDUCTIONS[r] if isinstance(r, int) else r


def _F():
    from ..nn import functional
    return functional


# ---- nn.functional's ops at torch's top level, with ATen's signatures ---------------------

def dropout(input, p, train):
    return _F().dropout(input, p, train)


def dropout_(input, p, train):
    return input.copy_(_F().dropout(input, p, train))


def alpha_dropout(input, p, train):
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return input.copy_(_F().alpha_dropout(input, p, train))


def feature_dropout(input, p, train):
    """Whole channels of (N, C, *) dropped (dropout2d's kind, any rank)."""
    if not train or p == 0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = (_tensor_create.rand(*shape, device=input.device) >= p).astype(input.dtype)
    return input * keep * (1.0 / (1.0 - p)) if p < 1 else input * 0.0


def feature_dropout_(input, p, train):
    return input.copy_(feature_dropout(input, p, train))


def feature_alpha_dropout(input, p, train):
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return input.copy_(_F().feature_alpha_dropout(input, p, train))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return _F().group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F().embedding(indices, weight, None if padding_idx == -1 else padding_idx)


def kl_div(input, target, reduction=1, *, log_target=False):
    return _F().kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction=1):
    return _F().binary_cross_entropy_with_logits(input, target, weight,
                                                 reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
                        reduction=1):
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction(reduction))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu(input, lower, upper, training, inplace=True)


def threshold(input, threshold, value):
    return _F().threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _F().threshold(input, threshold, value, inplace=True)


def selu(input):
    return _F().selu(input)


def selu_(input):
    return _F().selu(input, inplace=True)


def celu(input, alpha=1.0):
    return _F().celu(input, alpha)


def celu_(input, alpha=1.0):
    return _F().celu(input, alpha, inplace=True)


def prelu(input, weight):
    return _F().prelu(input, weight)


def hardshrink(input, lambd=0.5):
    return _F().hardshrink(input, lambd)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _F().rms_norm(input, normalized_shape, weight, eps)


def bilinear(input1, input2, weight, bias=None):
    return _F().bilinear(input1, input2, weight, bias)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2.0):
    return _F().pdist(input, p)


def constant_pad_nd(input, pad, value=0):
    return _F().pad(input, pad, "constant", value)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """torch.convolution: the 1-, 2- or 3-d convolution (or its transpose) weight's rank
    names, every argument given."""
    n = weight.ndim - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"Expected 3D, 4D or 5D weight for convolution, but got weight of "
                           f"size {list(weight.shape)}")
    F = _F()
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad=0):
    """torch.conv_tbc: nn.functional.conv_tbc (one conv1d in time-batch-channel order)."""
    return _F().conv_tbc(input, weight, bias, pad)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(group_norm's output, each group's mean (N, group), each group's 1/std (N, group))."""
    x = input.reshape(N, group, -1)
    if x.shape[2] != (C // group) * HxW:
        raise RuntimeError(f"Expected input of {N * C * HxW} elements for N={N}, C={C}, "
                           f"HxW={HxW}, got {list(input.shape)}")
    mean = x.mean(-1)
    var = (x * x).mean(-1) - mean * mean
    out = _F().group_norm(input, group, weight, bias, eps)
    return out, mean, (var.clamp(min=0) + eps).rsqrt()


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    from ..nn import _grid_sample
    return _grid_sample.grid_sampler(input, grid, interpolation_mode, padding_mode,
                                     align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.ndim != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes "
                           f"{list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.ndim != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, but got input with sizes "
                           f"{list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta, size, align_corners):
    from ..nn import _grid_sample
    return _grid_sample.affine_grid_generator(theta, size, align_corners)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    from .._ops._ctc_loss import torch_ctc_loss
    return torch_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
                          zero_infinity)


def native_channel_shuffle(input, groups):
    return _F().native_channel_shuffle(input, groups)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return _F().max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode,
                           True)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return _F().avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    return _F().adaptive_max_pool1d(input, output_size, True)


def pixel_shuffle(input, upscale_factor):
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return _F().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    return _F().channel_shuffle(input, groups)


# ---- the recurrent cells at torch's level (ATen's rnn_tanh_cell, lstm_cell, ...) ---------

def _gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    g = input @ w_ih.t() + hx @ w_hh.t()
    if b_ih is not None:
        g = g + b_ih
    if b_hh is not None:
        g = g + b_hh
    return g


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _C.tanh(_gates(input, hx, w_ih, w_hh, b_ih, b_hh))


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _C.relu(_gates(input, hx, w_ih, w_hh, b_ih, b_hh))


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """(h', c') of one LSTM step from (h, c) = hx, gates in PyTorch's i, f, g, o order."""
    h, c = hx
    i, f, g, o = _gates(input, h, w_ih, w_hh, b_ih, b_hh).chunk(4, -1)
    c2 = _C.sigmoid(f) * c + _C.sigmoid(i) * _C.tanh(g)
    return _C.sigmoid(o) * _C.tanh(c2), c2


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step, gates in PyTorch's r, z, n order (n's hidden part inside r's product)."""
    gi = input @ w_ih.t() + (b_ih if b_ih is not None else 0.0)
    gh = hx @ w_hh.t() + (b_hh if b_hh is not None else 0.0)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = _C.sigmoid(i_r + h_r)
    z = _C.sigmoid(i_z + h_z)
    n = _C.tanh(i_n + r * h_n)
    return (1.0 - z) * n + z * hx


# ---- windows ------------------------------------------------------------------------------

def _window(name, window_length, periodic, dtype, device, requires_grad, body):
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dt = _defaults.dtype() if dtype is None else _dtype.to_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length == 0:
        out = _tensor_create.empty(0, dtype=dt, device=device)
    elif window_length == 1:
        out = _tensor_create.ones(1, dtype=dt, device=device)
    else:
        m = window_length + 1 if periodic else window_length
        n = _tensor_create.arange(window_length, dtype=_dtype.float64, device=device)
        out = body(n, m - 1).astype(dt)
    return out.requires_grad_(True) if requires_grad else out


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (M - 1)), M = N + 1 when periodic."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d: 0.5 - 0.5 * _C.cos(n * (2 * math.pi / d)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """alpha - beta cos(2 pi n / (M - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d: float(alpha) - float(beta) * _C.cos(n * (2 * math.pi / d)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d: 0.42 - 0.5 * _C.cos(n * (2 * math.pi / d))
                   + 0.08 * _C.cos(n * (4 * math.pi / d)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """1 - |2 n / (M - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, d: 1.0 - _C.abs(n * (2.0 / d) - 1.0))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2 n / (M - 1) - 1)^2)) / I0(beta)."""
    def body(n, d):
        r = n * (2.0 / d) - 1.0
        arg = _C.sqrt(_C.maximum(1.0 - r * r, 0.0)) * float(beta)
        return _C.i0(arg) / float(_C.i0(_tensor_create.tensor(float(beta),
                                                              dtype=_dtype.float64)).item())
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   body)


# ---- small functions and process-wide names ---------------------------------------------

def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    return other - input * alpha if alpha != 1 else other - input


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad=False):  # noqa: A001 - torch.range
    """Deprecated: start, start + step, ..., up to end included, in the default float dtype."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    n = int(math.floor((end - start) / step)) + 1
    dt = _defaults.dtype() if dtype is None else _dtype.to_dtype(dtype)
    vals = _tensor_create.arange(max(n, 0), dtype=_dtype.float64, device=device) * step + start
    result = vals.astype(dt)
    if out is not None:
        return out.copy_(result)
    return result.requires_grad_(True) if requires_grad else result


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor over the buffer's memory (shared, as PyTorch's: writes show in both)."""
    import numpy as np
    dt = _dtype.to_dtype(dtype)
    if dt.numpy is None:
        raise TypeError(f"frombuffer: {dt} has no NumPy dtype to read the buffer as")
    mv = memoryview(buffer)
    if mv.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting it "
                      "to a tensor. This type of warning will be suppressed for the rest of "
                      "this program.", UserWarning, stacklevel=2)
    nbytes = mv.nbytes
    if offset < 0 or offset > nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({nbytes} bytes) minus 1")
    if count == 0 or (count < 0 and nbytes - offset < dt.itemsize):
        raise ValueError("both buffer length and count must be greater than 0")
    arr = np.frombuffer(buffer, dtype=dt.numpy, count=count, offset=offset)
    t = _C.from_numpy(arr)
    return t.requires_grad_(True) if requires_grad else t


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor with the given strides (over just enough memory)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    span = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    base = _tensor_create.empty(max(span, 0), dtype=dtype, device=device)
    t = _C._as_strided(base, size, stride, 0)
    return t.requires_grad_(True) if requires_grad else t


def get_device(input):
    return input.get_device()


def typename(obj):
    """'torch.FloatTensor' for a tensor, else the object's module and qualified name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def set_default_tensor_type(t):
    """Deprecated: a legacy type (or its name) as the default dtype (and, for a device's
    type, the default device)."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    from .. import _legacy
    dt, device_type = _legacy.parse_type(t)
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _defaults.set_default_dtype(dt)
    if device_type is not None and device_type != "cpu":
        _defaults.set_default_device(device_type)


_modes = {"debug": 0, "warn_always": False, "interop": None}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """'default' (0), 'warn' (1) or 'error' (2): kept and reported; pygpu's kernels are
    deterministic for a device and thread count (use_deterministic_algorithms)."""
    from . import compat as _tensor_compat
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    _modes["debug"] = debug_mode
    _tensor_compat.use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    from . import compat as _tensor_compat
    if not _tensor_compat.are_deterministic_algorithms_enabled():
        return 0
    return 1 if _tensor_compat.is_deterministic_algorithms_warn_only_enabled() else 2


def set_warn_always(b):
    """Warnings PyTorch gives once a process may be given every time; kept and reported."""
    _modes["warn_always"] = bool(b)


def is_warn_always_enabled():
    return _modes["warn_always"]


def set_num_interop_threads(nthreads):
    """Kept and reported: pygpu runs independent ops on the devices' own queues (sim, cuda),
    not on an inter-op pool."""
    if not isinstance(nthreads, int) or nthreads <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _modes["interop"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _modes["interop"] = nthreads


def get_num_interop_threads():
    return _modes["interop"] or _C.get_num_threads()


# ---- Tensor: other backends' and layouts' properties, and small methods -------------------

def _false(self):
    return False


def _layout(self):
    from ..sparse import strided
    return strided


def _h(self):
    if self.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor.")
    return self.t() if self.ndim == 2 else self


def adjoint(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {self.ndim}-D tensor.")
    return self.transpose(-2, -1)


def is_distributed(self):
    """False: a pygpu tensor lives whole on one device, as every tensor PyTorch's
    is_distributed is asked about (its sharded tensors are torch.distributed's DTensor)."""
    if not isinstance(self, Tensor):
        raise TypeError(f"is_distributed(): argument 'self' (position 1) must be Tensor, not "
                        f"{type(self).__name__}")
    return False


def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    """The inverse of slicing (functionalization's view replay): self's storage viewed with
    src's geometry (sizes, strides, offset), where self = src[start:end:step] along dim was
    sliced from it. The slice arguments are the slice's record; the view is as_strided's."""
    if not isinstance(self, Tensor) or not isinstance(src, Tensor):
        raise TypeError("slice_inverse(): self and src must be Tensors")
    return self.as_strided(tuple(src.shape), tuple(src.stride()), src.storage_offset())


def const_data_ptr(self):
    return self.data_ptr()


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      layout=None, pin_memory=False):
    return empty_strided(size, stride, dtype=dtype or self.dtype,
                         device=device or self.device, requires_grad=requires_grad)


_BACKEND_FLAGS = ("is_mps", "is_xla", "is_xpu", "is_ipu", "is_maia", "is_mtia", "is_vulkan",
                  "is_mkldnn", "is_nested", "is_sparse_csr", "is_quantized")

METHODS = {flag: property(_false) for flag in _BACKEND_FLAGS}
METHODS.update(layout=property(_layout), H=property(_h), mH=property(adjoint),
               adjoint=adjoint, const_data_ptr=const_data_ptr,
               new_empty_strided=new_empty_strided, hardshrink=hardshrink,
               is_distributed=is_distributed, slice_inverse=slice_inverse)

FUNCTIONS = {name + "_": _inplace_function(name) for name in _INPLACE}
FUNCTIONS.update({name: globals()[name] for name in (
    "fill", "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout",
    "feature_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "layer_norm",
    "group_norm", "batch_norm", "instance_norm", "embedding", "kl_div",
    "binary_cross_entropy_with_logits", "hinge_embedding_loss", "margin_ranking_loss",
    "poisson_nll_loss", "triplet_margin_loss", "cosine_embedding_loss", "rrelu", "rrelu_",
    "threshold", "threshold_", "selu", "selu_", "celu", "celu_", "prelu", "hardshrink",
    "rms_norm", "bilinear", "cosine_similarity", "pairwise_distance", "pdist",
    "constant_pad_nd", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "conv3d",
    "conv_transpose3d", "max_pool3d", "convolution", "conv_tbc", "native_group_norm",
    "native_channel_shuffle", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
    "affine_grid_generator", "ctc_loss",
    "max_pool1d", "max_pool2d", "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d",
    "adaptive_max_pool1d", "pixel_shuffle", "pixel_unshuffle", "rnn_tanh_cell", "rnn_relu_cell",
    "lstm_cell", "gru_cell", "channel_shuffle", "hann_window", "hamming_window",
    "blackman_window", "bartlett_window", "kaiser_window", "rsub", "range", "frombuffer",
    "empty_strided", "get_device", "typename", "set_default_tensor_type",
    "set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_warn_always",
    "is_warn_always_enabled", "set_num_interop_threads", "get_num_interop_threads", "adjoint",
    "is_distributed", "slice_inverse")})


def constants():
    """torch's module-level names that are not functions."""
    from ..amp import GradScaler
    from ..sparse import _Layout
    # has_spectral: torch.fft runs (pocketfft on the cpu, cuFFT on cuda: pygpu/fft)
    return {"has_lapack": True, "has_mkl": False, "has_openmp": False, "has_spectral": True,
            "GradScaler": GradScaler,
            "layout": _Layout}
