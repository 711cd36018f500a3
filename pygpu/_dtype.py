"""Element types: small value objects with a name, a size and a stable code, as PyTorch's
torch.dtype (is_floating_point, is_complex, is_signed, itemsize); at the end, the quantized
dtypes (quint8, qint8, ...) and schemes, value types of PyTorch's quantized tensors.

The dtypes, their codes, sizes, kinds and PyTorch's names for them come from the C core's
dtype table (csrc/core/pg_dtype.h, read as _C._dtype_table()), as does SUPPORTED, the text
every message that lists the dtypes uses; the C core returns these very objects from
Tensor.dtype. This module is the one place that maps a pygpu dtype to and from its NumPy
dtype (`numpy_of`, `to_dtype`), PyTorch's legacy names (torch.CharTensor, torch.CharStorage:
`legacy_name`, `from_legacy_name`; what a PyTorch checkpoint's pickle names a storage by)
and PyTorch's other spellings (torch.int, torch.short, torch.long ...: `ALIASES`).
float16 and bfloat16 are dtypes like the others: ops read and write them directly,
computing each element in float32 and rounding once; NumPy has no bfloat16, so its
`numpy` is None (ml_dtypes' is used where a NumPy array must hold one).
uint16, uint32, uint64 and the float8 dtypes are PyTorch's "bare" ones (c10's barebones
unsigned types and its float8 family): no promotion with another dtype, no legacy
constructor or cast method (torch.UInt16Tensor does not exist; Tensor.type() still names
it). float8 tensors are stored, cast, copied, filled and indexed, and run the few ops PyTorch
runs on them (csrc/core/pg_fp8_ops.h: ==, !=, *, abs, isnan, mm, ...); the rest of their
arithmetic raises NotImplementedError, as PyTorch's does. NumPy has none of the float8 dtypes: ml_dtypes'
are used, as for bfloat16.
PyTorch's "shell" dtypes follow (pg_dtype.h's pg_dtype_is_shell): uint1..uint7, int1..int7,
bits1x8, bits2x4, bits4x2, bits8, bits16 and float4_e2m1fn_x2, names for bytes that a tensor is
made of (empty, zeros), viewed as (Tensor.view(dtype)), sliced and (bits, float4) copied in;
PyTorch computes nothing on them, and neither does pygpu. Last, complex32 (torch.chalf): a pair
of float16s, with the complex ops PyTorch's CPU runs on it (pygpu/_tensor/complex.py)."""
import numpy as np

from . import _C


class DType:
    __slots__ = ("name", "itemsize", "is_floating_point", "_signed", "_code", "_numpy",
                 "_kind", "_legacy", "_bare")

    def __init__(self, name, code, itemsize, kind, legacy, numpy_dtype, bare):
        self.name = name
        self._code = code
        self.itemsize = itemsize
        # "bool", "sint", "uint", "float", "half", "complex", "fp8", and the shell kinds
        # "subu", "subs" (sub-byte integers), "bits", "fp4" (pg_dtype.h's kind column)
        self._kind = kind
        self.is_floating_point = kind in ("float", "half", "fp8", "fp4")
        # bool and the unsigned integers are not; nor is float8_e8m0fnu (no sign bit)
        self._signed = kind in ("sint", "float", "half", "complex", "fp8", "subs", "fp4") and \
            name != "float8_e8m0fnu"
        self._legacy = legacy
        self._numpy = numpy_dtype
        # PyTorch's bare dtypes (pg_dtype.h's pg_dtype_is_bare: the rows after complex128)
        self._bare = bare

    @property
    def is_complex(self):
        return self._kind == "complex"

    @property
    def is_signed(self):
        if self._kind == "bits":  # c10's isSignedType has no answer for them
            raise RuntimeError("Bits types are undefined")
        return self._signed

    @property
    def _is_shell(self):
        """A shell dtype (pg_dtype.h): bytes with a name, no numbers PyTorch reads."""
        return self._kind in ("subu", "subs", "bits", "fp4")

    def to_real(self):
        """PyTorch's dtype.to_real(): complex64 -> float32, complex128 -> float64,
        complex32 -> float16."""
        return {"complex64": float32, "complex128": float64,
                "complex32": float16}.get(self.name, self)

    def to_complex(self):
        """PyTorch's dtype.to_complex(): float64 -> complex128, float16 -> complex32, the other
        floats -> complex64."""
        if self.is_complex:
            return self
        if self._kind in ("fp8", "fp4") or self._is_shell:
            raise RuntimeError(f"Unknown Complex ScalarType for {self._legacy}")  # torch's words
        if not self.is_floating_point:
            raise RuntimeError(f"to_complex is only supported for floating point types, got "
                               f"{self}")  # (PyTorch has complex32 for float16)
        return complex128 if self is float64 else complex32 if self is float16 else complex64

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
        """The matching NumPy dtype (None for bfloat16 and float8, which NumPy lacks)."""
        return self._numpy


