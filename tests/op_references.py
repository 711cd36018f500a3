# op_references.py - how the op-table suite checks each op: {name: Ref(NumPy reference,
# domain, tolerance, dtypes)}, keyed by the rows of _C._op_table() (csrc/core/pg_ops.def).
#
# The cases are generated from the table (tests/_op_cases.py): a binary row gets 0-d, odd-
# length and broadcast operands, Python scalars on either side, mixed dtypes, every Python
# name of its row, and its in-place method; a unary or reduce row likewise. A table row with
# no entry here fails tests/test_ops_semantics.py::test_every_table_row_has_a_reference.
#
# Adding an op: give its row an entry. For a unary or binary op that is usually one line:
#     "expm1": Ref(np.expm1, dtypes=NUMERIC16),
#     "atan2": Ref(np.arctan2, dtypes=FLOATS16),
# Ref's fields (tests/_op_cases.py says more): the NumPy reference (None: the pygpu call
# itself applied to ndarrays, for operators NumPy shares); `domain` per input ("any",
# "positive" for log-like ops, "nonzero" for divisors); `tol` ("elementwise", "accumulate"
# for sums, "fused", "exact" for results that must be bit-equal); `dtypes` the op takes (the
# row's `in` column: NUM ops take NUMERIC16, ANY and TOBOOL ops STORAGE, BOOL ones
# ("bool",)). PyTorch's promotion is applied to the reference for you (int64 -> float32 for
# float ops; 0-d operands; the half dtypes computed in float32 and rounded once). An op whose
# inputs are particular (a layer, an optimizer step) gives its variants as
# {label: Ref(..., call=..., cases=...)}; one checked in another file is Elsewhere(path, why).
import numpy as np

import pygpu

from _helpers import ACT_CODE, ACT_NP, ACTS
from _op_cases import (ALL, BLOCK, COLSTEP, FLOATS, FLOATS16, MIXED_PAIRS, NUMERIC, PERM, STEP9, STEP10,
                       STORAGE, TAIL, Elsewhere, Ref, a, cases, elementwise_columns, inplace_call,
                       tr)


def _int_same(f):  # rounding an int64 gives it back (PyTorch)
    return lambda x: x.copy() if x.dtype.kind in "iub" else f(x)


def _sign(x):  # sign(NaN) = 0 (PyTorch; NumPy says NaN)
    return x.copy() if x.dtype == np.bool_ else np.where(np.isnan(x), 0, np.sign(x)).astype(x.dtype)


def _astype_ref(x, target):
    """x.astype(target); float64 -> bfloat16 rounded once, as pygpu does (ml_dtypes rounds
    through float32, twice): round to nearest even at bfloat16's 7 mantissa bits on the
    float64 bits, then the exact narrowing (the data is normal, in range)."""
    if target == "bfloat16" and x.dtype == np.float64:
        b, one = x.view(np.uint64), np.uint64(1)
        r = (b + np.uint64((1 << 44) - 1) + ((b >> np.uint64(45)) & one)) >> np.uint64(45)
        return (r << np.uint64(45)).view(np.float64).astype(np.float32).astype(target)
    return x.astype(target)


EXACT = dict(tol="exact")
ND1 = cases(a(7), a(3, 4), a(2, 3, 4), STEP9)
ND2 = cases(a(3, 4), a(2, 3, 4), COLSTEP)

