"""torch.SymInt, torch.SymFloat, torch.SymBool: an int, float or bool whose every operation is
redirected to the node it wraps (torch/__init__.py's classes with the magic methods
torch/fx/experimental/sym_node.py installs on them).

In PyTorch a node is a SymNode of torch.compile's symbolic-shape tracer; eager code never
receives one (isinstance(3, torch.SymInt) is False, and the sym_* functions on concrete
numbers return plain numbers: _sym_numbers.py). pygpu has no tracer of symbolic shapes, so
these classes only ever wrap a node the caller gives them, with PyTorch's protocol: an
operation on x asks x.node for the method of its name (add, mul, eq, ...) with the other
operand as a node (x.node.wrap_int(3) for a plain 3), and wraps the node that comes back as
the class its is_int()/is_float()/is_bool() says; int(x) is x.node.int_(), float(x)
x.node.guard_float("", 0), bool(x) x.node.bool_(). Not ported: sym_node's shortcut that
computes on the Python numbers when every node is_constant(), and its guards on pow's sign."""
import builtins
import math

# magic name: the node's method. The reflected form (__radd__) calls the same method with
# the operands swapped, as sym_node's reflectable_magic_methods do.
_REFLECTABLE = {"add": "add", "sub": "sub", "mul": "mul", "mod": "mod", "and": "sym_and",
                "or": "sym_or", "pow_by_natural": "pow_by_natural", "float_pow": "float_pow",
                "int_truediv": "int_truediv", "float_truediv": "float_truediv",
                "int_floordiv": "int_floordiv"}
_COMPARE = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
_UNARY = {"neg": "neg", "abs": "abs", "trunc": "trunc", "sym_float": "sym_float",
          "sym_int": "sym_int", "sym_not": "sym_not", "ceil": "ceil", "floor": "floor"}
_OTHER = {"sym_max": "sym_max", "sym_min": "sym_min"}


def _to_node(node, value):
    """The other operand as a node of `node`'s kind, or NotImplemented."""
    if isinstance(value, (SymInt, SymFloat, SymBool)):
        return value.node
    if type(value) is builtins.bool:
        return node.wrap_bool(value)
    if type(value) is builtins.int:
        return node.wrap_int(value)
    if type(value) is builtins.float:
        return node.wrap_float(value)
    return NotImplemented


def _wrap(node):
    """A node as the class of its kind (a plain value passes through)."""
    if not hasattr(node, "is_int"):
        return node
    if node.is_int():
        return SymInt(node)
    if node.is_float():
        return SymFloat(node)
    if node.is_bool():
        return SymBool(node)
    raise AssertionError(f"unrecognized return type {node}")


_PROMOTING = {"add", "sub", "mul", "mod", "eq", "ne", "lt", "le", "gt", "ge", "sym_max",
              "sym_min"}


def _binary(method, reflected=False, name=None):
    def magic(self, other):
        if name in _PROMOTING and isinstance(self, SymInt) and \
                isinstance(other, (builtins.float, SymFloat)):
            # Python's rule, as sym_node's promote2: an int with a float is a float
            promoted = SymFloat(self.node.sym_float())
            return getattr(promoted, f"__{'r' if reflected else ''}{name}__")(other)
        other_node = _to_node(self.node, other)
        if other_node is NotImplemented:
            return NotImplemented
        a, b = (other_node, self.node) if reflected else (self.node, other_node)
        return _wrap(getattr(a, method)(b))
    return magic


def _unary(method):
    def magic(self):
        return _wrap(getattr(self.node, method)())
    return magic


def _install(cls, names):
    for name in names:
        if name in _REFLECTABLE:
            setattr(cls, f"__{name}__", _binary(_REFLECTABLE[name], name=name))
            setattr(cls, f"__r{name}__", _binary(_REFLECTABLE[name], reflected=True, name=name))
        elif name in _COMPARE:
            setattr(cls, f"__{name}__", _binary(_COMPARE[name], name=name))
        elif name in _OTHER:
            setattr(cls, f"__{name}__", _binary(_OTHER[name], name=name))
        else:
            setattr(cls, f"__{name}__", _unary(_UNARY[name]))


class _SymBase:
    def __init__(self, node):
        self.node = node  # PyTorch's C++ bindings read the field by this name

    def __repr__(self):
        return self.node._graph_repr()

    def _sympy_(self):
        return self.node.expr


