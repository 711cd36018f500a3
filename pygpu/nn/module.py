"""nn.Module: the base of every layer and model, with PyTorch's interface.

Attributes that are Parameters, Modules or registered buffers are tracked in
three ordered dicts (as in torch/nn/modules/module.py), which gives
parameters(), named_parameters(), children(), modules(), state_dict() and
load_state_dict(). Module.to(device) moves the module IN PLACE and returns
it: each parameter keeps its identity (its memory is swapped through
`.data`), so optimizers built before the move still hold the right tensors;
Tensor.to returns a new tensor, as in PyTorch."""
import functools
import sys
import warnings
from collections import OrderedDict
from collections.abc import Mapping

from .. import _C
from .._tensor import create as _tensor_create
from ..autograd import no_grad
from ..utils import _future
from ..utils.hooks import RemovableHandle
from ._backward_hooks import ModuleBackwardHook
from .parameter import Buffer, Parameter, UninitializedBuffer, is_lazy

Tensor = _C.Tensor


_EXTRA_STATE_KEY = "_extra_state"  # state_dict's key for get_extra_state()'s value

# every hook dict a module holds (created by __init__, restored by __setstate__ for modules
# pickled before a dict existed), as PyTorch's nn.Module names them
_HOOK_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
               "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks", "_backward_pre_hooks", "_backward_hooks")


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
        for key in _HOOK_DICTS:
            object.__setattr__(self, key, OrderedDict())
        object.__setattr__(self, "training", True)

    def __setstate__(self, state):
        self.__dict__.update(state)
        for key in ("_non_persistent_buffers_set",):
            self.__dict__.setdefault(key, set())
        for key in _HOOK_DICTS:
            self.__dict__.setdefault(key, OrderedDict())

    # ---- attribute registration -------------------------------------------------------

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign attributes before Module.__init__() is called "
                                 "(call super().__init__() first in your __init__)")
        params, mods, bufs = self._parameters, self._modules, self._buffers
        was_buffer = name in bufs
        if isinstance(value, Parameter):
            home = params
        elif isinstance(value, Module):
            home = mods
        elif isinstance(value, (Buffer, UninitializedBuffer)):  # nn.Buffer registers itself
            home = bufs
            persistent = (value.persistent if isinstance(value, UninitializedBuffer)
                          else value._buffer_kind == 1)
            (self._non_persistent_buffers_set.discard if persistent
             else self._non_persistent_buffers_set.add)(name)
        elif was_buffer and (value is None or isinstance(value, Tensor)):
            home = bufs  # re-assigning a registered buffer keeps it one
        else:
            home = None
        for d in (params, mods, bufs):
            if d is not home:  # the dict that takes it keeps its place (a Sequential's order)
                d.pop(name, None)
        if home is None:
            object.__setattr__(self, name, value)
            return
        home[name] = value
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
        """The hooks and forward(): what a call runs (and what compile() compiles). As
        PyTorch's: a pre-hook registered with_kwargs gets and may replace (args, kwargs);
        a forward hook registered with always_call runs even when forward raises."""
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        result, called = None, set()
        try:
            for hook_id, hook in list(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    out = hook(self, args, kwargs)
                    if out is not None:
                        if not (isinstance(out, tuple) and len(out) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of "
                                               f"(new_args, new_kwargs), but got {out}.")
                        args, kwargs = out
                else:
                    out = hook(self, args)
                    if out is not None:
                        args = out if isinstance(out, tuple) else (out,)
            bw = None
            if self._backward_hooks or self._backward_pre_hooks:
                bw = ModuleBackwardHook(self, list(self._backward_hooks.values()),
                                        list(self._backward_pre_hooks.values()))
                args = bw.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                called.add(hook_id)
                out = (hook(self, args, kwargs, result)
                       if hook_id in self._forward_hooks_with_kwargs
                       else hook(self, args, result))
                if out is not None:
                    result = out
            if bw is not None:
                result = bw.setup_output_hook(result)
            return result
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    try:
                        out = (hook(self, args, kwargs, result)
                               if hook_id in self._forward_hooks_with_kwargs
                               else hook(self, args, result))
                        if out is not None:
                            result = out
                    except Exception as e:
                        warnings.warn("forward hook with ``always_call=True`` raised an "
                                      "exception that was silenced as another error was "
                                      f"raised in forward: {e}")
            raise

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

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (with_kwargs: hook(module, args, kwargs)
        -> None or (args, kwargs)), called before forward(); prepend puts it first. Returns
        a handle whose remove() unregisters it."""
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """hook(module, args, output) -> None or a new output (with_kwargs: hook(module,
        args, kwargs, output)), called after forward(); always_call: also when forward
        raised."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs,
                                             self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or a new grad_output, called when the gradients
        of the module's outputs have been computed (_backward_hooks.py)."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or a new grad_input, called when
        the gradients of the module's inputs have been computed (_backward_hooks.py)."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars), called before state_dict() saves this module."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None, called after
        state_dict() saved this module and its children (it may edit state_dict)."""
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_state_dict_hook(self, hook):
        """The private form (nn.utils.spectral_norm's): the hook may return a new dict."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook "
                               "that was previously registered via "
                               "register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs), called before this module's entries are loaded."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """The private form: hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs), or with_module=True the public one's arguments."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = (functools.partial(hook, self)
                                                      if with_module else hook)
        return handle

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None, called after load_state_dict() loaded
        this module and its children; it may edit the key lists in place."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _has_hooks(self):
        return bool(self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                    or self._backward_pre_hooks)

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
        return self._apply(convert)

    def _apply(self, fn, recurse=True):
        """fn(tensor) -> tensor on every parameter (its memory swapped through .data, so the
        Parameter object stays), its gradient, and every buffer: what to(), cuda(), float()
        ... run, and what a subclass overrides to move state of its own, as in PyTorch."""
        with no_grad():
            for p in self.parameters(recurse=recurse):
                new = fn(p)
                if new is not p:
                    p.data = new
                    if p.grad is not None:
                        p.grad = fn(p.grad)
            for m in (self.modules() if recurse else [self]):
                for name, b in list(m._buffers.items()):
                    if b is not None:
                        m._buffers[name] = fn(b)
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        """Parameters and buffers to the cuda device (index or torch.device; the current
        one if None), in place; raises as Tensor.cuda does where no GPU is usable."""
        if device is None:
            return self.to("cuda")
        return self.to(device if not isinstance(device, int) else f"cuda:{device}")

    def type(self, dst_type):
        """Parameters and buffers cast to dst_type (a dtype), in place."""
        return self._apply(lambda t: t.type(dst_type))

    def xpu(self, device=None):
        raise AssertionError("Torch not compiled with XPU enabled")  # PyTorch's CPU build

    def mtia(self, device=None):
        raise RuntimeError("Torch not compiled with MTIA enabled")

    def ipu(self, device=None):
        raise RuntimeError("pygpu has no IPU device (PyTorch's CPU build cannot move to one "
                           "either)")

    def register_module(self, name, module):
        """Alias for add_module."""
        self.add_module(name, module)

    def get_parameter(self, target):
        """The parameter at dotted path `target`."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at dotted path `target`."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    def set_submodule(self, target, module, strict=False):
        """Put `module` at dotted path `target` (strict: only where one already is)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        atoms = target.split(".")
        mod = self
        for item in atoms[:-1]:
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        if strict and not hasattr(mod, atoms[-1]):
            raise AttributeError(f"{mod._get_name()} has no attribute `{atoms[-1]}`")
        if hasattr(mod, atoms[-1]) and not isinstance(getattr(mod, atoms[-1]), Module):
            raise AttributeError(f"`{atoms[-1]}` is not an nn.Module")
        setattr(mod, atoms[-1], module)

    def _get_name(self):
        return type(self).__name__

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

    _version = 1  # each module's entry in a state_dict's _metadata, as PyTorch's
    T_destination = OrderedDict
    dump_patches = False
    call_super_init = False

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ordered dict name -> tensor (detached, sharing memory) of parameters and
        persistent buffers, in PyTorch's order (each module's parameters, then its buffers,
        its extra state, then its children's, depth first), with PyTorch's `_metadata`
        (each module's `_version`) and hooks. Each module saves its own entries through
        _save_to_state_dict, which a subclass may override, as in PyTorch."""
        if args:  # PyTorch's deprecated positional form (destination, prefix, keep_vars)
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning,
                          stacklevel=2)
            if len(args) > 3:
                raise TypeError(f"state_dict() takes at most 3 positional arguments, got "
                                f"{len(args)}")
            destination = args[0] if destination is None else destination
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """This module's own entries (not its children's) into destination."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY] = self.get_extra_state()

    def get_extra_state(self):
        """Override (with set_extra_state) to keep state that is not a tensor in the
        state_dict, under the key `_extra_state`."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    def set_extra_state(self, state):
        """What load_state_dict calls with the `_extra_state` entry get_extra_state saved."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values from state_dict into this module's parameters and buffers, in place
        (each value moves to the device of the tensor it replaces), module by module
        through _load_from_state_dict (a subclass may override it, and pre/post hooks run),
        as PyTorch's. Keys may carry the "module." prefix DataParallel writes. strict=True
        raises PyTorch's RuntimeError naming missing and unexpected keys and size
        mismatches; strict=False returns the keys. assign=True makes each parameter and
        buffer hold the state_dict's tensor itself (its memory, device and dtype; a
        parameter keeps its requires_grad, and stays the same Parameter object so that
        optimizers built on it still see it), PyTorch's way to load a model built on the
        'meta' device, which has no memory to copy into."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        incoming = OrderedDict(state_dict.items())
        own = {f"{n}.{k}" if n else k
               for n, m in self.named_modules(remove_duplicate=False)
               for k in list(m._parameters) + list(m._buffers)}
        if incoming and not any(k in own for k in incoming) and \
                all(k.startswith("module.") for k in incoming):
            incoming = OrderedDict((k[len("module."):], v) for k, v in incoming.items())
            if metadata is not None:
                metadata = OrderedDict((k[len("module."):] if k.startswith("module.") else
                                        ("" if k == "module" else k), v)
                                       for k, v in metadata.items())
        for n, m in self.named_modules():  # lazy modules take the checkpoint's shapes first
            if hasattr(m, "_lazy_load_hook"):
                m._lazy_load_hook(incoming, f"{n}." if n else "")
        missing, unexpected, errors = [], [], []

        def load(module, local, prefix=""):
            meta = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                meta["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local, prefix, meta, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    cp = prefix + name + "."
                    load(child, {k: v for k, v in local.items() if k.startswith(cp)}, cp)
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, keys) is not None:
                    raise RuntimeError("Hooks registered with "
                                       "``register_load_state_dict_post_hook`` are not expected "
                                       "to return new values, if incompatible_keys need to be "
                                       "modified, it should be done inplace.")

        load(self, incoming)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    @staticmethod
    def _swap_in(target, value, assign):
        """pygpu.__future__.set_swap_module_params_on_conversion(True): target.module_load(
        value, assign) makes the new value (a subclass overrides it), which then trades
        places with target (torch.utils.swap_tensors), so whoever holds target (an optimizer)
        sees it. A parameter stays a parameter, with its requires_grad."""
        new = target.module_load(value, assign=assign)
        if new is value or new is target:
            raise RuntimeError("module_load returned one of self or other, please .detach() "
                               "the result if returning one of the inputs in module_load")
        if isinstance(target, Parameter):
            requires_grad = target.requires_grad
            if not isinstance(new, Parameter):
                new = Parameter(new, requires_grad=requires_grad)
            else:
                new.requires_grad_(requires_grad)
        _C._swap_tensors(target, new)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Load this module's own entries (not its children's) from state_dict, appending
        to missing_keys, unexpected_keys and error_msgs as PyTorch's does."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if getattr(value, "is_quantized", False) and not getattr(target, "is_quantized",
                                                                     False):
                raise ValueError(f"load_state_dict: {key!r} holds int8 weights (a quantized "
                                 f"model's state_dict) but {type(self).__name__} expects float "
                                 "ones; quantize the model first "
                                 "(pygpu.quantization.quantize_dynamic, or prepare + convert), "
                                 "then load")
            if getattr(target, "_qstate", False):  # an int8 layer's state: copy_ checks it
                with no_grad():
                    target.copy_(value)
                continue
            if is_lazy(target) and is_lazy(value):
                continue  # both still to be shaped: nothing to copy
            if not isinstance(value, Tensor) and not is_lazy(value):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            if is_lazy(target):
                error_msgs.append(f"{key}: the model's entry is still uninitialized (a lazy "
                                  "module outside load_state_dict's reach)")
                continue
            if len(target.shape) == 0 and len(value.shape) == 1:
                value = value[0]  # PyTorch 0.3's 1-element form of a 0-d entry
            if value.shape != target.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model "
                                  f"is {target.shape}.")
                continue
            if _device_type(target) == "meta" and _device_type(value) != "meta" and not assign:
                warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint "
                              "to a meta parameter in the current model, which is a no-op. "
                              "(Did you mean to pass `assign=True` to assign items in the state "
                              "dictionary to their corresponding key in the module instead of "
                              "copying them in place?)", UserWarning, stacklevel=4)
            try:
                with no_grad():
                    if _future.get_swap_module_params_on_conversion():
                        self._swap_in(target, value, assign)  # PyTorch's module_load path
                    elif assign:
                        if name in self._parameters:
                            self._parameters[name].data = value.detach()
                        else:
                            self._buffers[name] = value
                    else:
                        target.copy_(value)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                                  f"in the model are {target.shape} and whose dimensions in the "
                                  f"checkpoint are {value.shape}, an exception occurred : "
                                  f"{ex.args}.")
        extra = prefix + _EXTRA_STATE_KEY
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra in state_dict:
                self.set_extra_state(state_dict[extra])
            elif strict:
                missing_keys.append(extra)
        elif strict and extra in state_dict:
            unexpected_keys.append(extra)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra:
                    head = key[len(prefix):].split(".", 1)
                    if (head[0] not in self._modules) if len(head) > 1 else \
                            (head[0] not in local):
                        unexpected_keys.append(key)

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
