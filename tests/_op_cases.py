# _op_cases.py - the op-table suite's machinery: cases generated from the op table.
#
# The rows come from _C._op_table() (csrc/core/pg_ops.def): name, family (binary, unary,
# reduce, matmul, view, copy, create, train, select, composite), Python names. How to check
# each row is in tests/op_references.py ({name: Ref(NumPy reference, domain, tolerance)});
# a row without an entry there fails test_every_table_row_has_a_reference. Three sums of
# cases, not their product (ggml's test-backend-ops runs a handful of cases per op):
#   semantics: every op x its dtypes x {0-d, an odd vector length with a tail after every
#              vector width, one broadcast (or a 2-D matrix the thread pool splits)}, on
#              cpu (tests/test_ops_semantics.py; .ci/run's ISA lanes run only these);
#   layouts:   every layout (transposed, stepped, offset, permuted, broadcast, empty, ...)
#              x one op per family x its dtypes, on cpu and cuda (test_ops_layouts.py);
#   devices:   every op x its dtypes x one shape on each device besides cpu (sim, cuda:
#              test_ops_devices.py).
# A case's inputs are made on the host, uploaded with pygpu.tensor(a, device=d), views taken
# on both sides; the result must match NumPy in value, shape, dtype and device, and the
# inputs must be unchanged. build_support/coverage_diff.py compares the csrc/ lines these sums
# run with those of the full cross product they replace (docs/testing.md has the result).
import os
import re
import warnings
import zlib
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import pytest

import pygpu

from _helpers import TENSOR_TYPE, random_array, same_device, to_device

# (rtol, atol) per result dtype. "accumulate" (sums, means, matmul) is relative to the
# magnitude of the terms summed (the reference applied to |inputs|), so cancellation does not
# make a correct result look wrong. The half dtypes are rounded once from a float32 result:
# float16's ulp is 2**-10 relative, bfloat16's 2**-7; where a transcendental's last float32
# bit differs from NumPy's, the rounding may land one half ulp away: two ulps allowed.
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

# ---- dtypes -------------------------------------------------------------------------------
FLOATS = ("float32", "float64")
NUMERIC = ("float32", "float64", "int64")
ALL = ("float32", "float64", "int64", "bool")
# The half dtypes: float16 against NumPy's float16 loops (computed in float32, rounded once,
# as pygpu's kernels do); bfloat16 with ml_dtypes' arrays, references computed in float32 and
# rounded once. ml_dtypes is a test extra (pyproject); without it only float16 runs.
try:
    import ml_dtypes  # noqa: F401  (registers np.dtype("bfloat16"))

    HALF = ("float16", "bfloat16")
except ImportError:
    HALF = ("float16",)
STORAGE = ALL + HALF
NUMERIC16 = NUMERIC + HALF
FLOATS16 = FLOATS + HALF
# (first, second) dtype pairs of different kinds and widths: promotion, PyTorch's rules
MIXED_PAIRS = (
    ("int64", "float32"), ("float32", "int64"), ("float32", "float64"),
    ("int64", "float64"), ("bool", "int64"), ("bool", "float32"), ("float64", "bool"),
    ("float16", "int64"), ("float16", "float32"), ("bool", "float16"), ("float64", "float16"),
) + ((("bfloat16", "int64"), ("bfloat16", "float32"), ("bool", "bfloat16"),
      ("float16", "bfloat16")) if "bfloat16" in HALF else ())


# ---- inputs -------------------------------------------------------------------------------
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


def cases(*inputs_lists):
    """Each argument is one input or a tuple of inputs (one per operand)."""
    return tuple(i if isinstance(i, tuple) else (i,) for i in inputs_lists)


# An odd length: full vectors of every width (SSE2 to AVX-512, CUDA's float4) and a tail
# after each, long enough that the thread pools split it (cpu_parallel.c's grains).
TAIL = 100003
# A matrix the pools split by rows, with an odd row length (a tail in every row).
MAT = (257, 389)

STEP9 = In((9,), lambda x: x[::2], "9[::2]")  # (5,), stride 2
STEP10 = In((10,), lambda x: x[1::2], "10[1::2]")  # (5,), offset 1, stride 2
COLSTEP = In((3, 8), lambda x: x[:, 1::3], "3x8[:,1::3]")  # (3, 3), offset 1
BLOCK = In((4, 6), lambda x: x[1:3, ::2], "4x6[1:3,::2]")  # (2, 3)
PERM = In((2, 3, 4), lambda x: x.transpose(1, 0, 2), "2x3x4.t102")  # (3, 2, 4)


