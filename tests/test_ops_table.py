# test_ops_table.py - the one table that runs every op on every device against NumPy.
#
# Each row of OPS names an op, how to compute it with pygpu, its NumPy
# reference, the input cases (shapes including broadcasting pairs, zero-size,
# one-element, 0-d, and non-contiguous views: transposes and step slices), the
# dtypes, and a tolerance class. test_op_matches_numpy runs every
# (row x dtype x case) on every selected device: inputs are uploaded with
# pygpu.tensor(a, device=d), views are taken on the device, and the result must
# match NumPy in value, shape, dtype and device. A new op is not done without a
# row here; test_table_covers_every_op checks that no listed op lost its row.
import warnings
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import pygpu

from _helpers import ACT_CODE, ACT_NP, ACTS, TENSOR_TYPE, random_array, same_device, to_device

# A DeprecationWarning from pygpu (e.g. __int__ returning a bool) is a bug here.
pytestmark = pytest.mark.filterwarnings("error::DeprecationWarning")

# (rtol, atol) per result dtype. "accumulate" (sums, means, matmul) is relative
# to the magnitude of the terms summed (the reference applied to |inputs|), so
# cancellation does not make a correct result look wrong.
# The half dtypes are rounded once from a float32 result: float16's ulp is 2**-10 relative,
# bfloat16's 2**-7; where a transcendental's last float32 bit differs from NumPy's, the
# rounding may land one half ulp away, so the elementwise bounds allow two ulps.
TOL = {
    "elementwise": {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-15), "float16": (2e-3, 1e-4),
                    "bfloat16": (1.6e-2, 1e-3)},
    "accumulate": {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12), "float16": (2e-3, 1e-3),
                   "bfloat16": (8e-3, 1e-2)},
    # fused training ops: sums through nonlinear steps, compared value by value
    "fused": {"float32": (2e-4, 2e-5), "float64": (1e-10, 1e-12)},
    # special functions near a root (digamma, lgamma) or summed series (zeta, the Bessel
    # functions): a few ulp of the terms, not of the result
    "special": {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-13), "float16": (2e-3, 1e-4),
                "bfloat16": (1.6e-2, 1e-3)},
}


@dataclass(frozen=True)
class In:
    """One input: a base array of `shape`, then `view` taken on it (on both sides)."""

    shape: tuple
    view: Callable | None = None
    label: str = ""

    @property
    def name(self):
        return self.label or ("x".join(map(str, self.shape)) or "0d")


def a(*shape):
    return In(tuple(shape))


def tr(*shape):  # the transpose of a C-contiguous (shape) array: not contiguous
    return In(tuple(shape), lambda x: x.T, "x".join(map(str, shape)) + ".T")


STEP9 = In((9,), lambda x: x[::2], "9[::2]")  # (5,), stride 2
COLSTEP = In((3, 8), lambda x: x[:, 1::3], "3x8[:,1::3]")  # (3, 3), offset 1
BLOCK = In((4, 6), lambda x: x[1:3, ::2], "4x6[1:3,::2]")  # (2, 3)
PERM = In((2, 3, 4), lambda x: x.transpose(1, 0, 2), "2x3x4.t102")  # (3, 2, 4)


def cases(*inputs_lists):
    """Each argument is one input or a tuple of inputs (one per operand)."""
    return tuple(i if isinstance(i, tuple) else (i,) for i in inputs_lists)


# --- input case sets --------------------------------------------------------
ND1 = cases(a(1), a(7), a(3, 4), a(2, 3, 4), tr(4, 3), STEP9, COLSTEP, BLOCK, PERM)
ND2 = cases(a(1, 1), a(3, 4), a(2, 3, 4), tr(4, 3), COLSTEP, BLOCK, PERM)
EMPTY = cases(a(0), a(0, 3), a(3, 0))
UNARY = cases(a()) + ND1 + EMPTY
ONE_ELEMENT = cases(a(), a(1), a(1, 1))
BINARY = cases(
    (a(), a()), (a(1), a(1)), (a(7), a(7)), (a(3, 4), a(3, 4)),
    (a(3, 1), a(1, 4)), (a(2, 3, 4), a(4)), (a(2, 3, 4), a(3, 1)),
    (a(5), a()), (a(), a(2, 3)), (a(1), a(3, 4)),
    (a(0), a(0)), (a(0, 3), a(1, 3)), (a(0, 3), a(3)), (a(3, 0), a(3, 1)),
    (tr(4, 3), a(3, 4)), (tr(4, 3), a(3, 1)), (STEP9, In((10,), lambda x: x[1::2], "10[1::2]")),
    (COLSTEP, a(3, 3)), (PERM, a(4)),
)
MIXED = cases((a(3, 4), a(3, 4)), (a(3, 1), a(4)), (a(), a(5)), (tr(4, 3), a(3, 4)), (a(0, 2), a(2)))
MATMUL = cases(
    (a(3, 4), a(4, 5)), (a(3, 4), a(4)), (a(4), a(4, 5)), (a(4), a(4)),
    (a(2, 3, 4), a(2, 4, 5)), (a(2, 3, 4), a(4, 5)), (a(1, 1), a(1, 1)),
    (a(0, 4), a(4, 5)), (a(3, 0), a(0, 5)), (a(3, 4), a(4, 0)), (a(0), a(0)),
    (tr(4, 3), a(4, 5)), (a(3, 4), tr(5, 4)), (tr(4, 3), tr(5, 4)),
    (a(2, 3, 4), tr(5, 4)), (a(33, 65), a(65, 17)), (a(64, 128), a(128, 64)),
    # large enough for the GEMM scheduler to cut into panels (cpu_gemm_schedule.c): columns,
    # rows, batches; strided (a column slice: lda > cols) and transposed operands
    (a(200, 200), a(200, 200)), (a(300, 90), tr(40, 90)), (tr(120, 260), a(120, 70)),
    (In((130, 200), lambda x: x[:, 3:163], "130x200[:,3:163]"), a(160, 96)),
    (a(4, 60, 70), a(70, 80)), (a(3, 90, 70), In((3, 110, 70), lambda x: x.transpose(0, 2, 1), "3x110x70.t021")),
)
FLOATS = ("float32", "float64")
NUMERIC = ("float32", "float64", "int64")
ALL = ("float32", "float64", "int64", "bool")
# The half dtypes: each kernel loads an element, computes in float32 and rounds once at
# the store. float16 is compared with NumPy's float16 loops (which do the same);
# bfloat16 with ml_dtypes.bfloat16 arrays, its arithmetic references computed in
# float32 and rounded once (_reference). Without ml_dtypes only float16 runs.
try:
    import ml_dtypes  # noqa: F401  (registers np.dtype("bfloat16"))

    HALF = ("float16", "bfloat16")
except ImportError:
    HALF = ("float16",)
STORAGE = ALL + HALF
NUMERIC16 = NUMERIC + HALF
NUMERIC_BIG = NUMERIC + HALF  # the vector-size rows: blocks, tails and pool splits
FLOATS_BIG = FLOATS + HALF
MIXED_PAIRS = (
    ("int64", "float32"), ("float32", "int64"), ("float32", "float64"),
    ("int64", "float64"), ("bool", "int64"), ("bool", "float32"), ("float64", "bool"),
    ("float16", "int64"), ("float16", "float32"), ("bool", "float16"), ("float64", "float16"),
) + ((("bfloat16", "int64"), ("bfloat16", "float32"), ("bool", "bfloat16"),
      ("float16", "bfloat16")) if "bfloat16" in HALF else ())


@dataclass(frozen=True)
class Op:
    name: str
    fn: Callable  # (*tensors) -> pygpu result
    ref: Callable | None  # (*ndarrays) -> NumPy result; None: same as fn (operators, methods)
    cases: tuple
    dtypes: tuple  # dtype name for every input, or a tuple with one per input
    domains: tuple = ("any",)  # per input (the last one repeats): any / positive / nonzero
    tol: str = "elementwise"  # elementwise | accumulate | exact
    kind: str = "tensor"  # tensor | value (compared with ==) | tensors (a list of tensors)
    result_device: str | None = None  # None: the inputs' device


