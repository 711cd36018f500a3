# test_pytorch_names_53b.py - issue 43's public names, the classes and module-level helpers
# (names43b): each against torch, the oracle. PyTorchFileReader/Writer (a file torch writes
# reads here record for record, and the reverse), the complex storages, SymInt/SymFloat/
# SymBool, JITException/FatalError, nn.factory_kwargs, nn.functional's _jit_internal helpers,
# autograd's enforce_grad_layout_policy, NestedIOFunction and legacy profiler types,
# classproperty and thread_safe_generator.
import io
import threading
import warnings
import zipfile

import pytest

import pygpu
import pygpu.autograd
import pygpu.nn
import pygpu.nn.functional as PF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402


# ---- PyTorchFileReader / PyTorchFileWriter ---------------------------------------------------

def _torch_checkpoint():
    buf = io.BytesIO()
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "n": 3, "i": torch.tensor([1, 2])}, buf)
    return buf.getvalue()


def test_a_torch_checkpoint_reads_record_for_record():
    data = _torch_checkpoint()
    ours, theirs = pygpu.PyTorchFileReader(io.BytesIO(data)), torch.PyTorchFileReader(
        io.BytesIO(data))
    assert ours.get_all_records() == theirs.get_all_records()
    assert ours.serialization_id() == theirs.serialization_id()
    for name in theirs.get_all_records():
        assert ours.has_record(name)
        assert ours.get_record(name) == theirs.get_record(name)
        assert ours.get_record_size(name) == theirs.get_record_size(name)
        assert ours.get_record_offset(name) == theirs.get_record_offset(name)
        assert ours.get_record_header_offset(name) == theirs.get_record_header_offset(name)
        assert ours.get_record_offset_no_read(
            ours.get_record_header_offset(name), "archive/" + name, ours.get_record_size(name),
            64) == theirs.get_record_offset_no_read(
            theirs.get_record_header_offset(name), "archive/" + name,
            theirs.get_record_size(name), 64)
    assert not ours.has_record("nope") and not theirs.has_record("nope")


def test_get_storage_from_record_as_torch():
    data = _torch_checkpoint()
    ours, theirs = pygpu.PyTorchFileReader(io.BytesIO(data)), torch.PyTorchFileReader(
        io.BytesIO(data))
    for numel, ptype, ttype in ((6, pygpu.float32, torch.float32),
                                (24, pygpu.UntypedStorage, torch.UntypedStorage)):
        a = ours.get_storage_from_record("data/0", numel, ptype)
        b = theirs.get_storage_from_record("data/0", numel, ttype)
        assert tuple(a.shape) == tuple(b.shape) == (0,)
        assert str(a.dtype) == str(b.dtype)
        assert a.untyped_storage().tolist() == b.untyped_storage().tolist()
    for numel, ptype, ttype in ((6, pygpu.float64, torch.float64), (5, pygpu.float32,
                                                                     torch.float32)):
        with pytest.raises(RuntimeError) as ours_err:
            ours.get_storage_from_record("data/0", numel, ptype)
        with pytest.raises(RuntimeError) as theirs_err:
            theirs.get_storage_from_record("data/0", numel, ttype)
        assert str(ours_err.value) == str(theirs_err.value)


def test_the_readers_refuse_as_torch():
    for bad in (io.BytesIO(b"garbage"),):
        with pytest.raises(RuntimeError, match="PytorchStreamReader failed reading zip archive"):
            pygpu.PyTorchFileReader(bad)
        with pytest.raises(RuntimeError, match="PytorchStreamReader failed reading zip archive"):
            torch.PyTorchFileReader(io.BytesIO(b"garbage"))
    for mod in (pygpu, torch):
        with pytest.raises(RuntimeError, match="errno 2"):
            mod.PyTorchFileReader("/nonexistent/x.pt")
        with pytest.raises(AttributeError):
            mod.PyTorchFileReader(3)
        r = mod.PyTorchFileReader(io.BytesIO(_torch_checkpoint()))
        with pytest.raises(RuntimeError, match="PytorchStreamReader failed locating file zz"):
            r.get_record("zz")
        flat = io.BytesIO()
        with zipfile.ZipFile(flat, "w") as z:
            z.writestr("top.txt", "x")
        with pytest.raises(RuntimeError, match="not in a subdirectory: top.txt"):
            mod.PyTorchFileReader(io.BytesIO(flat.getvalue()))
        nover = io.BytesIO()
        with zipfile.ZipFile(nover, "w") as z:
            z.writestr("a/data.pkl", "x")
        with pytest.raises(RuntimeError, match='hasRecord\\("version"\\)'):
            mod.PyTorchFileReader(io.BytesIO(nover.getvalue()))