def _expand(x):  # a stride-0 (broadcast) view: rows that all share one buffer row
    if isinstance(x, np.ndarray):
        return np.broadcast_to(x, (3,) + x.shape[1:])
    return x.expand(3, *x.shape[1:])


EXPANDED = In((1, 5), _expand, "1x5.expand3")  # (3, 5), stride 0 on axis 0

# Every layout an input can have, with the (contiguous) shape of the view it gives: the
# layouts sum runs each through one op per family, as the first operand (a contiguous
# second operand of the same shape) and, for two-operand ops, as the second.
LAYOUTS = {
    "transpose": (tr(4, 3), (3, 4)), "step": (STEP9, (5,)), "offset_step": (STEP10, (5,)),
    "column_step": (COLSTEP, (3, 3)), "block": (BLOCK, (2, 3)), "permuted": (PERM, (3, 2, 4)),
    "expanded": (EXPANDED, (3, 5)), "big_transpose": (tr(389, 257), MAT),
    "empty": (a(0, 3), (0, 3)), "empty_inner": (a(3, 0), (3, 0)), "one": (a(1, 1), (1, 1)),
    "3d": (a(2, 3, 4), (2, 3, 4)),
}


# ---- what the suite knows about an op -----------------------------------------------------
@dataclass(frozen=True)
class Ref:
    """How to check one op (or one variant of it) against NumPy.

    ref:     (*ndarrays) -> NumPy's result; None: `call` itself applied to the ndarrays
             (operators and methods NumPy shares)
    domain:  per input (the last repeats): "any", "positive" (log, sqrt), "nonzero" (divisors)
    tol:     "elementwise" | "accumulate" (sums: relative to the sum of |terms|) | "fused" |
             "exact"
    dtypes:  the dtypes the op takes: names, or tuples of names (one per input)
    call:    (*tensors) -> pygpu's result; None: the table row's first `pygpu.` name
             (else its first method)
    cases:   input cases replacing the family's (view, copy, train, select and composite
             variants, whose inputs are particular)
    kind:    "tensor" | "value" (compared with ==, types too) | "tensors" (a list)
    result_device: where the result must be (None: the inputs' device)
    kwargs:  (reduce) the reduction's keyword arguments
    """

    ref: Callable | None
    domain: tuple = ("any",)
    tol: str = "elementwise"
    dtypes: tuple = NUMERIC16
    call: Callable | None = None
    cases: tuple | None = None
    kind: str = "tensor"
    result_device: str | None = None
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Elsewhere:
    """A row whose values another file checks (creation ops: no input to compare with)."""

    path: str
    why: str


# ---- the table ----------------------------------------------------------------------------
def table_rows():
    """{name: (family, Python names)} from _C._op_table(); columns read by position, the
    leading ones only, so columns added at the end reach no test here."""
    return {row[0]: (row[1], tuple(row[3])) for row in pygpu._C._op_table()}


_DEF = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc", "core",
                    "pg_ops.def")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\w+\([^()]*\)|[^,\s()][^,()]*')
_ELEMENTWISE_ROW = re.compile(r'^PG_(BINARY|UNARY)\(((?:[^()"]|"(?:[^"\\]|\\.)*"|\([^()]*\))*)\)', re.M)


def elementwise_columns():
    """{name: (in, out)}: the binary and unary rows' dtype columns (pg_ops.def: `in` says which
    dtypes the op takes, `out` its result's), read from the table's text, as
    tests/test_node_table.py reads it: _C._op_table() does not carry these two columns. Every
    row of the table must be found, so the reading cannot drift from the rows."""
    with open(_DEF) as f:
        text = f.read()
    cols = {}
    for m in _ELEMENTWISE_ROW.finditer(text):
        row = [c.strip() for c in _TOKEN.findall(m.group(2))]
        cols[row[1]] = (row[7], row[8])
    table = {name for name, (family, _) in table_rows().items() if family in ("binary", "unary")}
    if set(cols) != table:
        raise LookupError(f"pg_ops.def's elementwise rows read as {sorted(set(cols) ^ table)} "
                          "differ from _C._op_table()'s")
    return cols


