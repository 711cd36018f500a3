"""The types a traced graph's Values carry (Value.type()), as TorchScript prints them.

A minimal set kept here for the traced IR: a tensor's type with what the trace saw (dtype,
sizes, strides, requires_grad, device: `Float(2, 3, strides=[3, 1], requires_grad=0,
device=cpu)`), the scalar types (int, float, bool, str, NoneType, Device), lists, tuples and
a module's class type (`__torch__.M`). The JIT's public type classes (torch.TensorType,
torch.IntType, ...) are another branch's (pygpu/jit/_types.py, issue 43): when it is merged,
Value.type() should return those; these keep the same method names (kind(), str(),
sizes(), scalarType(), ...) so the swap is local to this file."""
from .. import _C

Tensor = _C.Tensor

# pygpu dtype name -> TorchScript's scalar type name (c10's ScalarType spelling)
SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble"}
DTYPE_OF_SCALAR = {v: k for k, v in SCALAR_NAMES.items()}


class JitType:
    """A type as the IR text names it: kind() is the JIT's class name (TensorType, IntType,
    ...), str() its annotation (int, Tensor, Float(2, 3, ...))."""

    def __init__(self, kind, text):
        self._kind, self._text = kind, text

    def kind(self):
        return self._kind

    def str(self):
        return self._text

    def annotation_str(self):
        return self._text

    def __str__(self):
        return self._text

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, JitType) and str(self) == str(other)

    def __hash__(self):
        return hash(self._text)


class TensorType(JitType):
    """A tensor's type: complete (what a trace saw) or plain `Tensor`."""

    def __init__(self, dtype=None, sizes=None, strides=None, requires_grad=None, device=None):
        self._dtype, self._sizes, self._strides = dtype, sizes, strides
        self._requires_grad, self._device = requires_grad, device
        super().__init__("TensorType", self._render())

    @classmethod
    def of(cls, t):
        return cls(str(t.dtype).rsplit(".", 1)[-1], tuple(t.shape), tuple(t.stride()),
                   bool(t.requires_grad), str(t.device))

    def _render(self):
        if self._dtype is None:
            return "Tensor"
        parts = []
        if self._sizes is not None:
            parts += [str(s) for s in self._sizes]
            if self._sizes and self._strides is not None:
                parts.append("strides=[" + ", ".join(str(s) for s in self._strides) + "]")
        if self._requires_grad is not None:
            parts.append(f"requires_grad={int(self._requires_grad)}")
        if self._device is not None:
            parts.append(f"device={self._device}")
        return f"{SCALAR_NAMES.get(self._dtype, self._dtype)}({', '.join(parts)})"

    def sizes(self):
        return None if self._sizes is None else list(self._sizes)

    def strides(self):
        return None if self._strides is None else list(self._strides)

    def dim(self):
        return None if self._sizes is None else len(self._sizes)

    def scalarType(self):
        return None if self._dtype is None else SCALAR_NAMES.get(self._dtype, self._dtype)

    def dtype(self):
        from .. import _dtype
        return None if self._dtype is None else _dtype.dtype(self._dtype)

    def requires_grad(self):
        return self._requires_grad

    def device(self):
        return self._device

    def isComplete(self):
        return self._sizes is not None and self._strides is not None

    @staticmethod
    def get():
        return TensorType()


def simple(name):
    """int, float, bool, str, NoneType, Device, ... (their JIT class is <Name>Type)."""
    kind = {"int": "IntType", "float": "FloatType", "bool": "BoolType", "str": "StringType",
            "NoneType": "NoneType", "Device": "DeviceObjType", "complex": "ComplexType",
            "ScalarType": "IntType", "Any": "AnyType"}.get(name, "ClassType")
    return JitType(kind, name)


def list_of(elem):
    return JitType("ListType", f"{elem}[]")


def tuple_of(elems):
    return JitType("TupleType", "(" + ", ".join(str(e) for e in elems) + ")")


def of_value(v, complete=True, requires_grad=None):
    """The type of a Python value a trace saw (a constant, an input); requires_grad: what
    the graph says of the value when it differs from the traced tensor's flag."""
    if isinstance(v, Tensor):
        if not complete:
            return TensorType()
        t = TensorType.of(v)
        return t if requires_grad is None else TensorType(
            t._dtype, t._sizes, t._strides, requires_grad, t._device)
    if isinstance(v, bool):
        return simple("bool")
    if isinstance(v, int):
        return simple("int")
    if isinstance(v, float):
        return simple("float")
    if isinstance(v, complex):
        return simple("complex")
    if isinstance(v, str):
        return simple("str")
    if v is None:
        return simple("NoneType")
    if isinstance(v, list):
        inner = {str(of_value(x, False)) for x in v}
        return list_of(inner.pop() if len(inner) == 1 else "Any")
    if isinstance(v, tuple):
        return tuple_of([of_value(x, complete) for x in v])
    if type(v).__name__ == "device":
        return simple("Device")
    return simple(type(v).__name__)


def parse(text):
    """A type from its IR spelling (parse_ir): Tensor types keep their sizes and flags."""
    text = text.strip()
    if text.endswith("[]"):
        return list_of(parse(text[:-2]))
    head = text.split("(", 1)[0]
    if head in DTYPE_OF_SCALAR and text.endswith(")"):
        sizes, strides, req, dev = [], None, None, None
        for part in split_top(text[len(head) + 1:-1]):
            if part.startswith("strides="):
                strides = tuple(int(s) for s in part[9:-1].split(",") if s.strip())
            elif part.startswith("requires_grad="):
                req = bool(int(part.split("=")[1]))
            elif part.startswith("device="):
                dev = part.split("=", 1)[1]
            elif part:
                sizes.append(int(part))
        return TensorType(DTYPE_OF_SCALAR[head], tuple(sizes), strides, req, dev)
    if text == "Tensor":
        return TensorType()
    if text.startswith("(") and text.endswith(")"):
        return tuple_of([parse(p) for p in split_top(text[1:-1])])
    return simple(text)


def split_top(s, sep=","):
    """s split at its top-level separators: not inside [...], (...), {...} or a quoted string
    (types' texts here, and parse_ir's lines)."""
    out, depth, cur, quoted = [], 0, "", False
    for i, ch in enumerate(s):
        if ch == '"' and (i == 0 or s[i - 1] != "\\"):
            quoted = not quoted
        if not quoted:
            if ch in "[({":
                depth += 1
            elif ch in "])}":
                depth -= 1
        if ch == sep and depth == 0 and not quoted:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out
