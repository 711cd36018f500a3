# test_autograd_higher_order.py - second derivatives (create_graph=True) for every
# differentiable row of the op table, generated from the table (a few float64 cases per row,
# not a cross product) and checked with pygpu.autograd.gradgradcheck on every device; the
# Python-level ops beside the table; what raises PyTorch's error instead (the RNN's fused
# cells, a @once_differentiable backward); gradcheck's own teeth against torch's.
import numpy as np
import pytest

import pygpu
from pygpu import _C
from pygpu.nn import functional as F

import op_references
from _helpers import random_array, to_device

# name -> row, for the rows with a grad name (csrc/core/pg_ops.def)
ROWS = {r[0]: r for r in _C._op_table() if r[4] is not None}


def _resolve(dotted):
    obj = pygpu
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _function(row):
    """The row's module function (its first `pygpu.` name), or the binding a row only the
    bindings reach (`_C.gelu`: F.gelu picks it)."""
    name = next((n for n in row[3] if n.startswith("pygpu.")), None)
    if name is None:
        return getattr(_C, next(n for n in row[3] if n.startswith("_C.")).split(".", 1)[1])
    return _resolve(name)


def _domains(name):
    ref = op_references.REFS[name]
    if isinstance(ref, dict):
        ref = ref.get("") or next(iter(ref.values()))
    return tuple(ref.domain)


# domains where the row's reference domain does not fit a gradient check: pow's base must be
# positive for d/d(exponent) = out * log(base), entr's argument for -x log x to be smooth;
# zeta's first argument has no derivative in PyTorch either (it stays a constant, wrt below)
DOMAIN_FOR_GRADIENTS = {"pow": ("positive", "any"), "special_entr": ("positive",)}
NOT_DIFFERENTIABLE_IN = {"special_zeta": (0,)}


class Case:
    def __init__(self, cid, fn, arrays, wrt=None):
        self.id, self.fn, self.arrays = cid, fn, arrays
        self.wrt = tuple(range(len(arrays))) if wrt is None else tuple(wrt)


def _rng(name, k=0):
    return np.random.default_rng(sum(map(ord, name)) * 7 + k)


def _unary_cases(name, row):
    f = _function(row)
    dom = DOMAIN_FOR_GRADIENTS.get(name) or _domains(name)
    x = random_array(_rng(name), (2, 3), "float64", dom[0])
    return [Case(name, f, [x])]


def _binary_cases(name, row):
    f = _function(row)
    dom = DOMAIN_FOR_GRADIENTS.get(name) or _domains(name)
    da, db = dom[0], dom[min(1, len(dom) - 1)]
    rng = _rng(name)
    a, b = random_array(rng, (2, 3), "float64", da), random_array(rng, (3,), "float64", db)
    fixed = NOT_DIFFERENTIABLE_IN.get(name, ())
    wrt = [i for i in (0, 1) if i not in fixed]
    scalar = float(random_array(rng, (), "float64", db))
    cases = [Case(f"{name}-broadcast", f, [a, b], wrt)]
    if 1 not in fixed and 0 not in fixed:
        cases.append(Case(f"{name}-scalar", lambda x, s=scalar: f(x, s), [a]))
    return cases


def _reduce_cases(name, row):
    f = _function(row)
    x = random_array(_rng(name), (2, 3, 2), "float64")
    return [Case(f"{name}-all", lambda t: f(t) * f(t), [x]),
            Case(f"{name}-axis", lambda t: f(t * t, 1, keepdims=True), [x])]


def _matmul_cases(name, row):
    f = _function(row)
    rng = _rng(name)
    r = lambda *s: rng.standard_normal(s)  # noqa: E731
    return [Case("matmul-2d", f, [r(2, 3), r(3, 2)]),
            Case("matmul-batched", f, [r(2, 2, 3), r(3, 2)]),
            Case("matmul-vector", lambda a, b: f(a, b) * f(a, b), [r(3), r(3, 2)])]


VIEW_CALLS = {  # a view row's calls (each squared: a view's second derivative is then not 0)
    "reshape": lambda t: t.reshape(3, 2) * t.reshape(3, 2),
    "transpose": lambda t: t.T @ t,
    "getitem": lambda t: t[1:, ::2] * t[0, :2],
}
COPY_CALLS = {
    "copy": lambda t: t.T.contiguous() * t.clone().T,
    "to": lambda t: (t.to("cpu") * t.to("cpu")).to(t.device),
}


