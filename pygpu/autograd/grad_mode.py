"""Grad mode: pygpu.no_grad(), enable_grad(), set_grad_enabled(), is_grad_enabled(),
inference_mode() (no_grad, and PyTorch's inference tensors: what is made inside is one).

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


class inference_mode(set_grad_enabled):
    """torch.inference_mode(mode=True): PyTorch's faster no_grad for inference. Inside it
    (mode=True) ops record no graph, as under no_grad, and the tensors made there are
    inference tensors (Tensor.is_inference: the C flag of their memory, which their views
    share), which autograd refuses to save for backward and which no in-place op may write
    outside inference_mode, as PyTorch's. The mode is a per-thread C flag, as PyTorch's.
    `@torch.inference_mode()` decorates as no_grad does."""

    def __init__(self, mode=True):
        super().__init__(not mode)
        self.mode = bool(mode)

    def __enter__(self):
        self._prev_inference = _C._set_inference_mode(self.mode)
        return super().__enter__()

    def __exit__(self, *exc):
        _C._set_inference_mode(self._prev_inference)
        return super().__exit__(*exc)

    def __call__(self, func):
        mode = self.mode

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return func(*args, **kwargs)
        return wrapper


def is_inference_mode_enabled():
    return _C._inference_mode()
