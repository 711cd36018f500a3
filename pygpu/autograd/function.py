"""Function: a differentiable op written in Python, forward beside backward.

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x * 2.0

    y = Square.apply(x)

forward runs under no_grad (its inner ops record nothing); when grad mode is
on and a Tensor argument requires grad, the output gets one node whose
backward is `backward`. It returns one gradient per positional argument
(None for non-Tensor ones), or a single Tensor when there is one argument, as
PyTorch's. The context has PyTorch's names (save_for_backward, saved_tensors,
needs_input_grad, mark_non_differentiable, set_materialize_grads, mark_dirty)
and pygpu's older short ones (save, saved); PyTorch 2's forward without ctx plus
setup_context(ctx, inputs, output) works too. A forward returning several values returns
them as a tuple, each differentiable tensor with its own grad_fn onto one shared backward
(_multi_output.py).
Fused ops (linear, cross-entropy) and cat are Functions; the elementwise ops
are recorded by the C bindings instead.

Under create_graph=True, backward runs under grad mode and its ops are recorded (so a
backward written in tensor ops is differentiable again, as PyTorch's); ctx.saved then
holds the saved tensors with their history. A backward marked @once_differentiable, and
the fused ops' (which have a `composite` instead), are handled by higher_order.py."""
from .. import _C
from . import _multi_output as _multi
from .engine import Node, hold
from .versions import Output

Tensor = _C.Tensor