REFS = {
    # ---- binary: dst = a <op> b, broadcasting --------------------------------------------
    "add": {"": Ref(np.add),
            "alpha": Ref(lambda x, y: x + 2 * y, call=lambda x, y: x.add(y, alpha=2), dtypes=NUMERIC),
            # (alpha scales `other` first: a half result would be rounded twice)
            "inplace_alpha": Ref(lambda x, y: x + 3 * y, dtypes=NUMERIC,
                                 call=lambda x, y: inplace_call("add_")(x, y, alpha=3)),
            "inplace_scalar": Ref(lambda x: x + 3, call=lambda x: inplace_call("add_")(x, 3),
                                  cases=cases(a(3, 4), a(TAIL)))},
    "subtract": {"": Ref(np.subtract),
                 "alpha": Ref(lambda x, y: x - 0.5 * y, call=lambda x, y: x.sub(y, alpha=0.5),
                              dtypes=FLOATS)},
    "multiply": {"": Ref(np.multiply),
                 "inplace_scalar": Ref(lambda x: (x * 2.5).astype(x.dtype), dtypes=FLOATS16,
                                       call=lambda x: inplace_call("mul_")(x, 2.5),
                                       cases=cases(a(3, 4), a(TAIL)))},
    "divide": Ref(np.divide, ("any", "nonzero")),
    "maximum": Ref(np.maximum),
    "minimum": Ref(np.minimum),
    "pow": {"": Ref(np.power, ("any", "positive")),
            "square": Ref(lambda x: x ** 2, call=lambda x: x ** 2, cases=cases(a(3, 4), a(TAIL))),
            "sqrt_exponent": Ref(lambda x: x ** 0.5, ("positive",), dtypes=FLOATS16,
                                 call=lambda x: x.pow(0.5), cases=cases(a(3, 4), a(TAIL)))},
    "logical_and": Ref(np.logical_and, dtypes=STORAGE, **EXACT),
    "logical_or": Ref(np.logical_or, dtypes=STORAGE, **EXACT),
    "logical_xor": Ref(np.logical_xor, dtypes=STORAGE, **EXACT),
    "bitwise_and": Ref(np.bitwise_and, dtypes=("bool", "int64"), **EXACT),
    "bitwise_or": Ref(np.bitwise_or, dtypes=("bool", "int64"), **EXACT),
    "bitwise_xor": Ref(np.bitwise_xor, dtypes=("bool", "int64"), **EXACT),
    "bitwise_left_shift": Ref(np.left_shift, ("any", "shift"), dtypes=("int64",), **EXACT),
    "bitwise_right_shift": Ref(np.right_shift, ("any", "shift"), dtypes=("int64",), **EXACT),
    "equal": Ref(np.equal, dtypes=STORAGE, **EXACT),
    "not_equal": Ref(np.not_equal, dtypes=STORAGE, **EXACT),
    "less": Ref(np.less, dtypes=STORAGE, **EXACT),
    "less_equal": Ref(np.less_equal, dtypes=STORAGE, **EXACT),
    "greater": Ref(np.greater, dtypes=STORAGE, **EXACT),
    "greater_equal": Ref(np.greater_equal, dtypes=STORAGE, **EXACT),

    # ---- unary: dst = op(x); int64 -> float32 for the float ops (PyTorch) -----------------
    "negative": Ref(np.negative, **EXACT),
    "abs": Ref(np.abs, **EXACT),
    "exp": Ref(np.exp),
    "log": Ref(np.log, ("positive",)),
    "sqrt": Ref(np.sqrt, ("positive",)),
    "tanh": Ref(np.tanh),
    "sigmoid": Ref(lambda x: 1 / (1 + np.exp(-x))),
    "relu": Ref(lambda x: np.maximum(x, 0), **EXACT),
    "logical_not": Ref(np.logical_not, dtypes=("bool",), **EXACT),
    "bitwise_not": {"": Ref(np.invert, dtypes=("bool", "int64"), **EXACT),
                    "invert_operator": Ref(np.invert, call=lambda x: ~x, dtypes=("bool", "int64"),
                                           **EXACT)},
    "sign": Ref(_sign, dtypes=STORAGE, **EXACT),
    "floor": Ref(_int_same(np.floor), **EXACT),
    "ceil": Ref(_int_same(np.ceil), **EXACT),
    "round": Ref(_int_same(np.rint), **EXACT),  # halves to even
    "trunc": Ref(_int_same(np.trunc), **EXACT),
    "reciprocal": Ref(lambda x: 1 / x, ("nonzero",)),
    "rsqrt": Ref(lambda x: 1 / np.sqrt(x), ("positive",)),
    "isnan": Ref(np.isnan, dtypes=STORAGE, **EXACT),
    "isfinite": Ref(np.isfinite, dtypes=STORAGE, **EXACT),

    # ---- reductions (the forms: _op_cases.FAMILIES["reduce"]) -----------------------------
    "sum": Ref(np.sum, tol="accumulate", dtypes=STORAGE),
    "max": Ref(np.max, **EXACT),
    "min": Ref(np.min, **EXACT),
    "argmax": Ref(np.argmax, **EXACT),
    "mean": Ref(np.mean, tol="accumulate"),

    # ---- matmul ----------------------------------------------------------------------------
    "matmul": Ref(np.matmul, tol="accumulate"),
    "qlinear": Elsewhere("tests/test_quantization_kernels.py",
                         "int8: every kernel against an exact int64 reference, not NumPy's float"),

    # ---- views (exact; the reference is the same expression on the ndarray) ---------------
    "reshape": {"": Ref(None, call=lambda x: x.reshape(-1), dtypes=STORAGE, **EXACT),
                "col": Ref(None, call=lambda x: x.reshape(-1, 1), dtypes=STORAGE, **EXACT),
                "tuple": Ref(None, call=lambda x: x.reshape((1, -1)), dtypes=STORAGE, **EXACT)},
    "transpose": {"": Ref(None, call=lambda x: x.transpose(*range(x.ndim)[::-1]), dtypes=STORAGE, **EXACT),
                  "T": Ref(None, call=lambda x: x.T, dtypes=STORAGE, **EXACT),
                  "reverse": Ref(None, call=lambda x: x.transpose(), dtypes=STORAGE, **EXACT)},
    "getitem": {label: Ref(None, call=f, dtypes=STORAGE, cases=c, **EXACT) for label, f, c in [
        ("index_0", lambda x: x[0], ND1), ("index_neg1", lambda x: x[-1], ND1),
        ("slice", lambda x: x[1:3], ND1 + cases(a(0, 3), a(3, 0))), ("slice_step", lambda x: x[::2], ND1),
        ("slice_start_step", lambda x: x[1::3], ND1), ("slice_neg", lambda x: x[-2:], ND1),
        ("column", lambda x: x[:, -1], ND2), ("ellipsis", lambda x: x[..., 0], ND1),
        ("newaxis", lambda x: x[None], cases(a()) + ND1), ("slice_and_index", lambda x: x[1:, -1], ND2),
        ("view_of_view", lambda x: x[::2][..., None][-1], ND1 + cases(PERM, BLOCK))]},

    # ---- copies ------------------------------------------------------------------------------
    "copy": {"contiguous": Ref(lambda x: x.copy(order="C"), call=lambda x: x.contiguous(), dtypes=STORAGE, **EXACT),
             "clone": Ref(lambda x: x.copy(), call=lambda x: x.clone(), dtypes=STORAGE, **EXACT),
             **{f"astype_{t}": Ref(lambda x, _t=t: _astype_ref(x, _t), dtypes=STORAGE,
                                   call=lambda x, _t=t: x.astype(getattr(pygpu, _t)),
                                   cases=cases(a(), a(TAIL), tr(389, 257)), **EXACT) for t in STORAGE}},
    "to": {**{f"dtype_{t}": Ref(lambda x, _t=t: _astype_ref(x, _t), call=lambda x, _t=t: x.to(_t),
                                dtypes=STORAGE, cases=cases(a(3, 4)), **EXACT) for t in STORAGE},
           "cpu": Ref(lambda x: x, call=lambda x: x.to("cpu"), dtypes=STORAGE, result_device="cpu", **EXACT),
           "cpu_method": Ref(lambda x: x, call=lambda x: x.cpu(), dtypes=STORAGE, result_device="cpu", **EXACT),
           "via_sim1": Ref(lambda x: x, call=lambda x: x.to("sim:1").to(x.device), dtypes=STORAGE, **EXACT)},

    # ---- creation: no input to compare with ------------------------------------------------
    **{n: Elsewhere("tests/test_creation.py", "creation: checked against NumPy's factories and "
                    "the generator's own stream") for n in ("fill", "arange", "rand", "randn")},
}