def _np(name):
    return getattr(np, name)


OPS = []


def row(*args, **kwargs):
    OPS.append(Op(*args, **kwargs))


# --- arithmetic operators and their promotion (PyTorch's: _as_torch) with Python scalars ---
for _name, _f in [
    ("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y),
]:
    row(_name, _f, None, BINARY, NUMERIC16)
    row(_name + "_mixed", _f, None, MIXED, MIXED_PAIRS)
row("div", lambda x, y: x / y, None, BINARY, NUMERIC16, ("any", "nonzero"))
row("div_mixed", lambda x, y: x / y, None, MIXED, MIXED_PAIRS[:4] + (("bool", "float32"),), ("any", "nonzero"))
for _name, _f in [
    ("add_int", lambda x: x + 2), ("add_float", lambda x: x + 2.5),
    ("radd_int", lambda x: 2 + x), ("radd_float", lambda x: 2.5 + x),
    ("sub_int", lambda x: x - 3), ("rsub_float", lambda x: 1.5 - x),
    ("mul_float", lambda x: x * 2.5), ("rmul_int", lambda x: 2 * x),
    ("div_int", lambda x: x / 2), ("div_float", lambda x: x / 2.5),
]:
    row("scalar_" + _name, _f, None, UNARY, NUMERIC16)
row("scalar_rdiv_float", lambda x: 2.5 / x, None, UNARY, NUMERIC16, ("nonzero",))
row("neg", lambda x: -x, None, UNARY, NUMERIC16)
row("abs", lambda x: abs(x), None, UNARY, NUMERIC16)
row("logical_not", pygpu.logical_not, np.logical_not, UNARY, ("bool",))
for _name in ("maximum", "minimum"):
    row(_name, getattr(pygpu, _name), _np(_name), BINARY, NUMERIC16)
    row(_name + "_mixed", getattr(pygpu, _name), _np(_name), MIXED, MIXED_PAIRS)

# --- comparisons: bool results, bool inputs allowed ---
for _name, _f in [
    ("eq", lambda x, y: x == y), ("ne", lambda x, y: x != y), ("lt", lambda x, y: x < y),
    ("le", lambda x, y: x <= y), ("gt", lambda x, y: x > y), ("ge", lambda x, y: x >= y),
]:
    row(_name, _f, None, BINARY, STORAGE, tol="exact")
row("lt_mixed", lambda x, y: x < y, None, MIXED, MIXED_PAIRS, tol="exact")
row("eq_mixed", lambda x, y: x == y, None, MIXED, MIXED_PAIRS, tol="exact")
row("scalar_gt", lambda x: x > 0, None, UNARY, NUMERIC16, tol="exact")
row("scalar_rlt", lambda x: 0.5 < x, None, UNARY, NUMERIC16, tol="exact")
row("scalar_eq", lambda x: x == 1, None, UNARY, STORAGE, tol="exact")

# --- matmul ---
row("matmul_operator", lambda x, y: x @ y, None, MATMUL, NUMERIC16, tol="accumulate")
row("matmul_function", pygpu.matmul, np.matmul, MATMUL, NUMERIC16, tol="accumulate")

# --- elementwise math: functions and methods; int64 -> float64 except relu ---
_MATH_REFS = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0),
}
for _name, _ref in _MATH_REFS.items():
    _dom = ("positive",) if _name in ("log", "sqrt") else ("any",)
    row(_name, getattr(pygpu, _name), _ref, UNARY, NUMERIC16, _dom)
    row(_name + "_method", lambda x, _n=_name: getattr(x, _n)(), _ref, UNARY, NUMERIC16, _dom)

# --- the math functions (pg_ops.def's rows after isfinite and after ge): name -> (NumPy
# reference, or torch's where NumPy has none; the domain of each input; tolerance class).
# Two cases each (contiguous, a transpose; the generic paths are the rows above), floats and
# float16; the NUM rows int64 too. Methods, in-place forms, gradients, special values and
# vector-size runs are tests/test_math_ops.py's. ---
def _torch_ref(name):
    def ref(*xs):
        import torch
        f = torch
        for part in name.split("."):
            f = getattr(f, part)
        return f(*[torch.from_numpy(np.array(x)) for x in xs]).numpy()
    return ref


MATH_UNARY = {
    "sin": (np.sin, "any", "elementwise"), "cos": (np.cos, "any", "elementwise"),
    "tan": (np.tan, "any", "elementwise"), "asin": (np.arcsin, "unit", "elementwise"),
    "acos": (np.arccos, "unit", "elementwise"), "atan": (np.arctan, "any", "elementwise"),
    "sinh": (np.sinh, "any", "elementwise"), "cosh": (np.cosh, "any", "elementwise"),
    "asinh": (np.arcsinh, "any", "elementwise"), "acosh": (np.arccosh, "gt1", "elementwise"),
    "atanh": (np.arctanh, "unit", "elementwise"), "log1p": (np.log1p, "positive", "elementwise"),
    "expm1": (np.expm1, "any", "elementwise"), "log2": (np.log2, "positive", "elementwise"),
    "log10": (np.log10, "positive", "elementwise"), "exp2": (np.exp2, "any", "elementwise"),
    "erf": (_torch_ref("erf"), "any", "elementwise"), "erfc": (_torch_ref("erfc"), "any", "elementwise"),
    "erfinv": (_torch_ref("erfinv"), "unit", "special"),
    "lgamma": (_torch_ref("lgamma"), "positive", "special"),
    "digamma": (_torch_ref("digamma"), "any", "special"),
    "logit": (_torch_ref("logit"), "prob", "elementwise"), "sinc": (_torch_ref("sinc"), "any", "elementwise"),
    "deg2rad": (np.deg2rad, "any", "elementwise"), "rad2deg": (np.rad2deg, "any", "elementwise"),
    "frac": (lambda x: x - np.trunc(x), "any", "elementwise"),
    "i0": (_torch_ref("i0"), "any", "special"), "special_i0e": (_torch_ref("special.i0e"), "any", "special"),
    "special_i1": (_torch_ref("special.i1"), "any", "special"),
    "special_i1e": (_torch_ref("special.i1e"), "any", "special"),
    "special_ndtr": (_torch_ref("special.ndtr"), "any", "elementwise"),
    "special_entr": (_torch_ref("special.entr"), "any", "elementwise"),
    "square": (np.square, "any", "elementwise"), "signbit": (np.signbit, "any", "exact"),
    "isinf": (np.isinf, "any", "exact"), "isposinf": (np.isposinf, "any", "exact"),
    "isneginf": (np.isneginf, "any", "exact"),
}
MATH_BINARY = {
    "atan2": (np.arctan2, ("any",), "elementwise"), "hypot": (np.hypot, ("any",), "elementwise"),
    "fmod": (np.fmod, ("any", "nonzero"), "elementwise"),
    "remainder": (np.remainder, ("any", "nonzero"), "elementwise"),
    "floor_divide": (np.floor_divide, ("any", "nonzero"), "elementwise"),
    "copysign": (np.copysign, ("any",), "elementwise"),
    "xlogy": (_torch_ref("xlogy"), ("any", "positive"), "elementwise"),
    "special_xlog1py": (_torch_ref("special.xlog1py"), ("any", "positive"), "elementwise"),
    "logaddexp": (np.logaddexp, ("any",), "elementwise"),
    "logaddexp2": (np.logaddexp2, ("any",), "elementwise"),
    "heaviside": (lambda x, y: np.heaviside(x, y).astype(x.dtype), ("any",), "exact"), "fmax": (np.fmax, ("any",), "exact"),
    "fmin": (np.fmin, ("any",), "exact"), "nextafter": (np.nextafter, ("any",), "exact"),
    # (torch has no half zeta: computed in float32 and rounded once, as pygpu does)
    "special_zeta": (lambda x, q: _torch_ref("special.zeta")(x.astype(np.promote_types(x.dtype, np.float32)), q.astype(np.promote_types(q.dtype, np.float32))).astype(np.result_type(x, q)),
                     ("gt1", "positive"), "special"),
}
row("bitwise_not", pygpu.bitwise_not, np.invert, cases(a(3, 4), tr(4, 3)), ("int64", "bool"), tol="exact")
row("invert_operator", lambda x: ~x, np.invert, cases(a(7), STEP9), ("int64", "bool"), tol="exact")
_MATH_NUM = {"square", "signbit", "isinf", "isposinf", "isneginf", "fmod", "remainder",
             "floor_divide", "heaviside", "fmax", "fmin"}  # int64 rows (NUM and ANY)
