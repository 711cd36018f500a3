"""Tensors as Python objects: pickle (__reduce_ex__), copy.copy, copy.deepcopy, and shared
memory (share_memory_, is_shared), with PyTorch's semantics.

- pickle: the tensor comes back on its device, with its dtype, shape, strides and
  requires_grad (a leaf; the gradient is not pickled), a Parameter as a Parameter, as
  torch 2's pickling does. What is written is the span of the storage the tensor reaches
  (element offset lo .. lo + span), so every layout (a transpose, a slice, an expanded
  view) comes back with the same strides. A device tensor's bytes come to the host in one
  counted copy and go back to the device in one.
- copy.deepcopy: a copy of the whole storage, on the same device, once per storage within
  one deepcopy (views of one storage stay views of one copy, as PyTorch's memo keeps them),
  with requires_grad and, for a plain tensor, a deep copy of .grad (a Parameter's is not
  copied: PyTorch's Parameter.__deepcopy__). A non-leaf is refused, in PyTorch's words.
- copy.copy: a new tensor object over the same storage (PyTorch's shallow copy).
- share_memory_: the storage moves into shared memory in place (csrc/core/pg_shared_memory.c)
  so that other processes can map it (pygpu/multiprocessing); a no-op on a device (PyTorch's,
  for CUDA tensors). is_shared says whether it is there.

bfloat16 has no NumPy dtype: its bytes travel as the top halves of float32 bit patterns
(exact both ways, NaN payloads too)."""
import numpy as np

from .. import _C, _dtype


def _span(t):
    """(lo, n): the first storage element t reaches and how many it spans."""
    off = _C._storage_offset(t)
    if t.numel() == 0:
        return off, 0
    lo = off + sum(min(0, (s - 1) * st) for s, st in zip(t.shape, t.stride()))
    hi = off + sum(max(0, (s - 1) * st) for s, st in zip(t.shape, t.stride()))
    return lo, hi - lo + 1


def _raw(flat):
    """The bytes of a 1-d contiguous tensor (any device: one counted copy to the host)."""
    host = flat.detach().cpu()
    if host.dtype is _dtype.bfloat16:
        bits = host.float().numpy().view(np.uint32) >> 16
        return bits.astype("<u2").tobytes()
    return np.ascontiguousarray(host.numpy()).tobytes()


def _from_raw(raw, dtype):
    """A 1-d cpu tensor of `dtype` from _raw's bytes."""
    if dtype is _dtype.bfloat16:
        bits = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
        return _C.from_numpy(bits.view(np.float32).copy()).astype(dtype)
    # (float8: ml_dtypes' NumPy type, numpy_of's)
    return _C.from_numpy(np.frombuffer(raw, _dtype.numpy_of(dtype)).copy())


def _rebuild_tensor(device, dtype_name, raw, shape, strides, offset, requires_grad, is_param):
    """pickle's way back: the spanned bytes on `device`, viewed as the tensor was."""
    dtype = _dtype.to_dtype(dtype_name)
    flat = _from_raw(raw, dtype)
    if device != "cpu":
        flat = flat.to(device)
    t = _C._as_strided(flat, tuple(shape), tuple(strides), offset)
    if is_param:
        t._is_param = True
    return t.requires_grad_(True) if requires_grad else t


def _as_subclass_of(t, self, state):
    """t (a leaf made for self) as an object of self's Tensor subclass with that state, as
    PyTorch's copies and pickles keep a subclass (torch._tensor._rebuild_from_type_v2)."""
    cls = self if isinstance(self, type) else type(self)
    if cls is _C.Tensor:
        return t
    new = _C._make_subclass(cls, t, t.requires_grad)
    new._is_param = t._is_param
    new.__dict__.update(state)
    return new


def _rebuild_subclass(cls, args, state):
    return _as_subclass_of(_rebuild_tensor(*args), cls, state)


def __reduce_ex__(self, protocol):
    lo, n = _span(self)
    base = _C._storage_base(self)
    piece = _C._as_strided(base, (n,), (1,), lo)
    args = (str(self.device), self.dtype.name, _raw(piece), tuple(self.shape),
            tuple(self.stride()), _C._storage_offset(self) - lo, bool(self.requires_grad),
            bool(self._is_param))
    if type(self) is not _C.Tensor:
        return (_rebuild_subclass, (type(self), args, dict(self.__dict__)))
    return (_rebuild_tensor, args)


def __copy__(self):
    t = self.detach()
    if self._is_param:
        t._is_param = True
    t = t.requires_grad_(True) if self.requires_grad else t
    return _as_subclass_of(t, self, getattr(self, "__dict__", {}))


def __deepcopy__(self, memo):
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                           "the deepcopy protocol at the moment.  If you were attempting to "
                           "deepcopy a module, this may be because of a "
                           "torch.nn.utils.weight_norm usage, see "
                           "https://github.com/pytorch/pytorch/pull/103001")
    if id(self) in memo:
        return memo[id(self)]
    key = ("pygpu storage", _C._storage_info(self)[0])
    base = memo.get(key)
    if base is None:
        source = _C._storage_base(self)
        base = memo[key] = source.detach().clone()
        memo.setdefault(id(memo), []).append(source)  # the key names a live storage
    new = _C._as_strided(base, tuple(self.shape), tuple(self.stride()),
                         _C._storage_offset(self))
    if self._is_param:
        new._is_param = True
    if self.requires_grad:
        new.requires_grad_(True)
    if type(self) is not _C.Tensor:
        import copy
        new = _as_subclass_of(new, self, copy.deepcopy(self.__dict__, memo))
    memo[id(self)] = new
    if self.grad is not None and not self._is_param:
        import copy
        new.grad = copy.deepcopy(self.grad, memo)
    return new


def share_memory_(self):
    """Move the storage into shared memory (in place: every view follows), so that another
    process can map it; a no-op when it is there already and for a device tensor. Returns
    self."""
    if self.device.type == "cpu":
        _C._share_memory(self)
    return self


def is_shared(self):
    """Whether the storage is in shared memory (a cpu tensor after share_memory_, or received
    from another process)."""
    return bool(_C._storage_info(self)[2])


METHODS = {"__reduce_ex__": __reduce_ex__, "__copy__": __copy__, "__deepcopy__": __deepcopy__,
           "share_memory_": share_memory_, "is_shared": is_shared}
