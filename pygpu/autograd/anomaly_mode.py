"""torch.autograd's anomaly mode: detect_anomaly (a context manager and decorator) and
set_detect_anomaly (a context manager or a plain call), with torch's switches beside them
(torch.is_anomaly_enabled, is_anomaly_check_nan_enabled, set_anomaly_enabled).

While it is on, every node the engine records keeps the stack of the forward call that
made it; when a node's backward raises, or (check_nan) returns a gradient holding NaN,
PyTorch's warning names the node and prints that stack, and the NaN case raises
PyTorch's RuntimeError ("Function 'SqrtBackward0' returned nan values in its 0th
output."). The engine asks `enabled()` once per node (pygpu/autograd/engine.py)."""
import functools
import os
import traceback
import warnings

_state = {"enabled": False, "check_nan": True}


def enabled():
    return _state["enabled"]


def is_anomaly_enabled():
    """torch.is_anomaly_enabled: whether anomaly mode is on."""
    return _state["enabled"]


def is_anomaly_check_nan_enabled():
    """torch.is_anomaly_check_nan_enabled: whether anomaly mode checks gradients for NaN."""
    return _state["check_nan"]


def set_anomaly_enabled(enabled, check_nan=True):
    """torch.set_anomaly_enabled(enabled, check_nan=True)."""
    _state["enabled"], _state["check_nan"] = bool(enabled), bool(check_nan)


_HERE = os.path.dirname(os.path.abspath(__file__))


def forward_stack():
    """The stack of the forward call now recording a node (autograd's own frames left
    out)."""
    frames = [f for f in traceback.extract_stack()
              if not os.path.abspath(f.filename).startswith(_HERE + os.sep)]
    return "".join(traceback.format_list(frames))


def check(node, name, grads):
    """Raise PyTorch's error when check_nan is on and a gradient of `node` holds NaN."""
    if not _state["check_nan"]:
        return
    from .. import _C
    for i, g in enumerate(grads):
        if isinstance(g, _C.Tensor) and (g.dtype.is_floating_point or g.dtype.is_complex) \
                and bool(_C.isnan(g.detach()).any().item()):
            raise RuntimeError(f"Function '{name}' returned nan values in its {i}th output.")


def report(name, stack):
    """PyTorch's warning, before the error propagates: the forward call that made the node."""
    warnings.warn(f"Error detected in {name}. Traceback of forward call that caused the "
                  f"error:\n{stack or ''}", stacklevel=3)


class detect_anomaly:
    """Anomaly detection for the autograd engine while the context (or decorated function)
    runs: the forward stack of each op kept, the failing backward named with it, and
    (check_nan=True) a NaN gradient raised as an error. It slows everything: for debugging."""

    def __init__(self, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return wrapped


class set_detect_anomaly:
    """Switch anomaly detection on or off (mode), now; as a context manager, the previous
    setting comes back on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *args):
        set_anomaly_enabled(self.prev, self.prev_check_nan)