def _write(mod, sink):
    w = mod.PyTorchFileWriter(sink)
    w.write_record("data.pkl", b"abc", 3)
    w.write_record("text", "hello", 5)
    w.write_record("cut", b"xyzw", 2)
    w.write_record("data/0", mod.arange(3.0).untyped_storage(), 12)
    written = w.get_all_written_records()
    with pytest.raises(RuntimeError, match="Tried to serialize file twice: text"):
        w.write_record("text", b"x", 1)
    assert w.serialization_id() == ""
    w.write_end_of_file()
    with pytest.raises(RuntimeError, match="finalized_"):
        w.write_record("late", b"x", 1)
    return w, written


def test_the_writers_write_the_same_records_and_each_reads_the_other():
    ours_buf, theirs_buf = io.BytesIO(), io.BytesIO()
    ours, ours_written = _write(pygpu, ours_buf)
    theirs, theirs_written = _write(torch, theirs_buf)
    assert ours_written == theirs_written
    assert ours.archive_name() == theirs.archive_name() == "archive"
    assert len(ours.serialization_id()) == len(theirs.serialization_id()) == 40
    assert ours.serialization_id().isdigit()
    z_ours = zipfile.ZipFile(io.BytesIO(ours_buf.getvalue()))
    z_theirs = zipfile.ZipFile(io.BytesIO(theirs_buf.getvalue()))
    assert z_ours.namelist() == z_theirs.namelist()
    for name in z_theirs.namelist():
        if not name.endswith("serialization_id"):
            assert z_ours.read(name) == z_theirs.read(name), name
    for data in (ours_buf.getvalue(), theirs_buf.getvalue()):  # across, both ways
        a, b = pygpu.PyTorchFileReader(io.BytesIO(data)), torch.PyTorchFileReader(
            io.BytesIO(data))
        assert a.get_all_records() == b.get_all_records()
        for name in b.get_all_records():
            assert a.get_record(name) == b.get_record(name)
            assert b.get_record_offset(name) % 64 == 0  # the data aligned, as torch's
    assert torch.PyTorchFileReader(io.BytesIO(ours_buf.getvalue())).serialization_id() == \
        ours.serialization_id()


def test_a_writer_on_a_path_names_its_folder_after_the_file(tmp_path):
    for mod in (pygpu, torch):
        w = mod.PyTorchFileWriter(str(tmp_path / f"{mod.__name__}.model.pt"))
        assert w.archive_name() == f"{mod.__name__}.model"
        w.set_min_version(5)
        w.write_end_of_file()
        z = zipfile.ZipFile(tmp_path / f"{mod.__name__}.model.pt")
        assert z.read(f"{mod.__name__}.model/version") == b"5\n"
        with pytest.raises(RuntimeError, match="Parent directory /nonexistent does not exist"):
            mod.PyTorchFileWriter("/nonexistent/x.pt")


