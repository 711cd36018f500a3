"""TorchScript's type system as PyTorch's JIT has it (c10's jit_type.h, union_type.cpp,
type.cpp), in Python: the objects torch.IntType.get(), torch.ListType(t),
torch.TensorType.create_from_tensor(x), ... are, with their printing (str() is c10's
operator<<, str(t) and repr(t) its annotation_str), kind(), equality (and, as in PyTorch, no
hash), isSubtypeOf, containedTypes, the Union/Optional normal form (flattened, duplicates
unified, sorted by kind then name; Optional[T] is a Union of T and None) and unify_type_list.

pygpu has no TorchScript compiler; these are the values its Graph/Value objects (pygpu.jit's
tracer) and operator schemas (_schema.py) are typed with. A TensorType records what a traced
tensor was: dtype, sizes, strides, device and requires_grad, each possibly unknown.

The kinds, in c10's TypeKind order (a Union's members sort by it), are one table (_KINDS);
each class names its kind and how it prints. What torch raises an internal assertion for
(a tensor query on an int type, a Union of one type) raises RuntimeError here too."""
import itertools

__all__ = ["Type", "TensorType", "IntType", "FloatType", "ComplexType", "BoolType",
           "StringType", "NoneType", "NumberType", "DeviceObjType", "StreamObjType", "AnyType",
           "SymIntType", "SymBoolType", "PyObjectType", "ListType", "OptionalType", "TupleType",
           "DictType", "UnionType", "FutureType", "AwaitType", "RRefType", "EnumType",
           "InferredType", "unify_type_list"]

# c10's C10_FORALL_TYPES, in order: a Union's members are sorted by this position
_KINDS = ("AnyType", "EnumType", "AnyEnumType", "TensorType", "StorageType", "TupleType",
          "ListType", "DictType", "NumberType", "FloatType", "ComplexType", "FutureType",
          "AwaitType", "RRefType", "IntType", "NoneType", "StringType", "GeneratorType",
          "QuantizerType", "BoolType", "OptionalType", "VarType", "DeviceObjType",
          "StreamObjType", "FunctionType", "ClassType", "PyObjectType", "CapsuleType",
          "InterfaceType", "QSchemeType", "ScalarTypeType", "LayoutType", "MemoryFormatType",
          "AnyListType", "AnyTupleType", "AnyClassType", "SymIntType", "SymFloatType",
          "SymBoolType", "UnionType", "DynamicType")
_KIND_ORDER = {k: i for i, k in enumerate(_KINDS)}

_TENSOR_QUERIES = ("dim", "sizes", "strides", "dtype", "scalarType", "device", "contiguous",
                   "undefined", "varyingSizes", "symbolic_sizes")


def _not_a_tensor_type(name):
    def query(self, *args):
        raise RuntimeError(f"{name}() is a query of a TensorType; this type is "
                           f"{self.annotation_str} ({self._kind})")
    query.__name__ = name
    query.__doc__ = f"A TensorType's {name}(): RuntimeError on any other type, as in PyTorch."
    return query


def _check_type(obj, what):
    if not isinstance(obj, Type):
        raise TypeError(f"{what}(): incompatible function arguments: expected a "
                        f"pygpu.Type, got {type(obj).__name__}")
    return obj


