"""torch.backends.opt_einsum: the order in which einsum contracts three or more operands.

PyTorch asks the opt_einsum package for the order when it is installed and `enabled`
(`strategy` 'auto', 'greedy' or 'optimal'), and contracts left to right otherwise. pygpu
asks opt_einsum the same way when it is installed; when it is not, pygpu orders the pairs
with its own searches (pygpu/_tensor/einsum.py: exhaustive for 'optimal' and for 'auto' up
to four operands, greedy beyond), so einsum never contracts in a poor order for want of a
package: `enabled` is True and `strategy` 'auto' either way. `enabled = False` contracts left
to right, as PyTorch without opt_einsum. `is_available()` and `get_opt_einsum()` say whether
the package itself is there, as PyTorch's do."""
import contextlib
import sys
import types

try:
    import opt_einsum as _opt_einsum
except ImportError:
    _opt_einsum = None

STRATEGIES = ("auto", "greedy", "optimal")


def is_available():
    """Whether the opt_einsum package is installed (pygpu orders contractions either way)."""
    return _opt_einsum is not None


def get_opt_einsum():
    """The opt_einsum package, or None."""
    return _opt_einsum


def _check_strategy(value):
    if value not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but "
                         f"is {value}")
    return value


def set_flags(_enabled=None, _strategy=None):
    """Set enabled and strategy (None leaves one as it is); returns the previous pair."""
    mod = sys.modules[__name__]
    orig = (mod.enabled, mod.strategy)
    if _enabled is not None:
        mod.enabled = _enabled
    if _strategy is not None:
        mod.strategy = _strategy
    return orig


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    """with flags(enabled=..., strategy=...): the settings inside the block only."""
    orig = set_flags(enabled, strategy)
    try:
        yield
    finally:
        set_flags(*orig)


class _Module(types.ModuleType):
    """The module's type: `strategy` is checked when it is set, as PyTorch checks it."""
    _values = {"enabled": True, "strategy": "auto"}

    @property
    def enabled(self):
        return _Module._values["enabled"]

    @enabled.setter
    def enabled(self, value):
        _Module._values["enabled"] = bool(value)

    @property
    def strategy(self):
        return _Module._values["strategy"]

    @strategy.setter
    def strategy(self, value):
        _Module._values["strategy"] = _check_strategy(value)


sys.modules[__name__].__class__ = _Module
