"""nn.Parameter: a leaf tensor that requires grad and that a Module registers.

pygpu.Tensor is a C type that cannot be subclassed, so Parameter is a factory
that flags the tensor (`_is_param`); `isinstance(t, nn.Parameter)` checks the
flag, so code written for PyTorch's Parameter class reads the same."""
from .. import _C


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and obj._is_param


class Parameter(metaclass=_ParameterMeta):
    """Parameter(data, requires_grad=True) -> a Tensor sharing data's memory,
    a leaf flagged as a parameter."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .._tensor.create import empty
            data = empty(0)
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Parameter: data must be a pygpu.Tensor, got {type(data).__name__}")
        p = data.detach()
        p._is_param = True
        p.requires_grad_(bool(requires_grad))
        return p
