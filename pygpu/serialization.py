"""torch.serialization: save/load and the allow-list of classes load(weights_only=True)
may unpickle (add_safe_globals, safe_globals, get_safe_globals, clear_safe_globals).

pygpu.load with weights_only=True (the default, PyTorch 2.6's) unpickles only containers
and plain values (_pickle_io.py); a program that saved its own class (a dataclass of
hyper-parameters, say) lists it here, as in PyTorch, and load then accepts it."""
from . import _pickle_io
from .checkpoint import load, save

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals",
           "save"]


def _key(obj):
    if isinstance(obj, tuple):  # (class, "module.Name") as PyTorch accepts
        obj, name = obj
        module, _, qual = name.rpartition(".")
        return (module, qual)
    return (obj.__module__, obj.__qualname__)


def add_safe_globals(safe_globals):
    """Allow load(weights_only=True) to unpickle these classes and functions."""
    for obj in safe_globals:
        _pickle_io.USER_SAFE[_key(obj)] = obj


def get_safe_globals():
    return list(_pickle_io.USER_SAFE.values())


def clear_safe_globals():
    _pickle_io.USER_SAFE.clear()


class safe_globals:
    """`with torch.serialization.safe_globals([MyClass]):` allow them inside the block only."""

    def __init__(self, safe_globals):
        self._globals = list(safe_globals)
        self._before = None

    def __enter__(self):
        self._before = dict(_pickle_io.USER_SAFE)
        add_safe_globals(self._globals)

    def __exit__(self, *exc):
        _pickle_io.USER_SAFE.clear()
        _pickle_io.USER_SAFE.update(self._before)
