# test_op_registry.py - the op table (csrc/core/pg_ops.def) is the one list of ops.
#
# _C._op_table() is generated from that file, as are the module functions and
# tensor methods of the binary, unary and reduce ops, the autograd rules'
# names (pygpu/autograd/rules.py) and the node names sim.inject_fault accepts.
# Here every row must have: every Python binding it names; a backward rule (or
# autograd Function), or a declared "not differentiable" that really records
# nothing; a fault hook that fires on sim; and an entry in tests/op_references.py.
import functools

import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F
from pygpu import _C, _ops
from pygpu._ops import _train as _train_ops
from pygpu.autograd import rules

TABLE = _C._op_table()
NAMES = [row[0] for row in TABLE]
NODES = sorted({row[2] for row in TABLE if row[2] is not None})


def _resolve(qualified):
    """The function a public name reaches: through its __torch_function__ dispatcher
    (pygpu/overrides: each public function is wrapped in one), the function it wraps."""
    root, *path = qualified.split(".")
    obj = {"pygpu": pygpu, "Tensor": pygpu.Tensor, "_C": _C}[root]
    for part in path:
        obj = getattr(obj, part)
    return _unwrap(obj)


def _unwrap(f):
    return f.__wrapped__ if isinstance(f, (_C._TorchFunctionDispatch, _C._TorchFunctionMethod)) \
        else f


def test_the_table_is_well_formed():
    assert len(NAMES) == len(set(NAMES)), "two rows share a name"
    families = {"binary", "unary", "reduce", "matmul", "view", "copy", "create", "train", "select",
                "composite"}
    for name, family, node, py, grad, *_ in TABLE:
        assert family in families, (name, family)
        assert py, f"{name}: no Python name reaches it"
        assert grad is None or grad[:1].isupper(), (name, grad)


@pytest.mark.parametrize("name,py", [(r[0], r[3]) for r in TABLE], ids=NAMES)
def test_every_op_has_its_bindings(name, py):
    for qualified in py:
        assert callable(_resolve(qualified)) or qualified == "Tensor.T", qualified


_SURFACE_FUNCTIONS = set(pygpu._tensor.surface._AS_FUNCTIONS)
# functions that take a sparse operand besides the row's (pygpu/sparse/_compressed.py): the C
# function for dense operands, the sparse product otherwise
_SPARSE_AWARE = {"matmul": pygpu.sparse._compressed.matmul}


def test_generated_functions_and_methods_are_the_table_rows():
    for name, family, _, py, _, *_ in TABLE:
        if family in ("binary", "unary", "reduce"):
            for q in py:
                if q[6:] in _SURFACE_FUNCTIONS:  # torch's signature over the row's op
                    assert _resolve(q).__name__ == name, q  # (pygpu.max(x, 1): values, indices)
                elif q.startswith("pygpu."):  # generated into _C and re-exported
                    assert getattr(_C, name) is _resolve(q), q


@pytest.mark.parametrize("name,family,grad", [(r[0], r[1], r[4]) for r in TABLE], ids=NAMES)
def test_every_op_has_a_backward_rule_or_is_declared_not_differentiable(name, family, grad):
    if grad is None:
        assert name not in rules.RULES
    elif family == "train":  # an autograd Function with its backward beside its forward:
        # a fused op's in _ops/_train.py, a composite's in pygpu/_ops/
        fn = getattr(_train_ops, "_" + grad, None) or getattr(_ops, "_" + grad)
        assert issubclass(fn, pygpu.autograd.Function) and "backward" in vars(fn)
    else:
        assert name in rules.RULES
        assert rules.pretty(name) == grad


def _leaf(*shape, dtype=np.float32):
    t = pygpu.tensor(np.random.default_rng(0).standard_normal(shape).astype(dtype) + 2)
    return t.requires_grad_()


def _elementwise_fn(row):
    """How to call a binary/unary row: its generated function (pygpu.<name>, or _C.<name>
    for a special_* row, pygpu.special.<x>) when there is one, else its Tensor method."""
    name, py = row[0], row[3]
    if callable(getattr(_C, name, None)):
        return getattr(_C, name)
    method = next(q.split(".")[1] for q in py if q.startswith("Tensor.") and "__" not in q
                  and not q.endswith("_"))
    return lambda x, *rest: getattr(x, method)(*rest)


