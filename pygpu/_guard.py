"""pygpu.transfer_guard: make implicit host<->device transfers visible.

"allow" (default) lets them happen (they are still counted); "log" warns
(pygpu.TransferWarning) on each; "disallow" raises pygpu.TransferGuardError.
Explicit copies (.to(), .cpu(), tensor(..., device=)) are always allowed.
Modelled on JAX's transfer guard: a call sets the level for the process, and
the returned object restores the previous level when used as a context manager."""
from . import _C

_LEVELS = {"allow": 0, "log": 1, "disallow": 2}
_NAMES = {v: k for k, v in _LEVELS.items()}


class transfer_guard:
    def __init__(self, level):
        if level not in _LEVELS:
            raise ValueError(f"transfer_guard level must be one of {sorted(_LEVELS)}, got {level!r}")
        self._previous = _C._get_guard()
        self.level = level
        _C._set_guard(_LEVELS[level])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_guard(self._previous)
        return False

    def __repr__(self):
        return f"transfer_guard({self.level!r})"


def get_transfer_guard():
    return _NAMES[_C._get_guard()]
