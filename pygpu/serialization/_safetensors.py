"""safetensors files, written and read by the `safetensors` library for every dtype it has.

safetensors.serialize / deserialize take and give raw bytes with the library's dtype codes,
so every dtype of the table (_dtypes.py) goes through the library, bfloat16 included, and the
library validates every header (shapes, dtypes, offsets that must tile the data exactly):
a file it rejects raises ValueError here, before any tensor is made.

pygpu adds metadata entries to the header: "pygpu.devices" (JSON: tensor name -> the
device it was saved from) so that load() puts each tensor back where it was; for nested
states such as an optimizer's, "pygpu.tree" (JSON: the dict/list structure, tensors named
by their key in the file, other leaves kept as JSON values); for a flat state_dict,
"pygpu.order" (the names in the dict's order; safetensors sorts them); "pygpu.qstate" (the
names of the int8 layers' packed weights, which load as those layers' QTensors while every
other int8 tensor loads as an int8 tensor). Corrupt metadata of any kind is a ValueError
naming the entry."""
import json
import numbers
import struct

import numpy as np

from .. import _C
from .._device import device as _device
from ._map_location import check_present, resolve
from ._dtypes import BY_SAFETENSORS
from ._host import from_buffer, to_bytes
from ._torch_pickler import _is_qstate, _row_of_array

DEVICES_KEY = "pygpu.devices"
TREE_KEY = "pygpu.tree"
ORDER_KEY = "pygpu.order"
QSTATE_KEY = "pygpu.qstate"
_LEAF_TYPES = (str, bool, numbers.Integral, numbers.Real, type(None))
_MAX_DEPTH = 200


def is_safetensors(head):
    """A safetensors file opens with its header's length (8 bytes, little-endian) and then
    the JSON header's "{" (that length's first byte may be 0x80 or "PK", so ask this first)."""
    return len(head) > 8 and head[8:9] == b"{"


# ---- saving -------------------------------------------------------------------------------

def flatten(state):
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


def _entry(t):
    """(the tensor's bytes as a NumPy array, its dtype row, shape, the device it came from)."""
    if _is_qstate(t) or isinstance(t, np.ndarray):
        arr = np.ascontiguousarray(t.numpy() if _is_qstate(t) else t)
        row = _row_of_array(arr)
        dev = "cpu" if isinstance(t, np.ndarray) else str(t.device)
        data, shape = arr.astype(row.numpy, copy=False), arr.shape
    else:
        (row, data), shape, dev = to_bytes(t), tuple(t.shape), str(t.device)
    if row.safetensors is None:
        raise TypeError(f"pygpu.save: safetensors has no dtype {row.name}")
    return np.ascontiguousarray(data), row, shape, dev


def to_bytes_file(state, metadata):
    import safetensors
    tensors, tree = flatten(state)
    specs, devices, keep = {}, {}, []
    for name, t in tensors.items():
        data, row, shape, devices[name] = _entry(t)
        keep.append(data)  # the library reads the bytes through this pointer: keep them alive
        specs[name] = safetensors.TensorSpec(dtype=row.name, shape=list(shape),
                                             data_ptr=data.ctypes.data, data_len=data.nbytes)
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    meta[DEVICES_KEY] = json.dumps(devices)
    meta[QSTATE_KEY] = json.dumps(sorted(n for n, t in tensors.items() if _is_qstate(t) and
                                         len(getattr(t, "shape", ())) == 2))
    if tree is not None:
        meta[TREE_KEY] = json.dumps(tree)
    else:
        meta[ORDER_KEY] = json.dumps(list(tensors))  # safetensors sorts names; keep the order
    out = bytes(safetensors.serialize(specs, metadata=meta))
    del keep
    return out


# ---- loading ------------------------------------------------------------------------------

class CorruptMetadata(ValueError):
    pass


