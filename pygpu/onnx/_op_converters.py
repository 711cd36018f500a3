"""The ONNX converters of pygpu's ops, as the tracer (_trace.py) records them: one table,
OPS, keyed by the op's name (an autograd rule name of the C ops, a Function's class name of
the Python ones). A converter gets the graph (_graph.Graph), the recorded op (its tensors,
Python arguments and outputs) and the value names its outputs must have.

Shapes the model computed from its input (x.view(x.size(0), -1)) are written so they follow
the input where they can: a reshape's size equal to the input's at the same place becomes
0 (copy it), one other size -1 (infer it); export's second run with other input sizes
finds any that cannot follow."""
import math

import numpy as np

from .. import _C
from ._graph import elem_type, view_positions as _view_positions

Tensor = _C.Tensor
OPS = {}


def op(*names):
    def add(fn):
        for n in names:
            OPS[n] = fn
        return fn
    return add


def _cast_to(g, name, t, dtype):
    if t.dtype is dtype:
        return name
    out = g.fresh("cast")
    g.node("Cast", [name], [out], to=elem_type(g.onnx, dtype))
    return out


def _operands(g, o):
    """The op's operands as value names, tensors cast to the output's dtype."""
    out = o.outputs[0]
    names = []
    for x in o.inputs:
        if x is None:
            continue
        if isinstance(x, Tensor):
            names.append(_cast_to(g, g.value(x), x, out.dtype))
        else:
            names.append(g.scalar(x, out))
    return names


# ---- elementwise ------------------------------------------------------------------------

_BINARY = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "pow": "Pow",
           "maximum": "Max", "minimum": "Min", "fmax": "Max", "fmin": "Min"}


def _binary(onnx_op):
    def convert(g, o, y):
        g.node(onnx_op, _operands(g, o), y)
    return convert


for _n, _o in _BINARY.items():
    op(_n)(_binary(_o))

_UNARY = {"exp": "Exp", "log": "Log", "tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu",
          "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg", "sin": "Sin", "cos": "Cos",
          "tan": "Tan", "erf": "Erf", "reciprocal": "Reciprocal", "floor": "Floor",
          "ceil": "Ceil", "sign": "Sign", "round": "Round", "asin": "Asin", "acos": "Acos",
          "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh",
          "atanh": "Atanh", "copy": "Identity"}


def _unary(onnx_op):
    def convert(g, o, y):
        g.node(onnx_op, [g.value(o.inputs[0])], y)
    return convert


for _n, _o in _UNARY.items():
    if _o:
        op(_n)(_unary(_o))


@op("square")
def _square(g, o, y):
    x = g.value(o.inputs[0])
    g.node("Mul", [x, x], y)


@op("rsqrt")
def _rsqrt(g, o, y):
    s = g.fresh("sqrt")
    g.node("Sqrt", [g.value(o.inputs[0])], [s])
    g.node("Reciprocal", [s], y)


@op("log1p", "expm1", "log2", "log10", "exp2", "trunc")
def _composed_unary(g, o, y):
    x, t = g.value(o.inputs[0]), o.inputs[0]
    name, tmp = o.name, g.fresh(o.name)
    if name == "log1p":
        g.node("Add", [x, g.scalar(1.0, t)], [tmp])
        g.node("Log", [tmp], y)
    elif name == "expm1":
        g.node("Exp", [x], [tmp])
        g.node("Sub", [tmp, g.scalar(1.0, t)], y)
    elif name in ("log2", "log10"):
        g.node("Log", [x], [tmp])
        g.node("Div", [tmp, g.scalar(math.log(2 if name == "log2" else 10), t)], y)
    elif name == "exp2":
        g.node("Pow", [g.scalar(2.0, t), x], y)
    else:  # trunc: the sign times the floor of the magnitude
        a, f, s = g.fresh("abs"), g.fresh("floor"), g.fresh("sign")
        g.node("Abs", [x], [a])
        g.node("Floor", [a], [f])
        g.node("Sign", [x], [s])
        g.node("Mul", [f, s], y)


