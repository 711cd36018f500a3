# test_jit_types.py - TorchScript's types (pygpu/jit/_types.py) against PyTorch's: one table of
# type expressions is built in both namespaces (M is torch or pygpu), and every method is
# compared on each, and isSubtypeOf, == and unify_type_list on every pair. Tensor types are
# compared on tensors of several dtypes, shapes and layouts, on the cpu and sim devices.
import enum

import pytest

import pygpu

torch = pytest.importorskip("torch")

EXPRS = """
I F C B S N T Num A D St SI SB Py
M.ListType(I) M.ListType(T) M.ListType(M.ListType(F)) M.OptionalType(I) M.OptionalType(T)
M.OptionalType(M.ListType(I)) M.ListType(M.OptionalType(I)) M.OptionalType(M.OptionalType(I))
M.OptionalType(Num) M.OptionalType(A) M.OptionalType(N) M.TupleType([I,F]) M.TupleType([])
M.TupleType([T,M.TupleType([S])]) M.DictType(S,T) M.DictType(I,M.ListType(F))
M.DictType(M.ListType(I),T) M.DictType(B,I) M.DictType(T,T) M.DictType(D,I) M.DictType(N,I)
M.DictType(SI,I) M.DictType(A,I) M.DictType(C,I) M.UnionType([I,F]) M.UnionType([I,N])
M.UnionType([I,F,N]) M.UnionType([I,I]) M.UnionType([Num,I]) M.UnionType([I]) M.UnionType([])
M.UnionType([M.UnionType([I,S]),F]) M.UnionType([F,I,C]) M.UnionType([F,I,C,N])
M.UnionType([T,N]) M.UnionType([I,A]) M.UnionType([Num,S]) M.UnionType([Num,S,N])
M.UnionType([M.OptionalType(I),S]) M.OptionalType(M.UnionType([I,S])) M.UnionType([Num,N])
M.UnionType([M.ListType(I),M.ListType(F)]) M.UnionType([B,I]) M.UnionType([S,B,D,T])
M.UnionType([M.TupleType([I]),M.TupleType([F])]) M.UnionType([M.TupleType([I]),M.TupleType([N])])
M.OptionalType(M.UnionType([I,F,C])) M.UnionType([SI,I]) M.UnionType([T,M.ListType(T),N])
M.FutureType(I) M.FutureType(M.ListType(T)) M.AwaitType(I) M.RRefType(I)
M.RRefType(M.ListType(T)) M.FutureType(M.OptionalType(T)) M.AwaitType(Num)
M.ListType.ofInts() M.ListType.ofFloats() M.ListType.ofBools() M.ListType.ofStrings()
M.ListType.ofTensors() M.ListType.ofComplexDoubles() M.OptionalType.ofTensor()
T.with_sizes([2,3]) T.with_sizes([2,None]) T.with_sizes([]) T.with_sizes(None)
T.with_dtype(M.float32) T.with_dtype(M.int64).with_sizes([4]) T.with_sizes([2,3]).contiguous()
T.with_sizes([2,0,3]).contiguous() T.with_sizes([0,2]).contiguous() T.with_sizes([2,None]).contiguous()
T.with_dtype(M.bfloat16).with_sizes([1,None,3]) T.with_dtype(M.complex64) T.with_dtype(M.uint16)
M.ListType(T.with_sizes([2,3])) M.OptionalType(T.with_dtype(M.float64))
M.TupleType([T.with_sizes([1]),I]) M.DictType(S,T.with_sizes([2])) M.UnionType([T.with_sizes([2]),S])
M.UnionType([T.with_sizes([2]),T.with_sizes([3])]) M.UnionType([T.with_dtype(M.float32),I,N])
M.EnumType('Color',I,CV) M.EnumType('Color',S,CV) M.EnumType('Color',S,SV) M.EnumType('Shade',I,CV)
M.EnumType('Bad',T,CV) M.EnumType('Color',F,CV) M.EnumType('Color',I,[1])
M.ListType(3) M.OptionalType('int') M.TupleType([I,'x'])
""".split()


_Color = enum.Enum("Color", "RED GREEN")
_Shade = enum.Enum("Shade", {"LIGHT": "l", "DARK": "d"})