# rows whose `in` column refuses float tensors (so no float leaf reaches them)
_INT_ONLY = {r[0] for r in TABLE if r[0].startswith("bitwise_")} | {"logical_not"}  # bitwise_not too


@pytest.mark.parametrize("row", [r for r in TABLE if r[1] in ("binary", "unary", "reduce")
                                 and r[0] not in _INT_ONLY], ids=lambda r: r[0])
def test_recording_follows_the_table(row):
    """A differentiable row records its grad_fn from a leaf that requires grad; a row
    declared not differentiable records nothing (bitwise rows take no float leaf)."""
    name, family, _, _, grad, *_ = row
    x, y = _leaf(3), _leaf(3)
    if family == "reduce":
        out = getattr(_C, name)(_leaf(3, 2), axis=0)
    else:
        fn = _elementwise_fn(row)
        out = fn(x) if family == "unary" else fn(x, y)
    if grad is None:
        assert out.grad_fn is None
    else:
        assert out.grad_fn is not None and grad in repr(out.grad_fn)


# ---- the fault hook: every node name arms a fault on sim, and that fault fires -------------

def _sim(*shape, dtype=np.float32):
    return pygpu.tensor(np.random.default_rng(1).standard_normal(shape).astype(dtype), device="sim:0")


def _sgd():
    p = _sim(4)
    p.grad = _sim(4)
    pygpu.optim.SGD([p], lr=0.1, momentum=0.9).step()
    return p


def _adam():
    p = _sim(4)
    p.grad = _sim(4)
    pygpu.optim.Adam([p], lr=0.1).step()
    return p


def _linear_backward():
    x, w = _sim(2, 3), _sim(4, 3).requires_grad_()
    F.linear(x, w, activation="relu").sum().backward()
    return w.grad


def _xent_backward():
    logits = _sim(2, 5).requires_grad_()
    pygpu.cross_entropy(logits, pygpu.tensor(np.array([1, 3]), device="sim:0")).backward()
    return logits.grad


def _conv_backward(which):
    x, w = _sim(1, 2, 5, 5).requires_grad_(which == "x"), _sim(3, 2, 3, 3).requires_grad_()
    F.conv2d(x, w).sum().backward()
    return x.grad if which == "x" else w.grad


def _pool_backward():
    x = _sim(1, 2, 4, 4).requires_grad_()
    F.max_pool2d(x, 2).sum().backward()
    return x.grad


def _batch_norm_backward():
    x = _sim(3, 2, 4).requires_grad_()
    F.batch_norm(x, None, None, training=True).sum().backward()
    return x.grad


def _run_elementwise(row):
    """Run a binary/unary row on sim with inputs it takes (bool for the bitwise/logical
    rows that refuse floats, int32 for the shifts, which refuse bool too)."""
    fn = _elementwise_fn(row)
    n = 2 if row[1] == "binary" else 1
    for make in (lambda: _sim(5), lambda: _sim(5) > 0, lambda: (_sim(5) * 4).int()):
        try:
            return fn(*[make() for _ in range(n)])
        except TypeError:
            continue
    raise TypeError(f"{row[0]}: no dtype of float32, bool and int32 runs it")


