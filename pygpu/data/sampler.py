"""Samplers: which sample indices an epoch visits, in which order.

A sampler is any iterable of indices, re-iterated once per epoch, as in
torch.utils.data. A sampler with set_epoch(e) (RandomSampler here, the
DistributedSampler of pygpu.distributed) is told the epoch before each pass,
so a seeded shuffle differs per epoch yet is reproducible. Each takes a
dataset (its len) or a sample count, so PyTorch's RandomSampler(dataset) reads
the same. BatchSampler groups any sampler's indices into lists."""
import numpy as np


def _count(data_source):
    return len(data_source) if hasattr(data_source, "__len__") else int(data_source)


class Sampler:
    """Base class: subclass it and write __iter__ (and __len__)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., n-1 every epoch."""

    def __init__(self, data_source):
        self.data_source = data_source
        self.n = _count(data_source)

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class RandomSampler(Sampler):
    """A fresh permutation of range(n) per epoch; seed + epoch makes it reproducible.
    generator (PyTorch's name) may stand in for seed: an int, a NumPy Generator, or an
    object with initial_seed(). num_samples/replacement as in PyTorch."""

    def __init__(self, data_source, seed=None, *, replacement=False, num_samples=None,
                 generator=None):
        self.data_source = data_source
        self.n = _count(data_source)
        self.replacement = bool(replacement)
        self._num_samples = num_samples
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")
        if seed is None and generator is not None:
            if hasattr(generator, "initial_seed"):
                seed = int(generator.initial_seed())
            elif isinstance(generator, int):
                seed = generator
        self.seed = seed
        self.epoch = 0
        # no seed and no generator: each epoch's order is seeded from the default generator
        # (manual_seed), as PyTorch's RandomSampler draws its seed from torch's
        self._rng = generator if isinstance(generator, np.random.Generator) else None

    @property
    def num_samples(self):
        return self.n if self._num_samples is None else self._num_samples

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def permutation(self):
        if self.seed is not None:
            rng = np.random.default_rng((int(self.seed), self.epoch))
        elif self._rng is not None:
            rng = self._rng
        else:
            from .dataset import seed_from_default_generator
            rng = np.random.default_rng(seed_from_default_generator())
        if self.replacement:
            return rng.integers(0, self.n, size=self.num_samples)
        if self._num_samples is None:
            return rng.permutation(self.n)
        reps = -(-self.num_samples // max(self.n, 1))
        return np.concatenate([rng.permutation(self.n) for _ in range(reps)])[:self.num_samples]

    def __iter__(self):
        return iter(self.permutation().tolist())

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a fresh random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices = list(indices)
        from .dataset import _rng
        self._rng = _rng(generator)

    def __iter__(self):
        return iter([self.indices[i] for i in self._rng.permutation(len(self.indices))])

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler` (the last shorter unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, bool(drop_last)

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(int(i))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
