"""nn.Module: the base of every layer and model, with PyTorch's interface.

Attributes that are Parameters, Modules or registered buffers are tracked in
three ordered dicts (as in torch/nn/modules/module.py), which gives
parameters(), named_parameters(), children(), modules(), state_dict() and
load_state_dict(). Module.to(device) moves the module IN PLACE and returns
it: each parameter keeps its identity (its memory is swapped through
`.data`), so optimizers built before the move still hold the right tensors;
Tensor.to returns a new tensor, as in PyTorch."""
import sys
from collections import OrderedDict

from .. import _C, _creation
from ..autograd import no_grad
from .parameter import Parameter

Tensor = _C.Tensor


class _IncompatibleKeys:
    """What load_state_dict(strict=False) returns: missing and unexpected keys."""
    __slots__ = ("missing_keys", "unexpected_keys")

    def __init__(self, missing, unexpected):
        self.missing_keys = missing
        self.unexpected_keys = unexpected

    def __iter__(self):
        return iter((self.missing_keys, self.unexpected_keys))

    def __repr__(self):
        return (f"<IncompatibleKeys missing_keys={self.missing_keys} "
                f"unexpected_keys={self.unexpected_keys}>")


class _RemovableHandle:
    """What register_forward_pre_hook returns: remove() takes the hook out again."""
    _next_id = 0

    def __init__(self, hooks, hook):
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1
        self._hooks = hooks
        hooks[self.id] = hook

    def remove(self):
        self._hooks.pop(self.id, None)


