# test_jit_schema.py - operator schemas (pygpu/jit/_schema.py) against PyTorch's: every schema
# torch registers (torch._C._jit_get_all_schemas(), thousands) is parsed by pygpu.parse_schema
# and compared field by field, and printed back, against torch.parse_schema's object; a table
# of edge cases (alias sets, defaults, varargs, errors) the same way; the compatibility checks
# on pairs of schemas; torch.Tag; and the generated table is what its script writes.
import os
import sys

import pytest

import pygpu

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "build_support"))
import gen_jit_tables  # noqa: E402

from pygpu.jit import _jit_tables  # noqa: E402


def _arg(a):
    ai = a.alias_info
    default = a.default_value
    if type(default).__name__.lower() == "device":      # torch.device / pygpu's device
        default = ("device", str(default))
    return (a.name, str(a.type), str(a.real_type), a.type.kind(), a.real_type.kind(), a.N,
            repr(default), a.has_default_value(), a.kwarg_only, a.is_out, a.is_write,
            (ai.is_write, ai.before_set, ai.after_set) if ai else None)


def _facts(s):
    return (s.name, s.overload_name, [_arg(a) for a in s.arguments],
            [_arg(a) for a in s.returns], s.is_mutable, s._is_view_op(), str(s))


def test_every_schema_torch_registers_parses_as_torchs():
    schemas = torch._C._jit_get_all_schemas()
    assert len(schemas) > 3000
    diffs, classes = [], 0
    for sc in schemas:
        text = str(sc)
        if "__torch__" not in text:
            try:  # a Python op torch.library registered (e.g. DTensor's, with PyObject
                torch._C.parse_schema(text)  # arguments) need not parse as text, in torch too:
            except RuntimeError:  # then pygpu refuses it as well
                with pytest.raises(RuntimeError, match="unknown type specifier"):
                    pygpu.parse_schema(text)
                continue
        ours = pygpu.parse_schema(text)
        # a custom class (__torch__.torch.classes...) parses only where torch registered it:
        # its registered schema object is the reference then
        theirs = torch._C.parse_schema(text) if "__torch__" not in text else sc
        classes += "__torch__" in text
        if _facts(ours) != _facts(theirs):
            diffs.append((text, _facts(ours), _facts(theirs)))
        elif pygpu.parse_schema(str(ours)) != ours:
            diffs.append((text, "does not round-trip"))
    assert not diffs, diffs[:5]
    assert classes > 0


