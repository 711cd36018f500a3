"""What every composite op shares: the one fork between a backend's fused node and the
composition from tensor ops, and the argument checks and half-precision widening.

The fork asks the backend, never the device type: `fused(kind, x)` is the backend's
supports_op for the node kind (a PG_NODE row of csrc/core/pg_ops.def) on x's dtype. A
backend that grows a kernel (cuda's CLAMP, SOFTMAX, LAYER_NORM rows) is taken at once;
one without it (meta, a plugin that declines) gets the composition."""
import numbers

from .. import _C
from .._dtype import ALL as _dtype_ALL
from .._dtype import bfloat16, float16, float32, float64

Tensor = _C.Tensor

FLOATS = ", ".join(d.name for d in _dtype_ALL if d.is_floating_point and not d._is_shell)  # the dtype table's
_NODE_DTYPES = (float32, float64)  # the dtypes the fused row kernels take


def fused(kind, x):
    """Whether x runs as the one node `kind` ("SOFTMAX", "LAYER_NORM", "CLAMP"): x float32 or
    float64 on a backend whose supports_op has the kind. The composite ops' one fork."""
    return x.dtype in _NODE_DTYPES and _C._has_node(kind, x)


def want_tensor(x, fn, what="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: {what} must be a pygpu.Tensor, got {type(x).__name__} "
                        "(convert with pygpu.tensor(x))")


def float_input(x, fn):
    want_tensor(x, fn)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{fn}: expected a float tensor ({FLOATS}), got {x.dtype}")


def axis(dim, ndim, fn):
    if not isinstance(dim, numbers.Integral):
        raise TypeError(f"{fn}: dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < max(ndim, 1):
        raise IndexError(f"{fn}: dim {dim} is out of range for a {ndim}-d tensor")
    return dim % max(ndim, 1)


def widened(fn, x, *args):
    """fn on x, with float16/bfloat16 x computed in float32 and the result rounded back once
    (exponentials and sums want float32's range and precision)."""
    if x.dtype is float16 or x.dtype is bfloat16:
        return fn(x.astype(float32), *args).astype(x.dtype)
    return fn(x, *args)
