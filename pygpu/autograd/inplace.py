"""In-place ops under autograd: y.add_(1), y.mul_(w), y.exp_(), y += x on a tensor in a graph.

The C bindings call begin() before an in-place elementwise op when grad mode is on and
self or the other operand requires grad (a leaf that requires grad is refused before, in
C, with PyTorch's message), and end() after it. As in PyTorch, the write then becomes
self's new grad_fn: a node of the out-of-place op whose first input stands for self as
it was (`old`: self's previous history; a copy of its values only where the op's
backward reads them, as mul_ does for the other operand's gradient). Nodes recorded
before keep the grad_fn they saw (Node.fns), and any of them that saved self's values
fails its backward with PyTorch's version-counter error (versions.py).

A write through a view rebases the view's base (views.assign: PyTorch's CopySlices), and
other views of that base get a regenerated history at their next use (views.refresh).
The indexed and masked writes (item assignment, copy_, masked_fill_, index_put_, ...) are
writes.py's; an in-place op the op table has no gradient for is refused under autograd."""
from .. import _C
from .grad_mode import no_grad
from . import rules, views
from .engine import make_node

Tensor = _C.Tensor


def _plain(name):
    return name[:-1] if name.endswith("_") else name


def prepare(self, name):
    """The checks before any in-place write on self under autograd: a stale view's history
    regenerated, PyTorch's refusals for a leaf (or a view of one) that requires grad."""
    if self._base is not None:
        views.refresh(self)
    views.check_writable(self)


def begin(name, op, self, other):
    """Checks before self.<name>(other): returns `old` (self's history before the write)."""
    if op is None:
        raise RuntimeError(
            f"{name}: pygpu records no gradient for this in-place op on a tensor that takes "
            f"part in autograd; write the out-of-place op (x = x.{_plain(name)}(...)) or do it "
            "under pygpu.no_grad()")
    prepare(self, name)
    if isinstance(other, Tensor) and other is not self and _C._same_storage(self, other):
        raise RuntimeError(
            f"{name}: the operand shares memory with the tensor written in place, and its "
            "backward would read the overwritten values; pass a clone() of the operand")
    fn = self.grad_fn
    with no_grad():
        old = self.clone() if rules.reads_first_operand(op, other) else self.detach()
    if fn is not None:
        old._set_grad_fn(fn)
    return old


def end(op, old, self, other):
    """After the write: the op's node, on inputs (old, other), becomes self's history."""
    if other is self:  # x.mul_(x): both operands are x as it was
        other = old
    views.assign(self, make_node(op, self, old, other, None, None))