def test_save_and_load_go_through_the_archive_classes(tmp_path):
    path = tmp_path / "ck.pt"
    pygpu.save({"w": pygpu.arange(4.0)}, path)
    r = torch.PyTorchFileReader(str(path))
    torch.save({"w": torch.arange(4.0)}, tmp_path / "theirs.pt")
    t = torch.PyTorchFileReader(str(tmp_path / "theirs.pt"))
    assert r.get_all_records() == t.get_all_records()
    assert zipfile.ZipFile(path).namelist()[0] == "ck/data.pkl"  # torch.save's folder
    assert torch.load(path)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert pygpu.load(tmp_path / "theirs.pt")["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


# ---- the complex storages ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ComplexFloatStorage", "ComplexDoubleStorage"])
def test_complex_storages(name):
    ours, theirs = getattr(pygpu, name), getattr(torch, name)
    assert str(ours.dtype) == str(theirs.dtype)
    s, ts = ours([1 + 2j, 3]), theirs([1 + 2j, 3])
    assert list(s) == list(ts) and str(s.dtype) == str(ts.dtype) and s.size() == ts.size()
    t = pygpu.zeros(2, dtype=ours.dtype)
    assert t.storage_type() is ours and isinstance(t.storage(), ours)
    assert torch.zeros(2, dtype=theirs.dtype).storage_type() is theirs


# ---- SymInt, SymFloat, SymBool ------------------------------------------------------------------

class _Node:
    """A node of the protocol torch's Sym classes speak (sym_node.SymNode's methods)."""

    def __init__(self, v):
        self.v = v

    def is_constant(self):
        return False

    def is_int(self):
        return type(self.v) is int

    def is_float(self):
        return type(self.v) is float

    def is_bool(self):
        return type(self.v) is bool

    def is_nested_int(self):
        return False

    def wrap_int(self, x):
        return _Node(x)

    def wrap_float(self, x):
        return _Node(float(x))

    def wrap_bool(self, x):
        return _Node(bool(x))

    def int_(self):
        return int(self.v)

    def bool_(self):
        return bool(self.v)

    def guard_int(self, f, l):
        return int(self.v)

    def guard_bool(self, f, l):
        return bool(self.v)

    def guard_float(self, f, l):
        return float(self.v)

    def _graph_repr(self):
        return f"s{self.v}"

    def add(self, o):
        return _Node(self.v + o.v)

    def sub(self, o):
        return _Node(self.v - o.v)

    def mul(self, o):
        return _Node(self.v * o.v)

    def lt(self, o):
        return _Node(self.v < o.v)

    def eq(self, o):
        return _Node(self.v == o.v)

    def ne(self, o):
        return _Node(self.v != o.v)

    def neg(self):
        return _Node(-self.v)


def test_sym_classes_are_eager_pytorchs():
    for name in ("SymInt", "SymFloat", "SymBool"):
        ours, theirs = getattr(pygpu, name), getattr(torch, name)
        assert ours.__name__ == theirs.__name__ and ours.__module__ == theirs.__module__
        for value in (3, 2.5, True):
            assert isinstance(value, ours) == isinstance(value, theirs) is False
    for mod in (pygpu, torch):  # sym_* on concrete numbers return plain numbers
        assert not isinstance(mod.sym_int(3.7), mod.SymInt)


@pytest.mark.parametrize("expr", ["int(a)", "a.__index__()", "repr(a)", "(a + 4).node.v",
                                  "(4 + a).node.v", "(a - 1).node.v", "(1 - a).node.v",
                                  "(a * a).node.v", "bool(a)", "type(a < 5).__name__",
                                  "bool(a < 5)", "(-a).node.v", "round(a) is a",
                                  "a.as_integer_ratio()[1]", "a.bit_length()",
                                  "float(f)", "int(b)", "bool(b)", "repr(f)",
                                  "f.as_integer_ratio()", "f.hex()", "(f + 1).node.v",
                                  "(a + 0.5).node.v", "type(a + 0.5).__name__",
                                  "a.__add__('x')", "a.node.v"])
def test_sym_classes_redirect_to_their_node_as_torch(expr):
    def run(mod):
        env = {"a": mod.SymInt(_Node(3)), "f": mod.SymFloat(_Node(2.5)),
               "b": mod.SymBool(_Node(True))}
        try:
            return eval(expr, {}, env)
        except Exception as e:  # noqa: BLE001 - the oracle's exception type is the answer
            return type(e)
    assert run(pygpu) == run(torch)


# ---- JITException, FatalError --------------------------------------------------------------------

def test_jit_exception_classes():
    assert pygpu.jit.Error is pygpu.JITException
    assert torch.jit.Error is torch.JITException
    for name in ("JITException", "FatalError"):
        ours, theirs = getattr(pygpu, name), getattr(torch, name)
        assert ours.__name__ == theirs.__name__ and ours.__module__ == theirs.__module__
        assert [c.__name__ for c in ours.__mro__] == [c.__name__ for c in theirs.__mro__]
        with pytest.raises(ours, match="boom"):
            raise ours("boom")


# ---- nn.factory_kwargs ------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [None, {}, {"device": "cpu"}, {"dtype": "D"},
                                    {"device": "cpu", "dtype": "D", "memory_format": "M"},
                                    {"factory_kwargs": {"dtype": "D"}, "device": "cpu"},
                                    {"factory_kwargs": {"dtype": "D"}, "dtype": "D"},
                                    {"bias": True}, {"device": "cpu", "other": 1}])
def test_factory_kwargs(kwargs):
    def run(mod):
        try:
            return mod.nn.factory_kwargs(kwargs)
        except TypeError as e:
            return ("TypeError", str(e))
    assert run(pygpu) == run(torch)
    made = pygpu.empty(3, **pygpu.nn.factory_kwargs({"dtype": pygpu.float64, "device": "cpu"}))
    assert made.dtype is pygpu.float64


# ---- nn.functional's _jit_internal helpers ----------------------------------------------------

