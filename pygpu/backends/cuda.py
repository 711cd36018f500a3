"""torch.backends.cuda: torch.backends.cuda.matmul.allow_tf32 and the other CUDA switches.

The values a program sets are kept here; pygpu's CUDA GEMMs read matmul.allow_tf32 where
they offer TF32 (its default is False, as PyTorch's). The attention switches
(enable_flash_sdp, ...) say which of scaled_dot_product_attention's implementations cuda may
run: pygpu's fused kernels (kernels/attention.cu, which play PyTorch's flash and
memory-efficient roles) or the math composition (batched GEMMs and a row softmax)."""
from .._ops import _attention as _attention_ops
from .. import _C
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


# scaled_dot_product_attention's implementations on cuda, as PyTorch's switches name them.
# pygpu has one fused kernel pair (forward, backward) in the roles of PyTorch's flash and
# memory-efficient kernels: it runs while either is enabled (the plugin's "flash_sdp" option,
# read by its supports_node rule for SDPA); the math path composes the op of batched GEMMs
# and a row softmax. cuDNN's attention is not used by pygpu: its switch is kept, and read.
_sdp = _attention_ops.sdp_switches


def _apply_sdp():
    _C._cuda_set_option("flash_sdp", int(_sdp["flash"] or _sdp["mem_efficient"]))


def _set_sdp(which, enabled):
    _sdp[which] = bool(enabled)
    if _C._load_cuda(None):  # loaded: tell the plugin now (None: never loads it)
        _apply_sdp()


def enable_flash_sdp(enabled):
    """torch.backends.cuda.enable_flash_sdp: allow the fused attention kernels."""
    _set_sdp("flash", enabled)


def flash_sdp_enabled():
    return _sdp["flash"]


def enable_mem_efficient_sdp(enabled):
    """torch.backends.cuda.enable_mem_efficient_sdp: allow the fused attention kernels."""
    _set_sdp("mem_efficient", enabled)


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def enable_math_sdp(enabled):
    """torch.backends.cuda.enable_math_sdp: allow the composed attention. With it off and
    the fused kernels declining a call, scaled_dot_product_attention raises PyTorch's
    'No available kernel' error."""
    _sdp["math"] = bool(enabled)


def math_sdp_enabled():
    return _sdp["math"]


def enable_cudnn_sdp(enabled):
    _sdp["cudnn"] = bool(enabled)


def cudnn_sdp_enabled():
    return _sdp["cudnn"]


_cuda._after_load.append(_apply_sdp)
if _C._load_cuda(None):
    _apply_sdp()
