"""Autograd's version counter check: a saved tensor must not be written before backward.

When an op is recorded, every tensor whose values its backward reads (rules.saved for
the C-recorded ops, ctx.save(...) and tensor attributes of ctx for Functions) is
stamped: its storage's write stamp (Tensor._write_stamp: changes on every write pygpu
makes to that memory, through any view, in place or by copy_, under no_grad or not) and
its version (Tensor._version, PyTorch's counter: 0 for a fresh result and +1 per write
since, shared by every view of the memory). Node.backward calls check() first and raises
PyTorch's RuntimeError if any stamp changed, instead of computing a gradient from
overwritten values.

The stamp decides (so no write is missed, not even one that another op's output made);
the versions fill in PyTorch's message.

One exception, for FullyShardedDataParallel: it frees a parameter's gathered memory after
the forward and gathers the same values into new memory before the backward, swapping
the parameter's storage in place (Tensor.data). refilled(t, old_stamp) records that t's
storage now holds what the memory stamped old_stamp held; check() then accepts the new
stamp in place of the old one, and only while t is not written again."""
import re

from .. import _C

Tensor = _C.Tensor


class Output:
    """Marks a saved tensor that is the op's own output (a detached alias of it)."""
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


def stamp(saved, inputs=(), fns=()):
    """(tensor, write stamp, version, the grad_fn that made it or None) for each saved
    tensor (Tensor or Output). A node holds its operands as detached aliases (engine.hold),
    so the op that made an operand is read from the node's edges."""
    made_by = {id(t): fn for t, fn in zip(inputs, fns) if t is not None and fn is not None}
    out = []
    for s in saved:
        if isinstance(s, Tensor) and _C._is_inference(s):  # PyTorch's SavedVariable refuses it
            raise RuntimeError("Inference tensors cannot be saved for backward. Please do not "
                               "use Tensors created in inference mode in computation tracked "
                               "by autograd. To work around this, you can make a clone to get "
                               "a normal tensor and use it in autograd, or use "
                               "`torch.no_grad()` instead of `torch.inference_mode()`.")
        if type(s) is Output:
            s = s.t
            out.append((s, s._write_stamp, s._version, True))
        elif isinstance(s, Tensor):
            fn = made_by.get(id(s)) or s.grad_fn
            out.append((s, s._write_stamp, s._version, fn))
    return out


def _describe(t):
    shape = ", ".join(str(n) for n in t.shape)
    return f"[{t.type()} [{shape}]]"


def _op_name(node):
    """PyTorch's name of the op in this message: the grad_fn's without Backward0 (Sigmoid)."""
    from .._printing import grad_fn_name
    return re.sub(r"Backward\d*$", "", grad_fn_name(node))


# id(tensor) -> (tensor, stamp before the refill, stamp of the refilled memory)
_refills = {}


def refilled(t, old_stamp):
    """t's memory was swapped for a copy of the memory stamped old_stamp (FSDP's re-gather);
    forget(t) when t is done with (its gradients reduced)."""
    _refills[id(t)] = (t, old_stamp, t._write_stamp)


def forget(t):
    _refills.pop(id(t), None)


def _same_values(t, st):
    entry = _refills.get(id(t))
    return entry is not None and entry[0] is t and entry[1] == st and entry[2] == t._write_stamp


def check(node):
    for t, st, count, made_by in node.saved:
        if t._write_stamp != st and not (_refills and _same_values(t, st)):
            from .._printing import grad_fn_name
            now = max(t._version, count + 1)
            if made_by is True:
                what = f", which is output 0 of {_op_name(node)}"
            elif made_by is not None:
                what = f", which is output 0 of {_op_name(made_by)}"
            else:
                what = ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by "
                f"an inplace operation: {_describe(t)}{what}, is at version {now}; expected "
                f"version {count} instead. Hint: {grad_fn_name(node)}'s backward reads this "
                "tensor's values, which were overwritten after the op ran (an in-place op, "
                "copy_, item assignment or optimizer step on it or on a view of it); write "
                "the later op out of place (y = y.add(1), not y.add_(1)) or work on a clone().")
