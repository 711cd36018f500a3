"""pygpu.cuda: NVIDIA GPUs, through the CUDA backend plugin.

The plugin (pygpu/_cuda_backend.so) is built when a CUDA toolkit is found at
install time and loaded here on first use, never at `import pygpu`, so
importing works on machines with no driver and does not freeze
CUDA_VISIBLE_DEVICES. unavailable_reason() says in one line why cuda cannot
be used, naming what is missing: nvcc at build time (the plugin was not
built), cuBLAS, the driver, or a GPU."""
import ctypes
import glob
import os
import sys
import threading

from .. import _C, _legacy
from .._C import OutOfMemoryError  # noqa: F401 - torch.cuda.OutOfMemoryError is torch's
from . import streams as _cuda_streams, _nvml
from ..amp import device_amp as _device_amp
from .._accel import Accelerator, export
from .streams import (CUDAGraph, DeviceProperties, Event, Stream, current_stream,  # noqa: F401
                      default_stream, get_device_capability, get_device_properties, graph,
                      nvtx_range, nvtx_range_pop, nvtx_range_push, profiling, stream)

# PYGPU_CUDA_BACKEND_SO names another build of the plugin to load instead (the test
# harness's emulated device, tests/cuda_emu/, is one). PYGPU_CUDA_PLUGIN is another
# thing: the prebuilt plugin tests/test_cuda_build.py checks.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # pygpu/, where setup.py builds it
PLUGIN = (os.environ.get("PYGPU_CUDA_BACKEND_SO")
          or os.path.join(_PACKAGE, "_cuda_backend.so"))
# setup.py writes why it built or skipped the plugin here (one line)
BUILD_REASON = os.path.join(_PACKAGE, "_cuda_build_reason.txt")


class _Cuda(Accelerator):
    # _tried turns True only once the load has finished (either way), under
    # _lock: a second thread arriving meanwhile waits for the first load
    # instead of seeing "not loaded" and reporting the plugin as not built.
    _tried = False
    _lock = threading.Lock()

    def _load(self):
        if self._tried:
            return
        with self._lock:
            if not self._tried:
                if os.path.exists(PLUGIN):
                    _preload_cublas()
                    if _C._load_cuda(PLUGIN):
                        _set_option("current_device", self._current)
                        _set_option("allow_tf32", _tf32)  # set before the load
                        for hook in _after_load:  # pygpu.backends.cudnn: its switches
                            hook()
                type(self)._tried = True

    def set_device(self, device):
        """Make `device` current. Besides the default for device=None, it is where
        pinned host memory is allocated (cudaHostAlloc creates a context on the
        current GPU): each DDP rank calls set_device(local_rank) before pinning."""
        super().set_device(device)
        _set_option("current_device", self._current)

    def mem_get_info(self, device=None):
        """(free, total) bytes of the device, as torch.cuda.mem_get_info; other
        processes count too. Asked of NVML (by PCI bus id) where the driver has
        it, so that walking every GPU creates no context on any; else of the
        runtime, which does."""
        index = self._index(device)
        info = _nvml.memory_info(pci_bus_id(index))
        return info if info is not None else super().mem_get_info(index)

    def _why_unavailable(self):
        self._load()
        if not os.path.exists(PLUGIN):
            why = _build_reason()
            return ("pygpu was built without the CUDA backend"
                    + (f": {why}" if why else f" (no {os.path.basename(PLUGIN)})"))
        return _C._cuda_reason()


# what runs once the plugin is loaded: the modules of its libraries hand it their settings
# (pygpu.backends.cudnn registers its switches and the libraries to try)
_after_load = []


def _build_reason():
    """Why the build left the plugin out, as setup.py recorded it."""
    try:
        with open(BUILD_REASON) as f:
            return f.read().strip() or None
    except OSError:
        return None


def _preload_cublas():
    """Load libcublas (and libcublasLt) from the nvidia-cublas wheel, if one is
    installed, before the plugin: the plugin asks for them by soname, and an
    already loaded library of that soname satisfies it (PyTorch and CuPy do
    the same). Needed for editable installs, whose plugin sits in the source
    tree and has no relative path to site-packages; harmless otherwise. A
    toolkit's own cuBLAS is found through the plugin's rpath instead."""
    for entry in sys.path:
        for sub in ("cu13", "cublas"):
            lib = os.path.join(entry or ".", "nvidia", sub, "lib")
            lt = sorted(glob.glob(os.path.join(lib, "libcublasLt.so.[0-9]*")))
            blas = sorted(glob.glob(os.path.join(lib, "libcublas.so.[0-9]*")))
            if not blas:
                continue
            try:
                for path in lt[-1:] + blas[-1:]:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue  # a broken copy: let the plugin's own lookup report it
            return