for _name, (_ref, _dom, _tol) in MATH_UNARY.items():
    _dts = FLOATS + ("float16",) + (("int64",) if _name in _MATH_NUM else ())
    row(_name, getattr(pygpu._C, _name), _ref, cases(a(3, 4), tr(4, 3)), _dts, (_dom,), tol=_tol)
for _name, (_ref, _dom, _tol) in MATH_BINARY.items():
    _dts = (FLOATS + (("int64",) if _name in _MATH_NUM else ())
            + (("float16",) if _name != "nextafter" else ()))
    row(_name, getattr(pygpu._C, _name), _ref, cases((a(3, 4), a(3, 4)), (tr(4, 3), a(4))),
        _dts, _dom, tol=_tol)

# --- addcmul, addcdiv, lerp: one TERNARY node for float32/float64 (broadcast, strided and
# scalar weights), rows composed for float16; in place in test_math_ops.py ---
_TERNARY = cases((a(3, 4), a(3, 4), a(3, 4)), (tr(4, 3), a(4), a(3, 1)), (a(3, 2, 4), a(), PERM))
row("addcmul", lambda x, y, z: pygpu.addcmul(x, y, z, value=0.5), lambda x, y, z: x + 0.5 * y * z,
    _TERNARY, FLOATS + ("float16",))
row("addcdiv", lambda x, y, z: x.addcdiv(y, z, value=-2), lambda x, y, z: x + -2 * y / z,
    _TERNARY, FLOATS + ("float16",), ("any", "any", "nonzero"))
row("lerp", lambda x, y, z: pygpu.lerp(x, y, z), lambda x, y, z: x + z * (y - x), _TERNARY,
    FLOATS + ("float16",))
row("lerp_number", lambda x, y: x.lerp(y, 0.75), lambda x, y: x + 0.75 * (y - x),
    cases((a(3, 4), a(3, 4)), (tr(4, 3), a(4))), FLOATS + ("float16",))

# --- reductions: functions and methods, axis None/int/negative/tuple, keepdims ---
_AXES = [
    ("all", {}, cases(a()) + ND1),
    ("axis0", {"axis": 0}, ND1),
    ("axis-1", {"axis": -1}, ND1),
    ("axis01", {"axis": (0, 1)}, ND2),
    ("axis1_keepdims", {"axis": 1, "keepdims": True}, ND2),
    ("all_keepdims", {"keepdims": True}, ND1),
]
for _name in ("sum", "mean", "max", "min", "argmax"):
    _dtypes = {"sum": STORAGE, "mean": NUMERIC16}.get(_name, NUMERIC16)
    _tol = "accumulate" if _name in ("sum", "mean") else "exact"
    for _label, _kw, _cases in _AXES:
        if _name == "argmax" and isinstance(_kw.get("axis"), tuple):
            continue  # argmax takes one axis only (an error row in test_errors)
        if _name in ("sum", "mean"):  # empty reductions are fine for these
            _cases = _cases + (EMPTY if _label in ("all", "axis0") else ())
        elif _label == "axis-1":  # reducing a non-empty axis of an empty array is fine
            _cases = _cases + cases(a(0, 3))
        row(f"{_name}_{_label}", lambda x, _n=_name, _k=_kw: getattr(pygpu, _n)(x, **_k),
            lambda x, _n=_name, _k=_kw: getattr(np, _n)(x, **_k), _cases, _dtypes, tol=_tol)
        row(f"{_name}_{_label}_method", lambda x, _n=_name, _k=_kw: getattr(x, _n)(**_k),
            None, _cases, _dtypes, tol=_tol)

# --- reductions long enough for the CUDA backend's split (two-pass) kernels:
# a whole tensor is ONE long row, axis 0 of a tall matrix a few long strided
# rows; the transposes give the other row layout. On cpu/sim they check the
# CPU twin on the same inputs. ---
_LONG = {
    "all": ({}, cases(a(1 << 18), a(4096, 3), tr(3, 4096))),
    "axis0": ({"axis": 0}, cases(a(4096, 3), a(20000, 2), tr(5, 4096))),
}
for _name in ("sum", "mean", "max", "min", "argmax"):
    _dtypes = {"sum": ALL + HALF}.get(_name, NUMERIC_BIG)
    _tol = "accumulate" if _name in ("sum", "mean") else "exact"
    for _label, (_kw, _cases) in _LONG.items():
        row(f"{_name}_{_label}_long", lambda x, _n=_name, _k=_kw: getattr(pygpu, _n)(x, **_k),
            lambda x, _n=_name, _k=_kw: getattr(np, _n)(x, **_k), _cases, _dtypes, tol=_tol)