CASES = [
    # alias annotations: sets, writes, after-sets, wildcards, fresh sets, lists of aliases
    "f(Tensor(a|b) x, Tensor(c|d|e) y) -> Tensor(c|d|e)", "f(Tensor(a -> b|c) x) -> Tensor",
    "f(Tensor! x) -> Tensor", "f(Tensor(a!)[] x) -> Tensor(a)[]", "f(Tensor(a)[2] x) -> ()",
    "f(Tensor(*) x) -> Tensor(a -> *)", "f(Tensor(a|*) x) -> ()", "f(Tensor(*|a) x) -> ()",
    "f(Tensor(a!)[2]? x) -> ()", "f(Tensor[](a) x) -> ()", "f(Tensor(a)[](b) x) -> ()",
    "f(Tensor(a) self) -> Tensor(a)", "f(int x) -> Tensor(a!)[]",
    "f(Tensor(a!) x, Tensor(a!) y) -> ()", "f(Tensor(a)[] x) -> ()", "f(Tensor(a -> *) x) -> ()",
    # varargs, returns, keyword-only arguments, names
    "f(...) -> ...", "f(int x, ...) -> (int, ...)", "f() -> ((str, t)[])", "f() -> ((str, t))",
    "f() -> (Tensor a, Tensor b)", "f(int x, ..., int y) -> ()", "f() -> (..., int)",
    "f(int a, *, int b, int c=2) -> ()", "f(*, Tensor(a!) out) -> Tensor(a!)",
    "f(Tensor self, *, Tensor(a!) out, Tensor(b!) out2) -> (Tensor(a!), Tensor(b!))",
    "aten::f.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!) out", "f() -> ()",
    "f(int x) -> int y", "f(int x)", "f(int x) -> int extra", "ns::f.ov(int x) -> int",
    "aten::x.default(int a)->()", "f(int a=1, ...) -> ()", "f(int x=1, int y) -> ()",
    "f(int x=1, int[] y) -> ()",
    # types
    "f(int? x=None, int[]? y=None, Tensor?[] z) -> Tensor?", "f(Union(int, str) x) -> ()",
    "f(Future(t) x) -> Future(t)", "f(RRef(int) x) -> ()", "f(Await(int) x) -> ()",
    "f(Tuple(int, str) x) -> ()", "f((int, str) x) -> ()", "f(SymFloat x) -> ()",
    "f(SymBool x) -> SymBool", "f(double x) -> ()", "f(Foo x) -> ()", "f(int[2][] x) -> ()",
    "f(int?[]? x) -> ()", "f(Tensor(a)? x) -> ()", "f(Tensor?(a) x) -> ()",
    "f(Dict(str, Tensor) d) -> Dict(int, float)", "f(Dict(int[], Tensor) d) -> ()",
    "f(NoneType x) -> NoneType", "f(t x, t y) -> t[]", "f(t[] x) -> t",
    "f(Union(int, int) x) -> ()", "f(Union(int, None) x) -> ()", "f(Optional x)->()",
    "f(Layout l, MemoryFormat m, ScalarType s, QScheme q, SymInt i, Generator? g, Storage st, "
    "Stream str, Device d, Any a, AnyEnumType e, AnyClassType c, Capsule cap, "
    "ConstQuantizerPtr p) -> Scalar",
    # defaults
    "f(Layout? l=strided, MemoryFormat m=contiguous_format, int r=Mean, ScalarType t=float)->()",
    "f(Scalar s=1.5, Scalar t=2, Scalar u=1j, Scalar? v=None) -> Scalar",
    "f(str a='x\\n') -> ()", 'f(Device d="cpu") -> ()', 'f(Device d="cuda:1") -> ()',
    "f(float f=inf) -> ()", "f(float g=-inf) -> ()", "f(complex c=1j) -> ()",
    "f(complex c=2) -> ()", "f(ScalarType s=long) -> ()", "f(ScalarType? s=int32) -> ()",
    "f(ScalarType? s=Float) -> ()", "f(int s=int32) -> ()", "f(int[] e=[]) -> ()",
    "f(float[] fl=[0.5, 1.]) -> ()", "f(bool[] b=[True, False]) -> ()", "f(int i=-3) -> ()",
    "f(float z=-0.) -> ()", "f(float h=1e10) -> ()", "f(float k=123456789012.5) -> ()",
    "f(float q=1e-300) -> ()", "f(float q=0.1) -> ()", "f(float q=-2.5e-7) -> ()",
    "f(float x=1e19) -> ()", "f(float x=1e300) -> ()", "f(float x=-5e15) -> ()",
    "f(int[2] s=[1, 1]) -> ()", "f(int[2] s=[1, 2]) -> ()", "f(int[1] s=1) -> ()",
    "f(bool[3] m=[True, True, True]) -> ()", "f(float f=2) -> ()", "f(int i=2.5) -> ()",
    "f(str s=\"a\\\"b'c\") -> ()", "f(Tensor t=None) -> ()", "f(Tensor? t=None) -> ()",
    "f(Scalar s=-1) -> ()", "f(float f=.5) -> ()", "f(float f=1.e3) -> ()",
    "f(float f=1E3) -> ()", "f(Tensor[] t=[]) -> ()", 'f(str[] s=["a", "b"]) -> ()',
    "f(SymInt[] s=[1,2]) -> ()", "f(SymInt[2] s=0) -> ()", "f(Generator? g=None) -> ()",
    "f(Any a=None) -> ()", "f(int? i=1) -> ()", "f(complex[] c=[1j, 2j]) -> ()",
    "f(float[2] f=1.5) -> ()", "f(Tensor t=1) -> ()", "f(int x=foo) -> ()",
]


def _outcome(parse, text):
    try:
        return ("ok", _facts(parse(text)))
    except Exception as e:
        return ("raises", type(e).__name__, str(e).strip().splitlines()[0])


@pytest.mark.parametrize("text", CASES)
def test_edge_cases_parse_or_fail_as_torchs(text):
    ours, theirs = _outcome(pygpu.parse_schema, text), _outcome(torch._C.parse_schema, text)
    assert ours[:2] == theirs[:2]
    if theirs[0] == "raises" and "INTERNAL ASSERT" not in theirs[2]:
        # PyTorch's words, up to where it quotes the schema
        assert ours[2].split(":")[0] == theirs[2].split(":")[0]


def test_a_schemas_fields_and_python_values():
    s = pygpu.parse_schema("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, "
                           "Scalar alpha=1) -> Tensor(a!)")
    assert (s.name, s.overload_name, s.is_mutable) == ("aten::add_", "Tensor", True)
    self_, other, alpha = s.arguments
    assert isinstance(self_.type, pygpu.TensorType) and self_.alias_info.is_write
    assert self_.alias_info.before_set == {"a"} and other.alias_info is None
    assert alpha.kwarg_only and alpha.default_value == 1 and alpha.type == pygpu.NumberType.get()
    assert not alpha.is_out and self_.is_write
    assert s == pygpu.parse_schema(str(s)) and hash(s) == hash(pygpu.parse_schema(str(s)))
    assert repr(s) == str(s)
    d = pygpu.parse_schema('f(Device d="cuda:1") -> ()').arguments[0].default_value
    assert d == pygpu.device("cuda:1")
    with pytest.raises(TypeError):
        pygpu.parse_schema(3)


