"""torch.onnx.export for pygpu models: a tracing exporter writing a real ONNX file.

    pygpu.onnx.export(model, (x,), "model.onnx", input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})

How it traces: the model runs once on the example inputs (in eval mode) while _trace.py
records what ran on pygpu's own dispatch: every C op (by its autograd rule's name), every
Python op (autograd.Function: cat, the fused linear layer, softmax, layer_norm, the views,
pooling, attention) and every module that has a module converter (_converters.py, and
_rnn_converters.py's LSTM/GRU/RNN), whatever spelling the forward used: tensor methods,
functional ops, operators such as a residual `x + y` or `out += residual`, indexing,
`torch.cat`, split, LSTM and GRU, MultiheadAttention and the Transformer layers (through
their ops), convolution nets. Each recorded op becomes ONNX nodes through the converter of
its name (_op_converters.py); the graph is written with onnx.helper. Python control flow is
fixed at the example's path, as with torch.onnx's tracer.

What a trace cannot see it refuses rather than writing a wrong graph: export runs the model
a second time on other inputs (other values, and other sizes along dynamic_axes) and
compares the two graphs; a constant or a size that followed the inputs (a mask computed
from integer inputs, a shape baked from an input's size) makes them differ, and export
says at which op.

The `onnx` package is needed (pip install "pygpu[onnx]"); ONNX Runtime only to run the file
(the tests check its outputs against pygpu's)."""
import io

import numpy as np

from .. import _C
from ..autograd.grad_mode import enable_grad
from ._converters import CONVERTERS, register
from . import _rnn_converters  # noqa: F401 - registers LSTM, GRU and RNN
from ._graph import Graph, elem_type
from ._op_converters import OPS
from ._trace import Tracer, flat_tensors

__all__ = ["export", "is_in_onnx_export", "register", "CONVERTERS", "OPS"]

_exporting = [False]


def is_in_onnx_export():
    return _exporting[0]


def _onnx():
    try:
        import onnx
        return onnx
    except ImportError:
        raise ImportError("pygpu.onnx.export needs the onnx package: pip install onnx "
                          "(or pip install 'pygpu[onnx]')") from None


def _replace(x, mapping):
    if isinstance(x, _C.Tensor):
        return mapping.get(id(x), x)
    if isinstance(x, tuple):
        return tuple(_replace(v, mapping) for v in x)
    if isinstance(x, list):
        return [_replace(v, mapping) for v in x]
    return x


def _traceable(t):
    """The input as the trace sees it: a float tensor gets a fresh leaf that requires grad,
    so every op that depends on it reaches autograd's hook."""
    if t.dtype.is_floating_point:
        return t.detach().requires_grad_(True)
    return t.detach()


class _Run:
    """One traced forward: the recorded ops, the inputs as traced, the output."""

    def __init__(self, model, args, training):
        inputs = flat_tensors(args)
        self.inputs = [_traceable(t) for t in inputs]
        args = _replace(args, {id(a): b for a, b in zip(inputs, self.inputs)})
        was_training = model.training
        model.train(bool(training) if training is not None else False)
        _exporting[0] = True
        try:
            with enable_grad(), Tracer(tuple(CONVERTERS)) as tracer:
                tracer.mark(self.inputs)
                tracer.mark(_params(model))
                out = model(*args)
        finally:
            _exporting[0] = False
            model.train(was_training)
        self.ops, self.keep, self.out = tracer.ops, tracer.keep, out
        self.outputs = flat_tensors(out)

    def tensors(self):
        """Every tensor whose size may follow the inputs, in an order two runs share."""
        yield from self.inputs
        for op in self.ops:
            yield from op.outputs
        yield from self.outputs


def _dynamic_dims(run, other):
    """id(tensor of run) -> the axes whose size differs in `other` (the same forward on
    inputs grown along the dynamic axes)."""
    if [o.name for o in run.ops] != [o.name for o in other.ops]:
        raise NotImplementedError("onnx.export: the forward runs other ops when the dynamic "
                                  "axes change size (control flow on a size), which one "
                                  "traced graph cannot hold")
    dyn = {}
    for a, b in zip(run.tensors(), other.tensors()):
        if a.ndim != b.ndim:
            raise NotImplementedError("onnx.export: a tensor's number of dimensions follows "
                                      "the dynamic axes")
        if tuple(a.shape) != tuple(b.shape):
            dyn[id(a)] = tuple(b.shape)
    return dyn