def resolve(qualname):
    """pygpu.special.i0e -> the function."""
    obj = pygpu
    for part in qualname.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def default_call(name, family, py):
    """The pygpu callable of a row: its first module function (pygpu.add), else its first
    function of a submodule (pygpu.special.i0e), else its first plain method (Tensor.eq)."""
    for nested in (False, True):
        for q in py:
            if q.startswith("pygpu.") and (q.count(".") > 1) == nested:
                return resolve(q)
    for q in py:
        m = q[len("Tensor."):] if q.startswith("Tensor.") else None
        if m and not m.startswith("_") and not m.endswith("_"):
            return lambda *t, _m=m, **kw: getattr(t[0], _m)(*t[1:], **kw)
    raise LookupError(f"op {name!r} ({family}): no pygpu.<name> or method among {py}; give "
                      "its Ref a call")


# ---- one case -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    op: str        # the table row
    label: str     # the variant and form (spelling, scalar, in-place, layout), for the id
    ref: Ref
    call: Callable
    dtypes: tuple  # one per input
    inputs: tuple  # In per input
    promote: bool  # PyTorch's type promotion decides the result dtype
    scalar: object = None  # a Python scalar operand: ("left" | "right", value)
    inplace: bool = False  # computes into (a strided copy of) the first input: its dtype stays

    @property
    def id(self):
        ins = "-".join(i.name for i in self.inputs)
        sc = f"-scalar{self.scalar[0]}{self.scalar[1]!r}" if self.scalar else ""
        return f"{self.op}{'.' + self.label if self.label else ''}-{'+'.join(self.dtypes)}-{ins}{sc}"


def param(case):
    return pytest.param(case, id=case.id)


def make_inputs(case, device):
    seed = zlib.crc32(f"{case.id}".encode())
    rng = np.random.default_rng(seed)
    arrays, tensors = [], []
    dom = case.ref.domain
    shift = 1 if case.scalar and case.scalar[0] == "left" else 0  # the tensor is operand 1
    for k, spec in enumerate(case.inputs):
        dtype = case.dtypes[min(k, len(case.dtypes) - 1)]
        domain = dom[min(k + shift, len(dom) - 1)]
        base = random_array(rng, spec.shape, dtype, domain)
        t = to_device(base, device)
        arrays.append(spec.view(base) if spec.view else base)
        tensors.append(spec.view(t) if spec.view else t)
    return arrays, tensors


def _with_scalar(case, seq):
    if not case.scalar:
        return list(seq)
    side, value = case.scalar
    return [value] + list(seq) if side == "left" else list(seq) + [value]


def _is_bf16(x):
    return getattr(x, "dtype", None) is not None and x.dtype.name == "bfloat16"


# PyTorch's type promotion (torch.result_type), where it differs from NumPy's: an integer
# with a float gives that float (int64 + float32 is float32), an integer result of a float op
# (true division, exp, a Python float operand) is float32 (the default dtype), and a 0-d
# operand counts only if its kind (bool < int < float) is above the others'.
_RANK = {"bool": 0, "int64": 1, "float16": 2, "bfloat16": 2, "float32": 3, "float64": 4}


def _kind(dt):
    return min(_RANK[dt], 2)


def _promote(x, y):
    if x == y:
        return x
    if {x, y} == {"float16", "bfloat16"}:
        return "float32"
    return x if _RANK[x] > _RANK[y] else y


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


def _torch_target(case, arrays):
    """The float dtype PyTorch computes a promoting op in, or None (not such an op)."""
    if not case.promote:
        return None
    inputs = [x for x in (arrays[1:] if case.op == "where" else arrays)
              if getattr(x, "dtype", None) is not None and x.dtype.name in _RANK]
    target = _torch_result(inputs) if inputs else None
    return "float32" if target is None or _kind(target) < 2 else target


def _narrowed(arrays, target):
    """A wider float operand is cast to the result dtype first, as PyTorch does (a float64
    0-d tensor with a float16 tensor computes from the float16-rounded value; a float16 0-d
    tensor with a bfloat16 tensor, from the bfloat16-rounded value)."""
    if target is None:
        return arrays

    def cast(d):
        return _kind(d) == 2 and d != target and (_RANK[d] > _RANK[target] or
                                                  {d, target} == {"float16", "bfloat16"})
    return [x.astype(target) if getattr(x, "dtype", None) is not None and x.dtype.name in _RANK
            and cast(x.dtype.name) else x for x in arrays]


