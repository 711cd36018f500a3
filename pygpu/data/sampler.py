"""Samplers: which sample indices an epoch visits, in which order.

A sampler is any iterable of indices, re-iterated once per epoch, as in
torch.utils.data. A sampler with set_epoch(e) (RandomSampler here, the
DistributedSampler of pygpu.distributed) is told the epoch before each pass,
so a seeded shuffle differs per epoch yet is reproducible."""
import numpy as np


class SequentialSampler:
    """0, 1, ..., n-1 every epoch."""

    def __init__(self, n):
        self.n = int(n)

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class RandomSampler:
    """A fresh permutation of range(n) per epoch; seed + epoch makes it reproducible."""

    def __init__(self, n, seed=None):
        self.n = int(n)
        self.seed = seed
        self.epoch = 0
        self._rng = np.random.default_rng() if seed is None else None

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def permutation(self):
        rng = self._rng if self.seed is None else np.random.default_rng((int(self.seed), self.epoch))
        return rng.permutation(self.n)

    def __iter__(self):
        return iter(self.permutation().tolist())

    def __len__(self):
        return self.n
