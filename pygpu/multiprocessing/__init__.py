"""torch.multiprocessing: Python's multiprocessing, with pygpu tensors passed between
processes through shared memory, as PyTorch's are.

Everything of the standard module is here (Process, Queue, SimpleQueue, Pool, Pipe,
get_context, set_start_method, ...), plus spawn/start_processes (pygpu/multiprocessing/
spawn.py) and the sharing strategy. Importing pygpu registers the reductions
(reductions.py) with multiprocessing's ForkingPickler, so a cpu tensor put on a Queue, or
given to a Process started with 'spawn' or 'forkserver', moves into shared memory
(Tensor.share_memory_) and reaches the other process as a handle to the same pages: a write
on either side is seen on both, as with PyTorch's "file_descriptor" strategy. A sim or cuda
tensor travels by value (pickled: pygpu has no CUDA IPC handles), and Module.share_memory()
leaves those where they are. A program that sets up torch.distributed in the processes it
spawns gets them as ranks of one MPI job (mpi_job.py), so init_process_group finds them."""
import multiprocessing

from multiprocessing import *  # noqa: F401,F403 - torch.multiprocessing re-exports it all

from . import reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,  # noqa: F401
                    ProcessRaisedException, SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "spawn", "SpawnContext", "start_processes", "ProcessContext",
           "ProcessException", "ProcessRaisedException", "ProcessExitedException"]
__all__ += multiprocessing.__all__

# pygpu's tensors cross by file descriptor: a memfd each storage's pages live in, its
# descriptor sent over a Unix socket (or inherited by a spawned child)
_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor"}


def set_sharing_strategy(new_strategy):
    """Set the strategy for sharing cpu tensors; pygpu has PyTorch's Linux default,
    'file_descriptor' (not 'file_system', which needs PyTorch's shm manager daemon)."""
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"sharing strategy {new_strategy!r} is not one of "
                             f"{sorted(_all_sharing_strategies)}")
    global _sharing_strategy
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return set(_all_sharing_strategies)


reductions.init_reductions()
