"""Operator schemas as PyTorch writes them (torch.parse_schema, torch.FunctionSchema,
torch.Argument, torch.Tag): c10's schema grammar, parsed into pygpu's JIT types.

    aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
    aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)

A schema is a name (namespace::op), an overload name, arguments and returns. An argument has
a type (`int[2]` is a list with a size hint N, `int?` an Optional, `Tensor(a!)` a tensor in
alias set a that the op writes), a name, a default and whether it is keyword-only (after
`*`); `...` marks varargs or varrets. As in PyTorch (function_schema_parser.cpp,
schema_type_parser.cpp, function_schema.cpp): an argument's `type` is the "fake" type
Python sees (ScalarType, Layout, MemoryFormat, QScheme and SymInt read as int) and
`real_type` the one written; str() prints the schema back in PyTorch's canonical form (an
int list default of equal values as one value, floats as c10 prints doubles, alias sets in
c10's order); defaults become Python values (ScalarType names become c10's codes).

The data taken from PyTorch (Tag's members, the dtype names a default may spell) is in
_jit_tables.py, written by build_support/gen_jit_tables.py."""
import enum
import math
import re

from . import _types as T
from ._jit_tables import DEFAULT_IDENTS, SCALAR_TYPE_CODES, TAGS

__all__ = ["Argument", "FunctionSchema", "parse_schema", "Tag"]

Tag = enum.Enum("Tag", [(name, value) for name, value, _ in TAGS], module=__name__,
                qualname="Tag")
Tag.__doc__ = ("An operator's tag (torch.Tag): the properties native_functions.yaml marks ops "
               "with. Members: " + ", ".join(name for name, _, _ in TAGS) + ".")
Tag.__int__ = Tag.__index__ = lambda self: self.value
for _name, _value, _desc in TAGS:
    Tag[_name].__doc__ = _desc

# the base type names of the grammar -> the type; names not here that start lowercase are
# type variables (t, t1, double), as in c10's SchemaTypeParser
_BASE_TYPES = {
    "Generator": T.GeneratorType, "Dimname": None, "ScalarType": T.ScalarTypeType,
    "Layout": T.LayoutType, "MemoryFormat": T.MemoryFormatType, "Storage": T.StorageType,
    "QScheme": T.QSchemeType, "Stream": T.StreamObjType, "ConstQuantizerPtr": T.IntType,
    "Device": T.DeviceObjType, "Scalar": T.NumberType, "str": T.StringType,
    "float": T.FloatType, "complex": T.ComplexType, "int": T.IntType, "SymInt": T.SymIntType,
    "bool": T.BoolType, "SymBool": T.SymBoolType, "None": T.NoneType,
    "NoneType": T.NoneType, "Capsule": T.CapsuleType, "Any": T.AnyType,
    "AnyClassType": T.AnyClassType, "AnyEnumType": T.AnyEnumType,
}
del _BASE_TYPES["Dimname"]      # PyTorch built without named tensors has no Dimname
# the real types whose Python ("fake") type is int
_INT_FAKES = ("ScalarTypeType", "LayoutType", "MemoryFormatType", "SymIntType")

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?j?)
  | (?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op>->|\.\.\.|::|[()\[\],*!|?=.:-])
