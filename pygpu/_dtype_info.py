"""torch.finfo and torch.iinfo: a dtype's limits, from the dtype table (csrc/core/pg_dtype.h's
size and kind columns; NumPy's finfo for the floats it has, bfloat16's by its definition).
Beside pygpu/_dtype.py, below the tensor layers: tensor creation checks a Python number
against iinfo before it makes an integer tensor."""
import math

import numpy as np

from . import _defaults, _dtype


_C10_EPS = {"float8_e5m2fnuz": 0.125}


def _ml_finfo(np_dtype):
    import ml_dtypes
    return ml_dtypes.finfo(np_dtype)


class finfo:
    """torch.finfo(dtype): the float type's limits (bits, eps, max, min, tiny, resolution)."""

    def __init__(self, type=None):
        d = _dtype.to_dtype(type) if type is not None else _defaults.dtype()
        d = d.to_real()  # a complex dtype's limits are its parts' (torch.finfo(complex64))
        if not d.is_floating_point:
            raise TypeError(f"torch.finfo() requires a floating point input type, got {d}")
        if d._kind == "fp4":  # c10 has no numeric_limits for float4_e2m1fn_x2: bits only
            self.bits, self._fp4 = 8, True
            return
        if d.name == "bfloat16":
            self.bits, self.eps, self.max, self.tiny = 16, 2.0 ** -7, 3.3895313892515355e38, \
                1.1754943508222875e-38
        elif d._numpy is None:  # float8: ml_dtypes' finfo, which agrees with c10's limits
            f = _ml_finfo(_dtype.numpy_extra(d.name))
            self.bits, self.eps, self.max, self.tiny = f.bits, float(f.eps), float(f.max), \
                float(f.smallest_normal)
            # c10's numeric_limits<Float8_e5m2fnuz>::epsilon() is 2**-3 (ml_dtypes': 2**-2)
            self.eps = _C10_EPS.get(d.name, self.eps)
        else:
            f = np.finfo(d._numpy)
            self.bits, self.eps, self.max, self.tiny = f.bits, float(f.eps), float(f.max), float(f.tiny)
        # 10 ** -(the decimal digits eps resolves), a Python float as torch's (NumPy's is the
        # dtype's own rounding of it)
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))
        # float8_e8m0fnu has no sign: its lowest value is its smallest, 2**-127 (torch's min)
        self.min = -self.max if d.is_signed else self.tiny
        self.smallest_normal, self.dtype = self.tiny, d.name

    # float4_e2m1fn_x2's limits: torch's finfo refuses each, in c10's words
    _FP4_REFUSED = {"eps": "epsilon", "max": "max", "min": "lowest", "tiny": "min",
                    "smallest_normal": "min", "resolution": "digits10", "dtype": "dtype"}

    def __getattr__(self, name):  # (only for what __init__ did not set: float4's limits)
        if name in finfo._FP4_REFUSED and self.__dict__.get("_fp4"):
            raise NotImplementedError(f'"{finfo._FP4_REFUSED[name]}" not implemented for '
                                      f"'Float4_e2m1fn_x2'")
        raise AttributeError(name)

    def __repr__(self):
        if self.__dict__.get("_fp4"):
            raise TypeError("bad argument type for built-in operation")
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")  # torch's format


class iinfo:
    """torch.iinfo(dtype): an integer dtype's bits, min and max (from the dtype table's size
    and kind: csrc/core/pg_dtype.h)."""

    def __init__(self, type):
        d = _dtype.to_dtype(type)
        if d.is_floating_point or d.is_complex:
            raise TypeError(f"torch.iinfo() requires an integer input type, got {d}")
        if d is _dtype.bool_:
            raise TypeError(f"{d} is not supported by torch.iinfo")
        if d._is_shell:  # c10 gives no limits for the sub-byte and bits dtypes
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        self.bits = 8 * d.itemsize
        self.min = -(1 << (self.bits - 1)) if d.is_signed else 0
        self.max = (1 << (self.bits - 1)) - 1 if d.is_signed else (1 << self.bits) - 1
        self.dtype = d.name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"  # torch's format
