"""The quantized dtypes and quantization schemes, as rows of two tables.

A quantized dtype (PyTorch's torch.quint8, qint8, qint32, quint4x2, quint2x4) is an integer
storage dtype plus the range of its levels: a quantized tensor (_quantized.py) keeps its
integers in an ordinary pygpu tensor of the storage dtype, one integer per element (the
sub-byte dtypes too: they are packed two or four to a byte only where PyTorch shows the
bytes, int_repr() and saved files). A scheme (torch.per_tensor_affine, ...) says how the
scale and zero point map levels to reals. Nothing here computes: these are value types."""
import numpy as np

# name, storage dtype, lowest level, highest level, elements per byte, legacy storage class,
# and how PyTorch's CPU kernel (x86, fbgemm build) rounds x * inv_scale (float32) and adds
# the zero point, found against torch itself (tests/test_quantized_tensor.py holds it):
#   "fma"        nearbyint(fmaf(x, inv_scale, zero_point))       (fbgemm's AVX2 Quantize)
#   "add_f32"    nearbyint((float)(x * inv_scale) + (float)zero_point)  (fbgemm, legacy)
#   "round_add"  zero_point + nearbyint((float)(x * inv_scale))    (ATen's quantize_val)
QDTYPE_ROWS = (
    ("quint8", "uint8", 0, 255, 1, "QUInt8Storage", "fma"),
    ("qint8", "int8", -128, 127, 1, "QInt8Storage", "fma"),
    ("qint32", "int32", -2 ** 31, 2 ** 31 - 1, 1, "QInt32Storage", "add_f32"),
    ("quint4x2", "uint8", 0, 15, 2, "QUInt4x2Storage", "round_add"),
    ("quint2x4", "uint8", 0, 3, 4, "QUInt2x4Storage", "round_add"),
)


class QDType:
    """A quantized element type (torch.dtype's quantized rows): its storage dtype's name
    (`storage`), its NumPy twin (`numpy`), its levels [qmin, qmax], how many elements
    share a byte (`per_byte`: 2 for quint4x2, 4 for quint2x4) and its `rounding` rule."""
    __slots__ = ("name", "numpy", "storage", "qmin", "qmax", "per_byte", "storage_class",
                 "rounding")
    is_floating_point = False
    is_complex = False
    is_quantized = True

    def __init__(self, name, storage, qmin, qmax, per_byte, storage_class, rounding):
        self.name, self.storage, self.rounding = name, storage, rounding
        self.numpy = np.dtype(storage)
        self.qmin, self.qmax, self.per_byte = qmin, qmax, per_byte
        self.storage_class = storage_class

    @property
    def itemsize(self):
        return self.numpy.itemsize

    @property
    def is_signed(self):
        raise RuntimeError("isSignedType not supported for quantized types")

    def to_real(self):
        return self

    def __repr__(self):
        return f"torch.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return (_qdtype_by_name, (self.name,))


QDTYPES = {row[0]: QDType(*row) for row in QDTYPE_ROWS}
quint8, qint8, qint32 = QDTYPES["quint8"], QDTYPES["qint8"], QDTYPES["qint32"]
quint4x2, quint2x4 = QDTYPES["quint4x2"], QDTYPES["quint2x4"]


def _qdtype_by_name(name):
    return QDTYPES[name]


class qscheme:
    """A quantization scheme (torch.qscheme): per tensor or per channel, affine or
    symmetric, and per_channel_affine_float_qparams (float zero points: embeddings)."""
    __slots__ = ("name", "per_channel")

    def __init__(self, name):
        self.name = name
        self.per_channel = name.startswith("per_channel")

    def __repr__(self):
        return f"torch.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return (_qscheme_by_name, (self.name,))


QSCHEMES = {n: qscheme(n) for n in ("per_tensor_affine", "per_channel_affine",
                                    "per_tensor_symmetric", "per_channel_symmetric",
                                    "per_channel_affine_float_qparams")}
per_tensor_affine = QSCHEMES["per_tensor_affine"]
per_channel_affine = QSCHEMES["per_channel_affine"]
per_tensor_symmetric = QSCHEMES["per_tensor_symmetric"]
per_channel_symmetric = QSCHEMES["per_channel_symmetric"]
per_channel_affine_float_qparams = QSCHEMES["per_channel_affine_float_qparams"]


def _qscheme_by_name(name):
    return QSCHEMES[name]


def qdtype_of(dtype, who):
    """The QDType that `dtype` names (a QDType, "quint8", "torch.quint8"), or PyTorch's
    RuntimeError for a dtype that is not a quantized one."""
    if isinstance(dtype, QDType):
        return dtype
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if isinstance(name, str) and name.replace("torch.", "") in QDTYPES:
        return QDTYPES[name.replace("torch.", "")]
    shown = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
             "int32": "Int", "uint8": "Byte", "int8": "Char"}.get(str(name), str(name))
    raise RuntimeError(f"ScalarType {shown} is not supported in {who}.")
