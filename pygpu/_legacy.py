"""PyTorch's legacy constructors, which programs written before torch.tensor() still use.

    torch.Tensor(3, 4)          an uninitialised float32 tensor of shape (3, 4)
    torch.Tensor([1., 2.])      a float32 tensor of that data (a list, a NumPy array)
    torch.Tensor(torch.Size([2, 3]))  the shape form, as PyTorch reads a Size
    torch.FloatTensor(...), LongTensor(...), DoubleTensor(...), ...  the same, per dtype

pygpu.Tensor is a C type; its constructor calls legacy_new (registered with _C._setup as
the "legacy_new" hook). The typed names are classes for construction, for isinstance()
(isinstance(t, torch.LongTensor) holds for a cpu int64 tensor, as in PyTorch) and as what
Tensor.type() converts to (x.type(torch.FloatTensor), x.type(torch.cuda.LongTensor), which
moves x to cuda, as PyTorch's); torch.cuda.* and pygpu.sim.* have their own (typed_for).
A type whose dtype pygpu lacks would be refused with a message rather than silently giving
int64 (every legacy type's dtype is a row of pygpu's table now: IntTensor, ByteTensor, ...)."""
import numbers

from . import _C, _dtype, _defaults

Tensor = _C.Tensor


def _make(dtype, args, device):
    from ._tensor.create import empty, tensor
    dev = device if device is not None else "cpu"
    if not args:
        return empty(0, dtype=dtype, device=dev)
    first = args[0]
    if len(args) == 1 and isinstance(first, _C.Size):
        return empty(tuple(first), dtype=dtype, device=dev)
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        return empty(tuple(args), dtype=dtype, device=dev)
    if len(args) == 1:
        if isinstance(first, Tensor):
            if first.dtype is not dtype:
                raise TypeError(f"expected {dtype} (got {first.dtype})")
            return first
        if not isinstance(first, (list, tuple)) and hasattr(first, "__array__"):
            import numpy as np
            arr = np.asarray(first)  # an int32 or uint8 array converts, as PyTorch's does
            first = arr.astype(dtype._numpy if dtype._numpy is not None else np.float32)
        return tensor(first, dtype=dtype, device=dev)
    raise TypeError(f"new(): invalid arguments {tuple(type(a).__name__ for a in args)}: give "
                    f"sizes (ints) or one sequence of data")


def legacy_new(*args, device=None):
    """pygpu.Tensor(...): the default dtype (float32 unless set_default_dtype changed it)."""
    return _make(_defaults.dtype(), args, device)


# PyTorch's legacy type names and the dtype each stands for (PyTorch's dtype names). The
# one table: the constructors, isinstance, Tensor.type() and type(name or class) read it.
# A dtype pygpu did not have would be refused where it is used, with a message.
LEGACY_TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "BoolTensor": "bool",
                "IntTensor": "int32", "ShortTensor": "int16", "CharTensor": "int8",
                "ByteTensor": "uint8"}
_NAME_OF = {dt: name for name, dt in LEGACY_TYPES.items()}


def dtype_of(legacy_name):
    """The pygpu dtype a legacy type name stands for, or None if pygpu lacks it."""
    try:
        return _dtype.to_dtype(LEGACY_TYPES[legacy_name])
    except TypeError:
        return None


def legacy_name(dtype):
    """'FloatTensor' for float32, ... (PyTorch's Tensor.type() names; the complex dtypes have
    a name, 'ComplexFloatTensor', but no class, as in PyTorch)."""
    return _NAME_OF.get(dtype.name) or dtype._legacy + "Tensor"


def type_string(t):
    """Tensor.type(): 'torch.FloatTensor', 'torch.cuda.LongTensor', 'torch.sim.FloatTensor'."""
    dev = t.device.type
    return ("torch." if dev == "cpu" else f"torch.{dev}.") + legacy_name(t.dtype)


def parse_type(spec):
    """(dtype, device type or None) of what Tensor.type(...) takes: a legacy type class
    (torch.FloatTensor, torch.cuda.LongTensor), its name ('torch.cuda.FloatTensor'), or a
    dtype (device None: stays where it is)."""
    if isinstance(spec, _TypedMeta):
        return spec._require(), spec._device_type
    if isinstance(spec, str):  # only a legacy type's name, as PyTorch's type() takes
        parts = spec.split(".")
        if parts[0] != "torch" or len(parts) not in (2, 3) or parts[-1] not in LEGACY_TYPES:
            raise ValueError(f"invalid type: {spec!r}")
        cls = TYPED[parts[-1]] if len(parts) == 2 else typed_for(parts[1])[parts[-1]]
        return cls._require(), cls._device_type
    return _dtype.to_dtype(spec), None


class _TypedMeta(type):
    """A legacy type (torch.FloatTensor, torch.cuda.LongTensor): a constructor of tensors of
    its dtype on its device type, and an isinstance() test for them."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, Tensor) and cls._dtype_now() is obj.dtype
                and obj.device.type == cls._device_type)

    def __call__(cls, *args, device=None):
        dtype = cls._require()
        if device is None and cls._device_type != "cpu":
            device = cls._device_type
        return _make(dtype, args, device)

    def _dtype_now(cls):
        return dtype_of(cls.__name__)

    def _require(cls):
        dt = cls._dtype_now()
        if dt is None:
            raise TypeError(f"torch.{cls.__name__}: pygpu has no {LEGACY_TYPES[cls.__name__]} "
                            f"dtype yet; use torch.LongTensor (int64) or torch.FloatTensor")
        return dt

    @property
    def dtype(cls):
        return cls._require()

    def __repr__(cls):
        where = "" if cls._device_type == "cpu" else cls._device_type + "."
        return f"<class 'torch.{where}{cls.__name__}'>"


def _typed(name, device_type):
    doc = f"torch.{name}(...): a {device_type} {LEGACY_TYPES[name]} tensor of those sizes or data"
    return _TypedMeta(name, (), {"_device_type": device_type, "__doc__": doc,
                                 "is_cuda": device_type == "cuda"})


_PER_DEVICE = {}


def typed_for(device_type):
    """The legacy types of a device type: torch.cuda.FloatTensor, pygpu.sim.LongTensor, ..."""
    types = _PER_DEVICE.get(device_type)
    if types is None:
        types = _PER_DEVICE[device_type] = {n: _typed(n, device_type) for n in LEGACY_TYPES}
    return types


TYPED = typed_for("cpu")