RUN_NODE = {
    **{r[0]: (lambda r=r: _run_elementwise(r)) for r in TABLE if r[1] in ("binary", "unary")},
    **{n: (lambda n=n: getattr(_C, n)(_sim(3, 4), axis=0)) for n in ("sum", "max", "min", "argmax")},
    "where": lambda: pygpu.where(_sim(5) > 0, _sim(5), _sim(5)),
    "clamp": lambda: _sim(5).clamp_(-0.5, 0.5),  # two number bounds: one CLAMP node
    "softmax": lambda: pygpu.softmax(_sim(3, 4), -1),  # the last axis: one SOFTMAX node
    "layer_norm": lambda: F.layer_norm(_sim(3, 4), (4,), _sim(4), _sim(4)),  # one LAYER_NORM node
    "matmul": lambda: _sim(3, 4) @ _sim(4, 2),
    "copy": lambda: _sim(5).astype(pygpu.float64),
    "fill": lambda: pygpu.zeros(5, device="sim:0"),
    "arange": lambda: pygpu.arange(5, device="sim:0"),
    "rand": lambda: pygpu.rand(5, device="sim:0"),
    "randn": lambda: pygpu.randn(5, device="sim:0"),
    "linear": lambda: F.linear(_sim(2, 3), _sim(4, 3)),
    "linear_backward": _linear_backward,
    "cross_entropy": lambda: pygpu.cross_entropy(_sim(2, 5), pygpu.tensor(np.array([1, 3]), device="sim:0")),
    "cross_entropy_backward": _xent_backward,
    "sgd": _sgd,
    "adam": _adam,
    "unscale_": lambda: _C._amp_unscale_(_sim(4), 0.5, pygpu.zeros((), device="sim:0")),
    "conv2d": lambda: F.conv2d(_sim(1, 2, 5, 5), _sim(3, 2, 3, 3)),
    "conv2d_input_backward": lambda: _conv_backward("x"),
    "conv2d_weight_backward": lambda: _conv_backward("w"),
    "pool2d": lambda: F.avg_pool2d(_sim(1, 2, 4, 4), 2),
    "pool2d_backward": _pool_backward,
    "batch_norm": lambda: F.batch_norm(_sim(3, 2, 4), None, None, training=True),
    "batch_norm_backward": _batch_norm_backward,
    "rnn_cell": lambda: pygpu.nn.GRU(3, 4).to("sim:0")(_sim(2, 1, 3)),
    "rnn_cell_backward": lambda: pygpu.nn.GRU(3, 4).to("sim:0")(_sim(2, 1, 3))[0].sum().backward(),
    "scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(
        _sim(1, 2, 3, 4), _sim(1, 2, 3, 4), _sim(1, 2, 3, 4)),
    "scaled_dot_product_attention_backward": lambda: F.scaled_dot_product_attention(
        _sim(1, 2, 3, 4).requires_grad_(), _sim(1, 2, 3, 4), _sim(1, 2, 3, 4)).sum().backward(),
    "qlinear": lambda: pygpu.quantization.quantize_dynamic(pygpu.nn.Linear(3, 4).to("sim:0"))(_sim(2, 3)),
    "addcmul": lambda: pygpu.addcmul(_sim(5), _sim(5), _sim(5), value=0.5),  # one TERNARY node
    "addcdiv": lambda: _sim(5).addcdiv_(_sim(5), _sim(5)),
    "lerp": lambda: pygpu.lerp(_sim(5), _sim(5), 0.25),
}


def _drain():
    for _ in range(5):
        try:
            pygpu.synchronize()
            return
        except pygpu.AsyncOpError:
            continue


def test_every_node_name_has_a_way_to_run_it_here():
    assert sorted(RUN_NODE) == NODES


@pytest.mark.parametrize("node", NODES)
def test_every_node_name_has_a_fault_hook_that_fires(node):
    _drain()
    pygpu.sim.inject_fault(node, device=0)  # refused for a name sim does not know
    try:
        with pytest.raises(pygpu.AsyncOpError, match=node):
            RUN_NODE[node]()
            pygpu.synchronize("sim:0")
    finally:
        _drain()
    RUN_NODE[node]()  # the fault fired once and is gone
    pygpu.synchronize("sim:0")


def test_an_unknown_name_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="linear, linear_backward, cross_entropy"):
        pygpu.sim.inject_fault("mean")


def test_every_op_has_its_reference_in_the_op_table_suite():
    """tests/op_references.py has an entry for every row (the suite's cases come from the
    table; tests/test_ops_semantics.py says what is missing in more detail)."""
    from op_references import REFS

    missing = [n for n in NAMES if n not in REFS]
    assert not missing, f"ops without an entry in tests/op_references.py: {missing}"


# ---- the lists generated from the table agree with it (a list kept by hand would drift) ----

