"""torch.nn.attention: SDPBackend and the sdpa_kernel context manager, which choose among
scaled_dot_product_attention's implementations for the code inside it, as PyTorch's do,
through torch.backends.cuda's switches (pygpu/backends/cuda.py). pygpu's fused kernels
stand for FLASH_ATTENTION and EFFICIENT_ATTENTION; MATH is the composition of batched
GEMMs and a row softmax; CUDNN_ATTENTION is a switch pygpu keeps but has no kernel for."""
import contextlib
import enum

from ..backends import cuda as _backends_cuda

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """PyTorch's values."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# each backend's (enable, is_enabled) pair of torch.backends.cuda
_SWITCHES = {
    SDPBackend.MATH: (_backends_cuda.enable_math_sdp, _backends_cuda.math_sdp_enabled),
    SDPBackend.FLASH_ATTENTION: (_backends_cuda.enable_flash_sdp,
                                 _backends_cuda.flash_sdp_enabled),
    SDPBackend.EFFICIENT_ATTENTION: (_backends_cuda.enable_mem_efficient_sdp,
                                     _backends_cuda.mem_efficient_sdp_enabled),
    SDPBackend.CUDNN_ATTENTION: (_backends_cuda.enable_cudnn_sdp,
                                 _backends_cuda.cudnn_sdp_enabled),
}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Inside the block, scaled_dot_product_attention may use only `backends` (one
    SDPBackend or a list of them); the switches are restored on exit."""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(backends)
    for b in backends:
        if not isinstance(b, SDPBackend):
            raise AssertionError("Backend must be an instance of SDPBackend")
    saved = {b: on() for b, (_, on) in _SWITCHES.items()}
    try:
        for b, (enable, _) in _SWITCHES.items():
            enable(b in backends)
        yield {}
    finally:
        for b, (enable, _) in _SWITCHES.items():
            enable(saved[b])
