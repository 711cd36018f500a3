"""Loading PyTorch's checkpoints: the storages and the functions their pickle calls.

A checkpoint's pickle names PyTorch's globals (torch._utils._rebuild_tensor_v2,
torch.FloatStorage, torch.float16, collections.OrderedDict, ...). GLOBALS maps each name
that load(weights_only=True) may call, the allowlist of torch/_weights_only_unpickler.py,
to pygpu's own object: a storage record becomes a host tensor moved once to where
map_location says, and each tensor a view of it (as_strided), so tensors that shared a
storage when saved share one when loaded. Every size, stride and offset is checked against
its storage before a view is made: a hostile file gets PyTorch's RuntimeError, never a
read outside the storage."""
import codecs
import collections
import inspect
import pickle

from .. import _C
from .._device import device as _device
from ._map_location import check_present, resolve
from ._dtypes import ALIASES, BY_NAME, BY_STORAGE, TABLE


class MissingDTypeError(TypeError):
    """A checkpoint's tensor of a dtype pygpu does not hold."""


class StorageType:
    """torch.<Type>Storage as a checkpoint names it: a dtype row (None: UntypedStorage)."""
    __slots__ = ("row", "name")

    def __init__(self, row, name):
        self.row, self.name = row, name

    def __repr__(self):
        return f"torch.{self.name}"


UNTYPED = StorageType(None, "UntypedStorage")


