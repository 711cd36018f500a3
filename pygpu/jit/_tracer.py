"""torch.jit.trace's recording: one run of a function or module on example inputs, turned
into a Graph (_ir.py) whose nodes replay the ops that ran.

The recording is the ONNX exporter's (pygpu/onnx/_trace.py: autograd's hook for the C ops,
Function.apply for the Python ops, the trace hook for ops autograd does not record); this
file only turns its list of ops into IR nodes and says how each runs again:
- a C op is a row of _C_OPS below (its TorchScript kind and the call that reruns it);
- a Python op is its autograd.Function, rerun by cls.apply on the new tensors (its kind from
  _FUNCTION_KINDS, or "pygpu::<ClassName>" for a Function PyTorch has no aten name for);
- a tensor an op used that no recorded op made is a graph input, a module's parameter or
  buffer (prim::GetAttr, read from the module when the graph runs, so training a traced
  module updates and reads its own parameters), or a constant (prim::Constant).
Python values the code computed from tensors (bool(t), t.item(), a shape read in Python) are
frozen into the graph as constants, as PyTorch's tracer freezes them; reading a tensor as a
Python bool or number warns with PyTorch's TracerWarning. A data-dependent `if` therefore
replays the branch the example took."""
import operator
import warnings

from .. import _C
from ..onnx import _trace as _onnx_trace
from . import _ir, _ir_types

Tensor = _C.Tensor


class TracerWarning(Warning):
    """torch.jit.TracerWarning: the trace may not generalize to other inputs."""

    @staticmethod
    def ignore_lib_warnings():
        warnings.filterwarnings("ignore", category=TracerWarning, module="pygpu.*")


# what C reports (onnx/_trace.CONVERSIONS) -> PyTorch's word for the Python value
_CONVERSION_WORDS = {"bool": "boolean", "float": "float", "integer": "integer",
                     "number": "number"}
_FROZEN_TEXT = ("We can't record the data flow of Python values, so this value will be treated "
                "as a constant in the future. This means that the trace might not generalize "
                "to other inputs!")


class JitTracer(_onnx_trace.Tracer):
    """The ONNX tracer with every module traced op by op, the ops on inputs that cannot
    require grad (integer tensors) reported too (level 2), and PyTorch's TracerWarning on a
    tensor read as a Python value."""

    level = 2

    def __init__(self, module=None):
        super().__init__(())
        self.ops = _ScopedOps(self)
        self.scope = []  # the submodules being called, outermost first (PyTorch's scopes)
        self.names = {} if module is None else {
            id(m): "__module." + path for path, m in module.named_modules() if path}

    def __enter__(self):
        super().__enter__()
        self._random = _C._random
        tracer, draw = self, self._random

        def traced_random(kind, shape, dtype, device, *at):
            out = draw(kind, shape, dtype, device, *at)
            if not tracer._inner:  # a draw is an op of the graph, drawn again at each replay
                tracer.ops.append(_onnx_trace.Op("random", kind, (), (tuple(shape), dtype,
                                                                        device), None, [out]))
                tracer.mark([out])
            return out
        _C._random = traced_random
        from ..nn import module as _module
        call = _module.Module.__call__  # the base tracer's; its __exit__ restores the original
        tracer = self

        def scoped_call(module, *args, **kwargs):
            name = tracer.names.get(id(module))
            if name is None:
                return call(module, *args, **kwargs)
            tracer.scope.append(name)
            try:
                return call(module, *args, **kwargs)
            finally:
                tracer.scope.pop()
        _module.Module.__call__ = scoped_call
        return self

    def __exit__(self, *exc):
        _C._random = self._random
        return super().__exit__(*exc)

    def on_conversion(self, what, tensor):
        warnings.warn(f"Converting a tensor to a Python {_CONVERSION_WORDS[what]} might cause "
                      "the trace to be incorrect. " + _FROZEN_TEXT, TracerWarning, stacklevel=3)