def _call_cases(calls):
    def make(name, row):
        x = random_array(_rng(name), (2, 3), "float64")
        return [Case(name, calls[name], [x])]
    return make


def _where_cases(name, row):
    rng = _rng(name)
    c = rng.standard_normal((2, 3)) > 0
    return [Case("where", lambda a, b: pygpu.where(pygpu.tensor(c).to(a.device), a * a, b * a),
                 [rng.standard_normal((2, 3)), rng.standard_normal((3,))])]


def _labels(x):
    return pygpu.tensor(np.array([2, 0, 1])).to(x.device)


def _rnn(x, w):
    rnn = pygpu.nn.RNN(2, 3).double().to(x.device)
    return rnn(x)[0]


# the fused rows take particular inputs: their cases by row (a row added without one fails
# test_every_differentiable_row_has_cases)
def _train_cases(name, row):
    rng = _rng(name)
    r = lambda *s: rng.standard_normal(s)  # noqa: E731
    return TRAIN[name](r)


TRAIN = {
    "linear": lambda r: [
        Case("linear", lambda x, w, b: F.linear(x, w, b), [r(3, 2), r(4, 2), r(4)]),
        Case("linear-tanh", lambda x, w, b: F.linear(x, w, b, "tanh"), [r(3, 2), r(4, 2), r(4)]),
        Case("linear-sigmoid-3d", lambda x, w: F.linear(x, w, None, "sigmoid"),
             [r(2, 2, 3), r(2, 3)])],
    "cross_entropy": lambda r: [
        Case("cross_entropy", lambda x: F.cross_entropy(x, _labels(x)), [r(3, 4)]),
        Case("cross_entropy-sum", lambda x: F.cross_entropy(x, _labels(x), reduction="sum"),
             [r(3, 4)])],
    "softmax": lambda r: [Case("softmax", lambda x: F.softmax(x, dim=1), [r(2, 4)]),
                          Case("softmax-dim0", lambda x: F.softmax(x, dim=0), [r(3, 2)])],
    "log_softmax": lambda r: [Case("log_softmax", lambda x: F.log_softmax(x, dim=-1),
                                   [r(2, 4)])],
    "layer_norm": lambda r: [
        Case("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), [r(2, 4), r(4), r(4)]),
        Case("layer_norm-2axes", lambda x: F.layer_norm(x, (2, 3)), [r(2, 2, 3)])],
    "conv2d": lambda r: [
        Case("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1), [r(1, 2, 4, 4),
                                                                      r(2, 2, 3, 3), r(2)]),
        Case("conv2d-stride-groups", lambda x, w: F.conv2d(x, w, stride=2, groups=2),
             [r(1, 2, 5, 5), r(2, 1, 3, 3)]),
        Case("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2),
             [r(1, 2, 3, 3), r(2, 1, 2, 2)]),
        Case("conv1d", lambda x, w: F.conv1d(x, w, padding=1), [r(1, 2, 5), r(2, 2, 3)])],
    "pool2d": lambda r: [
        Case("max_pool2d", lambda x: F.max_pool2d(x * x, 2), [r(1, 2, 4, 4)]),
        Case("avg_pool2d", lambda x: F.avg_pool2d(x * x, 2, padding=1), [r(1, 1, 4, 4)]),
        Case("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x * x, 3),
             [r(1, 1, 4, 5)])],
    "batch_norm": lambda r: [
        Case("batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
             [r(3, 2, 2, 2), r(2), r(2)])],
    "scaled_dot_product_attention": lambda r: [
        Case("sdpa", F.scaled_dot_product_attention, [r(1, 2, 3, 4), r(1, 2, 3, 4),
                                                      r(1, 2, 3, 4)]),
        Case("sdpa-causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                           is_causal=True),
             [r(1, 1, 3, 2), r(1, 1, 3, 2), r(1, 1, 3, 2)])],
    # the fused RNN cells' backward is once differentiable: test_rnn_double_backward_raises
    "rnn_forward": lambda r: [],
}

FAMILIES = {"unary": _unary_cases, "binary": _binary_cases, "reduce": _reduce_cases,
            "matmul": _matmul_cases, "view": _call_cases(VIEW_CALLS),
            "copy": _call_cases(COPY_CALLS), "select": _where_cases, "train": _train_cases}


def _table_cases():
    out = []
    for name, row in ROWS.items():
        out += FAMILIES[row[1]](name, row)
    return out


CASES = _table_cases()


