"""pygpu.autograd.grad: the gradients of outputs with respect to chosen inputs, returned
instead of accumulated into `.grad` (PyTorch's torch.autograd.grad, its whole signature).

It runs the engine backward() runs (engine.execute: topological order, gradients summed
where paths meet, every gradient op on the data's device), only over the nodes that lead
to an input, and hands back the gradient reaching each input, leaf or not; no `.grad` is
touched. create_graph=True records the backward itself, so the result can be
differentiated again (a gradient penalty, a Hessian-vector product: higher_order.py)."""
import warnings

from .. import _C
from .engine import _check_outputs, execute, make_grads

Tensor = _C.Tensor


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """The sum of the gradients of `outputs` (weighted by grad_outputs) with respect to each
    of `inputs`. retain_graph defaults to create_graph; allow_unused to materialize_grads
    (unused inputs give None, or zeros with materialize_grads); is_grads_batched: the first
    dimension of each grad_output is a batch of vectors, one backward each (PyTorch's
    vmap), the results stacked."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    keys = None
    if isinstance(inputs, dict):
        keys, inputs = list(inputs.keys()), tuple(inputs.values())
    else:
        inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: inputs must be Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    _check_outputs(outputs)
    grad_outputs = make_grads(outputs, grad_outputs, is_grads_batched)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        result = _batched(outputs, grad_outputs, inputs, bool(retain_graph), create_graph,
                          allow_unused)
    else:
        result = execute(outputs, grad_outputs, inputs, accumulate=False,
                         retain_graph=bool(retain_graph), create_graph=bool(create_graph),
                         allow_unused=allow_unused)
    if materialize_grads:
        from .._tensor.create import zeros
        result = [r if r is not None else
                  zeros(t.shape, dtype=t.dtype, device=t.device).requires_grad_(create_graph)
                  for r, t in zip(result, inputs)]
    result = tuple(result)
    if keys is not None:
        return dict(zip(keys, result))
    return result


def stack_rows(rows):
    """The tensors of `rows` (one shape) stacked along a new first axis, written row by row
    into one result (recorded where a row requires grad: the writes are differentiable)."""
    from .._tensor.create import zeros
    first = rows[0]
    out = zeros((len(rows),) + tuple(first.shape), dtype=first.dtype, device=first.device)
    for k, r in enumerate(rows):
        out[k] = r
    return out


def _batched(outputs, grad_outputs, inputs, retain_graph, create_graph, allow_unused):
    """One backward per row of the grad_outputs, stacked: what PyTorch computes with vmap."""
    n = next(g.shape[0] for g in grad_outputs if g is not None)
    for g in grad_outputs:
        if g is not None and g.shape[0] != n:
            raise RuntimeError("is_grads_batched: every grad_output must have the same size of "
                               f"its first (batch) dimension, got {g.shape[0]} and {n}")
    rows = []
    for k in range(n):
        last = k == n - 1
        gs = [None if g is None else g[k] for g in grad_outputs]
        rows.append(execute(outputs, gs, inputs, accumulate=False,
                            retain_graph=retain_graph or not last, create_graph=create_graph,
                            allow_unused=allow_unused))
    out = []
    for j in range(len(inputs)):
        col = [r[j] for r in rows]
        if all(c is None for c in col):
            out.append(None)
            continue
        from .._tensor.create import zeros_like
        col = [c if c is not None else zeros_like(inputs[j]) for c in col]
        out.append(stack_rows(col))
    return out
