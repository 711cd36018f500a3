"""Storages as PyTorch shows them: torch.UntypedStorage (bytes), torch.TypedStorage (elements
of a dtype; PyTorch 2 deprecates it, and so warns once), the legacy typed classes
(torch.FloatStorage, LongStorage, ...), Tensor.storage(), untyped_storage(), storage_type(),
set_(), is_set_to(), and the in-place reshapes as_strided_, resize_as_, resize, with
sum_to_size, nonzero_static, empty_permuted and torch.is_storage.

A storage object is a view of a tensor's whole storage (_C._storage_base: a 1-d tensor of
the dtype over every byte of it), so it shares the memory: writing through one shows in the
other, data_ptr() is the storage's first byte, share_memory_() moves it as the tensor's
does. A TypedStorage made on its own (FloatStorage(3), TypedStorage([1, 2], dtype=...)) is
a new 1-d tensor's storage."""
import warnings

from . import _C, _dtype
from ._dtype import QDTYPES
from ._tensor import create as _tensor_create

Tensor = _C.Tensor

_warned = [False]


def _warn_typed():
    if not _warned[0]:
        _warned[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)


class _StorageBase:
    """What both storage kinds share: the base tensor over the whole storage."""

    def __init__(self, base):
        self._base = base

    @property
    def device(self):
        return self._base.device

    def data_ptr(self):
        return self._base.data_ptr()

    def nbytes(self):
        return int(_C._storage_info(self._base)[1])

    def is_shared(self):
        return bool(_C._storage_info(self._base)[2])

    def share_memory_(self):
        if self._base.device.type == "cpu":
            _C._share_memory(self._base)
        return self

    def is_pinned(self, device="cuda"):
        return self._base.is_pinned()

    @property
    def is_cuda(self):
        return self._base.device.type == "cuda"

    def _same(self, other):
        return _C._storage_info(self._base)[0] == _C._storage_info(other._base)[0]

    def __eq__(self, other):  # the same memory
        return isinstance(other, _StorageBase) and self._same(other) and \
            type(self) is type(other)

    def __hash__(self):
        return hash(_C._storage_info(self._base)[0])


class UntypedStorage(_StorageBase):
    """Bytes: UntypedStorage(nbytes, device=...) or a tensor's untyped_storage()."""

    def __init__(self, *args, device=None):
        if len(args) == 1 and isinstance(args[0], Tensor) and device == "__view__":
            super().__init__(args[0])
            return
        n = int(args[0]) if args else 0  # n bytes: n one-byte (bool) elements, zeroed
        super().__init__(_tensor_create.zeros(n, dtype=_dtype.bool_, device=device))

    def size(self):
        return self.nbytes()

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        return 1

    def _bytes(self):
        from ._tensor.objects import _raw
        return _raw(self._base)[:self.nbytes()]

    def tolist(self):
        return list(self._bytes())

    def __getitem__(self, i):
        return self._bytes()[i]

    def __iter__(self):
        return iter(self.tolist())

    def untyped(self):
        return self

    def cpu(self):
        return self if self.device.type == "cpu" else UntypedStorage(self._base.cpu(),
                                                                    device="__view__")

    def __repr__(self):
        return (f" {' '.join(str(b) for b in self.tolist())}\n[torch.storage.UntypedStorage(device="
                f"{self.device}) of size {self.nbytes()}]")


