"""The Python helpers the C core calls for cold paths: repr, and the forms of
Tensor.to()'s arguments C leaves to Python (NumPy dtypes, "sim" meaning the
current device, a backend not loaded yet, and every malformed spelling, whose
error is worded here). The common forms are parsed in C
(csrc/bindings/tensor_methods.c: parse_to_fast). Registered with _C._setup()."""
import numpy as np

from ._device import _SINGLE, _TYPES, Device, accelerator, device as parse_device_spec
from ._C import Tensor
from ._dtype import SUPPORTED, to_dtype
from . import _printing

_REPR = 1  # pg_implicit: PG_IMPLICIT_REPR


def tensor_repr(t):
    """PyTorch's printing (pygpu/_printing.py). A device tensor is copied to the host for
    it, counted as an implicit transfer."""
    if t.device.type == "meta":  # a shape without values: PyTorch prints tensor(..., size=)
        return _printing.tensor_repr(t, None)
    host = t._host(_REPR)
    if t.dtype._is_shell:  # bytes PyTorch reads no number from: its refusal, in its words
        raise NotImplementedError(f'"_local_scalar_dense_cpu" not implemented for '
                                  f"'{t.dtype._legacy}'")
    if t.dtype.name == "complex32":  # NumPy lacks it: print the exact complex64 values
        host = host.astype("complex64") if hasattr(host, "astype") else host
    elif t.dtype.numpy is None:  # bfloat16, float8: NumPy lacks them; print the exact float32 values
        host = host.astype("float32") if hasattr(host, "astype") else host
    return _printing.tensor_repr(t, host)


def _looks_like_device(x):
    """A Device, or a string that names a device or nothing NumPy calls a dtype.
    to("tpu:0") must fail as a device ("unknown device type 'tpu'"), to("int32") as
    a dtype, and to("tpu") says it is neither."""
    if isinstance(x, Device):
        return True
    if isinstance(x, int) and not isinstance(x, bool):
        return True  # to(0): an accelerator index, as in PyTorch
    if not isinstance(x, str):
        return False
    name = x.strip().lower()
    if ":" in name or name in _TYPES:
        return True
    try:
        to_dtype(x)
        return False
    except TypeError:
        pass
    try:
        import ml_dtypes  # noqa: F401 - NumPy knows its dtype names (complex32, ...) once loaded
    except ImportError:
        pass
    try:
        np.dtype(x)
        return False  # a dtype pygpu does not support: to_dtype says which it does
    except TypeError:
        pass
    try:
        parse_device_spec(x)
    except ValueError as e:
        raise ValueError(f"to(): {x!r} is neither a device nor a dtype: {e}; the dtypes are "
                         f"{SUPPORTED}") from None
    return True  # unreachable: parse_device_spec refuses every name not caught above

def parse_to(*args, device=None, dtype=None, non_blocking=False, copy=False):
    """Tensor.to(device), to(dtype), to(device, dtype), to(other_tensor) ->
    (device type code or -1, index, dtype code or -1, non_blocking, copy)."""
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif _looks_like_device(a):
            if device is not None:
                raise TypeError("to(): device given twice")
            device = a
        elif isinstance(a, bool):
            non_blocking = a
        else:
            if dtype is not None:
                raise TypeError("to(): dtype given twice")
            dtype = a
    dev = parse_device_spec(device) if device is not None else None
    if dev is not None and dev.type not in _SINGLE:
        accelerator(dev.type)._check_index(dev.index)
    t, i = dev._code if dev is not None else (-1, 0)
    code = to_dtype(dtype)._code if dtype is not None else -1
    return t, i, code, bool(non_blocking), bool(copy)
