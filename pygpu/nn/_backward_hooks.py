"""A module's full backward hooks (register_full_backward_hook and _pre_hook), as PyTorch's
torch.utils.hooks.BackwardHook runs them: the module's tensor inputs that require grad and
its tensor outputs each pass through one identity autograd Function (several outputs: one
node, pygpu/autograd/_multi_output.py). The output side's backward sees the gradients of the
outputs (grad_output): pre-hooks may replace them. The input side's backward sees the
gradients of the inputs (grad_input): hooks(module, grad_input, grad_output) may replace
them. When no input requires grad, the hooks run on the output side with grad_input all
None, as PyTorch's do."""
import warnings

from .. import _C
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled

Tensor = _C.Tensor


class _HookIdentity(Function):
    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        views = tuple(t.view_as(t) for t in tensors)
        ctx.mark_non_differentiable(*(v for v, t in zip(views, tensors) if not t.requires_grad))
        return views if len(views) > 1 else views[0]

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.callback(grads))


def _through(callback, values, where):
    """values with the entries at `where` replaced by the identity Function's outputs."""
    out = _HookIdentity.apply(callback, *(values[i] for i in where))
    out = out if isinstance(out, tuple) else (out,)
    values = list(values)
    for j, i in enumerate(where):
        values[i] = out[j]
    return values


def _checked(new, old, what):
    if not isinstance(new, tuple):
        new = tuple(new) if isinstance(new, list) else (new,)
    if len(new) != len(old):
        raise RuntimeError(f"Backward hook returned an invalid number of {what}, got "
                           f"{len(new)}, but expected {len(old)}")
    return new


class ModuleBackwardHook:
    """One call's backward hooks (a new one per forward, as PyTorch's BackwardHook)."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs, self.input_where = 0, []

    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        self.input_where = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not any(args[i].requires_grad for i in self.input_where) or not is_grad_enabled():
            self.input_where = []  # PyTorch's hooks then fire from the output side
            return args
        return tuple(_through(self._on_inputs, args, self.input_where))

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        values = (result,) if single else result
        if not isinstance(values, tuple):
            return result
        self.n_outputs = len(values)
        where = [i for i, t in enumerate(values) if isinstance(t, Tensor)]
        if not any(values[i].requires_grad for i in where) or not is_grad_enabled():
            return result
        self.output_where = where
        values = _through(self._on_outputs, values, where)
        return values[0] if single else tuple(values)

    def _on_outputs(self, grads):
        full = [None] * self.n_outputs
        for i, g in zip(self.output_where, grads):
            full[i] = g
        full = tuple(full)
        for hook in self.pre_hooks:
            new = hook(self.module, full)
            if new is not None:
                full = _checked(new, full, "grad_output")
        self.grad_outputs = full
        if not self.input_where:
            if self.hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients. "
                              "See https://docs.pytorch.org/docs/main/generated/torch.nn."
                              "Module.html#torch.nn.Module.register_full_backward_hook for more "
                              "details.", stacklevel=5)
            none = (None,) * self.n_inputs
            for hook in self.hooks:
                if hook(self.module, none, self.grad_outputs) is not None:
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
        return tuple(full[i] for i in self.output_where)

    def _on_inputs(self, grads):
        full = [None] * self.n_inputs
        for i, g in zip(self.input_where, grads):
            full[i] = g
        full = tuple(full)
        for hook in self.hooks:
            new = hook(self.module, full, self.grad_outputs)
            if new is not None:
                full = _checked(new, full, "grad_input")
        return tuple(full[i] for i in self.input_where)
