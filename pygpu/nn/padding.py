"""The padding modules: ConstantPad1d/2d/3d, ZeroPad1d/2d/3d, ReflectionPad1d/2d/3d,
ReplicationPad1d/2d/3d and CircularPad1d/2d/3d, each F.pad with its mode over the last 1, 2
or 3 axes (padding: one int for every side, or PyTorch's tuple: (left, right, top, bottom,
front, back)), with PyTorch's reprs."""
from . import functional as F
from .module import Module


def _padding(padding, n):
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n:
        raise ValueError(f"expected padding to be a single integer value or a list/tuple of "
                         f"{2 * n} elements, but got {len(padding)} elements")
    return padding


class _PadNd(Module):
    _mode, _n = "constant", 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding(padding, self._n)

    def forward(self, x):
        return F.pad(x, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, x):
        return F.pad(x, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


def _classes():
    out = {}
    for n in (1, 2, 3):
        out[f"ConstantPad{n}d"] = type(f"ConstantPad{n}d", (_ConstantPadNd,), {"_n": n})
        out[f"ZeroPad{n}d"] = type(f"ZeroPad{n}d", (_ZeroPadNd,), {"_n": n})
        for mode, name in (("reflect", "Reflection"), ("replicate", "Replication"),
                           ("circular", "Circular")):
            cls = f"{name}Pad{n}d"
            out[cls] = type(cls, (_PadNd,), {"_n": n, "_mode": mode})
    for name, cls in out.items():
        cls.__module__ = __name__
        cls.__qualname__ = name
        cls.__doc__ = f"torch.nn.{name}: F.pad over the last {cls._n} axes ({cls._mode})"
    return out


CLASSES = _classes()
globals().update(CLASSES)
__all__ = sorted(CLASSES)
