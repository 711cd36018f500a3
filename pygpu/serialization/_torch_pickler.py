"""The pickle inside a PyTorch checkpoint, written without PyTorch: the objects' side.

torch.save pickles the object with protocol 2; each tensor reduces to
torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
OrderedDict()) (v3, with the dtype after the hooks, for the dtypes PyTorch stores untyped),
a Parameter to torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict()), and each
storage is written out of band as the persistent id ("storage", torch.<Type>Storage, key,
location, numel) whose bytes are the zip record data/<key> (_zip_format.py). A dtype is the
global torch.<name>, a device torch.device(str), a Size torch.Size(tuple).

The pickler is a subclass of pickle's Python implementation so that it can name PyTorch's
globals without PyTorch being importable; the storages' bytes are never pickled. Tensors
that share a storage (views, tied weights) share one storage record: a first, silent pass
(collect=True) finds every storage's span, the elements its tensors reach, and the second
writes each storage once, trimmed to that span (PyTorch writes all of it). How a tensor
pickles as an object in its own right (Tensor.__reduce_ex__) is not used here: this module
owns the checkpoint format's records."""
import collections
import pickle

import numpy as np

from .. import _C
from .._device import Device
from .._dtype import DType
from ._dtypes import TABLE, row_of


class TorchName:
    """A global of PyTorch's, pickled by name (GLOBAL module\\nname\\n)."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce asks that a reduce's function be callable
        raise TypeError(f"{self.module}.{self.name} is PyTorch's, named in a pickle only")


_NAMES = {}


def torch_name(module, name):
    """One TorchName per global, so the pickler's memo writes each GLOBAL once."""
    key = (module, name)
    if key not in _NAMES:
        _NAMES[key] = TorchName(module, name)
    return _NAMES[key]


class StorageSpan:
    """One storage record: its device and dtype row, the span [start, stop) of elements of
    the storage its tensors reach, a tensor (or NumPy array) viewing it, and its key."""
    __slots__ = ("device", "row", "start", "stop", "source", "key")

    def __init__(self, device, row, start, stop, source):
        self.device, self.row, self.start, self.stop, self.source = device, row, start, stop, source
        self.key = None

    def data(self):
        """The span's elements on the host, in storage order (a 1-d NumPy array)."""
        from ._host import to_bytes
        if isinstance(self.source, np.ndarray):
            return np.ascontiguousarray(self.source).reshape(-1)
        n = self.stop - self.start
        flat = self.source.as_strided((n,), (1,), self.start)  # storage-absolute offset
        return to_bytes(flat)[1].reshape(-1)


def _span(t):
    """[first, one past the last) element of t's storage that t reaches."""
    off = t.storage_offset()
    if t.numel() == 0:
        return off, off
    return off, off + 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


def _storage_id(t, row):
    """Which storage t views as row's dtype: (device, dtype, the address of the storage's
    element 0)."""
    if t.numel() == 0:
        return None  # nothing to share: an empty record of its own
    return (str(t.device), row.name, t.data_ptr() - t.storage_offset() * t.dtype.itemsize)


def _is_qstate(v):
    """An int8 layer's weight or qparam (pygpu/quantization/_qtensor.py): stored as the
    NumPy array its numpy() gives."""
    return getattr(v, "_qstate", False) is True


def _row_of_array(arr):
    for row in TABLE:
        if row.numpy == arr.dtype.newbyteorder("<") and row.name != "bfloat16":
            return row
    raise TypeError(f"pygpu.save: cannot store a NumPy array of dtype {arr.dtype} as a tensor")


