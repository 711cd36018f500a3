"""torch's top-level names for other backends' convolution, normalization, sampling and
pooling kernels (cudnn_*, miopen_*, mkldnn_*), and ATen's native_batch_norm, each with
ATen's signature (aten/src/ATen/native/native_functions.yaml) and argument checks.

In PyTorch each of these names one library's kernel for one math: cudnn_convolution is
the convolution computed by cuDNN, miopen_convolution the same computed by MIOpen,
mkldnn_max_pool2d max pooling computed by oneDNN. pygpu has one node per math (CONV, POOL,
BATCH_NORM, csrc/core/pg_ops_conv.c and friends), run by each device's backend: so each
name here runs its math on pygpu's node, on any device (cuda convolutions run on cuDNN
where it is loaded, pygpu/backends/cudnn.py). What is backend-specific in PyTorch stays
PyTorch's where it shows in the result: cudnn_batch_norm returns a `reserve` tensor
(uint8; empty, pygpu's node keeps no workspace), cudnn_grid_sampler is bilinear with zero
padding and aligned corners (cuDNN's only mode), cudnn_affine_grid_generator aligns
corners. Where PyTorch refuses a dense tensor (the mkldnn_* pools take MKLDNN-layout
tensors), pygpu, which has no MKLDNN layout, takes the dense tensor and returns one."""
import builtins

from .. import _C

Tensor = _C.Tensor


def _F():
    from ..nn import functional
    return functional


def _ints(v, fn, name, pos):
    """An ATen int[] argument: a list or tuple of ints (a bare int is ATen's TypeError)."""
    if isinstance(v, (list, tuple)) and all(isinstance(i, int) for i in v):
        return [int(i) for i in v]
    raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be tuple of ints, not "
                    f"{type(v).__name__}")


def _tensor(t, fn, name, pos, optional=False):
    if t is None and optional:
        return None
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(t).__name__}")
    return t


def _conv(fn, x, weight, bias, stride, padding, dilation, groups, transposed=False,
          output_padding=None):
    """torch.convolution with ATen's per-dimension lists; an empty list is the default
    (stride 1, padding 0, dilation 1) for every spatial dimension, as ATen expands it."""
    _tensor(x, fn, "self", 1)
    _tensor(weight, fn, "weight", 2)
    n = weight.ndim - 2
    if n < 1:
        raise RuntimeError(f"{fn}: expected weight of at least 3 dimensions, got "
                           f"{list(weight.shape)}")

    def full(v, default):
        return [default] * n if not v else (v * n if len(v) == 1 else v)
    from .spellings import convolution
    return convolution(x, weight, bias, full(stride, 1), full(padding, 0), full(dilation, 1),
                       transposed, full(output_padding or [], 0), groups)


# ---- convolutions: (self, weight[, bias], lists, groups[, algorithm flags]) ----------------

def cudnn_convolution(self, weight, padding, stride, dilation, groups, benchmark,
                      deterministic, allow_tf32):
    """ATen's cudnn_convolution: the convolution without bias, computed by pygpu's CONV node
    on self's device (cuDNN on cuda where loaded). benchmark, deterministic and allow_tf32
    choose among cuDNN's algorithms in PyTorch; pygpu.backends.cudnn's switches do here."""
    fn = "cudnn_convolution"
    return _conv(fn, self, weight, None, _ints(stride, fn, "stride", 4),
                 _ints(padding, fn, "padding", 3), _ints(dilation, fn, "dilation", 5), groups)


def cudnn_convolution_transpose(self, weight, padding, output_padding, stride, dilation,
                                groups, benchmark, deterministic, allow_tf32):
    """ATen's cudnn_convolution_transpose: the transposed convolution without bias, on
    pygpu's CONV node."""
    fn = "cudnn_convolution_transpose"
    return _conv(fn, self, weight, None, _ints(stride, fn, "stride", 5),
                 _ints(padding, fn, "padding", 3), _ints(dilation, fn, "dilation", 6), groups,
                 True, _ints(output_padding, fn, "output_padding", 4))


