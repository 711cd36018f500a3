"""pygpu.data: datasets and loaders with torch.utils.data's interface (also importable as
pygpu.utils.data, so `from torch.utils.data import DataLoader` reads the same after
`import pygpu as torch`).

Dataset/TensorDataset/Subset/ConcatDataset/random_split are the dataset protocol
(dataset.py); default_collate joins samples (collate.py). DataLoader cuts a dataset into
batches; arrays and TensorDatasets take the fast path, each batch sliced in one op and put
on the training device, the next ones copied asynchronously from reused pinned staging
buffers while the current one trains (loader.py); other datasets are gathered item by item
(fetch.py), by worker processes when num_workers > 0 (workers.py, worker.py). A sampler decides the order of the samples in an epoch (sampler.py);
DistributedSampler gives each rank of a distributed job its share (distributed.py)."""
from . import distributed
from .collate import default_collate, default_convert
from .dataset import (ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .loader import DataLoader
from .worker import WorkerInfo, get_worker_info
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "Subset",
           "ConcatDataset", "random_split", "default_collate", "default_convert",
           "DistributedSampler", "Sampler", "RandomSampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "get_worker_info",
           "WorkerInfo"]
