"""pygpu.compile (torch.compile) and OptimizedModule, as PyTorch spells them.

compile(model=None, *, fullgraph, dynamic, backend, mode, options, disable) works as a
call, a decorator and a decorator factory. On an nn.Module it returns an OptimizedModule,
an nn.Module that holds the original as its submodule `_orig_mod`: its parameters are the
original's, its state_dict() keys carry the `_orig_mod.` prefix (as PyTorch's do, which
checkpoint code strips or expects), and attributes it does not have itself are read from
and written to the original. What a compiled call runs: compiled_function.py (eagerly, or a
replay of its capture in torch's CUDA-graph modes: replay.py). This file sits above pygpu.nn; compiled_function.py sits below it."""
from ..nn.module import Module
from . import compiled_function as _cf


class OptimizedModule(Module):
    """torch._dynamo.eval_frame.OptimizedModule: `forward` is the compiled __call__ of
    `_orig_mod` (so the original's hooks run inside it, as in PyTorch)."""

    _opt_mod_attributes = {"_orig_mod", "_compile_kwargs", "_torchdynamo_orig_callable",
                           "forward", "_forward", "__dict__", "_super_module_initialized"}

    def __init__(self, mod, compile_kwargs):
        # first: training's setter and __getattr__ read _orig_mod during Module.__init__
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_super_module_initialized", False)
        super().__init__()
        self._super_module_initialized = True
        self._orig_mod = mod  # now registered in _modules: state_dict's "_orig_mod." prefix
        self._compile_kwargs = dict(compile_kwargs)
        self._initialize()

    def _initialize(self):
        call = self._orig_mod.__call__
        if self._compile_kwargs.get("disable"):  # made by disable(module)
            self.forward = _cf.disable(call)
        else:
            self.forward = _cf.compile_function(call, **self._compile_kwargs)
        self._torchdynamo_orig_callable = self._orig_mod.forward

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        if self.__dict__.get("_super_module_initialized"):  # not Module.__init__'s default
            self._orig_mod.training = value

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __len__(self):
        if hasattr(type(self._orig_mod), "__len__"):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    def __reduce__(self):
        return (self.__class__, (self._orig_mod, self._compile_kwargs))

    def __dir__(self):
        mine = self._orig_mod.__dir__()
        return mine + [a for a in super().__dir__() if a not in mine]


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """torch.compile. Checks PyTorch's arguments as PyTorch does; the result computes
    exactly what `model` computes: eagerly, or in mode="reduce-overhead" (torch's CUDA-graph
    modes) by replaying a capture of it on cpu and sim (docs/performance.md,
    "pygpu.compile"). Debug flag: TORCH_LOGS=graph_breaks or pygpu._dynamo.config.verbose =
    True prints what each compiled function does, once, and why a capturing one went eager."""
    kwargs = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                  options=options, disable=disable)
    if model is None:
        def decorate(model):
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, **kwargs)
        return decorate
    if isinstance(model, Module):
        _cf.check_arguments(backend, mode, options)
        if disable or _cf.config.disable:
            return model
        return OptimizedModule(model, kwargs)
    return _cf.compile_function(model, **kwargs)


def optimize(backend="inductor", *, nopython=False, dynamic=None, disable=False, **_):
    """torch._dynamo.optimize(backend): a decorator compiling with that backend."""
    _cf.check_arguments(backend, None, None)

    def decorate(fn):
        return compile(fn, backend=backend, fullgraph=nopython, dynamic=dynamic,
                       disable=disable)
    return decorate


def disable(fn=None, recursive=True, *, reason=None, wrapping=True):
    """torch._dynamo.disable / torch.compiler.disable: never compile fn (a decorator when fn
    is None). On an nn.Module, as in PyTorch, an OptimizedModule whose calls are not compiled."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason, wrapping=wrapping)
    if isinstance(fn, Module):
        return OptimizedModule(fn, dict(disable=True))
    return _cf.disable(fn, recursive, reason=reason, wrapping=wrapping)