def _conv_relu(fn, self, weight, bias, stride, padding, dilation, groups, z=None, alpha=None):
    """relu(conv(self, weight) + bias [+ alpha * z]): the fused kernels' math."""
    _tensor(bias, fn, "bias", 3 if z is None else 5, optional=True)
    y = _conv(fn, self, weight, bias, _ints(stride, fn, "stride", 4 if z is None else 6),
              _ints(padding, fn, "padding", 5 if z is None else 7),
              _ints(dilation, fn, "dilation", 6 if z is None else 8), groups)
    if z is not None:
        _tensor(z, fn, "z", 3)
        if tuple(z.shape) != tuple(y.shape):
            raise RuntimeError(f"{fn}: z of shape {list(z.shape)} must match the convolution's "
                               f"output shape {list(y.shape)}")
        y = y + (z if alpha is None or alpha == 1 else z * alpha)
    return _C.relu(y)


def cudnn_convolution_relu(self, weight, bias, stride, padding, dilation, groups):
    """ATen's cudnn_convolution_relu: relu(conv(self, weight) + bias), as cuDNN's fused
    kernel computes it, on pygpu's CONV node and a relu."""
    return _conv_relu("cudnn_convolution_relu", self, weight, bias, stride, padding, dilation,
                      groups)


def cudnn_convolution_add_relu(self, weight, z, alpha, bias, stride, padding, dilation,
                               groups):
    """ATen's cudnn_convolution_add_relu: relu(conv(self, weight) + bias + alpha * z)
    (alpha None: 1), as cuDNN's fused kernel computes it, on pygpu's CONV node."""
    return _conv_relu("cudnn_convolution_add_relu", self, weight, bias, stride, padding,
                      dilation, groups, z, alpha)


def miopen_convolution_relu(self, weight, bias, stride, padding, dilation, groups):
    """ATen's miopen_convolution_relu (MIOpen's fused kernel): relu(conv + bias)."""
    return _conv_relu("miopen_convolution_relu", self, weight, bias, stride, padding, dilation,
                      groups)


def miopen_convolution_add_relu(self, weight, z, alpha, bias, stride, padding, dilation,
                                groups):
    """ATen's miopen_convolution_add_relu (MIOpen's fused kernel): relu(conv + bias +
    alpha * z)."""
    return _conv_relu("miopen_convolution_add_relu", self, weight, bias, stride, padding,
                      dilation, groups, z, alpha)


def _with_bias(fn, self, weight, bias, padding, stride, dilation, groups):
    _tensor(bias, fn, "bias", 3, optional=True)
    return _conv(fn, self, weight, bias, _ints(stride, fn, "stride", 5),
                 _ints(padding, fn, "padding", 4), _ints(dilation, fn, "dilation", 6), groups)


def miopen_convolution(self, weight, bias, padding, stride, dilation, groups, benchmark,
                       deterministic):
    """ATen's miopen_convolution: the convolution (with bias) MIOpen computes on ROCm, on
    pygpu's CONV node."""
    return _with_bias("miopen_convolution", self, weight, bias, padding, stride, dilation,
                      groups)


def miopen_depthwise_convolution(self, weight, bias, padding, stride, dilation, groups,
                                 benchmark, deterministic):
    """ATen's miopen_depthwise_convolution: the grouped convolution MIOpen's depthwise kernel
    computes (groups == input channels in PyTorch's use), on pygpu's CONV node."""
    return _with_bias("miopen_depthwise_convolution", self, weight, bias, padding, stride,
                      dilation, groups)


def mkldnn_convolution(self, weight, bias, padding, stride, dilation, groups):
    """ATen's mkldnn_convolution: the convolution (with bias) oneDNN computes on the CPU, on
    pygpu's CONV node (any device). Dense tensors in and out, as PyTorch's; oneDNN's dtypes
    (no float64, as PyTorch refuses it)."""
    from .._dtype import float64
    if isinstance(self, Tensor) and self.dtype is float64:
        raise RuntimeError("itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor "
                           "input")
    return _with_bias("mkldnn_convolution", self, weight, bias, padding, stride, dilation,
                      groups)


def miopen_convolution_transpose(self, weight, bias, padding, output_padding, stride,
                                 dilation, groups, benchmark, deterministic):
    """ATen's miopen_convolution_transpose: the transposed convolution (with bias), on
    pygpu's CONV node."""
    fn = "miopen_convolution_transpose"
    _tensor(bias, fn, "bias", 3, optional=True)
    return _conv(fn, self, weight, bias, _ints(stride, fn, "stride", 6),
                 _ints(padding, fn, "padding", 4), _ints(dilation, fn, "dilation", 7), groups,
                 True, _ints(output_padding, fn, "output_padding", 5))


# ---- batch normalization -------------------------------------------------------------------