def _namespace(M):
    return dict(M=M, I=M.IntType.get(), F=M.FloatType.get(), C=M.ComplexType.get(),
                B=M.BoolType.get(), S=M.StringType.get(), N=M.NoneType.get(),
                T=M.TensorType.get(), Num=M.NumberType.get(), A=M.AnyType.get(),
                D=M.DeviceObjType.get(), St=M.StreamObjType.get(), SI=M.SymIntType.get(),
                SB=M.SymBoolType.get(), Py=M.PyObjectType.get(), CV=list(_Color),
                SV=list(_Shade))


def _build(expr, M):
    try:
        return eval(expr, _namespace(M))
    except Exception as e:    # the kind of exception is compared
        return e


def _describe(t, expr):
    if isinstance(t, Exception):
        return ("raises", type(t).__name__)
    # UnionType([int, None]) is an Optional: torch's Python class stays UnionType, pygpu's is
    # OptionalType (kind() says OptionalType in both)
    cls = type(t).__name__ if not expr.startswith("M.UnionType") else None
    return (cls, t.kind(), str(t), repr(t), t.str(), t.annotation_str,
            [c.annotation_str for c in t.containedTypes()], t.requires_grad(),
            t.is_interface_type())


@pytest.fixture(scope="module")
def built():
    return [(e, _build(e, torch), _build(e, pygpu)) for e in EXPRS]


def test_every_type_expression_builds_and_prints_as_torchs(built):
    diffs = [(e, _describe(a, e), _describe(b, e)) for e, a, b in built
             if _describe(a, e) != _describe(b, e)]
    assert not diffs, diffs
    assert sum(not isinstance(a, Exception) for _, a, _ in built) > 80


def test_subtyping_equality_and_unification_agree_with_torch_on_every_pair(built):
    ok = [(e, a, b) for e, a, b in built if not isinstance(a, Exception)]
    diffs = []
    for e1, a1, b1 in ok:
        for e2, a2, b2 in ok:
            for what, fa, fb in (("isSubtypeOf", a1.isSubtypeOf(a2), b1.isSubtypeOf(b2)),
                                 ("==", a1 == a2, b1 == b2), ("!=", a1 != a2, b1 != b2)):
                if fa != fb:
                    diffs.append((what, e1, e2, fa, fb))
            ua = _unify(torch, a1, a2)
            ub = _unify(pygpu, b1, b2)
            if _describe(ua, "") != _describe(ub, ""):
                diffs.append(("unify_type_list", e1, e2, _describe(ua, ""), _describe(ub, "")))
    assert not diffs, diffs[:20]


def _unify(M, *types):
    try:
        return M.unify_type_list(list(types))
    except RuntimeError as e:
        return e


def test_unify_type_list_of_several_and_its_messages():
    for M in (torch, pygpu):
        I, F, N = M.IntType.get(), M.FloatType.get(), M.NoneType.get()
        with pytest.raises(RuntimeError, match="Cannot get unified type from empty list"):
            M.unify_type_list([])
        with pytest.raises(RuntimeError, match=r"element 1 of type float did not match the "
                                               r"types before it \(int\)"):
            M.unify_type_list([I, F])
    for build in ("[I, N, I]", "[N, M.ListType(I), N]", "[M.TupleType([I, N]), M.TupleType([N, F])]",
                  "[T.with_sizes([2, 3]), T.with_sizes([2, 4]), T.with_dtype(M.float32)]",
                  "[M.FutureType(T.with_sizes([1])), M.FutureType(T.with_sizes([2]))]"):
        a = M_eval(torch, f"M.unify_type_list({build})")
        b = M_eval(pygpu, f"M.unify_type_list({build})")
        assert (a.str(), repr(a)) == (b.str(), repr(b)), build


def M_eval(M, expr):
    return eval(expr, _namespace(M))


def test_singletons_hash_and_argument_checks_as_torchs():
    for M in (torch, pygpu):
        for kind in ("IntType", "FloatType", "NoneType", "NumberType", "AnyType", "TensorType",
                     "SymIntType", "StringType"):
            assert getattr(M, kind).get() is getattr(M, kind).get()
        I = M.IntType.get()
        assert M.ListType(I) == M.ListType(I) and M.ListType(I) is not M.ListType(I)
        with pytest.raises(TypeError):
            hash(I)
        with pytest.raises(TypeError):
            I == 3
        with pytest.raises(TypeError):
            I.isSubtypeOf(3)
        assert M.TensorType.getInferred() == M.TensorType.get()
        assert M.TensorType.getInferred() is not M.TensorType.get()