# --- vector-kernel sizes: odd lengths leave tails after every vector width, and
# a (257, 389) matrix gives runs, bias-add broadcasts and outer-axis reductions
# the kernels (and the device thread pools that split them) take for real
# work; the transpose sends each through the strided (gather) paths ---
BIG_UNARY = cases(a(100003), a(257, 389), tr(389, 257))
BIG_BINARY = cases(
    (a(100003), a(100003)), (a(257, 389), a(389)), (a(257, 389), a(257, 1)),
    (a(257, 389), a()), (a(), a(257, 389)), (tr(389, 257), a(257, 389)),
)
for _name, _f in [
    ("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y),
    ("maximum", pygpu.maximum), ("minimum", pygpu.minimum),
]:
    row(_name + "_big", _f, {"maximum": np.maximum, "minimum": np.minimum}.get(_name), BIG_BINARY, NUMERIC_BIG)
row("div_big", lambda x, y: x / y, None, BIG_BINARY, FLOATS_BIG, ("any", "nonzero"))
for _name, _f in [("lt", lambda x, y: x < y), ("eq", lambda x, y: x == y), ("ge", lambda x, y: x >= y)]:
    row(_name + "_big", _f, None, BIG_BINARY, NUMERIC_BIG, tol="exact")
row("scalar_add_float_big", lambda x: x + 2.5, None, BIG_UNARY, NUMERIC_BIG)
row("scalar_rsub_float_big", lambda x: 1.5 - x, None, BIG_UNARY, NUMERIC_BIG)
row("scalar_div_float_big", lambda x: x / 2.5, None, BIG_UNARY, NUMERIC_BIG)
row("neg_big", lambda x: -x, None, BIG_UNARY, NUMERIC_BIG)
row("abs_big", lambda x: abs(x), None, BIG_UNARY, NUMERIC_BIG)
for _name, _ref in _MATH_REFS.items():
    _dom = ("positive",) if _name in ("log", "sqrt") else ("any",)
    row(_name + "_big", getattr(pygpu, _name), _ref, BIG_UNARY, NUMERIC_BIG if _name == "relu" else FLOATS_BIG, _dom)
for _name in ("sum", "mean", "max", "min", "argmax"):
    _tol = "accumulate" if _name in ("sum", "mean") else "exact"
    for _label, _kw in [("all", {}), ("axis0", {"axis": 0}), ("axis-1", {"axis": -1})]:
        row(f"{_name}_{_label}_big", lambda x, _n=_name, _k=_kw: getattr(pygpu, _n)(x, **_k),
            lambda x, _n=_name, _k=_kw: getattr(np, _n)(x, **_k), BIG_UNARY, NUMERIC_BIG, tol=_tol)


def _astype_ref(x, target):
    """x.astype(target); float64 -> bfloat16 rounded once, as pygpu does (ml_dtypes rounds
    through float32, twice): round to nearest even at bfloat16's 7 mantissa bits on the
    float64 bits, then the exact narrowing (the table's data is normal, in range)."""
    if target == "bfloat16" and x.dtype == np.float64:
        b, one = x.view(np.uint64), np.uint64(1)
        r = (b + np.uint64((1 << 44) - 1) + ((b >> np.uint64(45)) & one)) >> np.uint64(45)
        return (r << np.uint64(45)).view(np.float64).astype(np.float32).astype(target)
    return x.astype(target)


for _target in ("float32", "float64", "int64", "bool") + HALF:
    row(f"astype_{_target}_big", lambda x, _t=_target: x.astype(getattr(pygpu, _t)),
        lambda x, _t=_target: _astype_ref(x, _t), BIG_UNARY, NUMERIC_BIG, tol="exact")

# --- views and copies (exact) ---
for _name, _f, _cases in [
    ("index_0", lambda x: x[0], ND1), ("index_neg1", lambda x: x[-1], ND1),
    ("slice", lambda x: x[1:3], ND1 + EMPTY[1:]), ("slice_step", lambda x: x[::2], ND1),
    ("slice_start_step", lambda x: x[1::3], ND1), ("slice_neg", lambda x: x[-2:], ND1),
    ("column", lambda x: x[:, -1], ND2), ("ellipsis", lambda x: x[..., 0], ND1),
    ("newaxis", lambda x: x[None], UNARY), ("slice_and_index", lambda x: x[1:, -1], ND2),
    ("view_of_view", lambda x: x[::2][..., None][-1], ND1),
    ("T", lambda x: x.T, UNARY), ("transpose_reverse", lambda x: x.transpose(), UNARY),
    ("transpose_axes", lambda x: x.transpose(*range(x.ndim)[::-1]), UNARY),
    ("reshape_flat", lambda x: x.reshape(-1), UNARY),
    ("reshape_col", lambda x: x.reshape(-1, 1), UNARY),
    ("reshape_tuple", lambda x: x.reshape((1, -1)), UNARY),
]:
    row(_name, _f, None, _cases, STORAGE, tol="exact")
row("contiguous", lambda x: x.contiguous(), lambda x: x.copy(order="C"), UNARY, STORAGE, tol="exact")
row("clone", lambda x: x.clone(), lambda x: x.copy(), UNARY, STORAGE, tol="exact")
for _target in ("float32", "float64", "int64", "bool") + HALF:
    row(f"astype_{_target}", lambda x, _t=_target: x.astype(getattr(pygpu, _t)),
        lambda x, _t=_target: _astype_ref(x, _t), UNARY, STORAGE, tol="exact")
    row(f"to_dtype_{_target}", lambda x, _t=_target: x.to(_t),
        lambda x, _t=_target: _astype_ref(x, _t), UNARY, STORAGE, tol="exact")
row("to_cpu", lambda x: x.to("cpu"), lambda x: x, UNARY, STORAGE, tol="exact", result_device="cpu")
row("cpu_method", lambda x: x.cpu(), lambda x: x, UNARY, STORAGE, tol="exact", result_device="cpu")
row("via_sim1_and_back", lambda x: x.to("sim:1").to(x.device), lambda x: x, UNARY, STORAGE, tol="exact")
row("iterate", lambda x: list(x), None, ND1 + EMPTY, STORAGE, kind="tensors")

# --- properties and conversions to Python (compared with ==, types too) ---
_C = "value"
row("shape", lambda x: x.shape, None, UNARY, STORAGE, kind=_C)
row("ndim", lambda x: x.ndim, None, UNARY, STORAGE, kind=_C)
row("numel", lambda x: x.numel(), lambda x: x.size, UNARY, STORAGE, kind=_C)
row("nbytes", lambda x: x.nbytes, None, UNARY, STORAGE, kind=_C)
row("len", lambda x: len(x), None, ND1 + EMPTY, STORAGE, kind=_C)
row("dtype_name", lambda x: x.dtype.name, lambda x: x.dtype.name, UNARY, STORAGE, kind=_C)
row("is_contiguous", lambda x: x.is_contiguous(), lambda x: bool(x.flags.c_contiguous), UNARY, STORAGE, kind=_C)
row("tolist", lambda x: x.tolist(), None, UNARY, STORAGE, kind=_C)
row("item", lambda x: x.item(), None, ONE_ELEMENT, STORAGE, kind=_C)
row("float", lambda x: float(x), lambda x: float(x.item()), ONE_ELEMENT, STORAGE, kind=_C)
row("int", lambda x: int(x), lambda x: int(x.item()), ONE_ELEMENT, STORAGE, kind=_C)
row("bool", lambda x: bool(x), lambda x: bool(x.item()), ONE_ELEMENT, STORAGE, kind=_C)

# Every op and property of the spec, by row-name prefix: a row may not vanish.

# --- fused training ops (pygpu/_train_ops.py -> csrc/core/pg_ops_train.c) ---------------
# Each fused op against a NumPy reference written out op by op. In-place optimizer updates
# run on clones (the table checks inputs are never written) and return the new state.
_LIN = cases((a(5, 3), a(4, 3), a(4)), (a(1, 1), a(1, 1), a(1)), (a(0, 3), a(4, 3), a(4)),
             (tr(3, 5), a(4, 3), a(4)), (a(5, 3), tr(3, 4), a(4)), (a(64, 33), a(17, 33), a(17)),
             # cut by the scheduler: output-feature slices (dW, db), panels of y and dx
             (a(64, 70), a(130, 70), a(130)), (a(48, 70), a(10, 70), a(10)))
_ACT_NP = {name: f for name, (f, _) in ACT_NP.items()}  # the op table's activations (_helpers)
_DACT_NP = {name: df for name, (_, df) in ACT_NP.items()}


def _lin_ref(act):
    return lambda x, w, b: _ACT_NP[act](x @ w.T + b).astype(x.dtype)


def _lin_bwd(act):
    def fn(x, w, b):
        y = pygpu.nn.functional.linear(x, w, b, act)
        dy = y * 0.5 + 1.0  # an upstream gradient that depends on the data
        return list(pygpu._C._linear_bwd(dy, x, w, y, ACT_CODE[act], True, True))

    def ref(x, w, b):
        y = _lin_ref(act)(x, w, b)
        dz = (y * 0.5 + 1.0) * _DACT_NP[act](y)
        return [(dz @ w).astype(x.dtype), (dz.T @ x).astype(x.dtype),
                dz.sum(axis=0).astype(x.dtype)]
    return fn, ref


for _act in ACTS:
    row(f"linear_fwd_{_act or 'none'}",
        lambda x, w, b, act=_act: pygpu.nn.functional.linear(x, w, b, act), _lin_ref(_act), _LIN,
        FLOATS, tol="fused")
    _f, _r = _lin_bwd(_act)
    row(f"linear_bwd_{_act or 'none'}", _f, _r, _LIN, FLOATS, tol="fused", kind="tensors")
row("linear_nobias", lambda x, w: pygpu.nn.functional.linear(x, w), lambda x, w: x @ w.T,
    cases((a(5, 3), a(4, 3)), (a(2, 3, 3), a(2, 3))), FLOATS, tol="fused")

_XENT = cases((a(5, 4), a(5, 4)), (a(1, 1), a(1, 1)), (a(3, 7), a(3, 7)), (tr(4, 3), a(3, 4)),
              (a(64, 10), a(64, 10)))


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _np_xent(x, lab):
    lse = np.log(np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1)) + x.max(axis=1)
    return (lse - x[np.arange(len(lab)), lab]).mean()


