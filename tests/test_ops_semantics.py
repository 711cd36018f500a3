# test_ops_semantics.py - every op of the table, on cpu, against NumPy: the semantics sum.
#
# Generated from _C._op_table() (tests/_op_cases.py) with the references in
# tests/op_references.py: every op x its dtypes x {0-d, an odd vector length, a broadcast}
# (the reduce forms: whole, each axis, keepdims, an empty axis), Python scalars on either
# side, mixed dtypes, in-place into a strided self, and every Python name of each binary,
# unary, reduce and matmul row. Layouts (tests/test_ops_layouts.py) and the other devices
# (tests/test_ops_devices.py) are their own sums. .ci/run's ISA lanes run this file only:
# a kernel's vector variants differ in lanes and tails, not in layouts or devices.
# A new table row without an entry in op_references.REFS fails test_every_table_row_has_a_reference.
import os
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import pygpu

import _op_cases as oc
from _helpers import to_device
from op_references import OFF_TABLE, REFS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("case", [oc.param(c) for c in oc.semantics_cases(REFS, OFF_TABLE)])
def test_op_matches_numpy(case):
    oc.check(case, "cpu")


@pytest.mark.parametrize("case", [oc.param(c) for c in oc.spelling_cases(REFS)])
def test_every_python_name_of_a_row_computes_the_op(case):
    oc.check(case, "cpu")


def test_every_table_row_has_a_reference():
    rows = oc.table_rows()
    missing = sorted(n for n in rows if n not in REFS)
    assert not missing, (f"op-table rows without an entry in tests/op_references.py: {missing} "
                         "(add {name: Ref(numpy_reference, domain, tol, dtypes)}; that file says how)")
    stale = sorted(n for n in REFS if n not in rows)
    assert not stale, f"tests/op_references.py entries for no row of the table: {stale}"
    families = sorted({fam for fam, _ in rows.values()} - set(oc.FAMILIES))
    assert not families, f"families with no case forms in tests/_op_cases.py FAMILIES: {families}"
    for name, entry in REFS.items():
        if isinstance(entry, oc.Elsewhere):
            assert os.path.exists(os.path.join(ROOT, entry.path)), f"{name}: no {entry.path}"
        else:
            fam = oc.FAMILIES[rows[name][0]]
            variants = oc._variants(entry)
            assert variants, f"{name}: an entry with no variant"
            for label, ref in variants:
                assert ref.cases or fam.arity, f"{name}.{label}: family {rows[name][0]} needs cases"


def test_the_sums_generate_every_op():
    """Each sum reaches every row it should: semantics and devices every checked row,
    layouts one row of each family that has generated cases."""
    checked = {n for n, e in REFS.items() if not isinstance(e, oc.Elsewhere)}
    assert {c.op for c in oc.semantics_cases(REFS)} == checked
    assert {c.op for c in oc.device_cases(REFS)} == checked
    families = {oc.table_rows()[c.op][0] for c in oc.layout_cases(REFS)}
    assert families == {"binary", "unary", "reduce", "matmul", "view", "copy", "select", "composite"}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_predicates_sign_and_rounding_on_special_values(dtype, device="cpu"):
    """NaN, infinities, signed zeros and halves, which random data never draws: isnan and
    isfinite as NumPy, sign(NaN) = 0 as PyTorch, round halves to even."""
    check_special_values(dtype, device)


def check_special_values(dtype, device):
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


@settings(max_examples=60, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=4),
       seed=st.integers(0, 2**32 - 1))
def test_broadcasting_random_shapes_matches_numpy(shapes, seed):
    check_random_broadcast(shapes, seed, "cpu")


def check_random_broadcast(shapes, seed, device):
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(s).astype(np.float32) for s in shapes.input_shapes)
    tx, ty = to_device(x, device), to_device(y, device)
    for got, ref in [(tx + ty, x + y), (tx * ty, x * y), (tx < ty, x < y),
                     (pygpu.maximum(tx, ty), np.maximum(x, y))]:
        assert got.shape == shapes.result_shape
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)


# NaN and ties where the vector kernels keep per-lane state: a NaN in the first element, in
# a tail, in the middle of a vector, in two lanes; and many equal maxima, so argmax must still
# return the first. Random data never has these. Each (op, dtype) runs every spot and shape.
NAN_SPOTS = {"none": [], "first": [0], "last": [-1], "middle": [517], "two": [700, 45]}
NAN_SHAPES = ((1000,), (100003,), (37, 389))
NAN_OPS = {
    "max_all": lambda m, x: m.max(x), "min_axis0": lambda m, x: m.min(x, axis=0),
    "max_axis-1": lambda m, x: m.max(x, axis=-1), "argmax_all": lambda m, x: m.argmax(x),
    "argmax_axis0": lambda m, x: m.argmax(x, axis=0), "argmax_axis-1": lambda m, x: m.argmax(x, axis=-1),
    "sum_all": lambda m, x: m.sum(x), "relu": lambda m, x: np.maximum(x, 0) if m is np else m.relu(x),
    "maximum": lambda m, x: m.maximum(x, x[..., ::-1].copy() if m is np else x[..., ::-1].contiguous()),
    # NaN in either operand of minimum, and against a scalar, propagates as NumPy's does
    "minimum": lambda m, x: m.minimum(x, x[..., ::-1].copy() if m is np else x[..., ::-1].contiguous()),
    "maximum_scalar": lambda m, x: m.maximum(x, x.dtype.type(0) if m is np else 0.0),
    "minimum_scalar": lambda m, x: m.minimum(x, x.dtype.type(0) if m is np else 0.0),
}


def check_nan_and_ties(op, dtype, device):
    # the half dtypes: blocks widened on the stack, a NaN or a tie across a block's edge
    for shape in NAN_SHAPES:
        for spot, where in NAN_SPOTS.items():
            rng = np.random.default_rng(zlib.crc32(f"{op}{dtype}{spot}{shape}".encode()))
            x = rng.integers(-3, 4, size=shape).astype(dtype)  # few values: ties everywhere
            flat = x.reshape(-1)
            for k in where:
                flat[k] = np.nan
            if dtype == "bfloat16":  # ml_dtypes' own sum accumulates in bfloat16: float32, rounded once
                ref = np.asarray(NAN_OPS[op](np, x.astype(np.float32)))
                ref = ref.astype(dtype) if ref.dtype == np.float32 else ref
            else:
                ref = np.asarray(NAN_OPS[op](np, x))
            got = NAN_OPS[op](pygpu, to_device(x, device)).numpy()
            what = f"{op} {dtype} {shape} NaN at {spot}"
            assert got.dtype == ref.dtype and got.shape == ref.shape, what
            if dtype == "bfloat16":
                got, ref = got.astype(np.float32), ref.astype(np.float32)
            np.testing.assert_array_equal(got, ref, err_msg=what)  # NaN == NaN; exact, ties too


@pytest.mark.parametrize("dtype", oc.FLOATS16)
@pytest.mark.parametrize("op", list(NAN_OPS))
def test_nan_and_ties_at_vector_sizes(op, dtype):
    check_nan_and_ties(op, dtype, "cpu")