def test_broadcasting_lists_and_dtype():
    for name in ("BroadcastingList1", "BroadcastingList2", "BroadcastingList3"):
        assert getattr(PF, name)[int] is getattr(TF, name)[int] is None
        assert type(getattr(PF, name)).__name__ == type(getattr(TF, name)).__name__
    assert PF.BroadcastingList2 is PF.BroadcastingList1
    assert PF.DType is TF.DType is int


@pytest.mark.parametrize("arg", [3, (1, 2), [1, 2, 3], (1,)])
def test_assert_int_or_pair(arg):
    def run(F):
        try:
            return F.assert_int_or_pair(arg, "kernel_size", "{} must be int or pair")
        except AssertionError as e:
            return str(e)
    assert run(PF) == run(TF)


def test_boolean_dispatch():
    def with_idx(x, flag=False):
        """the doc"""
        return ("true", x)

    def without(x, flag=False):
        return ("false", x)

    for F in (PF, TF):
        fn = F.boolean_dispatch("flag", 1, False, with_idx, without, "my.mod", "pick")
        assert fn(1) == ("false", 1) and fn(1, True) == ("true", 1)
        assert fn(1, flag=True) == ("true", 1) and fn(1, flag=0) == ("false", 1)
        assert fn.__name__ == "pick" and fn.__module__ == "my.mod" and fn.__doc__ == "the doc"
        assert without.__doc__ == "the doc"
        without.__doc__ = None

    def a():
        """a"""

    def b():
        """b"""
    for F in (PF, TF):
        with pytest.raises(RuntimeError, match="only one function can have a docstring"):
            F.boolean_dispatch("f", 0, False, a, b, None, None)


# ---- classproperty, thread_safe_generator ---------------------------------------------------

def test_classproperty():
    for mod in (pygpu, torch):
        class C:
            base = 2

            @mod.classproperty
            def doubled(cls):
                return cls.base * 2

            @mod.classproperty
            @staticmethod
            def fixed():
                return "s"

        class D(C):
            base = 5
        assert (C.doubled, C().doubled, D.doubled, C.fixed) == (4, 4, 10, "s")


