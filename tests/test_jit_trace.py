# test_jit_trace.py - torch.jit.trace / trace_module and TorchScript's traced IR, with torch
# as the oracle: the same model traced in both gives the same outputs on new inputs, the same
# frozen branch and TracerWarning, the same aten node kinds; training a traced module trains
# the original; parse_ir round-trips; jit.save/load and freeze keep the outputs. On cpu and
# sim (tracing is device-free: it records pygpu ops, whatever device runs them).
import io
import re
import warnings

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")




def to_pg(t, device="cpu"):
    return pygpu.tensor(t.detach().numpy()).to(device)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def copy_weights(pg_mod, th_mod, device):
    with torch.no_grad():
        for (n1, p), (n2, q) in zip(pg_mod.named_parameters(), th_mod.named_parameters()):
            assert n1 == n2 and tuple(p.shape) == tuple(q.shape)
            q.copy_(torch.from_numpy(p.detach().cpu().numpy()))
    return pg_mod.to(device)


def make_mlp(lib):
    class MLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(3, 5)
            self.act = lib.nn.ReLU()
            self.fc2 = lib.nn.Linear(5, 2)

        def forward(self, x, y):
            return self.fc2(self.act(self.fc1(x))) + y
    return MLP()


def make_cnn(lib):
    class CNN(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(2, 4, 3, padding=1)
            self.fc = lib.nn.Linear(4 * 5 * 5, 3)

        def forward(self, x):
            h = lib.relu(self.conv(x))
            return self.fc(h.reshape(-1, 100))  # a shape read in Python (h.shape[0]) is frozen
    return CNN()


def aten_kinds(graph):
    return [n.kind() for n in graph.nodes() if n.kind().startswith("aten::")]


@pytest.mark.parametrize("make,shapes", [(make_mlp, [(4, 3), (4, 2)]), (make_cnn, [(2, 2, 5, 5)])])
def test_traced_module_matches_torch(device, make, shapes):
    pygpu.manual_seed(0)
    pm, tm = make(pygpu), make(torch)
    copy_weights(pm, tm, device)
    ex = [torch.randn(*s) for s in shapes]
    with warnings.catch_warnings():
        # neither tracer warns on this model (but for 2.13's DeprecationWarning)
        warnings.simplefilter("error", torch.jit.TracerWarning)
        warnings.simplefilter("error", pygpu.jit.TracerWarning)
        tt = torch.jit.trace(tm, tuple(ex))
        pt = pygpu.jit.trace(pm, tuple(to_pg(e, device) for e in ex))
    assert isinstance(pt, pygpu.jit.ScriptModule) and isinstance(pt, pygpu.nn.Module)
    assert aten_kinds(pt.graph) == aten_kinds(tt.inlined_graph)
    new = [torch.randn(*s) for s in shapes]
    close(pt(*[to_pg(n, device) for n in new]), tt(*new))
    assert all(n.kind() != "prim::CallMethod" for n in pt.graph.nodes())


def branchy(x):
    if x.sum() > 0:      # data-dependent: frozen to the example's branch
        return x * 2
    return x - 1


def test_frozen_branch_and_tracer_warning(device):
    ex = torch.ones(3)
    with pytest.warns(torch.jit.TracerWarning) as twarn:
        tf = torch.jit.trace(branchy, ex)
    with pytest.warns(pygpu.jit.TracerWarning) as pwarn:
        pf = pygpu.jit.trace(branchy, to_pg(ex, device))
    assert [str(w.message) for w in pwarn if w.category is pygpu.jit.TracerWarning][:1] == \
        [str(w.message) for w in twarn if w.category is torch.jit.TracerWarning][:1]
    neg = -torch.arange(3.0)
    close(pf(to_pg(neg, device)), tf(neg))          # both replay x * 2
    close(pf(to_pg(neg, device)), neg * 2)
    assert aten_kinds(pf.graph) == aten_kinds(tf.graph) == ["aten::mul"]


def test_number_conversion_warns_like_torch():
    def f(x):
        return x * float(x.max())
    with pytest.warns(torch.jit.TracerWarning, match="Python float"):
        torch.jit.trace(f, torch.ones(2))
    with pytest.warns(torch.jit.TracerWarning, match="Python number"):
        torch.jit.trace(lambda x: x * x.max().item(), torch.ones(2))
    with pytest.warns(pygpu.jit.TracerWarning, match="Python float"):
        pf = pygpu.jit.trace(f, pygpu.ones(2))
    with pytest.warns(pygpu.jit.TracerWarning, match="Python number"):
        pygpu.jit.trace(lambda x: x * x.max().item(), pygpu.ones(2))
    close(pf(pygpu.full((2,), 3.0)), torch.full((2,), 3.0))  # the 1.0 is frozen, as torch's


def test_training_a_traced_module(device):
    """Gradients flow through the replay to the module's own parameters, shared with the
    module traced; three SGD steps agree with torch's on its traced module."""
    pygpu.manual_seed(1)
    pm, tm = make_mlp(pygpu), make_mlp(torch)
    copy_weights(pm, tm, device)
    x, y = torch.randn(4, 3), torch.randn(4, 2)
    pt = pygpu.jit.trace(pm, (to_pg(x, device), to_pg(y, device)))
    tt = torch.jit.trace(tm, (x, y))
    popt = pygpu.optim.SGD(pt.parameters(), lr=0.1)
    topt = torch.optim.SGD(tt.parameters(), lr=0.1)
    for _ in range(3):
        xi, yi = torch.randn(4, 3), torch.randn(4, 2)
        popt.zero_grad()
        pt(to_pg(xi, device), to_pg(yi, device)).square().sum().backward()
        popt.step()
        topt.zero_grad()
        tt(xi, yi).square().sum().backward()
        topt.step()
    close(pm.fc1.weight, tm.fc1.weight, 1e-4)    # the original module was trained
    assert pt.fc1.weight is pm.fc1.weight


def test_graph_objects():
    pm = make_mlp(pygpu)
    g = pygpu.jit.trace(pm, (pygpu.randn(4, 3), pygpu.randn(4, 2))).graph
    assert isinstance(g, pygpu.Graph)
    ins = list(g.inputs())
    assert [v.debugName() for v in ins] == ["self.1", "x", "y"]
    lin = g.findNode("aten::linear")
    assert isinstance(lin, pygpu.Node) and lin.inputsSize() == 3
    assert lin.inputsAt(0) is ins[1]
    w = lin.inputsAt(1)
    assert w.node().kind() == "prim::GetAttr" and w.node().s("name") == "weight"
    assert w.node().kindOf("name") == "s" and w.node().attributeNames() == ["name"]
    uses = lin.output().uses()
    assert len(uses) == 1 and isinstance(uses[0], pygpu.Use)
    assert uses[0].user.kind() == "aten::relu" and uses[0].offset == 0
    assert str(lin.output().type()).startswith("Float(4, 5, strides=[5, 1], requires_grad=1")
    assert str(ins[1].type()) == "Float(4, 3, strides=[3, 1], requires_grad=0, device=cpu)"
    const = g.findNode("prim::Constant")
    assert const.i("value") == 1 and const.output().toIValue() == 1
    assert isinstance(g.block(), pygpu.Block) and list(g.block().nodes())[0].kind() == \
        "prim::GetAttr"
    ret = list(g.outputs())
    assert len(ret) == 1 and ret[0].node().kind() == "aten::add"
    with pytest.raises(RuntimeError):
        lin.destroy()  # its output is used
    g.lint()


def test_graph_text_like_torch():
    """The text of a traced function's graph is torch's, but for the source comments."""
    def f(x, y):
        return torch_or_pg.relu(x) * y + 1

    global torch_or_pg
    torch_or_pg = torch
    tg = str(torch.jit.trace(f, (torch.ones(2, 3), torch.ones(2, 3))).graph)
    torch_or_pg = pygpu
    pg = str(pygpu.jit.trace(f, (pygpu.ones(2, 3), pygpu.ones(2, 3))).graph)
    strip = lambda s: [re.sub(r" # .*$", "", line) for line in s.strip().splitlines()]  # noqa
    # torch writes a Python number operand as a 0-d Long tensor constant ({1}); pygpu as int
    want = [line.replace("Long(requires_grad=0, device=cpu) = prim::Constant[value={1}]",
                         "int = prim::Constant[value=1]") for line in strip(tg)]
    assert strip(pg) == want


FILECHECK_CASES = [
    ("a\nb\nc\n", [("check", "a"), ("check_next", "b"), ("check_next", "c")]),
    ("a\nb\nc\n", [("check", "a"), ("check_next", "c")]),
    ("a b\nc\n", [("check", "a"), ("check_same", "b")]),
    ("a\nb\n", [("check", "a"), ("check_same", "b")]),
    ("a\nx\nb\n", [("check", "a"), ("check_not", "x"), ("check", "b")]),
    ("a\nb\nx\n", [("check", "a"), ("check_not", "x"), ("check", "b")]),
    ("a\nb\nx\n", [("check", "b"), ("check_not", "x")]),
    ("x x x\n", [("check_count", "x", 3)]),
    ("x x x\n", [("check_count", "x", 4)]),
    ("x x x\n", [("check_count", "x", 2, True)]),
    ("x x x\n", [("check_count", "x", 3, True)]),
    ("x x\n", [("check_count", "y", 0)]),
    ("b\na\nc\n", [("check_dag", "a"), ("check_dag", "b"), ("check", "c")]),
    ("b\nc\na\n", [("check_dag", "a"), ("check_dag", "b"), ("check", "c")]),
    ("abc", [("check", "b"), ("check", "a")]),
    ("aten::add aten::mul", [("check_regex", r"aten::\w+"), ("check_regex", "mul$")]),
]


@pytest.mark.parametrize("text,checks", FILECHECK_CASES)
def test_filecheck_agrees_with_torch(text, checks):
    def run(fc_cls):
        try:
            fc = fc_cls()
            for name, *args in checks:
                fc = getattr(fc, name)(*args)
            fc.run(text)
            return True
        except RuntimeError:
            return False
    assert run(pygpu.testing.FileCheck) == run(torch.testing.FileCheck)


def test_filecheck_directives_and_graphs():
    pygpu.testing.FileCheck().run("# CHECK-COUNT-2: aten::linear\n# CHECK-NOT: aten::relu\n"
                                  "# CHECK: return",
                                  pygpu.jit.trace(make_mlp(pygpu),
                                                  (pygpu.randn(1, 3), pygpu.randn(1, 2))).graph)
    with pytest.raises(RuntimeError, match='Expected to find "aten::conv"'):
        pygpu.FileCheck().check("aten::conv").run("aten::linear")


@pytest.mark.parametrize("make,shapes", [(make_mlp, [(4, 3), (4, 2)]), (make_cnn, [(2, 2, 5, 5)])])
def test_torch_filecheck_checks_pass_on_pygpu_graph(make, shapes):
    """A FileCheck written against torch's inlined graph passes on pygpu's graph."""
    pm, tm = make(pygpu), make(torch)
    ex = [torch.randn(*s) for s in shapes]
    tg = torch.jit.trace(tm, tuple(ex)).inlined_graph
    pg = pygpu.jit.trace(pm, tuple(to_pg(e) for e in ex)).graph
    kinds = aten_kinds(tg)
    for lib, g in ((torch, tg), (pygpu, pg)):
        fc = lib.testing.FileCheck()
        for k in kinds:
            fc = fc.check(k + "(")
        fc.check_not("aten::").check("return").run(g if lib is pygpu else str(g))
        lib.testing.FileCheck().check_count('prim::GetAttr[name="weight"]', len(
            [k for k in kinds if k in ("aten::linear", "aten::_convolution")]), exactly=True
        ).run(str(g))


def test_parse_ir_round_trip_and_runs():
    pm = make_mlp(pygpu)
    tr = pygpu.jit.trace(pm, (pygpu.randn(4, 3), pygpu.randn(4, 2)))
    text = str(tr.graph)
    g = pygpu.parse_ir(text)
    assert str(g) == text
    x, y = pygpu.randn(4, 3), pygpu.randn(4, 2)
    from pygpu.jit._tracer import run_graph
    close(run_graph(g, [pm, x, y]), torch.from_numpy(pm(x, y).detach().numpy()))
    # torch's own printed graph of a function reads back to the same node kinds
    tg = torch.jit.trace(lambda a, b: torch.relu(a) * b + 1, (torch.ones(2), torch.ones(2))).graph
    pg = pygpu.parse_ir(str(tg))
    assert [n.kind() for n in pg.nodes()] == [n.kind() for n in tg.nodes()]
    assert [v.debugName() for v in pg.inputs()] == [v.debugName() for v in tg.inputs()]
    out = run_graph(pg, [pygpu.tensor([1.0, -2.0]), pygpu.tensor([3.0, 4.0])])
    assert out.tolist() == [4.0, 1.0]
    with pytest.raises(RuntimeError, match="undefined value"):
        pygpu.parse_ir("graph(%x : Tensor):\n  %1 : Tensor = aten::relu(%y)\n  return (%1)\n")


def test_save_load_and_freeze(device, tmp_path):
    pygpu.manual_seed(2)
    pm, tm = make_cnn(pygpu), make_cnn(torch)
    copy_weights(pm, tm, device)
    ex = torch.randn(2, 2, 5, 5)
    pt = pygpu.jit.trace(pm, to_pg(ex, device))
    tt = torch.jit.trace(tm, ex)
    path = tmp_path / "m.pt"
    pygpu.jit.save(pt, str(path), _extra_files={"note.txt": b"hello"})
    extra = {"note.txt": ""}
    loaded = pygpu.jit.load(str(path), _extra_files=extra)
    assert extra["note.txt"] == b"hello"
    new = torch.randn(2, 2, 5, 5)
    close(loaded(to_pg(new, device)), tt(new))
    assert str(loaded.graph) == str(pt.graph)
    assert {n for n, _ in loaded.named_parameters()} == {n for n, _ in pm.named_parameters()}
    buf = io.BytesIO()
    pt.save(buf)
    buf.seek(0)
    close(pygpu.jit.load(buf)(to_pg(new, device)), tt(new))
    with pytest.raises(RuntimeError, match="eval mode"):
        pygpu.jit.freeze(pt)
    fz = pygpu.jit.freeze(pt.eval())
    tfz = torch.jit.freeze(tt.eval())
    assert not [n for n in fz.graph.nodes() if n.kind() == "prim::GetAttr" and
                n.output().uses()]
    assert aten_kinds(fz.graph) == aten_kinds(tfz.graph)
    close(fz(to_pg(new, device)), tfz(new))


def test_is_tracing_script_and_decorators():
    seen = []

    def f(x):
        seen.append(pygpu.jit.is_tracing())
        return x + 1
    pygpu.jit.trace(f, pygpu.ones(1))
    assert seen[0] is True and pygpu.jit.is_tracing() is False  # then check_trace's rerun
    assert pygpu.jit.trace(f, pygpu.ones(1))(pygpu.ones(1)).tolist() == [2.0]
    with pytest.raises(RuntimeError, match="TorchScript"):
        pygpu.jit.script(f)
    traced = pygpu.jit.trace(f, pygpu.ones(1))
    assert pygpu.jit.script(traced) is traced
    assert pygpu.jit.ignore(f) is f and pygpu.jit.unused(f) is f and pygpu.jit.export(f) is f
    assert pygpu.jit.is_scripting() is False
    cu = pygpu.CompilationUnit()
    fn = cu.create_function("g", traced.graph)
    assert cu.find_function("g") is fn and fn(pygpu.ones(1)).tolist() == [2.0]
    with pytest.raises(RuntimeError, match="TorchScript compiler"):
        cu.define("def f(x):\n    return x\n")
    assert isinstance(pygpu.jit.trace(make_mlp(pygpu), (pygpu.ones(1, 3), pygpu.ones(1, 2))
                                      ).forward, pygpu.ScriptMethod)


def test_tuple_outputs_and_kwargs():
    def f(x, y):
        return x + y, (x * y).sum(dim=1)
    tf = torch.jit.trace(f, (torch.ones(2, 3), torch.ones(2, 3)))
    pf = pygpu.jit.trace(f, (pygpu.ones(2, 3), pygpu.ones(2, 3)))
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    for p, t in zip(pf(to_pg(a), to_pg(b)), tf(a, b)):
        close(p, t)
    assert list(pf.graph.outputs())[0].node().kind() == "prim::TupleConstruct"
    with pytest.raises(RuntimeError, match="example_kwarg_inputs or example_inputs"):
        pygpu.jit.trace(f)


def make_shift(lib):
    class Shift(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = lib.nn.Embedding(6, 3)

        def forward(self, i):
            return self.emb(i + 1) * 2
    return Shift()


def test_integer_inputs_are_traced_not_frozen(device):
    """Ops on an integer input (it cannot require grad) are recorded: indices given at
    replay are used, not the example's (torch's oracle on new indices)."""
    pygpu.manual_seed(3)
    pm, tm = make_shift(pygpu), make_shift(torch)
    copy_weights(pm, tm, device)
    idx = torch.tensor([0, 1, 2])
    pt = pygpu.jit.trace(pm, to_pg(idx, device))
    tt = torch.jit.trace(tm, idx)
    new = torch.tensor([4, 0, 3])
    close(pt(to_pg(new, device)), tt(new))
    assert "aten::embedding" in aten_kinds(pt.graph) and "aten::add" in aten_kinds(pt.graph)
    mod = pygpu.jit.trace(pm.emb.forward, to_pg(idx, device))  # trace(m.forward, x)
    assert isinstance(mod, pygpu.jit.ScriptModule)
    close(mod(to_pg(new, device)), tm.emb(new))


def test_a_captured_tensor_that_requires_grad_is_refused_as_torch_refuses():
    w = pygpu.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cannot insert a Tensor that requires grad as a "
                                           "constant"):
        pygpu.jit.trace(lambda x: x * w, pygpu.ones(2))
    tw = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cannot insert a Tensor that requires grad as a "
                                           "constant"):
        torch.jit.trace(lambda x: x * tw, torch.ones(2))


