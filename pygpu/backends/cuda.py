"""torch.backends.cuda: torch.backends.cuda.matmul.allow_tf32 and the other CUDA switches.

The values a program sets are kept here; pygpu's CUDA GEMMs read matmul.allow_tf32 where
they offer TF32 (its default is False, as PyTorch's)."""
from .. import cuda as _cuda


class _Matmul:
    """torch.backends.cuda.matmul: the GEMM precision switches. allow_tf32 (False by
    default, as PyTorch's) lets cuBLAS run float32 products on TF32 tensor cores; it is
    the CUDA plugin's option (pygpu.cuda.set_allow_tf32 is the same switch), kept here
    until the plugin loads and handed to it then. torch.set_float32_matmul_precision
    ("highest" / "high" / "medium") sets it too, as PyTorch's does."""

    def __init__(self):
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.fp32_precision = "none"

    @property
    def allow_tf32(self):
        return _cuda._tf32

    @allow_tf32.setter
    def allow_tf32(self, value):
        _cuda._set_tf32(value)


matmul = _Matmul()


def is_built():
    """Whether this pygpu was built with its CUDA backend (the plugin file is there)."""
    import os
    return os.path.exists(_cuda.PLUGIN)


def preferred_linalg_library(backend=None):
    return "default"


_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision):
    """torch.set_float32_matmul_precision: "highest" computes float32 products in float32;
    "high" and "medium" let them use TF32 (matmul.allow_tf32), as PyTorch's on CUDA."""
    if precision not in _PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: expected one of {list(_PRECISIONS)}, "
                         f"got {precision!r}")
    global _precision
    matmul.allow_tf32 = precision != "highest"
    _precision = precision


_precision = "highest"


def get_float32_matmul_precision():
    """The last precision set, or what matmul.allow_tf32 now says if it was set since."""
    if (_precision == "highest") == (not matmul.allow_tf32):
        return _precision
    return "high" if matmul.allow_tf32 else "highest"
