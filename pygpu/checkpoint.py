"""pygpu.save / pygpu.load: checkpoints in the safetensors format, and pickles of anything.

A dict of tensors and plain values (a state_dict, an optimizer's state, a training
checkpoint {"epoch": .., "model_state_dict": ..}) is written as safetensors, below.
Anything else (a whole Module, a list of modules, a dict holding objects JSON cannot
keep) is pickled with its tensors written out of band (_pickle_io.py): load() reads it
back only with weights_only=False, as PyTorch 2.6 does. load() tells the two formats
apart by the file's first bytes. `f` may be a path or a binary file object.

The extension decides what a path may hold: a `.safetensors` path gets safetensors or a
refusal naming the value that cannot be stored there (never a pickle that every
safetensors reader, and load() by default, would then reject); a pickle goes only to
other paths (`.pt`, `.pth`, ...).

The file is plain safetensors, written and parsed by the `safetensors`
package, so any safetensors reader (PyTorch's, NumPy's) opens what pygpu
writes and pygpu opens what they write. pygpu adds two metadata entries:
"pygpu.devices" (JSON: tensor name -> the device it was saved from) so that
load() puts each tensor back where it was, and, for nested states such as an
optimizer's, "pygpu.tree" (JSON: the dict/list structure, with tensors named
by their key in the file and other leaves kept as JSON values).

Writes are atomic: the bytes go to a temporary file in the destination's
directory, are fsync'ed, and os.replace() puts them under the final name, so
a crash leaves either the old checkpoint or the new one, never half of one.
A truncated or corrupt file raises ValueError before any tensor is made."""
import json
import numbers
import os
import struct
import tempfile

import numpy as np

from . import _C
from ._map_location import check_present as _check_present, resolve as _resolve

_DEVICES_KEY = "pygpu.devices"
_TREE_KEY = "pygpu.tree"
_ORDER_KEY = "pygpu.order"
_LEAF_TYPES = (str, bool, numbers.Integral, numbers.Real, type(None))


# ---- saving -------------------------------------------------------------------------------

def _flatten(state):
    """(tensors: name -> Tensor/ndarray, tree or None). A flat dict of tensors has no tree."""
    if isinstance(state, dict) and all(isinstance(k, str) for k in state) and \
            all(isinstance(v, (_C.Tensor, np.ndarray)) or _is_qstate(v) for v in state.values()):
        return dict(state), None
    tensors = {}

    def walk(obj, path):
        if isinstance(obj, (_C.Tensor, np.ndarray)) or _is_qstate(obj):
            name = ".".join(path) or "tensor"
            while name in tensors:
                name += "_"
            tensors[name] = obj
            return {"__tensor__": name}
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not isinstance(k, (str, numbers.Integral)) or isinstance(k, bool):
                    raise TypeError(f"pygpu.save: dict keys must be str or int, got {k!r}")
                items.append([k if isinstance(k, str) else int(k), walk(v, path + [str(k)])])
            return {"__dict__": items}
        if isinstance(obj, (list, tuple)):
            return {"__list__": [walk(v, path + [str(i)]) for i, v in enumerate(obj)],
                    "tuple": isinstance(obj, tuple)}
        if isinstance(obj, _LEAF_TYPES):
            return {"__value__": obj.item() if isinstance(obj, np.generic) else obj}
        raise TypeError(f"pygpu.save: cannot store a value of type {type(obj).__name__!r} at "
                        f"{'.'.join(path) or 'the top level'}; a checkpoint holds tensors, "
                        "numbers, strings and dicts/lists of them")

    return tensors, walk(state, [])


def _is_qstate(v):
    """An int8 layer's weight or scalar qparam (pygpu/quantization/_qtensor.py): saved as the
    NumPy array its numpy() gives (int8 for weights: pygpu has no int8 tensor dtype)."""
    return getattr(v, "_qstate", False) is True


def _host_array(name, t):
    if _is_qstate(t):
        return np.ascontiguousarray(t.numpy()), str(t.device)
    if isinstance(t, np.ndarray):
        return np.ascontiguousarray(t), "cpu"
    dev = str(t.device)
    t = t.detach()  # a parameter's values (numpy() refuses a tensor that requires grad)
    arr = t.numpy() if dev == "cpu" else t.cpu().numpy()  # an explicit, counted d2h copy
    return np.ascontiguousarray(arr), dev


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # some platforms cannot open a directory; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write(data, f):
    """Bytes to a binary file object, or atomically to a path."""
    if hasattr(f, "write"):
        f.write(data)
        return
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)


