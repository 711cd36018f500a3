"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp of a Python function
of tensors, with PyTorch's signatures, results and strict-mode errors.

All are reverse mode, built on autograd.grad (grad.py):
- vjp: one backward pass;
- jvp: PyTorch's double-backward trick: the vjp with a zero vector u that requires grad is
  linear in u, so differentiating it with respect to u along v gives J v;
- jacobian: one backward per output element (vectorize=True batches them through
  is_grads_batched, the same passes);
- hessian: the jacobian of the gradient (create_graph=True inside);
- vhp: the gradient of (gradient . v); hvp: the double-backward trick on vhp.
create_graph=True keeps the results differentiable; strict=True raises where a result
would be independent of an input, as PyTorch does."""
from .. import _C
from .grad import grad as _grad
from .grad import stack_rows
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

Tensor = _C.Tensor


def _as_tuple(x, what, fn):
    """(was it a tuple, the tensors as a tuple), checking each is a Tensor."""
    is_tuple = isinstance(x, tuple)
    xs = x if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {what}"
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of "
                            f"Tensors but the {where} has type {type(t)}.")
    return is_tuple, xs


def _prepare(xs, create_graph, need_graph):
    """Inputs to differentiate against: a view (keeping the history) under create_graph of
    an input that requires grad, else a detached copy requiring grad when asked."""
    out = []
    for t in xs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            d = t.detach()
            out.append(d.requires_grad_(True) if need_graph and d.dtype.is_floating_point
                       else d)
    return tuple(out)


def _finish(xs, create_graph):
    if xs and isinstance(xs[0], tuple):
        return tuple(_finish(x, create_graph) for x in xs)
    return xs if create_graph else tuple(t.detach() for t in xs)


def _unpack(res, is_tuple):
    return res if is_tuple else res[0]


def _validate_v(v, other, other_is_tuple):
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if tuple(a.shape) != tuple(b.shape):
            pre = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{pre}v has invalid size: should be {b.shape} but got "
                               f"{a.shape}.")


_REQUIRES = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
               "outputs must be computed in a differentiable manner from the input when "
               "running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of "
                   "the user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
               "independent of the input. This is not allowed in strict mode. You should "
               "ensure that your function is thrice differentiable and that the hessian "
               "depends on the inputs.",
}


def _check_requires_grad(xs, kind, strict):
    if not strict:
        return
    for i, t in enumerate(xs):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_REQUIRES[kind].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
                   is_grads_batched=False):
    """autograd.grad over the outputs that require grad (None for every input if none do)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph,
                 is_grads_batched=is_grads_batched)