class MissingDType:
    """A PyTorch dtype pygpu does not hold: loads fine as a value, fails when a tensor needs it."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


class LoadedStorage:
    """One storage record: its dtype row, element count, the location it was saved from and
    its bytes; the host tensor is made once and moved once per target device. A
    map_location callable of PyTorch's form (storage, location) receives one of these and
    returns it, or storage.cpu() / storage.cuda(i) / storage.to(device)."""

    def __init__(self, row, numel, location, raw, big_endian=False, target=None):
        self.row, self.numel, self.location, self._raw = row, numel, location, raw
        self.big_endian, self.target, self._on = big_endian, target, {}

    # PyTorch's storage methods that map_location callables use
    def _moved(self, dev):
        s = LoadedStorage(self.row, self.numel, self.location, self._raw, self.big_endian,
                          str(_device(dev)))
        s._on = self._on
        return s

    def cpu(self):
        return self._moved("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self._moved("cuda" if device is None else
                           device if isinstance(device, str) else f"cuda:{int(device)}")

    def to(self, device=None, non_blocking=False):
        return self._moved(device)

    @property
    def device(self):
        return _device(self.target or self.location)

    def nbytes(self):
        return self.numel * self.row.itemsize

    def size(self):
        return self.numel

    def __len__(self):
        return self.numel

    def tensor(self):
        """The 1-d tensor of the whole storage, on its target device."""
        dev = self.target or self.location
        if dev not in self._on:
            if self.row.held_as is None:
                raise MissingDTypeError(f"pygpu.load: the checkpoint holds a tensor of dtype "
                                f"{self.row.name}, which pygpu does not hold; a tensor of it "
                                f"cannot be made (pygpu's dtypes: {_held()})")
            target = _device(dev)
            if self._raw is None:  # a stand-in while the legacy reader learns the layout
                from .._tensor.create import empty
                self._on[dev] = empty(self.numel, dtype=self.row.held_as)
                return self._on[dev]
            from ._host import from_buffer
            raw = self._raw
            if self.big_endian and self.row.itemsize > 1:
                import numpy as np
                raw = np.frombuffer(raw, self.row.numpy.newbyteorder(">")).astype(
                    self.row.numpy).tobytes()
            host = from_buffer(self.row, raw, self.numel)
            self._on[dev] = host if target.type == "cpu" else host.to(target)
        return self._on[dev]


def _held():
    from ._dtypes import held
    return held()


def place(storage, map_location):
    """Resolve where `storage` goes (map_location's rules, PyTorch's 2-argument callable too)
    and check that device exists: all before any tensor is made."""
    if callable(map_location) and not isinstance(map_location, (str, dict)) and \
            not hasattr(map_location, "type") and _takes_two(map_location):
        out = map_location(storage, storage.location)
        if out is None:
            out = storage
        if not isinstance(out, LoadedStorage):
            raise TypeError("pygpu.load: a map_location callable must return the storage it "
                            "was given, moved (storage.cpu(), storage.cuda(i), storage.to(d)), "
                            f"or None; it returned {type(out).__name__}")
        dev = out.target or out.location
    else:
        out, dev = storage, resolve(storage.location, map_location)
    dev = str(check_present("storage", dev, map_location))
    if out is storage:
        out = storage._moved(dev)
    out.target = dev
    return out


def _takes_two(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


# ---- the functions a checkpoint's pickle calls ----------------------------------------

def _check_view(storage, offset, size, stride):
    if not isinstance(storage, LoadedStorage):
        raise pickle.UnpicklingError(f"a tensor's storage is a {type(storage).__name__}, not "
                                     "a storage record")
    if not (isinstance(offset, int) and offset >= 0):
        raise RuntimeError(f"a tensor's storage offset {offset!r} is not a non-negative int")
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride) or not all(isinstance(v, int) and v >= 0 for v in size + stride):
        raise RuntimeError(f"a tensor's sizes {list(size)} and strides {list(stride)} are not "
                           "two lists of non-negative ints of one length")
    numel = 1
    for n in size:
        numel *= n
    need = 0 if numel == 0 else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if need > storage.numel:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {storage.row.itemsize} requiring a "
                           f"storage size of {need * storage.row.itemsize} are out of bounds for "
                           f"storage of size {storage.numel * storage.row.itemsize}")
    return size, stride


def _view(storage, offset, size, stride):
    size, stride = _check_view(storage, offset, size, stride)
    base = storage.tensor()
    if not size and storage.numel == 1 and offset == 0:
        return base.reshape(())
    return base.as_strided(size, stride, offset)


def _set_requires_grad(t, requires_grad):
    if requires_grad:
        if not t.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        t.requires_grad_(True)
    return t


# The bits torch.save writes for a lazily conjugated or negated view (torch._utils'
# _get_tensor_metadata: t.conj() of a complex tensor, its imag's negative view). pygpu's
# tensors have no such bits: the view's values are computed on load, in a tensor of its own
# (so it no longer shares the storage with the file's other views of it).
_METADATA_BITS = {"conj": lambda t: t.conj(), "neg": lambda t: -t}


def _check_metadata(metadata):
    unknown = {k: v for k, v in (metadata or {}).items() if k not in _METADATA_BITS}
    if unknown:
        raise pickle.UnpicklingError(f"a tensor carries metadata {unknown!r}, which pygpu's "
                                     "tensors do not have")


def _apply_metadata(t, metadata):
    """t with the conjugate and negative bits of `metadata` applied to its values."""
    for key, apply in _METADATA_BITS.items():
        if (metadata or {}).get(key) and isinstance(t, _C.Tensor):
            t = apply(t)
    return t


def rebuild_tensor(storage, storage_offset, size, stride):
    return _view(storage, storage_offset, size, stride)


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                      metadata=None):
    _check_metadata(metadata)
    t = _apply_metadata(_view(storage, storage_offset, size, stride), metadata)
    return _set_requires_grad(t, requires_grad) if isinstance(t, _C.Tensor) else t


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                      dtype, metadata=None):
    _check_metadata(metadata)
    if not isinstance(storage, LoadedStorage) or storage.row is not None and \
            storage.row.name != "uint8":
        raise pickle.UnpicklingError("_rebuild_tensor_v3 needs an untyped storage")
    name = getattr(dtype, "name", None)
    row = BY_NAME.get(ALIASES.get(name, name)) if isinstance(name, str) else None
    if row is None:
        raise pickle.UnpicklingError(f"_rebuild_tensor_v3: {dtype!r} is not a dtype")
    if storage.numel % row.itemsize:
        raise RuntimeError(f"an untyped storage of {storage.numel} bytes does not hold whole "
                           f"{row.name} elements")
    typed = LoadedStorage(row, storage.numel // row.itemsize, storage.location, storage._raw,
                          storage.big_endian, storage.target)
    return rebuild_tensor_v2(typed, storage_offset, size, stride, requires_grad,
                             backward_hooks, metadata)


def rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad,
                    backward_hooks):
    """torch._utils._rebuild_qtensor: a quantized tensor over a QUInt8/QInt8/QInt32Storage
    record of levels, with (scheme, scale, zero_point) or (scheme, scales, zero_points,
    axis); float zero points make per_channel_affine_float_qparams, as torch's."""
    from .._dtype import QDTYPES, QSCHEMES
    from ..quantization._quantized import QuantizedTensor
    if not isinstance(storage, LoadedStorage) or storage.row.levels is None:
        raise pickle.UnpicklingError("_rebuild_qtensor needs a quantized storage record")
    if requires_grad:
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    levels = _view(storage, storage_offset, size, stride)
    qd = QDTYPES[storage.row.name]
    scheme = quantizer_params[0]
    if scheme in (QSCHEMES["per_tensor_affine"], QSCHEMES["per_tensor_symmetric"]):
        _, scale, zero_point = quantizer_params
        return QuantizedTensor(levels, qd, QSCHEMES["per_tensor_affine"], float(scale),
                               int(zero_point))
    if scheme in (QSCHEMES["per_channel_affine"], QSCHEMES["per_channel_symmetric"],
                  QSCHEMES["per_channel_affine_float_qparams"]):
        _, scales, zero_points, axis = quantizer_params
        if not (isinstance(scales, _C.Tensor) and isinstance(zero_points, _C.Tensor)):
            raise pickle.UnpicklingError("_rebuild_qtensor: per-channel scales and zero points "
                                         "must be tensors")
        dev = levels.device
        if zero_points.dtype.is_floating_point:
            return QuantizedTensor(levels, qd, QSCHEMES["per_channel_affine_float_qparams"],
                                   scales.to(dev).float(), zero_points.to(dev).float(),
                                   int(axis))
        return QuantizedTensor(levels, qd, QSCHEMES["per_channel_affine"],
                               scales.to(dev).double(), zero_points.to(dev).to("int64"),
                               int(axis))
    raise RuntimeError(f"Can't deserialize quantized tensor with qscheme {scheme}")