# ---- the math functions (pg_ops.def's rows after isfinite and after ge) -------------------
# name -> (NumPy reference, or torch's where NumPy has none; the domain of each input; the
# tolerance class). Floats and float16, the NUM rows int64 too (no bfloat16: torch's
# references have no bfloat16 loops for most). tests/test_math_ops.py reads these too (special
# values at vector sizes, gradients, int64 division, the compositions).
def _torch_ref(name):
    """torch.<name> on the inputs; float16 ones widened to float32 and the result rounded once,
    as pygpu computes them (torch's own float16 loops keep half intermediates: its float16
    logit, ndtr and i0e are off by several ulps on 1 to 40 % of inputs)."""
    def ref(*xs):
        import torch
        f = torch
        for part in name.split("."):
            f = getattr(f, part)
        xs = [np.asarray(x) for x in xs]
        half = np.result_type(*xs) == np.float16  # a float16 result (not float16 with float32)
        wide = [x.astype(np.float32) if x.dtype == np.float16 else x for x in xs]
        out = f(*[torch.from_numpy(np.array(x)) for x in wide]).numpy()
        return out.astype(np.float16) if half and out.dtype == np.float32 else out
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
    "heaviside": (lambda x, y: np.heaviside(x, y).astype(np.result_type(x, y)), ("any",), "exact"),
    "fmax": (np.fmax, ("any",), "exact"), "fmin": (np.fmin, ("any",), "exact"),
    "nextafter": (np.nextafter, ("any",), "exact"),
    # (torch has no half zeta: computed in float32 and rounded once, as pygpu does)
    "special_zeta": (lambda x, q: _torch_ref("special.zeta")(
        np.asarray(x, np.promote_types(np.result_type(x), np.float32)),
        np.asarray(q, np.promote_types(np.result_type(q), np.float32))).astype(np.result_type(x, q)),
        ("gt1", "positive"), "special"),
}
# the rows that take int64 (input class NUM or ANY: the op table's dtypes column, pg_ops.def)
_MATH_NUM = {r[0] for r in pygpu._C._op_table() if r[7] in ("NUM", "ANY")}
for _name, (_ref, _dom, _tol) in MATH_UNARY.items():
    REFS[_name] = Ref(_ref, (_dom,), _tol, FLOATS + ("float16",) + (("int64",) if _name in _MATH_NUM else ()))