# ((name, code, itemsize, kind, legacy, alias), ...), "float32, ... and bool"
_ROWS, SUPPORTED = _C._dtype_table()


def _numpy_of(name, kind):
    if kind in ("subu", "subs", "bits", "fp4") or name == "complex32":
        return None  # NumPy has none (and ml_dtypes' int4 is not PyTorch's int4)
    try:
        nd = np.dtype(name)
    except TypeError:
        return None  # bfloat16: NumPy has none of its own
    return None if nd.kind == "V" else nd  # (nor is ml_dtypes' bfloat16 NumPy's)


# the bare dtypes are the rows after complex128's (pg_dtype.h's pg_dtype_is_bare)
_LAST_FULL = next(code for name, code, *_ in _ROWS if name == "complex128")
ALL = tuple(DType(name, code, size, kind, legacy, _numpy_of(name, kind), code > _LAST_FULL)
            for name, code, size, kind, legacy, _alias in _ROWS)
_BY_NAME = {d.name: d for d in ALL}
# the module's names for them, in code order (tests/test_op_registry.py checks these are ALL)
(bool_, int64, float32, float64, float16, bfloat16, uint8, int8, int16, int32, complex64, complex128,
 uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
 float8_e8m0fnu, uint1, uint2, uint3, uint4, uint5, uint6, uint7, int1, int2, int3, int4, int5, int6,
 int7, bits1x8, bits2x4, bits4x2, bits8, bits16, float4_e2m1fn_x2, complex32) = ALL
# the shell dtypes (pg_dtype.h's pg_dtype_is_shell), in code order
SHELL = tuple(d for d in ALL if d._is_shell)
# PyTorch's other spellings (torch.int is int32, torch.long int64, torch.half float16, ...)
ALIASES = {alias: _BY_NAME[name] for name, _c, _s, _k, _l, alias in _ROWS if alias}
_BY_NAME.update(ALIASES)
_BY_NAME["bool_"] = bool_
_BY_LEGACY = {d._legacy: d for d in ALL if not d._bare}  # (the bare ones have no class)
# NumPy dtype -> DType, for the dtypes NumPy has (int64 is NumPy's long and longlong alike)
_BY_NUMPY = {(d._numpy.kind, d._numpy.itemsize): d for d in ALL if d._numpy is not None}


def legacy_name(dtype, suffix="Tensor"):
    """PyTorch's legacy name of a dtype: legacy_name(int8) is "CharTensor",
    legacy_name(int8, "Storage") "CharStorage" (the storage class a checkpoint names)."""
    return to_dtype(dtype)._legacy + suffix


def from_legacy_name(name):
    """The dtype of a legacy name: "torch.CharStorage", "CharTensor", "torch.cuda.FloatTensor"
    (the suffix Tensor or Storage and any module prefix); None if it names none."""
    base = name.rsplit(".", 1)[-1]
    for suffix in ("Tensor", "Storage"):
        if base.endswith(suffix):
            return _BY_LEGACY.get(base[:-len(suffix)])
    return None