class Type:
    """A TorchScript type (torch.Type): the base of every kind below."""
    _kind = None
    __hash__ = None            # PyTorch's types define == and are not hashable

    # -- what a kind overrides ------------------------------------------------------------
    def _str(self):
        """c10's Type::str()."""
        raise NotImplementedError

    def _annotation(self):
        """c10's annotation_str: the Python spelling (List[int], Optional[Tensor])."""
        return self._str()

    def _stream(self):
        """c10's operator<<: the verbose form that Graph printing uses."""
        return self._str()

    def _equals(self, other):
        return other._kind == self._kind

    def _subtype_ext(self, rhs):
        """c10's Type::isSubtypeOfExt: Any, equal, or a member of an Optional/Union."""
        if rhs._kind == "AnyType" or self == rhs:
            return True
        if isinstance(rhs, OptionalType):
            return self._subtype_ext(rhs._elem)
        if isinstance(rhs, UnionType):
            return any(self._subtype_ext(t) for t in rhs._types)
        return False

    # -- torch.Type's methods ---------------------------------------------------------------
    def kind(self):
        """The kind's name: "IntType", "ListType", ..."""
        return self._kind

    def str(self):
        """The verbose form: Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)."""
        return self._stream()

    @property
    def annotation_str(self):
        """The Python annotation: List[int], Optional[Tensor], Dict[str, Tensor]."""
        return self._annotation()

    def __str__(self):
        return self._annotation()

    __repr__ = __str__

    def containedTypes(self):
        """The types this one is made of (a List's element, a Tuple's elements ...)."""
        return []

    def isSubtypeOf(self, other):
        """Whether a value of this type may be used where `other` is expected."""
        return self._subtype_ext(_check_type(other, "isSubtypeOf"))

    def requires_grad(self):
        """Whether a value of this type can hold a tensor that requires grad."""
        return any(t.requires_grad() for t in self.containedTypes())

    def is_interface_type(self):
        return False

    def __eq__(self, other):
        return self._equals(_check_type(other, "__eq__"))

    def __ne__(self, other):
        return not self.__eq__(other)



# a tensor query on any kind but TensorType raises, as PyTorch's expect<TensorType>() does
for _query in _TENSOR_QUERIES + ("with_dtype", "with_sizes", "with_device"):
    setattr(Type, _query, _not_a_tensor_type(_query))
del _query


class _SingletonType(Type):
    """A kind with one value, Kind.get(); it prints as its name."""
    _name = _annotation_name = None
    _instance = None

    def __new__(cls):
        if cls.__dict__.get("_instance") is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @classmethod
    def get(cls):
        """The one value of this kind."""
        return cls()

    def _str(self):
        return self._name

    def _annotation(self):
        return self._annotation_name or self._name


def _singleton(kind, name, annotation=None, doc="", number=False):
    """A singleton kind; `number`: a subtype of NumberType too (int, float, complex). None
    is a subtype of every Optional."""
    def subtype(self, rhs):
        return (number and rhs._kind == "NumberType") or \
            (kind == "NoneType" and rhs._kind == "OptionalType") or Type._subtype_ext(self, rhs)
    cls = type(kind, (_SingletonType,), {"_kind": kind, "_name": name,
                                         "_annotation_name": annotation,
                                         "_subtype_ext": subtype, "__doc__": doc,
                                         "__module__": __name__})
    return cls


# kind, str(), annotation_str when it differs, what its values are, whether it is a number
_SINGLETONS = (
    ("IntType", "int", None, "Python's int (a 64-bit integer in TorchScript).", True),
    ("FloatType", "float", None, "Python's float (a double).", True),
    ("ComplexType", "complex", None, "Python's complex.", True),
    ("BoolType", "bool", None, "Python's bool.", False),
    ("StringType", "str", None, "Python's str.", False),
    ("NoneType", "NoneType", None, "The type of None.", False),
    ("DeviceObjType", "Device", None, "A device (torch.device).", False),
    ("StreamObjType", "Stream", None, "A stream.", False),
    ("AnyType", "Any", None, "Any value: every type is a subtype of Any.", False),
    ("PyObjectType", "PyObject", None, "An opaque Python object.", False),
    ("SymIntType", "SymInt", "int", "A symbolic int (an int in annotations).", False),
    ("SymFloatType", "SymFloat", "float", "A symbolic float.", False),
    ("SymBoolType", "SymBool", "bool", "A symbolic bool.", False),
    # the kinds operator schemas name (an argument of type ScalarType, Layout or
    # MemoryFormat is an int in Python: its Argument.type is int, its real_type this)
    ("GeneratorType", "Generator", None, "A random number generator.", False),
    ("StorageType", "Storage", None, "A tensor's storage.", False),
    ("QuantizerType", "Quantizer", None, "A quantized tensor's quantizer.", False),
    ("QSchemeType", "QScheme", None, "A quantization scheme.", False),
    ("ScalarTypeType", "ScalarType", None, "A dtype.", False),
    ("LayoutType", "Layout", None, "A layout.", False),
    ("MemoryFormatType", "MemoryFormat", None, "A memory format.", False),
    ("CapsuleType", "Capsule", None, "An opaque C++ object.", False),
    ("AnyListType", "list", None, "Any list.", False),
    ("AnyTupleType", "tuple", None, "Any tuple.", False),
    ("AnyClassType", "AnyClassType", None, "Any class.", False),
    ("AnyEnumType", "AnyEnumType", None, "Any enum.", False),
)
for _row in _SINGLETONS:
    globals()[_row[0]] = _singleton(*_row)