class SymInt(_SymBase):
    """Like an int (magic methods included), every operation redirected to self.node."""

    def __bool__(self):
        return builtins.bool(self != 0)

    def __int__(self):
        return self.node.int_()

    def __index__(self):
        return self.node.int_()

    def __round__(self, ndigits=None):
        return self

    def __truediv__(self, other):
        if isinstance(other, (builtins.float, SymFloat)):
            return SymFloat(self.node.sym_float()).__float_truediv__(other)
        if not isinstance(other, (builtins.int, SymInt)):
            return NotImplemented
        return self.__int_truediv__(other)

    def __rtruediv__(self, other):
        if isinstance(other, (builtins.float, SymFloat)):
            return SymFloat(self.node.sym_float()).__rfloat_truediv__(other)
        if not isinstance(other, (builtins.int, SymInt)):
            return NotImplemented
        return self.__rint_truediv__(other)

    def __floordiv__(self, other):
        if not isinstance(other, (builtins.int, SymInt)):
            return NotImplemented
        return self.__int_floordiv__(other)

    def __rfloordiv__(self, other):
        if not isinstance(other, (builtins.int, SymInt)):
            return NotImplemented
        return self.__rint_floordiv__(other)

    def __pow__(self, other):
        if not isinstance(other, (builtins.int, SymInt)):
            return NotImplemented
        return self.__pow_by_natural__(other)

    def __hash__(self):
        if self.node.is_nested_int():
            return hash(self.node.nested_int())
        raise TypeError("unhashable type: non-nested SymInt")

    def as_integer_ratio(self):
        return self, 1

    def bit_length(self):
        return builtins.int(self).bit_length()

    def conjugate(self):
        return self


class SymFloat(_SymBase):
    """Like a float (magic methods included), every operation redirected to self.node."""

    def __truediv__(self, other):
        if not isinstance(other, (builtins.int, builtins.float, SymInt, SymFloat)):
            return NotImplemented
        return self.__float_truediv__(other)

    def __rtruediv__(self, other):
        if not isinstance(other, (builtins.int, builtins.float, SymInt, SymFloat)):
            return NotImplemented
        return self.__rfloat_truediv__(other)

    def __floordiv__(self, other):
        if not isinstance(other, (builtins.int, builtins.float, SymInt, SymFloat)):
            return NotImplemented
        return builtins.float(math.floor(builtins.float(self) / builtins.float(other)))

    def __pow__(self, other):
        if not isinstance(other, (builtins.int, builtins.float, SymInt, SymFloat)):
            return NotImplemented
        return self.__float_pow__(other)

    def __bool__(self):
        return self.node.bool_()

    def __float__(self):
        return self.node.guard_float("", 0)

    def __int__(self):
        return self.__trunc__().__int__()

    def __hash__(self):
        return hash(builtins.float(self))

    def is_integer(self):
        return builtins.float(self).is_integer()

    def as_integer_ratio(self):
        return builtins.float(self).as_integer_ratio()

    def conjugate(self):
        return self

    def hex(self):
        return self.node.guard_float("", 0).hex()


class SymBool(_SymBase):
    """Like a bool, every operation redirected to self.node."""

    def __bool__(self):
        return self.node.bool_()

    def __int__(self):
        return builtins.int(self.node.bool_())

    def __hash__(self):
        if self.node.is_constant():
            return hash(self.node.bool_())
        return hash(builtins.id(self))  # PyTorch's: a symbolic bool hashes as its object


_install(SymInt, ["add", "sub", "mul", "mod", "and", "or", "pow_by_natural", "int_truediv",
                  "int_floordiv", "eq", "ne", "lt", "le", "gt", "ge", "neg", "abs", "sym_float",
                  "sym_max", "sym_min"])
_install(SymFloat, ["add", "sub", "mul", "mod", "float_pow", "float_truediv", "eq", "ne", "lt",
                    "le", "gt", "ge", "neg", "abs", "trunc", "sym_int", "sym_max", "sym_min",
                    "ceil", "floor"])
_install(SymBool, ["and", "or", "eq", "ne", "sym_not"])
for _cls in (SymInt, SymFloat, SymBool):
    _cls.__module__ = "torch"
del _cls
