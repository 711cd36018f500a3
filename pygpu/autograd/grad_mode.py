"""Grad mode: pygpu.no_grad(), enable_grad(), set_grad_enabled(), is_grad_enabled().

The flag lives in C (one per thread, as in PyTorch) because every op binding
reads it: while it is off, no op records a graph. Each class works as a
context manager and as a function decorator."""
import functools

from .. import _C

is_grad_enabled = _C.is_grad_enabled


class _GradMode:
    _enabled = True

    def __enter__(self):
        self._prev = _C._set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with type(self)():
                return func(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Inside, ops record no autograd graph (inference, optimizer updates)."""
    _enabled = False


class enable_grad(_GradMode):
    """Inside, ops record the autograd graph again (e.g. within no_grad)."""
    _enabled = True


class set_grad_enabled(_GradMode):
    """set_grad_enabled(mode): grad mode `mode` inside the block."""

    def __init__(self, mode=True):
        self._enabled = bool(mode)

    def __call__(self, func):
        mode = self._enabled

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return func(*args, **kwargs)
        return wrapper