class Module:
    """Base class: subclass it, create layers in __init__, write forward()."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "training", True)

    # ---- attribute registration -------------------------------------------------------

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign attributes before Module.__init__() is called "
                                 "(call super().__init__() first in your __init__)")
        params, mods, bufs = self._parameters, self._modules, self._buffers
        was_buffer = name in bufs
        for d in (params, mods, bufs):
            d.pop(name, None)
        if isinstance(value, Parameter):
            params[name] = value
        elif isinstance(value, Module):
            mods[name] = value
        elif was_buffer and (value is None or isinstance(value, Tensor)):
            bufs[name] = value  # re-assigning a registered buffer keeps it one
        else:
            object.__setattr__(self, name, value)
            return
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_modules", "_buffers"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for d in (self._parameters, self._modules, self._buffers):
            if name in d:
                del d[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be an nn.Parameter, got "
                            f"{type(param).__name__}")
        self._parameters[name] = param

    def register_buffer(self, name, tensor):
        """A tensor that is state (saved, moved by .to) but not a parameter."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None")
        self._buffers[name] = tensor

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be an nn.Module, got "
                            f"{type(module).__name__}")
        self._modules[name] = module

    # ---- calling ----------------------------------------------------------------------

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def register_forward_pre_hook(self, hook):
        """hook(module, args) runs before every forward(); a non-None result replaces the
        positional args (a tuple, or one value), as in PyTorch. Returns a handle whose
        remove() unregisters the hook. (pygpu.nn.utils.prune recomputes `weight` here.)"""
        if not callable(hook):
            raise TypeError(f"register_forward_pre_hook: hook must be callable, got "
                            f"{type(hook).__name__}")
        return _RemovableHandle(self._forward_pre_hooks, hook)

    def __call__(self, *args, **kwargs):
        hooks = self.__dict__.get("_forward_pre_hooks")
        if hooks:
            for hook in tuple(hooks.values()):
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        return self.forward(*args, **kwargs)

    # ---- traversal --------------------------------------------------------------------

    def named_modules(self, prefix=""):
        seen = set()
        stack = [(prefix, self)]
        while stack:
            name, m = stack.pop(0)
            if id(m) in seen:
                continue
            seen.add(id(m))
            yield name, m
            for cname, child in m._modules.items():
                if child is not None:
                    stack.append((f"{name}.{cname}" if name else cname, child))

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_parameters(self, prefix="", recurse=True):
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mname, m in mods:
            for pname, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mname}.{pname}" if mname else pname), p

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix=""):
        for mname, m in self.named_modules(prefix):
            for bname, b in m._buffers.items():
                if b is not None:
                    yield (f"{mname}.{bname}" if mname else bname), b

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    # ---- modes and gradients ----------------------------------------------------------

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        _zero_grads(self.parameters(), set_to_none)

    # ---- devices ----------------------------------------------------------------------

    def to(self, *args, **kwargs):
        """Move (and/or convert) every parameter and buffer IN PLACE; returns self.
        Accepts what Tensor.to accepts: a device, a dtype, or both."""
        with no_grad():
            for p in self.parameters():
                new = p.to(*args, **kwargs)
                if new is not p:
                    p.data = new
                    if p.grad is not None:
                        p.grad = p.grad.to(*args, **kwargs)
            for m in self.modules():
                for name, b in list(m._buffers.items()):
                    if b is not None:
                        m._buffers[name] = b.to(*args, **kwargs)
        return self

    def cpu(self):
        return self.to("cpu")

    def double(self):
        from .._dtype import float64
        return self.to(float64)

    def float(self):
        from .._dtype import float32
        return self.to(float32)

    def half(self):
        """Parameters and buffers to float16, in place (optimizers keep float32 masters)."""
        from .._dtype import float16
        return self.to(float16)

    def bfloat16(self):
        """Parameters and buffers to bfloat16, in place (optimizers keep float32 masters)."""
        from .._dtype import bfloat16
        return self.to(bfloat16)

    # ---- state --------------------------------------------------------------------------

    def state_dict(self, prefix="", keep_vars=False):
        """An ordered dict name -> tensor (detached, sharing memory) of parameters and buffers."""
        out = OrderedDict()
        for name, p in self.named_parameters(prefix.rstrip(".")):
            out[name] = p if keep_vars else p.detach()
        for name, b in self.named_buffers(prefix.rstrip(".")):
            out[name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copy values from state_dict into this module's parameters and buffers, in place
        (each value moves to the device of the tensor it replaces). Keys may carry the
        "module." prefix DataParallel writes. strict=True raises on missing or
        unexpected keys, naming them; strict=False returns them."""
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a dict of tensors, got "
                            f"{type(state_dict).__name__}")
        own = self.state_dict(keep_vars=True)
        incoming = OrderedDict(state_dict.items())
        if incoming and not any(k in own for k in incoming) and \
                all(k.startswith("module.") for k in incoming):
            incoming = OrderedDict((k[len("module."):], v) for k, v in incoming.items())
        missing = [k for k in own if k not in incoming]
        unexpected = [k for k in incoming if k not in own]
        errors = []
        for k, target in own.items():
            if k not in incoming:
                continue
            v = incoming[k]
            if getattr(v, "is_quantized", False) and not getattr(target, "is_quantized", False):
                raise ValueError(f"load_state_dict: {k!r} holds int8 weights (a quantized model's "
                                 f"state_dict) but {type(self).__name__} expects float ones; "
                                 "quantize the model first (pygpu.quantization.quantize_dynamic, "
                                 "or prepare + convert), then load")
            if getattr(target, "_qstate", False):
                continue  # an int8 layer's state (pygpu/quantization/_qtensor.py): copy_ checks it
            if not isinstance(v, Tensor):
                errors.append(f"{k}: expected a Tensor, got {type(v).__name__}")
            elif v.shape != target.shape:
                errors.append(f"{k}: shape {v.shape} in the checkpoint, {target.shape} in the "
                              "model")
        if strict and (missing or unexpected):
            errors.insert(0, f"missing keys: {missing}; unexpected keys: {unexpected}")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n  "
                               + "\n  ".join(errors))
        with no_grad():
            for k, target in own.items():
                if k in incoming:
                    target.copy_(incoming[k])
        return _IncompatibleKeys(missing, unexpected)

    # ---- printing -----------------------------------------------------------------------

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"  ({n}): " + repr(m).replace("\n", "\n  ") for n, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n" + "\n".join(lines) + "\n)"


def _zero_grads(params, set_to_none):
    with no_grad():
        for p in params:
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
                continue
            g = p.grad
            if sys.getrefcount(g) <= 3 and _C._grad_exclusive(g):
                g[...] = 0  # in place, as PyTorch's zero_(): no second set of gradients
            else:  # someone else sees this memory: give the parameter fresh zeros
                p.grad = _creation.zeros(g.shape, dtype=g.dtype, device=g.device)
            del g