def make_nested(lib):
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = lib.nn.Linear(2, 2)

        def forward(self, x):
            return lib.relu(self.l(x))

    class Nested(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = lib.nn.Sequential(Block(), lib.nn.ReLU())

        def forward(self, x):
            return self.seq(x) * 2
    return Nested()


def test_scopes_and_attribute_names_like_torch():
    tg = torch.jit.trace(make_nested(torch), torch.ones(1, 2)).inlined_graph
    pg = pygpu.jit.trace(make_nested(pygpu), pygpu.ones(1, 2)).graph
    scopes = lambda g: [(n.kind(), n.scopeName()) for n in g.nodes()  # noqa: E731
                        if n.kind().startswith("aten::")]
    assert scopes(pg) == scopes(tg)
    assert scopes(pg)[0] == ("aten::linear", "__module.seq/__module.seq.0/__module.seq.0.l")
    names = lambda g: sorted(n.output().debugName() for n in g.nodes()  # noqa: E731
                             if n.kind() == "prim::GetAttr")
    assert names(pg) == names(tg)
    assert str(pygpu.parse_ir(str(pg))) == str(pg)   # the scopes read back
    pygpu.testing.FileCheck().check("aten::linear").check_same(
        "scope: __module.seq/__module.seq.0/__module.seq.0.l").run(pg)


def test_check_inputs_that_take_the_other_branch_fail_as_in_torch():
    with pytest.raises(torch.jit.TracingCheckError, match="Graphs differed across"):
        torch.jit.trace(branchy, torch.ones(3), check_inputs=[(-torch.ones(3),)])
    with pytest.raises(pygpu.jit.TracingCheckError, match="Graphs differed across") as e:
        pygpu.jit.trace(branchy, pygpu.ones(3), check_inputs=[(-pygpu.ones(3),)])
    assert "aten::mul" in str(e.value) and "aten::sub" in str(e.value)
    # inputs that take the traced path pass, for a function and a module
    pygpu.jit.trace(branchy, pygpu.ones(3), check_inputs=[(pygpu.full((3,), 2.0),)])
    pygpu.jit.trace(make_mlp(pygpu), (pygpu.ones(1, 3), pygpu.ones(1, 2)),
                    check_inputs=[(pygpu.zeros(1, 3), pygpu.ones(1, 2))])


def test_sequential_fused_activation_is_torchs_two_nodes(device, tmp_path):
    """pygpu's Sequential fuses Linear + ReLU into one call; the trace shows PyTorch's
    aten::linear then aten::relu, and the archive (which runs from the IR) keeps the relu."""
    pygpu.manual_seed(4)
    pm = pygpu.nn.Sequential(pygpu.nn.Linear(3, 4), pygpu.nn.ReLU(), pygpu.nn.Linear(4, 2),
                             pygpu.nn.Tanh())
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2),
                             torch.nn.Tanh())
    copy_weights(pm, tm, device)
    x = torch.randn(5, 3)
    pt = pygpu.jit.trace(pm, to_pg(x, device))
    tt = torch.jit.trace(tm, x)
    assert aten_kinds(pt.graph) == aten_kinds(tt.inlined_graph) == \
        ["aten::linear", "aten::relu", "aten::linear", "aten::tanh"]
    pygpu.jit.save(pt, str(tmp_path / "s.pt"))
    new = torch.randn(5, 3)
    close(pygpu.jit.load(str(tmp_path / "s.pt"))(to_pg(new, device)), tt(new))
    close(pt(to_pg(new, device)), tt(new))


