"""The linear layer fused into cross-entropy, as PyTorch 2.13 has it:
nn.functional.linear_cross_entropy, nn.LinearCrossEntropyLoss and
nn.LinearCrossEntropyOptions (which asks for the chunked path).

Without options the loss is PyTorch's reference: cross_entropy(linear(input, W, b), target)
(K-dimensional weights (C, d_1..d_K, in) give K-dimensional logits). With options, for
int64 targets, no label smoothing and 2-d weights (PyTorch's conditions; otherwise its
warning and the reference), the batch is processed in chunks of batch_chunk_size rows (or
PyTorch's aspect-ratio rule: rows ~ in_features * factor): the forward keeps only each
row's loss, and the backward recomputes each chunk's logits to form its gradient
(softmax - one-hot, scaled by the class weight and the incoming gradient), so the
(batch, classes) logits never exist whole. acc_policy and acc_dtype choose PyTorch's
accumulation precision on low-precision inputs; pygpu accumulates in the input's dtype
(float32 and float64 here). Gradients reach input, linear_weight and linear_bias."""
import dataclasses
import math
import warnings

from .. import _C
from .._dtype import int64
from ..autograd.function import Function

Tensor = _C.Tensor
_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """How linear_cross_entropy chunks the batch: batch_chunk_size rows at a time (None:
    chunking_method's rule, "aspect_ratio[:k]": about k * in_features rows; "auto":
    "aspect_ratio:2"), allow_retain_graph (a second backward), acc_policy and acc_dtype
    (PyTorch's accumulation choices for low-precision inputs)."""
    allow_retain_graph: bool = False
    batch_chunk_size: int = None
    chunking_method: str = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and getattr(self.acc_dtype, "name", None) not in (
                "float16", "bfloat16", "float32", "float64"):
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, "
                             f"torch.float32, torch.float64}}, got {self.acc_dtype!r}. Pass "
                             f"acc_dtype=None to let the op pick automatically.")

    def rows(self, in_features):
        """The chunk's row count."""
        if self.batch_chunk_size is not None:
            return self.batch_chunk_size
        method = "aspect_ratio:2" if self.chunking_method in (None, "auto") else \
            self.chunking_method
        factor = int(method.partition(":")[2] or 1)
        return max(1, in_features * factor)


def _chunks(n, rows):
    return [(s, min(s + rows, n)) for s in range(0, n, rows)]


class _ChunkedLinearCrossEntropy(Function):
    """Per-row losses (N,) of x (N, in) @ W^T (+ b) against int64 targets, chunk by chunk;
    backward recomputes each chunk's logits."""

    @staticmethod
    def forward(ctx, x, W, b, target, weight, ignore_index, rows):
        losses = []
        for s, e in _chunks(x.shape[0], rows):
            z = x[s:e] @ W.t()
            if b is not None:
                z = z + b
            t = target[s:e]
            valid = t != ignore_index
            tc = _C.where(valid, t, 0).astype(int64)
            lse = z.logsumexp(1)
            picked = z.gather(1, tc.unsqueeze(1)).squeeze(1)
            scale = valid.astype(z.dtype)
            if weight is not None:
                scale = scale * weight.index_select(0, tc)
            losses.append((lse - picked) * scale)
        from .._tensor.join import cat
        ctx.save_for_backward(x, W, b, target, weight)
        ctx.ignore_index, ctx.rows = ignore_index, rows
        return cat(losses, 0) if losses else x.sum(1) * 0.0

    @staticmethod
    def backward(ctx, g):
        x, W, b, target, weight = ctx.saved_tensors
        ignore_index, rows = ctx.ignore_index, ctx.rows
        dxs, dW, db = [], None, None
        C = W.shape[0]
        from .._tensor.create import arange
        classes = arange(C, device=x.device).reshape(1, C)
        for s, e in _chunks(x.shape[0], rows):
            z = x[s:e] @ W.t()
            if b is not None:
                z = z + b
            t = target[s:e]
            valid = t != ignore_index
            tc = _C.where(valid, t, 0).astype(int64)
            scale = valid.astype(z.dtype) * g[s:e]
            if weight is not None:
                scale = scale * weight.index_select(0, tc)
            onehot = (classes == tc.unsqueeze(1)).astype(z.dtype)
            dz = (z.softmax(1) - onehot) * scale.unsqueeze(1)  # (rows, C)
            dxs.append(dz @ W)
            gw = dz.t() @ x[s:e]
            dW = gw if dW is None else dW + gw
            if b is not None:
                gb = dz.sum(0)
                db = gb if db is None else db + gb
        from .._tensor.join import cat
        dx = cat(dxs, 0) if dxs else x * 0.0
        return dx, dW, db, None, None, None, None


def _reference(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
               label_smoothing, batch_shape, num_classes, out_features):
    from .._ops._nn_losses import cross_entropy
    from .._ops._train import linear
    in_features = input.shape[-1]
    W, b = linear_weight, linear_bias
    if out_features:
        W = W.reshape(math.prod(out_features) * num_classes, in_features)
        if b is not None:
            b = b.reshape(math.prod(out_features) * num_classes)
    logits = linear(input, W, b).reshape(*batch_shape, num_classes, *out_features)
    return cross_entropy(logits, target, weight=weight, ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, weight=weight,
    reduction=reduction, ignore_index=ignore_index (None: no index ignored; -100 as
    cross_entropy's), label_smoothing=label_smoothing); chunked over the batch with
    options (LinearCrossEntropyOptions)."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batch_shape = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batch_shape:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batch_shape, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    chunked = (options is not None and reduction in ("mean", "sum", "none")
               and label_smoothing == 0.0 and target.dtype is int64 and not out_features)
    if options is not None and not chunked:
        warnings.warn(f"linear_cross_entropy: ``options`` ignored; chunked path needs "
                      f"reduction in {{'mean','sum','none'}}, label_smoothing == 0, "
                      f"target.dtype == int64, out_features == (). Got reduction={reduction!r}, "
                      f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}.", stacklevel=2)
    if not chunked:
        return _reference(input, linear_weight, target, linear_bias, weight, reduction,
                          ignore_index, label_smoothing, batch_shape, num_classes,
                          out_features)
    x = input if batch_shape else input.unsqueeze(0)
    t = target if batch_shape else target.reshape(1)
    losses = _ChunkedLinearCrossEntropy.apply(x, linear_weight, linear_bias, t, weight,
                                              ignore_index, options.rows(in_features))
    if reduction == "none":
        return losses if batch_shape else losses.reshape(())
    if reduction == "sum":
        return losses.sum()
    valid = t != ignore_index
    tc = _C.where(valid, t, 0).astype(int64)
    denom = valid.astype(losses.dtype)
    if weight is not None:
        denom = denom * weight.index_select(0, tc)
    return losses.sum() / denom.sum()
