"""pygpu.compile on a function: PyTorch's arguments, checked as PyTorch checks them, a capture
and replay in torch's CUDA-graph modes, and an honest eager fallback.

What pygpu.compile does:
- accepts torch.compile's arguments with PyTorch's checks: an unknown backend is
  InvalidBackend (a RuntimeError), an unknown inductor mode or mode together with options a
  RuntimeError, a non-callable an AssertionError, `disable=True` hands the callable back;
- in mode="reduce-overhead" / "max-autotune" or backend="cudagraphs" (torch's CUDA-graph
  modes), captures the call on cpu and sim as a node graph and replays it from C (replay.py:
  warm-up, probe, capture, replay, guards, and what stays eager and why);
- in the other modes, runs every call of the original Python op by op: results, gradients,
  hooks, in-place updates and exceptions are eager's. A replay reruns nodes only, so the
  Python side effects of a call happen once, at its capture: only the modes where torch users
  accept that contract replay;
- says so under a debug flag: with `TORCH_LOGS` naming graph_breaks, dynamo or +dynamo, or
  `pygpu._dynamo.config.verbose = True`, the first call of each compiled function (again
  after pygpu._dynamo.reset()) prints whether it captures or runs eagerly, and a capturing
  one that goes eager prints why.

This file does not import pygpu.nn: Module.compile() (pygpu/nn/module.py) uses
compile_function; OptimizedModule, which needs nn.Module, is in eval_frame.py above it."""
import functools
import os
import sys

from . import config

# ---- backends: PyTorch's names, with its tags (list_backends() hides debug ones) ------------

_BACKENDS = {  # name -> tags
    "inductor": (),
    "cudagraphs": (),
    "eager": ("debug",),
    "aot_eager": ("debug",),
    "aot_eager_decomp_partition": ("debug",),
    "aot_eager_default_partitioner": ("debug",),
    "eager_noexcept": ("debug",),
}
_REGISTERED = {}  # name -> user compiler_fn (register_backend); never called: nothing is captured

# inductor's modes (torch._inductor.list_mode_options); only inductor checks them, as in PyTorch
INDUCTOR_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
                  "max-autotune")


class InvalidBackend(RuntimeError):
    """torch._dynamo.exc.InvalidBackend: a backend name that is not registered."""

    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `pygpu._dynamo.list_backends()` for "
                         "available backends.")


def list_backends(exclude_tags=("debug", "experimental")):
    """The registered backend names, sorted, less those carrying a tag in exclude_tags."""
    exclude = set(exclude_tags or ())
    names = {n for n, tags in _BACKENDS.items() if not exclude & set(tags)}
    names |= {n for n in _REGISTERED}
    return sorted(names)


def register_backend(compiler_fn=None, name=None, tags=()):
    """torch._dynamo.register_backend: make `name` (default: the function's name) a backend
    torch.compile accepts. Usable as a decorator. pygpu never calls compiler_fn (it has no
    graph to give it); the compiled function runs eagerly."""
    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    if not callable(compiler_fn):
        raise TypeError(f"register_backend: compiler_fn must be callable, got "
                        f"{type(compiler_fn).__name__}")
    name = name or compiler_fn.__name__
    if name in _BACKENDS or name in _REGISTERED:
        raise RuntimeError(f"duplicate name: {name}")
    _REGISTERED[name] = compiler_fn
    return compiler_fn


def _backend_name(backend):
    """The checked backend as a printable name (a callable backend: its name)."""
    if backend is None:
        return "inductor"
    if isinstance(backend, str):
        if backend not in _BACKENDS and backend not in _REGISTERED:
            raise InvalidBackend(backend)
        return backend
    if callable(backend):
        return getattr(backend, "__name__", type(backend).__name__)
    raise InvalidBackend(backend)


def check_arguments(backend, mode, options):
    """torch.compile's checks, in its order; returns the backend's name."""
    name = _backend_name(backend)
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if name == "inductor" and mode is not None and mode not in INDUCTOR_MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(INDUCTOR_MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"torch.compile: options must be a dict, got {type(options).__name__}")
    return name


# ---- the debug flag and the compile-state PyTorch programs query ---------------------------

_LOG_NAMES = {"graph_breaks", "dynamo", "+dynamo", "recompiles"}
_generation = [0]  # bumped by reset(): every compiled function reports again
_stance = ["default"]
STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
           "eager_then_compile", "aot_eager_then_compile")


def _logs_named(value):
    return any(part.strip() in _LOG_NAMES for part in (value or "").split(","))


_TORCH_LOGS = _logs_named(os.environ.get("TORCH_LOGS"))  # read at import, as PyTorch does


def debug_enabled():
    """TORCH_LOGS (at import) names graph_breaks / dynamo / +dynamo / recompiles, or
    config.verbose is set."""
    return _TORCH_LOGS or config.verbose


def is_compiling():
    """False: pygpu never traces, so no code ever runs under compilation (PyTorch's answer
    for code running eagerly, which is where a fallback runs)."""
    return False


def reset():
    """torch._dynamo.reset / torch.compiler.reset: forget what was compiled. pygpu holds no
    compiled code; the debug flag reports each compiled function again afterwards."""
    _generation[0] += 1