del _row


class NumberType(_SingletonType):
    """int, float or complex (a Scalar in operator schemas): the union of the three."""
    _kind = "NumberType"
    _name = "Scalar"
    _annotation_name = "number"

    def _equals(self, other):
        if isinstance(other, UnionType):
            return len(other._types) == 3 and other._can_hold(NumberType.get())
        return other._kind == "NumberType"

    def _subtype_ext(self, rhs):
        if isinstance(rhs, UnionType):
            return rhs._can_hold(NumberType.get())
        return Type._subtype_ext(self, rhs)


class VarType(Type):
    """A type variable of an operator schema (the t of `t[] list`)."""
    _kind = "VarType"

    def __init__(self, name):
        self._var = name

    def _str(self):
        return self._var

    def _equals(self, other):
        return isinstance(other, VarType) and other._var == self._var


# ----------------------------------------------------------------------------- containers

class _ElementType(Type):
    """A kind over one element type (List, Future, Await, RRef)."""
    _covariant = False
    _open, _close = "[", "]"        # annotation_str's brackets after the kind's name
    _label = None

    def __init__(self, elem):
        self._elem = _check_type(elem, type(self).__name__)

    def getElementType(self):
        """The element type."""
        return self._elem

    def containedTypes(self):
        return [self._elem]

    def _equals(self, other):
        return other._kind == self._kind and other._elem == self._elem

    def _subtype_ext(self, rhs):
        if Type._subtype_ext(self, rhs):
            return True
        return self._covariant and rhs._kind == self._kind and \
            self._elem._subtype_ext(rhs._elem)

    def _str(self):
        return f"{self._label}({self._elem._str()})"

    def _annotation(self):
        return f"{self._label}[{self._elem._annotation()}]"


class ListType(_ElementType):
    """A list of one element type (List[int]): invariant, as lists are mutable."""
    _kind, _label = "ListType", "List"

    def _str(self):
        return self._elem._str() + "[]"

    def _stream(self):
        return self._elem._stream() + "[]"

    def _subtype_ext(self, rhs):
        return Type._subtype_ext(self, rhs) or rhs._kind == "AnyListType"

    @staticmethod
    def ofInts():
        return ListType(IntType.get())

    @staticmethod
    def ofFloats():
        return ListType(FloatType.get())

    @staticmethod
    def ofBools():
        return ListType(BoolType.get())

    @staticmethod
    def ofStrings():
        return ListType(StringType.get())

    @staticmethod
    def ofTensors():
        return ListType(TensorType.get())

    @staticmethod
    def ofComplexDoubles():
        return ListType(ComplexType.get())


class FutureType(_ElementType):
    """The type of a Future's value (Future[int]): covariant."""
    _kind, _label, _covariant = "FutureType", "Future", True

    def _stream(self):
        return f"Future[{self._elem._stream()}]"


class AwaitType(_ElementType):
    """The type of torch.jit._awaitable's result (Await[int]): covariant."""
    _kind, _label, _covariant = "AwaitType", "Await", True


class RRefType(_ElementType):
    """A remote reference's type (RRef[int]): invariant."""
    _kind, _label = "RRefType", "RRef"

    def _stream(self):
        return f"RRef[{self._elem._stream()}]"


