"""pygpu.sim: the simulated accelerator, for machines without a GPU.

sim devices compute on the host's CPU but behave like a GPU: their memory is
their own (NumPy sees it only through a counted transfer), each device runs
its ops in order on a worker thread of its own, asynchronously, and copies
marked non_blocking run on a second thread (a copy engine) beside compute.
PYGPU_SIM_DEVICES sets how many exist (default 2); PYGPU_SIM_MEMORY_MB how
much memory each has (default 8192).

configure() adds a link model, a *simulation* of a PCIe-like bus: each
transfer takes at least latency + bytes / bandwidth. It is off by default."""
from . import _C
from ._accel import Accelerator, export

_acc = Accelerator("sim", 1)
export(_acc, globals())
_check_index = _acc._check_index


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