# softmax over the last axis: one SOFTMAX node on cpu and sim (other axes compose it)
row("softmax_rows", lambda x: pygpu.softmax(x, -1), lambda x: _np_softmax(x).astype(x.dtype),
    cases(a(5, 4), a(1, 1), a(3, 7), tr(4, 3), a(64, 10), COLSTEP), FLOATS, tol="fused")
row("softmax_axis0", lambda x: pygpu.softmax(x, 0), lambda x: _np_softmax(x.T).T.astype(x.dtype),
    cases(a(5, 4), tr(4, 3)), FLOATS, tol="fused")



def _np_layer_norm(x, w=None, b=None):
    d = x - x.mean(axis=-1, keepdims=True)
    y = d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)
    return (y if w is None else y * w + b).astype(x.dtype)


# layer_norm over the last axis: one LAYER_NORM node on cpu and sim
row("layer_norm_rows", lambda x: pygpu.nn.functional.layer_norm(x, (x.shape[-1],)),
    _np_layer_norm, cases(a(5, 4), a(1, 1), a(3, 7), tr(4, 3), a(2, 3, 5), COLSTEP), FLOATS,
    tol="fused")
row("layer_norm_rows_affine",
    lambda x, w: pygpu.nn.functional.layer_norm(x, (x.shape[-1],), w, w * 0.5),
    lambda x, w: _np_layer_norm(x, w, w * 0.5), cases((a(5, 4), a(4)), (tr(4, 3), a(4)),
                                                      (a(2, 3, 5), a(5))), FLOATS, tol="fused")

# labels: argmax of the second input (valid classes, computed on the device)
row("cross_entropy_fwd", lambda x, s: list(pygpu._C._softmax_xent_fwd(x, s.argmax(axis=1), True)),
    lambda x, s: [np.asarray(_np_xent(x, s.argmax(axis=1)), dtype=x.dtype),
                  _np_softmax(x).astype(x.dtype)], _XENT, FLOATS, tol="fused",
    kind="tensors")
row("cross_entropy_bwd",
    lambda x, s: pygpu._C._softmax_xent_bwd(pygpu.softmax(x), s.argmax(axis=1),
                                            x.sum() * 0.0 + 2.0, True),
    lambda x, s: ((_np_softmax(x) - np.eye(x.shape[1])[s.argmax(axis=1)]) * 2.0
                  / x.shape[0]).astype(x.dtype), _XENT, FLOATS, tol="fused")
row("cat_dim0", lambda x, y: pygpu.cat([x, y]), lambda x, y: np.concatenate([x, y]),
    cases((a(2, 3), a(4, 3)), (a(0, 3), a(1, 3)), (tr(3, 2), a(1, 3)), (a(5), a(2))), ALL,
    tol="exact")
row("cat_dim1", lambda x, y: pygpu.cat([x, y], dim=-1), lambda x, y: np.concatenate([x, y], 1),
    cases((a(2, 3), a(2, 1)), (BLOCK, a(2, 2))), ALL, tol="exact")

_OPT = cases((a(7), a(7), a(7)), (a(3, 4), a(3, 4), a(3, 4)), (a(1), a(1), a(1)))


def _sgd(first, nesterov):
    def fn(p, g, buf):
        p, buf = p.clone(), buf.clone()
        pygpu._C._sgd_update(p, g, buf, 0.1, 0.9, 0.0 if nesterov else 0.25, 0.01, nesterov, first)
        return [p, buf]

    def ref(p, g, buf):
        d = g + 0.01 * p
        b = d if first else 0.9 * buf + (1 - (0.0 if nesterov else 0.25)) * d
        d = d + 0.9 * b if nesterov else b
        return [(p - 0.1 * d).astype(p.dtype), b.astype(p.dtype)]
    return fn, ref


for _first, _nest in ((True, False), (False, False), (False, True)):
    _f, _r = _sgd(_first, _nest)
    row(f"sgd_{'first' if _first else 'later'}_{'nesterov' if _nest else 'plain'}", _f, _r, _OPT,
        FLOATS, tol="fused", kind="tensors")


def _adam_fn(p, g, m):
    p, m, v = p.clone(), m.clone(), (m * m).clone()
    pygpu._C._adam_update(p, g, m, v, 0.01, 0.9, 0.99, 1e-8, 0.05, 3)
    return [p, m, v]


def _adam_ref(p, g, m):
    v = m * m
    g = g + 0.05 * p
    m = 0.9 * m + 0.1 * g
    v = 0.99 * v + 0.01 * g * g
    step = 0.01 / (1 - 0.9 ** 3)
    p = p - step * m / (np.sqrt(v) / np.sqrt(1 - 0.99 ** 3) + 1e-8)
    return [p.astype(g.dtype), m.astype(g.dtype), v.astype(g.dtype)]


row("adam", _adam_fn, _adam_ref, _OPT, FLOATS, tol="fused", kind="tensors")


def _unscale_fn(g):
    """GradScaler's per-gradient unscale: the fused op (pg_ops_amp.c), or where the device
    declines it (cuda) the scaler's tensor-op fallback; [unscaled g, found-inf flag]."""
    from pygpu.amp import grad_scaler

    class _Param:
        grad = None
    p = _Param()
    p.grad = g.clone()
    flag = grad_scaler._unscale_one(p, p.grad, 0.25, pygpu.zeros((), device=g.device))
    return [p.grad, flag]


row("unscale_", _unscale_fn,
    lambda g: [(g * 0.25).astype(g.dtype), np.array(0.0, dtype=np.float32)],
    cases((a(7),), (a(3, 4),), (a(1),)), FLOATS, tol="fused", kind="tensors")


# --- the op table's newer elementwise ops: predicates, rounding, pow, logic, bits, where,
# clamp, the comparison methods, and the in-place variants (PyTorch's semantics: rounding an
# int64 gives it back, sign(NaN) is 0, round halves to even, a bool result for predicates) ---
def _int_same(f):
    return lambda x: x.copy() if x.dtype.kind in "iub" else f(x)


_NEW_UNARY = {
    "sign": (lambda x: x.copy() if x.dtype == np.bool_ else
             np.where(np.isnan(x), 0, np.sign(x)).astype(x.dtype), STORAGE, "any"),
    "floor": (_int_same(np.floor), NUMERIC16, "any"),
    "ceil": (_int_same(np.ceil), NUMERIC16, "any"),
    "round": (_int_same(np.rint), NUMERIC16, "any"),
    "trunc": (_int_same(np.trunc), NUMERIC16, "any"),
    "reciprocal": (lambda x: 1 / x, NUMERIC16, "nonzero"),
    "rsqrt": (lambda x: 1 / np.sqrt(x), NUMERIC16, "positive"),
    "isnan": (np.isnan, STORAGE, "any"),
    "isfinite": (np.isfinite, STORAGE, "any"),
}
for _name, (_ref, _dts, _dom) in _NEW_UNARY.items():
    _tol = "exact" if _name in ("sign", "floor", "ceil", "round", "trunc", "isnan", "isfinite") else "elementwise"
    row(_name, getattr(pygpu, _name), _ref, UNARY, _dts, (_dom,), tol=_tol)
    row(_name + "_method", lambda x, _n=_name: getattr(x, _n)(), _ref, UNARY, _dts, (_dom,), tol=_tol)
    row(_name + "_big", getattr(pygpu, _name), _ref, BIG_UNARY, _dts, (_dom,), tol=_tol)
row("pow", pygpu.pow, np.power, BINARY, NUMERIC16, ("any", "positive"))
row("pow_operator", lambda x, y: x ** y, np.power, BINARY, NUMERIC16, ("any", "positive"))
row("pow_big", pygpu.pow, np.power, BIG_BINARY, NUMERIC_BIG, ("any", "positive"))
row("pow_mixed", pygpu.pow, np.power, MIXED, MIXED_PAIRS[:4], ("any", "positive"))
row("pow_scalar", lambda x: x ** 2, lambda x: x ** 2, UNARY, NUMERIC16)
row("pow_scalar_float", lambda x: x.pow(0.5), lambda x: x ** 0.5, UNARY, FLOATS + HALF, ("positive",))
row("pow_rscalar", lambda x: 2.0 ** x, lambda x: 2.0 ** x, UNARY, FLOATS + HALF)
for _name in ("logical_and", "logical_or", "logical_xor"):
    row(_name, getattr(pygpu, _name), _np(_name), BINARY, STORAGE, tol="exact")
    row(_name + "_method", lambda x, y, _n=_name: getattr(x, _n)(y), _np(_name), MIXED, MIXED_PAIRS,
        tol="exact")
