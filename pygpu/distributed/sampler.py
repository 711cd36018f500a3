"""pygpu.distributed.sampler: where DistributedSampler used to live; it is now in the data
package (pygpu.data.DistributedSampler, as torch.utils.data.DistributedSampler)."""
from ..data.distributed import DistributedSampler

__all__ = ["DistributedSampler"]
