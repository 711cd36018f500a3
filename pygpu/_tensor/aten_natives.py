"""ATen's native_* ops and SyncBatchNorm's kernels at torch's level, with ATen's
signatures and results: native_layer_norm (output, mean, rstd), native_dropout (output,
mask), native_norm (the norm of a sparse tensor's values), and batch_norm_stats,
batch_norm_elemt, batch_norm_gather_stats(_with_counts), batch_norm_backward_reduce,
batch_norm_backward_elemt and batch_norm_update_stats: the per-channel pieces PyTorch's
SyncBatchNorm (torch/nn/modules/_functions.py) is made of.

PyTorch runs the SyncBatchNorm pieces only on CUDA (its CPU build has no kernel); here they
are tensor ops on any device. The statistics merge is Chan's parallel formula (each
worker's count, mean and 1/std -> the global mean and biased variance), as PyTorch's
kernel computes it; running statistics take the unbiased variance."""
import builtins

from .. import _C, _dtype

Tensor = _C.Tensor


def _channels(x):
    """(N, C, *) -> (C, N * prod(*)): each channel's values in a row."""
    return x.transpose(0, 1).reshape(x.shape[1], -1)


def _view(v, ndim):
    return v.reshape(1, -1, *([1] * (ndim - 2)))


def _check(fn, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.ndim < 2:
        raise RuntimeError(f"{fn}: expected an input of at least 2 dimensions (N, C, ...), got "
                           f"{list(input.shape)}")


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(layer_norm's output, mean, rstd): mean and 1/sqrt(var + eps) over the normalized
    dims, kept as size-1 dims (input's leading shape, then ones)."""
    from ..nn import functional as F
    shape = tuple(int(s) for s in normalized_shape)
    k = len(shape)
    if tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    out = F.layer_norm(input, shape, weight, bias, eps)
    dims = list(builtins.range(input.ndim - k, input.ndim))
    x = input.detach()
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    return out, mean, (var + eps).rsqrt()


def native_dropout(input, p, train):
    """(output, mask): the kept elements scaled by 1 / (1 - p) and the bool mask of what was
    kept (train False or None: input and a mask of ones)."""
    from .create import ones, rand
    if not train:
        return input.clone(), ones(tuple(input.shape), dtype=_dtype.bool_, device=input.device)
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    keep = rand(*input.shape, device=input.device) >= p
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return input * keep.astype(input.dtype) * scale, keep


def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The p-norm of a sparse COO tensor's values (ATen's native_norm is a sparse kernel:
    a strided tensor is refused, as PyTorch refuses it)."""
    from ..sparse import SparseTensor
    if not isinstance(input, SparseTensor):
        raise NotImplementedError("Could not run 'aten::native_norm' with arguments from the "
                                  "'CPU' backend: native_norm takes a sparse COO tensor")
    v = input.coalesce()._values()
    if dtype is not None:
        v = v.to(dtype)
    if dim is None:
        return v.norm(p)
    return input.to_dense().norm(p, dim, keepdim)


def batch_norm_stats(input, eps):
    """(mean, invstd) per channel of this worker's batch: invstd = 1/sqrt(biased var + eps)."""
    _check("batch_norm_stats", input)
    x = _channels(input.detach())
    mean = x.mean(1)
    var = ((x - mean.unsqueeze(1)) ** 2).mean(1)
    return mean, (var + eps).rsqrt()


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    """(input - mean) * invstd * weight + bias, per channel."""
    _check("batch_norm_elemt", input)
    n = input.ndim
    out = (input - _view(mean, n)) * _view(invstd, n)
    if weight is not None:
        out = out * _view(weight, n)
    if bias is not None:
        out = out + _view(bias, n)
    return out


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                        momentum, eps, counts):
    """(global mean, global invstd) from each worker's (mean (W, C), invstd (W, C), counts
    (W,)); running_mean and running_var (if given) updated in place with momentum, the
    variance unbiased by the total count. Workers with count 0 take no part."""
    c = counts.astype(mean.dtype).reshape(-1, 1)  # (W, 1)
    total = c.sum(0)  # (1,)
    g_mean = (mean * c).sum(0) / total
    var_w = invstd ** -2 - eps
    m2 = (c * (var_w + (mean - g_mean) ** 2)).sum(0)
    var = m2 / total
    if running_mean is not None:
        running_mean.mul_(1.0 - momentum).add_(g_mean.astype(running_mean.dtype) * momentum)
    if running_var is not None:
        unbiased = m2 / (total - 1.0)
        running_var.mul_(1.0 - momentum).add_(unbiased.astype(running_var.dtype) * momentum)
    return g_mean, (var + eps).rsqrt()


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps,
                            count):
    """batch_norm_gather_stats_with_counts with every worker's count `count`."""
    from .create import full
    counts = full((mean.shape[0],), float(count), dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                               momentum, eps, counts)


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g,
                               bias_g):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel of this worker: sum dy,
    sum dy * (x - mean), sum_dy_xmu * invstd and sum_dy, each None when its flag is off."""
    _check("batch_norm_backward_reduce", input)
    dy = _channels(grad_out)
    xmu = _channels(input) - mean.unsqueeze(1)
    sum_dy = dy.sum(1)
    sum_dy_xmu = (dy * xmu).sum(1)
    return (sum_dy if input_g else None, sum_dy_xmu if input_g else None,
            sum_dy_xmu * invstd if weight_g else None, sum_dy if bias_g else None)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
                              count):
    """The input gradient from the all-reduced sums: (dy - sum_dy / N - (x - mean) *
    invstd^2 * sum_dy_xmu / N) * invstd * weight, N the total of the workers' counts."""
    _check("batch_norm_backward_elemt", input)
    n = input.ndim
    total = count.astype(grad_out.dtype).sum()
    mean_dy = _view(sum_dy, n) / total
    mean_dy_xmu = _view(sum_dy_xmu, n) / total
    inv = _view(invstd, n)
    g = (grad_out - mean_dy - (input - _view(mean, n)) * inv * inv * mean_dy_xmu) * inv
    return g * _view(weight, n) if weight is not None else g


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """(mean, biased var) per channel of input; running_mean and running_var (if given)
    updated in place with momentum (the variance unbiased)."""
    _check("batch_norm_update_stats", input)
    x = _channels(input.detach())
    n = x.shape[1]
    mean = x.mean(1)
    var = ((x - mean.unsqueeze(1)) ** 2).mean(1)
    if running_mean is not None:
        running_mean.mul_(1.0 - momentum).add_(mean.astype(running_mean.dtype) * momentum)
    if running_var is not None:
        unbiased = var * (n / max(n - 1, 1))
        running_var.mul_(1.0 - momentum).add_(unbiased.astype(running_var.dtype) * momentum)
    return mean, var


FUNCTIONS = {name: globals()[name] for name in (
    "native_layer_norm", "native_dropout", "native_norm", "batch_norm_stats",
    "batch_norm_elemt", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
    "batch_norm_backward_reduce", "batch_norm_backward_elemt", "batch_norm_update_stats")}