def rebuild_parameter(data, requires_grad, backward_hooks):
    from ..nn.parameter import Parameter
    if not isinstance(data, _C.Tensor):
        raise pickle.UnpicklingError(f"a Parameter's data is a {type(data).__name__}")
    return Parameter(data, requires_grad)


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = rebuild_parameter(data, requires_grad, backward_hooks)
    _set_state(p, state)
    return p


def _set_state(obj, state):
    dict_state, slots = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
    for part in (dict_state, slots):
        if part:
            if not isinstance(part, dict) or not all(isinstance(k, str) for k in part):
                raise pickle.UnpicklingError(f"invalid serialized state {state!r}")
            for k, v in part.items():
                try:
                    setattr(obj, k, v)
                except AttributeError:
                    raise pickle.UnpicklingError(
                        f"a tensor carries the Python attribute {k!r}, which a pygpu tensor "
                        "cannot hold") from None


def rebuild_from_type_v2(func, new_type, args, state):
    if func not in _REBUILDERS:
        raise pickle.UnpicklingError(f"_rebuild_from_type_v2 with {func!r}")
    from ..nn.parameter import Parameter
    ret = func(*args)
    if new_type is Parameter and not ret._is_param:
        ret = Parameter(ret, ret.requires_grad)
    elif new_type is not _C.Tensor and new_type is not Parameter:
        raise pickle.UnpicklingError(f"a tensor of type {new_type!r}, which pygpu cannot make")
    _set_state(ret, state)
    return ret


def rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    return _set_requires_grad(data.to(device=device, dtype=dtype), requires_grad)