def save(obj, f, metadata=None, pickle_module=None, pickle_protocol=None,
         _use_new_zipfile_serialization=True):
    """Write `obj` to `f` (a path, written atomically, or a binary file object).

    A dict of tensors, numbers, strings and nested dicts/lists (a state_dict, an
    optimizer's state_dict, a checkpoint dict of those) is written as safetensors, which
    any safetensors reader opens and load() reads with weights_only=True. Anything else
    (a Module, other objects) is pickled, tensors included; load() then needs
    weights_only=False. `metadata`: extra str -> str entries for a safetensors header."""
    if pickle_module is not None:
        raise NotImplementedError("pygpu.save: pickle_module is not supported")
    if _is_safetensors_path(f):  # decided by the extension: safetensors, or a refusal
        name = os.fspath(f) if not hasattr(f, "write") else f.name
        if not isinstance(obj, dict):
            raise TypeError(f"pygpu.save: {name} is a .safetensors path, which holds a dict of "
                            f"tensors (and numbers, strings, lists and dicts of them), not a "
                            f"{type(obj).__name__}; save its state_dict() there, or save it "
                            "to a .pt path (a pickle, loaded with weights_only=False)")
        try:
            data = _safetensors_bytes(obj, metadata)
        except TypeError as e:
            raise TypeError(f"{e}. {name} is a .safetensors path: store plain values there, or "
                            "save to a .pt path (a pickle, loaded with weights_only=False)") from None
        _write(data, f)  # nothing was written before this: a refusal leaves the old file
        return
    if isinstance(obj, dict):
        try:
            data = _safetensors_bytes(obj, metadata)
        except TypeError:
            if metadata:
                raise
            data = None
        if data is not None:
            _write(data, f)
            return
    from ._pickle_io import dumps
    _write(dumps(obj), f)


def _is_safetensors_path(f):
    """Whether `f` (a path, or a file object opened from one) names a .safetensors file."""
    name = getattr(f, "name", None) if hasattr(f, "write") else f
    try:
        name = os.fspath(name)
    except TypeError:
        return False  # a buffer (io.BytesIO) or a file descriptor: no extension to go by
    return isinstance(name, str) and name.lower().endswith(".safetensors")


def _safetensors_bytes(state, metadata):
    tensors, tree = _flatten(state)
    arrays, devices = {}, {}
    for name, t in tensors.items():
        arrays[name], devices[name] = _host_array(name, t)
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    meta[_DEVICES_KEY] = json.dumps(devices)
    if tree is not None:
        meta[_TREE_KEY] = json.dumps(tree)
    else:
        meta[_ORDER_KEY] = json.dumps(list(tensors))  # safetensors sorts names; keep the order
    from safetensors.numpy import save as st_save
    return st_save(arrays, metadata=meta)


# ---- loading ------------------------------------------------------------------------------

def _read_checked(path, data):
    """The file's bytes and its header, or ValueError if it is not a whole safetensors file."""
    bad = f"pygpu.load: {path} is not a valid safetensors checkpoint"
    if len(data) < 8:
        raise ValueError(f"{bad}: the file is {len(data)} bytes long (truncated?)")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError(f"{bad}: its header claims {n} bytes but the file has {len(data) - 8} "
                         "after the length field (truncated?)")
    try:
        header = json.loads(data[8:8 + n])
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{bad}: its header is not valid JSON ({e}); the file is corrupt") from None
    if not isinstance(header, dict):
        raise ValueError(f"{bad}: its header is not a JSON object; the file is corrupt")
    end = max([v["data_offsets"][1] for k, v in header.items()
               if k != "__metadata__" and isinstance(v, dict) and "data_offsets" in v] or [0])
    if 8 + n + end > len(data):
        raise ValueError(f"{bad}: its tensors need {end} bytes of data but only "
                         f"{len(data) - 8 - n} are there (truncated?)")
    return data, header


_RAW_TYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
              "BOOL": np.bool_, "I8": np.int8}


def _has_bf16(header):
    return any(isinstance(v, dict) and v.get("dtype") == "BF16"
               for k, v in header.items() if k != "__metadata__")


