"""pygpu.nn.parallel: DataParallel (one process, several devices) and
DistributedDataParallel (one process per device, over pygpu.distributed).

    data_parallel.py  DataParallel: scatter, resident replicas, gather
    distributed.py    DistributedDataParallel: parameter checks, broadcast, no_sync
    reducer.py        the Reducer both use: buckets, post-accumulate hooks, the thread
    comm.py           the communicators it reduces with: MPI host ring, NCCL, in-process
See docs/parallel.md."""
from .data_parallel import DataParallel, chunk_sizes, replicate
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "chunk_sizes", "replicate"]
