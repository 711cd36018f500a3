"""Element types: small value objects with a name, a size and a stable code.

The dtypes, their codes, sizes and kinds come from the C core's dtype table
(csrc/core/pg_dtype.h, read as _C._dtype_table()), as does SUPPORTED, the text
every message that lists the dtypes uses; the C core returns these very objects
from Tensor.dtype. float16 and bfloat16 are dtypes like the others: ops read
and write them directly, computing each element in float32 and rounding once;
NumPy has no bfloat16, so its `numpy` is None."""
import numpy as np

from . import _C


class DType:
    __slots__ = ("name", "itemsize", "is_floating_point", "_code", "_numpy")

    def __init__(self, name, code, itemsize, is_float, numpy_dtype):
        self.name = name
        self._code = code
        self.itemsize = itemsize
        self.is_floating_point = is_float
        self._numpy = numpy_dtype

    def __repr__(self):
        return f"pygpu.{self.name}"

    def __str__(self):
        """PyTorch's spelling, "torch.float32": what print(t.dtype) shows under torch, so a
        program prints the same under `import pygpu as torch` (the bare name is .name)."""
        return f"torch.{self.name}"

    def __eq__(self, other):
        if isinstance(other, DType):
            return self is other
        try:
            return to_dtype(other) is self
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.name)

    def __reduce__(self):
        return (to_dtype, (self.name,))

    @property
    def numpy(self):
        """The matching NumPy dtype (None for bfloat16, which NumPy lacks)."""
        return self._numpy


_ROWS, SUPPORTED = _C._dtype_table()  # ((name, code, itemsize, is_float), ...), "float32, ..."


def _numpy_of(name):
    try:
        nd = np.dtype(name)
    except TypeError:
        return None  # bfloat16: NumPy has none of its own
    return None if nd.kind == "V" else nd  # (nor is ml_dtypes' bfloat16 NumPy's)


ALL = tuple(DType(name, code, size, is_float, _numpy_of(name))
            for name, code, size, is_float in _ROWS)
_BY_NAME = {d.name: d for d in ALL}
# the module's names for them (tests/test_op_registry.py checks these are ALL, in order)
bool_, int64, float32, float64, float16, bfloat16 = ALL
_BY_NAME.update({"bool_": bool_, "float": float32, "double": float64, "long": int64})


def to_dtype(obj):
    """A DType from a DType, a name ("float32"), a NumPy dtype or scalar type."""
    if isinstance(obj, DType):
        return obj
    if isinstance(obj, str) and obj in _BY_NAME:
        return _BY_NAME[obj]
    if obj is bool:
        return bool_
    if obj is int:
        return int64
    if obj is float:
        return float32
    try:
        nd = np.dtype(obj)
    except TypeError:
        nd = None
    if nd is not None:
        if not nd.isnative:
            order = "big-endian" if nd.byteorder == ">" else "byte-swapped"
            raise TypeError(
                f"dtype {obj!r} is {order}: pygpu holds numbers in this machine's native byte "
                f"order; ask for {nd.newbyteorder('=').name!r}, and convert an array `a` of it "
                f"with a.astype(a.dtype.newbyteorder('='))")
        if nd == np.bool_:
            return bool_
        if nd.kind == "i" and nd.itemsize == 8:
            return int64
        for d in ALL:
            if d.is_floating_point and d._numpy is not None and nd == d._numpy:
                return d
        if nd.kind == "V" and nd.name == "bfloat16" or str(nd) == "bfloat16":  # ml_dtypes'
            return bfloat16
    raise TypeError(f"unsupported dtype {obj!r}: pygpu supports {SUPPORTED}")


def dtype_code(obj):
    """The C core's code for a user's dtype spelling (used as a hook by _C)."""
    return to_dtype(obj)._code


def _import_ml_dtypes():
    import ml_dtypes
    return ml_dtypes


def numpy_bfloat16():
    """NumPy's bfloat16 dtype, from the optional ml_dtypes package (used by _C for
    Tensor.numpy() of a bfloat16 tensor); a TypeError saying how to get it if absent."""
    try:
        return np.dtype(_import_ml_dtypes().bfloat16)
    except ImportError:
        raise TypeError("NumPy has no bfloat16 dtype of its own: install the ml_dtypes package "
                        "(pip install ml_dtypes) to get bfloat16 arrays, or convert with "
                        ".astype(pygpu.float32) first (exact: every bfloat16 is a float32)"
                        ) from None