_acc = _Cuda("cuda", 2)
export(_acc, globals())
globals().update(_legacy.typed_for("cuda"))  # torch.cuda.FloatTensor, ... (pygpu/_legacy.py)
amp = _device_amp.module_for("cuda", __name__)  # torch.cuda.amp, the deprecated spellings
_check_index = _acc._check_index


def unavailable_reason():
    """None when cuda can be used, else one line saying why not."""
    return _acc._why_unavailable()


def is_built():
    """Whether this install includes the CUDA backend plugin."""
    return os.path.exists(PLUGIN)


def _load(require=False):
    """Load the plugin if it is built (once). With require, raise
    DeviceUnavailableError saying why when it cannot be loaded. pygpu._C calls
    this too (pin_memory, from_dlpack of CUDA memory): the one loader."""
    _acc._load()
    if require and not _C._load_cuda(None):
        raise _C.DeviceUnavailableError(f"cuda is not available: {unavailable_reason()}")


def _set_option(name, value):
    """Pass an option to the loaded plugin (no-op when it is not loaded)."""
    if not _C._load_cuda(None):
        return
    _C._cuda_set_option(name, int(value))


def pci_bus_id(index):
    """PCI bus id of cuda:index ("0000:3B:00.0"), or None where unknown. A device
    query: creates no CUDA context."""
    if not _C._load_cuda(None):
        return None
    try:
        return _C._cuda_pci_bus_id(int(index))
    except _C.DeviceUnavailableError:  # no driver, no such device: NVML is not asked
        return None


def set_allow_tf32(allow):
    """Let cuBLAS use TF32 tensor cores for float32 matmul (faster, ~1e-3 relative
    error). Off by default, as in PyTorch."""
    _cuda_streams._set_option("allow_tf32", allow)
    _set_tf32(allow)


# TF32 for float32 GEMMs: this switch, set_allow_tf32, torch.backends.cuda.matmul.allow_tf32
# (pygpu.backends.cuda) and set_float32_matmul_precision are one; kept here until the plugin
# loads, and handed to it then
_tf32 = False


def _set_tf32(allow):
    global _tf32
    _tf32 = bool(allow)
    _set_option("allow_tf32", _tf32)  # a no-op until the plugin loads


def get_allow_tf32():
    """Whether cuBLAS may use TF32 for float32 matmul (set_allow_tf32)."""
    return _cuda_streams._get_option("allow_tf32")


def set_int8_requant_in_gemm(enabled):
    """Let a static int8 layer with a u8 output (a static chain's hidden layer) requantize in
    cuBLASLt's GEMM epilogue: no epilogue kernel and no int32 between the GEMM and the next
    layer, with levels that may differ from the CPU's by one where a value lies within float
    rounding of a half-way point. On by default; off, every int8 layer on cuda gives the
    CPU's bits (csrc/backends/cuda/kernels/quant.cu)."""
    _cuda_streams._set_option("int8_requant_in_gemm", enabled)


def get_int8_requant_in_gemm():
    """Whether static int8 layers requantize in cuBLASLt's epilogue (set_int8_requant_in_gemm)."""
    return _cuda_streams._get_option("int8_requant_in_gemm")


def set_nvtx(enabled):
    """An NVTX range named after each op around its launch, for Nsight Systems
    (`nsys profile python train.py`); costs nothing visible without a profiler."""
    _cuda_streams._set_option("nvtx", enabled)


def get_nvtx():
    return _cuda_streams._get_option("nvtx")


def set_kernel_timing(enabled):
    """Time every op on the GPU with a pair of CUDA events; pygpu.stats() then
    reports kernel_ops and kernel_seconds per device. Off by default (a few
    microseconds per op)."""
    _cuda_streams._set_option("kernel_timing", enabled)


def get_kernel_timing():
    return _cuda_streams._get_option("kernel_timing")

_cuda_streams._bind(sys.modules[__name__])
