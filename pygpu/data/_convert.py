"""Samples from any source as pygpu tensors: NumPy arrays of every dtype, and other
frameworks' tensors (PyTorch's, CuPy's, JAX's) through DLPack.

A NumPy dtype pygpu holds is kept exactly. One it does not hold yet is widened to the
nearest it does, exactly: the integers (uint8 images, int8/int16/int32/uint16/uint32
labels) to int64, a longer float to float64, so that a dataset yielding uint8 images feeds a
loader; a dtype pygpu gains later (the integer dtypes, issue 43) is then kept as it is, with
no change here. uint64 values beyond int64, complex numbers (until pygpu holds them),
strings and objects are refused with a TypeError naming the dtype.

Another framework's tensor crosses by DLPack, sharing its memory (no copy), when pygpu
holds its dtype; otherwise through NumPy, widened as above (a copy)."""
import numpy as np

from .. import _C
from .._dtype import to_dtype


def _held(dtype):
    try:
        to_dtype(dtype)
        return True
    except (TypeError, ValueError):
        return False


def host_array(arr, what="a sample"):
    """`arr` as an array of a dtype pygpu holds (itself when it already is)."""
    dt = arr.dtype
    if _held(dt):
        return arr
    if dt.kind in "iu":
        if dt == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise TypeError(f"{what} is uint64 with values beyond int64's range, which pygpu "
                            "cannot hold")
        return arr.astype(np.int64)
    if dt.kind == "f":
        return arr.astype(np.float64)
    if dt.kind == "b":
        return arr.astype(np.bool_)
    raise TypeError(f"{what} has dtype {dt}, which pygpu tensors do not hold; convert it "
                    "first, e.g. with .astype(np.float32)")


def is_foreign_tensor(x):
    """Another framework's tensor that speaks DLPack (a NumPy array does too, but has its
    own path)."""
    return hasattr(x, "__dlpack__") and not isinstance(x, (_C.Tensor, np.ndarray))


def from_foreign(x):
    """A pygpu tensor for another framework's tensor: its memory through DLPack when pygpu
    holds the dtype, else a widened copy through NumPy."""
    if hasattr(x, "detach"):
        x = x.detach()  # PyTorch refuses to export a tensor that requires grad
    try:
        return _C.from_dlpack(x)
    except (TypeError, ValueError, RuntimeError, BufferError):
        pass
    to_numpy = getattr(x, "numpy", None)
    arr = np.asarray(to_numpy() if callable(to_numpy) else x)
    return _C.from_numpy(np.ascontiguousarray(host_array(arr, f"a {type(x).__name__}")))


def to_tensor(x):
    if isinstance(x, np.ndarray):
        return _C.from_numpy(host_array(x))
    return from_foreign(x)