class TupleType(Type):
    """A tuple of fixed element types (Tuple[int, str]): covariant in each element."""
    _kind = "TupleType"

    def __init__(self, elements):
        self._elements = [_check_type(t, "TupleType") for t in elements]

    def elements(self):
        """The element types."""
        return list(self._elements)

    def containedTypes(self):
        return list(self._elements)

    def _equals(self, other):
        return isinstance(other, TupleType) and len(other._elements) == len(self._elements) \
            and all(a == b for a, b in zip(self._elements, other._elements))

    def _subtype_ext(self, rhs):
        if Type._subtype_ext(self, rhs) or rhs._kind == "AnyTupleType":
            return True
        return isinstance(rhs, TupleType) and len(rhs._elements) == len(self._elements) and \
            all(a._subtype_ext(b) for a, b in zip(self._elements, rhs._elements))

    def _str(self):
        return "(" + ", ".join(t._str() for t in self._elements) + ")"

    def _stream(self):
        return "(" + ", ".join(t._stream() for t in self._elements) + ")"

    def _annotation(self):
        if not self._elements:
            return "Tuple[()]"
        return "Tuple[" + ", ".join(t._annotation() for t in self._elements) + "]"


_DICT_KEY_KINDS = ("IntType", "FloatType", "ComplexType", "TensorType", "DeviceObjType",
                   "StringType", "BoolType", "AnyType")


class DictType(Type):
    """A dict (Dict[str, Tensor]); keys of a hashable kind only, as in TorchScript."""
    _kind = "DictType"

    def __init__(self, key, value):
        _check_type(key, "DictType")
        _check_type(value, "DictType")
        if key._kind not in _DICT_KEY_KINDS:
            raise RuntimeError(f"Cannot create dict for key type '{key._str()}', only int, "
                               f"float, complex, Tensor, device and string keys are supported")
        self._key, self._value = key, value

    def getKeyType(self):
        return self._key

    def getValueType(self):
        return self._value

    def containedTypes(self):
        return [self._key, self._value]

    def _equals(self, other):
        return isinstance(other, DictType) and other._key == self._key and \
            other._value == self._value

    def _str(self):
        return f"Dict({self._key._str()}, {self._value._str()})"

    def _annotation(self):
        return f"Dict[{self._key._annotation()}, {self._value._annotation()}]"


# ------------------------------------------------------------------------- Union, Optional

def _flatten_union(t, out):
    """Nested Unions and Optionals flattened, NumberType as int, float and complex."""
    if isinstance(t, OptionalType):
        _flatten_union(t._elem, out)
        out.append(NoneType.get())
    elif isinstance(t, UnionType):
        for inner in t._types:
            _flatten_union(inner, out)
    elif t._kind == "NumberType":
        out += [IntType.get(), FloatType.get(), ComplexType.get()]
    else:
        out.append(t)


def _filter_duplicate_subtypes(types):
    """c10's filterDuplicateSubtypes: from the right, each type unified into an earlier one
    it has a common supertype with (None never unifies into an Optional here)."""
    if not types:
        return types
    none = NoneType.get()

    def supertype(a, b):
        if a._subtype_ext(none) != b._subtype_ext(none):
            return None
        return _unify(a, b)
    end = len(types) - 1
    for i in range(len(types) - 1, 0, -1):
        j = min(i - 1, end)
        while True:
            unified = supertype(types[i], types[j])
            if unified is not None:
                types[j] = unified
                types[i] = types[end]
                end -= 1
                break
            if j == 0:
                break
            j -= 1
    return types[:end + 1]


def _standardize_union(reference):
    flat = []
    for t in reference:
        _flatten_union(t, flat)
    flat = _filter_duplicate_subtypes(flat)
    flat.sort(key=lambda t: (_KIND_ORDER[t._kind], t._str()))
    return flat


def _is_number(t):
    return t._kind in ("IntType", "FloatType", "ComplexType")