@op("gelu", "gelu_tanh")
def _gelu_rows(g, o, y):
    """The op table's GELU rows (F.gelu): 0.5 x (1 + erf(x / sqrt 2)), or the tanh form
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); opset 20's Gelu op is not assumed."""
    x, t = g.value(o.inputs[0]), o.inputs[0]
    inner, p1, hx = (g.fresh(n) for n in ("gelu_inner", "p1", "hx"))
    if o.name == "gelu_tanh":
        x3, kx3, s, cs = (g.fresh(n) for n in ("x3", "kx3", "s", "cs"))
        g.node("Pow", [x, g.scalar(3.0, t)], [x3])
        g.node("Mul", [x3, g.scalar(0.044715, t)], [kx3])
        g.node("Add", [x, kx3], [s])
        g.node("Mul", [s, g.scalar(math.sqrt(2.0 / math.pi), t)], [cs])
        g.node("Tanh", [cs], [inner])
    else:
        xs = g.fresh("xs")
        g.node("Mul", [x, g.scalar(1.0 / math.sqrt(2.0), t)], [xs])
        g.node("Erf", [xs], [inner])
    g.node("Add", [inner, g.scalar(1.0, t)], [p1])
    g.node("Mul", [x, g.scalar(0.5, t)], [hx])
    g.node("Mul", [hx, p1], y)


@op("where")
def _where(g, o, y):
    cond = o.args[0] if isinstance(o.args, tuple) and o.args else o.args
    a, b = o.inputs
    out = o.outputs[0]
    names = [g.value(cond) if isinstance(cond, Tensor) else g.const(bool(cond), "cond", "bool")]
    for x in (a, b):
        names.append(_cast_to(g, g.value(x), x, out.dtype) if isinstance(x, Tensor)
                     else g.scalar(x, out))
    g.node("Where", names, y)


@op("to")
def _to(g, o, y):
    x, out = o.inputs[0], o.outputs[0]
    if x.dtype is out.dtype:
        g.node("Identity", [g.value(x)], y)
    else:
        g.node("Cast", [g.value(x)], y, to=elem_type(g.onnx, out.dtype))


@op("matmul")
def _matmul(g, o, y):
    a, b = o.inputs
    g.node("MatMul", [g.value(a), g.value(b)], y)


# ---- reductions -------------------------------------------------------------------------

def _reduce_axes(o):
    x = o.inputs[0]
    args, kwargs = o.args or (), o.kwargs or {}
    if isinstance(args, dict):
        args, kwargs = (), args
    dim = kwargs.get("dim", kwargs.get("axis", args[0] if len(args) > 0 else None))
    keep = bool(kwargs.get("keepdim", kwargs.get("keepdims", args[1] if len(args) > 1 else False)))
    if dim is None:
        return list(range(x.ndim)), keep
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d % max(x.ndim, 1) for d in dims], keep


@op("sum", "mean")
def _reduce(g, o, y):
    x = o.inputs[0]
    axes, keep = _reduce_axes(o)
    out = o.outputs[0]
    if len(axes) == 0 or x.ndim == 0:
        g.node("Identity", [g.value(x)], y)
        return
    src = _cast_to(g, g.value(x), x, out.dtype)
    if o.name == "sum":
        g.node("ReduceSum", [src, g.const(axes, "axes")], y, keepdims=int(keep))
    else:
        g.node("ReduceMean", [src], y, axes=axes, keepdims=int(keep))


# ---- shapes and views -------------------------------------------------------------------

def reshape_target(g, x, out):
    """Reshape's shape input. A size that follows the inputs' dynamic axes is 0 (copy the
    input's) where it equals the input's at the same place in both runs, else -1 (inferred)
    if it is the only such size; the other sizes are written as they are."""
    dyn_in, dyn_out = g.dynamic(x), g.dynamic(out)
    target = list(out.shape)
    free = []
    for i in sorted(dyn_out):
        if i < x.ndim and i in dyn_in and x.shape[i] == out.shape[i]:
            target[i] = 0
        else:
            free.append(i)
    if len(free) > 1:
        return target, free
    if free:
        target[free[0]] = -1
    return target, []