for _name, (_ref, _dom, _tol) in MATH_BINARY.items():
    REFS[_name] = Ref(_ref, _dom, _tol, FLOATS + (("int64",) if _name in _MATH_NUM else ())
                      + (("float16",) if _name != "nextafter" else ()))


# ---- GELU (issue 45): both forms and their gradients' rows, against torch's functions ----------
# (torch in float64, rounded once to the result's dtype: its own float32 tanh-form gradient
# loses 1e-4 relative where 1 + tanh cancels, x below -2, which pygpu's formula keeps)
def _gelu_ref(approximate):
    def ref(x):
        import torch
        xs = np.asarray(x)
        out = torch.nn.functional.gelu(torch.from_numpy(np.array(xs, np.float64)),
                                       approximate=approximate).numpy()
        return out.astype(xs.dtype)
    return ref


def _gelu_backward_ref(approximate):
    def ref(g, x):
        import torch
        g, x = np.broadcast_arrays(np.asarray(g), np.asarray(x))
        out = torch.ops.aten.gelu_backward(torch.from_numpy(np.array(g, np.float64)),
                                           torch.from_numpy(np.array(x, np.float64)),
                                           approximate=approximate).numpy()
        return out.astype(np.result_type(g, x))
    return ref


for _name, _approx in (("gelu", "none"), ("gelu_tanh", "tanh")):
    REFS[_name] = Ref(_gelu_ref(_approx), ("any",), "elementwise", FLOATS + ("float16",),
                      call=getattr(pygpu._C, _name))
    REFS[_name + "_backward"] = Ref(_gelu_backward_ref(_approx), ("any",), "elementwise",
                                    FLOATS + ("float16",),
                                    call=getattr(pygpu._C, _name + "_backward"))