def _as_torch(target, ref):
    if target is None or isinstance(ref, (list, tuple)):
        return ref
    ref = np.asarray(ref)
    if ref.dtype.name not in _RANK or _kind(ref.dtype.name) < 2:
        return ref
    return ref if ref.dtype.name == target else ref.astype(target)


def _np_call(case):
    r = case.ref
    f = r.ref or case.call
    return (lambda *xs: f(*xs, **r.kwargs)) if r.kwargs else f


def _bf16_reference(case, arrays):
    """bfloat16 arithmetic as pygpu defines it (and as NumPy's float16 loops do): the inputs
    widened to float32, the float32 result rounded once. A float32 result stays float32 where
    pygpu's promotion gives float32 (an input was float32 or float16)."""
    wide = [x.astype(np.float32) if _is_bf16(x) else x for x in arrays]
    keep32 = any(np.asarray(x).dtype.name in ("float32", "float16") for x in arrays
                 if not isinstance(x, (int, float, bool)))
    out = _np_call(case)(*_with_scalar(case, wide))

    def narrow(r):
        if isinstance(r, (list, tuple)):
            return type(r)(narrow(v) for v in r)
        r = np.asarray(r)
        return r if keep32 or r.dtype != np.float32 else r.astype("bfloat16")
    return narrow(out)


def reference(case, arrays):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # NumPy's mean of an empty slice warns
        target = _torch_target(case, arrays)
        arrays = _narrowed(arrays, target)
        if case.ref.tol != "exact" and case.ref.kind != "value" and any(map(_is_bf16, arrays)):
            return _as_torch(target, _bf16_reference(case, arrays))
        return _as_torch(target, _np_call(case)(*_with_scalar(case, arrays)))


def _check_tensor(got, ref, case, arrays, device, what="result"):
    r = case.ref
    ref = np.asarray(ref)
    assert isinstance(got, TENSOR_TYPE), f"{what} is {type(got).__name__}, expected a tensor"
    assert same_device(got.device, r.result_device or device), f"{what} on {got.device}"
    assert tuple(got.shape) == ref.shape, f"{what} shape {got.shape} != NumPy {ref.shape}"
    assert got.dtype.name == ref.dtype.name, f"{what} dtype {got.dtype} != NumPy {ref.dtype}"
    out = got.numpy()
    assert out.dtype == ref.dtype and out.shape == ref.shape
    dtype_name = ref.dtype.name
    if dtype_name == "bfloat16":  # compared as float32: exactly the bfloat16 values
        out, ref = out.astype(np.float32), ref.astype(np.float32)
    if r.tol == "exact" or ref.dtype.kind in "biu":
        np.testing.assert_array_equal(out, ref, err_msg=what)
        return
    rtol, atol = TOL[r.tol][dtype_name]
    if r.tol == "accumulate":
        # The error bound of a sum scales with the sum of |terms|.
        scale = np.abs(np.asarray(reference(case, [np.abs(x.astype(np.float64)) for x in arrays])))
        err = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        both_nan = np.isnan(out) & np.isnan(ref)
        bad = ~both_nan & ~(err <= rtol * scale + atol)
        assert not bad.any(), (
            f"{what}: {int(bad.sum())} of {ref.size} elements off; worst err "
            f"{np.nanmax(np.where(bad, err, 0))} vs bound rtol={rtol}*scale+atol={atol}"
        )
    else:
        if r.tol == "fused" and ref.size:
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


