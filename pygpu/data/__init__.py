"""pygpu.data: feeding batches to a device.

DataLoader cuts (X, y) into batches and puts each on the training device,
copying the next ones asynchronously from reused pinned staging buffers while
the current one trains (see loader.py). A sampler decides the order of the
samples in an epoch (see sampler.py); DistributedSampler gives each rank of a
distributed job its share (see distributed.py; as torch.utils.data's, it is
also reachable as pygpu.data.distributed.DistributedSampler)."""
from . import distributed
from .distributed import DistributedSampler
from .loader import DataLoader
from .sampler import RandomSampler, SequentialSampler

__all__ = ["DataLoader", "DistributedSampler", "RandomSampler", "SequentialSampler"]