def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """ATen's native_batch_norm: (output, save_mean, save_invstd). Training: the batch's mean
    and 1/sqrt(biased var + eps) per channel, running stats updated in place (unbiased var);
    evaluation: the running stats normalize and both saved tensors are empty."""
    _tensor(input, "native_batch_norm", "input", 1)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    out = _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                          eps)
    C = input.shape[1]
    like = weight if weight is not None else input
    if not training:
        from .create import empty
        return out, empty(0, dtype=like.dtype, device=input.device), \
            empty(0, dtype=like.dtype, device=input.device)
    dims = [0] + list(builtins.range(2, input.ndim))
    x = input.detach()
    mean = x.mean(dims)
    var = ((x - mean.reshape(1, C, *([1] * (input.ndim - 2)))) ** 2).mean(dims)
    return out, mean, (var + eps).rsqrt()


def _checked_bn(fn, input, weight):
    _tensor(input, fn, "input", 1)
    _tensor(weight, fn, "weight", 2)  # cuDNN and MIOpen require the affine weight


def cudnn_batch_norm(input, weight, bias, running_mean, running_var, training,
                     exponential_average_factor, epsilon):
    """ATen's cudnn_batch_norm: (output, save_mean, save_invstd, reserve), the batch norm
    cuDNN computes, on pygpu's BATCH_NORM node. reserve is cuDNN's workspace in PyTorch
    (uint8); pygpu's node keeps none, so it is empty."""
    _checked_bn("cudnn_batch_norm", input, weight)
    out, mean, invstd = native_batch_norm(input, weight, bias, running_mean, running_var,
                                          training, exponential_average_factor, epsilon)
    from .create import empty
    from .._dtype import uint8
    return out, mean, invstd, empty(0, dtype=uint8, device=input.device)


def miopen_batch_norm(input, weight, bias, running_mean, running_var, training,
                      exponential_average_factor, epsilon):
    """ATen's miopen_batch_norm: (output, save_mean, save_invstd), the batch norm MIOpen
    computes, on pygpu's BATCH_NORM node."""
    _checked_bn("miopen_batch_norm", input, weight)
    return native_batch_norm(input, weight, bias, running_mean, running_var, training,
                             exponential_average_factor, epsilon)


# ---- sampling ------------------------------------------------------------------------------

def cudnn_grid_sampler(self, grid):
    """ATen's cudnn_grid_sampler: cuDNN's spatial transformer sampler, which is grid_sample
    with bilinear interpolation, zero padding and align_corners=True on 4-d input."""
    _tensor(self, "cudnn_grid_sampler", "self", 1)
    _tensor(grid, "cudnn_grid_sampler", "grid", 2)
    if self.ndim != 4:
        raise RuntimeError(f"cudnn_grid_sampler: expected 4D input, but got input with sizes "
                           f"{list(self.shape)}")
    from ..nn import _grid_sample
    return _grid_sample.grid_sampler(self, grid, 0, 0, True)


def cudnn_affine_grid_generator(theta, N, C, H, W):
    """ATen's cudnn_affine_grid_generator: cuDNN's grid (N, H, W, 2) of the affine maps
    theta (N, 2, 3), corners aligned (cuDNN's convention)."""
    _tensor(theta, "cudnn_affine_grid_generator", "theta", 1)
    if theta.ndim != 3 or tuple(theta.shape) != (N, 2, 3):
        raise RuntimeError(f"cudnn_affine_grid_generator: expected theta of size [{N}, 2, 3], "
                           f"but got {list(theta.shape)}")
    from ..nn import _grid_sample
    return _grid_sample.affine_grid_generator(theta, [N, C, H, W], True)


# ---- pooling -------------------------------------------------------------------------------

def _pool_list(v, n, fn, name, pos, default):
    v = _ints(list(v) if isinstance(v, tuple) else ([v] if isinstance(v, int) else v), fn,
              name, pos)
    if not v:
        return default
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(f"{fn}: {name} must be a single int or a tuple of {n} ints, got {v}")
    return v


def _mkldnn_max_pool(n, fn, self, kernel_size, stride, padding, dilation, ceil_mode):
    _tensor(self, fn, "self", 1)
    if self.ndim != n + 2:
        raise RuntimeError(f"{fn}: expected a {n + 2}-D input (N, C, ...), got "
                           f"{list(self.shape)}")
    k = _pool_list(kernel_size, n, fn, "kernel_size", 2, None)
    if k is None:
        raise RuntimeError(f"{fn}: kernel_size must be given")
    s = _pool_list(stride, n, fn, "stride", 3, k)
    p = _pool_list(padding, n, fn, "padding", 4, [0] * n)
    d = _pool_list(dilation, n, fn, "dilation", 5, [1] * n)
    pool = _F().max_pool2d if n == 2 else _F().max_pool3d
    return pool(self, k, s, p, d, ceil_mode)