def check(case, device):
    """Run one case on `device` and compare it with NumPy; the inputs must be unchanged."""
    arrays, tensors = make_inputs(case, device)
    try:
        ref = reference(case, arrays)
    except ValueError as e:  # NumPy refuses (a reduction with no identity over an empty axis)
        with pytest.raises(ValueError):
            case.call(*_with_scalar(case, tensors), **case.ref.kwargs)
        return e
    if case.inplace:  # self keeps its dtype; a result of a higher kind cannot go there
        own = case.dtypes[0]
        if _kind(np.asarray(ref).dtype.name) > _kind(own):
            with pytest.raises(TypeError, match="can't be cast"):
                case.call(*tensors, **case.ref.kwargs)
            return None
        ref = np.asarray(ref).astype(own)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # one from pygpu is a bug
        got = case.call(*_with_scalar(case, tensors), **case.ref.kwargs)
    if case.ref.kind == "value":
        if isinstance(ref, tuple):  # .shape: a tuple of Python ints
            ref = tuple(int(n) for n in ref)
        elif isinstance(ref, np.generic):
            ref = ref.item()
        assert got == ref, f"{got!r} != NumPy {ref!r}"
        assert _same_types(got, ref), f"type {type(got).__name__} != NumPy {type(ref).__name__}"
    elif case.ref.kind == "tensors":
        assert isinstance(got, list) and len(got) == len(ref)
        for k, (g, r) in enumerate(zip(got, ref)):
            _check_tensor(g, r, case, arrays, device, what=f"item {k}")
    else:
        _check_tensor(got, ref, case, arrays, device)
    for k, (t, x) in enumerate(zip(tensors, arrays)):  # ops never write their inputs
        np.testing.assert_array_equal(t.numpy(), x, err_msg=f"input {k} changed")
    return got


# ---- the families: how a row's cases are made ------------------------------------------------
@dataclass(frozen=True)
class Family:
    """arity: inputs per case; semantics, device: (label, kwargs, inputs) forms; layouts:
    whether the family's first checkable row runs over LAYOUTS (forms given as kwargs)."""

    arity: int
    semantics: tuple = ()
    device: tuple = ()
    layouts: tuple = ()  # kwargs forms run over each layout; () none


def _forms(*inputs_lists, kw=None, label=""):
    return tuple((label, kw or {}, c) for c in cases(*inputs_lists))


FAMILIES = {
    "binary": Family(2, _forms((a(), a()), (a(TAIL), a(TAIL)), (a(*MAT), a(MAT[1]))),
                     _forms((a(37, 389), a(37, 389))), ({},)),
    "unary": Family(1, _forms(a(), a(TAIL), a(*MAT)), _forms(a(37, 389)), ({},)),
    # reductions: whole, along the outer / inner / middle axis, a tuple of axes, keepdims,
    # and a non-empty axis of an empty array; on devices, a long row (CUDA's two-pass
    # kernels), a tall matrix's columns and a matrix's rows
    "reduce": Family(1, (("all", {}, (a(),)), ("all", {}, (a(TAIL),)), ("axis0", {"axis": 0}, (a(*MAT),)),
                         ("axis-1_keepdims", {"axis": -1, "keepdims": True}, (a(*MAT),)),
                         ("axis1", {"axis": 1}, (a(2, 3, 4),)), ("axis01", {"axis": (0, 1)}, (a(2, 3, 4),)),
                         ("all_keepdims", {"keepdims": True}, (a(3, 4),)),
                         ("axis-1_empty", {"axis": -1}, (a(0, 3),)),
                         ("axis0_empty", {"axis": 0}, (a(0, 3),))),
                     (("all", {}, (a(1 << 18),)), ("axis0", {"axis": 0}, (a(4096, 3),)),
                      ("axis-1", {"axis": -1}, (a(*MAT),))),
                     ({}, {"axis": 0})),
    # matmul: vectors, batches, broadcast batches, and shapes the GEMM scheduler cuts into
    # panels (cpu_gemm_schedule.c: columns, rows, batches); its layouts are its own (below)
    "matmul": Family(2, _forms(
        (a(3, 4), a(4, 5)), (a(3, 4), a(4)), (a(4), a(4, 5)), (a(4), a(4)), (a(2, 3, 4), a(2, 4, 5)),
        (a(2, 3, 4), a(4, 5)), (a(1, 1), a(1, 1)), (a(0, 4), a(4, 5)), (a(3, 0), a(0, 5)),
        (a(3, 4), a(4, 0)), (a(0), a(0)), (a(33, 65), a(65, 17)), (a(64, 128), a(128, 64)),
        (a(200, 200), a(200, 200)), (a(4, 60, 70), a(70, 80)),
        # transposed operands: the kernels' own transposition paths (per ISA level, each
        # kernel packs op(A) and op(B) its way), mid-size where pygpu's AVX2 kernel runs
        (tr(4, 3), tr(5, 4)), (tr(120, 260), a(120, 70)), (a(300, 90), tr(40, 90))),
        _forms((a(33, 65), a(65, 17)))),
    # views of a contiguous and of a transposed tensor (reshape copies that one)
    "view": Family(1, _forms(a(), a(7), tr(4, 3), a(2, 3, 4)), _forms(a(2, 3, 4)), ({},)),
    "copy": Family(1, _forms(a(), a(TAIL), a(3, 4)), _forms(a(37, 389)), ({},)),
    "select": Family(3, _forms((a(3, 4), a(3, 4), a(3, 4)), (a(3, 1), a(4), a()), (a(), a(2, 3), a(3)),
                               (a(TAIL), a(TAIL), a()), (a(*MAT), a(*MAT), a(MAT[1]))),
                     _forms((a(37, 389), a(37, 389), a(389))), ({},)),
    "composite": Family(1, _forms(a(), a(TAIL), a(*MAT)), _forms(a(37, 389)), ({},)),
    "train": Family(0),   # every variant gives its cases (tests/op_references.py)
    "create": Family(0),  # nothing to compare with: tests/test_creation.py
}
# matmul's layouts: transposed and sliced operands, the scheduler's panels of them
MATMUL_LAYOUTS = cases(
    (tr(4, 3), a(4, 5)), (a(3, 4), tr(5, 4)), (tr(4, 3), tr(5, 4)), (a(2, 3, 4), tr(5, 4)),
    (a(300, 90), tr(40, 90)), (tr(120, 260), a(120, 70)),
    (In((130, 200), lambda x: x[:, 3:163], "130x200[:,3:163]"), a(160, 96)),
    (a(3, 90, 70), In((3, 110, 70), lambda x: x.transpose(0, 2, 1), "3x110x70.t021")))
