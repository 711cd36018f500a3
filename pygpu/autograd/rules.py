"""Backward rules of the ops the C bindings record (one small function each).

The op names come from the op table (csrc/core/pg_ops.def, read as
_C._op_table()): every row with a grad name has its rule here, `_rule_<name>`,
and building the lookup at import fails if one is missing or left over.

make(name, out, a, b, args, kwargs) returns (backward, ctx) for the op
`name` that produced `out` from operands a, b (Tensors or Python scalars);
backward(ctx, g) returns one gradient per operand (None for a scalar or an
operand without a gradient). Rules use only differentiable tensor ops: a backward runs
under no_grad, and under create_graph=True the same rule runs under grad mode and records
its own graph (higher-order gradients, as PyTorch's derivatives.yaml formulas do), so each
gradient is computed on the device where the data lives. Broadcast operands get their
gradient summed back to their own shape (unbroadcast)."""
import math as _math

from .. import _C
from .._tensor import create as _tensor_create
from . import rules_math, versions
from ._broadcast import unbroadcast  # noqa: F401 - rules.unbroadcast, used across pygpu

Tensor = _C.Tensor

# name -> (family, grad_fn name) of every differentiable op in the op table
_TABLE = {row[0]: (row[1], row[4]) for row in _C._op_table() if row[4] is not None}
# name -> what its backward reads (the table's saves column): nothing, input, output,
# operands (saved() spells out which), view, function, parts or no_grad
SAVES = {row[0]: row[5] for row in _C._op_table()}


def _saving(what):
    return frozenset(name for name, s in SAVES.items() if s == what)


def pretty(name):
    row = _TABLE.get(name)
    return row[1] if row else name


def _shape(x):
    return x.shape if isinstance(x, Tensor) else None


def _grad_for(x, g):
    return unbroadcast(g, x.shape) if isinstance(x, Tensor) else None


def _mask(cond, like):
    return cond.astype(like.dtype)


def _expand(g, shape, device, dtype):
    """g (broadcastable to shape) materialised at shape, on g's device."""
    return _tensor_create.zeros(tuple(shape), dtype=dtype, device=device) + g


# ---- binary: ctx = (a, b); gradients unbroadcast to each operand --------------------------

def _rule_add(ctx, g):
    a, b = ctx
    return _grad_for(a, g), _grad_for(b, g)


def _rule_subtract(ctx, g):
    a, b = ctx
    return _grad_for(a, g), (_grad_for(b, -g) if isinstance(b, Tensor) else None)


def _rule_multiply(ctx, g):
    a, b = ctx
    return (_grad_for(a, g * b) if isinstance(a, Tensor) else None,
            _grad_for(b, g * a) if isinstance(b, Tensor) else None)


def _rule_divide(ctx, g):
    a, b = ctx
    ga = _grad_for(a, g / b) if isinstance(a, Tensor) else None
    gb = _grad_for(b, -(g * a) / (b * b)) if isinstance(b, Tensor) else None
    return ga, gb


def _maxmin(is_max):
    def rule(ctx, g):
        a, b = ctx
        if isinstance(a, Tensor):
            m = _mask(a >= b if is_max else a <= b, g)
        else:
            m = _mask(b < a if is_max else b > a, g)
        ga = _grad_for(a, g * m) if isinstance(a, Tensor) else None
        gb = _grad_for(b, g - g * m) if isinstance(b, Tensor) else None
        return ga, gb
    return rule


# ---- unary: ctx = (a, out) with out a detached alias ---------------------------------------

def _rule_negative(ctx, g):
    return -g, None


def _rule_abs(ctx, g):
    a, _ = ctx
    return g * (_mask(a > 0, g) - _mask(a < 0, g)), None


def _rule_exp(ctx, g):
    return g * ctx[1], None


def _rule_log(ctx, g):
    return g / ctx[0], None


def _rule_sqrt(ctx, g):
    return g / (ctx[1] * 2.0), None


def _rule_tanh(ctx, g):
    out = ctx[1]
    return g * (1.0 - out * out), None


def _rule_sigmoid(ctx, g):
    out = ctx[1]
    return g * (out * (1.0 - out)), None


def _rule_relu(ctx, g):
    y = ctx[1]
    if not _C.is_grad_enabled():  # one pass (the relu_backward row), not > , cast and *
        return _C.relu_backward(g, y), None
    return g * _mask(y > 0, g), None  # create_graph: in differentiable ops


def _zero_grad(ctx, g):
    """Piecewise-constant ops (sign, floor, ...): the gradient is 0, as PyTorch's."""
    return _tensor_create.zeros(g.shape, dtype=g.dtype, device=g.device), None


_rule_sign = _rule_floor = _rule_ceil = _rule_round = _rule_trunc = _zero_grad


