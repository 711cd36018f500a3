"""Reading the pickle files pygpu wrote before it wrote PyTorch's format (issue 46).

Such a file is a small header (MAGIC) and a pickle stream in which every tensor is a
persistent id (dtype name, shape, the device it was saved from, requires_grad, is-a-Parameter,
its bytes). pygpu now writes PyTorch's zip format instead (_zip_format.py); this reader keeps
the old files loadable. weights_only=True refuses any class outside containers, plain values
and what torch.serialization.add_safe_globals allowed, before it is made."""
import io
import pickle

import numpy as np

from .. import _C
from .._dtype import to_dtype
from ._map_location import check_present, resolve
from ._weights_only import USER_SAFE, _refuse_message

MAGIC = b"PYGPU-PICKLE\x00\x01\n"

_SAFE = {
    ("collections", "OrderedDict"), ("builtins", "dict"), ("builtins", "list"),
    ("builtins", "tuple"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "int"), ("builtins", "float"), ("builtins", "bool"), ("builtins", "str"),
    ("builtins", "bytes"), ("builtins", "bytearray"), ("builtins", "complex"),
    ("builtins", "slice"), ("builtins", "range"), ("pygpu._dtype", "to_dtype"),
    ("pygpu.nn._losses", "_DefaultIgnore"), ("pygpu._ops._nn_losses", "_DefaultIgnore"),
    ("pygpu", "Size"),
}


def _host_tensor(dtype_name, shape, raw):
    if dtype_name == "bfloat16":  # NumPy has no bfloat16: widen the bits exactly, round back
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        wide = _C.from_numpy(bits.view(np.float32).reshape(shape).copy())
        return wide.astype("bfloat16")
    np_dtype = to_dtype(dtype_name)._numpy
    if np_dtype is None:  # float8: ml_dtypes' type
        from .._dtype import numpy_extra
        np_dtype = numpy_extra(dtype_name)
    return _C.from_numpy(np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy())


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, map_location, weights_only):
        super().__init__(f)
        self._map_location, self._weights_only = map_location, weights_only
        self._tensors = {}

    def find_class(self, module, name):
        if self._weights_only and (module, name) not in _SAFE and (module, name) not in USER_SAFE:
            raise pickle.UnpicklingError(_refuse_message(f"{module}.{name}"))
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if pid[0] == "tensor_ref":
            return self._tensors[pid[1]]
        if pid[0] != "tensor":
            raise pickle.UnpicklingError(f"pygpu.load: unknown persistent id {pid[0]!r}")
        _, key, dtype_name, shape, dev, requires_grad, is_param, raw = pid
        target = check_present(f"#{key}", resolve(dev, self._map_location), self._map_location)
        t = _host_tensor(dtype_name, shape, raw)
        if target.type != "cpu":
            t = t.to(target)
        if is_param:
            from ..nn.parameter import Parameter
            t = Parameter(t, requires_grad=requires_grad)
        elif requires_grad:
            t.requires_grad_(True)
        self._tensors[key] = t
        return t


def loads(data, map_location=None, weights_only=True):
    f = io.BytesIO(data)
    f.read(len(MAGIC))
    try:
        return _Unpickler(f, map_location, weights_only).load()
    except pickle.UnpicklingError:
        raise
    except (EOFError, IndexError, KeyError, ValueError, TypeError, struct_error()) as e:
        raise pickle.UnpicklingError(f"pygpu.load: the pickle is corrupt ({e})") from None


def struct_error():
    import struct
    return struct.error