@pytest.mark.parametrize("query", ["dim", "sizes", "strides", "dtype", "scalarType", "device",
                                   "contiguous", "undefined", "varyingSizes", "symbolic_sizes"])
def test_tensor_queries_on_other_kinds_raise_runtime_error(query):
    for M in (torch, pygpu):
        for t in (M.IntType.get(), M.ListType(M.TensorType.get()), M.OptionalType.ofTensor()):
            with pytest.raises(RuntimeError):
                getattr(t, query)()


# (shape, dtype name, how the tensor is laid out, requires_grad)
TENSORS = [((2, 3), "float32", "plain", False), ((2, 3), "float32", "t", False),
           ((), "float64", "plain", False), ((0,), "bool", "plain", False),
           ((2, 3), "int32", "slice", False), ((1, 3), "float32", "expand", False),
           ((4,), "float32", "plain", True), ((2, 3, 4), "int64", "permute", False),
           ((3,), "bfloat16", "plain", False), ((2, 2), "complex64", "plain", False),
           ((5,), "uint8", "plain", False), ((2, 1, 3), "float16", "plain", False)]


def _make(M, shape, dtype, layout, grad, device):
    kw = {} if M is torch else {"device": device}
    x = M.zeros(shape, dtype=getattr(M, dtype), **kw)
    x = {"plain": lambda: x, "t": lambda: x.t(), "slice": lambda: x[:, :2],
         "expand": lambda: x.expand(4, 1, 3), "permute": lambda: x.permute(2, 0, 1)}[layout]()
    if grad:
        x.requires_grad_(True)
    return x


def _tensor_facts(t, device):
    """What a TensorType says of its tensor, its device's name written DEV."""
    def shown(u):
        return u.str().replace(f"device={device}", "device=DEV")

    def q(f):
        try:
            return f()
        except RuntimeError as e:
            return type(e).__name__
    int16 = (pygpu if isinstance(t, pygpu.Type) else torch).int16
    return (shown(t), t.dim(), t.sizes(), t.strides(), t.scalarType(), str(t.dtype()),
            t.requires_grad(), t.undefined(), t.varyingSizes(),
            q(lambda: shown(t.contiguous())), shown(t.with_sizes([7, None])),
            shown(t.with_sizes(None)), shown(t.with_dtype(int16)), repr(t), t.kind())


@pytest.mark.parametrize("where", ["cpu", "sim"])
@pytest.mark.parametrize("case", TENSORS, ids=lambda c: f"{c[1]}{list(c[0])}{c[2]}")
def test_tensor_type_from_a_tensor_as_torchs(case, where):
    theirs = torch.TensorType.create_from_tensor(_make(torch, *case, "cpu"))
    x = _make(pygpu, *case, where)
    ours = pygpu.TensorType.create_from_tensor(x)
    assert _tensor_facts(ours, x.device) == _tensor_facts(theirs, "cpu")
    assert str(ours.device()) == str(x.device)
    assert ours.dtype() is x.dtype
    again = pygpu.TensorType.create_from_tensor(x)
    assert ours == again and ours.isSubtypeOf(pygpu.TensorType.get())
    assert ours.isSubtypeOf(pygpu.TensorType.get().with_dtype(x.dtype))
    assert not pygpu.TensorType.get().isSubtypeOf(ours)
    # symbolic sizes: the known ones, then a fresh negative symbol for each unknown
    sym = ours.with_sizes([3, None, None]).symbolic_sizes()
    assert sym[0] == 3 and sym[1] < 0 and sym[2] < 0 and sym[1] != sym[2]


def test_tensor_type_checks_its_argument():
    with pytest.raises(TypeError):
        pygpu.TensorType.create_from_tensor([1, 2])


def test_inferred_type_as_torchs():
    for M in (torch, pygpu):
        ok = M.InferredType(M.IntType.get())
        assert ok.success() and ok.type() == M.IntType.get()
        bad = M.InferredType("no annotation")
        assert not bad.success() and bad.reason() == "no annotation"
        with pytest.raises(RuntimeError, match="Reason: no annotation"):
            bad.type()
