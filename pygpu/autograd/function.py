"""Function: a differentiable op written in Python, forward beside backward.

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save(x)
            return x * x
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved
            return (g * x * 2.0,)

    y = Square.apply(x)

forward runs under no_grad (its inner ops record nothing); when grad mode is
on and a Tensor argument requires grad, the output gets one node whose
backward is `backward`. It returns one gradient per positional argument
(None for non-Tensor ones). Fused ops (linear, cross-entropy) and cat are
Functions; the elementwise ops are recorded by the C bindings instead."""
from .. import _C
from .engine import Node

Tensor = _C.Tensor


class Context:
    __slots__ = ("saved", "__dict__")

    def __init__(self):
        self.saved = ()

    def save(self, *tensors):
        self.saved = tensors


class Function:
    view = False  # True: the output is a view of the first argument (versions.py)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = Context()
        enabled = _C._set_grad_enabled(False)  # forward records nothing inside
        try:
            out = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_grad_enabled(enabled)
        if enabled:
            for t in args:
                if type(t) is Tensor and t.requires_grad:
                    # a saved output would make out -> node -> out: keep an alias instead
                    ctx.saved = tuple(s.detach() if s is out else s for s in ctx.saved)
                    inputs = tuple(a if type(a) is Tensor else None for a in args)
                    out._set_grad_fn(Node(cls.__name__, inputs, cls.backward, ctx,
                                          _saved(ctx, args, cls.view), cls.view))
                    break
        return out


def _saved(ctx, args, view):
    """What the version check stamps (versions.py): the tensors of ctx.save(...) and the
    tensors kept as ctx attributes (an index, a mask); for a view, the viewed tensor."""
    saved = [s for s in ctx.saved if type(s) is Tensor]
    saved += [v for k, v in ctx.__dict__.items() if type(v) is Tensor]
    if view and args and type(args[0]) is Tensor:
        saved.append(args[0])
    return saved
