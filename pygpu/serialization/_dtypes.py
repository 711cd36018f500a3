"""One table of element types across the file formats pygpu reads and writes.

Each row: the dtype's name (PyTorch's and pygpu's: "float32"), PyTorch's legacy storage
class in a checkpoint's pickle ("FloatStorage"; None for the dtypes PyTorch writes as an
UntypedStorage plus the dtype, through _rebuild_tensor_v3), the NumPy dtype of its bytes
(little-endian; bfloat16's bytes are read as uint16 bits), its safetensors code and its
size in bytes. Whether pygpu holds the dtype is asked of pygpu's own dtype table at the
time of use, so a dtype that pygpu gains (int8, uint8, int16, int32, complex64, ...)
works in every format without a change here: a new dtype is a row."""
import numpy as np

from .. import _dtype

# name, torch storage class, NumPy dtype of the bytes, safetensors code, itemsize
ROWS = (
    ("float64", "DoubleStorage", "<f8", "F64", 8),
    ("float32", "FloatStorage", "<f4", "F32", 4),
    ("float16", "HalfStorage", "<f2", "F16", 2),
    ("bfloat16", "BFloat16Storage", "<u2", "BF16", 2),
    ("int64", "LongStorage", "<i8", "I64", 8),
    ("int32", "IntStorage", "<i4", "I32", 4),
    ("int16", "ShortStorage", "<i2", "I16", 2),
    ("int8", "CharStorage", "<i1", "I8", 1),
    ("uint8", "ByteStorage", "<u1", "U8", 1),
    ("bool", "BoolStorage", "|b1", "BOOL", 1),
    ("complex128", "ComplexDoubleStorage", "<c16", None, 16),
    ("complex64", "ComplexFloatStorage", "<c8", "C64", 8),
    ("uint16", None, "<u2", "U16", 2),
    ("uint32", None, "<u4", "U32", 4),
    ("uint64", None, "<u8", "U64", 8),
    ("float8_e4m3fn", None, "<u1", "F8_E4M3", 1),
    ("float8_e5m2", None, "<u1", "F8_E5M2", 1),
    ("float8_e4m3fnuz", None, "<u1", "F8_E4M3FNUZ", 1),
    ("float8_e5m2fnuz", None, "<u1", "F8_E5M2FNUZ", 1),
    ("float8_e8m0fnu", None, "<u1", "F8_E8M0", 1),  # (safetensors.torch has no mapping for it)
    # PyTorch's complex32 and shell dtypes (the sub-byte integers: torch saves none of them)
    ("complex32", None, "<u4", None, 4),  # (torch writes it untyped: _rebuild_tensor_v3)
    ("float4_e2m1fn_x2", None, "<u1", None, 1),  # (safetensors' F4 counts 4-bit halves: not mapped)
    ("bits8", None, "<u1", None, 1),
    ("bits1x8", None, "<u1", None, 1),
    ("bits2x4", None, "<u1", None, 1),
    ("bits4x2", None, "<u1", None, 1),
    ("bits16", None, "<u2", None, 2),
    # the quantized dtypes: a storage of their levels (pygpu/quantization/_quantized.py),
    # read and written as the level dtype's bytes (the sixth column)
    ("quint8", "QUInt8Storage", "<u1", None, 1, "uint8"),
    ("qint8", "QInt8Storage", "<i1", None, 1, "int8"),
    ("qint32", "QInt32Storage", "<i4", None, 4, "int32"),
)


class Row:
    __slots__ = ("name", "storage", "numpy", "safetensors", "itemsize", "levels")

    def __init__(self, name, storage, numpy_dtype, st_code, itemsize, levels=None):
        self.name, self.storage, self.safetensors, self.itemsize = name, storage, st_code, itemsize
        self.numpy = np.dtype(numpy_dtype)
        self.levels = levels  # a quantized dtype's: the dtype of the tensor of its levels

    def __repr__(self):
        return f"<dtype row {self.name}>"

    @property
    def held_as(self):
        """The pygpu DType a storage of this row is read into: its own, or a quantized
        dtype's levels' (uint8, int8, int32)."""
        return _dtype._BY_NAME.get(self.levels) if self.levels else self.pygpu

    @property
    def pygpu(self):
        """pygpu's DType of this name, or None while pygpu does not hold it (or it is a
        quantized dtype: not a pygpu.Tensor's dtype)."""
        if self.levels:
            return None
        d = _dtype._BY_NAME.get(self.name)
        return d if d is not None and d.name == self.name else None


TABLE = tuple(Row(*r) for r in ROWS)
BY_NAME = {r.name: r for r in TABLE}
BY_STORAGE = {r.storage: r for r in TABLE if r.storage}
BY_SAFETENSORS = {r.safetensors: r for r in TABLE if r.safetensors}
# PyTorch's other spellings of the same dtypes, as a pickle may name them (torch.float, ...)
ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
           "int": "int32", "short": "int16", "cfloat": "complex64", "cdouble": "complex128",
           "bool_": "bool"}


def row_of(dtype):
    """The row of a pygpu DType (or a dtype name)."""
    name = dtype if isinstance(dtype, str) else dtype.name
    return BY_NAME[ALIASES.get(name, name)]


def held():
    """The dtypes pygpu holds, as the words of an error message."""
    return _dtype.SUPPORTED
