"""Samplers: which sample indices an epoch visits, in which order.

A sampler is any iterable of indices, re-iterated once per epoch, as in
torch.utils.data. The random ones draw from a torch.Generator (pygpu/_random.py) given as
generator=, whose stream goes on from pass to pass, or from the default generator (so
manual_seed fixes the order), lazily, a chunk at a time. A sampler with set_epoch(e)
(RandomSampler with pygpu's seed=, the DistributedSampler) is told the epoch before each
pass, so a seeded shuffle differs per epoch yet is reproducible. Each takes a dataset (its
len) or a sample count, so PyTorch's RandomSampler(dataset) reads the same. BatchSampler
groups any sampler's indices into lists."""
import numbers

import numpy as np

from .._tensor import create as _tensor_create
from .._dtype import float64, int64
from .._random import Generator


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


def as_generator(generator):
    """What generator= may be: None, a torch.Generator (pygpu's), and pygpu's extras: an int
    seed or any object with initial_seed() (a Generator of the seed), or a NumPy Generator
    (kept: its own draws)."""
    if generator is None or isinstance(generator, (Generator, np.random.Generator)):
        return generator
    if isinstance(generator, numbers.Integral):
        return Generator().manual_seed(int(generator))
    if hasattr(generator, "initial_seed"):
        return Generator().manual_seed(int(generator.initial_seed()))
    raise TypeError(f"generator must be a torch.Generator (or an int seed, or a "
                    f"numpy.random.Generator), got {type(generator).__name__}")


def randperm(n, generator):
    """A permutation of range(n) as a NumPy array, from a Generator (or None: the default
    one) or a NumPy Generator."""
    if isinstance(generator, np.random.Generator):
        return generator.permutation(n)
    return _tensor_create.randperm(n, generator=generator).numpy()


def randint(n, size, generator):
    if isinstance(generator, np.random.Generator):
        return generator.integers(0, n, size=size)
    return _tensor_create.randint(0, n, (size,), generator=generator).numpy()


def epoch_generator():
    """A Generator seeded from the default generator, as PyTorch's RandomSampler makes one
    per epoch when it was given none: manual_seed fixes every epoch's order."""
    seed = int(_tensor_create.empty((), dtype=int64).random_().item())
    return Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """Samples in random order: a fresh permutation of the dataset each pass (num_samples
    past len(dataset): more permutations, the last cut), or, with replacement, num_samples
    uniform draws. Drawn lazily, a chunk at a time, as PyTorch's: num_samples=int(1e10)
    allocates nothing up front. From `generator` (a torch.Generator; its stream goes on from
    epoch to epoch), else from a Generator seeded per pass from the default generator.
    pygpu's extra: seed=, with set_epoch, for a reproducible order per epoch."""

    _CHUNK = 1 << 16  # indices drawn at a time (PyTorch draws 32; the stream is the same)

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None, *,
                 seed=None):
        self.data_source = data_source
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = as_generator(generator)
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or \
                self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")
        self.seed = seed
        self.epoch = 0

    @property
    def n(self):
        return _count(self.data_source)

    @property
    def num_samples(self):
        return self.n if self._num_samples is None else self._num_samples

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def _generator(self):
        if self.seed is not None:  # pygpu's seed=: one order per (seed, epoch)
            return np.random.default_rng((int(self.seed), self.epoch))
        return self.generator if self.generator is not None else epoch_generator()

    def chunks(self):
        """The pass's indices as NumPy arrays, drawn as they are asked for."""
        n, total, g = self.n, self.num_samples, self._generator()
        if self.replacement:
            for start in range(0, total, self._CHUNK):
                yield randint(n, min(self._CHUNK, total - start), g)
            return
        for _ in range(total // n):
            yield randperm(n, g)
        if total % n:
            yield randperm(n, g)[:total % n]

    def permutation(self):
        """The whole pass at once (as a NumPy array)."""
        parts = list(self.chunks())
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def __iter__(self):
        for chunk in self.chunks():
            yield from chunk.tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a fresh random order each pass (from generator, else from the
    default generator)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = as_generator(generator)

    def __iter__(self):
        for i in randperm(len(self.indices), self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices into `weights`, index i with probability weights[i] / sum
    (with replacement by default; without, each index at most once), by multinomial."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or \
                num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        from .._tensor.compat import as_tensor
        w = as_tensor(weights, dtype=float64)
        if len(w.shape) != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        self.weights, self.num_samples, self.replacement = w, num_samples, replacement
        self.generator = as_generator(generator)

    def __iter__(self):
        from ..distributions.discrete import multinomial
        g = self.generator
        if isinstance(g, np.random.Generator):
            g = Generator().manual_seed(int(g.integers(2 ** 63)))
        yield from multinomial(self.weights, self.num_samples, self.replacement,
                               generator=g).tolist()

    def __len__(self):
        return self.num_samples


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
