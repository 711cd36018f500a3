"""What torch.jit.trace returns: ScriptFunction (a traced function), ScriptModule (a traced
module, a Module whose forward replays its graph), ScriptMethod (a traced module's forward),
CompilationUnit (the functions traced so far, by name), and trace / trace_module / freeze.

A traced module shares its parameters, buffers and submodules with the module traced (as
PyTorch's does): optimizing the traced module trains the original, and gradients flow
through the replay because every node reruns a pygpu op under autograd. The graph is
PyTorch's inlined graph (prim::GetAttr chains down to the parameters, the submodules'
ops in line); .graph and .inlined_graph are the same graph."""
import inspect
import warnings

from .. import _C
from ..nn.module import Module
from . import _archive, _ir, _tracer
from ._tracer import deprecated

Tensor = _C.Tensor


def _code(graph, name):
    """A Python-like rendering of the graph (PyTorch's .code, simplified): one line per op."""
    params = [v for v in graph.inputs()]
    head = ", ".join(("self" if v.debugName().startswith("self") else
                      f"{v.debugName()}: Tensor") for v in params)
    lines = [f"def {name}({head}):"]
    names = {v: ("self" if v.debugName().startswith("self") else v.debugName())
             for v in params}

    def ref(v):
        return names.get(v) or (v.debugName() if v.hasDebugName() else f"_{v.unique()}")
    for n in graph.nodes():
        outs = [o for o in n.outputs()]
        if n.kind() == "prim::Constant":
            names[outs[0]] = repr(outs[0].toIValue()) if not isinstance(
                outs[0].toIValue(), Tensor) else f"CONSTANTS.c{outs[0].unique()}"
            continue
        if n.kind() == "prim::GetAttr":
            rhs = f"{ref(n.inputsAt(0))}.{n.s('name')}"
        elif n.kind() in ("prim::ListConstruct", "prim::TupleConstruct"):
            br = "[]" if n.kind() == "prim::ListConstruct" else "()"
            rhs = br[0] + ", ".join(ref(v) for v in n.inputs()) + \
                ("," if br == "()" and n.inputsSize() == 1 else "") + br[1]
        else:
            ns, op = n.kind().split("::")
            rhs = f"{'torch' if ns == 'aten' else ns}.{op}(" + \
                ", ".join(ref(v) for v in n.inputs()) + ")"
        lhs = ", ".join(ref(o) for o in outs)
        lines.append(f"  {lhs} = {rhs}")
    lines.append("  return " + ", ".join(ref(v) for v in graph.outputs()))
    return "\n".join(lines) + "\n"


class CompilationUnit:
    """torch.jit.CompilationUnit: the functions it holds, by name. pygpu has no TorchScript
    compiler: define() (TorchScript source) raises; traced functions are added to the
    default unit, and create_function makes one from a traced graph."""

    def __init__(self, lang=None, _frames_up=0):
        self._functions = {}
        if lang is not None:
            self.define(lang)

    def define(self, src, rcb=None, _frames_up=0):
        raise RuntimeError("CompilationUnit.define compiles TorchScript source: pygpu has no "
                           "TorchScript compiler (torch.jit.script is not built); trace the "
                           "function with pygpu.jit.trace instead")

    def find_function(self, name):
        return self._functions.get(name)

    def get_functions(self):
        return list(self._functions.values())

    def create_function(self, name, graph, shouldMangle=False):
        fn = ScriptFunction(graph, name, self)
        self._functions[name] = fn
        return fn

    def drop_all_functions(self):
        self._functions.clear()

    def __getattr__(self, name):
        fns = self.__dict__.get("_functions", {})
        if name in fns:
            return fns[name]
        raise AttributeError(f"'CompilationUnit' has no function '{name}'")


_PYTHON_CU = CompilationUnit()


class _GraphAccessors:
    """What a traced function and a traced method both read from their graph (`self.graph`,
    `self.name`): there is no separate inlined or specialized graph."""

    @property
    def inlined_graph(self):
        return self.graph

    @property
    def code(self):
        return _code(self.graph, self.name)

    def graph_for(self, *args, **kwargs):
        return self.graph


