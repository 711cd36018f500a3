"""cuFFT's lazy loading: the libraries the CUDA plugin tries for torch.fft on cuda.

pygpu.fft's transforms are FFT nodes; on cuda the plugin runs them on cuFFT
(csrc/backends/cuda/cuda_cufft.c), which it loads on the first transform of a cuda tensor,
never at `import pygpu`. When the plugin is loaded, this module hands it the libraries to
try (`library_candidates()`: PYGPU_CUFFT_LIBRARY, the nvidia-cufft (CUDA 13) or
nvidia-cufft-cu12 wheel installed beside pygpu, the CUDA toolkit's lib64), and the first
FFT node's question to the backend (supports_node) loads the first that works. Where none
can be loaded, the node is declined and pygpu.fft moves a cuda operand to the cpu and back
(both transfers counted); `unavailable_reason()` says why."""
from .. import _C
from .. import cuda as _cuda
from . import _libraries

# the wheels' directories (site-packages/nvidia/<sub>/lib) and cuFFT's sonames, newest first:
# cuFFT 12 ships with CUDA 13 (nvidia-cufft), cuFFT 11 with CUDA 12 (nvidia-cufft-cu12)
WHEEL_DIRS = ("cu13", "cufft", "cu12")
SONAMES = ("libcufft.so.12", "libcufft.so.11")
_state = {"loaded": None, "why": None}


def library_candidates():
    """Where libcufft may be, most specific first (PYGPU_CUFFT_LIBRARY first: the emulated
    device of tests/cuda_emu names its own cuFFT stand-in there), by the search cuDNN and
    cuSOLVER use (_libraries.py); both sonames last, for the loader's own search path."""
    found = _libraries.candidates("PYGPU_CUFFT_LIBRARY", WHEEL_DIRS, "libcufft.so.1[12]",
                                  SONAMES[0])
    return found + [so for so in SONAMES if so not in found]


def _load():
    """Load cuFFT into the CUDA plugin (once); True when it is there."""
    return _libraries.load_first(_state, _C._cuda_cufft_load, library_candidates(),
                                 "libcufft not found", "pip install nvidia-cufft")


def is_available():
    """Whether cuFFT can be loaded (loads it)."""
    return _load()


def version():
    """cuFFT's version as an int (cufftGetVersion: 12000 for 12.0), or None when it is not
    available."""
    return _C._cuda_cufft_version() if _load() else None


def unavailable_reason():
    """None when cuFFT is loaded or loadable, else one line saying why not (cuda transforms
    then run on the cpu, their operands moved there and back)."""
    return None if _load() else _state["why"]


def _offer():
    """Run by pygpu.cuda once the plugin is loaded: the libraries the plugin tries when the
    first FFT node asks (nothing is loaded here)."""
    _C._cuda_cufft_offer("\n".join(library_candidates()))


_cuda._after_load.append(_offer)
if _C._load_cuda(None):  # the plugin was loaded before this module (None: never loads it)
    _offer()