class UnionType(Type):
    """A value of any of several types (Union[int, str]). Made in PyTorch's normal form:
    nested Unions flattened, types with a common supertype unified, sorted by kind; a Union
    of T and None is an Optional[T] (UnionType([int, None]) returns an OptionalType), and
    one that reduces to one type is refused, as PyTorch refuses it."""
    _kind = "UnionType"

    def __new__(cls, types):
        types = [_check_type(t, "UnionType") for t in types]
        members = _standardize_union_checked(types)
        has_none = any(t._kind == "NoneType" for t in members)
        numbers = sum(_is_number(t) for t in members) == 3
        if has_none and len(members) == 4 and numbers:
            return OptionalType(NumberType.get())
        if has_none and len(members) == 2:
            return OptionalType(next(t for t in members if t._kind != "NoneType"))
        self = super().__new__(cls)
        self._types = members
        return self

    def containedTypes(self):
        return list(self._types)

    def _can_hold(self, t):
        """c10's canHoldType: NumberType when int, float and complex all fit."""
        if t._kind == "NumberType":
            return all(self._can_hold(n) for n in (IntType.get(), FloatType.get(),
                                                   ComplexType.get()))
        return any(t._subtype_ext(inner) for inner in self._types)

    def _to_optional(self):
        if not self._can_hold(NoneType.get()):
            return None
        made = UnionType(list(self._types))
        return made if isinstance(made, OptionalType) else None

    def _equals(self, other):
        if isinstance(other, OptionalType):
            if other._elem._kind == "NumberType":
                return len(self._types) == 4 and self._can_hold(NoneType.get()) and \
                    self._can_hold(NumberType.get())
            opt = self._to_optional()
            return opt is not None and other == opt
        if isinstance(other, UnionType):
            return len(other._types) == len(self._types) and \
                all(any(a == b for b in other._types) for a in self._types)
        if other._kind == "NumberType":
            return len(self._types) == 3 and self._can_hold(NumberType.get())
        return False

    def _subtype_ext(self, rhs):
        if isinstance(rhs, OptionalType):
            if rhs._elem._kind == "NumberType":
                targets = [NoneType.get(), IntType.get(), FloatType.get(), ComplexType.get()]
            else:
                targets = [NoneType.get(), rhs._elem]
        elif isinstance(rhs, UnionType):
            targets = rhs._types
        elif rhs._kind == "NumberType":
            targets = [IntType.get(), FloatType.get(), ComplexType.get()]
        else:
            targets = [rhs]
        return all(any(t._subtype_ext(r) for r in targets) for t in self._types)

    def _union_str(self, annotation):
        numbers = self._can_hold(NumberType.get())
        text, printed = "Union" + ("[" if annotation else "("), False
        for i, t in enumerate(self._types):
            if not numbers or not _is_number(t):
                if i > 0:       # c10 puts the comma by position (its output kept as is)
                    text += ", "
                    printed = True
                text += t._annotation() if annotation else t._str()
        if numbers:
            if printed:
                text += ", "
            text += "number" if annotation else "Scalar"
        return text + ("]" if annotation else ")")

    def _str(self):
        return self._union_str(False)

    def _annotation(self):
        return self._union_str(True)


def _standardize_union_checked(types):
    if not types:
        raise RuntimeError("Cannot create an empty Union")
    members = _standardize_union(types)
    if len(members) == 1:
        raise RuntimeError(
            "After type unification was performed, the Union with the original types {"
            + "".join(t._annotation() + ("," if i > 0 else "") + " "
                      for i, t in enumerate(types))
            + f"}} has the single type {members[0]._annotation()}. Use the common supertype "
              "instead of creating a Uniontype")
    return members


class OptionalType(Type):
    """A value of a type, or None (Optional[int]; int? in schemas)."""
    _kind = "OptionalType"

    def __init__(self, elem):
        _check_type(elem, "OptionalType")
        members = _standardize_union_checked([elem, NoneType.get()])
        inner_numbers = isinstance(elem, UnionType) and len(elem._types) == 3 and elem._can_hold(NumberType.get())
        if len(members) == 2:
            self._elem = members[0] if members[0]._kind != "NoneType" else members[1]
        elif elem._kind == "NumberType" or inner_numbers:
            self._elem = NumberType.get()
            members = [NumberType.get(), NoneType.get()]
        else:
            self._elem = UnionType([t for t in members
                                    if not t._subtype_ext(NoneType.get())])
        self._types = members

    def getElementType(self):
        return self._elem

    def containedTypes(self):
        return [self._elem]

    @staticmethod
    def ofTensor():
        return OptionalType(TensorType.get())

    def _equals(self, other):
        if isinstance(other, OptionalType):
            return self._elem == other._elem
        if isinstance(other, UnionType):
            opt = other._to_optional()
            return opt is not None and self == opt
        return False

    def _subtype_ext(self, rhs):
        if isinstance(rhs, OptionalType):
            return self._elem._subtype_ext(rhs._elem)
        if isinstance(rhs, UnionType):
            return rhs._can_hold(NoneType.get()) and rhs._can_hold(self._elem)
        return Type._subtype_ext(self, rhs)

    def _str(self):
        return self._elem._str() + "?"

    def _stream(self):
        return self._elem._stream() + "?"

    def _annotation(self):
        return f"Optional[{self._elem._annotation()}]"


