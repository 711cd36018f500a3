"""Loss modules, each a thin Module over nn.functional's loss of the same name with
PyTorch's constructor arguments (weight, ignore_index, label_smoothing, reduction, ...).
CrossEntropyLoss's common form runs the fused softmax-cross-entropy op."""
from . import functional as F
from .._ops._nn_losses import IGNORE_DEFAULT, _reduction
from .module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = _reduction(type(self).__name__, reduction, size_average, reduce)


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """loss(logits (N, C), target (N,) int64 class indices or (N, C) probabilities).
    With the defaults, one fused op each way; a label outside [0, C) is an error that names
    the label and the class count."""

    def __init__(self, weight=None, size_average=None, ignore_index=IGNORE_DEFAULT, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__()
        self.reduction = reduction if reduction == "batchmean" else \
            _reduction("KLDivLoss", reduction, size_average, reduce)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


# ---- the margin, embedding and likelihood losses (issue 43): nn.functional's in
# pygpu/nn/_losses_margin.py, with PyTorch's constructor arguments ----------------------

class NLLLoss2d(NLLLoss):
    """The deprecated name of NLLLoss for (N, C, H, W) inputs, which NLLLoss takes."""


class MarginRankingLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SoftMarginLoss(_Loss):
    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.ndim}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                 reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class CTCLoss(_Loss):
    """The connectionist temporal classification loss (F.ctc_loss): forward(log_probs,
    targets, input_lengths, target_lengths)."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class LinearCrossEntropyLoss(_WeightedLoss):
    """PyTorch 2.13's fused linear + cross-entropy loss: its own Linear (in_features ->
    num_classes * prod(out_features), stored flat as PyTorch's) and
    F.linear_cross_entropy (pygpu/nn/_linear_cross_entropy.py), chunked with options."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        import math
        from .layers import Linear
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features) * num_classes,
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        w = self.linear.weight.reshape(self.num_classes, *self.out_features,
                                       self.linear.in_features)
        b = (self.linear.bias.reshape(self.num_classes, *self.out_features)
             if self.linear.bias is not None else None)
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
