# test_ops_dtypes.py - the integer dtypes beside int64 (int32, int16, int8, uint8) over the op
# table, against torch: tests/_dtype_cases.py generates the cases from the table's rows and
# tests/op_references.py (an op taking int64 takes them all), a few per op per dtype.
import pytest

import _dtype_cases as dc
from op_references import REFS

CPU_CASES, DEVICE_CASES = dc.int_cases(REFS)


@pytest.mark.parametrize("case", [dc.param(c) for c in CPU_CASES])
def test_int_dtype_op_matches_torch(case):
    dc.check(case, "cpu")


@pytest.mark.parametrize("case", [dc.param(c) for c in DEVICE_CASES])
def test_int_dtype_op_on_device_matches_torch(case, other_device):
    dc.check(case, other_device)