class ScriptFunction(_GraphAccessors):
    """A traced function (torch.jit.ScriptFunction): calling it replays its graph."""

    def __init__(self, graph, name, cu=None):
        self.graph, self.name, self._cu = graph, name, cu
        self.qualified_name = f"__torch__.{name}"

    def __call__(self, *args, **kwargs):
        return _tracer.run_graph(self.graph, list(args) + list(kwargs.values()))

    @property
    def schema(self):
        args = ", ".join(f"Tensor {v.debugName()}" for v in self.graph.inputs())
        return f"{self.name}({args}) -> Tensor"

    def get_debug_state(self):
        return self.graph

    def save(self, f, _extra_files=None):
        _archive.write(self, f, _extra_files)

    def __repr__(self):
        return f"<pygpu.jit.ScriptFunction {self.name}>"


class ScriptMethod(_GraphAccessors):
    """A traced module's method (torch.ScriptMethod): bound to its module, replays its graph
    with the module as `self`."""

    def __init__(self, owner, graph, name="forward"):
        self._owner, self.graph, self.name = owner, graph, name

    def __call__(self, *args, **kwargs):
        return _tracer.run_graph(self.graph, [self._owner] + list(args) + list(kwargs.values()))

    def owner(self):
        return self._owner

    @property
    def schema(self):
        args = ", ".join(f"Tensor {v.debugName()}" for v in list(self.graph.inputs())[1:])
        return f"{self.name}(__torch__.{type(self._owner).__name__} self, {args}) -> Tensor"

    def __repr__(self):
        return f"<pygpu.ScriptMethod {self.name}>"


class ScriptModule(Module):
    """A traced module (torch.jit.ScriptModule): its submodules, parameters and buffers are
    the traced module's; forward replays the graph recorded from its forward."""

    def __init__(self):
        super().__init__()

    def _adopt(self, module, methods):
        """Share module's state and install the traced methods (name -> Graph)."""
        self._parameters.update(module._parameters)
        self._buffers.update(module._buffers)
        self._modules.update(module._modules)
        self.training = module.training
        object.__setattr__(self, "original_name", type(module).__name__)
        object.__setattr__(self, "_methods", {})
        for name, graph in methods.items():
            self._methods[name] = ScriptMethod(self, graph, name)
            object.__setattr__(self, name, self._methods[name])

    @property
    def graph(self):
        return self._methods["forward"].graph

    @property
    def inlined_graph(self):
        return self.graph

    @property
    def code(self):
        return self._methods["forward"].code

    def graph_for(self, *args, **kwargs):
        return self.graph

    def save(self, f, **kwargs):
        _archive.write(self, f, kwargs.get("_extra_files"))

    def _get_method(self, name):
        return self._methods[name]

    def _has_method(self, name):
        return name in self._methods

    def __repr__(self):
        return f"RecursiveScriptModule(original_name={self.original_name})"


class TopLevelTracedModule(ScriptModule):
    """The class of what trace(module) returns (PyTorch's name)."""


def _arg_names(fn, n):
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params]
    except (TypeError, ValueError):
        names = []
    names += [f"input.{i}" for i in range(len(names), n)]
    return names[:n]


def _as_tuple(example_inputs):
    if isinstance(example_inputs, Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, list):
        return tuple(example_inputs)
    return tuple(example_inputs)


