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
setup_context(ctx, inputs, output) works too. One output tensor per Function:
a forward returning a tuple is refused (pygpu's nodes have one output).
Fused ops (linear, cross-entropy) and cat are Functions; the elementwise ops
are recorded by the C bindings instead."""
from .. import _C
from .engine import Node

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
        """PyTorch's switch for passing zeros instead of None to backward for unused
        outputs. A pygpu Function has one output, whose gradient backward always gets as a
        tensor, so both settings behave the same."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        """forward wrote these inputs in place. Accepted for PyTorch's programs; pygpu does
        not rebase their graph, so such an input must not itself need a gradient."""
        self.dirty = tensors


def once_differentiable(fn):
    """PyTorch's decorator for a backward that is not itself differentiable. pygpu runs
    every backward under no_grad (no higher-order gradients), so it returns fn as it is."""
    return fn


def _has_setup_context(cls):
    return getattr(cls, "setup_context", None) is not getattr(Function, "setup_context")


# [True] while pygpu.onnx traces a forward (pygpu/onnx/_trace.py): Python ops that skip
# Function.apply when nothing requires grad (the views) apply it anyway, so the tracer sees
# them on tensors that need no gradient too (a mask's unsqueeze)
TRACING = [False]


class Function:
    view = False  # True: the output is a view of the first argument (versions.py)

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
                raise NotImplementedError(
                    f"{cls.__name__}.forward returned {len(out)} outputs: a pygpu Function has "
                    f"one output tensor")
            out = out[0]
        if enabled and id(out) not in ctx._non_differentiable:
            ctx.needs_input_grad = tuple(type(a) is Tensor and a.requires_grad for a in args)
            if any(ctx.needs_input_grad):
                # a saved output would make out -> node -> out: keep an alias instead
                ctx.saved = tuple(s.detach() if s is out else s for s in ctx.saved)
                inputs = tuple(a if type(a) is Tensor else None for a in args)
                out._set_grad_fn(Node(cls.__name__, inputs, _backward_of(cls), ctx,
                                      _saved(ctx, args, cls.view), cls.view))
        return out


_BACKWARDS = {}  # cls -> its backward wrapped by _backward_of (made once per class)


def _backward_of(cls):
    """cls.backward, its single Tensor return taken as the one-element tuple it means."""
    run = _BACKWARDS.get(cls)
    if run is None or run.backward is not cls.backward:
        backward = cls.backward

        def run(ctx, g):
            r = backward(ctx, g)
            return (r,) if type(r) is Tensor or r is None else r
        run.backward = backward
        _BACKWARDS[cls] = run
    return run


FunctionCtx = Context  # torch.autograd.function.FunctionCtx


def _saved(ctx, args, view):
    """What the version check stamps (versions.py): the tensors of ctx.save(...) and the
    tensors kept as ctx attributes (an index, a mask); for a view, the viewed tensor."""
    saved = [s for s in ctx.saved if type(s) is Tensor]
    saved += [v for k, v in ctx.__dict__.items() if type(v) is Tensor]
    if view and args and type(args[0]) is Tensor:
        saved.append(args[0])
    return saved
