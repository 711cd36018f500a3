"""complex32 (torch.chalf, c10's ComplexHalf): the ops PyTorch's CPU runs on it, as a table.

A complex32 element is two float16s; the C core stores, casts, copies, fills and indexes it
through its real view (float16 pairs), as it does complex64. PyTorch 2.13's CPU computes few
ops on it: + - * (with tensors and numbers), negation, == and !=, abs (to float16), sgn,
isnan/isinf/isfinite and where; the rest raise NotImplementedError in its kernels' names
("div_cpu" not implemented for 'ComplexHalf'). Each op it runs computes in complex64 (c10's
opmath type for complex<Half>) and rounds the result to complex32 once, so these rules widen
the operands, run complex64's rule (pygpu/_tensor/complex.py) and round back; the refusals
are the table below, read off torch (tests/test_complex32.py checks both)."""
from .. import _dtype
from .._C import Tensor

# the binary and unary ops PyTorch runs on complex32 (complex.py's hook names)
RUNS = frozenset({"add", "subtract", "multiply", "equal", "not_equal", "negative", "abs",
                  "isnan", "isinf", "isfinite", "sgn", "where"})
# PyTorch's kernel names in its refusals, by op (the others: "<op>_cpu")
_KERNEL = {"divide": "div_cpu", "pow": "pow", "square": "pow", "exp": "exp_vml_cpu",
           "log": "log_vml_cpu", "sqrt": "sqrt_vml_cpu", "sin": "sin_vml_cpu",
           "cos": "cos_vml_cpu", "tanh": "tanh_vml_cpu", "sum": "sum_cpu", "mean": "sum_cpu",
           "prod": "prod_out_cpu", "matmul": "addmm_impl_cpu_", "angle": "angle_cpu",
           "cumsum": "cumsum_out_cpu", "max": "max_all", "min": "min_all"}


def involved(a, b=None):
    """Whether a complex32 tensor is an operand."""
    return any(isinstance(x, Tensor) and x.dtype is _dtype.complex32 for x in (a, b))


def refuse(name):
    raise NotImplementedError(f'"{_KERNEL.get(name, name + "_cpu")}" not implemented for '
                              f"'ComplexHalf'")


def _wide(x):
    return x.to(_dtype.complex64) if isinstance(x, Tensor) and x.dtype is _dtype.complex32 else x


def run(name, rule, result_dtype, *operands):
    """rule(*operands) as PyTorch runs it on complex32: the operands widened to complex64,
    the result rounded once to result_dtype (complex32's, or float16 for abs)."""
    if name not in RUNS:
        refuse(name)
    r = rule(*(_wide(x) for x in operands))
    if isinstance(r, Tensor) and r.dtype is not result_dtype and r.dtype is not _dtype.bool_:
        r = r.to(result_dtype)
    return r