""", re.X)
_TOKEN_NAMES = {"->": "arrow", "...": "dots", "string": "string_literal"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
            "\\": "\\", "'": "'", '"': '"'}


class _Lexer:
    def __init__(self, text):
        self.text, self.tokens = text, []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise RuntimeError(f"unexpected character {text[pos]!r} at {pos} in schema "
                                   f"{text!r}")
            if m.lastgroup != "ws":
                kind = m.lastgroup if m.lastgroup != "op" else m.group()
                self.tokens.append((kind, m.group(), m.start()))
            pos = m.end()
        self.tokens.append(("eof", "", len(text)))
        self.i = 0

    def cur(self):
        return self.tokens[self.i]

    def peek(self, k=1):
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def next(self):
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def next_if(self, kind):
        if self.cur()[0] == kind:
            return self.next()
        return None

    def fail(self, message, tok=None):
        tok = tok or self.cur()
        raise RuntimeError(f"{message}:\n{self.text}\n{' ' * tok[2]}~~ <--- HERE")

    def expect(self, kind):
        tok = self.cur()
        if tok[0] != kind:
            found = tok[0] if tok[0] in ("ident", "number", "string", "eof") else tok[1]
            self.fail(f"expected {_TOKEN_NAMES.get(kind, kind)} but found "
                      f"'{_TOKEN_NAMES.get(found, found)}' here")
        return self.next()


class _AliasInfo:
    """An argument's alias annotation (torch._C._AliasInfo): the alias sets it is in before
    and after the op, whether the op writes it, and its elements' annotations (a list's)."""

    def __init__(self):
        self._before, self._after = [], []        # in the order written
        self.is_write = False
        self._contained = []

    @property
    def before_set(self):
        return set(self._before)

    @property
    def after_set(self):
        return set(self._after)

    def _key(self):
        return (frozenset(self._before), frozenset(self._after), self.is_write,
                tuple(c._key() for c in self._contained))

    def __eq__(self, other):
        return isinstance(other, _AliasInfo) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        # c10 keeps the sets in unordered_sets; small ones iterate newest first
        text = "(" + "|".join(reversed(self._before))
        if self.is_write:
            text += "!"
        if set(self._before) != set(self._after):
            text += " -> " + "|".join(reversed(self._after))
        return text + ")"


def _print_double(d):
    """c10's IValue printing of a double: 2. for a value an int64 holds, else 17 significant
    digits."""
    if math.isfinite(d) and -2.0 ** 63 <= d < 2.0 ** 63 and d == int(d):
        return f"{int(d)}."
    if math.isnan(d):
        return "nan"
    if math.isinf(d):
        return "inf" if d > 0 else "-inf"
    return f"{d:.17g}"


def _quote(s):
    """c10's printQuotedString."""
    out = ['"']
    table = {"\\": "\\\\", "'": "\\'", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f",
             "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    for ch in s:
        if ch in table:
            out.append(table[ch])
        elif ch.isprintable() and ord(ch) < 128:
            out.append(ch)
        else:
            out += [f"\\{b:03o}" for b in ch.encode()]
    return "".join(out) + '"'


def _print_value(v):
    """c10's printing of an IValue default."""
    if v is None:
        return "None"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _print_double(v)
    if isinstance(v, complex):
        return f"{_print_double(v.real)}+{_print_double(v.imag)}j"
    if isinstance(v, str):
        return _quote(v)
    if isinstance(v, list):
        return "[" + ", ".join(_print_value(x) for x in v) + "]"
    return str(v)          # a device


class Argument:
    """One argument or return of a schema (torch.Argument)."""

    def __init__(self, name, type, real_type, N, default, kwarg_only, alias_info,
                 has_default):
        self.name, self.type, self.real_type, self.N = name, type, real_type, N
        self.default_value, self.kwarg_only, self.alias_info = default, kwarg_only, alias_info
        self._has_default = has_default

    def has_default_value(self):
        return self._has_default

    @property
    def is_write(self):
        return self.alias_info is not None and self.alias_info.is_write

    @property
    def is_out(self):
        return self.kwarg_only and self.is_write

    def _key(self):
        return (self.name, self.type._str(), self.real_type._str(), self.N,
                repr(self.default_value) if self._has_default else None, self.kwarg_only,
                self.alias_info._key() if self.alias_info else None)

    def _same_alias(self, other):
        return self.alias_info == other.alias_info

    def _compatible(self, old, forward):
        """c10's Argument::isBackwardCompatibleWith / isForwardCompatibleWith."""
        if not (self.name == old.name and self.N == old.N and self._same_alias(old)):
            return False
        if self.kwarg_only and not old.kwarg_only:
            return False
        sub = self.type.isSubtypeOf(old.type) if forward else old.type.isSubtypeOf(self.type)
        if not sub:
            return False
        if old._has_default and (not self._has_default or
                                 repr(self.default_value) != repr(old.default_value)):
            return False
        return True

    def __str__(self):
        real = self.real_type
        is_opt = isinstance(real, T.OptionalType)
        unopt = real.getElementType() if is_opt else real
        alias = self.alias_info
        if isinstance(unopt, T.ListType):
            text = unopt.getElementType()._str()
            if alias is not None and alias._contained:
                text += str(alias._contained[0])
            text += f"[{'' if self.N is None else self.N}]"
        else:
            text = unopt._str()
        if alias is not None and alias._before:
            text += str(alias)
        if is_opt:
            text += "?"
        if self.name:
            text += " " + self.name
        if self._has_default:
            text += "=" + self._print_default()
        return text

    def _print_default(self):
        v, real = self.default_value, self.real_type
        if isinstance(real, T.ListType) and real.getElementType()._kind == "IntType" and \
                isinstance(v, list) and len(v) > 1 and all(x == v[0] for x in v):
            return _print_value(v[0])
        return _print_value(v)


class FunctionSchema:
    """An operator's signature (torch.FunctionSchema), as parse_schema reads it."""

    def __init__(self, name, overload_name, arguments, returns, is_vararg, is_varret):
        self.name, self.overload_name = name, overload_name
        self.arguments, self.returns = arguments, returns
        self._vararg, self._varret = is_vararg, is_varret

    @property
    def is_mutable(self):
        """Whether the op writes any of its arguments."""
        return any(a.is_write for a in self.arguments)

    def _is_view_op(self):
        """Whether the op may return a view of an argument: an argument with an alias
        annotation (its own or its elements') that the op does not write."""
        return any(a.alias_info is not None and not a.alias_info.is_write
                   for a in self.arguments)

    def _key(self):
        return (self.name, self.overload_name, tuple(a._key() for a in self.arguments),
                tuple(a._key() for a in self.returns), self._vararg, self._varret)

    def __eq__(self, other):
        return isinstance(other, FunctionSchema) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        text = self.name + (f".{self.overload_name}" if self.overload_name else "") + "("
        parts, seen_kwarg = [], False
        for a in self.arguments:
            item = str(a)
            if a.kwarg_only and not seen_kwarg:
                item, seen_kwarg = "*, " + item, True
            parts.append(item)
        if self._vararg:
            parts.append("...")
        text += ", ".join(parts) + ") -> "
        rets = self.returns
        paren = not ((len(rets) == 1 and not self._varret) or (not rets and self._varret))
        if len(rets) == 1 and not paren:     # (a, b) or (a, b)[] alone: parenthesized
            ret = rets[0].type
            elem = ret.getElementType() if isinstance(ret, T.ListType) else ret
            paren = isinstance(elem, T.TupleType)
        body = [str(r) for r in rets] + (["..."] if self._varret else [])
        return text + ("(" + ", ".join(body) + ")" if paren else ", ".join(body))

    __repr__ = __str__

    @staticmethod
    def _first_out(args):
        return next((i for i, a in enumerate(args) if a.is_out), len(args))

    def _same_shape(self, old):
        return (self.name == old.name and self.overload_name == old.overload_name and
                self._vararg == old._vararg and self._varret == old._varret and
                len(self.returns) == len(old.returns))

    def is_backward_compatible_with(self, old):
        """Whether calls written against `old` still work with this schema."""
        if not (self._same_shape(old) and len(self.arguments) >= len(old.arguments)):
            return False
        if not all(o._compatible(n, False) for n, o in zip(self.returns, old.returns)):
            return False
        old_out, new_out = self._first_out(old.arguments), self._first_out(self.arguments)
        if not all(self.arguments[i]._compatible(old.arguments[i], False)
                   for i in range(old_out)):
            return False
        if not all(self.arguments[i]._has_default for i in range(old_out, new_out)):
            return False
        return all(self.arguments[i - old_out + new_out]._compatible(old.arguments[i], False)
                   for i in range(old_out, len(old.arguments)))

    def check_forward_compatible_with(self, old):
        """(whether `old`'s callers may be given this schema's calls, why not)."""
        if not self._same_shape(old):
            return False, ""
        old_out, new_out = self._first_out(old.arguments), self._first_out(self.arguments)
        if len(old.arguments) - old_out != len(self.arguments) - new_out:
            return False, "Function schema should have the same number of out arguments"
        for i in range(min(old_out, new_out)):
            if not self.arguments[i]._compatible(old.arguments[i], True):
                return False, (f"'{self.arguments[i].name}' is not forward compatible with "
                               f"the older version of the schema")
        for i in range(old_out, new_out):
            a = self.arguments[i]
            if not a._has_default:
                return False, (f"Function schema is not forward compatible since the new "
                               f"argument '{a.name}' of type {a.type._str()} did not provide "
                               f"a default value.")
            if isinstance(a.default_value, (list, dict)):
                return False, (f"Function schema is not forward compatible since the new "
                               f"argument '{a.name}' of type {a.type._str()} has a container "
                               f"type as its default value.")
        for i in range(old_out, len(old.arguments)):
            if not self.arguments[i - old_out + new_out]._compatible(old.arguments[i], True):
                return False, (f"Out argument '{self.arguments[i].name}' is not FC with the "
                               f"older version of the schema")
        return True, ""


class _Parser:
    """c10's FunctionSchema and SchemaType parsers over one schema string."""

    def __init__(self, text):
        self.L = _Lexer(text)
        self.next_alias_id = 0

    # -- types ------------------------------------------------------------------------------
    def alias_annotation(self):
        L = self.L
        info = _AliasInfo()
        if L.next_if("("):
            self._alias_sets(info._before)
            if L.next_if("!"):
                info.is_write = True
            if L.next_if("->"):
                self._alias_sets(info._after)
            else:
                info._after = list(info._before)
            L.expect(")")
            return info
        if L.next_if("!"):
            info._before.append(f"${self.next_alias_id}")
            self.next_alias_id += 1
            info.is_write = True
            return info
        return None

    def _alias_sets(self, into):
        L = self.L
        while True:
            if L.next_if("*"):
                if "*" not in into:
                    into.append("*")
            elif "*" in into:
                pass            # after a wildcard c10 reads no name: the ) is then missing
            else:
                into.append(L.expect("ident")[1])
            if not L.next_if("|"):
                break

    def fake_and_real_type(self):
        L = self.L
        alias = None
        kind, text, _ = L.cur()
        if kind == "(":
            L.next()
            types = []
            if L.cur()[0] != ")":
                while True:
                    types.append(self.fake_and_real_type()[0])
                    if not L.next_if(","):
                        break
            L.expect(")")
            fake = real = T.TupleType(types)
        elif kind == "ident" and text in ("Future", "Await", "RRef"):
            L.next()
            L.expect("(")
            sub = self.fake_and_real_type()[0]
            L.expect(")")
            fake = real = {"Future": T.FutureType, "Await": T.AwaitType,
                           "RRef": T.RRefType}[text](sub)
        elif kind == "ident" and text == "Tensor":
            L.next()
            fake = real = T.TensorType.get()
            alias = self.alias_annotation()
        elif kind == "ident" and text == "Dict":
            L.next()
            L.expect("(")
            key = self.fake_and_real_type()[0]
            L.expect(",")
            value = self.fake_and_real_type()[0]
            L.expect(")")
            alias = self.alias_annotation()
            fake = real = T.DictType(key, value)
        elif kind == "ident" and text == "Union":
            L.next()
            L.expect("(")
            types = [self.fake_and_real_type()[0]]
            while L.cur()[0] != ")":
                L.expect(",")
                types.append(self.fake_and_real_type()[0])
            L.expect(")")
            alias = self.alias_annotation()
            fake = real = T.UnionType(types)
        elif kind == "ident" and text == "__torch__":
            fake = real = self.class_type()
        else:
            real = self.base_type()
            fake = T.IntType.get() if real._kind in _INT_FAKES else real
            alias = self.alias_annotation()
        while True:
            if L.cur()[0] == "[" and L.peek()[0] == "]":
                L.next()
                L.next()
                fake, real = T.ListType(fake), T.ListType(real)
                alias = self._container_alias(alias)
            elif L.next_if("?"):
                fake, real = T.OptionalType(fake), T.OptionalType(real)
            else:
                break
        return fake, real, alias

    def _container_alias(self, inner):
        container = self.alias_annotation()
        if inner is not None:
            if container is None:
                container = _AliasInfo()
                container.is_write = inner.is_write
            container._contained.append(inner)
        return container

    def base_type(self):
        tok = self.L.expect("ident")
        name = tok[1]
        if name in _BASE_TYPES:
            return _BASE_TYPES[name].get()
        if name and name[0].islower():
            return T.VarType(name)
        self.L.fail("unknown type specifier. Common valid schema types include Tensor, "
                    "SymInt, int, float, bool, Scalar; for a full list, please see "
                    "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/"
                    "README.md#func", tok)

    def class_type(self):
        """__torch__.torch.classes.ns.Name: a TorchScript custom class. PyTorch looks the
        name up in its registry of classes and refuses one it does not know; pygpu has no
        registry, so the type is the class's name."""
        L = self.L
        L.next()
        L.expect(".")
        start = L.cur()
        parts = []
        for _ in range(4):
            parts.append(L.expect("ident")[1])
            if len(parts) < 4:
                L.expect(".")
        if parts[:2] != ["torch", "classes"]:
            L.fail("Expected classes namespace but got " + ".".join(parts[:2]), start)
        return T._ClassType("__torch__." + ".".join(parts))

    # -- defaults ---------------------------------------------------------------------------
    def single_constant(self, kind, real):
        L = self.L
        tok = L.cur()
        if tok[0] == "ident" and tok[1] in ("True", "False", "None"):
            L.next()
            return {"True": True, "False": False, "None": None}[tok[1]]
        if tok[0] == "string":
            L.next()
            return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)),
                          tok[1][1:-1])
        if tok[0] == "ident":
            L.next()
            if tok[1] in DEFAULT_IDENTS:
                return DEFAULT_IDENTS[tok[1]]
            unopt = real.getElementType() if isinstance(real, T.OptionalType) else real
            if unopt._kind == "ScalarTypeType" and tok[1] in SCALAR_TYPE_CODES:
                return SCALAR_TYPE_CODES[tok[1]]
            L.fail("invalid numeric default value")
        sign = "-" if L.next_if("-") else ""
        n = sign + L.expect("number")[1]
        if kind == "ComplexType" or "j" in n:
            try:
                return complex(0, float(n[:-1]))
            except ValueError:
                raise ValueError("stod") from None
        if kind == "FloatType" or "." in n or "e" in n or "E" in n:
            return float(n)
        return int(n)

    def default_value(self, fake, real, N):
        L = self.L
        kind = fake._kind
        if kind in ("TensorType", "GeneratorType", "QuantizerType"):
            return self._none()
        if kind in ("StringType", "OptionalType", "NumberType", "IntType", "BoolType",
                    "FloatType", "ComplexType"):
            return self.single_constant(kind, real)
        if kind == "DeviceObjType":
            from .._device import device
            tok = L.expect("string")
            return device(tok[1][1:-1])
        if kind == "ListType":
            elem, real_elem = fake.getElementType(), real.getElementType()
            if L.cur()[0] == "ident":
                return self._none()
            if N is not None and L.cur()[0] != "[":
                return self._typed_list(elem, [self.single_constant(elem._kind,
                                                                    real_elem)] * N)
            L.expect("[")
            items = []
            while L.cur()[0] != "]":
                items.append(self.single_constant(elem._kind, real_elem))
                if not L.next_if(","):
                    break
            L.expect("]")
            return self._typed_list(elem, items)
        L.fail("unexpected type, file a bug report")

    def _none(self):
        """A tensor's (or a list's, spelled by name) only default: None."""
        kind, text, _ = self.L.cur()
        if (kind, text) != ("ident", "None"):
            found = _TOKEN_NAMES.get(kind, kind) if kind in _TOKEN_NAMES or kind in (
                "ident", "number", "string", "eof") else text
            self.L.fail(f"expected None but found '{found}' here")
        self.L.next()
        return None

    def _typed_list(self, elem, items):
        if elem._kind not in ("IntType", "FloatType", "ComplexType", "BoolType"):
            self.L.fail("lists are only supported for float, int and complex types")
        return list(items)

    # -- arguments and the declaration ------------------------------------------------------
    def argument(self, is_return, kwarg_only):
        L = self.L
        fake, real, alias = self.fake_and_real_type()
        N = None
        if L.next_if("["):
            fake, real = T.ListType(fake), T.ListType(real)
            N = int(L.expect("number")[1])
            L.expect("]")
            alias = self._container_alias(alias)
            if L.next_if("?"):
                fake, real = T.OptionalType(fake), T.OptionalType(real)
        default, has_default = None, False
        if is_return:
            name = L.next()[1] if L.cur()[0] == "ident" else ""
        else:
            name = L.expect("ident")[1]
            if L.next_if("="):
                default, has_default = self.default_value(fake, real, N), True
        return Argument(name, fake, real, N, default, kwarg_only and not is_return, alias,
                        has_default)

    def declaration(self):
        L = self.L
        name = L.expect("ident")[1]
        if L.next_if("::"):
            name += "::" + L.expect("ident")[1]
        overload = ""
        if L.next_if("."):
            overload = L.expect("ident")[1]
        if overload in ("default", "__name__"):
            raise RuntimeError(f"{overload} is not a legal overload name for aten operators")
        arguments, returns = [], []
        kwarg_only = vararg = varret = False
        L.expect("(")
        if L.cur()[0] != ")":
            while True:
                if vararg:
                    L.fail("... must be the last element of the argument list")
                if L.next_if("*"):
                    kwarg_only = True
                elif L.next_if("..."):
                    vararg = True
                else:
                    arguments.append(self.argument(False, kwarg_only))
                if not L.next_if(","):
                    break
        L.expect(")")
        schema = FunctionSchema(name, overload, arguments, [], vararg, False)
        seen_default = False         # c10's checkSchema (lists exempt, for old serializations)
        for a in arguments:
            if a.has_default_value():
                seen_default = True
            elif seen_default and not a.kwarg_only and not isinstance(a.type, T.ListType):
                raise RuntimeError(f"Non-default positional argument follows default argument. "
                                   f"Parameter {a.name} in {schema}")
        if vararg and any(a.has_default_value() for a in arguments):
            L.fail("schemas with vararg (...) can't have default value args")
        L.expect("->")
        if L.next_if("..."):
            varret = True
        elif L.cur()[0] == "(":
            L.next()
            if L.cur()[0] != ")":
                while True:
                    if varret:
                        L.fail("... must be the last element of the return list")
                    if L.next_if("..."):
                        varret = True
                    else:
                        returns.append(self.argument(True, False))
                    if not L.next_if(","):
                        break
            L.expect(")")
        else:
            returns.append(self.argument(True, False))
        L.expect("eof")
        return FunctionSchema(name, overload, arguments, returns, vararg, varret)


def parse_schema(schema, allow_typevars=True):
    """A FunctionSchema from PyTorch's schema text (torch.parse_schema); RuntimeError, with
    the place, for text that is not one."""
    if not isinstance(schema, str):
        raise TypeError(f"parse_schema(): incompatible function arguments: expected a str, "
                        f"got {type(schema).__name__}")
    return _Parser(schema).declaration()
