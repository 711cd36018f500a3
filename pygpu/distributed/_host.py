"""A tensor's elements as the host buffer MPI reads or writes, and the way back.

A contiguous cpu tensor is handed to MPI as a NumPy view of its own memory: no copy, and
the collective's result lands in place. Anything else is staged: a sim tensor is copied
to the host (a counted device->host transfer, attributed to the collective's role in
pygpu.stats().by_role) and the result copied back (host->device); a non-contiguous cpu
tensor goes through a contiguous copy. MPI has no 16-bit floats, so float16 and bfloat16
move as their raw 16-bit words and are reduced in float32 (rounded once at the end).

MPI datatypes by NumPy dtype name: one row each."""
import numpy as np

from .. import _stats
from .._C import from_numpy

#               NumPy dtype  MPI datatype  reduced as
_MPI_TYPES = {"float32":   ("FLOAT",     None),
              "float64":   ("DOUBLE",    None),
              "int64":     ("INT64_T",   None),
              "int32":     ("INT32_T",   None),
              "int16":     ("INT16_T",   None),
              "int8":      ("INT8_T",    None),
              "uint8":     ("UINT8_T",   None),
              "bool":      ("C_BOOL",    None),
              "complex64": ("C_FLOAT_COMPLEX", None),
              "complex128": ("C_DOUBLE_COMPLEX", None),
              "float16":   ("UINT16_T",  "float32"),
              "bfloat16":  ("UINT16_T",  "float32")}


def _mpi_type(MPI, dtype_name):
    try:
        return getattr(MPI, _MPI_TYPES[dtype_name][0])
    except KeyError:
        raise TypeError(f"pygpu.distributed: no MPI datatype for {dtype_name} tensors") from None


class Staged:
    """tensor's elements as a contiguous 1-D NumPy array `arr` (and `spec`, the buffer
    as mpi4py takes it). read: the array starts with the tensor's values (else it is
    uninitialised); write: finish() puts the array's values back into the tensor;
    reduce: the values will be combined arithmetically (16-bit floats then widen)."""

    def __init__(self, MPI, tensor, role="collective", read=True, write=False, reduce=False):
        self.tensor = tensor
        self.role = role
        self.write = write
        dname = tensor.dtype.name
        if dname not in _MPI_TYPES:
            raise TypeError(f"pygpu.distributed: no MPI datatype for {dname} tensors")
        widen = _MPI_TYPES[dname][1] if reduce else None
        on_device = tensor.device.type != "cpu"
        self.d2h = tensor.nbytes if (on_device and read) else 0
        self.h2d = tensor.nbytes if (on_device and write) else 0
        self.direct = not on_device and tensor.is_contiguous() and widen is None
        if self.direct:
            self._host = tensor.detach()
            arr = self._host.numpy().reshape(-1)
        elif read:
            with _stats.role(role):
                host = tensor.detach().cpu() if on_device else tensor.detach().contiguous()
            self._host = host
            arr = np.ascontiguousarray(host.numpy()).reshape(-1)
            if widen is not None:
                arr = arr.astype(widen)
        else:
            self._host = None
            arr = np.empty(tensor.numel(), dtype=widen or _numpy_dtype(tensor))
        self.arr = arr
        if widen is not None:
            self.spec = [arr, _mpi_type(MPI, widen)]
        elif dname in ("float16", "bfloat16"):
            self.spec = [arr.view(np.uint16), MPI.UINT16_T]
        else:
            self.spec = [arr, _mpi_type(MPI, dname)]

    def finish(self):
        """Copy the array back into the tensor (when written and not in place)."""
        if not self.write or self.direct:
            return
        arr = self.arr
        target = _numpy_dtype(self.tensor)
        if arr.dtype != target:
            arr = arr.astype(target)
        with _stats.role(self.role):
            self.tensor.detach().copy_(from_numpy(np.ascontiguousarray(arr).reshape(self.tensor.shape)))


_NUMPY_DTYPES = {}


def _numpy_dtype(t):
    """The NumPy dtype of t.numpy() (bfloat16: ml_dtypes' type)."""
    name = t.dtype.name
    if name not in _NUMPY_DTYPES:
        from .._tensor.create import zeros
        _NUMPY_DTYPES[name] = zeros(0, dtype=t.dtype).numpy().dtype
    return _NUMPY_DTYPES[name]


def write_back(tensor, arr, role="collective"):
    """tensor[...] = arr (a host array of tensor.numel() elements); returns h2d bytes."""
    target = _numpy_dtype(tensor)
    if arr.dtype != target:
        arr = arr.astype(target)
    if tensor.device.type == "cpu" and tensor.is_contiguous():
        tensor.detach().numpy().reshape(-1)[...] = arr.reshape(-1)
        return 0
    with _stats.role(role):
        tensor.detach().copy_(from_numpy(np.ascontiguousarray(arr).reshape(tensor.shape)))
    return tensor.nbytes if tensor.device.type != "cpu" else 0


def divide(arr, p):
    """AVG: the sum divided by the group's size, in place (integers: truncated, as NCCL)."""
    if arr.dtype.kind in "fc":
        if p & (p - 1) == 0:
            np.multiply(arr, 1.0 / p, out=arr)  # exact: a power of two
        else:
            np.divide(arr, p, out=arr)
    elif arr.dtype.kind in "iu":
        np.floor_divide(arr, p, out=arr, where=arr >= 0)
        neg = arr < 0
        arr[neg] = -((-arr[neg]) // p)
    else:
        raise RuntimeError(f"ReduceOp.AVG is not defined for {arr.dtype} tensors")
