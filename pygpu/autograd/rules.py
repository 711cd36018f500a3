"""Backward rules of the ops the C bindings record (one small function each).

make(name, out, a, b, args, kwargs) returns (backward, ctx) for the op
`name` that produced `out` from operands a, b (Tensors or Python scalars);
backward(ctx, g) returns one gradient per operand (None for a scalar or an
operand without a gradient). Rules run under no_grad and use only tensor ops,
so each gradient is computed on the device where the data lives. Broadcast
operands get their gradient summed back to their own shape (unbroadcast)."""
from .. import _C

Tensor = _C.Tensor

_PRETTY = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div",
           "maximum": "Maximum", "minimum": "Minimum", "negative": "Neg", "abs": "Abs",
           "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "tanh": "Tanh", "sigmoid": "Sigmoid",
           "relu": "Relu", "matmul": "MatMul", "sum": "Sum", "mean": "Mean",
           "reshape": "Reshape", "transpose": "Transpose", "getitem": "Slice", "copy": "Copy",
           "to": "To"}


def pretty(name):
    return _PRETTY.get(name, name)


def unbroadcast(g, shape):
    """Sum `g` over the axes broadcasting added or stretched, to get `shape`."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and g.shape[lead + i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


def _shape(x):
    return x.shape if isinstance(x, Tensor) else None


def _grad_for(x, g):
    return unbroadcast(g, x.shape) if isinstance(x, Tensor) else None


def _mask(cond, like):
    return cond.astype(like.dtype)


def _expand(g, shape, device, dtype):
    """g (broadcastable to shape) materialised at shape, on g's device."""
    return _C._full(tuple(shape), 0, dtype, device) + g


# ---- binary: ctx = (a, b); gradients unbroadcast to each operand --------------------------

def _add(ctx, g):
    a, b = ctx
    return _grad_for(a, g), _grad_for(b, g)


def _sub(ctx, g):
    a, b = ctx
    return _grad_for(a, g), (_grad_for(b, -g) if isinstance(b, Tensor) else None)


def _mul(ctx, g):
    a, b = ctx
    return (_grad_for(a, g * b) if isinstance(a, Tensor) else None,
            _grad_for(b, g * a) if isinstance(b, Tensor) else None)


def _div(ctx, g):
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

def _neg(ctx, g):
    return -g, None


def _abs(ctx, g):
    a, _ = ctx
    return g * (_mask(a > 0, g) - _mask(a < 0, g)), None


def _exp(ctx, g):
    return g * ctx[1], None


def _log(ctx, g):
    return g / ctx[0], None


def _sqrt(ctx, g):
    return g / (ctx[1] * 2.0), None


def _tanh(ctx, g):
    out = ctx[1]
    return g * (1.0 - out * out), None


def _sigmoid(ctx, g):
    out = ctx[1]
    return g * (out * (1.0 - out)), None


def _relu(ctx, g):
    return g * _mask(ctx[1] > 0, g), None


# ---- matmul: NumPy rules (1-D operands promoted, batch axes broadcast) ---------------------

def _swap(t):
    perm = list(range(t.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return t.transpose(perm)


def _matmul(ctx, g):
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


def _reshape(ctx, g):
    return g.reshape(ctx.shape), None


def _transpose(ctx, g):
    perm = ctx
    if perm is None:
        return g.transpose(), None
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return g.transpose(inv), None


def _getitem(ctx, g):
    a, key = ctx
    out = _C._full(a.shape, 0, g.dtype, a.device)
    out[key] = g
    return out, None


def _copy(ctx, g):
    return g, None


def _to(ctx, g):
    a = ctx
    return g.to(a.device, a.dtype), None


def make(name, out, a, b, args, kwargs):
    if name in _BINARY:
        return _BINARY[name], (a, b)
    if name in _UNARY:
        return _UNARY[name], (a, out.detach())
    if name in ("sum", "mean"):
        axes, keepdims = _parse_reduce(a, args, kwargs)
        return _reduce_rule(name == "mean"), (a, axes, keepdims)
    if name == "matmul":
        return _matmul, (a, b)
    if name == "reshape":
        return _reshape, a
    if name == "transpose":
        return _transpose, args
    if name == "getitem":
        return _getitem, (a, args)
    if name == "copy":
        return _copy, None
    if name == "to":
        return _to, a
    raise RuntimeError(f"autograd: no backward rule for op {name!r}")


_BINARY = {"add": _add, "subtract": _sub, "multiply": _mul, "divide": _div,
           "maximum": _maxmin(True), "minimum": _maxmin(False)}
_UNARY = {"negative": _neg, "abs": _abs, "exp": _exp, "log": _log, "sqrt": _sqrt,
          "tanh": _tanh, "sigmoid": _sigmoid, "relu": _relu}