def test_where_and_gelu():
    f = lambda x: torch_or_pg.where(x > 0, torch_or_pg.nn.functional.gelu(x), x * 0.1)  # noqa
    global torch_or_pg
    torch_or_pg = torch
    tf = torch.jit.trace(f, torch.randn(3, 4))
    torch_or_pg = pygpu
    pf = pygpu.jit.trace(f, pygpu.randn(3, 4))
    new = torch.randn(3, 4)
    close(pf(to_pg(new)), tf(new))
    assert aten_kinds(pf.graph) == aten_kinds(tf.graph)


def test_save_refuses_a_graph_it_could_not_run_back():
    """A node pygpu runs only from its recorded call (a view like chunk's pygpu::Narrow) has
    no IR runner: jit.save says so, rather than writing an archive that would not load."""
    pf = pygpu.jit.trace(lambda x: x.chunk(2, dim=1)[0] * 2, pygpu.ones(2, 4))
    assert "pygpu::Narrow" in [n.kind() for n in pf.graph.nodes()]
    close(pf(pygpu.full((2, 4), 3.0)), torch.full((2, 2), 6.0))
    with pytest.raises(RuntimeError, match="pygpu::Narrow"):
        pygpu.jit.save(pf, io.BytesIO())


@pytest.mark.parametrize("pool", ["max", "avg", "adaptive"])
def test_pooling_nodes_like_torch(pool, device, tmp_path):
    def make(lib):
        layer = {"max": lambda: lib.nn.MaxPool2d(3, 2, 1, ceil_mode=True),
                 "avg": lambda: lib.nn.AvgPool2d(3, 2, 1, count_include_pad=False),
                 "adaptive": lambda: lib.nn.AdaptiveAvgPool2d((2, 3))}[pool]()
        return lib.nn.Sequential(lib.nn.Conv2d(2, 2, 3, padding=1), layer)
    pm, tm = make(pygpu), make(torch)
    copy_weights(pm, tm, device)
    x = torch.randn(2, 2, 8, 8)  # ceil_mode changes the size (pygpu reads it back from it)
    pt, tt = pygpu.jit.trace(pm, to_pg(x, device)), torch.jit.trace(tm, x)
    assert aten_kinds(pt.graph) == aten_kinds(tt.inlined_graph)
    pool_node = [n for n in pt.graph.nodes() if "pool" in n.kind()][0]
    torch_node = [n for n in tt.inlined_graph.nodes() if "pool" in n.kind()][0]
    value = lambda v: ([i.toIValue() for i in v.node().inputs()]  # noqa: E731
                       if v.node().kind() == "prim::ListConstruct" else v.toIValue())
    assert [value(v) for v in list(pool_node.inputs())[1:]] == \
        [value(v) for v in list(torch_node.inputs())[1:]]
    pygpu.jit.save(pt, str(tmp_path / "p.pt"))
    new = torch.randn(2, 2, 8, 8)
    close(pygpu.jit.load(str(tmp_path / "p.pt"))(to_pg(new, device)), tt(new))