COMPAT = [
    # (new, old)
    ("f(Tensor a, int b=1) -> Tensor", "f(Tensor a) -> Tensor"),
    ("f(Tensor a, int b) -> Tensor", "f(Tensor a) -> Tensor"),
    ("f(Tensor a) -> Tensor", "f(Tensor a, int b=1) -> Tensor"),
    ("f(Tensor a, int[] b=[1, 2]) -> Tensor", "f(Tensor a) -> Tensor"),
    ("f(Tensor a, *, int b=1, Tensor(a!) out) -> Tensor(a!)",
     "f(Tensor a, *, Tensor(a!) out) -> Tensor(a!)"),
    ("f(Tensor a, *, Tensor(a!) out) -> Tensor(a!)",
     "f(Tensor a, *, Tensor(a!) out, Tensor(b!) o2) -> Tensor(a!)"),
    ("f(Scalar a) -> Tensor", "f(int a) -> Tensor"), ("f(int a) -> Tensor", "f(Scalar a) -> Tensor"),
    ("f(int? a) -> Tensor", "f(int a) -> Tensor"), ("f(Tensor b) -> Tensor", "f(Tensor a) -> Tensor"),
    ("f(Tensor a, int b=2) -> Tensor", "f(Tensor a, int b=1) -> Tensor"),
    ("f(Tensor a, *, int b=1) -> Tensor", "f(Tensor a, int b=1) -> Tensor"),
    ("g(Tensor a) -> Tensor", "f(Tensor a) -> Tensor"), ("f.x(Tensor a) -> Tensor", "f(Tensor a) -> Tensor"),
    ("f(Tensor a) -> Tensor?", "f(Tensor a) -> Tensor"), ("f(Tensor a) -> Tensor", "f(Tensor a) -> Tensor?"),
    ("f(Tensor a) -> (Tensor, Tensor)", "f(Tensor a) -> Tensor"), ("f(int[2] a) -> ()", "f(int[] a) -> ()"),
    ("f(Tensor(a) x) -> ()", "f(Tensor x) -> ()"), ("f(..., int a) -> ()", "f(int a) -> ()"),
]


@pytest.mark.parametrize("new, old", COMPAT)
def test_backward_and_forward_compatibility_as_torchs(new, old):
    def checks(M):
        n, o = M.parse_schema(new) if M is pygpu else torch._C.parse_schema(new), \
            M.parse_schema(old) if M is pygpu else torch._C.parse_schema(old)
        return n.is_backward_compatible_with(o), n.check_forward_compatible_with(o)
    try:
        theirs = checks(torch)
    except RuntimeError:
        pytest.raises(RuntimeError, checks, pygpu)
        return
    assert checks(pygpu) == theirs


def _same_torch():
    """Whether the installed torch is the one pygpu/jit/_jit_tables.py was written from
    (another, the GPU machine's, may add or drop a tag: then the names both have agree)."""
    return torch.__version__.split("+")[0] == _jit_tables.TORCH_VERSION


def test_tag_is_torchs():
    theirs_all = sorted(((n, int(t.value)) for n, t in torch.Tag.__members__.items()),
                        key=lambda r: r[1])
    ours_all = [(t.name, t.value) for t in pygpu.Tag]
    if _same_torch():
        assert ours_all == theirs_all
    both = set(dict(ours_all)) & set(dict(theirs_all))
    assert len(both) >= 15
    for name in both:
        ours, theirs = getattr(pygpu.Tag, name), getattr(torch.Tag, name)
        assert (repr(ours), str(ours), ours.name) == (repr(theirs), str(theirs), theirs.name)
        if _same_torch():
            assert (ours.value, int(ours)) == (theirs.value, int(theirs))
            assert pygpu.Tag(int(theirs)) is ours
        assert ours != int(ours)
    assert pygpu.Tag.core.__doc__.startswith("Core aten ops")


def test_the_generated_table_is_what_its_script_writes():
    text = gen_jit_tables.render(torch)
    if _same_torch():
        assert open(gen_jit_tables.OUT).read() == text, (
            "pygpu/jit/_jit_tables.py is stale: run python build_support/gen_jit_tables.py")
    else:       # another torch: the dtype names both spell stand for the same codes
        theirs = {}
        exec(text, theirs)
        both = set(theirs["SCALAR_TYPE_CODES"]) & set(_jit_tables.SCALAR_TYPE_CODES)
        assert len(both) > 20
        assert all(theirs["SCALAR_TYPE_CODES"][n] == _jit_tables.SCALAR_TYPE_CODES[n]
                   for n in both)
