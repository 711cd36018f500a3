"""pygpu.save / pygpu.load for whole objects: modules, optimizers' states, any container.

The file is a small header (MAGIC) and a pickle stream in which every pygpu tensor is
written out of band through pickle's persistent ids: (dtype name, shape, the device it
was saved from, requires_grad, is-a-Parameter, its bytes). A tensor shared by two places
(tied weights) is written once and loads as one tensor. Loading puts each tensor on the
device it came from unless map_location says otherwise (the checkpoint.py rules).

load(weights_only=True), PyTorch 2.6's default, unpickles only containers and plain
values (dict, OrderedDict, list, tuple, set, numbers, strings, bytes, pygpu dtypes) and
tensors; any other class in the stream (a Module, a user's class, os.system) is refused
before it is made, with a message naming the class and the flag. weights_only=False
unpickles anything: only for files you trust, as with pickle itself."""
import collections
import io
import pickle

import numpy as np

from . import _C
from ._dtype import to_dtype
from ._map_location import check_present, resolve

MAGIC = b"PYGPU-PICKLE\x00\x01\n"

# (module, qualname) -> object: what the program allowed with
# torch.serialization.add_safe_globals (pygpu/serialization.py)
USER_SAFE = {}

_SAFE = {
    ("collections", "OrderedDict"), ("builtins", "dict"), ("builtins", "list"),
    ("builtins", "tuple"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "int"), ("builtins", "float"), ("builtins", "bool"), ("builtins", "str"),
    ("builtins", "bytes"), ("builtins", "bytearray"), ("builtins", "complex"),
    ("builtins", "slice"), ("builtins", "range"), ("pygpu._dtype", "to_dtype"),
    ("pygpu.nn._losses", "_DefaultIgnore"), ("pygpu", "Size"),
}


class _Pickler(pickle.Pickler):
    def __init__(self, f):
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self._seen = {}

    def persistent_id(self, obj):
        if not isinstance(obj, _C.Tensor):
            return None
        key = id(obj)
        if key in self._seen:
            return ("tensor_ref", self._seen[key])
        self._seen[key] = len(self._seen)
        dev = str(obj.device)
        host = obj if dev == "cpu" else obj.cpu()  # an explicit, counted d2h copy
        arr = np.ascontiguousarray(host.detach().numpy())
        return ("tensor", self._seen[key], obj.dtype.name, tuple(obj.shape), dev,
                bool(obj.requires_grad), bool(obj._is_param), arr.tobytes())


def _host_tensor(dtype_name, shape, raw):
    if dtype_name == "bfloat16":  # NumPy has no bfloat16: widen the bits exactly, round back
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        wide = _C.from_numpy(bits.view(np.float32).reshape(shape).copy())
        return wide.astype("bfloat16")
    np_dtype = to_dtype(dtype_name)._numpy
    return _C.from_numpy(np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy())


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, map_location, weights_only):
        super().__init__(f)
        self._map_location, self._weights_only = map_location, weights_only
        self._tensors = {}

    def find_class(self, module, name):
        if self._weights_only and (module, name) not in _SAFE and (module, name) not in USER_SAFE:
            raise pickle.UnpicklingError(
                f"pygpu.load: weights_only=True (the default, as in PyTorch 2.6) refuses to "
                f"unpickle {module}.{name}: unpickling an arbitrary class can run arbitrary "
                "code. If you trust this file, load it with weights_only=False; to need no "
                "trust, save model.state_dict() instead of the model (pygpu.save then writes "
                "a safetensors file).")
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if pid[0] == "tensor_ref":
            return self._tensors[pid[1]]
        if pid[0] != "tensor":
            raise pickle.UnpicklingError(f"pygpu.load: unknown persistent id {pid[0]!r}")
        _, key, dtype_name, shape, dev, requires_grad, is_param, raw = pid
        target = check_present(f"#{key}", resolve(dev, self._map_location),
                               self._map_location)
        t = _host_tensor(dtype_name, shape, raw)
        if target.type != "cpu":
            t = t.to(target)
        if is_param:
            from .nn.parameter import Parameter
            t = Parameter(t, requires_grad=requires_grad)
        elif requires_grad:
            t.requires_grad_(True)
        self._tensors[key] = t
        return t


def dumps(obj):
    buf = io.BytesIO()
    buf.write(MAGIC)
    _Pickler(buf).dump(obj)
    return buf.getvalue()


def loads(data, map_location=None, weights_only=True):
    f = io.BytesIO(data)
    f.read(len(MAGIC))
    return _Unpickler(f, map_location, weights_only).load()


_ = collections  # OrderedDict is unpickled by name (see _SAFE)