# ---- ReLU's gradient row (issue 45): torch's threshold_backward(g, y, 0) -----------------------
def _relu_backward_ref(g, y):
    import torch
    g, y = np.broadcast_arrays(np.asarray(g), np.asarray(y))
    out = torch.ops.aten.threshold_backward(torch.from_numpy(np.array(g, np.float64)),
                                            torch.from_numpy(np.array(y, np.float64)), 0).numpy()
    return out.astype(np.result_type(g, y))


REFS["relu_backward"] = Ref(_relu_backward_ref, ("any",), "elementwise", FLOATS + ("float16",),
                           call=pygpu._C.relu_backward)


# ---- where and clamp ----------------------------------------------------------------------
WHERE = cases(
    (a(3, 4), a(3, 4), a(3, 4)), (a(3, 1), a(4), a()), (a(), a(2, 3), a(3)), (a(7), a(7), a(1)),
    (tr(4, 3), a(3, 4), tr(4, 3)), (COLSTEP, a(3, 3), a(1, 3)), (STEP9, a(5), STEP10),
    (a(0, 3), a(3), a(1, 3)), (a(0), a(0), a()), (PERM, a(4), a(2, 1)))
REFS["where"] = {
    "": Ref(np.where, dtypes=tuple(("bool", d, d) for d in STORAGE), **EXACT),
    "mixed": Ref(np.where, dtypes=tuple(("bool",) + p for p in MIXED_PAIRS[:7]), cases=WHERE[:3], **EXACT),
    "scalar": Ref(lambda c, x: np.where(c, x, 0.5), call=lambda c, x: pygpu.where(c, x, 0.5),
                  cases=cases((a(3, 4), a(3, 4)), (a(4), tr(4, 3)), (a(), a(5))),
                  dtypes=(("bool", "float32"), ("bool", "float64"), ("bool", "int64")), **EXACT),
    "method": Ref(np.where, call=lambda c, x, y: x.where(c, y), cases=WHERE,
                  dtypes=(("bool", "float32", "float32"),), **EXACT),
}
REFS["clamp"] = {
    "": Ref(lambda x: np.clip(x, -0.5, 0.5), call=lambda x: pygpu.clamp(x, -0.5, 0.5)),
    "int_bounds": Ref(lambda x: np.clip(x, -2, 3), call=lambda x: x.clamp(-2, 3)),
    "min": Ref(lambda x: np.maximum(x, 0).astype(x.dtype), call=lambda x: x.clamp(min=0)),
    "max": Ref(lambda x: np.minimum(x, 1).astype(x.dtype), call=lambda x: x.clip(max=1)),
    "tensors": Ref(lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), call=lambda x, lo, hi: x.clamp(lo, hi),
                   cases=cases((a(3, 4), a(4), a(3, 1)), (tr(4, 3), a(), a(3, 4)), (a(0, 2), a(2), a()))),
    "clip": Ref(lambda x: np.clip(x, -1, 1), call=lambda x: pygpu.clip(x, -1, 1)),
    "inplace": Ref(lambda x: np.clip(x, -0.5, 0.5), call=lambda x: inplace_call("clamp_")(x, -0.5, 0.5),
                   dtypes=FLOATS16),
    "inplace_int": Ref(lambda x: np.clip(x, -2, 3), call=lambda x: inplace_call("clamp_")(x, -2, 3),
                       dtypes=("int64",)),
    "inplace_clip": Ref(lambda x: np.minimum(x, 0).astype(x.dtype), call=lambda x: inplace_call("clip_")(x, max=0)),
}


