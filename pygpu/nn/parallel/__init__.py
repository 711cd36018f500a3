"""pygpu.nn.parallel: DataParallel (one process, several devices) and
DistributedDataParallel (one process per device, over pygpu.distributed)."""
from .data_parallel import DataParallel, chunk_sizes, replicate
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "chunk_sizes", "replicate"]