def _rule_reciprocal(ctx, g):
    out = ctx[1]
    return -(g * out * out), None


def _rule_rsqrt(ctx, g):
    out = ctx[1]
    return g * (out * out * out) * -0.5, None


# ---- pow: ctx = (a, b, out); d/da = b a**(b-1), d/db = a**b log(a) (0 where a == 0 and
# b >= 0, as PyTorch) ------------------------------------------------------------------------

def _rule_pow(ctx, g):
    a, b, out = ctx
    ga = gb = None
    if isinstance(a, Tensor):
        ga = _grad_for(a, g * b * a ** (b - 1))
    if isinstance(b, Tensor):
        if isinstance(a, Tensor):
            zero = (a == 0) & (b >= 0)
            logs = _C.where(zero, 0.0, _C.log(_C.where(zero, 1.0, a)))
        else:
            logs = _math.log(a) if a > 0 else (float("-inf") if a == 0 else float("nan"))
        gb = _grad_for(b, g * out * logs)
    return ga, gb


# ---- where: ctx = (cond, a, b); the gradient goes to the operand each element came from ----

def _rule_where(ctx, g):
    cond, a, b = ctx
    ga = _grad_for(a, _C.where(cond, g, 0.0)) if isinstance(a, Tensor) else None
    gb = _grad_for(b, _C.where(cond, 0.0, g)) if isinstance(b, Tensor) else None
    return ga, gb


# ---- matmul: NumPy rules (1-D operands promoted, batch axes broadcast) ---------------------

