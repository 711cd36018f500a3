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

from .. import _C
from .._tensor import create as _tensor_create
from ..autograd import no_grad
from .parameter import Buffer, Parameter, UninitializedBuffer, is_lazy

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


class Module:
    """Base class: subclass it, create layers in __init__, write forward()."""

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments "
                            f"{args or ''}{kwargs or ''} (Module.__init__ takes none)")
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setstate__(self, state):
        self.__dict__.update(state)
        for key in ("_non_persistent_buffers_set",):
            self.__dict__.setdefault(key, set())
        for key in ("_forward_pre_hooks", "_forward_hooks"):
            self.__dict__.setdefault(key, OrderedDict())

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
        elif isinstance(value, (Buffer, UninitializedBuffer)):  # nn.Buffer registers itself
            bufs[name] = value
            persistent = (value.persistent if isinstance(value, UninitializedBuffer)
                          else value._buffer_kind == 1)
            (self._non_persistent_buffers_set.discard if persistent
             else self._non_persistent_buffers_set.add)(name)
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
        lazy = d.get("_lazy_attrs")  # computed on access (a pruned Linear's fused weight)
        if lazy and name in lazy:
            return lazy[name](self)
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

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that is state (moved by .to; in state_dict unless persistent=False) but
        not a parameter."""
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"register_buffer: buffer name must be a non-empty string without "
                           f"'.', got {name!r}")
        if tensor is not None and not isinstance(tensor, (Tensor, UninitializedBuffer)):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None, got "
                            f"{type(tensor).__name__}")
        if name in self.__dict__ or name in self._parameters or name in self._modules:
            raise KeyError(f"register_buffer: attribute {name!r} already exists")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be an nn.Module, got "
                            f"{type(module).__name__}")
        self._modules[name] = module

    # ---- calling ----------------------------------------------------------------------

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    _compiled_call_impl = None  # set by compile(): what __call__ runs instead

    def __call__(self, *args, **kwargs):
        compiled = self._compiled_call_impl
        if compiled is not None:
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        """The hooks and forward(): what a call runs (and what compile() compiles)."""
        for hook in list(self._forward_pre_hooks.values()):
            out = hook(self, args)
            if out is not None:
                args = out if isinstance(out, tuple) else (out,)
        result = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            out = hook(self, args, result)
            if out is not None:
                result = out
        return result

    def compile(self, *args, **kwargs):
        """torch.nn.Module.compile (PyTorch 2.2+): compile this module's call in place, with
        pygpu.compile's arguments; unlike pygpu.compile(module), the module and its
        state_dict() keys stay as they are."""
        from .._dynamo.compiled_function import compile_function
        self._compiled_call_impl = compile_function(self._call_impl, *args, **kwargs)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_compiled_call_impl", None)  # as PyTorch: a pickled module is not compiled
        return state

    def register_forward_pre_hook(self, hook):
        """hook(module, args) -> None or new args, called before forward(); returns a
        handle whose remove() unregisters it."""
        return _HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """hook(module, args, output) -> None or a new output, called after forward()."""
        return _HookHandle(self._forward_hooks, hook)

    def _has_hooks(self):
        return bool(self._forward_pre_hooks or self._forward_hooks)

    def apply(self, fn):
        """fn(m) for every submodule (children first) and then self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def get_submodule(self, target):
        """The submodule at dotted path `target` ("" is self)."""
        m = self
        for part in target.split(".") if target else []:
            if part not in m._modules:
                raise AttributeError(f"{type(m).__name__} has no attribute `{part}`")
            m = m._modules[part]
        return m

    # ---- traversal --------------------------------------------------------------------

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(name, module) for self and every submodule, depth first, as PyTorch orders them."""
        if memo is None:
            memo = set()
        if isinstance(memo, str):  # named_modules("prefix"), pygpu's older call
            memo, prefix = set(), memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for cname, child in self._modules.items():
            if child is None:
                continue
            yield from child.named_modules(memo, f"{prefix}.{cname}" if prefix else cname,
                                           remove_duplicate)

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
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mname, m in mods:
            for pname, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mname}.{pname}" if mname else pname), p

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, _persistent_only=False):
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mname, m in mods:
            for bname, b in m._buffers.items():
                if b is None or (_persistent_only and bname in m._non_persistent_buffers_set):
                    continue
                yield (f"{mname}.{bname}" if mname else bname), b

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
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

    def to(self, *args, memory_format=None, **kwargs):
        """Move (and/or convert) every parameter and buffer IN PLACE; returns self.
        Accepts what Tensor.to accepts: a device, a dtype, or both; memory_format= lays out
        the 4-d and 5-d ones (conv weights) in that format, as torch's Module.to does."""
        def convert(t):
            if memory_format is not None and t.dim() in (4, 5):
                return t.to(*args, memory_format=memory_format, **kwargs)
            return t.to(*args, **kwargs)

        with no_grad():
            for p in self.parameters():
                new = convert(p)
                if new is not p:
                    p.data = new
                    if p.grad is not None:
                        p.grad = convert(p.grad)
            for m in self.modules():
                for name, b in list(m._buffers.items()):
                    if b is not None:
                        m._buffers[name] = convert(b)
        return self

    def cpu(self):
        return self.to("cpu")

    def share_memory(self):
        """Move every parameter (and its grad) and buffer into shared memory, in place
        (Tensor.share_memory_), so that processes started afterwards update one copy
        (Hogwild training); a device's tensors stay where they are. Returns self."""
        for p in self.parameters():
            p.share_memory_()
            if p.grad is not None:
                p.grad.share_memory_()
        for b in self.buffers():
            b.share_memory_()
        return self

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
        """An ordered dict name -> tensor (detached, sharing memory) of parameters and
        persistent buffers, in PyTorch's order: each module's parameters, then its buffers,
        then its children's, depth first."""
        out = OrderedDict()
        for mname, m in self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False):
            items = list(m._parameters.items()) + [
                (k, b) for k, b in m._buffers.items() if k not in m._non_persistent_buffers_set]
            for k, t in items:
                if t is not None:
                    out[f"{mname}.{k}" if mname else k] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values from state_dict into this module's parameters and buffers, in place
        (each value moves to the device of the tensor it replaces). Keys may carry the
        "module." prefix DataParallel writes. strict=True raises on missing or
        unexpected keys, naming them; strict=False returns them. assign=True makes each
        parameter and buffer hold the state_dict's tensor itself (its memory, device and
        dtype; a parameter keeps its requires_grad), PyTorch's way to load a model built
        on the 'meta' device, which has no memory to copy into."""
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a dict of tensors, got "
                            f"{type(state_dict).__name__}")
        own = self.state_dict(keep_vars=True)
        incoming = OrderedDict(state_dict.items())
        if incoming and not any(k in own for k in incoming) and \
                all(k.startswith("module.") for k in incoming):
            incoming = OrderedDict((k[len("module."):], v) for k, v in incoming.items())
        lazy = [(n, m) for n, m in self.named_modules() if hasattr(m, "_lazy_load_hook")]
        if lazy:  # lazy modules take the checkpoint's shapes first (pygpu/nn/lazy.py)
            for n, m in lazy:
                m._lazy_load_hook(incoming, f"{n}." if n else "")
            own = self.state_dict(keep_vars=True)
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
            if is_lazy(target) and is_lazy(v):
                continue  # both still to be shaped: nothing to copy
            if not isinstance(v, Tensor) and not is_lazy(v):
                errors.append(f"{k}: expected a Tensor, got {type(v).__name__}")
            elif is_lazy(target):
                errors.append(f"{k}: the model's entry is still uninitialized (a lazy module "
                              f"outside load_state_dict's reach)")
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
                if k not in incoming or (is_lazy(target) and is_lazy(incoming[k])):
                    continue
                if assign:
                    self._assign(k, incoming[k])
                    continue
                if _device_type(target) == "meta" and _device_type(incoming[k]) != "meta":
                    import warnings
                    warnings.warn(f"for {k}: copying from a non-meta parameter in the checkpoint "
                                  f"to a meta parameter in the current model, which is a no-op. "
                                  f"(Did you mean to pass `assign=True` to assign items in the "
                                  f"state dictionary to their corresponding key in the module "
                                  f"instead of copying them in place?)", UserWarning, stacklevel=2)
                target.copy_(incoming[k])
        return _IncompatibleKeys(missing, unexpected)

    def _assign(self, key, value):
        """load_state_dict(assign=True) of one entry: the owner's parameter takes value's
        memory (the Parameter object stays, so optimizers built on it still see it); a
        buffer is replaced by value."""
        owner_name, _, name = key.rpartition(".")
        owner = self.get_submodule(owner_name) if owner_name else self
        if name in owner._parameters:
            owner._parameters[name].data = value.detach()
        else:
            owner._buffers[name] = value

    def to_empty(self, *, device=None, recurse=True):
        """Give every parameter and buffer new, uninitialised memory on `device` (PyTorch's
        step after building a model on the 'meta' device, before loading or initialising
        its weights)."""
        from .._tensor import create as _tensor_create
        with no_grad():
            for p in self.parameters(recurse=recurse):
                p.data = _tensor_create.empty(p.shape, dtype=p.dtype, device=device)
            for m in (self.modules() if recurse else [self]):
                for name, b in list(m._buffers.items()):
                    if b is not None:
                        m._buffers[name] = _tensor_create.empty(b.shape, dtype=b.dtype, device=device)
        return self

    # ---- printing -----------------------------------------------------------------------

    def extra_repr(self):
        return ""

    def _child_lines(self):
        return [f"({n}): " + repr(m).replace("\n", "\n  ") for n, m in self._modules.items()]

    def __repr__(self):
        """PyTorch's layout: Name(extra) or Name(\n  extra\n  (child): ...\n)."""
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = self._child_lines()
        lines = extra_lines + child_lines
        out = type(self).__name__ + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                out += extra_lines[0]
            else:
                out += "\n  " + "\n  ".join(lines) + "\n"
        return out + ")"


def _device_type(t):
    """The device type of a state entry (an int8 layer's state has its own kind of device)."""
    return getattr(getattr(t, "device", None), "type", None)


class _HookHandle:
    """What register_forward_*hook returns: remove() unregisters the hook."""
    _next_id = 0

    def __init__(self, hooks, hook):
        self.hooks, self.id = hooks, _HookHandle._next_id
        _HookHandle._next_id += 1
        hooks[self.id] = hook

    def remove(self):
        self.hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


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
                p.grad = _tensor_create.zeros(g.shape, dtype=g.dtype, device=g.device)
            del g
