"""torch.amp.custom_fwd / custom_bwd: an autograd.Function's forward and backward under
autocast as PyTorch runs them. custom_fwd(cast_inputs=dtype) runs the forward with autocast
off, its floating-point tensor arguments cast to dtype (when a region is active);
custom_bwd runs the backward with the autocast state its forward ran under."""
import functools

from .. import _C
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled


def _cast(value, device_type, dtype):
    if isinstance(value, _C.Tensor):
        if value.dtype.is_floating_point and value.device.type == device_type:
            return value.to(dtype)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate an autograd.Function's forward (see the module's comment)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        in_region = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if in_region:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate an autograd.Function's backward: it runs under its forward's autocast state."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd


def is_autocast_available(device_type):
    """Whether autocast runs on this device type (cpu, sim and cuda do)."""
    return device_type in ("cpu", "sim", "cuda")