class TracingCheckError(Exception):
    """torch.jit.TracingCheckError: check_trace found the graph differs on check_inputs."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n"
            self.message += _indent(graph_diff_error) + "\n"
        if tensor_compare_error is not None:
            self.message += ("ERROR: Tensor-valued Constant nodes differed in value across "
                             "invocations. This often indicates that the tracer has "
                             "encountered untraceable code.\n")
            self.message += _indent(tensor_compare_error) + "\n"
        super().__init__(self.message)


def _indent(s):
    return "\n".join("\t" + line for line in s.splitlines())


def erased_text(graph):
    """The graph's text with tensor types as plain `Tensor` (what check_trace compares)."""
    import re
    return re.sub(r"(?<= : )[A-Z][A-Za-z]*\([^()]*(?:\[[^]]*\][^()]*)*\)", "Tensor",
                  str(graph))


def graph_diff(a, b):
    """None if the graphs are the same but for tensor types, else their diff (ndiff)."""
    import difflib
    ta, tb = erased_text(a), erased_text(b)
    if ta == tb:
        return None
    return "Graph diff:\n" + _indent("".join(difflib.ndiff(ta.splitlines(True),
                                                            tb.splitlines(True))))


def deprecated(what, instead="`torch.compile` or `torch.export`"):
    """PyTorch 2.13's DeprecationWarning for torch.jit's entry points, in its words."""
    warnings.warn(f"`torch.jit.{what}` is deprecated. Please switch to {instead}.",
                  DeprecationWarning, stacklevel=3)


class _ScopedOps(list):
    """The tracer's op list, remembering the module scope each op was recorded in
    (`__module.seq/__module.seq.0`, PyTorch's scopeName())."""

    def __init__(self, tracer):
        super().__init__()
        self.tracer, self.scopes = tracer, []

    def append(self, op):
        super().append(op)
        self.scopes.append("/".join(self.tracer.scope))


_TRACING = [0]  # torch.jit.is_tracing(): how many traces are running


def is_tracing():
    return bool(_TRACING[0])


# ---- C ops: record name -> TorchScript kind and how to rerun ----------------------------

def _py(name):
    """The call that reruns a C op from its operands: its Tensor method where the op table
    names one (Tensor.add), else the function it names in a submodule
    (pygpu.special.xlog1py, pygpu.nn.functional.gelu)."""
    import importlib
    for row in _C._op_table():
        if row[0] != name:
            continue
        for spelling in row[3]:
            if spelling.startswith("Tensor.") and not spelling.startswith("Tensor.__"):
                return getattr(Tensor, spelling.split(".", 1)[1])
        for spelling in row[3]:
            module, _, attr = spelling.rpartition(".")
            if module == "_C":
                return getattr(_C, attr)
            if module.startswith("pygpu."):
                return getattr(importlib.import_module(module), attr)
    raise RuntimeError(f"torch.jit.trace: the op table names no call for '{name}'")


# TorchScript's spelling where it differs from the op table's name
_ATEN_NAMES = {"subtract": "sub", "multiply": "mul", "divide": "div", "negative": "neg",
               "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le",
               "greater": "gt", "greater_equal": "ge", "bitwise_left_shift": "__lshift__",
               "bitwise_right_shift": "__rshift__"}
# Python's operator for a binary op whose left operand may be a Python number (2 * x)
_OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
              "divide": operator.truediv, "pow": operator.pow, "floor_divide": operator.floordiv,
              "remainder": operator.mod, "equal": operator.eq, "not_equal": operator.ne,
              "less": operator.lt, "less_equal": operator.le, "greater": operator.gt,
              "greater_equal": operator.ge, "bitwise_and": operator.and_,
              "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
              "matmul": operator.matmul}
_FAMILY = {row[0]: row[1] for row in _C._op_table()}


def _binary(op):
    name = op.what
    fn = _OPERATORS.get(name) or _py(name)
    a, b = op.inputs
    if name in ("add", "subtract"):  # PyTorch's aten::add(self, other, alpha)
        return [a, b, 1], lambda x, y, alpha: fn(x, y)
    return [a, b], fn


