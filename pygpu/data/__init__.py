"""pygpu.data: feeding batches to a device.

DataLoader cuts (X, y) into batches and puts each on the training device,
copying the next ones asynchronously from reused pinned staging buffers while
the current one trains (see loader.py). A sampler decides the order of the
samples in an epoch (see sampler.py); the distributed layer adds its own."""
from .loader import DataLoader
from .sampler import RandomSampler, SequentialSampler

__all__ = ["DataLoader", "RandomSampler", "SequentialSampler"]