# addcmul, addcdiv, lerp: one TERNARY node for float32/float64 (broadcast, strided and
# scalar weights), composed for float16; their in-place forms are in test_math_ops.py
_TERNARY = cases((a(3, 4), a(3, 4), a(3, 4)), (tr(4, 3), a(4), a(3, 1)), (a(3, 2, 4), a(), PERM),
                 (a(TAIL), a(TAIL), a(TAIL)))
_T16 = FLOATS + ("float16",)
REFS["addcmul"] = Ref(lambda x, y, z: x + 0.5 * y * z, call=lambda x, y, z: pygpu.addcmul(x, y, z, value=0.5),
                      dtypes=_T16, cases=_TERNARY)
REFS["addcdiv"] = Ref(lambda x, y, z: x + -2 * y / z, ("any", "any", "nonzero"), dtypes=_T16, cases=_TERNARY,
                      call=lambda x, y, z: x.addcdiv(y, z, value=-2))
REFS["lerp"] = {
    "": Ref(lambda x, y, z: x + z * (y - x), call=lambda x, y, z: pygpu.lerp(x, y, z), dtypes=_T16, cases=_TERNARY),
    "number": Ref(lambda x, y: x + 0.75 * (y - x), call=lambda x, y: x.lerp(y, 0.75), dtypes=_T16,
                  cases=cases((a(3, 4), a(3, 4)), (tr(4, 3), a(4)), (a(TAIL), a(TAIL))))}


# ---- fused training ops (pygpu/_ops/_train.py -> csrc/core/pg_ops_train.c) ------------------
# Each against a NumPy reference written out op by op. In-place optimizer updates run on
# clones (inputs are never written) and return the new state.
_LIN = cases((a(5, 3), a(4, 3), a(4)), (a(1, 1), a(1, 1), a(1)), (a(0, 3), a(4, 3), a(4)),
             (tr(3, 5), a(4, 3), a(4)), (a(5, 3), tr(3, 4), a(4)), (a(64, 33), a(17, 33), a(17)),
             # cut by the scheduler: output-feature slices (dW, db), panels of y and dx
             (a(64, 70), a(130, 70), a(130)), (a(48, 70), a(10, 70), a(10)))
_ACT_NP = {name: f for name, (f, _) in ACT_NP.items()}  # the op table's activations (_helpers)
_DACT_NP = {name: df for name, (_, df) in ACT_NP.items()}
FUSED = dict(tol="fused", dtypes=FLOATS)


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
        return [(dz @ w).astype(x.dtype), (dz.T @ x).astype(x.dtype), dz.sum(axis=0).astype(x.dtype)]
    return fn, ref


REFS["linear"] = {
    **{act or "none": Ref(_lin_ref(act), call=lambda x, w, b, _a=act: pygpu.nn.functional.linear(x, w, b, _a),
                          cases=_LIN, **FUSED) for act in ACTS},
    "nobias": Ref(lambda x, w: x @ w.T, call=lambda x, w: pygpu.nn.functional.linear(x, w),
                  cases=cases((a(5, 3), a(4, 3)), (a(2, 3, 3), a(2, 3))), **FUSED)}
REFS["linear_backward"] = {act or "none": Ref(_lin_bwd(act)[1], call=_lin_bwd(act)[0], cases=_LIN,
                                              kind="tensors", **FUSED) for act in ACTS}