def _build(onnx, model, run, in_names, out_names, dynamic_axes, opset, dyn):
    params = {}
    for name, t in list(model.named_parameters()) + list(_named_buffers(model)):
        params.setdefault(id(t), name)
    g = Graph(onnx, opset, params, dyn)
    for t, name in zip(run.inputs, in_names):
        g.names[id(t)] = name
        g.seen.append(t)
    origin = []  # (first node index, op name): where each op's nodes start
    for op in run.ops:
        origin.append((len(g.nodes), op.name))
        if op.inplace_of is not None:  # `a` is the written tensor's value before the write
            g.names[id(op.inputs[0])] = g.value(op.inplace_of)
        dst = [g.fresh(op.name.strip("_").lower()) for _ in op.outputs]
        if op.kind == "module":
            conv = next(CONVERTERS[c] for c in type(op.what).__mro__ if c in CONVERTERS)
            conv(g, op.what, [g.value(t) for t in op.inputs], dst, op.args)
        else:
            conv = OPS.get(op.name)
            if conv is None:
                raise NotImplementedError(
                    f"onnx.export: the forward runs {op.name!r}, which the exporter does not "
                    f"convert yet (it converts {', '.join(sorted(OPS))} and the modules "
                    f"{', '.join(sorted(c.__name__ for c in CONVERTERS))}); add one with "
                    "pygpu.onnx.OPS or pygpu.onnx.register")
            conv(g, op, dst)
        for t, name in zip(op.outputs, dst):
            g.names[id(t)] = name
            g.seen.append(t)
    for t, name in zip(run.outputs, out_names):
        g.node("Identity", [g.value(t)], [name])

    def value_info(name, t):
        axes = dynamic_axes.get(name, {})
        if isinstance(axes, (list, tuple)):
            axes = {i: f"{name}_dim{i}" for i in axes}
        # an output's axes that follow the inputs' are symbolic even when not named
        dims = [axes.get(i, f"{name}_dim{i}" if i in g.dynamic(t) else n)
                for i, n in enumerate(t.shape)]
        return onnx.helper.make_tensor_value_info(name, elem_type(onnx, t.dtype), dims)

    graph = onnx.helper.make_graph(g.nodes, type(model).__name__,
                                   [value_info(n, t) for t, n in zip(run.inputs, in_names)],
                                   [value_info(n, t) for t, n in zip(run.outputs, out_names)],
                                   g.initializers)
    proto = onnx.helper.make_model(graph, producer_name="pygpu",
                                   opset_imports=[onnx.helper.make_opsetid("", opset)])
    proto.ir_version = min(proto.ir_version, 9)  # readable by ONNX Runtime releases in use
    return proto, g, origin


def _named_buffers(model):
    fn = getattr(model, "named_buffers", None)
    return fn() if fn is not None else ()


def _params(model):
    seen = []
    for _, t in list(model.named_parameters()) + list(_named_buffers(model)):
        seen.append(t)
    return seen


def _other_inputs(args, dynamic_axes, in_names, grow=0, values=False):
    """The example inputs with `grow` more along each dynamic axis (cycled from the
    example's own), and with values=True other values: floats moved by a random amount,
    integers and booleans cycled."""
    flat = flat_tensors(args)
    rng = np.random.default_rng(1234)
    mapping = {}
    for t, name in zip(flat, in_names):
        arr = t.detach().cpu().float().numpy() if t.dtype.name == "bfloat16" else \
            t.detach().cpu().numpy()
        axes = dynamic_axes.get(name, {})
        axes = list(axes) if isinstance(axes, (list, tuple)) else list(axes.keys())
        for a in axes if grow else ():
            n = arr.shape[a]
            arr = np.take(arr, np.arange(n + grow) % max(n, 1), axis=a)
        if values and arr.dtype.kind == "f":
            arr = arr + rng.standard_normal(arr.shape).astype(arr.dtype) * 0.5
        elif values and arr.size > 1:
            arr = np.roll(arr.reshape(-1), 1).reshape(arr.shape)
        new = _C.from_numpy(np.ascontiguousarray(arr)).to(t.dtype)
        mapping[id(t)] = new if str(t.device) == "cpu" else new.to(t.device)
    return _replace(args, mapping)


