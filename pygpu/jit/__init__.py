"""torch.jit's asynchronous calls as eager PyTorch runs them: fork(fn, *args, **kwargs) calls
fn at once, on the caller's thread, and returns a completed pygpu.Future of its result (an
exception fn raises propagates from fork, as PyTorch's does outside TorchScript); wait(future)
is future.wait(). torch.jit.fork and wait warn that they are deprecated, as PyTorch 2.13's
do; the top-level torch.fork/torch.wait (pygpu.fork, pygpu.wait) do not.

pygpu has no TorchScript compiler: torch.jit.script, trace and the JIT's types are not here
(docs/pytorch.md, "PyTorch subsystems pygpu does not have"), so code that forks to run a
scripted module's branches in parallel runs them in turn."""
import warnings as _warnings

from ..futures import Future

__all__ = ["Future", "fork", "wait"]


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
