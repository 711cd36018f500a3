"""Recording one forward call on pygpu's own dispatch, for the ONNX exporter.

Three places see every op a forward runs, whatever spelling the model's code used (a tensor
method, a functional op, an operator, `from torch import cat`):
- the C ops: each differentiable op binding calls autograd's recording hook, which asks
  pygpu/autograd/rules.make for the op's backward rule by name, with the op's operands and
  Python arguments (csrc/bindings/autograd.c); in-place ops go through the same function
  from pygpu/autograd/inplace.end;
- the Python ops: autograd.Function.apply (cat, the fused linear layer, softmax,
  layer_norm, the views, pooling, attention, ...);
- the modules: Module.__call__, for the layers that have a module converter (an LSTM is one
  ONNX node, not an unrolled loop).
- the ops autograd does not record (comparisons, logical ops: no gradient): while a trace
  runs, the C bindings report them to the hook "trace" (csrc/bindings/autograd.c,
  _C._set_tracing), so a mask computed inside the forward is an op of the graph.
The trace runs with grad mode on and the example inputs requiring grad, so every op that
depends on an input or a parameter reaches the hook; the outermost op with a converter is
recorded and the ops it runs inside are not. A tensor an op uses that no recorded op made
and that is not an input or a parameter is a constant of the graph (export checks, by a
second run on other inputs, that no such constant depended on the inputs)."""
from .. import _C
from ..autograd import function as _function
from ..autograd import rules as _rules
from ..nn import module as _module

Tensor = _C.Tensor


class Op:
    """One recorded op: kind ("c", "fn" or "module"), what it is (a rule name, a Function
    class, a module), its tensors and arguments, and its outputs (flattened)."""
    __slots__ = ("kind", "what", "inputs", "args", "kwargs", "outputs", "inplace_of")

    def __init__(self, kind, what, inputs, args, kwargs, outputs, inplace_of=None):
        self.kind, self.what, self.inputs = kind, what, inputs
        self.args, self.kwargs, self.outputs = args, kwargs, outputs
        self.inplace_of = inplace_of

    @property
    def name(self):
        if self.kind == "c":
            return self.what
        if self.kind == "fn":
            return self.what.__name__
        return type(self.what).__name__


def flat_tensors(x):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in flat_tensors(item)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in flat_tensors(v)]
    return []


_ACTIVE = []  # the tracer of this forward, if one runs (export is not reentrant)


# what C reports when a tensor is read as a Python value (bool(t), int(t), float(t), t.item())
CONVERSIONS = ("bool", "float", "integer", "number")


def trace_hook(name, out, a, b, args=None, kwargs=None):
    """The hook C calls for an op autograd does not record, while _C._set_tracing is on, and
    for a tensor read as a Python value (name in CONVERSIONS: out is the tensor). At level
    2 (the JIT's tracer) C also reports a differentiable op whose operands do not require
    grad, with its arguments (an op on an integer input)."""
    if _ACTIVE:
        if name in CONVERSIONS:
            _ACTIVE[-1].on_conversion(name, out)
        else:
            _ACTIVE[-1].record_untracked(name, out, a, b, args, kwargs)


class Tracer:
    """`with Tracer(module_types) as tr:` run the forward; tr.ops is what ran."""

    def __init__(self, module_types):
        self.module_types = tuple(module_types)
        self.ops, self.keep = [], []
        self.traced = set()  # ids of tensors some recorded op made (or the inputs)
        self._inner = 0

    def convertible(self, module):
        """Whether a module converter applies: the module's class or a base with a converter
        whose forward it has not overridden (a Linear subclass with its own forward is
        traced op by op)."""
        for cls in type(module).__mro__:
            if cls in self.module_types:
                return type(module).forward is cls.forward
        return False

    def mark(self, tensors):
        for t in tensors:
            self.traced.add(id(t))
            self.keep.append(t)

    def _involved(self, tensors):
        return any(id(t) in self.traced for t in tensors)

    def on_conversion(self, what, tensor):
        """A tensor read as a Python bool or number while tracing: the value is frozen into
        the trace (the ONNX export's second run finds a path that depended on it; the JIT's
        tracer warns)."""

    def record_untracked(self, name, out, a, b, args=None, kwargs=None):
        ins = [t for t in (a, b) if isinstance(t, Tensor)]
        if not self._inner and isinstance(out, Tensor) and self._involved(ins):
            self.ops.append(Op("c", name, (a, b), args, kwargs, [out]))
            self.keep.extend((a, b, args, kwargs))
            self.mark([out])

    level = 1  # what C reports to the trace hook (_C._set_tracing)

    def __enter__(self):
        tracer = self
        _ACTIVE.append(self)
        self._was_tracing = _C._set_tracing(self.level)
        _function.TRACING[0] = True
        make, apply, call = _rules.make, _function.Function.apply, _module.Module.__call__
        self._saved = (make, _function.Function.__dict__["apply"], call)

        def traced_make(name, out, a, b, args, kwargs):
            if not tracer._inner and isinstance(out, Tensor):
                ins = [t for t in (a, b) if isinstance(t, Tensor)]
                inplace_of = None
                if id(out) in tracer.traced and a is not None and a is not out:
                    inplace_of = out  # inplace.end: `a` is out's value before the write
                if tracer._involved(ins) or inplace_of is not None:
                    tracer.ops.append(Op("c", name, (a, b), args, kwargs, [out], inplace_of))
                    tracer.keep.extend((a, b, args, kwargs))
                    tracer.mark([out])
            return make(name, out, a, b, args, kwargs)

        def traced_apply(cls, *args, **kwargs):
            if tracer._inner:
                return apply.__func__(cls, *args, **kwargs)
            tracer._inner += 1
            try:
                out = apply.__func__(cls, *args, **kwargs)
            finally:
                tracer._inner -= 1
            ins = flat_tensors(list(args) + list(kwargs.values()))
            if tracer._involved(ins):
                tracer.ops.append(Op("fn", cls, ins, args, kwargs, flat_tensors(out)))
                tracer.keep.extend((args, kwargs))
                tracer.mark(flat_tensors(out))
            return out

        def traced_call(module, *args, **kwargs):
            # a call with keyword arguments (Sequential's fused Linear(x, activation=...))
            # is more than the module converter knows: its ops are recorded instead
            if tracer._inner or kwargs or not tracer.convertible(module) or \
                    not tracer._involved(flat_tensors(list(args) + list(kwargs.values()))):
                return call(module, *args, **kwargs)
            tracer._inner += 1
            try:
                out = call(module, *args, **kwargs)
            finally:
                tracer._inner -= 1
            tracer.ops.append(Op("module", module, flat_tensors(list(args) + list(kwargs.values())),
                                 args, kwargs, flat_tensors(out)))
            tracer.keep.extend((args, kwargs, out))
            tracer.mark(flat_tensors(out))
            return out

        _rules.make = traced_make
        _function.Function.apply = classmethod(traced_apply)
        _module.Module.__call__ = traced_call
        return self

    def __exit__(self, *exc):
        _C._set_tracing(self._was_tracing)
        _ACTIVE.pop()
        _function.TRACING[0] = bool(_ACTIVE)
        make, apply, call = self._saved
        _rules.make = make
        _function.Function.apply = apply
        _module.Module.__call__ = call
        return False