_ZERO_ERRORS = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    from .._tensor.create import zeros_like
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_ERRORS[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            which = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {which} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(g)
    return tuple(res)


def _zeros_requiring_grad(ts):
    from .._tensor.create import zeros_like
    return tuple(zeros_like(t).requires_grad_(True) for t in ts)


def _v_or_default(v, xs, is_tuple, fn, create_graph, of_output=False):
    if v is not None:
        _, vs = _as_tuple(v, "v", fn)
        vs = _prepare(vs, create_graph, need_graph=False)
        _validate_v(vs, xs, is_tuple)
        return vs
    if len(xs) != 1 or xs[0].numel() != 1:
        if of_output:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    return None


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T J): the outputs and the vector-Jacobian product."""
    with enable_grad():
        in_tuple, xs = _as_tuple(inputs, "inputs", "vjp")
        xs = _prepare(xs, create_graph, need_graph=True)
        out_tuple, outs = _as_tuple(func(*xs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outs, "outputs", strict)
        vs = _v_or_default(v, outs, out_tuple, "vjp", create_graph, of_output=True)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _autograd_grad(outs, xs, vs, create_graph=create_graph)
        res = _fill_in_zeros(res, xs, strict, create_graph, "back")
    return (_unpack(_finish(outs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), J v), by the double-backward trick (two backward passes)."""
    with enable_grad():
        in_tuple, xs = _as_tuple(inputs, "inputs", "jvp")
        xs = _prepare(xs, create_graph, need_graph=True)
        vs = _v_or_default(v, xs, in_tuple, "jvp", create_graph)
        out_tuple, outs = _as_tuple(func(*xs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outs, "outputs", strict)
        us = _zeros_requiring_grad(outs)
        grad_inputs = _autograd_grad(outs, xs, us, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _autograd_grad(grad_inputs, us, vs, create_graph=create_graph)
        res = _fill_in_zeros(res, outs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), out_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of func at inputs: for one input and one output, a tensor of shape
    output.shape + input.shape; for tuples, a tuple (over outputs) of tuples (over inputs)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        raise NotImplementedError('jacobian: pygpu has no forward-mode AD; use '
                                  'strategy="reverse-mode" (the default)')
    from .._tensor.create import zeros_like
    with enable_grad():
        in_tuple, xs = _as_tuple(inputs, "inputs", "jacobian")
        xs = _prepare(xs, create_graph, need_graph=True)
        out_tuple, outs = _as_tuple(func(*xs), "outputs of the user-provided function",
                                    "jacobian")
        _check_requires_grad(outs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")
        jac = []
        for i, out in enumerate(outs):
            flat = out.reshape(-1)
            n = flat.shape[0]
            if vectorize and n:
                from .._tensor.create import eye
                rows = _autograd_grad((flat,), xs, (eye(n, dtype=out.dtype,
                                                        device=out.device),),
                                      create_graph=create_graph, retain_graph=True,
                                      is_grads_batched=True)
                per_input = [r if r is not None else
                             zeros_like(x).reshape((1,) + tuple(x.shape)).expand(
                                 (n,) + tuple(x.shape)) for r, x in zip(rows, xs)]
            else:
                cols = [[] for _ in xs]
                for k in range(n):
                    vj = _autograd_grad((flat[k],), xs, retain_graph=True,
                                        create_graph=create_graph)
                    for j, (g, x) in enumerate(zip(vj, xs)):
                        if g is None:
                            if strict:
                                raise RuntimeError(
                                    f"Output {i} of the user-provided function is independent "
                                    f"of input {j}. This is not allowed in strict mode.")
                            g = zeros_like(x)
                        elif strict and create_graph and not g.requires_grad:
                            raise RuntimeError(
                                f"The jacobian of the user-provided function is independent "
                                f"of input {i}. This is not allowed in strict mode when "
                                "create_graph=True.")
                        cols[j].append(g)
                per_input = [stack_rows(c) if c else zeros_like(x).reshape((0,) + tuple(x.shape))
                             for c, x in zip(cols, xs)]
            jac.append(tuple(p.reshape(tuple(out.shape) + tuple(x.shape))
                             for p, x in zip(per_input, xs)))
        jac = _finish(tuple(jac), create_graph)
    jac = tuple(_unpack(row, in_tuple) for row in jac)
    return _unpack(jac, out_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning one element: for one input x, a tensor of shape
    x.shape + x.shape; for a tuple of inputs, a tuple of tuples (one block per pair)."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single(*inp):
        out = func(*inp)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.reshape(())

    def jac_func(*inp):
        jac = jacobian(single, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, xs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    if not in_tuple:
        return res[0][0]
    return res


def _scalar_output(func, xs, fn, strict):
    out_tuple, outs = _as_tuple(func(*xs), "outputs of the user-provided function", fn)
    _check_requires_grad(outs, "outputs", strict)
    if out_tuple or not isinstance(outs[0], Tensor):
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain "
                           "a single element")
    return out_tuple, outs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T H): the output and the vector-Hessian product."""
    with enable_grad():
        in_tuple, xs = _as_tuple(inputs, "inputs", "vhp")
        xs = _prepare(xs, create_graph, need_graph=True)
        vs = _v_or_default(v, xs, in_tuple, "vhp", create_graph)
        out_tuple, outs = _scalar_output(func, xs, "vhp", strict)
        jac = _autograd_grad(outs, xs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _autograd_grad(jac, xs, vs, create_graph=create_graph)
        res = _fill_in_zeros(res, xs, strict, create_graph, "double_back")
    return (_unpack(_finish(outs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), H v): the output and the Hessian-vector product (double-backward
    trick on the vector-Hessian product)."""
    with enable_grad():
        in_tuple, xs = _as_tuple(inputs, "inputs", "hvp")
        xs = _prepare(xs, create_graph, need_graph=True)
        vs = _v_or_default(v, xs, in_tuple, "hvp", create_graph)
        out_tuple, outs = _scalar_output(func, xs, "hvp", strict)
        jac = _autograd_grad(outs, xs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        us = _zeros_requiring_grad(xs)
        double_back = _autograd_grad(jac, xs, us, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _autograd_grad(double_back, us, vs, create_graph=create_graph)
        res = _fill_in_zeros(res, xs, strict, create_graph, "double_back_trick")
    return (_unpack(_finish(outs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))
