"""PyTorch's lower-level autocast switches at torch's level: is_autocast_enabled /
set_autocast_enabled and get_autocast_dtype / set_autocast_dtype per device type, the
weight-cast cache's switch and clear_autocast_cache, the nesting count the autocast
context keeps, and the deprecated per-device spellings (get_autocast_cpu_dtype,
set_autocast_gpu_dtype, is_autocast_cpu_enabled, ...) with PyTorch's DeprecationWarning.

They read and write the same per-thread state as pygpu.autocast regions
(autocast_mode.py): set_autocast_enabled("cpu", True) makes ops on cpu tensors autocast
outside any region, with the dtype set_autocast_dtype gave (bfloat16 by default, pygpu's
default on every device); a region's own setting wins while it is open."""
import warnings

from .. import _C
from .._dtype import to_dtype
from . import autocast_mode as _mode

_TYPES = ("cpu", "sim", "cuda")


def _device_type(device_type, fn):
    if device_type is None:
        return "cuda"  # PyTorch's default device type for these
    if not isinstance(device_type, str) or device_type.split(":")[0] not in _TYPES:
        raise RuntimeError(f"{fn}: expected one of {', '.join(_TYPES)} device type, got "
                           f"{device_type!r}")
    return device_type.split(":")[0]


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_enabled(device_type=None):
    """Whether ops on tensors of device_type (cuda when None) are autocast on this thread."""
    if device_type in _OTHER_DEFAULTS:
        return _other(device_type)[0]
    return _mode.is_autocast_enabled(_device_type(device_type, "is_autocast_enabled"))


def set_autocast_enabled(*args):
    """set_autocast_enabled(device_type, enabled), or (enabled) for cuda: autocast that
    device type outside any region (the switch an autocast context sets on entry)."""
    if len(args) == 1:
        device_type, enabled = "cuda", args[0]
    elif len(args) == 2 and args[0] in _OTHER_DEFAULTS:
        _other(args[0])[0] = bool(args[1])
        return
    elif len(args) == 2:
        device_type, enabled = _device_type(args[0], "set_autocast_enabled"), args[1]
    else:
        raise TypeError(f"set_autocast_enabled() takes 1 or 2 arguments ({len(args)} given)")
    base = _mode._state()["base"]
    if bool(enabled) and device_type not in base:
        base.add(device_type)
        _C._autocast_regions(1)  # the C ops call the policy while anything is on
    elif not enabled and device_type in base:
        base.discard(device_type)
        _C._autocast_regions(-1)


def get_autocast_dtype(device_type):
    """The dtype autocast uses for device_type now (the open region's, else the one
    set_autocast_dtype gave: bfloat16 by default)."""
    if device_type in _OTHER_DEFAULTS:
        return _other(device_type)[1]
    return _mode.get_autocast_dtype(_device_type(device_type, "get_autocast_dtype"))


def set_autocast_dtype(device_type, dtype):
    """The dtype autocast uses for device_type outside regions, and the default of a new
    autocast(device_type) region: float16 or bfloat16."""
    dt = to_dtype(dtype)
    if device_type in _OTHER_DEFAULTS:
        _other(device_type)[1] = dt
        return
    if dt.name not in ("float16", "bfloat16"):
        raise RuntimeError(f"set_autocast_dtype: autocast supports float16 and bfloat16, got "
                           f"{dt}")
    _mode._state()["dtypes"][_device_type(device_type, "set_autocast_dtype")] = dt


def is_autocast_cache_enabled():
    return _mode._state()["cache_on"]


def set_autocast_cache_enabled(enabled):
    """Whether autocast keeps a parameter's low-precision cast for reuse (outside regions;
    a region's cache_enabled wins inside it)."""
    _mode._state()["cache_on"] = bool(enabled)


def clear_autocast_cache():
    """Drop the cached low-precision casts of parameters."""
    _mode._state()["cache"].clear()


def autocast_increment_nesting():
    """One more open autocast level; returns the count."""
    st = _mode._state()
    st["nesting"] += 1
    return st["nesting"]


def autocast_decrement_nesting():
    """One open autocast level fewer; returns the count (0: the caller clears the cache)."""
    st = _mode._state()
    st["nesting"] -= 1
    return st["nesting"]


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype):
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


# ---- the switches of backends pygpu does not have (ipu, xla) --------------------------------
# torch's CPU build keeps them as per-thread state that no tensor reads (it has no IPU or XLA
# tensors); so does pygpu: each device type's switch and dtype, torch's defaults (ipu
# float16, xla bfloat16), nothing autocast by them.
_OTHER_DEFAULTS = {"ipu": "float16", "xla": "bfloat16"}


def _other(device_type):
    st = _mode._state()
    other = st.get("other_types")
    if other is None:
        other = st["other_types"] = {t: [False, to_dtype(d)] for t, d in _OTHER_DEFAULTS.items()}
    return other[device_type]


def _other_switches(device_type):
    def is_enabled():
        _deprecated(f"is_autocast_{device_type}_enabled()",
                    f"is_autocast_enabled('{device_type}')")
        return _other(device_type)[0]

    def set_enabled(enabled):
        _deprecated(f"set_autocast_{device_type}_enabled(enabled)",
                    f"set_autocast_enabled('{device_type}', enabled)")
        _other(device_type)[0] = bool(enabled)

    def get_dtype():
        _deprecated(f"get_autocast_{device_type}_dtype()",
                    f"get_autocast_dtype('{device_type}')")
        return _other(device_type)[1]

    def set_dtype(dtype):
        _deprecated(f"set_autocast_{device_type}_dtype(dtype)",
                    f"set_autocast_dtype('{device_type}', dtype)")
        _other(device_type)[1] = to_dtype(dtype)

    fns = {f"is_autocast_{device_type}_enabled": is_enabled,
           f"set_autocast_{device_type}_enabled": set_enabled,
           f"get_autocast_{device_type}_dtype": get_dtype,
           f"set_autocast_{device_type}_dtype": set_dtype}
    for name, fn in fns.items():
        fn.__name__ = name
        fn.__doc__ = (f"torch.{name}: the {device_type} autocast switch torch's CPU build keeps "
                      f"(state only: pygpu has no {device_type} tensors); deprecated as in torch")
    return fns


FUNCTIONS = {name: globals()[name] for name in (
    "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
    "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
    "autocast_increment_nesting", "autocast_decrement_nesting", "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype", "set_autocast_cpu_dtype", "set_autocast_gpu_dtype",
    "is_autocast_cpu_enabled", "set_autocast_cpu_enabled")}
FUNCTIONS.update(_other_switches("ipu"))
FUNCTIONS.update(_other_switches("xla"))
