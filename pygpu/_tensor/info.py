"""Tensor information and dtype conversions with PyTorch's names: dim, stride,
element_size, storage_offset, nelement, ndimension, is_floating_point, the casts
named by the dtype table's legacy column (float, double, half, bfloat16, long, int, short,
char, byte, bool: csrc/core/pg_dtype.h), type, type_as.

Choices where pygpu differs from PyTorch:
- `type()` returns PyTorch's legacy type string, 'torch.FloatTensor' for a cpu float32
  tensor, 'torch.sim.FloatTensor' / 'torch.cuda.FloatTensor' on devices, so code that
  compares it with PyTorch's strings keeps working under `import pygpu as torch`.
  `type(dtype)` accepts a pygpu dtype or such a string and converts (a copy, as PyTorch's;
  self when the dtype already matches)."""
from .. import _C, _dtype

Tensor = _C.Tensor



def dim(self):
    return self.ndim


def stride(self, dim=None):
    """stride(dim=None): the step between elements of each axis, in elements."""
    if dim is None:
        return tuple(self.strides)
    from .views import norm_dim
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


def _cast_method(dt):
    def cast(self, memory_format=None):
        return _to(self, dt)
    cast.__name__ = dt._legacy.lower()
    cast.__doc__ = f"self as {dt.name} (a copy; self where it is {dt.name} already)"
    return cast


# Tensor.float() ... Tensor.byte(): one per real row of the dtype table, named by its legacy
# column (PyTorch's complex casts are cfloat/cdouble: pygpu/_tensor/complex.py)
_CASTS = {dt._legacy.lower(): _cast_method(dt) for dt in _dtype.ALL
          if not dt.is_complex and not dt._bare}  # (PyTorch has no Tensor.uint16())


def type(self, dtype=None, non_blocking=False, **kwargs):
    """type(): PyTorch's type string ('torch.FloatTensor', 'torch.cuda.LongTensor');
    type(t): convert to t, a dtype, a legacy type (torch.FloatTensor, torch.cuda.FloatTensor:
    also to that device type, as PyTorch's) or its name. Returns self when nothing changes."""
    from .. import _legacy
    dtype = kwargs.pop("dst_type", dtype)
    if kwargs:
        raise TypeError(f"type() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if dtype is None:
        return _legacy.type_string(self)
    dt, device_type = _legacy.parse_type(dtype)
    if device_type is not None and device_type != self.device.type:
        return self.to(device=device_type, dtype=dt, non_blocking=non_blocking)
    return _to(self, dt)


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
    "is_floating_point": is_floating_point, **_CASTS, "type": type,
    "type_as": type_as,
}
