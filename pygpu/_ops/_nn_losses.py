"""nn.functional's losses with PyTorch's arguments, composed from differentiable tensor ops.

cross_entropy keeps its fused C op (softmax + NLL, one op each way) for the common
call (class indices, no weight, no label smoothing, no explicit ignore_index, mean or
sum); every other form is log_softmax followed by nll_loss, where picking each row's
target entry is one gather (an INDEX node), whose kernel checks every label on every device
(an IndexError naming it; asynchronous on a device, as the fused op's): no Python loop, no
device-type branch.

One difference from PyTorch: on the fused path a target equal to the default
ignore_index (-100) is an out-of-range label error, not an ignored sample; pass
ignore_index=-100 explicitly to have such targets ignored."""
from .. import _C
from .._dtype import int64
from ._common import want_tensor as _want_tensor
from ._common import widened as _widened
from ._losses import check_pair as _pair
from ._losses import check_target as _check_target
from ._losses import mse_loss  # noqa: F401 - nn.functional's, written once in _ops
from ._losses import reduced as _reduce
from ._losses import reduction_of as _reduction
from ._softmax import log_softmax as _log_softmax
from ._train import cross_entropy as _fused_cross_entropy



class _DefaultIgnore(int):
    """-100, PyTorch's default ignore_index, told apart from an explicit -100."""

    def __repr__(self):
        return "-100"


IGNORE_DEFAULT = _DefaultIgnore(-100)


def _class_last(x):
    """(N, C, d1, ...) -> (N*d1*..., C) with the class axis last; (C,) -> (1, C)."""
    if x.ndim == 1:
        return x.reshape(1, x.shape[0])
    if x.ndim == 2:
        return x
    perm = (0,) + tuple(range(2, x.ndim)) + (1,)
    return x.transpose(perm).reshape(-1, x.shape[1])


