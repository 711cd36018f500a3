"""torch.cond and torch.while_loop, PyTorch's control-flow operators, as they run outside a
compiled graph: cond calls the branch its predicate picks with the operands; while_loop
calls body_fn on the carried values while cond_fn holds, checking each step that the body
returns what it was given (structure, and each tensor's shape, dtype and device: the
metadata PyTorch requires so the loop can be captured). pygpu's torch.compile runs eagerly
(pygpu/_dynamo), so these are their whole semantics here; PyTorch's checks and messages."""
from .. import _C

Tensor = _C.Tensor


def _truth(pred, what):
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected {what} to be bool or single-element tensor, but got "
                               f"{pred}.")
        return bool(pred.item())
    if isinstance(pred, (bool, int, float)):
        return bool(pred)
    raise RuntimeError(f"Expected {what} to be bool or single-element tensor, but got {pred}.")


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred else false_fn(*operands); pred a bool, number or
    one-element tensor, operands a tuple or list."""
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    branch = true_fn if _truth(pred, "pred") else false_fn
    return branch(*operands)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        out = []
        for v in x:
            out += _leaves(v)
        return out
    return [x]


def _same_metadata(out, carried):
    outs, ins = _leaves(out), _leaves(carried)
    if len(outs) != len(ins):
        raise RuntimeError(f"Expected body_fn_output and carried_inputs to have same number of "
                           f"elements, but got {len(outs)} and {len(ins)}")
    for i, (a, b) in enumerate(zip(outs, ins)):
        if isinstance(b, Tensor):
            diffs = [f"{k}: {u} vs {v}" for k, u, v in (
                ("shape", tuple(getattr(a, "shape", ())), tuple(b.shape)),
                ("dtype", getattr(a, "dtype", type(a)), b.dtype),
                ("device", getattr(a, "device", None), b.device)) if u != v]
            if not isinstance(a, Tensor) or diffs:
                raise RuntimeError(f"Expected body_fn_output and carried_inputs to have same "
                                   f"metadata but found: pair[{i}] differ in "
                                   f"{', '.join(repr(d) for d in diffs) or 'type'}")


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run carried = body_fn(*carried) while cond_fn(*carried) is true; returns the last
    carried values (body_fn's structure; carried_inputs unchanged when cond_fn starts
    false)."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list, got "
                           f"{type(carried_inputs)}")
    carried = carried_inputs
    args = tuple(carried)
    while _truth(cond_fn(*args), "cond_fn's output"):
        carried = body_fn(*args)
        _same_metadata(carried, carried_inputs)
        args = tuple(carried) if isinstance(carried, (tuple, list)) else (carried,)
    return carried