def _unary(op):
    return [op.inputs[0]], _py(op.what)


def _reduce(op):
    name, args, kwargs = op.what, tuple(op.args or ()), dict(op.kwargs or {})
    dims = args[0] if args else kwargs.get("axis", kwargs.get("dim"))
    keep = bool(kwargs.get("keepdims", kwargs.get("keepdim", False)))
    method = getattr(Tensor, name)
    shown = [op.inputs[0]]
    if dims is not None:
        shown += [list(dims) if isinstance(dims, (tuple, list)) else [dims], keep]
    if name in ("sum", "mean"):
        shown.append(None)  # dtype
    return shown, lambda x, *_: method(x, *args, **kwargs)


def _reshape(op):
    shape = list(op.outputs[0].shape)
    return [op.inputs[0], shape], lambda x, s: x.reshape(s)


def _transpose(op):
    perm = list(op.args)
    return [op.inputs[0], perm], lambda x, p: x.permute(p)


def _copy(op):
    return [op.inputs[0], None], lambda x, _fmt: x.clone()


def _to(op):
    out = op.outputs[0]
    dev, dt = out.device, out.dtype
    return [op.inputs[0], str(dev), str(dt).replace("pygpu.", "")], \
        lambda x, *_: x.to(device=dev, dtype=dt)


def _where(op):
    a, b = op.inputs
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        raise RuntimeError("torch.jit.trace: pygpu's tracer cannot replay where() with a "
                           "Python number operand (the record keeps tensors only); write "
                           "the number as a tensor (torch.full_like)")
    return [op.args[0], a, b], lambda c, x, y: x.where(c, y)


_C_BUILDERS = {"binary": _binary, "unary": _unary, "reduce": _reduce, "matmul": _binary,
               "select": _where}
_C_BY_NAME = {"reshape": ("aten::reshape", _reshape), "transpose": ("aten::permute", _transpose),
              "copy": ("aten::clone", _copy), "to": ("aten::to", _to)}

# autograd.Function classes -> (TorchScript kind, how many leading arguments are shown as
# inputs: the rest are the Function's own bookkeeping, kept with the node)
_FUNCTION_KINDS = {"_Linear": ("aten::linear", 3),
                   "_Softmax": ("aten::softmax", 2), "_LogSoftmax": ("aten::log_softmax", 2),
                   "_LayerNorm": ("aten::layer_norm", None), "_BatchNorm": ("aten::batch_norm", None),
                   "_SDPA": ("aten::scaled_dot_product_attention", None),
                   "_CrossEntropy": ("aten::cross_entropy_loss", None),
                   "_Rows": ("aten::embedding", None), "_IndexSelectFn": ("aten::index_select", None),
                   "_MaskedFillFn": ("aten::masked_fill", None), "Gather": ("aten::gather", None),
                   "_CumsumFn": ("aten::cumsum", None), "_Prod": ("aten::prod", None),
                   "_LogSigmoid": ("aten::log_sigmoid", None), "_ConstantPad": ("aten::pad", None)}


def _convolution(op):
    """aten::_convolution's 13 inputs (input, weight, bias, stride, padding, dilation,
    transposed, output_padding, groups, benchmark, deterministic, cudnn_enabled, allow_tf32)
    from pygpu's geometry (sh, sw, dh, dw, pad top, bottom, left, right, groups)."""
    x, w, b, geom = op.args
    sh, sw, dh, dw, pt, _pb, pl, _pr, groups = geom
    cls = op.what
    return ([x, w, b, [sh, sw], [pt, pl], [dh, dw], False, [0, 0], groups, False, False, True,
             True], lambda x, w, b, *_: cls.apply(x, w, b, geom))


def _expand(op):
    return [op.args[0], list(op.outputs[0].shape), False], lambda x, size, _i: x.expand(size)