def rebuild_device_tensor_from_numpy(data, dtype, device, requires_grad):
    return _set_requires_grad(_C.from_numpy(data).to(device=device, dtype=dtype), requires_grad)


def get_layout(name):
    if name != "torch.strided":
        raise pickle.UnpicklingError(f"a tensor of layout {name}: pygpu loads strided (dense) "
                                     "tensors only")
    return name


def _unsupported(what):
    def refuse(*args, **kwargs):
        raise pickle.UnpicklingError(f"the checkpoint holds {what}, which pygpu cannot load")
    refuse.__name__ = f"refuse_{what.replace(' ', '_')}"
    return refuse


def _device_of(spec, index=None):
    d = _device(spec) if index is None else _device(f"{spec}:{index}")
    return d


def _encode(text, encoding="latin1"):
    if not isinstance(text, str) or not isinstance(encoding, str):
        raise pickle.UnpicklingError("_codecs.encode takes a str and an encoding name")
    return codecs.encode(text, encoding)


_REBUILDERS = {rebuild_tensor, rebuild_tensor_v2, rebuild_tensor_v3, rebuild_parameter,
               rebuild_parameter_with_state, rebuild_device_tensor_from_cpu_tensor}


def _allowed_globals():
    """PyTorch's weights-only allowlist (torch/_weights_only_unpickler.py,
    _get_allowed_globals), each name mapped to pygpu's object."""
    from ..nn.parameter import Parameter
    rc = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.serialization._get_layout": get_layout,
        "torch.Size": _C.Size,
        "torch.Tensor": _C.Tensor,
        "torch.device": _device_of,
        "_codecs.encode": _encode,
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch._utils._rebuild_tensor": rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild_parameter_with_state,
        "torch._utils._rebuild_device_tensor_from_cpu_tensor":
            rebuild_device_tensor_from_cpu_tensor,
        "torch._utils._rebuild_device_tensor_from_numpy": rebuild_device_tensor_from_numpy,
        "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
        "torch.storage.UntypedStorage": UNTYPED,
        "torch.UntypedStorage": UNTYPED,
    }
    rc["torch._utils._rebuild_qtensor"] = rebuild_qtensor
    for what, names in (("a sparse tensor", ["_rebuild_sparse_tensor"]),
                        ("a nested tensor", ["_rebuild_nested_tensor"]),
                        ("a meta tensor", ["_rebuild_meta_tensor_no_storage"]),
                        ("a tensor subclass", ["_rebuild_wrapper_subclass"])):
        for n in names:
            rc[f"torch._utils.{n}"] = _unsupported(what)
    from .._dtype import QDTYPES, QSCHEMES
    for name, scheme in QSCHEMES.items():
        rc[f"torch.{name}"] = scheme
    for row in TABLE:  # dtypes, under every spelling PyTorch has for them
        rc[f"torch.{row.name}"] = row.pygpu or MissingDType(row.name)
        if row.storage:
            rc[f"torch.{row.storage}"] = StorageType(row, row.storage)
    for alias, name in ALIASES.items():
        rc[f"torch.{alias}"] = rc[f"torch.{name}"]
    for n in ("QUInt4x2Storage", "QUInt2x4Storage"):  # (the 8- and 32-bit ones are rows)
        rc[f"torch.{n}"] = _unsupported("a sub-byte quantized storage")
    for name, qd in QDTYPES.items():
        rc[f"torch.{name}"] = qd
    for n in ("qint8", "quint8", "qint32", "quint4x2", "quint2x4", "float8_e5m2fnuz",
              "float8_e4m3fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "complex32", "bits8",
              "bits16", "bits1x8", "bits2x4", "bits4x2", *(f"uint{i}" for i in range(1, 8)),
              *(f"int{i}" for i in range(1, 8))):
        rc.setdefault(f"torch.{n}", MissingDType(n))
    return rc


_ALLOWED = None


def allowed_globals():
    global _ALLOWED
    if _ALLOWED is None:
        _ALLOWED = _allowed_globals()
    return _ALLOWED


STORAGE_BY_NAME = BY_STORAGE
