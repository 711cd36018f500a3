"""pygpu.autograd.grad: the gradients of outputs with respect to chosen inputs, returned
instead of accumulated into `.grad` (PyTorch's torch.autograd.grad).

It walks the same graph as backward() (engine.py: topological order, gradients summed
where paths meet, every gradient op on the data's device) but hands back the gradient
reaching each input, leaf or not, and leaves every `.grad` untouched. Higher-order
gradients (create_graph=True) are not supported and say so."""
from .. import _C
from .engine import _fit, _ones_like, _topological
from .grad_mode import no_grad

Tensor = _C.Tensor


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, materialize_grads=False):
    if create_graph:
        raise NotImplementedError("pygpu.autograd.grad: create_graph=True (higher-order "
                                  "gradients) is not supported")
    outputs, inputs = _as_tuple(outputs), _as_tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    grad_outputs = _as_tuple(grad_outputs) if isinstance(grad_outputs, Tensor) else \
        tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} "
                           f"outputs")
    keys = []
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require "
                               f"grad")
        keys.append(t if t.grad_fn is None else t.grad_fn)
    found = {id(k): None for k in keys}

    def add(key, g):
        prev = found[id(key)]
        found[id(key)] = g if prev is None else prev + g

    retain = bool(retain_graph)
    with no_grad():
        for n, (out, gout) in enumerate(zip(outputs, grad_outputs)):
            if not out.requires_grad:
                raise RuntimeError(f"element {n} of tensors does not require grad and does not "
                                   f"have a grad_fn")
            if gout is None:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                gout = _ones_like(out)
            elif gout.shape != out.shape:
                raise RuntimeError(f"grad: grad_outputs[{n}] has shape {gout.shape}, the output "
                                   f"{out.shape}")
            if out.grad_fn is None:
                if id(out) in found:
                    add(out, gout)
                continue
            last = n == len(outputs) - 1
            grads = {id(out.grad_fn): gout}
            for node in reversed(_topological(out.grad_fn)):
                g = grads.pop(id(node), None)
                if g is None:
                    continue
                if id(node) in found:
                    add(node, g)
                inputs, fns = node.inputs or (), node.fns
                for t, fn, gi in zip(inputs, fns, node.backward(g)):
                    if t is None or gi is None or not (t.requires_grad or fn is not None):
                        continue
                    gi = _fit(gi, t)
                    if fn is None:
                        if id(t) in found:
                            add(t, gi)
                    else:
                        prev = grads.get(id(fn))
                        grads[id(fn)] = gi if prev is None else prev + gi
                if last and not retain:
                    node.release()
    result = []
    for t, k in zip(inputs, keys):
        g = found[id(k)]
        if g is None:
            if materialize_grads:
                g = _C.Tensor.new_zeros(t, t.shape)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
        result.append(g)
    return tuple(result)
