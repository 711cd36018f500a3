"""Loss modules: CrossEntropyLoss (fused, stable softmax) and MSELoss."""
from . import functional as F
from .module import Module


class CrossEntropyLoss(Module):
    """loss(logits (N, C), labels (N,) int64). A label outside [0, C) is an error that
    names the label and the class count."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.reduction)


class MSELoss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)
