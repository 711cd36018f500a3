"""torch.jit's decorators and switches for code that is traced: ignore, unused, export,
is_scripting, and script (which pygpu cannot compile: it honours only what trace made).

Under tracing these decorators change nothing (PyTorch's tracer records what runs whatever
the decorators say): ignore and unused mark a function for the TorchScript compiler, which
pygpu does not have; they return it unchanged (with PyTorch's marker attributes), and an
@unused method keeps running when traced, as in PyTorch."""

_IGNORE, _UNUSED, _EXPORT = "ignore", "unused", "export"


def ignore(drop=False, **kwargs):
    """torch.jit.ignore: leave a function to Python (used as @ignore or @ignore(drop=...))."""
    if callable(drop):
        drop._torchscript_modifier = _IGNORE
        return drop
    drop = drop or kwargs.get("drop_on_export", False)

    def decorator(fn):
        fn._torchscript_modifier = _UNUSED if drop else _IGNORE
        return fn
    return decorator


def unused(fn):
    """torch.jit.unused: the compiler replaces the function by a raise; tracing runs it."""
    if isinstance(fn, property):
        fn.fget._torchscript_modifier = _UNUSED
        return fn
    fn._torchscript_modifier = _UNUSED
    return fn


def export(fn):
    """torch.jit.export: compile this method too (trace_module traces the methods named)."""
    fn._torchscript_modifier = _EXPORT
    return fn


def is_scripting():
    """torch.jit.is_scripting: False, as in eager PyTorch (pygpu never scripts)."""
    return False


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """torch.jit.script compiles Python source to TorchScript: pygpu has no compiler. An
    already traced module or function is returned as it is (PyTorch does the same for a
    ScriptModule); anything else raises RuntimeError."""
    from ._script import ScriptFunction, ScriptModule
    from ._tracer import deprecated
    deprecated("script")
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    raise RuntimeError("torch.jit.script compiles Python source to TorchScript, which pygpu "
                       "does not do: trace it with pygpu.jit.trace(fn_or_module, "
                       "example_inputs) (a data-dependent branch is then frozen to the "
                       "example's)")
