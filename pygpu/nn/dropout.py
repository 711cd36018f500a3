"""Dropout, Dropout1d/2d/3d (whole channels) and AlphaDropout, over nn.functional (the identity in
eval())."""
from . import functional as F
from .module import Module


class Dropout(Module):
    """Zero elements with probability p in training (scaling the rest by 1/(1-p));
    the identity in eval()."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class _DropoutNd(Dropout):
    _fn = None

    def forward(self, x):
        return type(self)._fn(x, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) with probability p in training."""
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) with probability p in training."""
    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) with probability p in training."""
    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalizing mean and variance."""
    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels (one draw per sample and channel)."""
    _fn = staticmethod(F.feature_alpha_dropout)
