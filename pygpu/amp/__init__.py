"""pygpu.amp: mixed precision, with PyTorch's interfaces.

autocast(device_type, dtype=pygpu.bfloat16, enabled=True) runs matmul and
linear in a 16-bit float dtype and the numerically touchy ops (softmax,
log_softmax, the losses, sum, mean) in float32, inside a region
(autocast_mode.py: the policy and its one dispatch point). GradScaler scales
the loss so small float16 gradients do not flush to zero, unscales them once
per step, and skips the steps whose gradients overflowed (grad_scaler.py).
pygpu.autocast is this module's autocast; custom_fwd/custom_bwd put an autograd.Function
under it (custom_function.py); torch.cuda.amp and torch.cpu.amp, PyTorch's deprecated
spellings, are device_amp.py's."""
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
from .custom_function import custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "get_autocast_dtype", "is_autocast_enabled", "custom_fwd",
           "custom_bwd", "is_autocast_available"]
