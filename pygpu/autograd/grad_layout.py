"""The gradient layout contract and torch.autograd.enforce_grad_layout_policy.

When backward gives a leaf its first gradient, the gradient's strides follow the leaf's (a
leaf whose elements are non-overlapping and dense: a permuted parameter gets a permuted
gradient), or are row-major contiguous (any other leaf), as PyTorch's AccumulateGrad makes
them (torch/csrc/autograd/functions/accumulate_grad.h, utils::obeys_layout_contract). A
gradient that breaks the contract is copied into the leaf's layout; one that the engine may
take as it is (made by the backward, held by nothing else) is taken without a copy when it
obeys the contract, or under enforce_grad_layout_policy(False) whatever its layout. A
gradient held elsewhere (given by the caller, or already another leaf's) is always copied,
into the contract's layout. The switch is per thread, as PyTorch's."""
import functools
import threading

from .. import _C
from .._tensor import create as _tensor_create

_state = threading.local()


def is_enforced():
    return getattr(_state, "enforced", True)


def _set(enabled):
    _state.enforced = bool(enabled)


def _non_overlapping_and_dense(t):
    dims = sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1)
    expected = 1
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def _obeys(g, leaf):
    """Whether g's layout is the contract's for leaf (dims of size 1 have any stride)."""
    if _non_overlapping_and_dense(leaf):
        return all(a == b for n, a, b in zip(leaf.shape, g.stride(), leaf.stride()) if n != 1)
    return g.is_contiguous()


def _clone_obeying(g, leaf):
    """g copied into the contract's layout for leaf."""
    if _non_overlapping_and_dense(leaf):
        # dense: exactly numel elements under the leaf's strides
        base = _tensor_create.empty(leaf.numel(), dtype=g.dtype, device=g.device)
        return _C._as_strided(base, tuple(leaf.shape), leaf.stride(), 0).copy_(g)
    return g.clone().contiguous() if not g.is_contiguous() else g.clone()


def first_grad(g, leaf, stealable):
    """The tensor a leaf's first gradient g becomes (g itself when the engine may take it)."""
    if g.shape != leaf.shape:
        return g if stealable else g.clone()
    if stealable and g.is_contiguous() and leaf.is_contiguous():
        return g  # the common case, checked first: both row-major, so g obeys
    if not stealable:
        return _clone_obeying(g, leaf)
    if is_enforced() and not _obeys(g, leaf):
        return _clone_obeying(g, leaf)
    return g


class enforce_grad_layout_policy:
    """enforce_grad_layout_policy(enable=True): whether a leaf's first gradient is made to
    follow the leaf's layout (True, the default) or taken in the layout backward made it in
    (False). As PyTorch's: the switch takes effect when the object is made, the end of a
    `with` block puts back what was before it, and as a decorator it applies on each call."""

    def __init__(self, enable=True):
        self.prev = is_enforced()
        _set(enable)
        self.mode = enable

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        _set(self.prev)

    def __call__(self, orig_func):
        _set(self.prev)

        @functools.wraps(orig_func)
        def decorated(*args, **kwargs):
            with self.clone():
                return orig_func(*args, **kwargs)
        return decorated

    def clone(self):
        return self.__class__(self.mode)
