"""DistributedSampler: each rank's share of a data set's indices, as torch.utils.data's.

It lives in the data package, as torch.utils.data.distributed.DistributedSampler does,
and is reachable as pygpu.data.DistributedSampler, pygpu.data.distributed.DistributedSampler
and (for older code) pygpu.distributed.sampler.DistributedSampler.

The indices are (optionally) shuffled with a seed shared by every rank plus the epoch
(set_epoch), padded by repetition to a multiple of the number of replicas (or cut,
with drop_last), and rank r takes every num_replicas-th index starting at r. Pass it
to pygpu.data.DataLoader(..., sampler=...)."""
import numpy as np


class DistributedSampler:
    def __init__(self, n, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if hasattr(n, "__len__"):
            n = len(n)
        if num_replicas is None or rank is None:
            from ..distributed import get_rank, get_world_size, is_initialized
            if not is_initialized():
                raise RuntimeError("DistributedSampler needs num_replicas and rank, or an "
                                   "initialized process group (pygpu.distributed.init_process_group)")
            num_replicas = get_world_size() if num_replicas is None else num_replicas
            rank = get_rank() if rank is None else rank
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is not in [0, {num_replicas})")
        self.n, self.num_replicas, self.rank = int(n), int(num_replicas), int(rank)
        self.shuffle, self.seed, self.drop_last = shuffle, int(seed), drop_last
        self.epoch = 0
        if drop_last:
            self.num_samples = self.n // self.num_replicas
        else:
            self.num_samples = -(-self.n // self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch):
        """Reshuffle differently (and identically on every rank) for this epoch."""
        self.epoch = int(epoch)

    def indices(self):
        if self.shuffle:
            idx = np.random.default_rng(self.seed + self.epoch).permutation(self.n)
        else:
            idx = np.arange(self.n)
        if self.total_size > self.n:  # pad by repeating from the start
            reps = -(-self.total_size // max(self.n, 1))
            idx = np.tile(idx, reps)[:self.total_size]
        else:
            idx = idx[:self.total_size]
        return idx[self.rank:self.total_size:self.num_replicas]

    def __iter__(self):
        return iter(self.indices().tolist())

    def __len__(self):
        return self.num_samples