# ------------------------------------------------------------------------------- tensors

_fresh_symbol = itertools.count(-1, -1)       # c10's ShapeSymbol::newSymbol: negative ids


def _scalar_names():
    """{c10 ScalarType name ("Float"): pygpu dtype}, from pygpu's dtype table."""
    from .. import _dtype
    return {d._legacy: d for d in vars(_dtype).values() if isinstance(d, _dtype.DType)}


class TensorType(Type):
    """A tensor, with what is known of it: dtype, sizes (each may be unknown, or the rank
    unknown), strides, device, requires_grad. TensorType.get() knows nothing;
    create_from_tensor(t) knows all of t's."""
    _kind = "TensorType"
    _plain = None

    def __init__(self, scalar=None, device=None, sizes=None, strides=None,
                 requires_grad=None, undefined=False, symbols=None, inferred=False):
        self._scalar = scalar                 # c10's ScalarType name ("Float") or None
        self._device = device
        self._sizes = None if sizes is None else tuple(sizes)
        self._strides = None if strides is None else tuple(strides)
        self._grad = requires_grad
        self._undefined = undefined
        self._inferred = inferred
        if symbols is None and self._sizes is not None:
            symbols = tuple(s if s is not None else next(_fresh_symbol) for s in self._sizes)
        self._symbols = symbols

    def _with(self, **changes):
        fields = dict(scalar=self._scalar, device=self._device, sizes=self._sizes,
                      strides=self._strides, requires_grad=self._grad,
                      undefined=self._undefined, symbols=self._symbols)
        fields.update(changes)
        return TensorType(**fields)

    @classmethod
    def get(cls):
        """The tensor type that knows nothing of its tensor."""
        if cls._plain is None:
            cls._plain = TensorType()
        return cls._plain

    @classmethod
    def getInferred(cls):
        """TensorType.get(), marked as inferred (an unannotated argument's type)."""
        return TensorType(inferred=True)

    @staticmethod
    def create_from_tensor(tensor):
        """The complete type of a tensor: its dtype, sizes, strides, device, requires_grad."""
        from .._C import Tensor
        if not isinstance(tensor, Tensor):
            raise TypeError(f"create_from_tensor(): incompatible function arguments: "
                            f"expected a Tensor, got {type(tensor).__name__}")
        return TensorType(tensor.dtype._legacy, tensor.device, tuple(tensor.shape),
                          tuple(tensor.stride()), bool(tensor.requires_grad), False)

    # -- queries ---------------------------------------------------------------------------
    def dim(self):
        return None if self._sizes is None else len(self._sizes)

    def sizes(self):
        """The sizes when all are known, else None."""
        if self._sizes is None or any(s is None for s in self._sizes):
            return None
        return list(self._sizes)

    def varyingSizes(self):
        """The sizes with None for each unknown one; None when the rank is unknown."""
        return None if self._sizes is None else list(self._sizes)

    def symbolic_sizes(self):
        """The sizes with a negative symbol for each unknown one (c10's ShapeSymbol)."""
        return None if self._symbols is None else list(self._symbols)

    def strides(self):
        if self._strides is None or any(s is None for s in self._strides):
            return None
        return list(self._strides)

    def scalarType(self):
        """c10's name of the dtype ("Float", "Long"), or None."""
        return self._scalar

    def dtype(self):
        return None if self._scalar is None else _scalar_names()[self._scalar]

    def device(self):
        return self._device

    def requires_grad(self):
        return True if self._grad is None else self._grad

    def undefined(self):
        return self._undefined

    def contiguous(self):
        """This type with the contiguous strides of its sizes (all sizes must be known)."""
        sizes = self.sizes()
        if sizes is None:
            raise RuntimeError("concrete_sizes.has_value() INTERNAL ASSERT FAILED: "
                               "contiguous() needs every size of the tensor type known")
        strides = [1] * len(sizes)
        for i in range(len(sizes) - 1, 0, -1):
            strides[i - 1] = strides[i] * sizes[i]
        return self._with(strides=tuple(strides))

    def with_sizes(self, sizes):
        """This type with these sizes (None for an unknown size; None: unknown rank)."""
        if sizes is None:
            return self._with(sizes=None, symbols=None)
        sizes = tuple(None if s is None else int(s) for s in sizes)
        return self._with(sizes=sizes, symbols=None)

    def with_dtype(self, dtype):
        from .._dtype import to_dtype
        return self._with(scalar=to_dtype(dtype)._legacy)

    def with_device(self, device):
        from .._device import device as make_device
        return self._with(device=make_device(device) if isinstance(device, str) else device)

    # -- equality, subtyping, printing -----------------------------------------------------
    def _fields(self):
        return (self._scalar, self._sizes, self._strides, str(self._device) if self._device
                is not None else None, self._grad, self._undefined)

    def _equals(self, other):
        return isinstance(other, TensorType) and other._fields() == self._fields()

    def _merge(self, other):
        """c10's TensorType::merge: what both types agree on."""
        def prim(a, b):
            return a if a == b else None

        def shape(a, b):
            if a is None or b is None or len(a) != len(b):
                return None
            return tuple(prim(x, y) for x, y in zip(a, b))
        dev = self._device if prim(str(self._device), str(other._device)) is not None \
            and self._device is not None else None
        return TensorType(prim(self._scalar, other._scalar), dev,
                          shape(self._sizes, other._sizes),
                          shape(self._strides, other._strides),
                          prim(self._grad, other._grad), prim(self._undefined, other._undefined))

    def _subtype_ext(self, rhs):
        if isinstance(rhs, TensorType):
            return self is rhs or self._merge(rhs) == rhs
        return Type._subtype_ext(self, rhs)

    def _str(self):
        return "Tensor"

    def _stream(self):
        out = self._scalar if self._scalar is not None else "Tensor"
        if self._scalar is not None and self._sizes is None:
            out += "Tensor"
        extras = []
        if self._grad is not None:
            extras.append(f"requires_grad={int(self._grad)}")
        if self._device is not None:
            extras.append(f"device={self._device}")
        if self._sizes is not None:
            parts = ["*" if s is None else str(s) for s in self._sizes]
            n = len(self._sizes)
            if n > 0 and self.strides() is not None and len(self._strides) == n:
                parts.append("strides=[" + ", ".join(str(s) for s in self._strides) + "]")
            out += "(" + ", ".join(parts + extras) + ")"
        elif extras:
            out += "(" + ", ".join(extras) + ")"
        if self._undefined:
            out += "[Undefined]"
        return out