class TypedStorage(_StorageBase):
    """Elements of one dtype: TypedStorage(size or data, dtype=..., device=...) or a
    tensor's storage() (deprecated in PyTorch 2, with its warning)."""

    is_sparse = False

    def __init__(self, *args, dtype=None, device=None, _base=None, _qdtype=None):
        self._qdtype = _qdtype  # a quantized dtype: _base holds its levels (_quantized.py)
        if _base is not None:
            super().__init__(_base)
            return
        if getattr(dtype, "is_quantized", False):  # QInt8Storage(3): the levels' dtype
            self._qdtype, dtype = dtype, dtype.storage
        dt = _dtype.float32 if dtype is None else _dtype.to_dtype(dtype)
        if len(args) == 1 and not isinstance(args[0], int):
            base = _tensor_create.tensor(list(args[0]), dtype=dt, device=device).reshape(-1)
        else:
            base = _tensor_create.zeros(int(args[0]) if args else 0, dtype=dt, device=device)
        super().__init__(base)

    @property
    def dtype(self):
        return self._qdtype or self._base.dtype

    def size(self):
        return self._base.numel()

    def __len__(self):
        return self.size()

    def element_size(self):
        return self.dtype.itemsize

    def tolist(self):
        return self._base.tolist()

    def __getitem__(self, i):
        if isinstance(i, slice):
            return TypedStorage(_base=self._base[i].clone(), _qdtype=self._qdtype)
        return self._base[i].item()

    def __setitem__(self, i, value):
        self._base[i] = value

    def __iter__(self):
        return iter(self.tolist())

    def fill_(self, value):
        self._base.fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        self._base.copy_(source._base if isinstance(source, _StorageBase) else source)
        return self

    def clone(self):
        return TypedStorage(_base=self._base.clone(), _qdtype=self._qdtype)

    def untyped(self):
        return UntypedStorage(self._base, device="__view__")

    def _untyped_storage(self):
        return self.untyped()

    def cpu(self):
        return self if self.device.type == "cpu" else self.to(device="cpu")

    def to(self, *, device=None, non_blocking=False):
        return TypedStorage(_base=self._base.to(device), _qdtype=self._qdtype)

    def cuda(self, device=None, non_blocking=False):
        return self.to(device="cuda" if device is None else device)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return legacy_storage_class(self.dtype, self.device.type).__module__ + "." + \
                legacy_storage_class(self.dtype, self.device.type).__name__
        raise NotImplementedError("TypedStorage.type(dtype): convert the tensor instead")

    def pickle_storage_type(self):
        return legacy_storage_class(self.dtype, "cpu").__name__

    def __reduce__(self):
        return (_rebuild_typed, (self._base.detach(), self._qdtype))

    def __repr__(self):
        items = "\n".join(f" {v}" for v in self.tolist())
        return f"{items}\n[torch.storage.TypedStorage(dtype={self.dtype}, device={self.device})" \
               f" of size {self.size()}]"


def _rebuild_typed(base, qdtype=None):
    return TypedStorage(_base=base, _qdtype=qdtype)


class _LegacyStorageMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, TypedStorage) and obj.dtype is cls._dtype_now() and \
            obj.device.type == "cpu"

    def _dtype_now(cls):
        if cls._dtype_name in QDTYPES:
            return QDTYPES[cls._dtype_name]
        try:
            return _dtype.to_dtype(cls._dtype_name)
        except TypeError:
            return None

    def __call__(cls, *args, device=None):
        dt = cls._dtype_now()
        if dt is None:
            raise TypeError(f"torch.{cls.__name__}: pygpu has no {cls._dtype_name} dtype yet")
        return TypedStorage(*args, dtype=dt, device=device)

    @property
    def dtype(cls):
        return cls._dtype_now()


# PyTorch's legacy storage names and their dtypes (one table, as _legacy.py's)
LEGACY_STORAGES = {"FloatStorage": "float32", "DoubleStorage": "float64",
                   "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
                   "LongStorage": "int64", "BoolStorage": "bool", "IntStorage": "int32",
                   "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
                   "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
                   # the quantized dtypes' (pygpu/_qdtype.py): their levels
                   "QUInt8Storage": "quint8", "QInt8Storage": "qint8",
                   "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2",
                   "QUInt2x4Storage": "quint2x4"}
STORAGE_CLASSES = {name: _LegacyStorageMeta(name, (), {"_dtype_name": dt,
                                                       "__module__": "torch"})
                   for name, dt in LEGACY_STORAGES.items()}


def legacy_storage_class(dtype, device_type="cpu"):
    for name, dt in LEGACY_STORAGES.items():
        if dt == dtype.name:
            return STORAGE_CLASSES[name]
    raise TypeError(f"no storage class for {dtype}")


def is_storage(obj):
    """Whether obj is a storage (typed or untyped)."""
    return isinstance(obj, _StorageBase)


# ---- the Tensor methods -------------------------------------------------------------------

def storage(self):
    """The tensor's storage as a TypedStorage of its dtype (shared memory; deprecated in
    PyTorch 2, which warns once, as here)."""
    _warn_typed()
    return TypedStorage(_base=_C._storage_base(self))


def untyped_storage(self):
    """The tensor's storage as bytes (shared memory)."""
    return UntypedStorage(_C._storage_base(self), device="__view__")


