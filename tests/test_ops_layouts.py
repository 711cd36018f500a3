# test_ops_layouts.py - every input layout x one op per family, on every device: the layouts sum.
#
# tests/_op_cases.py LAYOUTS (transposed, stepped, offset, column-stepped, a block, permuted
# axes, a stride-0 broadcast, a big transpose the pools split, empty, one element, 3-D) as
# each operand in turn of the first row of each family in the op table (add, negative, sum
# whole and along axis 0, reshape, a contiguous copy, where, clamp), and matmul's transposed
# and sliced operands, x that op's dtypes. The strided paths are shared by a family's ops
# (one gather loop, one index kernel per family), which is why one op per family is enough;
# tests/test_ops_semantics.py runs every op, on contiguous inputs. On cpu and cuda, not sim:
# sim runs the CPU's kernels (tests/test_ops_devices.py shows its queue runs each op).
import pytest

import _op_cases as oc
from op_references import REFS


@pytest.mark.parametrize("case", [oc.param(c) for c in oc.layout_cases(REFS)])
def test_layout_matches_numpy(case, kernel_device):
    oc.check(case, kernel_device)
