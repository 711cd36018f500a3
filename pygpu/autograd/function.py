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
from .grad_mode import is_grad_enabled, no_grad

Tensor = _C.Tensor


class Context:
    __slots__ = ("saved", "__dict__")

    def __init__(self):
        self.saved = ()

    def save(self, *tensors):
        self.saved = tensors


class Function:
    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = Context()
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in args):
            inputs = tuple(t if isinstance(t, Tensor) else None for t in args)
            out._set_grad_fn(Node(cls.__name__, inputs, cls.backward, ctx))
        return out