def test_every_differentiable_row_has_cases():
    covered = {name for name, row in ROWS.items()
               if name in TRAIN or row[1] in FAMILIES and row[1] != "train"}
    assert covered == set(ROWS), f"rows without gradgradcheck cases: {set(ROWS) - covered}"
    assert set(TRAIN) == {n for n, r in ROWS.items() if r[1] == "train"}
    assert len(CASES) >= len(ROWS) - 1


def _tensors(case, device):
    return [to_device(np.asarray(a, dtype=np.float64), device).requires_grad_(i in case.wrt)
            for i, a in enumerate(case.arrays)]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradgradcheck_over_the_op_table(case, device):
    assert pygpu.autograd.gradgradcheck(case.fn, _tensors(case, device))


# ---- the Python-level ops beside the table (Functions: their backwards are tensor ops) ----

def _r(*shape, k=0):
    return np.random.default_rng(100 + k + len(shape)).standard_normal(shape)


def _idx(values, device):
    return pygpu.tensor(np.array(values)).to(device)


SURFACE = [
    Case("gather", lambda x: (x * x).gather(1, _idx([[0, 2], [1, 1]], x.device)), [_r(2, 3)]),
    Case("index_select", lambda x: (x * x).index_select(0, _idx([1, 0, 1], x.device)),
         [_r(2, 3)]),
    Case("masked_fill", lambda x: (x * x).masked_fill(x > 0, 0.5), [_r(2, 3)]),
    Case("scatter", lambda x, s: x.scatter(1, _idx([[0], [2]], x.device), s * s),
         [_r(2, 3), _r(2, 1)]),
    Case("scatter_add", lambda x, s: (x * x).scatter_add(0, _idx([[1, 0, 1]], x.device), s),
         [_r(2, 3), _r(1, 3)]),
    Case("cumsum", lambda x: (x * x).cumsum(1), [_r(2, 3)]),
    Case("cumprod", lambda x: x.cumprod(1), [_r(2, 3)]),
    Case("prod", lambda x: x.prod(1), [_r(2, 3)]),
    Case("amax", lambda x: (x * x).amax(1), [_r(2, 3)]),
    Case("norm", lambda x: x.norm(2, dim=1), [_r(2, 3)]),
    Case("cat-stack", lambda a, b: pygpu.cat([a * b, pygpu.stack([a, b]).sum(0)], 1),
         [_r(2, 3), _r(2, 3, k=1)]),
    Case("pad-constant-reflect", lambda x: F.pad(x * x, (1, 2)) + 0 * F.pad(x, (1, 2),
                                                                         mode="reflect"),
         [_r(1, 2, 4)]),
    Case("gelu", lambda x: F.gelu(x), [_r(2, 3)]),
    Case("leaky_relu-elu", lambda x: F.leaky_relu(x, 0.2) * F.elu(x), [_r(2, 3)]),
    Case("views", lambda x: (x.permute(1, 0).unsqueeze(0).expand(2, 3, 2) *
                             x.T.narrow(0, 0, 3).flip(1)).select(0, 1), [_r(2, 3)]),
    Case("as_strided", lambda x: x.as_strided((2, 2), (1, 2)) * x[0, 0], [_r(2, 3)]),
    Case("addcmul-lerp", lambda a, b, c: pygpu.addcmul(a, b, c, value=0.5).lerp(c, 0.3) * b,
         [_r(2, 3), _r(2, 3, k=1), _r(3)]),
    Case("linalg-inv-det-solve", lambda a, b: pygpu.linalg.inv(a) * pygpu.linalg.det(a)
         + pygpu.linalg.solve(a, b), [_r(3, 3) + 3 * np.eye(3), _r(3, 3, k=1)]),
    Case("cholesky", lambda a: pygpu.linalg.cholesky(a @ a.T + pygpu.eye(3, dtype=a.dtype,
                                                                         device=a.device)),
         [_r(3, 3)]),
    Case("mse_loss", lambda a, b: F.mse_loss(a * a, b), [_r(2, 3), _r(2, 3, k=1)]),
    Case("clamp", lambda x: (x * x).clamp(0.1, 1.5) * x, [_r(2, 3)]),
]


@pytest.mark.parametrize("case", SURFACE, ids=[c.id for c in SURFACE])
def test_gradgradcheck_beside_the_table(case, device):
    assert pygpu.autograd.gradgradcheck(case.fn, _tensors(case, device))


# ---- what raises PyTorch's error rather than answer ----------------------------------------

