"""torch.backends.cudnn: the cuDNN switches (torch.backends.cudnn.benchmark = True), and
cuDNN's lazy loading.

cuda convolutions run on cuDNN (csrc/backends/cuda/cuda_cudnn.c), which the CUDA plugin
loads on the first convolution of a cuda tensor, never at `import pygpu`: when the plugin is
loaded, pygpu hands it the libraries to try (`library_candidates()`: PYGPU_CUDNN_LIBRARY, the
nvidia-cudnn-cu13 (or -cu12) wheel installed beside pygpu (site-packages/nvidia/cudnn/lib),
or the CUDA toolkit), and the first convolution's question to the backend (supports_node,
which also holds cuDNN's padding rule) loads the first that works. Where none can be loaded,
or cuDNN is switched off, cuda convolutions are composed from gathers and matmuls
(pygpu/_ops/_conv.py) and `unavailable_reason()` says why.

    pygpu.backends.cudnn.enabled = True        # False: compose convolutions on cuda
    pygpu.backends.cudnn.benchmark = False     # True: cuDNN's timed algorithm search
    pygpu.backends.cudnn.deterministic = False # True: deterministic algorithms only

benchmark_limit and allow_tf32 keep the values a program sets; the convolutions' TF32 use
follows pygpu.backends.cuda.matmul.allow_tf32 (off by default), not allow_tf32 (PyTorch's
default lets cuDNN use TF32). The CPU kernels are deterministic for a given device and
thread count whatever `deterministic` says."""
import sys
import types

from .. import _C
from .. import cuda as _cuda
from . import _libraries

_SWITCHES = ("enabled", "benchmark", "deterministic")
_state = {"enabled": True, "benchmark": False, "deterministic": False, "loaded": None,
          "why": None}
benchmark_limit = 10
allow_tf32 = True


def library_candidates():
    """Where libcudnn.so.9 (or .8) may be, most specific first (PYGPU_CUDNN_LIBRARY first:
    the emulated device of tests/cuda_emu names its own cuDNN stand-in there)."""
    return _libraries.candidates("PYGPU_CUDNN_LIBRARY", ("cudnn", "cu13", "cu12"),
                                 "libcudnn.so.[89]", "libcudnn.so.9")


def _load():
    """Load cuDNN into the CUDA plugin (once); True when it is there."""
    return _libraries.load_first(_state, _C._cuda_cudnn_load, library_candidates(),
                                 "libcudnn.so.9 not found", "pip install nvidia-cudnn-cu13",
                                 on_load=_apply)


def _apply():
    """The switches to the CUDA plugin (which reads them: cudnn_enabled in its supports_node)."""
    _C._cuda_set_option("cudnn_enabled", int(_state["enabled"]))
    _C._cuda_set_option("cudnn_benchmark", int(_state["benchmark"]))
    _C._cuda_set_option("cudnn_deterministic", int(_state["deterministic"]))


def _offer():
    """Run by pygpu.cuda once the plugin is loaded: the switches, and the libraries the
    plugin tries when the first convolution asks (nothing is loaded here)."""
    _apply()
    _C._cuda_cudnn_offer("\n".join(library_candidates()))


_cuda._after_load.append(_offer)
if _C._load_cuda(None):  # the plugin was loaded before this module (None: never loads it)
    _offer()


def is_available():
    """Whether cuDNN can be loaded (loads it)."""
    return _load()


def version():
    """cuDNN's version as an int (e.g. 91000 for 9.10.0), or None when it is not available."""
    return _C._cuda_cudnn_version() if _load() else None


def unavailable_reason():
    """None when cuDNN is loaded or loadable, else one line saying why not."""
    return None if _load() else _state["why"]


def usable():
    """Whether cuda convolutions run on cuDNN now (enabled and loaded)."""
    return _state["enabled"] and _load()


def is_acceptable(tensor):
    """Whether cuDNN would take `tensor` (a float32/float64 cuda tensor, cuDNN usable)."""
    from .._dtype import float32, float64
    return (isinstance(tensor, _C.Tensor) and tensor.device.type == "cuda"
            and tensor.dtype in (float32, float64) and usable())


class _Module(types.ModuleType):
    """enabled / benchmark / deterministic as settable module attributes (PyTorch's
    spelling), forwarded to the plugin's options once cuDNN is loaded."""

    def __getattr__(self, name):
        if name in _SWITCHES:
            return _state[name]
        raise AttributeError(f"module 'pygpu.backends.cudnn' has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in _SWITCHES:
            _state[name] = bool(value)
            if _C._load_cuda(None):  # the plugin is loaded (None: never loads it)
                _apply()
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Module
