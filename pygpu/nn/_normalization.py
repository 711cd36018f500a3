"""nn.functional's layer_norm, batch_norm, embedding and one_hot, from tensor ops.

layer_norm and batch_norm are means and variances over axes (biased variance for
normalizing; batch_norm's running_var takes the unbiased one, as PyTorch's), recorded
by autograd. layer_norm over the last axis alone is one fused node where the backend
has it (pygpu._train_ops.layer_norm_rows: cpu and sim), with its backward written out. one_hot compares the indices with arange(C); embedding multiplies that
one-hot matrix by the weight, so its gradient (one_hot^T @ grad) lands on the rows used
and on no other, with no gather kernel (an index_select would be cheaper for a large
vocabulary; the result is the same)."""
import numbers

from .. import _C, _creation
from .._dtype import float32, float64, int64
from .._train_ops import _float_input, _want_tensor, layer_norm_rows
from ..autograd import no_grad


def one_hot(tensor, num_classes=-1):
    """int64 indices (...) -> int64 (..., num_classes) with a 1 at each index.
    num_classes=-1 takes max(index) + 1 (which reads the indices: one small d2h copy on
    a device)."""
    _want_tensor(tensor, "one_hot")
    if tensor.dtype != int64:
        raise TypeError(f"one_hot is only applicable to index tensor of dtype int64, got "
                        f"{tensor.dtype}")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min().item()) < 0 or
                           int(tensor.max().item()) >= num_classes):
        raise RuntimeError(f"one_hot: class values must be in [0, {num_classes})")
    cols = _creation.arange(num_classes, device=tensor.device)
    return (tensor.reshape(*tensor.shape, 1) == cols).astype(int64)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over the last len(normalized_shape) axes, then
    * weight + bias (each of normalized_shape)."""
    _float_input(input, "layer_norm")
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if input.shape[input.ndim - k:] != normalized_shape:
        raise RuntimeError(f"layer_norm: input of shape {input.shape} does not end with "
                           f"normalized_shape {list(normalized_shape)}")
    if k == 1 and input.dtype in (float32, float64) and all(
            t is None or (t.dtype == input.dtype and t.ndim == 1) for t in (weight, bias)):
        return layer_norm_rows(input, weight, bias, eps)  # one node where the backend has it
    axes = tuple(range(input.ndim - k, input.ndim))
    mean = input.mean(axis=axes, keepdims=True)
    d = input - mean
    var = (d * d).mean(axis=axes, keepdims=True)
    out = d / _C.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalize (N, C) or (N, C, L) per channel C: with the batch's statistics when
    training (updating running_mean/running_var in place with `momentum`; running_var
    takes the unbiased variance), with the running ones otherwise."""
    _float_input(input, "batch_norm")
    if input.ndim not in (2, 3):
        raise ValueError(f"batch_norm: expected 2D or 3D input (N, C) or (N, C, L), got "
                         f"{input.ndim}D input of shape {input.shape}")
    C = input.shape[1]
    bshape = (1, C) + (1,) * (input.ndim - 2)
    axes = (0,) if input.ndim == 2 else (0, 2)
    if training:
        count = input.numel() // C
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.shape}")
        mean = input.mean(axis=axes, keepdims=True)
        d = input - mean
        var = (d * d).mean(axis=axes, keepdims=True)
        if running_mean is not None and running_var is not None:
            with no_grad():
                m = float(momentum)
                running_mean.copy_(running_mean * (1.0 - m) +
                                   mean.detach().reshape(C).astype(running_mean.dtype) * m)
                unbiased = var.detach().reshape(C) * (count / (count - 1))
                running_var.copy_(running_var * (1.0 - m) +
                                  unbiased.astype(running_var.dtype) * m)
        out = d / _C.sqrt(var + eps)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: evaluation needs running_mean and running_var "
                             "(or pass training=True)")
        out = (input - running_mean.reshape(*bshape)) / _C.sqrt(running_var.reshape(*bshape)
                                                               + eps)
    if weight is not None:
        out = out * weight.reshape(*bshape)
    if bias is not None:
        out = out + bias.reshape(*bshape)
    return out


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight (V, D) at int64 indices input (...) -> (..., D). The row at
    padding_idx is returned but receives no gradient. sparse=True is accepted: the gradient
    is still a dense tensor, zero in the rows no index looked up (optim.SparseAdam
    updates only the other rows)."""
    _want_tensor(input, "embedding")
    _want_tensor(weight, "embedding", "weight")
    if input.dtype != int64:
        raise TypeError(f"embedding: indices must be int64, got {input.dtype}")
    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("embedding: max_norm and scale_grad_by_freq are not supported")
    V, D = weight.shape
    idx = input.reshape(-1)
    cols = _creation.arange(V, device=input.device)
    hot = (idx.reshape(idx.shape[0], 1) == cols).astype(weight.dtype)  # (M, V)
    if padding_idx is not None:
        padding_idx = padding_idx % V
        pad = (idx == padding_idx).astype(weight.dtype).reshape(idx.shape[0], 1)
        out = (hot * (1.0 - pad)) @ weight + (hot * pad) @ weight.detach()
    else:
        out = hot @ weight
    return out.reshape(*input.shape, D)
