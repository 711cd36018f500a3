"""torch.onnx.export for pygpu models: a real ONNX file, for ONNX Runtime and TensorRT.

    pygpu.onnx.export(model, (x,), "model.onnx", input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})

How it traces: the model runs once on the example inputs (in eval mode, under no_grad)
with a forward hook on every leaf module; each leaf call becomes ONNX nodes through the
converter of its module type (_converters.py: a table, one entry per layer, so a layer
another issue adds registers its converter there). The data flow between leaves must run
through modules: a tensor op written in a forward() between two layers (x.view(...),
F.relu(x)) is not seen by the hooks, and export refuses such a model, naming where the
unknown tensor came in, rather than writing a wrong graph.

The `onnx` package is an optional dependency (pip install "pygpu[onnx]"); ONNX Runtime
is only needed to run the file (the tests check outputs against it)."""
import io

from .. import _C
from ..autograd.grad_mode import no_grad
from ._converters import CONVERTERS, register

__all__ = ["export", "is_in_onnx_export", "register", "CONVERTERS"]

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


class _Graph:
    """The ONNX graph being built: tensor identities -> value names, nodes, weights."""

    def __init__(self, onnx, opset):
        self.onnx, self.opset = onnx, opset
        self.nodes, self.initializers, self.names, self._count = [], [], {}, 0

    def fresh(self, hint):
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op, inputs, outputs, **attrs):
        self.nodes.append(self.onnx.helper.make_node(op, list(inputs), list(outputs),
                                                     name=self.fresh(op), **attrs))

    def weight(self, tensor, hint):
        import numpy as np
        name = self.fresh(hint)
        arr = np.ascontiguousarray(tensor.detach().cpu().to("float32").numpy()
                                   if tensor.dtype.is_floating_point else
                                   tensor.detach().cpu().numpy())
        self.initializers.append(self.onnx.numpy_helper.from_array(arr, name))
        return name

    def const(self, values, hint, dtype="int64"):
        import numpy as np
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(values, dtype),
                                                                   name))
        return name


def _flat(x):
    if isinstance(x, _C.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in _flat(item)]
    raise TypeError(f"onnx.export: inputs and outputs must be tensors or tuples of them, got "
                    f"{type(x).__name__}")


def _is_leaf(module):
    return type(module) in CONVERTERS or not any(True for _ in module.children())


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
    inputs = _flat(args)
    g = _Graph(onnx, opset_version)
    in_names = list(input_names or [])
    in_names += [f"input.{i}" if i else "input" for i in range(len(in_names), len(inputs))]
    for t, name in zip(inputs, in_names):
        g.names[id(t)] = name
    calls, handles = [], []

    def hook(module, mod_in, mod_out):
        calls.append((module, mod_in, mod_out))

    leaves = [m for m in model.modules() if _is_leaf(m)]
    skip = set()
    for m in leaves:  # a leaf inside a converted leaf (a layer's own submodules) is not traced
        if m in skip:
            continue
        for sub in m.modules():
            if sub is not m:
                skip.add(sub)
    for m in leaves:
        if m not in skip:
            handles.append(m.register_forward_hook(hook))
    was_training = model.training
    model.train(bool(training) if training is not None else False)  # PyTorch exports in eval
    _exporting[0] = True
    try:
        with no_grad():
            out = model(*args)
    finally:
        _exporting[0] = False
        for h in handles:
            h.remove()
        model.train(was_training)
    for module, mod_in, mod_out in calls:
        srcs = []
        for t in _flat(mod_in):
            if id(t) not in g.names:
                raise NotImplementedError(
                    f"onnx.export: {type(module).__name__} gets a tensor of shape "
                    f"{tuple(t.shape)} that no module the exporter traced produced: the "
                    f"forward() computes it with a tensor op between layers, which pygpu's "
                    f"exporter does not see; write that step as a module (nn.Flatten, "
                    f"nn.ReLU, ...)")
            srcs.append(g.names[id(t)])
        conv = CONVERTERS.get(type(module))
        if conv is None:
            raise NotImplementedError(f"onnx.export: no converter for {type(module).__name__} "
                                      f"(the layers it converts: "
                                      f"{', '.join(sorted(c.__name__ for c in CONVERTERS))}); "
                                      f"add one with pygpu.onnx.register")
        outs = _flat(mod_out)
        dst = [g.fresh(type(module).__name__.lower()) for _ in outs]
        conv(g, module, srcs, dst, mod_in)
        for t, name in zip(outs, dst):
            g.names[id(t)] = name
    outputs = _flat(out)
    out_names = list(output_names or [])
    out_names += [f"output.{i}" if i else "output" for i in range(len(out_names), len(outputs))]
    for t, name in zip(outputs, out_names):
        if id(t) not in g.names:
            raise NotImplementedError("onnx.export: the model's output was computed by a tensor "
                                      "op outside the traced modules")
        g.node("Identity", [g.names[id(t)]], [name])
    dynamic_axes = dynamic_axes or {}

    def value_info(name, t):
        dims = [dynamic_axes.get(name, {}).get(i, n) for i, n in enumerate(t.shape)]
        if isinstance(dynamic_axes.get(name), (list, tuple)):
            dims = [f"{name}_dim{i}" if i in dynamic_axes[name] else n
                    for i, n in enumerate(t.shape)]
        elem = (onnx.TensorProto.INT64 if t.dtype.name == "int64" else
                onnx.TensorProto.BOOL if t.dtype.name == "bool" else onnx.TensorProto.FLOAT)
        return onnx.helper.make_tensor_value_info(name, elem, dims)

    graph = onnx.helper.make_graph(g.nodes, type(model).__name__,
                                   [value_info(n, t) for t, n in zip(inputs, in_names)],
                                   [value_info(n, t) for t, n in zip(outputs, out_names)],
                                   g.initializers)
    proto = onnx.helper.make_model(graph, producer_name="pygpu",
                                   opset_imports=[onnx.helper.make_opsetid("", opset_version)])
    proto.ir_version = min(proto.ir_version, 9)  # readable by ONNX Runtime releases in use
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
        print(onnx.helper.printable_graph(graph))
    return None