# the families whose first variant is generated over PROMOTION's rules (PyTorch's result_type)
PROMOTING = ("binary", "unary", "select", "composite")


def _dt(dt, n):
    return dt if isinstance(dt, tuple) else (dt,) * max(n, 1)


def _variants(entry):
    """[(variant label, Ref)] of one REFS entry (a Ref, or {label: Ref})."""
    if isinstance(entry, Elsewhere):
        return []
    if isinstance(entry, Ref):
        return [("", entry)]
    return list(entry.items())


def _case(name, label, ref, call, dts, inputs, promote, scalar=None, kwargs=None, inplace=False):
    if kwargs:
        ref = replace(ref, kwargs={**ref.kwargs, **kwargs})
    return Case(name, label, ref, call, dts, tuple(inputs), promote, scalar, inplace)


def _fresh(x):
    """A copy of x laid out as a view (every other element of a buffer, or a transpose):
    the in-place spellings meet a non-contiguous self, and the inputs stay untouched."""
    if x.ndim == 0:
        return x.clone()
    if x.ndim == 1:
        buf = pygpu.zeros(2 * x.shape[0], dtype=x.dtype, device=x.device)
        view = buf[::2]
        view.copy_(x)
        return view
    return x.transpose().clone().transpose()


def inplace_call(method):
    def fn(x, *rest, **kw):
        y = _fresh(x)
        out = getattr(y, method)(*rest, **kw)
        assert out is y, f"{method} returned a new tensor, not self"
        return y
    return fn


def _scalars(dtypes, dt):
    """(right, left) Python scalar operands for an op taking `dtypes`, on a `dt` tensor:
    a float and an int where the op takes floats (int64 + 2.5 promotes as PyTorch's does),
    else ints, or bools on a bool tensor (the bitwise and logical ops)."""
    flat = {d for x in dtypes for d in _dt(x, 1)}
    if flat & {"float32", "float64", "float16", "bfloat16"}:
        return 2.5, 2
    return (True, True) if dt == "bool" else (3, 2)


def _rows(refs, extra):
    """(name, family, Python names, entry) for every table row, then the checks of what is
    not (yet) a row (op_references.OFF_TABLE: {name: (family, entry)})."""
    rows = [(n, fam, py, refs.get(n, {})) for n, (fam, py) in table_rows().items()]
    return rows + [(n, fam, (), entry) for n, (fam, entry) in extra.items()]


