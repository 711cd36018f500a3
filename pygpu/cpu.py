"""pygpu.cpu: the host device's memory figures and its caching allocator (torch.cpu's place).

Host tensors of 64 KiB and more come from a caching allocator, as device tensors do
(csrc/core/pg_allocator.h): a freed block is kept by size and handed to the next
tensor of that size, so a training step reuses last step's activations instead of
taking fresh pages from the kernel. Smaller tensors are one malloc each (the C
library's own bins reuse those). The cache holds at most cache_limit() bytes
(PYGPU_HOST_CACHE_MB, default a quarter of the machine's memory): past it, the
blocks freed longest ago go back first. empty_cache() gives back every cached
block (and the pinned staging buffers)."""
from . import _C, _device, _node_graph
from .amp import device_amp as _device_amp

_CODE = _device._TYPES["cpu"]


amp = _device_amp.module_for("cpu", __name__)  # torch.cpu.amp.autocast, the deprecated spelling
# torch.cuda.CUDAGraph / torch.cuda.graph's API for cpu ops (pygpu/_node_graph.py)
Graph, graph = _node_graph.for_device("cpu", __name__)


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """cpu ops run when called; kept for torch.cpu's signature."""
    _check(device)


def _check(device):
    if device is not None and _device.device(device).type != "cpu":
        raise ValueError(f"expected the cpu device, got {_device.device(device)}")


def memory_stats(device=None):
    """The allocator's counters: allocated/peak/reserved/cached bytes, allocs, frees, cache_hits."""
    _check(device)
    return dict(_C._memory_stats(_CODE, 0))


def memory_allocated(device=None):
    """Bytes held by live host tensors (a cached-size tensor counts its block's size)."""
    return memory_stats(device)["allocated"]


def max_memory_allocated(device=None):
    return memory_stats(device)["peak"]


def memory_reserved(device=None):
    """Bytes taken from the system for host tensors: in use, or cached for reuse."""
    return memory_stats(device)["reserved"]


def reset_peak_memory_stats(device=None):
    _check(device)
    _C._reset_peak(_CODE, 0)


def empty_cache():
    """Give every cached host block back to the system."""
    _C._empty_cache(_CODE, 0)


def cache_limit():
    """The most bytes the host cache keeps (None: no cap)."""
    return _C._cache_limit(_CODE, 0)


def set_cache_limit(nbytes):
    """Cap the host cache at `nbytes` (None: no cap; 0: cache nothing); blocks above
    the new cap go back now, least recently freed first."""
    if nbytes is not None:
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"set_cache_limit: nbytes must be >= 0 or None, got {nbytes}")
    _C._set_cache_limit(_CODE, 0, nbytes)


def numpy_blas_status():
    """What `import pygpu` did to NumPy's OpenBLAS so that its idle threads sleep soon after
    each call instead of holding the cores pygpu's pool needs (pygpu/_numpy_blas.py)."""
    from . import _numpy_blas
    return _numpy_blas.status()
