"""NCCL for cuda tensors: loading it, and the collectives pygpu.distributed runs with it.

libnccl.so.2 is found like cuBLAS: in the nvidia-nccl-cu13 wheel installed beside
pygpu (site-packages/nvidia/nccl/lib), in the CUDA toolkit ($CUDA_HOME/lib64), or
by the dynamic loader's own search. The CUDA plugin dlopens it on first use
(csrc/backends/cuda/cuda_nccl.c); nothing here runs at import. The ranks meet
through MPI: rank 0 makes NCCL's unique id and broadcasts it (as many NCCL jobs
do), then every rank joins the communicator on its own GPU.

A peer that dies or never joins does not hang the job: every NCCL wait gives up
after a timeout (PYGPU_NCCL_TIMEOUT seconds, default 600, or set_timeout()),
aborts the communicator and raises NcclError naming the call.
destroy_process_group() finalizes and destroys the communicator (close()).

The plugin's NCCL entry points are reached through its extras table, as
pygpu._C's _cuda_nccl_* methods (csrc/bindings/cuda_extras.c); a failure raises
NcclError from csrc/bindings/errors.c, the one status->exception map."""
import glob
import os
import site
import sys

from .. import _C, cuda

_ID_BYTES = 128
_DTYPES = {"float32": 7, "float64": 8, "int64": 4, "float16": 6, "bfloat16": 9, "bool": 1}  # ncclDataType_t
# the plugin's call kinds (csrc/backends/cuda/cuda_nccl.c, pg_nccl_kind): one NCCL function each
KINDS = {"all_reduce": 0, "broadcast": 1, "reduce": 2, "all_gather": 3, "reduce_scatter": 4,
         "send": 5, "recv": 6}


class NcclUnavailable(RuntimeError):
    """NCCL (or the CUDA backend it runs on) cannot be used here; the message says why."""


# An NCCL call failed or timed out; the communicator was aborted (the message says why).
NcclError = _C.NcclError


def set_timeout(seconds):
    """How long an NCCL wait (joining, a collective, finalizing) may take before the
    communicator is aborted and the call raises NcclError. 0 restores the default (600 s)."""
    seconds = int(seconds)
    if seconds < 0:
        raise ValueError(f"the NCCL timeout must be >= 0 seconds, got {seconds}")
    _lib()
    _C._cuda_set_option("nccl_timeout_s", seconds)


def _timeout_from_env():
    raw = os.environ.get("PYGPU_NCCL_TIMEOUT")
    if not raw:
        return
    try:
        seconds = int(float(raw))
    except ValueError:
        raise ValueError(f"PYGPU_NCCL_TIMEOUT={raw!r}: give a number of seconds") from None
    set_timeout(seconds)


def library_candidates():
    """Where libnccl.so.2 may be, most specific first; PYGPU_NCCL_LIBRARY first of all
    (the emulated device of tests/cuda_emu names its own NCCL stand-in there)."""
    roots = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # .../site-packages/pygpu/..
    roots = [os.path.dirname(r) for r in roots] + site.getsitepackages() + [site.getusersitepackages()]
    roots += [p for p in sys.path if p.endswith("site-packages")]
    out = [os.environ["PYGPU_NCCL_LIBRARY"]] if os.environ.get("PYGPU_NCCL_LIBRARY") else []
    for r in roots:
        out += sorted(glob.glob(os.path.join(r, "nvidia", "nccl", "lib", "libnccl.so.2")))
        out += sorted(glob.glob(os.path.join(r, "nvidia", "cu1*", "lib", "libnccl.so.2")))
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            out.append(os.path.join(os.environ[env], "lib64", "libnccl.so.2"))
    out.append("/usr/local/cuda/lib64/libnccl.so.2")
    seen, unique = set(), []
    for p in out:
        if p not in seen and os.path.exists(p):
            seen.add(p)
            unique.append(p)
    return unique + ["libnccl.so.2"]  # last: the loader's own search path


_loaded = False