def reflected_names(py):
    """The reflected operators among a row's Python names: __rsub__ (beside __sub__), not
    __rshift__ (no __shift__)."""
    names = {q[len("Tensor."):] for q in py if q.startswith("Tensor.")}
    return [q[len("Tensor."):] for q in py if q.startswith("Tensor.__r")
            and "__" + q[len("Tensor.__r"):] in names]


def semantics_cases(refs, extra=None):
    """Every op x its dtypes x the family's forms, on cpu; for the binary and unary rows also
    Python-scalar operands, mixed dtypes and the in-place spelling (into a strided self)."""
    out = []
    for name, family, py, entry in _rows(refs, extra or {}):
        fam = FAMILIES.get(family)
        for vlabel, ref in _variants(entry):
            call = ref.call or default_call(name, family, py)
            promote = family in PROMOTING
            n = len(ref.cases[0]) if ref.cases else fam.arity
            forms = (tuple(("", {}, c) for c in ref.cases) if ref.cases else fam.semantics)
            for dt in ref.dtypes:
                for flabel, kw, inputs in forms:
                    if "axis01" == flabel and name == "argmax":
                        continue  # argmax takes one axis (test_errors checks the refusal)
                    out.append(_case(name, "+".join(x for x in (vlabel, flabel) if x), ref, call,
                                     _dt(dt, n), inputs, promote, kwargs=kw))
            if vlabel or ref.cases or family not in ("binary", "unary"):
                continue
            flat = [d for dt in ref.dtypes for d in _dt(dt, 1)]
            # a Python scalar on the right, and on the left through the reflected operator
            # (2 - x is x.__rsub__(2)) where the row has one (torch.sub(2, x) refuses an int)
            reflected = reflected_names(py)
            for dt in ref.dtypes:
                if family == "binary":
                    right, left = _scalars(ref.dtypes, dt)
                    out.append(_case(name, "scalar", ref, call, _dt(dt, 1), (a(TAIL),), promote,
                                     ("right", right)))
                    for m in reflected[:1]:
                        out.append(_case(name, m, ref, lambda s, x, _m=m: getattr(x, _m)(s), _dt(dt, 1),
                                         (a(TAIL),), promote, ("left", left)))
            if family == "binary":
                for k, pair in enumerate(p for p in MIXED_PAIRS if set(p) <= set(flat)):
                    shapes = (a(3, 1), a(4)) if k % 2 == 0 else (a(), a(5))
                    out.append(_case(name, "mixed", ref, call, pair, shapes, promote))
            inplace = [q[len("Tensor."):] for q in py if q.startswith("Tensor.") and q.endswith("_")
                       and not q.endswith("__")]
            for m in inplace[:1]:
                shapes = (a(3, 4), a(4)) if family == "binary" else (a(7),)
                for dt in ref.dtypes:
                    out.append(_case(name, m, ref, inplace_call(m), _dt(dt, len(shapes)), shapes,
                                     promote, inplace=True))
                if family == "binary":  # self keeps its dtype: the other operand is cast
                    for pair in (("float32", "float64"), ("float32", "int64"), ("float64", "float16"),
                                 ("int64", "bool"), ("float16", "float32")):
                        if set(pair) <= set(flat):
                            out.append(_case(name, m + "+cast", ref, inplace_call(m), pair,
                                             (a(3, 4), a(3, 4)), promote, inplace=True))
    return out


def device_cases(refs, extra=None):
    """Every op x its dtypes x one shape (the family's device form; a variant with its own
    cases, its first)."""
    out = []
    for name, family, py, entry in _rows(refs, extra or {}):
        fam = FAMILIES.get(family)
        for vlabel, ref in _variants(entry):
            call = ref.call or default_call(name, family, py)
            n = len(ref.cases[0]) if ref.cases else fam.arity
            forms = (("", {}, ref.cases[-1]),) if ref.cases else fam.device
            for dt in ref.dtypes:
                for flabel, kw, inputs in forms:
                    out.append(_case(name, "+".join(x for x in (vlabel, flabel) if x), ref, call,
                                     _dt(dt, n), inputs, family in PROMOTING, kwargs=kw))
    return out


