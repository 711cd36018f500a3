"""nn.functional's margin, embedding and likelihood losses, with PyTorch's formulas and
arguments: margin_ranking_loss, hinge_embedding_loss, soft_margin_loss,
multilabel_soft_margin_loss, multi_margin_loss, multilabel_margin_loss,
cosine_embedding_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
poisson_nll_loss, gaussian_nll_loss. Each is elementwise ops and reductions that autograd
records; picking a sample's target class is a product with a one-hot mask, no gather."""
import math

from .. import _C
from .._tensor import create as _tensor_create
from .._ops._clamp import clamp
from .._ops._common import want_tensor as _want_tensor
from .._ops._losses import reduced as _reduce
from .._ops._losses import reduction_of as _reduction
from ._distance import pairwise_distance
from ._pointwise import logsigmoid


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = _reduction("margin_ranking_loss", reduction, size_average, reduce)
    _want_tensor(input1, "margin_ranking_loss")
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same "
                           f"dimension but got sizes: input1: {input1.shape}, input2: "
                           f"{input2.shape}, target: {target.shape} ")
    loss = clamp(-target * (input1 - input2) + float(margin), min=0.0)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1."""
    reduction = _reduction("hinge_embedding_loss", reduction, size_average, reduce)
    _want_tensor(input, "hinge_embedding_loss")
    zeros = input * 0.0
    margin_clamp = clamp(float(margin) - input, min=0.0)
    output_margin = _C.where(target != 1, margin_clamp, zeros)
    output_self = _C.where(target != -1, input, zeros)
    return _reduce(output_margin + output_self, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    reduction = _reduction("soft_margin_loss", reduction, size_average, reduce)
    _want_tensor(input, "soft_margin_loss")
    return _reduce(-logsigmoid(target * input), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), averaged over the classes."""
    reduction = _reduction("multilabel_soft_margin_loss", reduction, size_average, reduce)
    _want_tensor(input, "multilabel_soft_margin_loss")
    loss = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def _one_hot(target, C, like):
    cols = _tensor_create.arange(C, device=like.device)
    return (target.reshape(-1, 1) == cols).astype(like.dtype)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])**p (* weight[y]), divided by C."""
    reduction = _reduction("multi_margin_loss", reduction, size_average, reduce)
    _want_tensor(input, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input.reshape(1, -1) if input.ndim <= 1 else input
    C = x.shape[1]
    hot = _one_hot(target, C, x)
    picked = (x * hot).sum(1, keepdim=True)
    z = clamp(float(margin) - picked + x, min=0.0) * (1.0 - hot)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * (hot @ weight.astype(x.dtype)).reshape(-1, 1)
    loss = z.sum(1) / C
    if input.ndim <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each sample, its target classes are target's entries up to the first -1: the sum
    over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])), over C."""
    reduction = _reduction("multilabel_margin_loss", reduction, size_average, reduce)
    _want_tensor(input, "multilabel_margin_loss")
    x = input.reshape(1, -1) if input.ndim <= 1 else input
    t = target.reshape(1, -1) if target.ndim <= 1 else target
    N, C = x.shape
    valid = (t >= 0).astype(x.dtype)
    valid = valid.cumprod(1)  # entries after the first -1 do not count
    tt = clamp(t, min=0)
    hot = (_one_hot(tt, C, x).reshape(N, C, C) * valid.unsqueeze(-1)).amax(1)  # (N, C) targets
    xj = x.unsqueeze(2)  # (N, C, 1): target class j
    xi = x.unsqueeze(1)  # (N, 1, C): other class i
    pair = hot.unsqueeze(2) * (1.0 - hot).unsqueeze(1)
    loss = (clamp(1.0 - (xj - xi), min=0.0) * pair).sum((1, 2)) / C
    if input.ndim <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    reduction = _reduction("cosine_embedding_loss", reduction, size_average, reduce)
    _want_tensor(input1, "cosine_embedding_loss")
    eps = 1e-12
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / _C.sqrt(mag1 * mag2)
    zeros = cos * 0.0
    pos = _C.where(target == 1, 1.0 - cos, zeros)
    neg = _C.where(target == -1, clamp(cos - float(margin), min=0.0), zeros)
    return _reduce(pos + neg, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0), d the p-norm pairwise distance (swap: d(a, n) is
    min(d(a, n), d(p, n)))."""
    reduction = _reduction("triplet_margin_loss", reduction, size_average, reduce)
    _want_tensor(anchor, "triplet_margin_loss")
    dims = {anchor.ndim, positive.ndim, negative.ndim}
    if len(dims) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _C.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(clamp(d_pos - d_neg + float(margin), min=0.0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance_function (default pairwise_distance)."""
    reduction = _reduction("triplet_margin_with_distance_loss", reduction)
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = _C.minimum(d_neg, dist(positive, negative))
    return _reduce(clamp(d_pos - d_neg + float(margin), min=0.0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """exp(input) - target * input (log_input), or input - target * log(input + eps); full
    adds Stirling's target * log(target) - target + log(2 pi target) / 2 where target > 1."""
    reduction = _reduction("poisson_nll_loss", reduction, size_average, reduce)
    _want_tensor(input, "poisson_nll_loss")
    if log_input:
        loss = _C.exp(input) - target * input
    else:
        loss = input - target * _C.log(input + float(eps))
    if full:
        t = target
        big = (t > 1).astype(input.dtype)
        safe = t * big + (1.0 - big)  # 1 where target <= 1: its term is 0
        stirling = safe * _C.log(safe) - safe + 0.5 * _C.log(safe * (2 * math.pi))
        loss = loss + stirling * big
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log(max(var, eps)) + (input - target)**2 / max(var, eps)) / 2 (+ log(2 pi) / 2 with
    full); var may have one axis fewer (or a last axis of 1): one variance per sample."""
    reduction = _reduction("gaussian_nll_loss", reduction)
    _want_tensor(input, "gaussian_nll_loss")
    if not isinstance(var, _C.Tensor):
        var = _tensor_create.full((), float(var), dtype=input.dtype, device=input.device)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1) \
                and var.ndim != 0:
            raise ValueError("var is of incorrect size")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    # clamped as PyTorch's, in place under no_grad: the value is max(var, eps), the gradient
    # flows to var as if it were not clamped
    v = var + (clamp(var.detach(), min=float(eps)) - var.detach())
    loss = 0.5 * (_C.log(v) + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


FUNCTIONS = {name: globals()[name] for name in (
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "cosine_embedding_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
    "poisson_nll_loss", "gaussian_nll_loss")}