def _check(traced, original, inputs, kwargs, tolerance):
    """check_trace: the traced graph and the Python code agree on the example inputs (and
    on check_inputs); a disagreement warns as PyTorch's does."""
    from ..autograd.grad_mode import no_grad
    with no_grad():
        got = traced(*inputs, **kwargs)
        want = original(*inputs, **kwargs)
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(g, Tensor) and isinstance(w, Tensor):
            if g.shape != w.shape or not bool(
                    ((g.double() - w.double()).abs() <= tolerance * (1 + w.double().abs()))
                    .all().item()):
                warnings.warn(f"Output nr {i + 1}. of the traced function does not match the "
                              "corresponding output of the Python function. Detailed error:\n"
                              "Tensor-likes are not close!", _tracer.TracerWarning,
                              stacklevel=4)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """torch.jit.trace: run func (a function or a Module) once on example_inputs and return
    a ScriptFunction / ScriptModule that replays the ops that ran."""
    deprecated("trace")
    if isinstance(func, ScriptModule) or isinstance(func, ScriptFunction):
        return func
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be provided")
    owner = getattr(func, "__self__", None)
    if isinstance(owner, Module) and getattr(func, "__name__", None) == "forward":
        func = owner  # trace(m.forward, x) traces the module, as PyTorch's does
    if isinstance(func, Module):
        return trace_module(func, {"forward": example_inputs}, None, check_trace,
                            [{"forward": c} for c in check_inputs] if check_inputs else None,
                            check_tolerance, strict, example_inputs_is_kwarg=(
                                example_kwarg_inputs is not None),
                            _kwargs=example_kwarg_inputs)
    inputs = _as_tuple(example_inputs) if example_inputs is not None else ()
    kwargs = dict(example_kwarg_inputs or {})
    graph, _ = _tracer.record(func, inputs, kwargs, None, _arg_names(func, len(inputs)))
    name = getattr(func, "__name__", "fn")
    name = "_lambda" if name == "<lambda>" else name
    fn = (_compilation_unit or _PYTHON_CU).create_function(name, graph)
    if check_trace:
        for chk in ([inputs] + [_as_tuple(c) for c in (check_inputs or [])]):
            if chk is not inputs:  # PyTorch retraces on each check input: same graph?
                again, _ = _tracer.record(func, chk, kwargs, None, _arg_names(func, len(chk)))
                diff = _tracer.graph_diff(graph, again)
                if diff is not None:
                    raise _tracer.TracingCheckError(diff, None)
            _check(fn, func, chk, kwargs, check_tolerance)
    return fn


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
                 _compilation_unit=None, example_inputs_is_kwarg=False, _store_inputs=True,
                 _kwargs=None):
    """torch.jit.trace_module: trace each named method of mod on its example inputs."""
    deprecated("trace_method")  # sic: PyTorch's message names trace_method
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    graphs = {}
    for name, example in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg and isinstance(example, dict):
            args, kwargs = (), example
        else:
            args, kwargs = (_as_tuple(example) if example is not None else ()), \
                dict(_kwargs or {})
        fn = mod.__call__ if name == "forward" else method
        names = _arg_names(method, len(args))
        graphs[name], _ = _tracer.record(fn, args, kwargs, mod, names)
    traced = TopLevelTracedModule()
    traced._adopt(mod, graphs)
    if check_trace:
        for name, example in inputs.items():
            if not (example_inputs_is_kwarg and isinstance(example, dict)):
                checks = [example] + [c[name] for c in (check_inputs or []) if name in c]
                for chk in checks[1:]:  # PyTorch retraces on each check input: same graph?
                    again, _ = _tracer.record(mod.__call__ if name == "forward" else
                                              getattr(mod, name), _as_tuple(chk), {}, mod,
                                              _arg_names(getattr(mod, name), len(_as_tuple(chk))))
                    diff = _tracer.graph_diff(graphs[name], again)
                    if diff is not None:
                        raise _tracer.TracingCheckError(diff, None)
                for chk in checks:
                    _check(getattr(traced, name), getattr(mod, name), _as_tuple(chk),
                           dict(_kwargs or {}), check_tolerance)
    return traced


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """torch.jit.freeze: a traced module in eval mode whose parameters and buffers are
    constants of the graph (prim::GetAttr of a tensor becomes prim::Constant)."""
    warnings.warn("`torch.jit.freeze` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning, stacklevel=2)
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    graphs = {}
    for name, method in mod._methods.items():
        graphs[name] = _frozen(method.graph, mod, set(preserved_attrs or ()))
    frozen = TopLevelTracedModule()
    frozen._adopt(mod, graphs)
    frozen.eval()
    return frozen


def _frozen(graph, module, preserved):
    """A copy of graph whose tensor attributes are read once, as constants (and the
    prim::GetAttr nodes nothing reads any more dropped)."""
    from ..autograd.grad_mode import no_grad
    objs = {next(graph.inputs()): module}

    def replace(n, out, vmap):
        if n.kind() != "prim::GetAttr" or n.inputsAt(0) not in objs:
            return None
        obj = getattr(objs[n.inputsAt(0)], n.s("name"))
        if isinstance(obj, Tensor) and n.s("name") not in preserved:
            with no_grad():
                return out.insertConstant(obj.detach().clone())
        objs[n.output()] = obj
        return None
    return _ir.eliminate_dead_code(_ir.copy_graph(graph, replace))