def test_pygpu_exports_every_generated_function_of_the_table():
    generated = {q[len("pygpu."):] for row in TABLE for q in row[3]
                 if q.startswith("pygpu.") and q.count(".") == 1
                 and callable(getattr(_C, q[len("pygpu."):], None))}
    assert generated <= set(pygpu.__all__), sorted(generated - set(pygpu.__all__))
    for name in generated:
        if name in _SURFACE_FUNCTIONS:  # torch's signature over the row's op (pygpu.max)
            continue
        if name in _SPARSE_AWARE:  # torch.matmul takes a sparse operand too
            assert _unwrap(getattr(pygpu, name)) is _unwrap(_SPARSE_AWARE[name]), name
            continue
        assert _unwrap(getattr(pygpu, name)) is getattr(_C, name), name
    # a row's PyTorch spellings (pygpu.mul) export that row's function
    for row in TABLE:
        own = getattr(_C, row[0], None)
        for q in row[3]:
            name = q[len("pygpu."):]
            if q.startswith("pygpu.") and "." not in name and name not in generated and own:
                assert name in pygpu.__all__, name
                assert getattr(pygpu, name) is getattr(pygpu, row[0]), name


def test_the_activations_are_the_tables_rows_everywhere():
    from pygpu.nn import layers, memory
    import _helpers

    acts = _C._act_table()
    names = [name for name, _, _ in acts]
    assert [code for _, code, _ in acts] == list(range(1, len(acts) + 1)), "codes: 1.. in order"
    assert _train_ops._ACTS == {None: 0, **{n: c for n, c, _ in acts}}
    assert layers._ACTIVATIONS == tuple(names)
    assert {cls.__name__: n for cls, n in layers._FUSABLE.items()} == {m: n for n, _, m in acts}
    assert set(memory._ELEMENTWISE) == set(layers._FUSABLE)
    assert set(_helpers.ACT_NP) == {None, *names}, "tests/_helpers.py: a NumPy reference per row"
    for cls, name in layers._FUSABLE.items():  # the module computes what the fused op does
        x = pygpu.tensor(np.linspace(-2, 2, 7))
        np.testing.assert_allclose(cls()(x).numpy(), _helpers.ACT_NP[name][0](x.numpy()),
                                   rtol=1e-12)


def test_the_dtypes_are_the_dtype_tables_rows():
    from pygpu import _dtype

    rows, text = _C._dtype_table()
    assert [(d.name, d._code, d.itemsize, d._kind, d._legacy) for d in _dtype.ALL] == \
        [row[:5] for row in rows]
    assert [d._code for d in _dtype.ALL] == list(range(len(rows)))
    assert (_dtype.bool_, _dtype.int64, _dtype.float32, _dtype.float64, _dtype.float16,
            _dtype.bfloat16, _dtype.uint8, _dtype.int8, _dtype.int16, _dtype.int32,
            _dtype.complex64, _dtype.complex128, _dtype.uint16, _dtype.uint32, _dtype.uint64,
            _dtype.float8_e4m3fn, _dtype.float8_e5m2, _dtype.float8_e4m3fnuz,
            _dtype.float8_e5m2fnuz, _dtype.float8_e8m0fnu, _dtype.uint1, _dtype.uint2,
            _dtype.uint3, _dtype.uint4, _dtype.uint5, _dtype.uint6, _dtype.uint7, _dtype.int1,
            _dtype.int2, _dtype.int3, _dtype.int4, _dtype.int5, _dtype.int6, _dtype.int7,
            _dtype.bits1x8, _dtype.bits2x4, _dtype.bits4x2, _dtype.bits8, _dtype.bits16,
            _dtype.float4_e2m1fn_x2, _dtype.complex32) == _dtype.ALL
    for name, *_ in rows:
        assert name in text
        assert pygpu.zeros(1, dtype=name).dtype is _dtype.to_dtype(name)
        assert getattr(pygpu, name) is _dtype.to_dtype(name)
    for name, code, size, kind, legacy, alias in rows:  # PyTorch's other spellings
        if alias:
            assert getattr(pygpu, alias) is _dtype.ALL[code] and _dtype.to_dtype(alias) is _dtype.ALL[code]
    for bad in (lambda: _dtype.to_dtype("complex16"), lambda: pygpu.zeros(1, dtype="complex16")):
        with pytest.raises(TypeError, match=text):
            bad()
    with pytest.raises(ValueError, match=text):  # to("x") names the dtypes too (_hooks.py)
        pygpu.zeros(1).to("nodevice")
    with pytest.raises(TypeError, match=text):  # and so does the C side
        pygpu.tensor(np.zeros(2, dtype=np.longdouble))