ONCE = "trying to differentiate twice a function that was marked with @once_differentiable"


def test_rnn_double_backward_raises_pytorchs_error(device):
    pygpu.manual_seed(0)
    rnn = pygpu.nn.RNN(2, 3).double().to(device)
    x = to_device(_r(4, 1, 2), device).requires_grad_()
    (g,) = pygpu.autograd.grad(rnn(x)[0].sum(), x, create_graph=True)
    assert g.requires_grad  # the first derivative itself is right (tests/test_sequence*.py)
    with pytest.raises(RuntimeError, match=ONCE):
        g.sum().backward()


def test_once_differentiable_function_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    for lib in (pygpu, torch):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 * x
        x = (to_device(np.array([1.0, 2.0]), device) if lib is pygpu
             else torch.tensor([1.0, 2.0], dtype=torch.float64)).requires_grad_()
        # the incoming gradient (2 y) requires grad: the result carries PyTorch's Error node
        (g,) = lib.autograd.grad((Twice.apply(x) ** 2).sum(), x, create_graph=True)
        np.testing.assert_allclose(np.asarray(g.detach().cpu().numpy()), [4.0, 32.0])
        with pytest.raises(RuntimeError, match=ONCE):
            g.sum().backward()
        # a constant incoming gradient: no Error node, the result does not require grad
        (g,) = lib.autograd.grad(Twice.apply(x).sum(), x, create_graph=True)
        assert not g.requires_grad


def test_a_python_function_backward_is_recorded(device):
    """A Function whose backward is written in tensor ops is differentiable again, as
    PyTorch's custom Functions are."""
    class Cube(pygpu.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x
    x = to_device(np.array([1.0, -2.0]), device).requires_grad_()
    (g,) = pygpu.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = pygpu.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.cpu().numpy(), [6.0, -12.0])


# ---- gradcheck itself ------------------------------------------------------------------------

class _WrongBackward(pygpu.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos() * 1.01  # one per cent off


def test_gradcheck_catches_a_wrong_backward_as_torch_does(device):
    torch = pytest.importorskip("torch")
    x = to_device(_r(3), device).requires_grad_()
    with pytest.raises(pygpu.autograd.GradcheckError,
                       match="Jacobian mismatch for output 0 with respect to input 0"):
        pygpu.autograd.gradcheck(_WrongBackward.apply, (x,))
    assert pygpu.autograd.gradcheck(_WrongBackward.apply, (x,), raise_exception=False) is False
    assert pygpu.autograd.gradcheck(_WrongBackward.apply, (x,), fast_mode=True,
                                    raise_exception=False) is False
    assert pygpu.autograd.gradcheck(pygpu.sin, (x,), fast_mode=True)
    assert issubclass(pygpu.autograd.GradcheckError, RuntimeError)

    class TorchWrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * 1.01
    tx = torch.tensor(_r(3), requires_grad=True)
    with pytest.raises(torch.autograd.gradcheck.GradcheckError if hasattr(
            torch.autograd.gradcheck, "GradcheckError") else RuntimeError,
            match="Jacobian mismatch for output 0 with respect to input 0"):
        torch.autograd.gradcheck(TorchWrong.apply, (tx,))


def test_gradgradcheck_catches_a_wrong_second_derivative(device):
    class WrongSecond(pygpu.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() * x  # first derivative right, second half of it
    x = to_device(_r(3), device).requires_grad_()
    assert pygpu.autograd.gradcheck(WrongSecond.apply, (x,))
    assert not pygpu.autograd.gradgradcheck(WrongSecond.apply, (x,), raise_exception=False)


def test_gradcheck_signatures_match_pytorch():
    torch = pytest.importorskip("torch")
    import inspect
    for name in ("gradcheck", "gradgradcheck"):
        mine = inspect.signature(getattr(pygpu.autograd, name))
        theirs = inspect.signature(getattr(torch.autograd, name))
        assert [(p.name, p.kind, p.default) for p in mine.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in theirs.parameters.values()], name


def test_gradcheck_needs_an_input_that_requires_grad():
    with pytest.raises(pygpu.autograd.GradcheckError, match="at least one input tensor"):
        pygpu.autograd.gradcheck(pygpu.sin, (pygpu.tensor([1.0], dtype="float64"),))
    x = pygpu.tensor([1.0], dtype="float32").requires_grad_()
    with pytest.warns(UserWarning, match="not a double precision"):
        assert pygpu.autograd.gradcheck(pygpu.sin, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)