class TorchPickler(pickle._Pickler):
    """pickle._Pickler writing pygpu's objects as torch.save writes PyTorch's (protocol 2).
    spans: None for the first pass (it collects them), then the first pass's `spans`."""
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, f, spans=None):
        super().__init__(f, protocol=2)
        self.collect = spans is None
        self.spans = {} if spans is None else spans
        self.records = []  # the storage records in key order (second pass)

    def _save_torch_name(self, obj):
        self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
        self.memoize(obj)

    def _save_dtype(self, obj):
        self._save_torch_name(torch_name("torch", obj.name))

    dispatch[TorchName] = _save_torch_name
    dispatch[DType] = _save_dtype

    def persistent_id(self, obj):
        if not isinstance(obj, StorageSpan):
            return None
        if self.collect:
            return ("storage",)  # the first pass writes nothing anyone reads
        if obj.key is None:
            obj.key = str(len(self.records))
            self.records.append(obj)
        row, numel = obj.row, obj.stop - obj.start
        if row.storage:
            return ("storage", torch_name("torch", row.storage), obj.key, obj.device, numel)
        return ("storage", torch_name("torch.storage", "UntypedStorage"), obj.key, obj.device,
                numel * row.itemsize)

    def reducer_override(self, obj):
        if isinstance(obj, _C.Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, Device):
            return (torch_name("torch", "device"), (str(obj),))
        if isinstance(obj, _C.Size):
            return (torch_name("torch", "Size"), (tuple(obj),))
        if getattr(obj, "is_quantized", False) is True and hasattr(obj, "ints"):
            return self._reduce_qtensor(obj)
        if _is_qstate(obj):
            arr = np.ascontiguousarray(obj.numpy())
            span = StorageSpan("cpu", _row_of_array(arr), 0, arr.size, arr)
            return self._rebuild(span, 0, arr.shape, tuple(s // max(arr.itemsize, 1)
                                                           for s in arr.strides), False)
        return NotImplemented

    def _span_of(self, t, row=None):
        row = row or row_of(t.dtype)
        sid = _storage_id(t, row)
        start, stop = _span(t)
        if sid is None:
            return StorageSpan(str(t.device), row, start, stop, t)
        span = self.spans.get(sid)
        if span is None:
            if not self.collect:
                raise RuntimeError("pygpu.save: a tensor changed storage between the two "
                                   "passes of the writer (was it modified from another thread?)")
            span = self.spans[sid] = StorageSpan(str(t.device), row, start, stop, t)
        elif self.collect:
            span.start, span.stop = min(span.start, start), max(span.stop, stop)
        return span

    def _reduce_tensor(self, t):
        if t._is_param:
            return (torch_name("torch._utils", "_rebuild_parameter"),
                    (t.detach(), bool(t.requires_grad), collections.OrderedDict()))
        span = self._span_of(t)
        return self._rebuild(span, t.storage_offset() - span.start, tuple(t.shape),
                             tuple(t.stride()), bool(t.requires_grad))

    def _reduce_qtensor(self, q):
        """torch._utils._rebuild_qtensor(storage of levels, offset, size, stride, quantizer
        params, requires_grad, hooks), as torch's Tensor._reduce_ex_internal writes it."""
        if q.dtype.per_byte != 1:
            raise TypeError(f"pygpu.save: a {q.dtype} tensor is not saved in PyTorch's format "
                            f"(PyTorch stores it packed, {q.dtype.per_byte} levels to a byte); "
                            f"save its int_repr() and parameters instead")
        span = self._span_of(q.ints, row_of(q.dtype.name))
        scheme = q.qscheme()
        if scheme.per_channel:  # torch writes per_channel_affine for both per-channel kinds
            params = (torch_name("torch", "per_channel_affine"), q._scale, q._zero_point,
                      q.q_per_channel_axis())  # (the held tensors: the same in both passes)
        else:
            params = (torch_name("torch", scheme.name), q.q_scale(), q.q_zero_point())
        return (torch_name("torch._utils", "_rebuild_qtensor"),
                (span, q.storage_offset() - span.start, tuple(q.shape), tuple(q.stride()),
                 params, False, collections.OrderedDict()))

    def _rebuild(self, span, offset, shape, stride, requires_grad):
        args = (span, offset, tuple(shape), tuple(stride), requires_grad,
                collections.OrderedDict())
        if span.row.storage:
            return (torch_name("torch._utils", "_rebuild_tensor_v2"), args)
        return (torch_name("torch._utils", "_rebuild_tensor_v3"),
                args + (torch_name("torch", span.row.name),))