def test_the_elementwise_columns_hold():
    """Each binary/unary op's `in` and `out` columns (pg_ops.def) against what it does:
    the dtypes it takes, refuses or computes in, and its result dtype."""
    kinds = {"bool": np.array([True, False]), "int64": np.array([3, -2]),
             "float32": np.array([1.5, -2.0], np.float32)}
    for name, family, _, py, grad, *_ in TABLE:
        if family not in ("binary", "unary") or not callable(getattr(_C, name, None)):
            continue
        fn = getattr(_C, name)
        for dt, arr in kinds.items():
            x = pygpu.tensor(arr)
            try:
                out = fn(x) if family == "unary" else fn(x, x)
            except TypeError as e:
                assert name in str(e) and dt in str(e), (name, dt, str(e))
                continue
            assert out.shape == x.shape, name
            if grad is None and out.dtype == pygpu.bool_:
                continue  # compares and predicates
            assert out.dtype.is_floating_point or out.dtype == x.dtype, (name, dt, out.dtype)


def test_the_worked_example_in_docs_architecture_is_the_code():
    """docs/architecture.md shows an op's four places: each line it quotes is in the file
    it names, so the example cannot drift from the code."""
    import os
    import re

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(root, "docs", "architecture.md")).read()
    section = text[text.index("## Adding an op"):text.index("## Adding a node kind")]
    steps = re.findall(r"\*\*\d\. [^*]+\*\* \(`([^`]+)`.*?```(?:text|python)\n(.*?)```", section, re.S)
    assert len(steps) == 4, "the four places, each with its file and its code"
    for path, code in steps:
        source = open(os.path.join(root, path)).read()
        for line in code.strip("\n").split("\n"):
            assert line in source, f"{path} no longer has: {line!r}"


# ---- the op-property columns (saves, amp): Python reads them, and they hold ----------------

SAVES = {"nothing", "input", "output", "both", "operands", "rule", "view", "function", "parts",
         "no_grad"}


def test_the_property_columns_are_well_formed_and_python_reads_them():
    from pygpu.amp import autocast_mode

    for name, family, node, py, grad, saves, amp, dtypes in TABLE:
        assert saves in SAVES, (name, saves)
        # the input class of pg_op_props.h's enum pg_op_in, for the binary and unary rows only
        assert dtypes in ((None,) if family not in ("binary", "unary") else
                          ("ANY", "NUM", "FLOAT", "NUMF", "BOOL", "TOBOOL", "INTBOOL", "INT")), \
            (name, dtypes)
        assert amp in ("low", "fp32", "keep"), (name, amp)
        # no_grad and parts exactly where the grad column is NULL; function for train rows
        assert (grad is None) == (saves in ("no_grad", "parts")), (name, grad, saves)
        assert (saves == "function") == (family == "train" and grad is not None), (name, saves)
    by = lambda col, v: {r[0] for r in TABLE if r[col] == v}  # noqa: E731
    # no hand-kept list beside the table: rules and autocast use its columns as they are
    assert rules._READS_INPUT == by(5, "input") and rules._READS_OUTPUT == by(5, "output")
    assert rules._NOTHING_SAVED == by(5, "nothing") and rules.VIEW_OPS == by(5, "view")
    assert autocast_mode._LOW == by(6, "low") and autocast_mode._FP32 == by(6, "fp32")


def _saves_rows():
    return [r for r in TABLE if r[1] in ("unary", "binary", "reduce")
            and r[5] in ("input", "output", "both", "nothing", "operands") and r[0] not in _INT_ONLY]