def _load_with_bf16(data, header, path):
    """name -> array (or bfloat16 cpu Tensor) for a file holding BF16 tensors, which
    safetensors.numpy cannot decode (NumPy has no bfloat16). The BF16 bits are widened
    to float32 exactly and rounded back exactly, so no ml_dtypes is needed to load."""
    (n,) = struct.unpack("<Q", data[:8])
    base = 8 + n
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        start, end = v["data_offsets"]
        shape = tuple(v["shape"])
        raw = data[base + start:base + end]
        if v["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            wide = _C.from_numpy(bits.view(np.float32).reshape(shape).copy())
            out[name] = wide.astype("bfloat16")
        elif v["dtype"] in _RAW_TYPES:
            out[name] = np.frombuffer(raw, dtype=_RAW_TYPES[v["dtype"]]).reshape(shape)
        else:
            raise ValueError(f"tensor {name!r} has dtype {v['dtype']}, which pygpu does not hold "
                             "(float32, float64, float16, bfloat16, int64, bool)")
    return out


def _unflatten(node, tensors):
    if "__tensor__" in node:
        return tensors[node["__tensor__"]]
    if "__dict__" in node:
        return {k: _unflatten(v, tensors) for k, v in node["__dict__"]}
    if "__list__" in node:
        items = [_unflatten(v, tensors) for v in node["__list__"]]
        return tuple(items) if node.get("tuple") else items
    return node["__value__"]


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Read what pygpu.save wrote (or any safetensors file) from a path or binary file.
    Each tensor goes back to the device it was saved from (cpu for files without
    pygpu's metadata) unless map_location says otherwise: a device ("cpu",
    "sim:0", pygpu.device(...)), a dict {saved device: target} or a callable.
    weights_only=True (PyTorch 2.6's default) refuses a pickled object that is more than
    containers, plain values and tensors (a whole Module, say), naming the flag; pass
    weights_only=False only for files you trust. A safetensors file is always safe."""
    if hasattr(f, "read"):
        data = f.read()
        path = getattr(f, "name", "<file object>")
    else:
        path = os.fspath(f)
        with open(path, "rb") as fh:
            data = fh.read()
    from . import _pickle_io
    if data.startswith(_pickle_io.MAGIC):
        return _pickle_io.loads(data, map_location, weights_only)
    # a safetensors file opens with its header's length (8 bytes, little-endian) and then the
    # JSON header's "{": that length's first byte may be 0x80 or "PK", so it is asked first
    safetensors_like = len(data) > 8 and data[8:9] == b"{"
    if not safetensors_like and (data[:2] == b"PK" or data[:1] == b"\x80"):
        raise ValueError(f"pygpu.load: {path} looks like a file written by torch.save (a zip "
                         "or pickle archive), which pygpu does not read; save a state_dict "
                         "with safetensors (safetensors.torch.save_file) and load that")
    data, header = _read_checked(path, data)
    meta = header.get("__metadata__") or {}
    try:
        devices = json.loads(meta.get(_DEVICES_KEY, "{}"))
        tree = json.loads(meta[_TREE_KEY]) if _TREE_KEY in meta else None
    except ValueError as e:
        raise ValueError(f"pygpu.load: {path} has corrupt pygpu metadata ({e})") from None
    from safetensors import SafetensorError
    from safetensors.numpy import load as st_load
    try:
        arrays = _load_with_bf16(data, header, path) if _has_bf16(header) else st_load(data)
    except (SafetensorError, ValueError, TypeError) as e:
        raise ValueError(f"pygpu.load: {path} is not a valid safetensors checkpoint: {e}") from None
    # Resolve and check every target before making any tensor: all or nothing.
    targets = {}
    for name in arrays:
        targets[name] = _check_present(name, _resolve(devices.get(name, "cpu"), map_location),
                                       map_location)
    tensors = {}
    for name, arr in arrays.items():
        if isinstance(arr, np.ndarray) and arr.dtype == np.int8 and arr.ndim == 2:
            from .quantization import QTensor  # an int8 layer's weight, packed once here
            tensors[name] = QTensor.from_int8(arr, None if targets[name].type == "cpu"
                                              else targets[name])
            continue
        host = arr if isinstance(arr, _C.Tensor) else \
            _C.from_numpy(np.array(arr, copy=True))  # own the bytes, not the file buffer
        tensors[name] = host if targets[name].type == "cpu" else host.to(targets[name])
    if tree is not None:
        return _unflatten(tree, tensors)
    try:
        order = json.loads(meta.get(_ORDER_KEY, "[]"))
    except ValueError:
        order = []
    if sorted(order) == sorted(tensors):
        from collections import OrderedDict
        return OrderedDict((k, tensors[k]) for k in order)  # as a state_dict was saved
    return tensors