def _cat(op):
    cls, kwargs = op.what, dict(op.kwargs or {})
    dim = kwargs.pop("dim", 0)
    return [list(op.args), dim], lambda ts, d: cls.apply(*ts, dim=d, **kwargs)


def _softmax(op):
    cls, (x, dim) = op.what, op.args
    return [x, dim, None], lambda x, d, _dtype: cls.apply(x, d)


def _pool2d(op):
    """aten::max_pool2d / avg_pool2d / adaptive_avg_pool2d (the POOL sub-op row's name) in
    PyTorch's schema; ceil_mode is read back from the traced output size."""
    from .._ops._conv import _POOL_ROWS
    cls = op.what
    x, kind, kernel, stride, padding, dilation, out_hw, cip, divisor, _ = op.args
    row = _POOL_ROWS[kind]
    name, flags = row[2], row[4]

    def run(x, *_):
        return cls.apply(x, kind, kernel, stride, padding, dilation, out_hw, cip, divisor, [])
    if "ADAPTIVE" in flags:
        return f"aten::{name}", [x, list(out_hw)], run
    size = x.shape[-2:]
    floor = [(n + 2 * p - d * (k - 1) - 1) // st + 1
             for n, p, d, k, st in zip(size, padding, dilation, kernel, stride)]
    ceil = list(out_hw) != floor
    if "MAX" in flags:
        return f"aten::{name}", [x, list(kernel), list(stride), list(padding), list(dilation),
                                 ceil], run
    return f"aten::{name}", [x, list(kernel), list(stride), list(padding), ceil, bool(cip),
                             divisor or None], run


# Functions whose inputs are shown in PyTorch's schema order: kind and a builder of
# (shown inputs, how to rerun) as for the C ops
_FUNCTION_BUILDERS = {"_Convolution": ("aten::_convolution", _convolution),
                      "Expand": ("aten::expand", _expand), "_Cat": ("aten::cat", _cat),
                      "_Softmax": ("aten::softmax", _softmax),
                      "_LogSoftmax": ("aten::log_softmax", _softmax)}


def _is_constant_like(x):
    if x is None or isinstance(x, (bool, int, float, str)):
        return True
    return isinstance(x, (list, tuple)) and all(isinstance(v, (bool, int, float)) for v in x)