def runtime_shape(g, target, free, t):
    """A shape value built at run time: each size in `free` read (Shape, Gather) from a
    traced tensor that has that size in both runs, one size no tensor has left to -1
    (inferred), the others constants."""
    other = g.other_shape(t)
    sources = {i: g.size_source(t.shape[i], other[i]) for i in free}
    missing = [i for i in free if sources[i] is None]
    if len(missing) > 1:
        raise NotImplementedError(f"onnx.export: a shape {tuple(t.shape)} whose sizes "
                                  f"{[t.shape[k] for k in missing]} follow the dynamic axes "
                                  "as products no traced tensor has; ONNX's Reshape can "
                                  "infer only one")
    parts = []
    for i, n in enumerate(target):
        if i in free and sources[i] is not None:
            name, j = sources[i]
            shp, part = g.fresh("shape"), g.fresh("size")
            g.node("Shape", [name], [shp])
            g.node("Gather", [shp, g.const([j], "axis_index")], [part], axis=0)
            parts.append(part)
        else:
            parts.append(g.const([-1 if i in missing else n], "size"))
    out = g.fresh("shape")
    g.node("Concat", parts, [out], axis=0)
    return out


def _reshape_to(g, x, out, y):
    target, free = reshape_target(g, x, out)
    shape = runtime_shape(g, target, free, out) if free else g.const(target, "shape")
    g.node("Reshape", [g.value(x), shape], y)


@op("reshape", "View", "Unsqueeze", "Squeeze")
def _reshape(g, o, y):
    _reshape_to(g, o.inputs[0], o.outputs[0], y)


@op("transpose")
def _transpose(g, o, y):
    x = o.inputs[0]
    perm = o.args
    if isinstance(perm, Tensor) or perm is None:
        perm = list(range(x.ndim))[::-1]
    g.node("Transpose", [g.value(x)], y, perm=[int(p) % max(x.ndim, 1) for p in perm])


@op("Expand")
def _expand(g, o, y):
    x, out = o.inputs[0], o.outputs[0]
    lead = out.ndim - x.ndim
    target = [1 if i >= lead and x.shape[i - lead] == n else n for i, n in enumerate(out.shape)]
    if any(target[i] != 1 for i in g.dynamic(out)):
        raise NotImplementedError("onnx.export: an expand to a size that follows the dynamic "
                                  "axes from a size-1 axis")
    g.node("Expand", [g.value(x), g.const(target, "shape")], y)


@op("Narrow", "Select", "AsStrided", "Flip", "Diagonal")
def _gather_view(g, o, y):
    """Any view of x: a Gather of x's flattened elements at the view's positions (exact for
    the example's shapes; Narrow and Select of the leading or trailing axes take Slice)."""
    x, out = o.inputs[0], o.outputs[0]
    if o.name in ("Narrow", "Select") and _slice_view(g, o, y):
        return
    if g.dynamic(x):
        raise NotImplementedError(f"onnx.export: a {o.name} view of a tensor whose sizes "
                                  "follow the dynamic axes")
    where = {int(p): i for i, p in enumerate(_view_positions(x).reshape(-1))}
    try:
        idx = np.vectorize(lambda p: where[int(p)], otypes=[np.int64])(_view_positions(out))
    except KeyError:
        raise NotImplementedError(f"onnx.export: a {o.name} view reaching elements its input "
                                  "does not hold") from None
    flat = g.fresh("flat")
    g.node("Reshape", [g.value(x), g.const([-1], "shape")], [flat])
    g.node("Gather", [flat, g.const(idx.reshape(tuple(out.shape)), "indices")], y, axis=0)


def _slice_view(g, o, y):
    """Narrow/Select as Slice (+ Squeeze): the axis is where the shapes or strides differ."""
    x, out = o.inputs[0], o.outputs[0]
    xs, xst = list(x.shape), list(x.stride())
    if o.name == "Narrow":
        d = next((i for i in range(x.ndim) if xs[i] != out.shape[i]), 0)
        st = xst[d] or 1
        start = (out.storage_offset() - x.storage_offset()) // st
        stop = start + out.shape[d]
        end = 2 ** 62 if stop == xs[d] else stop
        g.node("Slice", [g.value(x), g.const([start], "starts"), g.const([end], "ends"),
                         g.const([d], "axes")], y)
        return True
    for d in range(x.ndim):  # Select: the axis whose removal leaves out's shape and strides
        if xs[:d] + xs[d + 1:] == list(out.shape) and xst[:d] + xst[d + 1:] == list(out.stride()):
            st = xst[d] or 1
            i = (out.storage_offset() - x.storage_offset()) // st
            if 0 <= i < xs[d]:
                idx = i - xs[d] if i == xs[d] - 1 and xs[d] > 1 else i  # x[:, -1] stays last
                g.node("Gather", [g.value(x), g.const(idx, "index")], y, axis=d)
                return True
    return False


