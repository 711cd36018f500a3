"""Tensors to and from the raw little-endian bytes every checkpoint format stores.

A tensor's bytes go through NumPy on the host; bfloat16, which NumPy lacks, travels as its
uint16 bit patterns (widened to float32 and rounded back, both exact), so no format needs
ml_dtypes for it; the float8 dtypes travel through ml_dtypes' NumPy types (their bytes as
uint8); complex32 and the shell dtypes as their bytes, through Tensor.view(dtype). A tensor on a device is copied to the host once, explicitly (a counted d2h
transfer); loading makes host tensors that the caller moves where map_location says."""
import numpy as np

from .. import _C, _dtype
from ._dtypes import row_of


def to_bytes(t):
    """(row, a C-contiguous NumPy array of t's elements in its storage dtype), t any tensor."""
    row = row_of(t.dtype)
    host = t.detach()
    if str(host.device) != "cpu":
        host = host.cpu()  # an explicit, counted d2h copy
    if row.name == "bfloat16":
        wide = np.ascontiguousarray(host.float().numpy())
        return row, (wide.view(np.uint32) >> 16).astype(np.uint16)
    if host.dtype._is_shell or host.dtype is _dtype.complex32:  # no NumPy twin: its bytes
        return row, host.contiguous().view(_dtype.uint8).numpy().view(row.numpy).reshape(-1)
    if host.dtype.numpy is None:  # float8: ml_dtypes' array, as its bytes
        return row, np.ascontiguousarray(host.numpy()).view(row.numpy)
    return row, np.ascontiguousarray(host.numpy())


def from_buffer(row, buf, count):
    """A 1-d host tensor of `count` elements of `row`'s dtype, owning a copy of `buf`."""
    dtype = row.held_as
    if dtype is None:
        raise TypeError(f"a tensor of dtype {row.name}: pygpu holds {_held()}, not {row.name}")
    arr = np.frombuffer(buf, dtype=row.numpy, count=count)
    if row.name == "bfloat16":
        wide = (arr.astype(np.uint32) << 16).view(np.float32)
        return _C.from_numpy(wide).astype("bfloat16")
    if dtype._is_shell or dtype is _dtype.complex32:  # its bytes, viewed (Tensor.view(dtype))
        return _C.from_numpy(arr.copy().view(np.uint8)).view(dtype)
    if dtype.numpy is None:  # float8: its bytes as ml_dtypes' type
        return _C.from_numpy(arr.copy().view(_dtype.numpy_extra(row.name)))
    return _C.from_numpy(arr.astype(row.numpy.newbyteorder("="), copy=True))


def _held():
    from ._dtypes import held
    return held()