def numpy_of(dtype):
    """NumPy's dtype for a pygpu dtype (ml_dtypes' for bfloat16 and float8, when installed);
    PyTorch's TypeError for the shell dtypes and complex32, which have none."""
    d = to_dtype(dtype)
    if d._is_shell or d is complex32:
        raise TypeError(f"Got unsupported ScalarType {d._legacy}")
    return d._numpy if d._numpy is not None else numpy_extra(d.name)


def to_dtype(obj):
    """A DType from a DType, a name ("float32", "int"), a NumPy dtype or scalar type."""
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
    if obj is complex:
        return complex128  # NumPy's and PyTorch's reading of the type complex
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
        if (nd.kind, nd.itemsize) in _BY_NUMPY:
            return _BY_NUMPY[(nd.kind, nd.itemsize)]
        if nd.kind == "V" and nd.name in _BY_NAME or str(nd) in _BY_NAME:  # ml_dtypes'
            d = _BY_NAME[nd.name if nd.name in _BY_NAME else str(nd)]
            if d._numpy is None and d.itemsize == nd.itemsize and not d._is_shell \
                    and d is not complex32:
                return d
    raise TypeError(f"unsupported dtype {obj!r}: pygpu supports {SUPPORTED}")


def promote_types(type1, type2):
    """torch.promote_types: c10's promotion table (csrc/core/pg_dtype.c), as data."""
    a, b = to_dtype(type1), to_dtype(type2)
    return ALL[_C._promote_types(a._code, b._code)]


def can_cast(from_, to):
    """torch.can_cast: c10's canCast, no cast to a lower category (a complex to a real, a float
    to an integer, a number to bool); uint8 to int8 is allowed (one category). The shell dtypes
    are not integers there (c10's isIntegralType), so a float casts to them."""
    a, b = to_dtype(from_), to_dtype(to)
    if a.is_complex and not b.is_complex:
        return False
    if a.is_floating_point and b._kind in ("sint", "uint"):
        return False
    return not (a is not bool_ and b is bool_)


def dtype_code(obj):
    """The C core's code for a user's dtype spelling (used as a hook by _C)."""
    return to_dtype(obj)._code


def _import_ml_dtypes():
    import ml_dtypes
    return ml_dtypes


def numpy_extra(name="bfloat16"):
    """NumPy's dtype of a pygpu dtype NumPy lacks (bfloat16, the float8 dtypes), from the
    optional ml_dtypes package (used by _C for Tensor.numpy() of such a tensor); a TypeError
    saying how to get it if absent; PyTorch's TypeError for a dtype NumPy has no twin of
    (complex32, the shell dtypes: ml_dtypes' int4 is not PyTorch's)."""
    d = _BY_NAME.get(name)
    if d is not None and (d._is_shell or d.name == "complex32"):
        raise TypeError(f"Got unsupported ScalarType {d._legacy}")
    try:
        return np.dtype(getattr(_import_ml_dtypes(), name))
    except ImportError:
        raise TypeError(f"NumPy has no {name} dtype of its own: install the ml_dtypes package "
                        f"(pip install ml_dtypes) to get {name} arrays, or convert with "
                        f".astype(pygpu.float32) first (exact: every {name} is a float32)"
                        ) from None


def numpy_bfloat16():
    """numpy_extra("bfloat16")."""
    return numpy_extra("bfloat16")


# ---- the quantized dtypes and schemes (issue 43) ----------------------------------------
# The quantized dtypes and quantization schemes, as rows of two tables.
#
# A quantized dtype (PyTorch's torch.quint8, qint8, qint32, quint4x2, quint2x4) is an integer
# storage dtype plus the range of its levels: a quantized tensor (_quantized.py) keeps its
# integers in an ordinary pygpu tensor of the storage dtype, one integer per element (the
# sub-byte dtypes too: they are packed two or four to a byte only where PyTorch shows the
# bytes, int_repr() and saved files). A scheme (torch.per_tensor_affine, ...) says how the
# scale and zero point map levels to reals. Nothing here computes: these are value types.

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
