"""torch.distributed.optim: ZeroRedundancyOptimizer (each rank keeps the optimizer state of its
share of the parameters)."""
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