def test_random_draws_are_drawn_again_at_each_replay(device, tmp_path):
    """Dropout in training mode and torch.rand inside the function are ops of the graph
    (aten::rand), drawn anew at each replay as PyTorch's are, not frozen masks."""
    pm = pygpu.nn.Sequential(pygpu.nn.Linear(4, 64), pygpu.nn.Dropout(0.5)).to(device)
    pt = pygpu.jit.trace(pm, pygpu.randn(3, 4).to(device), check_trace=False)
    assert "aten::rand" in aten_kinds(pt.graph)
    x = pygpu.randn(3, 4).to(device)
    a, b = pt(x), pt(x)
    assert not bool((a == b).all())
    zeros = float((a == 0).float().mean())
    assert 0.3 < zeros < 0.7  # about half dropped, as p says
    pf = pygpu.jit.trace(lambda x: x + pygpu.rand(3, device=x.device), pygpu.ones(3).to(device),
                         check_trace=False)
    tf = torch.jit.trace(lambda x: x + torch.rand(3), torch.ones(3), check_trace=False)
    assert aten_kinds(pf.graph) == aten_kinds(tf.graph) == ["aten::rand", "aten::add"]
    one = pygpu.ones(3).to(device)
    assert not bool((pf(one) == pf(one)).all())
    pygpu.jit.save(pf, str(tmp_path / "r.pt"))
    out = pygpu.jit.load(str(tmp_path / "r.pt"))(one)
    assert bool(((out >= 1) & (out < 2)).all())