for _name, _f in [("bitwise_and", lambda x, y: x & y), ("bitwise_or", lambda x, y: x | y),
                  ("bitwise_xor", lambda x, y: x ^ y)]:
    row(_name, getattr(pygpu, _name), _np(_name), BINARY, ("bool", "int64"), tol="exact")
    row(_name + "_operator", _f, _np(_name), BINARY, ("bool", "int64"), tol="exact")
    row(_name + "_mixed", _f, _np(_name), MIXED, (("bool", "int64"), ("int64", "bool")), tol="exact")
row("bitwise_and_scalar", lambda x: x & True, lambda x: x & True, UNARY, ("bool", "int64"), tol="exact")
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _ref = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}[_name]
    row(_name + "_method", lambda x, y, _n=_name: getattr(x, _n)(y), _ref, BINARY, STORAGE,
        tol="exact")
row("maximum_method", lambda x, y: x.maximum(y), np.maximum, BINARY, NUMERIC16)
row("add_alpha", lambda x, y: x.add(y, alpha=2), lambda x, y: x + 2 * y, BINARY, NUMERIC)
row("sub_alpha", lambda x, y: x.sub(y, alpha=0.5), lambda x, y: x - 0.5 * y, BINARY, FLOATS)

WHERE = cases(
    (a(3, 4), a(3, 4), a(3, 4)), (a(3, 1), a(4), a()), (a(), a(2, 3), a(3)), (a(7), a(7), a(1)),
    (tr(4, 3), a(3, 4), tr(4, 3)), (COLSTEP, a(3, 3), a(1, 3)),
    (STEP9, a(5), In((10,), lambda x: x[1::2], "10[1::2]")), (a(0, 3), a(3), a(1, 3)), (a(0), a(0), a()),
    (PERM, a(4), a(2, 1)),
)
row("where", pygpu.where, np.where, WHERE, tuple(("bool", d, d) for d in STORAGE), tol="exact")
row("where_mixed", pygpu.where, np.where, WHERE[:3],
    tuple(("bool",) + p for p in MIXED_PAIRS[:7]), tol="exact")
row("where_scalar", lambda c, x: pygpu.where(c, x, 0.5), lambda c, x: np.where(c, x, 0.5),
    cases((a(3, 4), a(3, 4)), (a(4), tr(4, 3)), (a(), a(5))), (("bool", "float32"),
    ("bool", "float64"), ("bool", "int64")), tol="exact")
row("where_method", lambda c, x, y: x.where(c, y), np.where, WHERE[:4], (("bool", "float32", "float32"),), tol="exact")
row("where_big", pygpu.where, np.where, cases((a(257, 389), a(257, 389), a(389)),
                                               (a(100003), a(100003), a())),
    tuple(("bool", d, d) for d in STORAGE), tol="exact")

row("clamp", lambda x: pygpu.clamp(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), UNARY, NUMERIC16)
row("clamp_int", lambda x: x.clamp(-2, 3), lambda x: np.clip(x, -2, 3), UNARY, NUMERIC16)
row("clamp_min", lambda x: x.clamp(min=0), lambda x: np.maximum(x, 0).astype(x.dtype), UNARY, NUMERIC16)
row("clamp_max", lambda x: x.clip(max=1), lambda x: np.minimum(x, 1).astype(x.dtype), UNARY, NUMERIC16)
row("clamp_tensors", lambda x, lo, hi: x.clamp(lo, hi), lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    cases((a(3, 4), a(4), a(3, 1)), (tr(4, 3), a(), a(3, 4)), (a(0, 2), a(2), a())), NUMERIC16)
row("clip_function", lambda x: pygpu.clip(x, -1, 1), lambda x: np.clip(x, -1, 1), UNARY, NUMERIC16)
row("clamp_big", lambda x: x.clamp(-0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), BIG_UNARY, NUMERIC_BIG)


# In-place rows write a fresh copy of the first input laid out as a view (every other
# element of a buffer, or a transpose), so the table's inputs stay untouched and each
# in-place kernel meets a non-contiguous self; they return self.
def _fresh(x):
    if x.ndim == 0:
        return x.clone()
    if x.ndim == 1:
        buf = pygpu.zeros(2 * x.shape[0], dtype=x.dtype, device=x.device)
        view = buf[::2]
        view.copy_(x)
        return view
    return x.transpose().clone().transpose()


def _inplace(name, *args, **kwargs):
    def fn(x, *rest):
        y = _fresh(x)
        out = getattr(y, name)(*rest, *args, **kwargs)
        assert out is y, f"{name} returned a new tensor, not self"
        return y
    return fn


INPLACE = cases(
    (a(), a()), (a(7), a(7)), (a(3, 4), a(3, 4)), (a(2, 3, 4), a(4)), (a(2, 3, 4), a(3, 1)),
    (a(5), a()), (a(0, 3), a(1, 3)), (tr(4, 3), a(3, 4)), (tr(4, 3), a(3, 1)),
    (STEP9, In((10,), lambda x: x[1::2], "10[1::2]")), (COLSTEP, a(3, 3)), (PERM, a(4)),
)
for _name, _ref, _dts, _dom in [
    ("add_", lambda x, y: x + y, NUMERIC16, ("any",)), ("sub_", lambda x, y: x - y, NUMERIC16, ("any",)),
    ("mul_", lambda x, y: x * y, NUMERIC16, ("any",)),
    ("div_", lambda x, y: x / y, FLOATS + HALF, ("any", "nonzero")),
    ("pow_", np.power, NUMERIC16, ("any", "positive")),
]:
    row("inplace_" + _name, _inplace(_name), _ref, INPLACE, _dts, _dom)
row("inplace_add__big", _inplace("add_"), lambda x, y: x + y, BIG_BINARY[:3], NUMERIC_BIG)
# (alpha scales `other` first: a half result is rounded twice, so the half dtypes are left out)
row("inplace_add__alpha", _inplace("add_", alpha=3), lambda x, y: x + 3 * y, INPLACE, NUMERIC)
_INPLACE_MIXED = cases((a(3, 4), a(3, 4)), (tr(4, 3), a(3, 4)), (a(3, 4), a(4)), (a(0, 2), a(2)))
row("inplace_add__cast", _inplace("add_"), lambda x, y: (x + y).astype(x.dtype), _INPLACE_MIXED,
    (("float32", "float64"), ("float32", "int64"), ("float64", "float16"), ("int64", "bool"),
     ("float16", "float32")))
row("inplace_div__int_divisor", _inplace("div_"), lambda x, y: (x / y).astype(x.dtype), _INPLACE_MIXED,
    (("float32", "int64"),), ("any", "nonzero"))