class GraphBuilder:
    """Turns one traced run (the tracer's ops) into a Graph whose nodes rerun them."""

    def __init__(self, module, param_paths):
        self.graph = _ir.Graph()
        self.env = {}           # id(tensor) -> Value
        self.module = module
        self.param_paths = param_paths  # id(tensor) -> attribute path ("l.weight")
        self.attr_values = {}   # attribute path -> Value (prim::GetAttr chain)
        self.self_value = None
        self.grad = {}          # Value -> whether it requires grad (PyTorch's flag in types)
        self.scope = ""         # the module scope of the op being added
        self._random_call = _C._random
        if module is not None:
            self.self_value = self.graph.addInput("self.1")
            self.self_value.setType(_ir_types.simple("__torch__." + type(module).__name__))
            self.attr_values[""] = self.self_value

    # -- values -------------------------------------------------------------------------
    def add_input(self, name, t, requires_grad):
        v = self.graph.addInput(name)
        v.setType(_ir_types.of_value(t, requires_grad=requires_grad))
        self.env[id(t)] = v
        self.grad[v] = requires_grad
        return v

    def _getattr(self, path):
        if path in self.attr_values:
            return self.attr_values[path]
        owner, _, name = path.rpartition(".")
        src = self._getattr(owner)
        n = self.graph.appendNode(self.graph.create("prim::GetAttr", [src]))
        n.s_("name", name)
        obj = self.module
        for part in path.split("."):
            obj = getattr(obj, part)
        n.output().setType(_ir_types.TensorType() if isinstance(obj, Tensor) else
                           _ir_types.simple("__torch__." + type(obj).__name__))
        n.output().setDebugName("_" + name if name[:1].isdigit() else name)  # Sequential's 0
        n._run = lambda o, _name=name: getattr(o, _name)
        self.grad[n.output()] = bool(isinstance(obj, Tensor) and obj.requires_grad)
        self.attr_values[path] = n.output()
        return n.output()

    def value(self, x):
        """The Value of an operand: traced, a parameter or buffer, or a new constant."""
        if isinstance(x, _Placeholder):
            return x.value
        if isinstance(x, Tensor):
            if id(x) in self.env:
                return self.env[id(x)]
            if id(x) in self.param_paths:
                return self._getattr(self.param_paths[id(x)])
            if x.requires_grad:  # a tensor the function captured, not an input: PyTorch's error
                raise RuntimeError("Cannot insert a Tensor that requires grad as a constant. "
                                   "Consider making it a parameter or input, or detaching the "
                                   "gradient")
            return self.graph.insertConstant(x.detach())
        if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x):
            items = [self.value(v) for v in x]
            n = self.graph.appendNode(self.graph.create("prim::ListConstruct", items))
            n.output().setType(_ir_types.list_of("Tensor"))
            n._run = lambda *vs: list(vs)
            return n.output()
        return self.graph.insertConstant(list(x) if isinstance(x, tuple) else x)

    # -- nodes --------------------------------------------------------------------------
    def add_node(self, kind, shown, run, outputs):
        """A node of kind over the Values of `shown` (tensors and constants); run(*values)
        reruns it; outputs are the traced run's result tensors."""
        ins = [self.value(x) for x in shown]
        n = self.graph.appendNode(self.graph.create(kind, ins, len(outputs)))
        rg = any(self.grad.get(v, False) for v in ins)
        for v, t in zip(n._outputs, outputs):
            self.grad[v] = rg
            if t is not None:  # None: an intermediate of a decomposed index
                v.setType(_ir_types.of_value(t, requires_grad=rg and t.requires_grad))
                self.env[id(t)] = v
        n._run = run
        n._scope = self.scope
        return n

    def add_op(self, op):
        if self.scope and self.module is not None:  # the submodule called, as PyTorch reads it
            self._getattr(self.scope.rsplit("/", 1)[-1][len("__module."):])
        if op.kind == "c":
            self._add_c(op)
        elif op.kind == "random":
            self._add_random(op)
        elif op.kind == "fn":
            self._add_function(op)
        else:  # pragma: no cover - JitTracer converts no module whole
            raise RuntimeError(f"torch.jit.trace: unexpected module record {op.name}")

    def _add_c(self, op):
        name = op.what
        old = None
        if op.inplace_of is not None:  # x.add_(y): `a` is x before the write
            old = self.env.get(id(op.inplace_of))
            if old is not None:
                self.env[id(op.inputs[0])] = old
        if name == "getitem":
            return self._add_getitem(op)
        if name in _C_BY_NAME:
            kind, build = _C_BY_NAME[name]
        elif _FAMILY.get(name) in _C_BUILDERS:
            kind, build = "aten::" + _ATEN_NAMES.get(name, name), _C_BUILDERS[_FAMILY[name]]
        else:
            raise RuntimeError(f"torch.jit.trace: pygpu's tracer cannot replay the op "
                               f"'{name}' (no row for it in pygpu/jit/_tracer.py)")
        if op.inplace_of is not None:
            kind += "_"
        shown, run = build(op)
        self.add_node(kind, shown, run, op.outputs)

    def _add_getitem(self, op):
        x, key = op.inputs[0], op.args
        parts = key if isinstance(key, tuple) else (key,)
        basic = all(isinstance(k, (int, slice)) and not isinstance(k, bool) for k in parts)
        if not basic:
            flat = [k for k in parts if isinstance(k, Tensor)]

            def run(src, *ts):
                it = iter(ts)
                k = tuple(next(it) if isinstance(p, Tensor) else p for p in parts)
                return src[k if isinstance(key, tuple) else k[0]]
            return self.add_node("aten::index", [x] + flat, run, op.outputs)
        cur, dim, n_parts = x, 0, len(parts)
        for i, k in enumerate(parts):
            last = i == n_parts - 1
            outs = op.outputs if last else [None]
            if isinstance(k, int):
                node = self.add_node("aten::select", [cur, dim, k],
                                     lambda s, d, j: s.select(d, j), outs)
            else:
                start, stop, step = k.start, k.stop, 1 if k.step is None else k.step
                node = self.add_node(
                    "aten::slice", [cur, dim, start, stop, step],
                    lambda s, d, a, b, c: s[(slice(None),) * d + (slice(a, b, c),)], outs)
                dim += 1
            if not last:
                cur = _Placeholder(node.output())

    def _add_function(self, op):
        cls = op.what
        if cls.__name__ == "_Linear" and op.args[3]:
            return self._add_fused_linear(op)
        if cls.__name__ == "_Pool2d" and op.args[1] != "ADAPTIVE_MAX_FWD":  # 2 outputs in torch
            kind, shown, run = _pool2d(op)
            return self.add_node(kind, shown, run, op.outputs)
        if cls.__name__ in _FUNCTION_BUILDERS:
            kind, build = _FUNCTION_BUILDERS[cls.__name__]
            shown, run = build(op)
            return self.add_node(kind, shown, run, op.outputs)
        kind, n_shown = _FUNCTION_KINDS.get(cls.__name__, ("pygpu::" + cls.__name__, None))
        args, kwargs = list(op.args), dict(op.kwargs or {})
        slots = [i for i, a in enumerate(args)
                 if isinstance(a, Tensor) or (n_shown is None and _is_constant_like(a))
                 or (isinstance(a, (list, tuple)) and any(isinstance(v, Tensor) for v in a))]
        if n_shown is not None:
            slots = [i for i in slots if i < n_shown] + \
                [i for i in slots if i >= n_shown and isinstance(args[i], Tensor)]
        kw_slots = [k for k, v in kwargs.items() if isinstance(v, Tensor) or
                    (n_shown is None and _is_constant_like(v))]

        def run(*values):
            a, kw = list(args), dict(kwargs)
            for i, v in zip(slots, values):
                a[i] = v
            for k, v in zip(kw_slots, values[len(slots):]):
                kw[k] = v
            return cls.apply(*a, **kw)
        shown = [args[i] for i in slots] + [kwargs[k] for k in kw_slots]
        self.add_node(kind, shown, run, op.outputs)

    def _add_random(self, op):
        """A draw from the device's generator (rand, randn, dropout's mask): replay draws
        anew, as PyTorch's aten::rand does (a generator= draw replays from the device's)."""
        kind, (shape, dtype, device) = op.what, op.args
        draw = self._random_call
        name = {"UNIFORM": "aten::rand", "NORMAL": "aten::randn"}.get(kind, "pygpu::" + kind)
        self.add_node(name, [list(shape), str(dtype).rsplit(".", 1)[-1], None, str(device),
                             False], lambda *_: draw(kind, shape, dtype, device), op.outputs)

    def _add_fused_linear(self, op):
        """Sequential's Linear fused with its activation (pygpu/_ops/_train.py) is PyTorch's
        two nodes: aten::linear, then the activation (aten::relu, ...)."""
        from .._ops import _train
        cls, (x, w, b, act) = op.what, op.args
        lin = self.add_node("aten::linear", [x, w, b],
                            lambda x, w, b: cls.apply(x, w, b, 0), [None])
        name = {c: n for n, c, _ in _train.ACT_TABLE}[act]
        if name == "leaky_relu":
            return self.add_node("aten::leaky_relu", [_Placeholder(lin.output()), 0.01],
                                 lambda y, _slope: _train._activation(y, act), op.outputs)
        self.add_node("aten::" + name, [_Placeholder(lin.output())],
                      lambda y: _train._activation(y, act), op.outputs)

    # -- outputs ------------------------------------------------------------------------
    def set_output(self, out):
        self.graph.registerOutput(self._output_value(out))

    def _output_value(self, out):
        if isinstance(out, Tensor):
            return self.value(out)
        if isinstance(out, (tuple, list)):
            items = [self._output_value(o) for o in out]
            kind = "prim::TupleConstruct" if isinstance(out, tuple) else "prim::ListConstruct"
            n = self.graph.appendNode(self.graph.create(kind, items))
            n.output().setType(_ir_types.tuple_of([v.type() for v in items])
                               if isinstance(out, tuple) else _ir_types.list_of("Tensor"))
            n._run = (lambda *vs: tuple(vs)) if isinstance(out, tuple) else \
                (lambda *vs: list(vs))
            return n.output()
        if isinstance(out, dict):
            keys = list(out)
            items = []
            for k in keys:
                items += [self.graph.insertConstant(k), self._output_value(out[k])]
            n = self.graph.appendNode(self.graph.create("prim::DictConstruct", items))
            n.output().setType(_ir_types.simple("Dict(str, Tensor)"))
            n._run = lambda *vs: dict(zip(vs[::2], vs[1::2]))
            return n.output()
        raise RuntimeError(f"Only tensors, lists, tuples of tensors, or dictionary of tensors "
                           f"can be output from traced functions, got {type(out).__name__}")