def storage_type(self):
    return legacy_storage_class(self.dtype, self.device.type)


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make self view `source`: a tensor (its storage and view), a storage (a view of it:
    storage_offset, size and stride in elements; the whole storage by default), or nothing
    (an empty tensor). self stays the same object."""
    if source is None:
        self.data = _tensor_create.empty(0, dtype=self.dtype, device=self.device)
        return self
    if isinstance(source, Tensor):
        if size is None:
            self.data = source.detach()
            return self
        base = _C._storage_base(source)
    elif isinstance(source, _StorageBase):
        base = source._base
        if isinstance(source, UntypedStorage) and base.dtype is not self.dtype:
            # bytes: read as self's dtype (Tensor.view(dtype) of the storage's flat tensor)
            raw = _C._view_dtype(base.reshape(-1), _dtype.uint8)
            whole = raw.numel() // self.dtype.itemsize * self.dtype.itemsize  # torch floors it
            base = _C._view_dtype(raw[:whole], self.dtype)
    else:
        raise TypeError(f"set_(): expected a Tensor or a storage, got {type(source).__name__}")
    if base.dtype is not self.dtype:
        raise RuntimeError(f"Expected a Storage of type {self.dtype} or an UntypedStorage, but "
                           f"got type {base.dtype} for argument #1 'source'")
    if size is None:
        size = (base.numel() - storage_offset,)
    size = tuple(size)
    if stride is None:
        stride, acc = [], 1
        for s in reversed(size):
            stride.append(acc)
            acc *= s
        stride = tuple(reversed(stride))
    self.data = _C._as_strided(base, size, tuple(stride), storage_offset)
    return self


def is_set_to(self, tensor):
    """Whether self and tensor are the same view of the same storage."""
    return (_C._storage_info(self)[0] == _C._storage_info(tensor)[0] and
            _C._storage_offset(self) == _C._storage_offset(tensor) and
            tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())


def as_strided_(self, size, stride, storage_offset=None):
    """as_strided in place: self becomes that view of its storage."""
    if self.requires_grad and _C.is_grad_enabled():
        raise RuntimeError("as_strided_: pygpu does not change the view of a tensor that "
                           "requires grad in place; use the out-of-place as_strided()")
    self.data = self.as_strided(size, stride, storage_offset)
    return self


def resize_as_(self, the_template, memory_format=None):
    return self.resize_(tuple(the_template.shape))


def _autograd_resize(self, sizes):
    """PyTorch's autograd Resize: the same elements in the new shape (a view where self is
    contiguous), differentiable; the number of elements may not change."""
    numel = 1
    for s in sizes:
        numel *= s
    if self.numel() != numel:
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({numel} elements "
                           f"in total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, "
                           "while preserving the number of elements. ")
    return self.contiguous().reshape(sizes)


def resize(self, *sizes):
    """Deprecated: self's elements in the shape `sizes` (autograd's Resize)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    return _autograd_resize(self, tuple(int(s) for s in sizes))


def resize_as(self, tensor):
    """Deprecated: self's elements in tensor's shape (autograd's Resize)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _autograd_resize(self, tuple(tensor.shape))


def sum_to_size(self, *size):
    """Sum the broadcast axes away: the result has `size`, which self must broadcast from."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(size)
    lead = self.ndim - len(size)
    if lead < 0:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                           f"{{{list(self.shape)}}}.")
    out = self
    if lead:
        out = out.sum(tuple(range(lead)))
    dims = tuple(i for i, (s, t) in enumerate(zip(size, out.shape)) if s == 1 and t != 1)
    for s, t in zip(size, out.shape):
        if s != t and s != 1:
            raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                               f"{{{list(self.shape)}}}.")
    if dims:
        out = out.sum(dims, keepdim=True)
    return out


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero's (n, ndim) indices cut or padded with fill_value to `size` rows."""
    idx = input.nonzero()
    n = idx.shape[0]
    if n >= size:
        return idx[:size]
    pad = _tensor_create.full((size - n, input.ndim), fill_value, dtype=_dtype.int64,
                              device=input.device)
    from ._tensor.join import cat
    return cat([idx, pad], 0)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` whose memory runs in physical_layout's order."""
    size = tuple(size)
    order = tuple(physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError("Dimension mismatch")
    physical = tuple(size[d] for d in order)
    out = _tensor_create.empty(physical, dtype=dtype, device=device)
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    out = out.permute(*inverse)
    return out.requires_grad_(True) if requires_grad else out


METHODS = {"storage": storage, "untyped_storage": untyped_storage,
           "storage_type": storage_type, "set_": set_, "is_set_to": is_set_to,
           "as_strided_": as_strided_, "resize_as_": resize_as_, "resize": resize,
           "resize_as": resize_as,
           "sum_to_size": sum_to_size, "nonzero_static": nonzero_static}
FUNCTIONS = {"is_storage": is_storage, "nonzero_static": nonzero_static,
             "empty_permuted": empty_permuted, "as_strided_": as_strided_,
             "resize_as_": resize_as_, "UntypedStorage": UntypedStorage,
             "TypedStorage": TypedStorage, "Storage": TypedStorage,
             "StorageBase": _StorageBase, **STORAGE_CLASSES}