_XENT = cases((a(5, 4), a(5, 4)), (a(1, 1), a(1, 1)), (a(3, 7), a(3, 7)), (tr(4, 3), a(3, 4)),
              (a(64, 10), a(64, 10)))


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _np_xent(x, lab):
    lse = np.log(np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1)) + x.max(axis=1)
    return (lse - x[np.arange(len(lab)), lab]).mean()


def _np_layer_norm(x, w=None, b=None):
    d = x - x.mean(axis=-1, keepdims=True)
    y = d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)
    return (y if w is None else y * w + b).astype(x.dtype)


# labels: argmax of the second input (valid classes, computed on the device)
REFS["cross_entropy"] = Ref(
    lambda x, s: [np.asarray(_np_xent(x, s.argmax(axis=1)), dtype=x.dtype), _np_softmax(x).astype(x.dtype)],
    call=lambda x, s: list(pygpu._C._softmax_xent_fwd(x, s.argmax(axis=1), True)), cases=_XENT,
    kind="tensors", **FUSED)
REFS["cross_entropy_backward"] = Ref(
    lambda x, s: ((_np_softmax(x) - np.eye(x.shape[1])[s.argmax(axis=1)]) * 2.0 / x.shape[0]).astype(x.dtype),
    call=lambda x, s: pygpu._C._softmax_xent_bwd(pygpu.softmax(x), s.argmax(axis=1), x.sum() * 0.0 + 2.0, True),
    cases=_XENT, **FUSED)
# softmax, layer_norm over the last axis: one node on cpu and sim (other axes compose it)
REFS["softmax"] = {
    "rows": Ref(lambda x: _np_softmax(x).astype(x.dtype), call=lambda x: pygpu.softmax(x, -1),
                cases=cases(a(5, 4), a(1, 1), a(3, 7), tr(4, 3), a(64, 10), COLSTEP), **FUSED),
    "axis0": Ref(lambda x: _np_softmax(x.T).T.astype(x.dtype), call=lambda x: pygpu.softmax(x, 0),
                 cases=cases(a(5, 4), tr(4, 3)), **FUSED)}
REFS["log_softmax"] = {
    "rows": Ref(lambda x: np.log(_np_softmax(x)).astype(x.dtype), call=lambda x: pygpu.log_softmax(x, -1),
                cases=cases(a(5, 4), a(1, 1), tr(4, 3), a(64, 10)), **FUSED),
    "axis0": Ref(lambda x: np.log(_np_softmax(x.T)).T.astype(x.dtype), call=lambda x: pygpu.log_softmax(x, 0),
                 cases=cases(a(5, 4), tr(4, 3)), **FUSED)}
REFS["mse_loss"] = {
    "mean": Ref(lambda x, y: np.asarray(np.mean((x - y) ** 2), dtype=x.dtype),
                call=lambda x, y: pygpu.mse_loss(x, y), cases=cases((a(5, 4), a(5, 4)), (tr(4, 3), a(3, 4))),
                **FUSED)}
# the convolutional and sequence layers: PyTorch is their oracle (forward and every gradient)
REFS.update({n: Elsewhere("tests/test_conv.py", "convolution, pooling and batch norm against torch, "
                          "forward and every gradient")
             for n in ("conv2d", "conv2d_input_backward", "conv2d_weight_backward", "pool2d",
                       "pool2d_backward", "batch_norm", "batch_norm_backward")})
REFS.update({n: Elsewhere("tests/test_rnn.py", "whole recurrent layers against torch from the "
                          "same weights") for n in ("rnn_forward", "rnn_backward")})
REFS.update({n: Elsewhere("tests/test_attention.py", "the fused attention against torch, "
                          "masks, dropout and every gradient")
             for n in ("scaled_dot_product_attention", "scaled_dot_product_attention_backward")})