def _unshaped(t):
    """c10's unshapedType: every TensorType inside replaced by TensorType.get()."""
    if isinstance(t, TensorType):
        return TensorType.get()
    return _with_contained(t, [_unshaped(c) for c in t.containedTypes()])


def _with_contained(t, contained):
    """The same kind over other contained types (c10's withContained)."""
    if not contained:
        return t
    if isinstance(t, OptionalType):
        return OptionalType(contained[0])
    if isinstance(t, UnionType):
        return UnionType(contained)
    if isinstance(t, TupleType):
        return TupleType(contained)
    if isinstance(t, DictType):
        return DictType(*contained)
    if isinstance(t, _ElementType):
        return type(t)(contained[0])
    return t


def _unify(t1, t2):
    """c10's unifyTypes (default_to_union false): the type both fit, or None."""
    if t1._subtype_ext(t2):
        return t2
    if t2._subtype_ext(t1):
        return t1
    if isinstance(t1, TensorType) and isinstance(t2, TensorType):
        return t1._merge(t2)
    none = NoneType.get()
    n1, n2 = t1._subtype_ext(none), t2._subtype_ext(none)
    if n1 and not n2:
        return OptionalType(t2)
    if n2 and not n1:
        return OptionalType(t1)
    if isinstance(t1, OptionalType):
        elem = _unify(t1._elem, t2)
        if elem is not None:
            return OptionalType(elem)
    elif isinstance(t2, OptionalType):
        elem = _unify(t2._elem, t1)
        if elem is not None:
            return OptionalType(elem)
    if isinstance(t1, TupleType) and isinstance(t2, TupleType):
        if len(t1._elements) != len(t2._elements):
            return None
        elems = [_unify(a, b) for a, b in zip(t1._elements, t2._elements)]
        return None if any(e is None for e in elems) else TupleType(elems)
    if isinstance(t1, FutureType) and isinstance(t2, FutureType):
        elem = _unify(t1._elem, t2._elem)
        if elem is not None:
            return FutureType(elem)
    u1, u2 = _unshaped(t1), _unshaped(t2)
    if u1._subtype_ext(u2):
        return u2
    if u2._subtype_ext(u1):
        return u1
    return None


