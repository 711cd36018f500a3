"""torch.cuda.amp and torch.cpu.amp (and pygpu.sim.amp): PyTorch's deprecated per-device
spellings of torch.amp, which programs still write:

    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    with torch.cuda.amp.autocast(enabled=use_amp):
        loss = model(x)

Each is torch.amp's with the device type filled in, and warns as PyTorch does
(FutureWarning: use torch.amp.autocast('cuda', ...)). module_for(device_type) makes the
module, registered as pygpu.<device type>.amp so that `import torch.cuda.amp` works."""
import functools
import sys
import types
import warnings

from .._dtype import bfloat16, float16
from .autocast_mode import autocast
from .custom_function import custom_bwd, custom_fwd
from .grad_scaler import GradScaler

# the default low dtype of each device type's old autocast (PyTorch's: float16 on cuda)
_DEFAULT_DTYPE = {"cuda": float16, "cpu": bfloat16, "sim": float16}


def _deprecated(old, new):
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}` instead.",
                  FutureWarning, stacklevel=3)


def _autocast_class(device_type):
    default = _DEFAULT_DTYPE[device_type]

    class DeviceAutocast(autocast):
        def __init__(self, enabled=True, dtype=default, cache_enabled=True):
            _deprecated(f"torch.{device_type}.amp.autocast",
                        f"torch.amp.autocast('{device_type}', args...)")
            super().__init__(device_type, dtype=dtype, enabled=enabled,
                             cache_enabled=cache_enabled)

    DeviceAutocast.__name__ = DeviceAutocast.__qualname__ = "autocast"
    DeviceAutocast.__doc__ = (f"torch.{device_type}.amp.autocast(enabled=True, dtype={default}, "
                              f"cache_enabled=True): torch.amp.autocast('{device_type}', ...)")
    return DeviceAutocast


def _grad_scaler_class(device_type):
    class DeviceGradScaler(GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True):
            _deprecated(f"torch.{device_type}.amp.GradScaler",
                        f"torch.amp.GradScaler('{device_type}', args...)")
            super().__init__(init_scale, growth_factor, backoff_factor, growth_interval,
                             enabled)

    DeviceGradScaler.__name__ = DeviceGradScaler.__qualname__ = "GradScaler"
    DeviceGradScaler.__doc__ = f"torch.{device_type}.amp.GradScaler: torch.amp.GradScaler"
    return DeviceGradScaler


def module_for(device_type, parent):
    """The module pygpu.<device_type>.amp (registered in sys.modules)."""
    name = f"{parent}.amp"
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    mod = types.ModuleType(name, f"torch.{device_type}.amp: torch.amp for {device_type}, "
                                 f"the deprecated spellings (pygpu/amp/device_amp.py)")
    mod.autocast = _autocast_class(device_type)
    if device_type != "cpu":  # torch.cpu.amp has no GradScaler of its own
        mod.GradScaler = _grad_scaler_class(device_type)

    def fwd(fwd=None, *, cast_inputs=None):
        _deprecated(f"torch.{device_type}.amp.custom_fwd",
                    f"torch.amp.custom_fwd(args..., device_type='{device_type}')")
        return custom_fwd(fwd, device_type=device_type, cast_inputs=cast_inputs)

    def bwd(bwd):
        _deprecated(f"torch.{device_type}.amp.custom_bwd",
                    f"torch.amp.custom_bwd(args..., device_type='{device_type}')")
        return custom_bwd(bwd, device_type=device_type)

    mod.custom_fwd = functools.wraps(custom_fwd)(fwd)
    mod.custom_bwd = functools.wraps(custom_bwd)(bwd)
    mod.__all__ = [n for n in ("autocast", "GradScaler", "custom_fwd", "custom_bwd")
                   if hasattr(mod, n)]
    sys.modules[name] = mod
    return mod