def layout_cases(refs):
    """Every layout x one op per family (its first row in table order with a generated
    variant) x that op's dtypes; matmul's own layouts."""
    out, done = [], set()
    for name, (family, py) in table_rows().items():
        fam = FAMILIES.get(family)
        vs = _variants(refs.get(name, {}))
        if family in done or not fam or not fam.layouts and family != "matmul" or not vs:
            continue
        vlabel, ref = vs[0]
        if ref.cases and family != "matmul":
            continue
        done.add(family)
        call = ref.call or default_call(name, family, py)
        promote = family in PROMOTING
        for dt in ref.dtypes:
            if family == "matmul":
                for inputs in MATMUL_LAYOUTS:
                    out.append(_case(name, "layout", ref, call, _dt(dt, 2), inputs, promote))
                continue
            for lname, (spec, shape) in LAYOUTS.items():
                for kw in fam.layouts:
                    for k in range(fam.arity):  # the layout as each operand in turn
                        inputs = [a(*shape)] * fam.arity
                        inputs[k] = spec
                        label = (f"{lname}{k if fam.arity > 1 else ''}"
                                 + "".join(f"-{key}{v}" for key, v in kw.items()))
                        out.append(_case(name, label, ref, call, _dt(dt, fam.arity), inputs, promote,
                                         kwargs=kw))
    return out


# reflected operators: x.__rsub__(s) is s - x, called with the Python scalar on the left
_REFLECTED = {"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rpow__", "__rand__",
              "__ror__", "__rxor__", "__rmatmul__"}
# the families whose Python names are called the same way for every row (the rest name
# Python classes and modules: their Refs spell each variant)
SPELLED = {"binary": (a(3, 4), a(4)), "unary": (a(3, 4),), "reduce": (a(3, 4),),
           "matmul": (a(3, 4), a(4, 5))}


def spelling_cases(refs):
    """Every Python name of every binary, unary, reduce and matmul row, each called once: a
    module function, a method, an operator, a reflected operator (a Python scalar on the
    left), an in-place method (into a strided self)."""
    out = []
    for name, (family, py) in table_rows().items():
        vs = _variants(refs.get(name, {}))
        if family not in SPELLED or not vs:
            continue
        ref = vs[0][1]
        flat = [d for dt in ref.dtypes for d in _dt(dt, 1)]
        dt = next(d for d in ("float32", "int64", "bool") + HALF if d in flat)
        inputs = SPELLED[family]
        kw = {"axis": 0} if family == "reduce" else None
        if family == "reduce":  # a method and a function differ (C binding, torch's signature):
            for q in py:        # each over every form
                f = resolve(q) if q.startswith("pygpu.") else (
                    lambda *t, _m=q[len("Tensor."):], **k: getattr(t[0], _m)(*t[1:], **k))
                for flabel, fkw, fin in FAMILIES["reduce"].semantics:
                    if not (flabel == "axis01" and name == "argmax"):
                        out.append(_case(name, f"{q}+{flabel}", ref, f, (dt,), fin, False, kwargs=fkw))
            continue
        for q in py:
            owner, _, attr = q.partition(".")
            if owner == "pygpu":
                call, scalar, inplace = resolve(q), None, False
            elif owner == "_C":  # a row only the bindings reach (gelu: F.gelu picks it)
                call, scalar, inplace = getattr(pygpu._C, attr), None, False
            elif owner == "Tensor" and (attr in _REFLECTED or family == "binary" and attr in reflected_names(py)):
                call, inplace = (lambda s, x, _m=attr: getattr(x, _m)(s)), False
                scalar = ("left", _scalars(ref.dtypes, dt)[1])
                out.append(_case(name, q, ref, call, (dt,), inputs[:1], family in PROMOTING,
                                 scalar, kwargs=kw))
                continue
            elif owner == "Tensor" and attr.endswith("_") and not attr.endswith("__"):
                call, scalar, inplace = inplace_call(attr), None, True
            elif owner == "Tensor":
                call, scalar, inplace = (lambda *t, _m=attr, **k: getattr(t[0], _m)(*t[1:], **k)), None, False
            else:
                raise LookupError(f"{name}: no way to call {q!r} here (spelling_cases)")
            out.append(_case(name, q, ref, call, (dt,) * len(inputs), inputs, family in PROMOTING,
                             scalar, kwargs=kw, inplace=inplace))
    return out