REFS["layer_norm"] = {
    "rows": Ref(_np_layer_norm, call=lambda x: pygpu.nn.functional.layer_norm(x, (x.shape[-1],)),
                cases=cases(a(5, 4), a(1, 1), a(3, 7), tr(4, 3), a(2, 3, 5), COLSTEP), **FUSED),
    "affine": Ref(lambda x, w: _np_layer_norm(x, w, w * 0.5),
                  call=lambda x, w: pygpu.nn.functional.layer_norm(x, (x.shape[-1],), w, w * 0.5),
                  cases=cases((a(5, 4), a(4)), (tr(4, 3), a(4)), (a(2, 3, 5), a(5))), **FUSED)}

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


REFS["sgd"] = {f"{'first' if f else 'later'}_{'nesterov' if n else 'plain'}":
               Ref(_sgd(f, n)[1], call=_sgd(f, n)[0], cases=_OPT, kind="tensors", **FUSED)
               for f, n in ((True, False), (False, False), (False, True))}


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


REFS["adam"] = Ref(_adam_ref, call=_adam_fn, cases=_OPT, kind="tensors", **FUSED)


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


REFS["unscale_"] = Ref(lambda g: [(g * 0.25).astype(g.dtype), np.array(0.0, dtype=np.float32)],
                       call=_unscale_fn, cases=cases(a(7), a(3, 4), a(1)), kind="tensors", **FUSED)


# ---- what is not (yet) a row of the table: {name: (family, entry)} --------------------------
VALUE = dict(kind="value", dtypes=STORAGE)
_PROPS = cases(a(), tr(4, 3), COLSTEP, a(0, 3))
_ONE = cases(a(), a(1, 1))
OFF_TABLE = {
    # cat (pygpu/_ops/_train.py for now): copies into one new tensor
    "cat": ("train", {
        "dim0": Ref(lambda x, y: np.concatenate([x, y]), call=lambda x, y: pygpu.cat([x, y]), dtypes=ALL,
                    cases=cases((a(2, 3), a(4, 3)), (a(0, 3), a(1, 3)), (tr(3, 2), a(1, 3)), (a(5), a(2))), **EXACT),
        "dim1": Ref(lambda x, y: np.concatenate([x, y], 1), call=lambda x, y: pygpu.cat([x, y], dim=-1),
                    dtypes=ALL, cases=cases((a(2, 3), a(2, 1)), (BLOCK, a(2, 2))), **EXACT)}),
    # properties and conversions to Python (compared with ==, types too)
    "property": ("train", {
        "shape": Ref(None, call=lambda x: x.shape, cases=_PROPS, **VALUE),
        "ndim": Ref(None, call=lambda x: x.ndim, cases=_PROPS, **VALUE),
        "numel": Ref(lambda x: x.size, call=lambda x: x.numel(), cases=_PROPS, **VALUE),
        "nbytes": Ref(None, call=lambda x: x.nbytes, cases=_PROPS, **VALUE),
        "len": Ref(None, call=len, cases=_PROPS[1:], **VALUE),
        "dtype": Ref(lambda x: x.dtype.name, call=lambda x: x.dtype.name, cases=_PROPS, **VALUE),
        "is_contiguous": Ref(lambda x: bool(x.flags.c_contiguous), call=lambda x: x.is_contiguous(),
                             cases=_PROPS, **VALUE),
        "tolist": Ref(None, call=lambda x: x.tolist(), cases=_PROPS, **VALUE),
        "item": Ref(None, call=lambda x: x.item(), cases=_ONE, **VALUE),
        "float": Ref(lambda x: float(x.item()), call=float, cases=_ONE, **VALUE),
        "int": Ref(lambda x: int(x.item()), call=int, cases=_ONE, **VALUE),
        "bool": Ref(lambda x: bool(x.item()), call=bool, cases=_ONE, **VALUE),
        "iterate": Ref(None, call=list, cases=_PROPS[1:] + cases(STEP9), kind="tensors", dtypes=STORAGE,
                       **EXACT)}),
}