def _grown_run(model, args, dynamic_axes, in_names, training):
    """The forward on inputs grown along the dynamic axes: by one, or, for a model that
    needs sizes of some multiple (patches), by the size itself."""
    errors = []
    sizes = [t.shape for t in flat_tensors(args)]
    for grow in (1, None):
        try:
            if grow is None:  # double each dynamic axis
                grow = max((s[a] for s, n in zip(sizes, in_names)
                            for a in (dynamic_axes.get(n) or {})), default=1)
            return _Run(model, _other_inputs(args, dynamic_axes, in_names, grow), training)
        except NotImplementedError:
            raise
        except Exception as e:  # the model refuses that size
            errors.append(f"{type(e).__name__}: {e}")
    raise NotImplementedError(f"onnx.export: the model does not run with other sizes along "
                              f"dynamic_axes, so which sizes follow them cannot be found "
                              f"({'; '.join(errors)})")


def _compare(onnx, first, second, origin):
    a, b = first[0].graph, second[0].graph
    consts_a, consts_b = dict(first[1].constants), dict(second[1].constants)
    for i, (na, nb) in enumerate(zip(a.node, b.node)):
        if na.SerializeToString() != nb.SerializeToString():
            return _where(origin, i, f"its {na.op_type} node differs between the runs")
        for name in na.input:
            if name in consts_a and (name not in consts_b or
                                     not np.array_equal(consts_a[name], consts_b[name])):
                return _where(origin, i, f"it uses a constant of shape "
                                         f"{tuple(consts_a[name].shape)} that changed with the "
                                         "inputs")
    if len(a.node) != len(b.node):
        return _where(origin, min(len(a.node), len(b.node)), "the runs ran different ops")
    return None


def _where(origin, node_index, what):
    name = "?"
    for start, op_name in origin:
        if start <= node_index:
            name = op_name
    return f"at op {name!r}, {what}"


def export(model, args, f, *, input_names=None, output_names=None, dynamic_axes=None,
           opset_version=17, export_params=True, do_constant_folding=True, verbose=False,
           training=None, dynamo=False, **kwargs):
    """Write `model` run on `args` (a tensor or a tuple of them) as an ONNX model to `f`
    (a path or a binary file object). PyTorch's keywords; the graph is traced from one run
    of the model, so Python control flow is fixed at the example's path."""
    onnx = _onnx()
    if not export_params:
        raise NotImplementedError("onnx.export: export_params=False is not supported (the "
                                  "weights are written as initializers)")
    args = (args,) if isinstance(args, _C.Tensor) else tuple(args)
    n_in = len(flat_tensors(args))
    in_names = list(input_names or [])
    in_names += [f"input.{i}" if i else "input" for i in range(len(in_names), n_in)]
    dynamic_axes = dict(dynamic_axes or {})
    out_names = list(output_names or [])
    run = _Run(model, args, training)
    out_names += [f"output.{i}" if i else "output" for i in range(len(out_names),
                                                                   len(run.outputs))]
    same = _Run(model, _other_inputs(args, dynamic_axes, in_names, values=True), training)
    dyn, dyn_same, checks = {}, {}, []
    if dynamic_axes:
        grown = _grown_run(model, args, dynamic_axes, in_names, training)
        dyn = _dynamic_dims(run, grown)
        dyn_grown = _dynamic_dims(grown, run)
        dyn_same = _dynamic_dims(same, grown)
        checks.append(("sizes along dynamic_axes", grown, dyn_grown))
    elif [o.name for o in run.ops] != [o.name for o in same.ops]:
        raise NotImplementedError("onnx.export: the forward runs other ops for other input "
                                  "values (control flow on values), which one traced graph "
                                  "cannot hold")
    checks.append(("input values", same, dyn_same))
    first = _build(onnx, model, run, in_names, out_names, dynamic_axes, opset_version, dyn)
    for why, other, other_dyn in checks:
        second = _build(onnx, model, other, in_names, out_names, dynamic_axes, opset_version,
                        other_dyn)
        problem = _compare(onnx, first, second, first[2])
        if problem:
            raise NotImplementedError(
                f"onnx.export: the traced graph depends on the example's {why} in a way "
                f"pygpu's tracer cannot express, {problem}: a constant or a shape computed "
                "from the inputs outside the traced ops (random numbers drawn in the "
                "forward, a tensor created with the input's size), so the file would be "
                "wrong for "
                "other inputs. Pass such tensors as inputs, or export without that "
                "dynamic axis.")
    proto = first[0]
    onnx.checker.check_model(proto)
    data = proto.SerializeToString()
    if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__"):
        with open(f, "wb") as fh:
            fh.write(data)
    elif isinstance(f, io.IOBase) or hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"onnx.export: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    return None
