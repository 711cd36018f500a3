"""pygpu.cuda: NVIDIA GPUs, through the CUDA backend plugin.

The plugin (pygpu/_cuda_backend.so) is built when a CUDA toolkit is found at
install time and loaded here on first use, never at `import pygpu`, so
importing works on machines with no driver and does not freeze
CUDA_VISIBLE_DEVICES. unavailable_reason() says in one line why cuda cannot
be used (built without a toolkit / no driver / no device)."""
import ctypes
import os

from . import _C
from ._accel import Accelerator, export

PLUGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cuda_backend.so")


class _Cuda(Accelerator):
    _tried = False

    def _load(self):
        if not self._tried:
            type(self)._tried = True
            _C._load_cuda(PLUGIN if os.path.exists(PLUGIN) else None)

    def _why_unavailable(self):
        self._load()
        return _C._cuda_reason()


_acc = _Cuda("cuda", 2)
export(_acc, globals())
_check_index = _acc._check_index


def unavailable_reason():
    """None when cuda can be used, else one line saying why not."""
    return _acc._why_unavailable()


def is_built():
    """Whether this install includes the CUDA backend plugin."""
    return os.path.exists(PLUGIN)


def set_allow_tf32(allow):
    """Let cuBLAS use TF32 tensor cores for float32 matmul (faster, ~1e-3 relative
    error). Off by default, as in PyTorch."""
    _acc._load()
    if not _C._load_cuda(None):
        raise _C.DeviceUnavailableError(f"cuda is not available: {unavailable_reason()}")
    lib = ctypes.CDLL(PLUGIN)
    if lib.pg_plugin_set_option(b"allow_tf32", int(bool(allow))) != 0:
        raise RuntimeError("the CUDA plugin refused the allow_tf32 option")
