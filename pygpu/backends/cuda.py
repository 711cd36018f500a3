"""torch.backends.cuda: torch.backends.cuda.matmul.allow_tf32 and the other CUDA switches.

The values a program sets are kept here; pygpu's CUDA GEMMs read matmul.allow_tf32 where
they offer TF32 (its default is False, as PyTorch's)."""
from .. import cuda as _cuda


class _Matmul:
    """torch.backends.cuda.matmul: the GEMM precision switches."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.fp32_precision = "none"


matmul = _Matmul()


def is_built():
    """Whether this pygpu was built with its CUDA backend (the plugin file is there)."""
    import os
    return os.path.exists(_cuda.PLUGIN)


def preferred_linalg_library(backend=None):
    return "default"
