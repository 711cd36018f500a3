"""In-place ops under autograd: y.add_(1), y.mul_(w), y.exp_(), y += x on a tensor in a graph.

The C bindings call begin() before an in-place elementwise op when grad mode is on and
self or the other operand requires grad (a leaf that requires grad is refused before, in
C, with PyTorch's message), and end() after it. As in PyTorch, the write then becomes
self's new grad_fn: a node of the out-of-place op whose first input stands for self as
it was (`old`: self's previous history; a copy of its values only where the op's
backward reads them, as mul_ does for the other operand's gradient). Nodes recorded
before keep the grad_fn they saw (Node.fns), and any of them that saved self's values
fails its backward with PyTorch's version-counter error (versions.py).

What pygpu does not do is PyTorch's rebasing of views: writing a view in place does
not give its base a new history (PyTorch's CopySlices). So, to stay correct, begin()
refuses an in-place op under autograd on a tensor whose grad_fn is a view op, and on a
tensor without history whose memory other tensors share (it may be a view of one that
will need the gradient); a write to a base after a view of it was made fails the view's
backward (its node stamps the base). Ops autograd does not record in place (clamp_,
copy_, masked_fill_, index_add_, item assignment, ...) are refused on a tensor in a graph.
"""
from .. import _C
from .grad_mode import no_grad
from . import rules
from .engine import Node

Tensor = _C.Tensor


def _plain(name):
    return name[:-1] if name.endswith("_") else name


def begin(name, op, self, other):
    """Checks before self.<name>(other): returns `old` (self's history before the write)."""
    if op is None:
        raise RuntimeError(
            f"{name}: pygpu records no gradient for this in-place op on a tensor that takes "
            f"part in autograd; write the out-of-place op (x = x.{_plain(name)}(...)) or do it "
            "under pygpu.no_grad()")
    fn = self.grad_fn
    if fn is not None and fn.view:
        raise RuntimeError(
            f"{name}: this tensor is a view ({fn!r}) of a tensor in an autograd graph, and "
            "pygpu does not rebase the base's history after an in-place write to a view (as "
            f"PyTorch does); write the out-of-place op (v = v.{_plain(name)}(...)), or "
            "clone() the view first")
    if fn is None and not _C._grad_exclusive(self):
        raise RuntimeError(
            f"{name}: writing a tensor that shares its memory with other tensors (a view, or "
            "a tensor it is a view of) in place with an operand that requires grad would "
            "leave those tensors without the gradient history of the write (pygpu does not "
            f"rebase views as PyTorch does); write the out-of-place op (x = x.{_plain(name)}"
            "(...)), or clone() the tensor first")
    if isinstance(other, Tensor) and other is not self and _C._same_storage(self, other):
        raise RuntimeError(
            f"{name}: the operand shares memory with the tensor written in place, and its "
            "backward would read the overwritten values; pass a clone() of the operand")
    with no_grad():
        old = self.clone() if rules.reads_first_operand(op, other) else self.detach()
    if fn is not None:
        old._set_grad_fn(fn)
    return old


def end(op, old, self, other):
    """After the write: self's grad_fn becomes the op's node, on inputs (old, other)."""
    if other is self:  # x.mul_(x): both operands are x as it was
        other = old
    backward, ctx = rules.make(op, self, old, other, None, None)
    inputs = (old, other if isinstance(other, Tensor) else None)
    self._set_grad_fn(Node(rules.pretty(op), inputs, backward, ctx, rules.saved(op, ctx, old)))
