"""Tensor information and dtype conversions with PyTorch's names: dim, stride,
element_size, storage_offset, nelement, ndimension, is_floating_point, float, double, half,
bfloat16, long, int, bool, type, type_as.

Choices where pygpu differs from PyTorch:
- pygpu has no int32, so `int()` raises a TypeError saying to use `.long()` (int64),
  rather than silently giving a dtype the code did not ask for.
- `type()` returns PyTorch's legacy type string, 'torch.FloatTensor' for a cpu float32
  tensor, 'torch.sim.FloatTensor' / 'torch.cuda.FloatTensor' on devices, so code that
  compares it with PyTorch's strings keeps working under `import pygpu as torch`.
  `type(dtype)` accepts a pygpu dtype or such a string and converts (a copy, as PyTorch's;
  self when the dtype already matches)."""
from . import _C, _dtype

Tensor = _C.Tensor

_LEGACY = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
           "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "bool": "BoolTensor"}
_FROM_LEGACY = {v: k for k, v in _LEGACY.items()}


def dim(self):
    return self.ndim


def stride(self, dim=None):
    """stride(dim=None): the step between elements of each axis, in elements."""
    if dim is None:
        return tuple(self.strides)
    from ._tensor_views import norm_dim
    return self.strides[norm_dim("stride", dim, self.ndim)]


def element_size(self):
    return self.itemsize


def storage_offset(self):
    return _C._storage_offset(self)


def nelement(self):
    return self.numel()


def is_floating_point(self):
    return self.dtype.is_floating_point


def _to(self, dt):
    return self if self.dtype == dt else self.to(dtype=dt)


def float(self):
    return _to(self, _dtype.float32)


def double(self):
    return _to(self, _dtype.float64)


def half(self):
    return _to(self, _dtype.float16)


def bfloat16(self):
    return _to(self, _dtype.bfloat16)


def long(self):
    return _to(self, _dtype.int64)


def bool(self):
    return _to(self, _dtype.bool_)


def int(self):
    raise TypeError("Tensor.int(): pygpu has no int32 dtype (its integer dtype is int64); use "
                    ".long() for an int64 tensor")


def type(self, dtype=None, non_blocking=False):
    """type(): PyTorch's type string ('torch.FloatTensor'); type(dtype): convert."""
    if dtype is None:
        dev = self.device.type
        prefix = "torch." if dev == "cpu" else f"torch.{dev}."
        return prefix + _LEGACY[self.dtype.name]
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        if name not in _FROM_LEGACY:
            raise ValueError(f"type: invalid type {dtype!r}; pygpu knows "
                             f"{sorted('torch.' + n for n in _FROM_LEGACY)}")
        dtype = _dtype.to_dtype(_FROM_LEGACY[name])
    return _to(self, _dtype.to_dtype(dtype))


def type_as(self, other):
    return _to(self, other.dtype)


def __format__(self, spec):
    """format(t, '+.2f'): a 0-d tensor formats as its number, as PyTorch's does; any other
    tensor takes only the empty spec (str(t))."""
    if self.ndim == 0:
        return self.item().__format__(spec)
    return object.__format__(self, spec)


METHODS = {
    "__format__": __format__,
    "dim": dim, "ndimension": dim, "stride": stride, "element_size": element_size,
    "storage_offset": storage_offset, "nelement": nelement,
    "is_floating_point": is_floating_point, "float": float, "double": double, "half": half,
    "bfloat16": bfloat16, "long": long, "bool": bool, "int": int, "type": type,
    "type_as": type_as,
}
