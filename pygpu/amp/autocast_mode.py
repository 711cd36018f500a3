"""autocast: the mixed-precision policy and its one dispatch point.

As PyTorch's torch/amp/autocast_mode.py: inside `with pygpu.autocast("cpu")`
(or "sim", "cuda"), ops on tensors of that device type follow one table:

    low      matmul, linear, conv1d/2d,      float32 operands cast to the region's
             conv_transpose1d/2d
                                             dtype (bfloat16 by default, or float16)
    float32  softmax, log_softmax,           float16/bfloat16 operands cast to
             cross_entropy, mse_loss,        float32 (accuracy: exponentials, logs
             sum, mean                       and long sums)
Everything else runs in whatever dtype its inputs have. Casts are recorded by
autograd, so gradients flow back to the float32 parameters in float32.

cast_inputs(op, *tensors) applies the table; it is the only place the policy
lives. The Python ops (nn.functional.linear, softmax, the losses) call it
directly; the C matmul, sum and mean call it through the "autocast" hook only
while some region is active (a counter in _C), so outside autocast they pay
nothing.

Weight cast cache: a float32 leaf that requires grad (a parameter) is cast
once per region, not once per use; the cache is dropped when the outermost
region of the thread exits, so a training step inside one region casts each
weight once, after the optimizer's update of the previous step.

linear (linear_operands): the input is cast as above and the bias is cast
once per region (detached, cached), but the float32 weight itself goes to the
fused layer, whose GEMM rounds each weight value to the low dtype as it packs
it (csrc/core/pg_gemm.h, b_f32): the product is exactly that of the cast
weight, with no cast pass and no half copy of any weight per step. Its
backward writes dW and db in float32 straight from the float32 accumulators:
no half weight gradient, no cast node, no widening pass, and dW is never
rounded to the low dtype (PyTorch's cast backward rounds it).

Regions nest and can disable (`autocast(..., enabled=False)` inside another
runs everything in the inputs' dtypes), per thread, as in PyTorch. autocast
is also a decorator."""
import functools
import threading

from .. import _C
from .._dtype import bfloat16, float16, float32, to_dtype

Tensor = _C.Tensor

# the policy of each op: the op table's amp column (csrc/core/pg_ops.def), low or fp32
_LOW = frozenset(row[0] for row in _C._op_table() if row[6] == "low")
_FP32 = frozenset(row[0] for row in _C._op_table() if row[6] == "fp32")
_DEVICE_TYPES = ("cpu", "sim", "cuda")
_HALF = (float16, bfloat16)

_tls = threading.local()


def _state():
    """This thread's autocast state: the regions entered (innermost last), the weight cast
    cache, and PyTorch's lower-level switches (torch.set_autocast_enabled and friends,
    pygpu/amp/_switches.py): `base` the device types switched on outside any region, `dtypes`
    each device type's dtype outside a region, `cache_on`, and the nesting count."""
    st = getattr(_tls, "state", None)
    if st is None:
        st = _tls.state = {"stack": [], "cache": {}, "base": set(), "dtypes": {},
                           "cache_on": True, "nesting": 0}
    return st


def _any():
    """Whether anything is autocast on this thread (a region, or a switch set on)."""
    st = _state()
    return bool(st["stack"] or st["base"])


def _active(device_type):
    """The region dtype for tensors of device_type, or None (no region, or disabled)."""
    st = _state()
    for dt, enabled, dtype, _cache in reversed(st["stack"]):
        if dt == device_type:
            return dtype if enabled else None
    if device_type in st["base"]:
        return st["dtypes"].get(device_type, bfloat16)
    return None


def region_dtype(device_type):
    """The low dtype the active region gives tensors of device_type, or None."""
    return _active(device_type) if _any() else None


def is_autocast_enabled(device_type="cpu"):
    """Whether ops on `device_type` tensors are autocast here (this thread)."""
    return _active(device_type) is not None


def get_autocast_dtype(device_type="cpu"):
    """The low dtype of the innermost enabled region for device_type, else the device
    type's dtype outside regions (bfloat16 unless torch.set_autocast_dtype changed it)."""
    return _active(device_type) or _state()["dtypes"].get(device_type, bfloat16)


def _cache_on():
    st = _state()
    return st["stack"][-1][3] if st["stack"] else st["cache_on"]