def mkldnn_max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """ATen's mkldnn_max_pool2d: oneDNN's 2-d max pooling, on pygpu's POOL node (a dense
    tensor in and out: pygpu has no MKLDNN layout)."""
    return _mkldnn_max_pool(2, "mkldnn_max_pool2d", self, kernel_size, stride, padding,
                            dilation, ceil_mode)


def mkldnn_max_pool3d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """ATen's mkldnn_max_pool3d: oneDNN's 3-d max pooling (a dense tensor in and out)."""
    return _mkldnn_max_pool(3, "mkldnn_max_pool3d", self, kernel_size, stride, padding,
                            dilation, ceil_mode)


def mkldnn_adaptive_avg_pool2d(self, output_size):
    """ATen's mkldnn_adaptive_avg_pool2d: oneDNN's adaptive average pooling, which takes only
    output sizes that divide the input's (so every window has the same size), on pygpu's
    POOL node (a dense tensor in and out)."""
    fn = "mkldnn_adaptive_avg_pool2d"
    _tensor(self, fn, "self", 1)
    out = _pool_list(output_size, 2, fn, "output_size", 2, None)
    if self.ndim != 4 or out is None:
        raise RuntimeError(f"{fn}: expected a 4-D input and 2 output sizes, got input "
                           f"{list(self.shape)}")
    if any(o <= 0 or s % o for s, o in zip(self.shape[2:], out)):
        raise RuntimeError("input size is not divisible by the output size is not supported yet")
    return _F().adaptive_avg_pool2d(self, out)


def mkldnn_linear_backward_weights(grad_output, input, weight, bias_defined):
    """ATen's (grad_weight, grad_bias) of linear, oneDNN's inner_product_backward_weights:
    grad_output (*, out) and input (*, in) flattened to rows; grad_weight = g^T x (out, in)
    in weight's dtype, grad_bias = g summed over rows (out,), or a 0-d zero when
    bias_defined is False. Dense tensors in and out (PyTorch's take its mkldnn layout, which
    pygpu does not have); oneDNN's dtypes, so float64 is refused as PyTorch's conversion
    refuses it."""
    fn = "mkldnn_linear_backward_weights"
    for i, (t, name) in enumerate(((grad_output, "grad_output"), (input, "input"),
                                   (weight, "weight")), 1):
        _tensor(t, fn, name, i)
    from .._dtype import float64
    if float64 in (grad_output.dtype, input.dtype):
        raise RuntimeError("dense_to_mkldnn expects float, bfloat16, half, uint8, int8 tensor "
                           "input")
    g = grad_output.reshape(-1, grad_output.shape[-1])
    x = input.reshape(-1, input.shape[-1])
    if g.shape[0] != x.shape[0]:
        raise RuntimeError(f"mkldnn_linear_backward_weights: grad_output {list(g.shape)} and "
                           f"input {list(x.shape)} have different numbers of rows")
    grad_weight = g.t().matmul(x).to(weight.dtype)
    grad_bias = g.sum(0) if bias_defined else g.new_zeros(())
    return grad_weight, grad_bias


def cudnn_is_acceptable(self):
    """Whether cuDNN would take this tensor: a float cuda tensor, with cuDNN enabled and
    loadable (pygpu.backends.cudnn), as ATen's cudnn_is_acceptable asks."""
    _tensor(self, "cudnn_is_acceptable", "self", 1)
    from ..backends import cudnn
    return cudnn.is_acceptable(self)


FUNCTIONS = {name: globals()[name] for name in (
    "cudnn_convolution", "cudnn_convolution_transpose", "cudnn_convolution_relu",
    "cudnn_convolution_add_relu", "miopen_convolution", "miopen_convolution_transpose",
    "miopen_depthwise_convolution", "miopen_convolution_relu", "miopen_convolution_add_relu",
    "mkldnn_convolution", "native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm",
    "cudnn_grid_sampler", "cudnn_affine_grid_generator", "mkldnn_max_pool2d",
    "mkldnn_max_pool3d", "mkldnn_adaptive_avg_pool2d", "cudnn_is_acceptable",
    "mkldnn_linear_backward_weights")}