def _lib():
    """Load the CUDA plugin and NCCL into it (once), or raise NcclUnavailable."""
    global _loaded
    if _loaded:
        return
    if not cuda.is_built():
        raise NcclUnavailable(f"NCCL runs through the CUDA backend, which is not built: "
                              f"{cuda.unavailable_reason()}")
    try:
        cuda._load(True)  # the plugin needs libcublas, which pygpu.cuda preloads from its wheel
    except _C.DeviceUnavailableError as e:
        raise NcclUnavailable(f"NCCL runs through the CUDA backend, which cannot be loaded: {e}") from None
    errors = []
    for path in library_candidates():
        try:
            _C._cuda_nccl_load(path)
        except _C.DeviceUnavailableError as e:
            errors.append(str(e))
            continue
        _loaded = True
        return
    raise NcclUnavailable("; ".join(errors[-2:]) or "libnccl.so.2 not found: pip install nvidia-nccl-cu13")


def version():
    """NCCL's version as an int (e.g. 22703 for 2.27.3); loads NCCL (no GPU needed)."""
    _lib()
    return _C._cuda_nccl_version()


class NcclGroup:
    """One NCCL communicator over the ranks of an MPI communicator, on `device` (a cuda index)."""

    def __init__(self, mpi_comm, device):
        _lib()
        _timeout_from_env()
        self.device = int(device)
        self.comm = None
        uid = _C._cuda_nccl_unique_id() if mpi_comm.Get_rank() == 0 else None
        raw = mpi_comm.bcast(uid, root=0)
        if len(raw) != _ID_BYTES:
            raise NcclError(f"NCCL: rank 0 sent a {len(raw)}-byte unique id, expected {_ID_BYTES}")
        self.comm = _C._cuda_nccl_comm_init(mpi_comm.Get_size(), raw, mpi_comm.Get_rank(), self.device)

    def close(self):
        """Finalize and destroy the communicator (destroy_process_group calls this)."""
        comm, self.comm = self.comm, None
        if comm:
            _C._cuda_nccl_comm_destroy(comm)  # NcclError if it failed or timed out (then aborted)

    def abort(self):
        """Abort the communicator at once (pending collectives end with an error)."""
        if self.comm:
            _C._cuda_nccl_comm_abort(self.comm)

    def check(self, t):
        """t's (data pointer, element count, ncclDataType_t), or the error saying why NCCL
        cannot take it."""
        if self.comm is None:
            raise NcclError("this NCCL group was destroyed (destroy_process_group)")
        if t.device.type != "cuda" or t.device.index != self.device:
            raise ValueError(f"this NCCL group runs on cuda:{self.device}; the tensor is on {t.device}")
        if not t.is_contiguous():
            raise ValueError("NCCL collectives need a contiguous tensor: call .contiguous() first")
        if t.dtype.name not in _DTYPES:
            raise TypeError(f"NCCL has no {t.dtype.name} collectives")
        # no host wait for t's pending writes: the plugin makes the comm stream wait
        # for them on the device (an event per stream that may hold one)
        return _C._data_ptr(t), t.numel(), _DTYPES[t.dtype.name]

    def run(self, calls):
        """Run NCCL calls (kind name, send tensor or (ptr, n, dtype), recv ..., op or root,
        peer), as one ncclGroupStart/End group when there are several, and wait for them."""
        _C._cuda_nccl_run(self.comm, self.device, [
            (KINDS[kind], send, recv, count, dtype, arg, peer)
            for kind, send, recv, count, dtype, arg, peer in calls])

    def all_reduce(self, t, op):
        """The all-reduce of DDP's NCCL communicator: op a ReduceOp (or "avg"/"sum"/"max")."""
        from .reduce_op import RedOpType, nccl_op
        op = {"avg": RedOpType.AVG, "sum": RedOpType.SUM, "max": RedOpType.MAX}.get(op, op)
        ptr, n, dt = self.check(t)
        self.run([("all_reduce", ptr, ptr, n, dt, nccl_op(op), 0)])

    def broadcast(self, t, src):
        ptr, n, dt = self.check(t)
        self.run([("broadcast", ptr, ptr, n, dt, int(src), 0)])