@op("_Cat")
def _cat(g, o, y):
    dim = o.kwargs.get("dim", 0)
    ts = [t for t in o.args if isinstance(t, Tensor)]
    out = o.outputs[0]
    g.node("Concat", [_cast_to(g, g.value(t), t, out.dtype) for t in ts], y,
           axis=int(dim) % max(out.ndim, 1))


def _basic_index(key, x):
    """(steps, gathers) for a basic index: a list of (kind, axis, value)."""
    if not isinstance(key, tuple):
        key = (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    out, axis = [], 0
    for k in key:
        if k is Ellipsis:
            axis += x.ndim - n_real
        elif k is None:
            out.append(("new", axis, None))
        elif isinstance(k, bool):
            return None
        elif isinstance(k, int):
            out.append(("int", axis, k))
            axis += 1
        elif isinstance(k, slice):
            out.append(("slice", axis, k))
            axis += 1
        elif isinstance(k, Tensor):
            if k.dtype.name == "bool" or sum(isinstance(j, Tensor) for j in key) > 1:
                return None
            out.append(("tensor", axis, k))
            axis += 1
        else:
            return None
    return out


@op("getitem")
def _getitem(g, o, y):
    x, out = o.inputs[0], o.outputs[0]
    steps = _basic_index(o.args, x)
    if steps is None:
        raise NotImplementedError(f"onnx.export: indexing with {o.args!r:.80} (boolean masks "
                                  "or several index tensors) is not converted")
    cur, removed, shape = g.value(x), 0, list(x.shape)
    squeeze, unsq = [], []
    pos = 0  # the axis of x's current value each step applies to
    for kind, axis, v in steps:
        a = axis - removed
        if kind == "new":
            unsq.append(len(unsq) + a + len(squeeze))
            continue
        n = shape[axis]
        nxt = g.fresh("index")
        if kind == "int":
            i = v if v >= 0 else v
            g.node("Gather", [cur, g.const(i, "index")], [nxt], axis=a)
            removed += 1
        elif kind == "slice":
            start, stop, step = v.indices(n)
            if (start, stop, step) == (0, n, 1):
                continue
            end = 2 ** 62 if stop == n and step > 0 else (stop if stop >= 0 else -(2 ** 62))
            g.node("Slice", [cur, g.const([start], "starts"), g.const([end], "ends"),
                             g.const([a], "axes"), g.const([step], "steps")], [nxt])
        else:
            g.node("Gather", [cur, g.value(v)], [nxt], axis=a)
            removed += 1 - v.ndim
        cur = nxt
        pos += 1
    if unsq:
        # new axes: put out's shape back with a reshape of the result
        nxt = g.fresh("index")
        g.node("Reshape", [cur, g.const(list(out.shape), "shape")], [nxt])
        cur = nxt
    g.node("Identity", [cur], y)


@op("split")
def _split_unused(g, o, y):  # pragma: no cover - split is recorded as Narrow views
    raise NotImplementedError


# ---- the fused and composite ops (Functions) ---------------------------------------------

_ACT = {1: ("Relu", {}), 2: ("Tanh", {}), 3: ("Sigmoid", {}), 4: ("LeakyRelu", {"alpha": 0.01})}


@op("_Linear", "_LinearLow")
def _linear(g, o, y):
    x, w, b, act = o.args[:4]
    wt, mm = g.fresh("weight_t"), g.fresh("matmul")
    g.node("Transpose", [g.value(w)], [wt], perm=[1, 0])
    g.node("MatMul", [g.value(x), wt], [mm] if (b is not None or act) else y)
    cur = mm
    if b is not None:
        nxt = g.fresh("bias") if act else y[0]
        g.node("Add", [mm, g.value(b)], [nxt])
        cur = nxt
    if act:
        name, attrs = _ACT[int(act)]
        g.node(name, [cur], y, **attrs)


@op("_Softmax", "_LogSoftmax")
def _softmax(g, o, y):
    x, dim = o.args[:2]
    g.node("Softmax" if o.name == "_Softmax" else "LogSoftmax", [g.value(x)], y,
           axis=int(dim) % max(x.ndim, 1))


@op("_LayerNorm")
def _layer_norm(g, o, y):
    x, w, b, eps = o.args[:4]
    n = w.ndim if isinstance(w, Tensor) else 1
    ins = [g.value(x), g.value(w) if isinstance(w, Tensor) else
           g.const(np.ones(x.shape[-1:]), "ones", x.dtype.name)]
    if isinstance(b, Tensor):
        ins.append(g.value(b))
    g.node("LayerNormalization", ins, y, axis=-n, epsilon=float(eps))


@op("_MaskedFillFn")
def _masked_fill(g, o, y):
    x, mask, value = o.args[:3]
    v = g.value(value) if isinstance(value, Tensor) else g.scalar(value, x)
    g.node("Where", [g.value(mask), v, g.value(x)], y)


@op("_IndexSelectFn")
def _index_select(g, o, y):
    x, dim, index = o.args[:3]
    g.node("Gather", [g.value(x), g.value(index)], y, axis=int(dim) % max(x.ndim, 1))


@op("_Rows")
def _embedding_rows(g, o, y):
    """F.embedding's rows, weight[idx] (pygpu/_ops/_embedding.py): the functional form, or an
    nn.Embedding over indices made in the forward (a GPT's wpe(arange(t))), which the module
    converter does not see."""
    weight, idx, padding_idx, scale, exact = o.args[:5]
    if exact and (padding_idx is not None or scale is not None):
        raise NotImplementedError("onnx.export: embedding's double backward (its padding mask "
                                  "and frequency scale) is not exported")
    g.node("Gather", [g.value(weight), g.value(idx)], y, axis=0)


@op("_SDPA")
def _sdpa(g, o, y):
    """softmax(q k^T * scale + mask) v, with the causal mask as a constant."""
    q, k, v, mask, scale, causal, p = o.args[:7]
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    s = scale if scale is not None else 1.0 / math.sqrt(E)
    kt, sc, w = g.fresh("k_t"), g.fresh("scores"), g.fresh("weights")
    perm = list(range(k.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    g.node("Transpose", [g.value(k)], [kt], perm=perm)
    qk = g.fresh("qk")
    g.node("MatMul", [g.value(q), kt], [qk])
    g.node("Mul", [qk, g.scalar(float(s), q)], [sc])
    cur = sc
    if causal and (g.dynamic(q) or g.dynamic(k)):
        raise NotImplementedError("onnx.export: is_causal attention with a sequence length "
                                  "that follows the dynamic axes (pass the mask as an input)")
    if causal:
        tri = np.triu(np.full((L, S), -np.inf, dtype=np.float32), 1)
        nxt = g.fresh("masked")
        g.node("Add", [cur, g.const(tri.astype(q.dtype.name), "causal", q.dtype.name)], [nxt])
        cur = nxt
    if isinstance(mask, Tensor):
        nxt = g.fresh("masked")
        if mask.dtype.name == "bool":
            g.node("Where", [g.value(mask), cur, g.scalar(float("-inf"), q)], [nxt])
        else:
            g.node("Add", [cur, g.value(mask)], [nxt])
        cur = nxt
    g.node("Softmax", [cur], [w], axis=-1)
    g.node("MatMul", [w, g.value(v)], y)


@op("_Pool2d")
def _pool2d(g, o, y):
    x, kind, kernel, stride, padding, dilation, out_hw, cip, divisor = o.args[:9]
    from .._ops._conv import POOL_ADAPTIVE_AVG, POOL_ADAPTIVE_MAX, POOL_MAX
    if kind in (POOL_ADAPTIVE_AVG, POOL_ADAPTIVE_MAX):
        if tuple(out_hw) != (1, 1):
            raise NotImplementedError(f"onnx.export: adaptive pooling to {tuple(out_hw)} (only "
                                      "to 1 x 1, global pooling, is converted)")
        g.node("GlobalAveragePool" if kind == POOL_ADAPTIVE_AVG else "GlobalMaxPool",
               [g.value(x)], y)
        return
    pads = list(padding) + list(padding)
    if kind == POOL_MAX:
        g.node("MaxPool", [g.value(x)], y, kernel_shape=list(kernel), strides=list(stride),
               pads=pads, dilations=list(dilation), ceil_mode=_ceil(x, kernel, stride, padding,
                                                                   dilation, out_hw))
        return
    if divisor:
        raise NotImplementedError("onnx.export: average pooling with divisor_override")
    g.node("AveragePool", [g.value(x)], y, kernel_shape=list(kernel), strides=list(stride),
           pads=pads, count_include_pad=int(bool(cip)),
           ceil_mode=_ceil(x, kernel, stride, padding, (1, 1), out_hw))


def _ceil(x, kernel, stride, padding, dilation, out_hw):
    H = x.shape[-2]
    floor = (H + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    return int(out_hw[0] != floor)


@op("Gather")
def _gather(g, o, y):
    x, dim, idx = o.args[:3]
    g.node("GatherElements", [g.value(x), g.value(idx)], y, axis=int(dim) % max(x.ndim, 1))


@op("_AExtreme")
def _aextreme(g, o, y):
    x, largest, dim, keepdim = o.args[:4]
    dims = list(range(x.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    g.node("ReduceMax" if largest else "ReduceMin", [g.value(x)], y,
           axes=[d % max(x.ndim, 1) for d in dims], keepdims=int(bool(keepdim)))


@op("_CumsumFn")
def _cumsum(g, o, y):
    x, d = o.args[:2]
    g.node("CumSum", [g.value(x), g.const(int(d) % max(x.ndim, 1), "axis")], y)


@op("_Prod")
def _prod(g, o, y):
    x, d = o.args[:2]
    axes = list(range(x.ndim)) if d is None else [int(d) % max(x.ndim, 1)]
    g.node("ReduceProd", [g.value(x)], y, axes=axes, keepdims=0)


# ---- comparisons and logical ops (reported by the trace hook: autograd records none) ------

_COMPARE = {"equal": "Equal", "less": "Less", "less_equal": "LessOrEqual",
            "greater": "Greater", "greater_equal": "GreaterOrEqual", "not_equal": "Equal"}
_LOGICAL = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
            "bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor"}


def _common_operands(g, o, logical):
    """Both operands as value names of one dtype: bool for logical ops, else the tensors'
    (the wider float, if they differ), a Python number as that dtype."""
    ts = [x for x in o.inputs if isinstance(x, Tensor)]
    if logical:
        from .._dtype import bool_ as target
    else:
        target = ts[0].dtype
        for t in ts[1:]:
            if t.dtype is not target and (t.dtype.is_floating_point or
                                          not target.is_floating_point):
                target = t.dtype if t.dtype.itemsize >= target.itemsize or \
                    not target.is_floating_point else target
    names = []
    for x in o.inputs:
        if isinstance(x, Tensor):
            names.append(_cast_to(g, g.value(x), x, target))
        elif x is not None:
            names.append(g.const(x, "scalar", "bool" if logical else
                                 ("float32" if target.name == "bfloat16" else target.name)))
    return names


def _compare(name):
    def convert(g, o, y):
        ins = _common_operands(g, o, False)
        if name == "not_equal":
            eq = g.fresh("eq")
            g.node("Equal", ins, [eq])
            g.node("Not", [eq], y)
        else:
            g.node(_COMPARE[name], ins, y)
    return convert


def _logical(name):
    def convert(g, o, y):
        if name.startswith("bitwise") and o.outputs[0].dtype.name != "bool":
            raise NotImplementedError(f"onnx.export: {name} of integers is not converted")
        g.node(_LOGICAL[name], _common_operands(g, o, True), y)
    return convert


for _n in _COMPARE:
    op(_n)(_compare(_n))
for _n in _LOGICAL:
    op(_n)(_logical(_n))


@op("logical_not")
def _logical_not(g, o, y):
    x = o.inputs[0]
    g.node("Not", [_cast_to(g, g.value(x), x, _bool())], y)


@op("isnan", "isinf")
def _isnan(g, o, y):
    g.node("IsNaN" if o.name == "isnan" else "IsInf", [g.value(o.inputs[0])], y)


def _bool():
    from .._dtype import bool_
    return bool_
