"""Creating tensors: tensor(), zeros(), ones(), empty(), full(), arange(),
rand(), randn(), manual_seed().

Default dtypes follow PyTorch where NumPy and PyTorch disagree: float32 for
zeros/ones/empty/rand/randn and for Python floats in tensor(); Python ints
give int64, bools give bool; a NumPy array keeps its dtype. Tensors made on
a device are made there (no host buffer, no transfer), except tensor(data,
device=...), whose data starts on the host: that is one counted h2d copy."""
import math
import numbers

import numpy as np

from . import _C
from ._dtype import bool_, float32, int64, to_dtype

_CPU = "cpu"


def _shape(args):
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return tuple(args[0])
    return tuple(args)


def _dt(dtype, default):
    return to_dtype(dtype) if dtype is not None else default


def _dev(device):
    return device if device is not None else _CPU


def empty(*shape, dtype=None, device=None):
    """An uninitialised tensor."""
    return _C._full(_shape(shape), None, _dt(dtype, float32), _dev(device))


def zeros(*shape, dtype=None, device=None):
    return _C._full(_shape(shape), 0, _dt(dtype, float32), _dev(device))


def ones(*shape, dtype=None, device=None):
    return _C._full(_shape(shape), 1, _dt(dtype, float32), _dev(device))


def full(shape, fill_value, dtype=None, device=None):
    """A tensor filled with fill_value; its dtype follows the value when not given."""
    if dtype is None:
        if isinstance(fill_value, (bool, np.bool_)):
            dtype = bool_
        elif isinstance(fill_value, numbers.Integral):
            dtype = int64
        else:
            dtype = float32
    if isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    return _C._full(tuple(shape), fill_value, to_dtype(dtype), _dev(device))


def zeros_like(t, dtype=None, device=None):
    return zeros(t.shape, dtype=dtype or t.dtype, device=device or t.device)


def ones_like(t, dtype=None, device=None):
    return ones(t.shape, dtype=dtype or t.dtype, device=device or t.device)


def arange(start, stop=None, step=1, dtype=None, device=None):
    """Evenly spaced values in [start, stop): int64 for ints, float32 otherwise."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    all_ints = all(isinstance(v, numbers.Integral) for v in (start, stop, step))
    n = max(0, math.ceil((stop - start) / step))
    return _C._arange(float(start), float(step), n, _dt(dtype, int64 if all_ints else float32),
                      _dev(device))


def rand(*shape, dtype=None, device=None):
    """Uniform samples in [0, 1), from the device's Philox generator."""
    return _C._random(0, _shape(shape), _dt(dtype, float32), _dev(device))


def randn(*shape, dtype=None, device=None):
    """Standard normal samples, from the device's Philox generator."""
    return _C._random(1, _shape(shape), _dt(dtype, float32), _dev(device))


def manual_seed(seed):
    """Seed every device's generator: rand/randn are then reproducible, and the
    same on every device for the same sequence of calls."""
    _C._seed(int(seed) & (2**64 - 1))


def tensor(data, dtype=None, device=None):
    """A new tensor holding a copy of data (a nested list, a number, an ndarray,
    anything with __array__ or __dlpack__, or another Tensor)."""
    if isinstance(data, _C.Tensor):
        out = data.to(device=device, dtype=dtype)
        return out.clone() if out is data else out
    is_array = isinstance(data, np.ndarray)
    arr = np.asarray(data)
    if dtype is not None:
        dt = to_dtype(dtype)
    elif not is_array and arr.dtype == np.float64:
        dt = float32  # Python floats: PyTorch's default dtype
    elif not is_array and arr.dtype.kind in "iu":
        dt = int64
    else:
        dt = to_dtype(arr.dtype)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"tensor(): cannot make a tensor from data of type {arr.dtype} "
                        "(expected numbers or bools)")
    host = _C._from_array_copy(arr, dt._code)
    if device is None:
        return host
    return host.to(device)
