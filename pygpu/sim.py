"""pygpu.sim: the simulated accelerator, for machines without a GPU.

sim devices compute on the host's CPU but behave like a GPU: their memory is
their own (NumPy sees it only through a counted transfer), each device runs
its ops in order on a worker thread of its own, asynchronously, and copies
marked non_blocking run on a second thread (a copy engine) beside compute.
PYGPU_SIM_DEVICES sets how many exist (default 2); PYGPU_SIM_MEMORY_MB how
much memory each has (default 8192).

Like a GPU's compute units, each sim device owns a share of the host's cores:
PYGPU_SIM_THREADS compute threads (default: cores // devices, at least 1),
its worker plus threads of its own that large ops are split over. Two sim
devices busy at once therefore run side by side, each on its own cores.
num_threads(device) reads a device's share.

configure() adds a link model, a *simulation* of a PCIe-like bus: each
transfer takes at least latency + bytes / bandwidth. It is off by default."""
import os as _os
import warnings as _warnings

from . import _C, _legacy, _node_graph
from ._accel import Accelerator, export
from .amp import device_amp as _device_amp

_acc = Accelerator("sim")
export(_acc, globals())
globals().update(_legacy.typed_for("sim"))  # pygpu.sim.FloatTensor, ... (pygpu/_legacy.py)
amp = _device_amp.module_for("sim", __name__)  # torch.cuda.amp's spellings, for sim
_check_index = _acc._check_index
# torch.cuda.CUDAGraph / torch.cuda.graph's API for sim ops (pygpu/_node_graph.py)
Graph, graph = _node_graph.for_device("sim", __name__)

_env_threads = _os.environ.get("PYGPU_SIM_THREADS")
if _env_threads and not (_env_threads.isdigit()
                                     and 1 <= int(_env_threads) <= 1024):
    _warnings.warn(f"PYGPU_SIM_THREADS={_env_threads!r} is not a whole number from 1 to 1024; "
                   "using the default (cores // sim devices)", RuntimeWarning, stacklevel=2)


def num_threads(device=0):
    """Compute threads sim device `device` owns (PYGPU_SIM_THREADS, default
    cores // device_count(), at least 1): its stream worker plus pool threads."""
    _acc._index(device)
    return _C._sim_threads()


def configure(latency_us=0.0, h2d_gbps=None, d2h_gbps=None):
    """Model the host<->device link: every transfer takes at least
    latency_us microseconds plus bytes / bandwidth (GB/s). None = unlimited.
    configure() with no arguments turns the model off."""
    _C._sim_configure(float(latency_us), float(h2d_gbps or 0.0), float(d2h_gbps or 0.0))


def link():
    """The link model in force: dict(latency_us, h2d_gbps, d2h_gbps); 0 means unlimited."""
    lat, h2d, d2h = _C._sim_link()
    return {"latency_us": lat, "h2d_gbps": h2d, "d2h_gbps": d2h}


def inject_fault(op, device=0):
    """Test aid: make the next op named `op` ("matmul", "add", ...) on the device
    fail on its worker thread, as a GPU kernel fault would. The failure surfaces
    as pygpu.AsyncOpError at the next synchronization of the data it touched."""
    _C._sim_inject_fault(_acc._index(device), str(op))



def _queue_name(bit_mask):
    bit = bit_mask.bit_length() - 1
    return f"sim:{bit // 2} {('compute', 'copy')[bit % 2]}" if bit >= 0 else "another backend"


class Span:
    """One task a sim queue ran: `queue` ("compute" or "copy"), `name` (the op, or
    "copy h2d"/"copy d2h"/"copy d2d"), `thread` (the queue's worker, pygpu-sim0-op /
    pygpu-sim0-cp, or a host thread that waited for it and ran it), `queued`, `start` (its
    dependencies met) and `end` in seconds from the start of the recording, `cpu` (the CPU
    seconds that thread spent in it: end - start less preemption, so what the task costs
    even on a loaded host; a device pool's other threads are not in it), `seq` (its number
    on its queue), `bytes` (a copy's size) and `after`: the other queues' work it
    was ordered after, pending when it was queued, as ("sim:N compute" or "sim:N copy",
    seq) pairs (a copy into memory compute still used; an op on a batch still copying)."""

    __slots__ = ("queue", "name", "thread", "queued", "start", "end", "seq", "bytes", "after",
                 "cpu")

    def __init__(self, role, name, thread, queued, start, end, seq, nbytes, after, cpu=0.0):
        self.queue = ("compute", "copy")[role]
        self.name, self.thread = name, thread
        self.queued, self.start, self.end = queued, start, end
        self.seq, self.bytes = seq, nbytes
        self.after = [(_queue_name(q), n) for q, n in after]
        self.cpu = cpu

    def __repr__(self):
        after = f", after {self.after}" if self.after else ""
        return (f"Span({self.queue} #{self.seq} {self.name!r} on {self.thread}: queued "
                f"{self.queued * 1e3:.3f} ms, ran {self.start * 1e3:.3f}-{self.end * 1e3:.3f} ms"
                f"{after})")


class timeline:
    """Record what sim device `device`'s queues run while the block runs; afterwards
    `spans` holds a Span per task, in the order they ended:

        with pygpu.sim.timeline(0) as tl:
            ...
            pygpu.synchronize()
        copies = [s for s in tl.spans if s.queue == "copy"]

    Only work queued inside the block is recorded; synchronize before leaving it so the
    spans are complete. It shows, without timing anything from Python, whether copies ran
    beside compute or behind it, what each task waited for, and which thread ran it."""

    def __init__(self, device=0):
        self.index = _acc._index(device)
        self.spans = []

    def __enter__(self):
        _C._sim_timeline(self.index, True)
        return self

    def __exit__(self, *exc):
        self.spans = [Span(*s) for s in _C._sim_timeline(self.index, False)]
        return False