class set_stance:
    """torch.compiler.set_stance(stance="default", *, skip_guard_eval_unsafe=False,
    force_backend=None): as a call, a context manager or a decorator. Every stance runs
    eagerly in pygpu (none captures), so the stance is kept, and checked (as PyTorch checks
    it) when a compiled function is called."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if force_backend is not None:
            if stance != "default":
                raise RuntimeError("non-default stance cannot have force_backend set")
            _backend_name(force_backend)
        self.stance, self.prev = stance, _stance[0]
        _stance[0] = stance

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _stance[0] = self.prev

    def __call__(self, fn):
        _stance[0] = self.prev  # as a decorator it applies only while fn runs
        stance = self.stance

        @functools.wraps(fn)
        def run(*args, **kwargs):
            prev, _stance[0] = _stance[0], stance
            try:
                return fn(*args, **kwargs)
            finally:
                _stance[0] = prev
        return run


def _where(fn):
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code else name


# the modes that replay a captured graph (torch's CUDA-graph modes: inductor's
# reduce-overhead and max-autotune, and the cudagraphs backend)
REPLAY_MODES = ("reduce-overhead", "max-autotune")


def replays(backend_name, mode):
    """Whether a compiled callable of this backend and mode captures and replays."""
    return backend_name == "cudagraphs" or (backend_name == "inductor" and mode in REPLAY_MODES)


class CompiledFunction:
    """What torch.compile returns for a callable, keeping __wrapped__ and the wrapped
    function's name. In a replaying mode (replays()) its calls go through replay.py's
    Replayer (warm-up, probe, capture, replay on cpu and sim); otherwise, and wherever the
    Replayer gives up, they run the original eagerly. The debug flag says which, once per
    reset, and why a callable went eager."""

    def __init__(self, fn, backend_name, mode, fullgraph):
        functools.update_wrapper(self, fn)
        self._torchdynamo_orig_callable = fn
        self._backend, self._mode, self._fullgraph = backend_name, mode, fullgraph
        self._reported = -1
        self._replayer = None
        if replays(backend_name, mode):
            from . import replay
            owner = getattr(fn, "__self__", None)
            is_forward = getattr(fn, "__name__", "") == "__call__" and replay._is_module(owner)
            self._replayer = replay.Replayer(fn, owner if is_forward else None, self._fell_back,
                                             limit=config.cache_size_limit)

    def __call__(self, *args, **kwargs):
        if _stance[0] not in STANCES:  # PyTorch checks the stance when a compiled call runs
            raise RuntimeError(f"invalid torch.compile stance {_stance[0]!r}: expected one of "
                               f"{', '.join(STANCES)}")
        if self._reported != _generation[0] and debug_enabled():
            self._reported = _generation[0]
            self._report()
        if self._replayer is not None and _stance[0] != "force_eager":
            return self._replayer(args, kwargs)
        return self._torchdynamo_orig_callable(*args, **kwargs)

    def _fell_back(self, why):
        if debug_enabled():
            print(f"[pygpu.compile] {_where(self._torchdynamo_orig_callable)}: {why}; results "
                  "are eager's", file=sys.stderr, flush=True)

    def __get__(self, obj, objtype=None):  # a compiled method binds like the function
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _report(self):
        fn = self._torchdynamo_orig_callable
        what = f"backend {self._backend!r}" + (f", mode {self._mode!r}" if self._mode else "")
        if self._replayer is not None:
            print(f"[pygpu.compile] {_where(fn)}: {what} captures its calls as a node graph "
                  "on cpu and sim after a warm-up call and a probe call, and replays it",
                  file=sys.stderr, flush=True)
            return
        full = " (fullgraph=True is not enforced: nothing is captured)" if self._fullgraph else ""
        print(f"[pygpu.compile] {_where(fn)} runs eagerly, op by op: {what} captures no "
              f"graph in pygpu (mode='reduce-overhead' does, on cpu and sim){full}; results "
              "are eager's", file=sys.stderr, flush=True)


def compile_function(fn, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
                     options=None, disable=False):
    """torch.compile on a callable (an nn.Module's: eval_frame.compile wraps it first)."""
    if fn is None:
        raise RuntimeError("Model can't be None")
    if not callable(fn):
        raise AssertionError(f"A callable function is expected, but {type(fn)} is provided.")
    name = check_arguments(backend, mode, options)
    if disable or config.disable:
        return fn
    return CompiledFunction(fn, name, mode, fullgraph)


def disable(fn=None, recursive=True, *, reason=None, wrapping=True):
    """torch._dynamo.disable / torch.compiler.disable: never compile fn. Everything runs
    eagerly in pygpu already, so fn is wrapped unchanged and marked as PyTorch marks it."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason,
                                 wrapping=wrapping)
    if not callable(fn):
        raise AssertionError(f"A callable function is expected, but {type(fn)} is provided.")

    @functools.wraps(fn)
    def run(*args, **kwargs):
        return fn(*args, **kwargs)
    run._torchdynamo_disable = True
    run._torchdynamo_disable_recursive = recursive
    run._torchdynamo_orig_callable = fn
    return run


def allow_in_graph(fn):
    """torch.compiler.allow_in_graph: fn unchanged (there is no graph to put it in)."""
    return fn


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None, specialize_on=None):
    """torch._dynamo.mark_dynamic: nothing to do (no shapes are specialized); PyTorch too
    checks the index only when it compiles."""


def maybe_mark_dynamic(t, index):
    """As mark_dynamic."""


def mark_static(t, index=None):
    """As mark_dynamic."""
