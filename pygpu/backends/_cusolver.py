"""cuSOLVER's lazy loading: the libraries the CUDA plugin tries when the first factorization
of a cuda tensor asks for it (torch.linalg's LU, solve, inv, det, cholesky, qr, svd, eigh).

cuda factorizations run on cuSOLVER (csrc/backends/cuda/cuda_cusolver.c), which the plugin
loads on the first LINALG node's question to the backend (supports_node), never at
`import pygpu`: when the plugin is loaded, pygpu hands it the libraries to try
(`library_candidates()`: PYGPU_CUSOLVER_LIBRARY, the nvidia-cusolver wheel (CUDA 13:
site-packages/nvidia/cu13/lib) or nvidia-cusolver-cu12 (site-packages/nvidia/cusolver/lib)
beside pygpu, or the CUDA toolkit). Where none loads, and for the sub-ops cuSOLVER has no
routine for (lstsq: pygpu's returns gelsd's rank and singular values), pygpu.linalg moves a
cuda operand to the cpu and the result back, counted (pygpu.stats())."""
from .. import _C
from .. import cuda as _cuda
from . import _libraries


def library_candidates():
    """Where libcusolver.so.12 (CUDA 13) or .11 (CUDA 12) may be, most specific first
    (PYGPU_CUSOLVER_LIBRARY first: the emulated device of tests/cuda_emu names its own
    cuSOLVER stand-in there)."""
    return _libraries.candidates("PYGPU_CUSOLVER_LIBRARY", ("cu13", "cusolver"),
                                 "libcusolver.so.1[12]", "libcusolver.so.12")


def _offer():
    """Run by pygpu.cuda once the plugin is loaded: the libraries the plugin tries when the
    first factorization asks (nothing is loaded here)."""
    _C._cuda_cusolver_offer("\n".join(library_candidates()))


def version():
    """The loaded cuSOLVER's version as an int (11701 for 11.7.1), 0 before a factorization
    loaded it (or where none could be)."""
    return _C._cuda_cusolver_version() if _C._load_cuda(None) else 0


_cuda._after_load.append(_offer)
if _C._load_cuda(None):  # the plugin was loaded before this module (None: never loads it)
    _offer()
