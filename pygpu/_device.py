"""Devices as small values: (type, index), parsed from "cpu", "sim:1", "cuda:0".

Like c10::Device. A Device compares equal to its string spelling, so
`t.device == "sim:0"` works. Parsing a cuda device loads the CUDA plugin
on first use (never at import)."""

_TYPES = {"cpu": 0, "sim": 1, "cuda": 2}
_NAMES = {v: k for k, v in _TYPES.items()}


class Device:
    __slots__ = ("type", "index")

    def __init__(self, type, index=0):
        self.type = type
        self.index = index

    def __str__(self):
        return "cpu" if self.type == "cpu" else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device('{self}')"

    def __eq__(self, other):
        if isinstance(other, Device):
            return self.type == other.type and self.index == other.index
        if isinstance(other, str):
            try:
                return self == device(other)
            except ValueError:
                return False
        return NotImplemented

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))

    @property
    def _code(self):
        return _TYPES[self.type], self.index


_cache = {}


def _current_index(type_name):
    from . import _accel
    return _accel.module_for(type_name).current_device()


def device(spec, index=None):
    """pygpu.device("sim:1") / device("cuda") / device("sim", 1) / device(existing)."""
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"a device is a string like 'cpu', 'sim:0' or 'cuda:0', got {spec!r}")
    name, sep, idx = spec.strip().lower().partition(":")
    if name not in _TYPES:
        raise ValueError(f"unknown device {spec!r}: expected 'cpu', 'sim[:N]' or 'cuda[:N]'")
    if sep:
        if not idx.isdigit():
            raise ValueError(f"bad device index in {spec!r}: expected e.g. '{name}:0'")
        if index is not None:
            raise ValueError("device index given twice")
        index = int(idx)
    if name == "cpu":
        if index not in (None, 0):
            raise ValueError(f"there is a single cpu device, got index {index}")
        index = 0
    elif index is None:
        index = _current_index(name)
    key = (name, index)
    d = _cache.get(key)
    if d is None:
        d = _cache[key] = Device(name, index)
    return d


def parse_device(obj):
    """Hook for the C core: any device spelling -> (type code, index); checks it exists."""
    d = device(obj)
    if d.type != "cpu":
        from . import _accel
        _accel.module_for(d.type)._check_index(d.index)
    return d._code


def make_device(type_name, index):
    """Hook for the C core: the Device object for a tensor's device."""
    return device(type_name, index)
