"""Dropout, and Dropout1d/2d/3d (whole channels), over nn.functional (the identity in eval())."""
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


class Dropout1d(Dropout):
    """Zero whole channels of (N, C, L) or (C, L) in training (nn.functional.dropout1d)."""

    def forward(self, x):
        return F.dropout1d(x, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Zero whole channels of (N, C, H, W) or (C, H, W) in training (nn.functional.dropout2d)."""

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) (nn.functional.dropout3d)."""

    def forward(self, x):
        return F.dropout3d(x, self.p, self.training, self.inplace)