def _metadata(data):
    """The header's __metadata__ (the library has validated the header before this)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.get("__metadata__") or {}
    return meta


def _json_entry(meta, key, kind, default):
    if key not in meta:
        return default
    try:
        value = json.loads(meta[key])
    except (ValueError, RecursionError) as e:
        raise CorruptMetadata(f"its {key!r} metadata is not valid JSON ({e})") from None
    if not isinstance(value, kind):
        raise CorruptMetadata(f"its {key!r} metadata is a {type(value).__name__}, not a "
                              f"{kind.__name__}")
    return value


def _unflatten(node, tensors, depth=0):
    if depth > _MAX_DEPTH:
        raise CorruptMetadata(f"its {TREE_KEY!r} nests deeper than {_MAX_DEPTH} levels")
    if not isinstance(node, dict) or len(node) not in (1, 2):
        raise CorruptMetadata(f"its {TREE_KEY!r} has a node {node!r:.60} of no known kind")
    if "__tensor__" in node:
        name = node["__tensor__"]
        if not isinstance(name, str) or name not in tensors:
            raise CorruptMetadata(f"its {TREE_KEY!r} names a tensor {name!r:.60} the file lacks")
        return tensors[name]
    if "__dict__" in node:
        items = node["__dict__"]
        if not isinstance(items, list) or not all(
                isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], (str, int))
                for kv in items):
            raise CorruptMetadata(f"its {TREE_KEY!r} has a malformed dict node")
        return {k: _unflatten(v, tensors, depth + 1) for k, v in items}
    if "__list__" in node:
        items = node["__list__"]
        if not isinstance(items, list):
            raise CorruptMetadata(f"its {TREE_KEY!r} has a malformed list node")
        out = [_unflatten(v, tensors, depth + 1) for v in items]
        return tuple(out) if node.get("tuple") else out
    if "__value__" in node:
        value = node["__value__"]
        if not isinstance(value, _LEAF_TYPES):
            raise CorruptMetadata(f"its {TREE_KEY!r} holds a value {value!r:.60} that is not a "
                                  "number, string, bool or null")
        return value
    raise CorruptMetadata(f"its {TREE_KEY!r} has a node {node!r:.60} of no known kind")


def _packed_names(meta):
    """The names of the int8 layers' weights: listed under QSTATE_KEY; a pygpu file from before
    int8 was a tensor dtype lists none, and each of its 2-D int8 tensors was one (None: every
    2-D int8 tensor); a file pygpu did not write has none."""
    if QSTATE_KEY in meta:
        names = _json_entry(meta, QSTATE_KEY, list, [])
        if not all(isinstance(n, str) for n in names):
            raise CorruptMetadata(f"its {QSTATE_KEY!r} metadata is not a list of names")
        return set(names)
    return None if DEVICES_KEY in meta else set()


def _host_value(name, row, shape, raw, target, packed):
    if row.name == "int8" and len(shape) == 2 and (packed is None or name in packed):
        from ..quantization import QTensor  # an int8 layer's weight, packed once here
        return QTensor.from_int8(np.frombuffer(raw, np.int8).reshape(shape).copy(),
                                 None if target.type == "cpu" else target)
    count = 1
    for n in shape:
        count *= n
    try:
        t = from_buffer(row, raw, count)
    except TypeError as e:
        raise ValueError(f"tensor {name!r}: {e}") from None
    return t.reshape(tuple(shape))


def load_bytes(data, path, map_location):
    import safetensors
    bad = f"pygpu.load: {path} is not a valid safetensors checkpoint (truncated or corrupt)"
    try:
        entries = safetensors.deserialize(bytes(data) if not isinstance(data, bytes) else data)
    except Exception as e:  # SafetensorError and the library's other refusals
        raise ValueError(f"{bad}: {e}") from None
    try:
        meta = _metadata(data)
        devices = _json_entry(meta, DEVICES_KEY, dict, {})
        tree = _json_entry(meta, TREE_KEY, dict, None)
        order = _json_entry(meta, ORDER_KEY, list, [])
        packed = _packed_names(meta)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in devices.items()):
            raise CorruptMetadata(f"its {DEVICES_KEY!r} metadata is not a map of names to "
                                  "device strings")
    except CorruptMetadata as e:
        raise ValueError(f"pygpu.load: {path} has corrupt pygpu metadata: {e}") from None
    specs = {}
    for name, spec in entries:
        row = BY_SAFETENSORS.get(spec["dtype"])
        if row is None:
            raise ValueError(f"{bad}: tensor {name!r} has dtype {spec['dtype']}, which pygpu does "
                             "not read")
        specs[name] = (row, tuple(spec["shape"]), spec["data"])
    targets = {}  # every target resolved and checked before any tensor is made: all or nothing
    for name in specs:
        saved = devices.get(name, "cpu")
        try:
            _device(saved)
        except (ValueError, TypeError, RuntimeError) as e:
            raise ValueError(f"pygpu.load: {path} has corrupt pygpu metadata: the device of "
                             f"{name!r} is {saved!r} ({e})") from None
        targets[name] = check_present(name, resolve(saved, map_location), map_location)
    tensors = {}
    for name, (row, shape, raw) in specs.items():
        tgt = targets[name]
        host = _host_value(name, row, shape, raw, tgt, packed)
        tensors[name] = host if tgt.type == "cpu" or not isinstance(host, _C.Tensor) \
            else host.to(tgt)
    if tree is not None:
        try:
            return _unflatten(tree, tensors)
        except CorruptMetadata as e:
            raise ValueError(f"pygpu.load: {path} has corrupt pygpu metadata: {e}") from None
    if all(isinstance(k, str) for k in order) and sorted(order) == sorted(tensors):
        from collections import OrderedDict
        return OrderedDict((k, tensors[k]) for k in order)  # as a state_dict was saved
    return tensors