def _swap(t):
    perm = list(range(t.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return t.transpose(perm)


def _rule_matmul(ctx, g):
    a, b = ctx
    a2 = a.reshape(1, a.shape[0]) if a.ndim == 1 else a
    b2 = b.reshape(b.shape[0], 1) if b.ndim == 1 else b
    gshape = list(g.shape)
    if a.ndim == 1:
        gshape.insert(len(gshape) - (0 if b.ndim == 1 else 1), 1)
    if b.ndim == 1:
        gshape.append(1)
    g2 = g.reshape(gshape)
    ga = gb = None
    if a.requires_grad:
        ga = unbroadcast(g2 @ _swap(b2), a2.shape).reshape(a.shape)
    if b.requires_grad:
        if b2.ndim == 2 and a2.ndim > 2:  # one matrix for the whole batch: every row of every
            k, n = b2.shape                # batch entry in one product, not a batch then a sum
            gb = (_swap(a2.reshape(-1, k)) @ g2.reshape(-1, n)).reshape(b.shape)
        else:
            gb = unbroadcast(_swap(a2) @ g2, b2.shape).reshape(b.shape)
    return ga, gb


# ---- reductions and views ------------------------------------------------------------------

def _parse_reduce(a, args, kwargs):
    args = tuple(args or ())
    kwargs = dict(kwargs or {})
    axis = args[0] if len(args) > 0 else kwargs.get("axis")
    keepdims = bool(args[1]) if len(args) > 1 else bool(kwargs.get("keepdims", False))
    if axis is None:
        axes = tuple(range(a.ndim))
    elif isinstance(axis, int):
        axes = (axis,)
    else:
        axes = tuple(axis)
    axes = tuple(x % a.ndim for x in axes) if a.ndim else ()
    return axes, keepdims


def _reduce_rule(mean):
    def rule(ctx, g):
        a, axes, keepdims = ctx
        if not keepdims:
            g = g.reshape(tuple(1 if i in axes else n for i, n in enumerate(a.shape)))
        out = _expand(g, a.shape, a.device, g.dtype)
        if mean:
            count = 1
            for i in axes:
                count *= a.shape[i]
            out = out / float(max(count, 1))
        return out, None
    return rule


def _rule_reshape(ctx, g):
    return g.reshape(ctx.shape), None


def _rule_transpose(ctx, g):
    perm = ctx
    if perm is None:
        return g.transpose(), None
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return g.transpose(inv), None


def _rule_getitem(ctx, g):
    a, key = ctx
    out = _tensor_create.zeros(a.shape, dtype=g.dtype, device=a.device)
    out[key] = g
    return out, None


def _rule_copy(ctx, g):
    return g, None


def _rule_to(ctx, g):
    a = ctx
    if g.dtype.is_complex and not a.dtype.is_complex:
        g = g.real  # real -> complex: the real input's gradient is the real part (PyTorch's)
    return g.to(a.device, a.dtype), None


_rule_maximum = _maxmin(True)
_rule_minimum = _maxmin(False)
_rule_sum = _reduce_rule(False)
_rule_mean = _reduce_rule(True)


# what a rule keeps, by the op's family; ops whose rule needs something else name it
def _ctx_operands(out, a, b, args, kwargs):
    return (a, b)


def _ctx_unary(out, a, b, args, kwargs):
    return (a, out.detach())


def _ctx_reduce(out, a, b, args, kwargs):
    axes, keepdims = _parse_reduce(a, args, kwargs)
    return (a, axes, keepdims)


_CTX = {"binary": _ctx_operands, "unary": _ctx_unary, "reduce": _ctx_reduce,
        "matmul": _ctx_operands}
_CTX_OF_OP = {
    "reshape": lambda out, a, b, args, kwargs: a,
    "transpose": lambda out, a, b, args, kwargs: args,
    "getitem": lambda out, a, b, args, kwargs: (a, args),
    "copy": lambda out, a, b, args, kwargs: None,
    "to": lambda out, a, b, args, kwargs: a,
    "pow": lambda out, a, b, args, kwargs: (a, b, out.detach()),
    "where": lambda out, a, b, args, kwargs: (args[0], a, b),
}


def _build():
    """name -> (rule, ctx builder) for every differentiable op the C bindings record
    (kind "train" ops are autograd Functions in pygpu/_ops/_train.py instead)."""
    rules = {}
    for name, (family, _) in _TABLE.items():
        if family == "train":
            continue
        rule = globals().get("_rule_" + name) or rules_math.RULES.get(name)
        ctx = _CTX_OF_OP.get(name) or _CTX.get(family)
        if rule is None or ctx is None:
            raise ImportError(f"pygpu.autograd.rules: the op table (csrc/core/pg_ops.def) marks "
                              f"{name!r} differentiable, but rules.py has no _rule_{name} "
                              f"{'' if ctx else 'or context builder '}(or mark its grad NULL)")
        rules[name] = (rule, ctx)
    extra = sorted(k[6:] for k in globals() if k.startswith("_rule_") and k[6:] not in rules)
    extra += sorted(k for k in rules_math.RULES if k not in rules)
    if extra:
        raise ImportError(f"pygpu.autograd.rules: rules for ops the op table does not mark "
                          f"differentiable: {extra}")
    return rules


RULES = _build()


# ---- what each rule reads: the tensors autograd's version check stamps (versions.py) ----

def _req(x):
    return isinstance(x, Tensor) and x.requires_grad


# All from the table's saves column (csrc/core/pg_ops.def), so a new op's row says what its
# rule reads, and no list here can leave it out. Unary ops whose rule reads the input, and
# those that read the output (ctx = (a, out)):
_READS_INPUT = _saving("input")
_READS_OUTPUT = _saving("output")
_READS_BOTH = _saving("both")  # the input and the output
# ops whose result is a view of their first operand: their rules read no values; a write
# to the base after the view was made regenerates the view's history at its next use
# (views.py), as PyTorch's does
VIEW_OPS = _saving("view")
# ops whose rule reads no tensor's values (shapes, dtypes and devices only)
_NOTHING_SAVED = _saving("nothing")
# ops whose rule reads every operand (ctx), and those whose saved() case below says which
_READS_OPERANDS = _saving("operands")
_BY_RULE = _saving("rule")


def saved(name, ctx, a=None):
    """The tensors (or versions.Output of them) whose values `name`'s rule reads from ctx."""
    if name in _NOTHING_SAVED or name in VIEW_OPS:
        return ()
    if name in ("multiply", "matmul"):
        x, y = ctx
        if _req(x):
            return (y, x) if _req(y) else (y,)
        return (x,)  # y requires grad (else nothing was recorded); stamp() skips scalars
    if name == "divide":
        x, y = ctx
        return (y, x) if _req(y) else (y,)
    if name in _READS_OPERANDS:
        return ctx
    if name in _READS_BOTH:
        return (ctx[0], versions.Output(ctx[1]))
    if name in _READS_INPUT:
        return (ctx[0],)
    if name in _READS_OUTPUT:
        return (versions.Output(ctx[1]),)
    if name == "pow":
        return (ctx[0], ctx[1], versions.Output(ctx[2]))
    if name == "where":
        return (ctx[0],)
    if name in _BY_RULE:  # a row marked rule with no case above
        raise RuntimeError(f"autograd: the op table says {name!r}'s rule reads its operands "
                           "its own way, but rules.saved() has no case saying which")
    return ()


def reads_first_operand(name, b):
    """Whether name's rule reads the values of its first operand when that operand
    requires grad and the second is `b` (an in-place op must then keep a copy of them)."""
    if name == "multiply":
        return _req(b)
    if name == "divide":
        return _req(b)
    return (name == "pow" or name in _READS_INPUT or name in _READS_BOTH
            or name in _READS_OPERANDS)


def make(name, out, a, b, args, kwargs):
    entry = RULES.get(name)
    if entry is None:
        raise RuntimeError(f"autograd: no backward rule for op {name!r}")
    rule, ctx = entry
    return rule, ctx(out, a, b, args, kwargs)
