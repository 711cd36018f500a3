# test_op_registry.py - the op table (csrc/core/pg_ops.def) is the one list of ops.
#
# _C._op_table() is generated from that file, as are the module functions and
# tensor methods of the binary, unary and reduce ops, the autograd rules'
# names (pygpu/autograd/rules.py) and the node names sim.inject_fault accepts.
# Here every row must have: every Python binding it names; a backward rule (or
# autograd Function), or a declared "not differentiable" that really records
# nothing; a fault hook that fires on sim; and a row in tests/test_ops_table.py.
import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F
from pygpu import _C, _train_ops
from pygpu.autograd import rules

TABLE = _C._op_table()
NAMES = [row[0] for row in TABLE]
NODES = sorted({row[2] for row in TABLE if row[2] is not None})


def _resolve(qualified):
    root, *path = qualified.split(".")
    obj = {"pygpu": pygpu, "Tensor": pygpu.Tensor, "_C": _C}[root]
    for part in path:
        obj = getattr(obj, part)
    return obj


def test_the_table_is_well_formed():
    assert len(NAMES) == len(set(NAMES)), "two rows share a name"
    families = {"binary", "unary", "reduce", "matmul", "view", "copy", "create", "train"}
    for name, family, node, py, grad in TABLE:
        assert family in families, (name, family)
        assert py, f"{name}: no Python name reaches it"
        assert grad is None or grad[:1].isupper(), (name, grad)


@pytest.mark.parametrize("name,py", [(r[0], r[3]) for r in TABLE], ids=NAMES)
def test_every_op_has_its_bindings(name, py):
    for qualified in py:
        assert callable(_resolve(qualified)) or qualified == "Tensor.T", qualified


def test_generated_functions_and_methods_are_the_table_rows():
    for name, family, _, py, _ in TABLE:
        if family in ("binary", "unary", "reduce"):
            for q in py:
                if q.startswith("pygpu."):  # generated into _C and re-exported
                    assert getattr(_C, name) is _resolve(q), q


@pytest.mark.parametrize("name,family,grad", [(r[0], r[1], r[4]) for r in TABLE], ids=NAMES)
def test_every_op_has_a_backward_rule_or_is_declared_not_differentiable(name, family, grad):
    if grad is None:
        assert name not in rules.RULES
    elif family == "train":  # an autograd Function with its backward beside its forward
        fn = getattr(_train_ops, "_" + grad)
        assert issubclass(fn, pygpu.autograd.Function) and "backward" in vars(fn)
    else:
        assert name in rules.RULES
        assert rules.pretty(name) == grad


def _leaf(*shape, dtype=np.float32):
    t = pygpu.tensor(np.random.default_rng(0).standard_normal(shape).astype(dtype) + 2)
    return t.requires_grad_()


# How to run each op on a leaf that requires grad (for the recording check).
_RECORDED = {
    "binary": lambda name: getattr(_C, name)(_leaf(3), _leaf(3)),
    "unary": lambda name: getattr(_C, name)(_leaf(3)),
    "reduce": lambda name: getattr(_C, name)(_leaf(3, 2), axis=0),
}


@pytest.mark.parametrize("name,family,grad", [(r[0], r[1], r[4]) for r in TABLE
                                               if r[1] in _RECORDED and r[0] != "logical_not"],
                         ids=lambda v: str(v))
def test_recording_follows_the_table(name, family, grad):
    x, y = _leaf(3), _leaf(3)
    op = {"equal": x.__eq__, "not_equal": x.__ne__, "less": x.__lt__, "less_equal": x.__le__,
          "greater": x.__gt__, "greater_equal": x.__ge__}.get(name)
    out = op(y) if op else _RECORDED[family](name)
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


_COMPARE = {"equal": "__eq__", "not_equal": "__ne__", "less": "__lt__", "less_equal": "__le__",
            "greater": "__gt__", "greater_equal": "__ge__"}
RUN_NODE = {
    **{n: (lambda n=n: getattr(_C, n)(_sim(5), _sim(5))) for n in
       ("add", "subtract", "multiply", "divide", "maximum", "minimum")},
    **{n: (lambda n=n: getattr(_sim(5), _COMPARE[n])(_sim(5))) for n in _COMPARE},
    **{n: (lambda n=n: getattr(_C, n)(_sim(5))) for n in
       ("negative", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu")},
    "logical_not": lambda: pygpu.logical_not(pygpu.ones(5, dtype=pygpu.bool_, device="sim:0")),
    **{n: (lambda n=n: getattr(_C, n)(_sim(3, 4), axis=0)) for n in ("sum", "max", "min", "argmax")},
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
    "qlinear": lambda: pygpu.quantization.quantize_dynamic(pygpu.nn.Linear(3, 4).to("sim:0"))(_sim(2, 3)),
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


# Rows of tests/test_ops_table.py whose name differs from the op's, and ops swept elsewhere.
ROW_OF = {"subtract": "sub", "multiply": "mul", "divide": "div", "negative": "neg",
          "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
          "greater_equal": "ge", "matmul": "matmul_function", "getitem": "index_0",
          "copy": "clone", "to": "to_dtype", "linear": "linear_fwd", "linear_backward": "linear_bwd",
          "cross_entropy": "cross_entropy_fwd", "cross_entropy_backward": "cross_entropy_bwd",
          "reshape": "reshape_flat", "transpose": "transpose_axes", "sum": "sum_axis0",
          "mean": "mean_axis0", "max": "max_axis0", "min": "min_axis0", "argmax": "argmax_axis0",
          "sgd": "sgd_later_plain"}
ELSEWHERE = {  # creation has no NumPy function of an input to compare with
    "fill": "tests/test_creation.py", "arange": "tests/test_creation.py",
    "rand": "tests/test_creation.py", "randn": "tests/test_creation.py",
    "qlinear": "tests/test_quantization_kernels.py",  # int8: exact int64 reference, not NumPy's float
}


def test_every_op_has_its_op_table_row():
    import test_ops_table

    rows = {op.name for op in test_ops_table.OPS}
    missing = [n for n in NAMES if n not in ELSEWHERE
               and not any(r == ROW_OF.get(n, n) or r.startswith(ROW_OF.get(n, n) + "_") for r in rows)]
    assert not missing, f"ops without a row in tests/test_ops_table.py: {missing}"