@pytest.mark.parametrize("row", _saves_rows(), ids=[r[0] for r in _saves_rows()])
def test_the_saves_column_is_what_the_backward_reads(row):
    """A row's saves column against its rule: an in-place write to what the column says the
    backward reads fails that backward (the version counter), and a write to what it says
    is not read neither fails nor changes the gradient. A column that names too little
    would silently drop the check; one that names too much would refuse a correct program."""
    name, family, saves = row[0], row[1], row[5]
    fn = _elementwise_fn(row) if family != "reduce" else getattr(_C, name)
    reads = {"input": saves in ("input", "both", "operands"), "output": saves in ("output", "both")}

    def run(write, second=False):
        leaf = _leaf(3, 4)
        x = leaf * 1.0  # not a leaf: an in-place write to it is allowed
        other = pygpu.tensor(np.full((3, 4), 1.75, np.float32))
        y = fn(x) if family != "binary" else fn(other, x) if second else fn(x, other)
        if write == "input":
            x.add_(0.5)
        elif write == "output":
            y.add_(0.5)
        y.sum().backward()
        return leaf.grad.numpy()

    try:
        reference = run(None)
    except NotImplementedError:  # special.zeta: a gradient for its second operand only
        run = functools.partial(run, second=True)
        reference = run(None)
    for write in ("input", "output"):
        if reads[write]:
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                run(write)
        else:
            np.testing.assert_allclose(run(write), reference, rtol=1e-6, equal_nan=True,
                                       err_msg=f"{name}: its backward reads its {write}")


@pytest.mark.parametrize("name", sorted({r[0] for r in TABLE if r[6] != "keep"}))
def test_the_amp_column_is_the_policy_autocast_applies(name):
    from pygpu.amp import autocast

    row = next(r for r in TABLE if r[0] == name)
    x = pygpu.tensor(np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32))
    w = pygpu.tensor(np.random.default_rng(2).standard_normal((6, 6)).astype(np.float32))
    calls = {"matmul": lambda a: pygpu.matmul(a, w), "linear": lambda a: F.linear(a, w),
             "sum": lambda a: a.sum(), "mean": lambda a: a.mean(),
             "softmax": lambda a: pygpu.softmax(a, -1), "log_softmax": lambda a: pygpu.log_softmax(a, -1),
             "mse_loss": lambda a: pygpu.mse_loss(a, a * 0.5),
             "cross_entropy": lambda a: pygpu.cross_entropy(a, pygpu.tensor([0, 1, 2, 3])),
             "conv2d": lambda a: F.conv2d(a.reshape(1, 1, 4, 6), w.reshape(1, 1, 6, 6)[:, :, :3, :3])}
    assert name in calls, f"{name}: add how to call it here"
    with autocast("cpu", dtype=pygpu.bfloat16):
        if row[6] == "low":  # float32 operands run in the region's low dtype
            assert calls[name](x).dtype is pygpu.bfloat16, name
        else:  # fp32: low operands are widened to float32
            assert calls[name](x.astype(pygpu.bfloat16)).dtype is pygpu.float32, name


def test_the_int8_layers_fuse_every_activation_row():
    """_C._act_table() is the int8 layers' list too (ACT_CODES, quantize's fusion), and the
    int8 epilogue computes each row's f (it expands the row, as the float layers do)."""
    import _helpers
    from pygpu import nn
    from pygpu.nn import layers, quantized
    from pygpu.quantization import quantize

    acts = _C._act_table()
    assert quantized.ACT_CODES == {None: 0, **{n: c for n, c, _ in acts}}
    assert quantize._FUSABLE == layers._FUSABLE
    x = np.random.default_rng(3).standard_normal((5, 8)).astype(np.float32)
    for name, _, module in acts:
        pygpu.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 6), getattr(nn, module)())
        q = pygpu.quantization.quantize_dynamic(model, {nn.Linear})
        assert type(q[1]).__name__ == "Identity", f"{name}: not fused into the int8 layer"
        lin = model[0]
        ref = _helpers.ACT_NP[name][0](x @ lin.weight.detach().numpy().T + lin.bias.detach().numpy())
        np.testing.assert_allclose(q(pygpu.tensor(x)).numpy(), ref, atol=0.05, err_msg=name)
