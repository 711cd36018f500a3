"""The ONNX graph being built from a trace: value names, nodes, weights and constants.

Each traced tensor has a value name; a tensor an op uses that no traced op made is an
initializer: a parameter or buffer under its name in the model (model.named_parameters()),
anything else a constant, remembered so that export can check that it did not depend on the
inputs. Weights keep their dtype (float64 models export as DOUBLE)."""
import numpy as np

from .. import _C

_ELEM = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "FLOAT16", "bfloat16": "BFLOAT16",
         "int64": "INT64", "int32": "INT32", "int16": "INT16", "int8": "INT8", "uint8": "UINT8",
         "bool": "BOOL", "complex64": "COMPLEX64", "complex128": "COMPLEX128"}


def elem_type(onnx, dtype):
    return getattr(onnx.TensorProto, _ELEM[dtype.name])


def host_array(t):
    """(NumPy array, dtype name) of a tensor's values; bfloat16 as float32 (converted back by
    the initializer's proto)."""
    t = t.detach()
    if str(t.device) != "cpu":
        t = t.cpu()
    if t.dtype.name == "bfloat16":
        return np.ascontiguousarray(t.float().numpy()), "bfloat16"
    return np.ascontiguousarray(t.numpy()), t.dtype.name


def view_positions(t):
    """The storage position of each element of view t, in t's order."""
    idx = np.full(tuple(t.shape), t.storage_offset(), dtype=np.int64)
    for d, (n, s) in enumerate(zip(t.shape, t.stride())):
        shape = [1] * t.ndim
        shape[d] = n
        idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return idx



class Graph:
    def __init__(self, onnx, opset, param_names, dynamic=None):
        self.onnx, self.opset = onnx, opset
        self.nodes, self.initializers, self.names = [], [], {}
        self.param_names = param_names  # id(parameter or buffer) -> its name in the model
        self.constants = []  # (name, array) of the initializers that are not parameters
        # id(tensor) -> its shape in export's run on grown inputs, where that differs
        self._other = dynamic or {}
        self.seen = []  # the traced tensors with value names, in the order they were made
        self._count = 0
        self._used = set()

    def dynamic(self, t):
        """The axes of t whose size changed with the inputs' dynamic axes (export's second
        run); empty when nothing is dynamic."""
        other = self._other.get(id(t))
        if other is None:
            return frozenset()
        return frozenset(i for i, (m, n) in enumerate(zip(t.shape, other)) if m != n)

    def size_source(self, a, b):
        """(value name, axis) of a traced tensor whose size is `a` in this run and `b` in the
        other: where a shape computed at run time takes a size that follows the inputs."""
        for t in reversed(self.seen):
            other = self._other.get(id(t))
            if other is None:
                continue
            for j, (m, n) in enumerate(zip(t.shape, other)):
                if m == a and n == b:
                    return self.names[id(t)], j
        return None

    def other_shape(self, t):
        return self._other.get(id(t), tuple(t.shape))

    def fresh(self, hint):
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op, inputs, outputs, **attrs):
        self.nodes.append(self.onnx.helper.make_node(op, list(inputs), list(outputs),
                                                     name=self.fresh(op), **attrs))

    def _initializer(self, arr, name, dtype_name, param=False):
        if not param:
            self.constants.append((name, np.array(arr)))
        if dtype_name == "bfloat16":
            bits = (arr.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
            proto = self.onnx.helper.make_tensor(name, self.onnx.TensorProto.BFLOAT16,
                                                 arr.shape, bits.tobytes(), raw=True)
        else:
            proto = self.onnx.numpy_helper.from_array(arr, name)
        self.initializers.append(proto)

    def value(self, t):
        """The value name of tensor t: traced, a parameter, or a constant made now."""
        key = id(t)
        if key in self.names:
            return self.names[key]
        if key not in self.param_names:
            base = self._view_base(t)
            if base is not None:  # a view made where no op was recorded (C's fast paths)
                name = self.fresh("view")
                self._derive_view(base, t, name)
                self.names[key] = name
                return name
        arr, dtype = host_array(t)
        param = key in self.param_names
        if param:
            name = self.param_names[key]
            if name in self._used:
                name = self.fresh(name)
        else:
            name = self.fresh("const")
        self._used.add(name)
        self._initializer(arr, name, dtype, param)
        self.names[key] = name
        return name

    def _view_base(self, t):
        """A traced tensor whose storage t views (None if none)."""
        for b in reversed(self.seen):
            if b is not t and b.device == t.device and _C._same_storage(b, t):
                return b
        return None

    def _derive_view(self, base, t, name):
        """t from base: a reshape when t is base's elements in order, else a gather of base's
        flattened elements at t's positions."""
        if t.numel() == base.numel() and t.is_contiguous() and base.is_contiguous() and \
                t.storage_offset() == base.storage_offset():
            target = [0 if i < base.ndim and i in self.dynamic(base) and
                      base.shape[i] == n else n for i, n in enumerate(t.shape)]
            self.node("Reshape", [self.names[id(base)], self.const(target, "shape")], [name])
            return
        if self.dynamic(base):
            raise NotImplementedError("onnx.export: a view of a tensor whose sizes follow the "
                                      "dynamic axes, made where no op was recorded")
        where = {int(p): i for i, p in enumerate(view_positions(base).reshape(-1))}
        idx = np.vectorize(lambda p: where[int(p)], otypes=[np.int64])(view_positions(t))
        flat = self.fresh("flat")
        self.node("Reshape", [self.names[id(base)], self.const([-1], "shape")], [flat])
        self.node("Gather", [flat, self.const(idx.reshape(tuple(t.shape)), "indices")], [name],
                  axis=0)

    def weight(self, tensor, hint):
        """A module converter's weight (the module's parameter: its own name when known)."""
        return self.value(tensor)

    def const(self, values, hint, dtype="int64"):
        name = self.fresh(hint)
        self._initializer(np.asarray(values, dtype), name, dtype)
        return name

    def scalar(self, value, like):
        """A constant holding Python number `value` in the dtype of tensor `like`."""
        dtype = like.dtype.name
        np_dtype = "float32" if dtype == "bfloat16" else dtype
        if dtype == "bool":
            np_dtype = "bool"
        name = self.fresh("scalar")
        self._initializer(np.asarray(value, np_dtype), name, dtype)
        return name

    def operand(self, x, like):
        """The value name of an op's operand: a tensor, or a Python scalar in like's dtype."""
        if isinstance(x, _C.Tensor):
            return self.value(x)
        return self.scalar(x, like)