class _Placeholder:
    """Stands for an intermediate result of a decomposed index (x[0, 1:] is a select then a
    slice): its id keys the env while the graph is built."""

    def __init__(self, value):
        self.value = value


def run_graph(graph, inputs):
    """Replay a traced graph on new inputs (the self module first, for a module's)."""
    env = {}
    for v, x in zip(graph.inputs(), inputs):
        env[v] = x
    for n in graph.nodes():
        if n._run is None:
            raise RuntimeError(f"this graph cannot run: pygpu does not know how to run its "
                               f"{n.kind()} node (a graph read from IR text runs only its "
                               "prim::Constant and structural nodes)")
        result = n._run(*[env[v] for v in n._inputs])
        if n.outputsSize() == 1:
            env[n._outputs[0]] = result
        else:
            for v, r in zip(n._outputs, _onnx_trace.flat_tensors(result)):
                env[v] = r
    outs = [env[v] for v in graph.outputs()]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _traceable(t):
    """The input as the trace sees it: a float tensor a fresh leaf that requires grad (so
    autograd's hook sees every op that depends on it); any other tensor as it is."""
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return t.detach().requires_grad_(True)
    return t


def record(fn, args, kwargs, module, arg_names):
    """Run fn(*args, **kwargs) once under the tracer; the Graph of what ran and the output."""
    from ..autograd.grad_mode import enable_grad
    param_paths = {}
    if module is not None:
        for name, p in module.named_parameters():
            param_paths[id(p)] = name
        for name, b in module.named_buffers():
            param_paths[id(b)] = name
    builder = GraphBuilder(module, param_paths)
    traced_args, traced_kwargs = [], {}
    for name, a in zip(arg_names, args):
        if not isinstance(a, Tensor):
            raise TypeError(f"torch.jit.trace: pygpu traces tensor inputs, got "
                            f"{type(a).__name__} for '{name}'")
        t = _traceable(a)
        builder.add_input(name, t, a.requires_grad)
        traced_args.append(t)
    for name, a in (kwargs or {}).items():
        t = _traceable(a)
        builder.add_input(name, t, a.requires_grad)
        traced_kwargs[name] = t
    _TRACING[0] += 1
    try:
        with enable_grad(), JitTracer(module) as tracer:
            tracer.mark(traced_args + list(traced_kwargs.values()))
            if module is not None:
                tracer.mark([p for p in module.parameters() if p.requires_grad])
            out = fn(*traced_args, **traced_kwargs)
    finally:
        _TRACING[0] -= 1
    for op, scope in zip(tracer.ops, tracer.ops.scopes):
        builder.scope = scope
        builder.add_op(op)
    builder.set_output(out)
    return _ir.eliminate_dead_code(builder.graph, keep=("prim::GetAttr",)), out