def unify_type_list(types):
    """The one type every type of the list is a subtype of (torch.unify_type_list):
    RuntimeError when there is none, or the list is empty."""
    types = [_check_type(t, "unify_type_list") for t in types]
    if not types:
        raise RuntimeError("Cannot get unified type from empty list")
    ret = types[0]
    for i, t in enumerate(types[1:], 1):
        unified = _unify(ret, t)
        if unified is None:
            raise RuntimeError(f"Could not unify type list since element {i} of type "
                               f"{t._annotation()} did not match the types before it "
                               f"({ret._annotation()})")
        ret = unified
    return ret


# --------------------------------------------------------------------- enums, inference

class _ClassType(Type):
    """A TorchScript class named by its qualified name (__torch__.torch.classes.ns.Name in
    an operator schema). pygpu has no class registry: the type is its name, no methods."""
    _kind = "ClassType"

    def __init__(self, qualified_name):
        self._qualname = qualified_name

    def _str(self):
        return self._qualname

    def _equals(self, other):
        return isinstance(other, _ClassType) and other._qualname == self._qualname

    def _subtype_ext(self, rhs):
        return rhs._kind == "AnyClassType" or Type._subtype_ext(self, rhs)


class EnumType(Type):
    """A Python Enum class as TorchScript sees it: its name, the type of its values (int,
    float or str) and its members."""
    _kind = "EnumType"

    def __init__(self, name, value_type, values):
        _check_type(value_type, "EnumType")
        if value_type._kind not in ("IntType", "FloatType", "StringType"):
            raise RuntimeError(f"Cannot create Enum with value type '{value_type._str()}', "
                               f"only int, float and string are supported")
        python_type = {"IntType": int, "FloatType": (int, float), "StringType": str}
        members = []
        for member in values:          # Enum members: each has a name and a value
            value = member.value
            if not isinstance(value, python_type[value_type._kind]) or \
                    isinstance(value, bool):
                raise RuntimeError(f"Unable to cast Python instance of type {type(value)} to "
                                   f"the enum's value type {value_type._str()}")
            members.append((member.name, value))
        self._name, self._value_type, self._members = str(name), value_type, members

    def containedTypes(self):
        return [self._value_type]

    def _equals(self, other):
        return isinstance(other, EnumType) and other._name == self._name and \
            other._value_type == self._value_type

    def _subtype_ext(self, rhs):
        return rhs._kind == "AnyEnumType" or Type._subtype_ext(self, rhs)

    def _str(self):
        return f"Enum<{self._name}>"

    def _annotation(self):
        return self._name


class InferredType:
    """The result of inferring a value's type (torch.InferredType): a type, or the reason
    none was found."""

    def __init__(self, type_or_reason):
        if isinstance(type_or_reason, Type):
            self._type, self._reason = type_or_reason, None
        elif isinstance(type_or_reason, str):
            self._type, self._reason = None, type_or_reason
        else:
            raise TypeError(f"InferredType(): incompatible function arguments: expected a "
                            f"Type or a str, got {type(type_or_reason).__name__}")

    def success(self):
        return self._type is not None

    def type(self):
        if self._type is None:
            raise RuntimeError(f"Tried to get the type from an InferredType but the type is "
                               f"null. Reason: {self._reason}")
        return self._type

    def reason(self):
        if self._type is not None:
            raise RuntimeError("reason() of an InferredType that holds a type")
        return self._reason