def test_thread_safe_generator_outside_and_inside_workers():
    assert pygpu.thread_safe_generator() is None and torch.thread_safe_generator() is None
    seen = []

    class DS(pygpu.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            seen.append(pygpu.thread_safe_generator())
            return pygpu.tensor([i])

    list(pygpu.utils.data.DataLoader(DS(), batch_size=1))
    assert seen == [None, None]  # the main process, and process workers: the default generator
    out = []
    t = threading.Thread(target=lambda: out.append(pygpu.thread_safe_generator()))
    t.start()
    t.join()
    assert out == [None]


# ---- autograd: enforce_grad_layout_policy ------------------------------------------------------

def _permuted(mod):
    return mod.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()


@pytest.mark.parametrize("where", ["cpu", "sim"])
def test_grad_layout_contract_and_policy(where):
    results = {}
    for mod in (pygpu, torch):
        dev = where if mod is pygpu else "cpu"
        p = mod.empty(2, 3, 4, device=dev).permute(2, 0, 1).requires_grad_()
        (p * 2).sum().backward()
        enforced = p.grad.stride()
        p.grad = None
        with mod.autograd.enforce_grad_layout_policy(False):
            (p * 2).sum().backward()
        relaxed = p.grad.stride()
        p.grad = None
        g = mod.ones(4, 2, 3, device=dev)
        with mod.autograd.enforce_grad_layout_policy(False):
            p.backward(g)  # the caller holds g: copied into the contract's layout
        held = (p.grad.stride(), p.grad is g, p.grad.tolist() == g.tolist())
        q = mod.ones(3, device=dev, requires_grad=True)
        g = mod.ones(3, device=dev)
        q.backward(g)
        results[mod] = (enforced, relaxed, held, q.grad is g)
    assert results[pygpu] == results[torch]
    assert results[torch][0] == (1, 12, 4)


def test_enforce_grad_layout_policy_as_object_context_and_decorator():
    from pygpu.autograd import grad_layout
    for mod, flag in ((pygpu, grad_layout.is_enforced),
                      (torch, torch._C._is_grad_layout_enforcement_enabled)):
        P = mod.autograd.enforce_grad_layout_policy
        assert flag() is True
        e = P(False)
        assert flag() is False  # made: in effect at once, as torch's
        with e:
            assert flag() is False
        assert flag() is True

        @P(False)
        def inside():
            return flag()
        assert flag() is True and inside() is False and flag() is True
        assert P(False).clone().mode is False and flag() is False
        P(True)
        assert flag() is True


# ---- autograd: NestedIOFunction -----------------------------------------------------------

def test_nested_io_function_as_torch_2_13():
    results = {}
    for mod in (pygpu, torch):
        class Fn(mod.autograd.NestedIOFunction):
            def forward_extended(self, a, pair):
                return a * 2, (pair[0] + pair[1],)

        x = mod.ones(2, requires_grad=True)
        assert issubclass(Fn, mod.autograd.Function)
        got = []
        for call in (lambda: Fn()(x, (x, x)), lambda: Fn.apply(x, (x, x))):
            with warnings.catch_warnings():  # torch: "should not be instantiated"
                warnings.simplefilter("ignore", DeprecationWarning)
                try:
                    call()
                    got.append(None)
                except Exception as e:  # noqa: BLE001 - the type is the answer
                    got.append(type(e))
        f = Fn()
        f.save_for_backward(x, (x, None))
        f.mark_dirty(x, y=[x])
        f.mark_non_differentiable([x])
        with pytest.raises(NotImplementedError):
            mod.autograd.NestedIOFunction().forward_extended(x)
        with pytest.raises(ValueError, match="Auto nesting doesn't know"):
            f.save_for_backward(x, object())
        results[mod] = (got, len(f.to_save), f._to_save_nested[1][1], len(f.dirty_tensors),
                        len(f.non_differentiable))
    assert results[pygpu] == results[torch]


# ---- autograd: the legacy profiler's types ------------------------------------------------------

def test_profiler_state_and_config():
    ours, theirs = pygpu.autograd.ProfilerState, torch.autograd.ProfilerState
    assert {k: int(v) for k, v in ours.__members__.items()} == \
        {k: int(v) for k, v in theirs.__members__.items()}
    assert repr(ours.CPU) == repr(theirs.CPU) and str(ours.KINETO) == str(theirs.KINETO)
    assert ours.CPU.name == theirs.CPU.name and ours.CPU.value == theirs.CPU.value
    from torch._C._profiler import _ExperimentalConfig
    for mod, exp in ((pygpu, None), (torch, _ExperimentalConfig())):
        A = mod.autograd
        A.ProfilerConfig(A.ProfilerState.CPU, False, True, False, False, False, exp)
        with pytest.raises(TypeError, match="incompatible constructor arguments"):
            A.ProfilerConfig(1, False, False, False, False, False, exp)
        with pytest.raises(TypeError, match="incompatible constructor arguments"):
            A.ProfilerConfig(A.ProfilerState.CPU, "x", False, False, False, False, exp)
        c = A.ProfilerConfig(A.ProfilerState.CPU, 1, None, 0.0, False, False, exp)  # pybind's
        assert c is not None                                           # bool: numbers, None


def test_legacy_profiler_events():
    from torch._C._profiler import _ExperimentalConfig
    streams = {}
    for mod, exp in ((pygpu, None), (torch, _ExperimentalConfig())):
        A = mod.autograd
        A._enable_profiler_legacy(A.ProfilerConfig(A.ProfilerState.CPU, True, False, False,
                                                   False, False, exp))
        with pytest.raises(RuntimeError):
            A._enable_profiler_legacy(A.ProfilerConfig(A.ProfilerState.CPU, True, False,
                                                       False, False, False, exp))
        mod.ones(2) * 3
        events = A._disable_profiler_legacy()
        streams[mod] = events
        first = events[0][0]
        assert isinstance(first, A.ProfilerEvent)
        assert (first.kind(), first.name()) == ("mark", "__start_profile")
        kinds = [e.kind() for thread in events for e in thread]
        assert kinds.count("push") == kinds.count("pop") > 0
        depth = 0
        for e in events[0][1:]:  # balanced, in order
            depth += {"push": 1, "pop": -1}.get(e.kind(), 0)
            assert depth >= 0
        push = next(e for e in events[0] if e.kind() == "push")
        pop = next(e for e in events[0] if e.kind() == "pop")
        assert push.cpu_elapsed_us(pop) >= 0 and not push.has_cuda()
        assert isinstance(push.shapes(), list) and push.thread_id() == first.thread_id()
    theirs_names = {m for m in dir(torch.autograd.ProfilerEvent) if not m.startswith("_")}
    ours_names = {m for m in dir(pygpu.autograd.ProfilerEvent) if not m.startswith("_")}
    assert theirs_names <= ours_names