row("inplace_mul__scalar", _inplace("mul_", 2.5), lambda x: (x * 2.5).astype(x.dtype), UNARY, FLOATS + HALF)
row("inplace_add__scalar_int", _inplace("add_", 3), lambda x: x + 3, UNARY, NUMERIC16)
row("inplace_clamp_", _inplace("clamp_", -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), UNARY, FLOATS + HALF)
row("inplace_clamp__int", _inplace("clamp_", -2, 3), lambda x: np.clip(x, -2, 3), UNARY, ("int64",))
row("inplace_clip_", _inplace("clip_", max=0), lambda x: np.minimum(x, 0).astype(x.dtype), UNARY, NUMERIC16)
for _name, _ref, _dts, _dom in [
    ("abs_", np.abs, NUMERIC16, "any"), ("neg_", np.negative, NUMERIC16, "any"),
    ("exp_", np.exp, FLOATS + HALF, "any"), ("log_", np.log, FLOATS + HALF, "positive"),
    ("sqrt_", np.sqrt, FLOATS + HALF, "positive"), ("tanh_", np.tanh, FLOATS + HALF, "any"),
    ("sigmoid_", lambda x: 1 / (1 + np.exp(-x)), FLOATS + HALF, "any"),
    ("relu_", lambda x: np.maximum(x, 0).astype(x.dtype), NUMERIC16, "any"),
    ("sign_", _NEW_UNARY["sign"][0], NUMERIC16, "any"), ("floor_", _NEW_UNARY["floor"][0], NUMERIC16, "any"),
    ("ceil_", _NEW_UNARY["ceil"][0], NUMERIC16, "any"), ("round_", _NEW_UNARY["round"][0], NUMERIC16, "any"),
    ("trunc_", _NEW_UNARY["trunc"][0], NUMERIC16, "any"),
    ("reciprocal_", lambda x: 1 / x, FLOATS + HALF, "nonzero"),
    ("rsqrt_", lambda x: 1 / np.sqrt(x), FLOATS + HALF, "positive"),
    ("logical_not_", np.logical_not, ("bool",), "any"),
]:
    row("inplace_" + _name, _inplace(_name), _ref, UNARY, _dts, (_dom,),
        tol="exact" if _name in ("abs_", "neg_", "relu_", "sign_", "floor_", "ceil_", "round_", "trunc_",
                                 "logical_not_") else "elementwise")

REQUIRED = (
    "linear_fwd linear_bwd linear_nobias cross_entropy_fwd cross_entropy_bwd cat sgd adam unscale_ "
    "add sub mul div neg abs maximum minimum eq ne lt le gt ge matmul_operator matmul_function "
    "exp log sqrt tanh sigmoid relu sum mean max min argmax index_0 slice_step column ellipsis "
    "newaxis T transpose_reverse transpose_axes reshape_flat contiguous clone astype to_dtype "
    "to_cpu cpu_method iterate shape ndim numel nbytes len dtype_name is_contiguous tolist item "
    "float int bool scalar_add scalar_radd scalar_sub scalar_rsub scalar_mul scalar_rmul "
    "scalar_div scalar_rdiv sign floor ceil round trunc reciprocal rsqrt isnan isfinite pow "
    "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor where clamp "
    "eq_method ne_method lt_method le_method gt_method ge_method inplace_add_ inplace_sub_ "
    "inplace_mul_ inplace_div_ inplace_pow_ inplace_clamp_ inplace_abs_ inplace_exp_ "
    "inplace_sqrt_ inplace_neg_"
).split()


def _params():
    for op in OPS:
        for dt in op.dtypes:
            dts = dt if isinstance(dt, tuple) else (dt,)
            for case in op.cases:
                label = "-".join(i.name for i in case)
                yield pytest.param(op, dts, case, id=f"{op.name}-{'+'.join(dts)}-{label}")


def _make_inputs(op, dtypes, case, device):
    seed = zlib.crc32(f"{op.name}|{dtypes}|{[i.name for i in case]}".encode())
    rng = np.random.default_rng(seed)
    arrays, tensors = [], []
    for k, spec in enumerate(case):
        dtype = dtypes[min(k, len(dtypes) - 1)]
        domain = op.domains[min(k, len(op.domains) - 1)]
        base = random_array(rng, spec.shape, dtype, domain)
        t = to_device(base, device)
        arrays.append(spec.view(base) if spec.view else base)
        tensors.append(spec.view(t) if spec.view else t)
    return arrays, tensors


def _is_bf16(x):
    return getattr(x, "dtype", None) is not None and x.dtype.name == "bfloat16"


def _bf16_reference(op, arrays):
    """bfloat16 arithmetic as pygpu defines it (and as NumPy's float16 loops do): the
    inputs widened to float32, the float32 result rounded once. A float32 result stays
    float32 where pygpu's promotion gives float32 (an input was float32 or float16)."""
    wide = [x.astype(np.float32) if _is_bf16(x) else x for x in arrays]
    keep32 = any(np.asarray(x).dtype.name in ("float32", "float16") for x in arrays)
    out = (op.ref or op.fn)(*wide)

    def narrow(r):
        if isinstance(r, (list, tuple)):
            return type(r)(narrow(v) for v in r)
        r = np.asarray(r)
        return r if keep32 or r.dtype != np.float32 else r.astype("bfloat16")
    return narrow(out)


# PyTorch's type promotion (torch.result_type), where it differs from NumPy's: an integer
# with a float gives that float (int64 + float32 is float32), an integer result of a
# float op (true division, exp, a Python float operand) is float32 (the default dtype),
# and a 0-d operand counts only if its kind (bool < int < float) is above the others'.
_RANK = {"bool": 0, "int64": 1, "float16": 2, "bfloat16": 2, "float32": 3, "float64": 4}
_PROMOTING = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "scalar_", "where",
              "clamp", "exp", "log", "reciprocal", "rsqrt", "sigmoid", "sqrt", "tanh")
_PROMOTING += tuple(MATH_UNARY) + tuple(MATH_BINARY)


def _kind(dt):
    return min(_RANK[dt], 2)


def _promote(a, b):
    if a == b:
        return a
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    return a if _RANK[a] > _RANK[b] else b


def _torch_result(arrays):
    dims = [x.dtype.name for x in arrays if np.ndim(x) > 0]
    zeros = [x.dtype.name for x in arrays if np.ndim(x) == 0]
    rd = rz = None
    for d in dims:
        rd = d if rd is None else _promote(rd, d)
    for d in zeros:
        rz = d if rz is None else _promote(rz, d)
    if rd is None or (rz is not None and _kind(rz) > _kind(rd)):
        return rz
    return rd


def _torch_target(op, arrays):
    """The float dtype PyTorch computes a promoting op in, or None (not such an op)."""
    if not op.name.startswith(_PROMOTING):
        return None
    inputs = [x for x in (arrays[1:] if op.name.startswith("where") else arrays)
              if getattr(x, "dtype", None) is not None and x.dtype.name in _RANK]
    target = _torch_result(inputs) if inputs else None
    return "float32" if target is None or _kind(target) < 2 else target


def _narrowed(arrays, target):
    """A wider float operand is cast to the result dtype first, as PyTorch does (a float64
    0-d tensor with a float16 tensor computes from the float16-rounded value)."""
    if target is None:
        return arrays
    return [x.astype(target) if getattr(x, "dtype", None) is not None and x.dtype.name in _RANK
            and _kind(x.dtype.name) == 2 and _RANK[x.dtype.name] > _RANK[target] else x
            for x in arrays]


def _as_torch(target, ref):
    if target is None or isinstance(ref, (list, tuple)):
        return ref
    ref = np.asarray(ref)
    if ref.dtype.name not in _RANK or _kind(ref.dtype.name) < 2:
        return ref
    return ref if ref.dtype.name == target else ref.astype(target)


def _reference(op, arrays):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # NumPy's mean of an empty slice warns
        target = _torch_target(op, arrays)
        arrays = _narrowed(arrays, target)
        if op.tol != "exact" and op.kind != "value" and any(map(_is_bf16, arrays)):
            return _as_torch(target, _bf16_reference(op, arrays))
        return _as_torch(target, (op.ref or op.fn)(*arrays))