class Context:
    __slots__ = ("saved", "needs_input_grad", "materialize_grads", "_non_differentiable",
                 "__dict__")

    def __init__(self):
        self.saved = ()
        self.needs_input_grad = ()
        self.materialize_grads = True
        self._non_differentiable = ()

    def save(self, *tensors):
        self.saved = tensors

    def save_for_backward(self, *tensors):
        """PyTorch's name for save: the tensors backward reads, checked against later
        in-place writes (the version counter) when backward runs."""
        for t in tensors:
            if t is not None and type(t) is not Tensor:
                raise TypeError(f"save_for_backward can only save variables, but argument is "
                                f"of type {type(t).__name__}")
        self.saved = tensors

    @property
    def saved_tensors(self):
        return tuple(self.saved)

    def mark_non_differentiable(self, *outputs):
        """The outputs that get no grad_fn (an index, a mask): they do not require grad."""
        self._non_differentiable = tuple(id(t) for t in outputs)

    def set_materialize_grads(self, value):
        """PyTorch's switch for passing zeros instead of None to backward for the outputs
        that received no gradient (a Function with several outputs; a single output always
        has its gradient when backward runs)."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        """forward wrote these inputs in place. Accepted for PyTorch's programs; pygpu does
        not rebase their graph, so such an input must not itself need a gradient."""
        self.dirty = tensors


def once_differentiable(fn, _when="grads"):
    """PyTorch's decorator for a backward that is not itself differentiable (it calls ops
    autograd does not record, such as one fused C kernel). It runs under no_grad; under
    create_graph=True, when the incoming gradient requires grad (PyTorch's rule), the
    gradients it returns carry a node that raises PyTorch's error when something
    differentiates them again (higher_order.py), instead of being silently constant."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        from .grad_mode import no_grad
        with no_grad():
            return fn(ctx, *grads)
    wrapper.once_differentiable = _when
    return wrapper


def fused_backward(fn):
    """once_differentiable for pygpu's own fused ops with no composite (the RNN's cells):
    the error node is attached whenever anything the backward depends on requires grad (the
    saved inputs too, not only the incoming gradient), so no second derivative through
    them is ever silently zero."""
    return once_differentiable(fn, "inputs")


def _has_setup_context(cls):
    return getattr(cls, "setup_context", None) is not getattr(Function, "setup_context")


# [True] while pygpu.onnx traces a forward (pygpu/onnx/_trace.py): Python ops that skip
# Function.apply when nothing requires grad (the views) apply it anyway, so the tracer sees
# them on tensors that need no gradient too (a mask's unsqueeze)
TRACING = [False]


class Function:
    """A differentiable op written in Python (see the module's docstring).

    Class attributes pygpu's own ops set:
    - view: the output is a view of the first argument (its _base: views.py);
    - composite: a function of forward's arguments computing the same output from
      differentiable tensor ops. Under create_graph=True the node's gradients are those of
      the composite, recorded (higher_order.py), so an op whose backward is one fused C
      kernel (convolution, linear, cross-entropy, ...) still has higher-order gradients."""
    view = False
    composite = None

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: https://pytorch.org/docs/stable/"
                           "autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = Context()
        enabled = _C._set_grad_enabled(False)  # forward records nothing inside
        try:
            if _has_setup_context(cls):  # PyTorch 2's split: forward(*args), then the ctx
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                ctx.needs_input_grad = tuple(type(a) is Tensor and a.requires_grad and enabled
                                             for a in args)
                out = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_grad_enabled(enabled)
        if isinstance(out, (tuple, list)):
            if len(out) != 1:
                return _apply_multi(cls, ctx, args, kwargs, out, enabled)
            out = out[0]
        if enabled and id(out) not in ctx._non_differentiable:
            ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
            if any(ctx.needs_input_grad):
                _record(cls, ctx, args, kwargs, out)
        return out


def _held_operands(args):
    """({id(operand): what the node holds of it}, the node's inputs, its edges): each tensor
    argument held as engine.hold keeps it, None for the others."""
    held, inputs, fns = {}, [], []
    for a in args:
        if isinstance(a, Tensor):
            h, fn = hold(a)
            held[id(a)] = h
            inputs.append(h)
            fns.append(fn)
        else:
            inputs.append(None)
            fns.append(None)
    return held, inputs, fns


def _record(cls, ctx, args, kwargs, out):
    """Give `out` its node: operands held as engine.hold keeps them, the saved tensors
    mapped onto the same aliases (a saved output onto a detached alias of it: out -> node
    -> out would be a cycle), the tensors to stamp for the version check."""
    held, inputs, fns = _held_operands(args)
    out_ref = None

    def keep(s):
        nonlocal out_ref
        if s is out:
            if out_ref is None:
                out_ref = out.detach()
            return out_ref
        if type(s) is Tensor:
            h = held.get(id(s))
            if h is None:  # not an operand: its values only (a constant to a double backward)
                h = s.detach() if s.grad_fn is not None or s._base is not None else s
            return h
        return s
    ctx.saved = tuple(keep(s) for s in ctx.saved)
    for k, v in list(ctx.__dict__.items()):
        if type(v) is Tensor:
            setattr(ctx, k, keep(v))
    saved = [s for s in ctx.saved if type(s) is Tensor]
    saved += [v for v in ctx.__dict__.values() if type(v) is Tensor]
    if out_ref is not None:
        saved = [Output(s) if s is out_ref else s for s in saved]
    node = Node(cls.__name__, tuple(inputs), tuple(fns), _backward_of(cls), ctx, saved)
    node.out_ref = out_ref
    node.cls = cls
    if cls.composite is not None:
        node.args = tuple(held.get(id(a), a) if isinstance(a, Tensor) else a for a in args)
        node.kwargs = kwargs
    if cls.view and args and isinstance(args[0], Tensor):
        _C._note_view(out, args[0])
        base = out._base
        if base is not None:
            node.view = True
            node.base_fn = base.grad_fn
    out._set_grad_fn(node)


def _apply_multi(cls, ctx, args, kwargs, outs, enabled):
    """Function.apply's end for a forward that returned several values (_multi_output.py):
    the differentiable tensor outputs get selector nodes onto one bundle node."""
    kind = type(outs)
    outs = list(outs)
    for i, o in enumerate(outs):  # an input returned as it is: a new tensor over its memory
        if isinstance(o, Tensor) and any(o is a for a in args):
            outs[i] = o.view_as(o) if o.dim() else o.reshape(())
    diff = [isinstance(o, Tensor) and id(o) not in ctx._non_differentiable
            and (o.dtype.is_floating_point or o.dtype.is_complex) for o in outs]
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    if enabled and any(ctx.needs_input_grad) and any(diff):
        held, inputs, fns = _held_operands(args)
        aliases = {id(o): o.detach() for o, d in zip(outs, diff) if d}

        def keep(x):
            if type(x) is Tensor:
                if id(x) in aliases:
                    return aliases[id(x)]
                h = held.get(id(x))
                if h is None:
                    h = x.detach() if x.grad_fn is not None or x._base is not None else x
                return h
            return x
        ctx.saved = tuple(keep(x) for x in ctx.saved)
        for k, v in list(ctx.__dict__.items()):
            if type(v) is Tensor:
                setattr(ctx, k, keep(v))
        out_ids = {id(a) for a in aliases.values()}
        saved = [Output(x) if id(x) in out_ids else x
                 for x in list(ctx.saved) + list(ctx.__dict__.values()) if type(x) is Tensor]
        metas = [(tuple(o.shape), o.dtype, o.device) if isinstance(o, Tensor) else None
                 for o in outs]  # zeros for any tensor output that gets no gradient
        bundle = Node(cls.__name__, tuple(inputs), tuple(fns),
                      _multi.bundle_backward(_backward_of(cls), metas), ctx, saved)
        bundle.cls = cls
        for i, (o, d) in enumerate(zip(outs, diff)):
            if d:
                sel = Node(cls.__name__, (_multi.PLACEHOLDER,), (bundle,),
                           _multi.select_backward, i)
                o._set_grad_fn(sel)
    return kind(outs) if kind in (tuple, list) else tuple(outs)


_BACKWARDS = {}  # cls -> its backward wrapped by _backward_of (made once per class)


def _backward_of(cls):
    """cls.backward, its single Tensor return taken as the one-element tuple it means."""
    run = _BACKWARDS.get(cls)
    if run is None or run.backward is not cls.backward:
        backward = cls.backward

        def run(ctx, *g):  # one gradient per output (several: _multi_output's bundle)
            r = backward(ctx, *g)
            return (r,) if type(r) is Tensor or r is None else r
        run.backward = backward
        _BACKWARDS[cls] = run
    return run


FunctionCtx = Context  # torch.autograd.function.FunctionCtx


