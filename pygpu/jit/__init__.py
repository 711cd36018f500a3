"""torch.jit's asynchronous calls as eager PyTorch runs them: fork(fn, *args, **kwargs) calls
fn at once, on the caller's thread, and returns a completed pygpu.Future of its result (an
exception fn raises propagates from fork, as PyTorch's does outside TorchScript); wait(future)
is future.wait(). torch.jit.fork and wait warn that they are deprecated, as PyTorch 2.13's
do; the top-level torch.fork/torch.wait (pygpu.fork, pygpu.wait) do not.

torch.jit.trace / trace_module record one run into TorchScript's traced IR (Graph, Node,
Value, ...: _ir.py) and return a ScriptFunction / ScriptModule that replays it (_tracer.py,
_script.py); save/load, freeze, is_tracing, the ignore/unused/export decorators and parse_ir
are here too (docs/jit.md), beside TorchScript's types and operator schemas (_types.py,
_schema.py: torch.IntType, parse_schema, ...). pygpu has no TorchScript compiler: torch.jit.script accepts what
trace can honour (an already traced module or function) and refuses Python source, so code
that forks to run a scripted module's branches in parallel runs them in turn."""
import warnings as _warnings

from ..futures import Future
from ._decorators import export, ignore, is_scripting, unused
from ._ir import Block, Graph, Node, Use, Value
from ._parse_ir import parse_ir
from ._script import (CompilationUnit, ScriptFunction, ScriptMethod, ScriptModule,
                      TopLevelTracedModule, freeze, trace, trace_module)
from ._serialization import load, save
from ._tracer import TracerWarning, TracingCheckError, is_tracing
from .._ops._torch_internals import JITException as Error  # torch.jit.Error is torch.JITException
from ._decorators import script

__all__ = ["Future", "fork", "wait", "trace", "trace_module", "ScriptModule", "ScriptFunction",
           "ScriptMethod", "CompilationUnit", "TopLevelTracedModule", "TracerWarning",
           "TracingCheckError",
           "is_tracing", "is_scripting", "freeze", "save", "load", "ignore", "unused", "export",
           "script", "Graph", "Node", "Value", "Block", "Use", "parse_ir"]


def _fork(func, *args, **kwargs):
    """A Future of func(*args, **kwargs), computed now (torch.fork in eager mode)."""
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def _wait(future):
    """The value of a Future (torch.wait): waits for it."""
    if not isinstance(future, Future):
        raise TypeError(f"wait(): incompatible function arguments: expected a Future, got "
                        f"{type(future).__name__}")
    return future.wait()


def fork(func, *args, **kwargs):
    """torch.jit.fork: a Future of func(*args, **kwargs), computed now (deprecated)."""
    _warnings.warn("`torch.jit.fork` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning, stacklevel=2)
    return _fork(func, *args, **kwargs)


def wait(future):
    """torch.jit.wait: the value of the Future fork returned (deprecated)."""
    _warnings.warn("`torch.jit.wait` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning, stacklevel=2)
    return _wait(future)
