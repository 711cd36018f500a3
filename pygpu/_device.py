"""Devices as small values: (type, index), parsed from "cpu", "sim:1", "cuda:0".

Like c10::Device. A Device compares equal to its string spelling, so
`t.device == "sim:0"` works. Parsing a cuda device loads the CUDA plugin
on first use (never at import). A malformed spelling raises ValueError (TypeError
for a non-string) naming what was wrong and the forms that work.

The device types are the C core's (_C._device_types()). The accelerators
(pygpu.sim, pygpu.cuda: pygpu/_accel.py) register here when they are made, so
this module, the bottom layer, never imports them."""
import numbers

from . import _C

_TYPES = {name: code for code, name in enumerate(_C._device_types())}
_NAMES = {v: k for k, v in _TYPES.items()}
_ACCELERATORS = {}  # type name -> its Accelerator (registered by _accel.Accelerator)


def register_accelerator(acc):
    _ACCELERATORS[acc.name] = acc


def accelerator(type_name):
    """The Accelerator object of a device type ("sim", "cuda")."""
    acc = _ACCELERATORS.get(type_name)
    if acc is None:
        raise ValueError(f"{type_name} is not an accelerator type")
    return acc


# the device factories use when given none (torch.set_default_device, `with device(...)`):
# None is cpu. _defaults.py reads and sets it.
_default = [None]
_default_stack = []


class Device:
    __slots__ = ("type", "index")

    def __init__(self, type, index=0):
        self.type = type
        self.index = index

    def __str__(self):
        return self.type if self.type in _SINGLE else f"{self.type}:{self.index}"

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

    def __enter__(self):  # `with torch.device("sim"):` factories inside make tensors there
        _default_stack.append(_default[0])
        _default[0] = None if self.type == "cpu" else self
        return self

    def __exit__(self, *exc):
        _default[0] = _default_stack.pop()


_cache = {}


def _current_index(type_name):
    return accelerator(type_name).current_device()


_SPELLING = "'cpu', 'sim:0' or 'cuda:1' (type[:index]; without an index, the current device)"
# the device types with one device and no index: the host, and 'meta' (shapes without data:
# csrc/backends/meta/meta_backend.c)
_SINGLE = ("cpu", "meta")
_KNOWN = "the known types are " + ", ".join(list(_TYPES)[:-1]) + " and " + list(_TYPES)[-1]


def _parse_index(text, spec, name):
    """The N of 'sim:N': ASCII digits only (int() would also take '+1', ' 1', '١')."""
    if not text:
        raise ValueError(f"device {spec!r} has no index after ':': write e.g. '{name}:0', "
                         f"or '{name}' for the current {name} device")
    if ":" in text:
        raise ValueError(f"device {spec!r} has more than one ':': a device is written "
                         f"type[:index], e.g. '{name}:0'")
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"bad device index {text!r} in {spec!r}: the index is a non-negative "
                         f"integer, e.g. '{name}:0'")
    return int(text)


def _check_index_arg(index):
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise TypeError(f"a device index is an integer, got {index!r} ({type(index).__name__})")
    if index < 0:
        raise ValueError(f"a device index is a non-negative integer, got {index}")
    return int(index)


def _accelerator_type():
    """The device type an integer device means (PyTorch's torch.device(0) is cuda:0): the
    accelerator's (pygpu.accelerator): PYGPU_ACCELERATOR's choice, else cuda when a GPU is
    there, else sim."""
    import os
    choice = os.environ.get("PYGPU_ACCELERATOR", "").strip().lower()
    if choice in _ACCELERATORS:
        return choice
    cuda = _ACCELERATORS.get("cuda")
    if cuda is not None and cuda.is_available():
        return "cuda"
    return "sim" if "sim" in _ACCELERATORS else "cuda"


def device(spec, index=None):
    """pygpu.device("sim:1") / device("cuda") / device("sim", 1) / device(existing) /
    device(0) (an index of the accelerator: cuda:0 on a GPU machine, else sim:0)."""
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, numbers.Integral) and not isinstance(spec, bool):
        if index is not None:
            raise TypeError(f"device({spec!r}, {index!r}): an integer device is the index itself")
        return device(_accelerator_type(), _check_index_arg(spec))
    if not isinstance(spec, str):
        raise TypeError(f"a device is a string like {_SPELLING}, got {spec!r}")
    name, sep, idx = spec.strip().lower().partition(":")
    if name not in _TYPES:
        what = (f"unknown device type {name!r} in {spec!r}" if name
                else f"no device type in {spec!r}")
        raise ValueError(f"{what}: {_KNOWN}, written {_SPELLING}")
    if sep:
        if index is not None:
            raise ValueError(f"device index given twice: in {spec!r} and as index={index!r}")
        index = _parse_index(idx, spec, name)
    elif index is not None:
        index = _check_index_arg(index)
    if name in _SINGLE:
        if index not in (None, 0):
            raise ValueError(f"there is a single {name} device, got index {index}: write "
                             f"'{name}'")
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
    if d.type not in _SINGLE:
        accelerator(d.type)._check_index(d.index)
    return d._code


def make_device(type_name, index):
    """Hook for the C core: the Device object for a tensor's device."""
    return device(type_name, index)
