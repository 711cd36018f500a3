"""pygpu.nn.utils: helpers over modules, as torch.nn.utils (prune: weight pruning)."""
from . import prune

__all__ = ["prune"]
