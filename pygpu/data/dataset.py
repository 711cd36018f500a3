"""Datasets with torch.utils.data's protocol: an object with __getitem__(i) and __len__().

Dataset is the base class (d1 + d2 gives a ConcatDataset); TensorDataset holds
tensors (or arrays) that share their first dimension and is what DataLoader's
fast path recognises: its batches are sliced from the tensors in one op, not
gathered item by item (see loader.py). Subset, ConcatDataset and random_split
compose datasets by index, as PyTorch's do."""
import bisect
import math
import numpy as np

from .. import _C

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "random_split"]


class Dataset:
    """Subclass it and write __getitem__(index) (and __len__, which DataLoader's default
    samplers need)."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclass it and write __iter__ (DataLoader batches it in order;
    it takes no sampler and no shuffle)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset):
    """Samples are the i-th rows of each tensor: dataset[i] == (t0[i], t1[i], ...).
    Tensors may be pygpu tensors (on any device) or NumPy arrays; all need the same
    first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        for k, t in enumerate(tensors):
            if not isinstance(t, (_C.Tensor, np.ndarray)):
                raise TypeError(f"TensorDataset: tensors[{k}] must be a pygpu.Tensor or a NumPy "
                                f"array, got {type(t).__name__}")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: tensors[{k}] is 0-d; every tensor needs a "
                                 "leading sample dimension")
        n = tensors[0].shape[0]
        if any(t.shape[0] != n for t in tensors):
            raise ValueError("Size mismatch between tensors: TensorDataset needs every tensor "
                             f"to have the same first dimension, got "
                             f"{[t.shape[0] for t in tensors]}")
        self.tensors = tuple(tensors)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of several datasets, one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"ConcatDataset: index {idx} is out of range for {len(self)} "
                             "samples")
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[d - 1] if d > 0 else 0
        return self.datasets[d][idx - start]


def random_split(dataset, lengths, generator=None):
    """Split `dataset` into non-overlapping Subsets of the given lengths, or of the given
    fractions of len(dataset) (which must sum to 1; the remainder goes round-robin to the
    first splits, as PyTorch does). The permutation comes from `generator` (a
    torch.Generator, or pygpu's int seed or NumPy Generator), else the default generator."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError(f"random_split: sum of input lengths ({sum(lengths)}) does not equal "
                         f"the length of the input dataset ({n})")
    from .sampler import as_generator, randperm
    perm = randperm(n, as_generator(generator)).tolist()
    out, offset = [], 0
    for k in lengths:
        out.append(Subset(dataset, perm[offset:offset + k]))
        offset += k
    return out