def _labels(t, ignore_index):
    """(the labels with the ignored ones replaced by class 0, the mask of the counted ones as
    0/1): every label a gather reads is then a class, or one its kernel refuses."""
    ignored = t == ignore_index
    return _C.where(ignored, 0, t), ignored


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities `input` (N, C) (or (C,), or (N, C, d...))
    at int64 class indices `target` (N,) (or (), or (N, d...)). weight (C,) rescales each
    class; targets equal to ignore_index count for nothing (mean divides by the weights of
    the rest)."""
    reduction = _reduction("nll_loss", reduction, size_average, reduce)
    _check_target(input, target, "nll_loss")
    if target.dtype != int64:
        raise TypeError(f"nll_loss: target must hold int64 class indices, got {target.dtype}")
    want = input.shape[:1] + input.shape[2:] if input.ndim >= 2 else ()
    if target.shape != want:
        raise ValueError(f"nll_loss: expected target of shape {want} for input "
                         f"{input.shape}, got {target.shape}")
    C = input.shape[1] if input.ndim >= 2 else input.shape[0]
    if weight is not None:
        _want_tensor(weight, "nll_loss", "weight")
        if weight.shape != (C,):
            raise _C.ShapeError(f"weight tensor should be defined either for all {C} classes or "
                                f"no classes but got weight tensor of shape: "
                                f"{list(weight.shape)}")
    logp = _class_last(input)
    t, ignored = _labels(target.reshape(-1), ignore_index)
    valid = _C.logical_not(ignored).astype(input.dtype)
    # each row's target entry is one gather, whose kernel checks every label on every device:
    # an IndexError naming it (on a device at the next read, as every asynchronous failure)
    picked = logp.gather(1, t.reshape(-1, 1)).reshape(-1)
    w = valid if weight is None else weight.astype(input.dtype).index_select(0, t) * valid
    losses = -(picked * w)
    if reduction == "none":
        return losses.reshape(*target.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / w.sum()


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=IGNORE_DEFAULT,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross-entropy of logits `input` (N, C) (or (C,), or (N, C, d...)) against int64
    class indices (N,) or class probabilities (same shape as input). weight, ignore_index,
    label_smoothing and reduction ("none", "mean", "sum") as PyTorch's."""
    reduction = _reduction("cross_entropy", reduction, size_average, reduce)
    _check_target(input, target, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing}")
    probs_target = target.dtype != int64
    if probs_target and target.shape != input.shape:
        raise TypeError(f"cross_entropy: target must hold int64 class indices (convert with "
                        f".astype(pygpu.int64)) or class probabilities shaped like input "
                        f"{input.shape}; got {target.dtype} of shape {target.shape}")
    fused = (not probs_target and weight is None and label_smoothing == 0.0 and
             ignore_index is IGNORE_DEFAULT and reduction != "none" and
             input.ndim == 2)
    if fused:
        return _fused_cross_entropy(input, target, reduction)
    C = input.shape[1] if input.ndim >= 2 else input.shape[0]
    logp = _widened(_log_softmax, input, 1 if input.ndim >= 2 else 0)
    eps = float(label_smoothing)
    if probs_target:
        if target.shape != input.shape:
            raise _C.ShapeError(f"cross_entropy: class-probability targets must have the input's "
                             f"shape {input.shape}, got {target.shape}")
        lp, tp = _class_last(logp), _class_last(target.astype(input.dtype))
        if eps:
            tp = tp * (1.0 - eps) + eps / C
        if weight is not None:
            tp = tp * weight.astype(input.dtype)
        losses = -(lp * tp).sum(axis=1)
        if reduction == "none":
            return losses.reshape(*(input.shape[:1] + input.shape[2:])) if input.ndim >= 2 \
                else losses.reshape(())
        return losses.sum() if reduction == "sum" else losses.sum() / (
            losses.shape[0] if input.ndim >= 2 else 1)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not eps:
        return nll
    lp = _class_last(logp)
    t = target.reshape(-1)
    valid = (t != ignore_index).astype(input.dtype)
    if weight is not None:
        smooth = -(lp * weight.astype(input.dtype)).sum(axis=1) * valid
    else:
        smooth = -lp.sum(axis=1) * valid
    if reduction == "none":
        smooth = smooth.reshape(*target.shape)
    elif reduction == "sum":
        smooth = smooth.sum()
    elif weight is not None:
        labels, _ = _labels(t, ignore_index)
        smooth = smooth.sum() / (weight.astype(input.dtype).index_select(0, labels) * valid).sum()
    else:
        smooth = smooth.sum() / valid.sum()
    return nll * (1.0 - eps) + smooth * (eps / C)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|, reduced."""
    reduction = _reduction("l1_loss", reduction, size_average, reduce)
    _pair(input, target, "l1_loss")
    return _reduce(_C.abs(input - target), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    reduction = _reduction("smooth_l1_loss", reduction, size_average, reduce)
    _pair(input, target, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    d = _C.abs(input - target)
    if beta == 0:
        return _reduce(d, reduction)
    small = (d < beta).astype(d.dtype)
    return _reduce(small * (d * d * (0.5 / beta)) + (1.0 - small) * (d - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    reduction = _reduction("huber_loss", reduction)
    _pair(input, target, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    d = _C.abs(input - target)
    small = (d < delta).astype(d.dtype)
    return _reduce(small * (d * d * 0.5) + (1.0 - small) * ((d - 0.5 * delta) * delta),
                   reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)) for probabilities x; each log is clamped at -100,
    as PyTorch's."""
    reduction = _reduction("binary_cross_entropy", reduction, size_average, reduce)
    _pair(input, target, "binary_cross_entropy")
    log_x = _C.maximum(_C.log(input), -100.0)
    log_1mx = _C.maximum(_C.log(1.0 - input), -100.0)
    loss = -(target * log_x + (1.0 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(x), t) computed stably from the logits x:
    (1 - t) x + (1 + (pos_weight - 1) t) (log(exp(-m) + exp(-x - m)) + m), m = max(-x, 0)."""
    reduction = _reduction("binary_cross_entropy_with_logits", reduction, size_average, reduce)
    _pair(input, target, "binary_cross_entropy_with_logits")
    m = _C.maximum(-input, 0.0)
    softplus_neg = _C.log(_C.exp(-m) + _C.exp(-input - m)) + m
    if pos_weight is not None:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * softplus_neg
    else:
        loss = (1.0 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input) pointwise (input holds log-probabilities; 0 where
    target is 0), or exp(t) (t - input) with log_target. reduction "batchmean" divides
    the sum by the batch size (the mathematically correct KL); "mean" by every element."""
    if reduction == "batchmean":
        _pair(input, target, "kl_div")
        red = "sum"
    else:
        red = _reduction("kl_div", reduction, size_average, reduce)
        _pair(input, target, "kl_div")
    if log_target:
        loss = _C.exp(target) * (target - input)
    else:
        zero = (target == 0).astype(target.dtype)
        loss = target * (_C.log(target + zero) - input)  # xlogy: 0 log 0 = 0
    out = _reduce(loss, red)
    if reduction == "batchmean" and input.ndim:
        return out / input.shape[0]
    return out
