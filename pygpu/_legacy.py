"""PyTorch's legacy constructors, which programs written before torch.tensor() still use.

    torch.Tensor(3, 4)          an uninitialised float32 tensor of shape (3, 4)
    torch.Tensor([1., 2.])      a float32 tensor of that data (a list, a NumPy array)
    torch.Tensor(torch.Size([2, 3]))  the shape form, as PyTorch reads a Size
    torch.FloatTensor(...), LongTensor(...), DoubleTensor(...), ...  the same, per dtype

pygpu.Tensor is a C type; its constructor calls legacy_new (registered with _C._setup as
the "legacy_new" hook). The typed names are classes only for isinstance():
isinstance(t, torch.LongTensor) holds for a cpu int64 tensor, as in PyTorch. There is one
per dtype of the table (pygpu/_dtype.py's legacy column: IntTensor, ByteTensor, ...)."""
import numbers

from . import _C, _dtype, _defaults

Tensor = _C.Tensor


def _make(dtype, args, device):
    from ._tensor_create import empty, tensor
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


class _TypedMeta(type):
    def __instancecheck__(cls, obj):
        return (isinstance(obj, Tensor) and obj.dtype is cls._dtype
                and obj.device.type == "cpu")

    def __call__(cls, *args, device=None):
        return _make(cls._dtype, args, device)


def _typed(dt):
    name = _dtype.legacy_name(dt)
    doc = f"torch.{name}(...): a cpu {dt.name} tensor of those sizes or that data"
    return _TypedMeta(name, (), {"_dtype": dt, "__doc__": doc})


# PyTorch's legacy type names (FloatTensor, LongTensor, ByteTensor, ...): one per dtype
TYPED = {_dtype.legacy_name(dt): _typed(dt) for dt in _dtype.ALL}