def _check_tensor(got, ref, op, arrays, device, what="result"):
    ref = np.asarray(ref)
    assert isinstance(got, TENSOR_TYPE), f"{what} is {type(got).__name__}, expected a tensor"
    assert same_device(got.device, op.result_device or device), f"{what} on {got.device}"
    assert tuple(got.shape) == ref.shape, f"{what} shape {got.shape} != NumPy {ref.shape}"
    assert got.dtype.name == ref.dtype.name, f"{what} dtype {got.dtype} != NumPy {ref.dtype}"
    out = got.numpy()
    assert out.dtype == ref.dtype and out.shape == ref.shape
    dtype_name = ref.dtype.name
    if dtype_name == "bfloat16":  # compared as float32: exactly the bfloat16 values
        out, ref = out.astype(np.float32), ref.astype(np.float32)
    if op.tol == "exact" or ref.dtype.kind in "biu":
        np.testing.assert_array_equal(out, ref, err_msg=what)
        return
    rtol, atol = TOL[op.tol][dtype_name]
    if op.tol == "accumulate":
        # The error bound of a sum scales with the sum of |terms|.
        scale = np.abs(np.asarray(_reference(op, [np.abs(x.astype(np.float64)) for x in arrays])))
        err = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        both_nan = np.isnan(out) & np.isnan(ref)
        bad = ~both_nan & ~(err <= rtol * scale + atol)
        assert not bad.any(), (
            f"{what}: {int(bad.sum())} of {ref.size} elements off; worst err "
            f"{np.nanmax(np.where(bad, err, 0))} vs bound rtol={rtol}*scale+atol={atol}"
        )
    else:
        if op.tol == "fused" and ref.size:
            # A fused op's sums pass through nonlinear steps, so no |terms| reference exists;
            # where they cancel, an element keeps the rounding of terms as large as the
            # output's largest (a few ulps of it: the GEMM's summation order is its own).
            finite = np.abs(ref[np.isfinite(ref)].astype(np.float64))
            if finite.size:
                atol = max(atol, 8 * np.finfo(ref.dtype).eps * float(finite.max()))
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _same_types(got, ref):
    if isinstance(ref, (list, tuple)):
        # a shape is a pygpu.Size, PyTorch's tuple subclass (torch.Size)
        same = type(got) is type(ref) or (type(ref) is tuple and type(got) is pygpu.Size)
        return same and len(got) == len(ref) and all(map(_same_types, got, ref))
    return type(got) is type(ref)


@pytest.mark.parametrize("op,dtypes,case", list(_params()))
def test_op_matches_numpy(op, dtypes, case, device):
    arrays, tensors = _make_inputs(op, dtypes, case, device)
    ref = _reference(op, arrays)
    got = op.fn(*tensors)
    if op.kind == "value":
        if isinstance(ref, tuple):  # .shape: a tuple of Python ints
            ref = tuple(int(n) for n in ref)
        elif isinstance(ref, np.generic):
            ref = ref.item()
        assert got == ref, f"{got!r} != NumPy {ref!r}"
        assert _same_types(got, ref), f"type {type(got).__name__} != NumPy {type(ref).__name__}"
    elif op.kind == "tensors":
        assert isinstance(got, list) and len(got) == len(ref)
        for k, (g, r) in enumerate(zip(got, ref)):
            _check_tensor(g, r, op, arrays, device, what=f"item {k}")
    else:
        _check_tensor(got, ref, op, arrays, device)
    for k, (t, x) in enumerate(zip(tensors, arrays)):  # ops never write their inputs
        np.testing.assert_array_equal(t.numpy(), x, err_msg=f"input {k} changed")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_predicates_sign_and_rounding_on_special_values(device, dtype):
    """NaN, infinities, signed zeros and halves, which random data never draws: isnan and
    isfinite as NumPy, sign(NaN) = 0 as PyTorch, round halves to even."""
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.0],
                 dtype=dtype)
    t = to_device(x, device)
    with np.errstate(all="ignore"):
        for name, ref in [("isnan", np.isnan(x)), ("isfinite", np.isfinite(x)),
                          ("sign", np.where(np.isnan(x), 0, np.sign(x)).astype(dtype)),
                          ("round", np.rint(x)), ("floor", np.floor(x)), ("ceil", np.ceil(x)),
                          ("trunc", np.trunc(x)), ("reciprocal", 1 / x)]:
            got = getattr(pygpu, name)(t).numpy()
            assert got.dtype == ref.dtype, name
            np.testing.assert_array_equal(got, ref, err_msg=name)


def test_table_covers_every_op():
    names = {op.name for op in OPS}
    missing = [r for r in REQUIRED if not any(n == r or n.startswith(r + "_") for n in names)]
    assert not missing, f"ops without a row in the table: {missing}"
    assert len(names) == len(OPS), "two rows share a name"
    empty = [op.name for op in OPS if not op.cases or not op.dtypes]
    assert not empty, f"rows that generate no test: {empty}"


# Random broadcasting pairs beyond the table's fixed cases (hypothesis).
from hypothesis import given, settings, strategies as st  # noqa: E402
from hypothesis.extra.numpy import mutually_broadcastable_shapes  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=4),
       seed=st.integers(0, 2**32 - 1))
def test_broadcasting_random_shapes_matches_numpy(shapes, seed, device):
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(s).astype(np.float32) for s in shapes.input_shapes)
    tx, ty = to_device(x, device), to_device(y, device)
    for got, ref in [(tx + ty, x + y), (tx * ty, x * y), (tx < ty, x < y), (pygpu.maximum(tx, ty), np.maximum(x, y))]:
        assert got.shape == shapes.result_shape
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)


# NaN and ties where the vector kernels keep per-lane state: a NaN in the first
# element, in a tail, in the middle of a vector, in two lanes; and many equal
# maxima, so argmax must still return the first. Random data never has these.
_NAN_SPOTS = {"none": [], "first": [0], "last": [-1], "middle": [517], "two": [700, 45]}
_NAN_OPS = {
    "max_all": lambda m, x: m.max(x), "min_axis0": lambda m, x: m.min(x, axis=0),
    "max_axis-1": lambda m, x: m.max(x, axis=-1), "argmax_all": lambda m, x: m.argmax(x),
    "argmax_axis0": lambda m, x: m.argmax(x, axis=0), "argmax_axis-1": lambda m, x: m.argmax(x, axis=-1),
    "sum_all": lambda m, x: m.sum(x), "relu": lambda m, x: np.maximum(x, 0) if m is np else m.relu(x),
    "maximum": lambda m, x: m.maximum(x, x[..., ::-1].copy() if m is np else x[..., ::-1].contiguous()),
}
# NaN in either operand of minimum, and against a scalar, propagates as NumPy's does
_NAN_OPS.update({
    "minimum": lambda m, x: m.minimum(x, x[..., ::-1].copy() if m is np else x[..., ::-1].contiguous()),
    "maximum_scalar": lambda m, x: m.maximum(x, x.dtype.type(0) if m is np else 0.0),
    "minimum_scalar": lambda m, x: m.minimum(x, x.dtype.type(0) if m is np else 0.0),
})


@pytest.mark.parametrize("shape", [(1000,), (100003,), (37, 389)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("spot", list(_NAN_SPOTS))
@pytest.mark.parametrize("dtype", FLOATS + HALF)
@pytest.mark.parametrize("op", list(_NAN_OPS))
def test_nan_and_ties_at_vector_sizes(op, dtype, spot, shape, device):
    # the half dtypes: blocks widened on the stack, a NaN or a tie across a block's edge
    rng = np.random.default_rng(zlib.crc32(f"{op}{dtype}{spot}{shape}".encode()))
    x = rng.integers(-3, 4, size=shape).astype(dtype)  # few values: ties everywhere
    flat = x.reshape(-1)
    for k in _NAN_SPOTS[spot]:
        flat[k] = np.nan
    if dtype == "bfloat16":  # ml_dtypes' own sum accumulates in bfloat16: float32, rounded once
        ref = np.asarray(_NAN_OPS[op](np, x.astype(np.float32)))
        ref = ref.astype(dtype) if ref.dtype == np.float32 else ref
    else:
        ref = np.asarray(_NAN_OPS[op](np, x))
    got = _NAN_OPS[op](pygpu, to_device(x, device)).numpy()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if dtype == "bfloat16":
        got, ref = got.astype(np.float32), ref.astype(np.float32)
    np.testing.assert_array_equal(got, ref)  # NaN == NaN here; exact, ties included
