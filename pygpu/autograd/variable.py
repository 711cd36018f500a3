"""torch.autograd.Variable, the pre-0.4 wrapper that old programs still open with.

Since PyTorch 0.4 a Variable is a Tensor: Variable(t) returns t itself (with
requires_grad set when asked), and isinstance(x, Variable) holds for every tensor.
pygpu does the same, so `Variable(torch.randn(3), requires_grad=True)` runs as written."""
from .. import _C

Tensor = _C.Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad:
            data.requires_grad_(True)
        return data