def _cached_cast(t, dtype):
    if not (t.is_leaf and t.requires_grad) or not _cache_on():
        return t.astype(dtype)
    cache = _state()["cache"]
    key = (id(t), dtype.name)
    hit = cache.get(key)
    if hit is not None and hit[0] is t:  # the tensor itself is held: its id is not reused
        return hit[1]
    out = t.astype(dtype)
    cache[key] = (t, out)
    return out


def _low_param(t, dtype):
    """t as `dtype`, detached; a parameter's cast is cached for the region."""
    if not (t.is_leaf and t.requires_grad) or not _cache_on():
        return t.detach().astype(dtype)
    cache = _state()["cache"]
    key = (id(t), dtype.name, "detached")
    hit = cache.get(key)
    if hit is not None and hit[0] is t:
        return hit[1]
    out = t.detach().astype(dtype)
    cache[key] = (t, out)
    return out


def linear_operands(x, weight, bias):
    """(x, b_low) for nn.functional.linear under an active region: x cast as
    cast_inputs("linear") does, and the float32 bias as a detached low copy (cached per
    region); the float32 weight is used as it is (the layer rounds it). None when no
    region applies to the weight (run linear as it is) or the weight is not float32."""
    if not _any() or not isinstance(weight, Tensor) or weight.dtype is not float32:
        return None
    dtype = _active(weight.device.type)
    if dtype is None:
        return None
    (x,) = cast_inputs("linear", x)
    if not isinstance(x, Tensor) or x.dtype is not dtype:  # let the plain path handle it
        return None
    if bias is not None and (not isinstance(bias, Tensor) or bias.dtype is not float32):
        return None
    return x, None if bias is None else _low_param(bias, dtype)


def cast_inputs(op, *tensors):
    """`tensors` as op `op` must see them under the active regions (unchanged when none
    applies); non-tensors (None, numbers) pass through. Returns a tuple."""
    if not _any():
        return tensors
    low = op in _LOW
    if not low and op not in _FP32:
        return tensors
    out = []
    for t in tensors:
        if isinstance(t, Tensor):
            dtype = _active(t.device.type)
            if dtype is not None:
                if low and t.dtype is float32:
                    t = _cached_cast(t, dtype)
                elif not low and t.dtype in _HALF:
                    t = t.astype(float32)
        out.append(t)
    return tuple(out)


def _hook(op, a, b):
    """Called by the C matmul (a, b) and sum/mean (a, None) while a region is active."""
    return cast_inputs(op, a, b)


class autocast:
    """autocast(device_type, dtype=pygpu.bfloat16, enabled=True): a context manager (and
    decorator) in which matmul/linear on `device_type` tensors run in `dtype` and
    softmax, log_softmax, the losses, sum and mean in float32. device_type: "cpu", "sim"
    or "cuda"; dtype: pygpu.bfloat16 or pygpu.float16."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=True):
        if not isinstance(device_type, str) or device_type.split(":")[0] not in _DEVICE_TYPES:
            raise ValueError(f"autocast: device_type must be one of {', '.join(_DEVICE_TYPES)}, "
                             f"got {device_type!r}")
        dev = device_type.split(":")[0] if isinstance(device_type, str) else device_type
        dtype = _state()["dtypes"].get(dev, bfloat16) if dtype is None else to_dtype(dtype)
        if dtype not in _HALF:
            raise ValueError(f"autocast: dtype must be pygpu.bfloat16 or pygpu.float16, got "
                             f"{dtype}; use enabled=False to run in float32")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: enabled must be a bool, got {type(enabled).__name__}")
        self.device_type = device_type.split(":")[0]
        self.fast_dtype = dtype
        self._enabled = enabled
        self._cache_enabled = cache_enabled

    def __enter__(self):
        st = _state()
        st["stack"].append((self.device_type, self._enabled, self.fast_dtype,
                            bool(self._cache_enabled)))
        st["nesting"] += 1
        _C._autocast_regions(1)
        return self

    def __exit__(self, *exc):
        st = _state()
        st["stack"].pop()
        st["nesting"] -= 1
        _C._autocast_regions(-1)
        if st["nesting"] == 0:  # PyTorch's rule: the outermost region's exit drops the casts
            st["cache"].clear()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)
        return wrapper

    def __repr__(self):
        return (f"autocast(device_type={self.device_type!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled})")
