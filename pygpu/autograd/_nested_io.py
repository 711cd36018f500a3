"""torch.autograd.NestedIOFunction: the legacy Function form whose forward_extended and
backward_extended take and return nested tuples and lists of tensors (flattened for the
engine, unflattened for the user's methods), kept by PyTorch "only for backward compatibility
reasons", ported as torch/autograd/function.py has it.

As in PyTorch 2.13, neither way of calling it runs: an instance call reaches Function's
_do_forward, which no longer exists (AttributeError), and Function.apply passes the node's
context as `self`, which has no _nested_input (AttributeError). What does run are its
helpers on an instance: save_for_backward keeps the nested structure beside the flat
tensors (to_save, _to_save_nested), mark_dirty and mark_non_differentiable collect the
tensors of nested arguments, and the nesting helpers below."""
from .. import _C
from .function import Function

_Tensor = _C.Tensor


def _iter_filter(condition, condition_msg):
    def _iter(obj):
        if hasattr(obj, "_jit_unwrap"):
            obj = obj._jit_unwrap()
        if condition(obj):
            yield obj
        elif obj is None:
            return
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                yield from _iter(o)
        elif isinstance(obj, dict):
            for o in obj.values():
                yield from _iter(o)
        else:
            raise ValueError("Auto nesting doesn't know how to process an input object of type "
                             f"{_typename(obj)}. Accepted types: {condition_msg}, or "
                             "lists/tuples of them")
    return _iter


def _typename(obj):
    return obj.type() if isinstance(obj, _Tensor) else \
        f"{type(obj).__module__}.{type(obj).__qualname__}".replace("builtins.", "")


def _map_tensor_data(obj):
    if isinstance(obj, _Tensor):
        return obj.data
    if obj is None:
        return None
    if isinstance(obj, (list, tuple)):
        mapped = (_map_tensor_data(x) for x in obj)
        return type(obj)(*mapped) if hasattr(obj, "_fields") else type(obj)(mapped)
    if isinstance(obj, dict):
        return {k: _map_tensor_data(v) for k, v in obj.items()}
    raise ValueError("Auto nesting doesn't know how to process an input object of type "
                     f"{_typename(obj)}. Accepted types: Tensors, or lists/tuples of them")


def _unflatten(flat, proto):
    """flat (a tuple) put back into the nested structure of proto."""
    def helper(flat, proto):
        if hasattr(proto, "_jit_wrap"):
            return proto._jit_wrap(flat)
        if not isinstance(proto, (list, tuple)):
            return flat[0], flat[1:]
        res = []
        for e in proto:
            if e is None:
                res.append(e)
            else:
                r, flat = helper(flat, e)
                res.append(r)
        return type(proto)(res), flat
    return helper(flat, proto)[0]


_iter_tensors = _iter_filter(lambda x: isinstance(x, _Tensor), "Tensors")
_iter_None_tensors = _iter_filter(lambda o: o is None or isinstance(o, _Tensor),
                                  "Tensors or None")


class NestedIOFunction(Function):
    """This class is here only for backward compatibility reasons. Use Function instead of
    this for any new use case."""

    def _do_forward(self, *input):
        self._nested_input = input
        flat_input = tuple(_iter_tensors(input))
        flat_output = super()._do_forward(*flat_input)
        return _unflatten(flat_output, self._nested_output)

    def _do_backward(self, gradients, retain_variables):
        self.retain_variables = retain_variables
        result = super()._do_backward(gradients, retain_variables)
        if not retain_variables:
            del self._nested_output
            del self._to_save_nested
        return result

    def backward(self, *gradients):
        nested_gradients = _unflatten(gradients, self._nested_output)
        result = self.backward_extended(*nested_gradients)
        return tuple(_iter_None_tensors(result))

    __call__ = _do_forward

    def forward(self, *args):
        nested_tensors = _map_tensor_data(self._nested_input)
        result = self.forward_extended(*nested_tensors)
        del self._nested_input
        self._nested_output = result
        return tuple(_iter_tensors(result))

    def save_for_backward(self, *args):
        self.to_save = tuple(_iter_tensors(args))
        self._to_save_nested = args

    @property
    def saved_tensors(self):
        flat_tensors = super().saved_tensors
        return _unflatten(flat_tensors, self._to_save_nested)

    def mark_dirty(self, *args, **kwargs):
        self.dirty_tensors = tuple(_iter_tensors((args, kwargs)))

    def mark_non_differentiable(self, *args, **kwargs):
        self.non_differentiable = tuple(_iter_tensors((args, kwargs)))

    def forward_extended(self, *input):
        raise NotImplementedError

    def backward_extended(self, *grad_output):
        raise NotImplementedError
