# test_ops_devices.py - every op on every device besides cpu (sim, cuda): the devices sum.
#
# Every op x its dtypes x one shape (tests/_op_cases.py FAMILIES' device forms: a contiguous
# (37, 389) operand, a long row and a tall matrix for the reductions; a variant with its own
# cases, its last), on each selected device but cpu (`--device cuda` runs them on cuda only;
# with only cpu selected, on cpu). sim runs the CPU kernels through its queue, so one shape
# shows each op is queued, ordered and copied right; on cuda each op has its own kernel.
# Plus, per device: special values, random broadcasting, and NaN and ties in the vector kernels.
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import _op_cases as oc
from op_references import OFF_TABLE, REFS
from test_ops_semantics import NAN_OPS, check_nan_and_ties, check_random_broadcast, check_special_values


@pytest.mark.parametrize("case", [oc.param(c) for c in oc.device_cases(REFS, OFF_TABLE)])
def test_op_on_device_matches_numpy(case, other_device):
    oc.check(case, other_device)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_special_values_on_device(dtype, other_device):
    check_special_values(dtype, other_device)


@settings(max_examples=30, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=4),
       seed=st.integers(0, 2**32 - 1))
def test_broadcasting_random_shapes_on_device(shapes, seed, other_device):
    check_random_broadcast(shapes, seed, other_device)


@pytest.mark.parametrize("dtype", oc.FLOATS16)
@pytest.mark.parametrize("op", list(NAN_OPS))
def test_nan_and_ties_on_device(op, dtype, other_device):
    check_nan_and_ties(op, dtype, other_device)
