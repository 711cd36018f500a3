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

from . import _C
from ._accel import Accelerator, export

_acc = Accelerator("sim")
export(_acc, globals())
_check_index = _acc._check_index

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
