"""torch.autograd.functional: jacobian, vjp and jvp of a Python function of tensors.

Each is built on pygpu.autograd.grad (reverse mode): vjp is one backward pass; jacobian
is one pass per output element, each seeded with a one-hot gradient; jvp is the jacobian
applied to v. The second-order functions (hessian, hvp, vhp) differentiate a gradient,
which needs a backward that records its own graph (create_graph=True); pygpu's backward
runs under no_grad, so they raise NotImplementedError instead of answering."""
from .. import _C
from .grad import grad
from .grad_mode import enable_grad

Tensor = _C.Tensor


def _tuple(x, what):
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            raise TypeError(f"The {what} given to the function must be either a Tensor or a "
                            f"tuple of Tensors but the value at index {i} has type "
                            f"{type(t).__name__}.")
    return is_tuple, xs


def _prepare(inputs):
    return tuple(t.detach().requires_grad_(True) if t.dtype.is_floating_point else t.detach()
                 for t in inputs)


def _grads(outputs, inputs, grad_outputs, strict):
    needed = [t for t in inputs if t.requires_grad]
    outs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not outs or not needed:
        found = {}
    else:
        gs = grad([o for o, _ in outs], needed, [g for _, g in outs], retain_graph=True,
                  allow_unused=True)
        found = {id(t): g for t, g in zip(needed, gs)}
    res = []
    for i, t in enumerate(inputs):
        g = found.get(id(t))
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of "
                                   f"input {i}. This is not allowed in strict mode.")
            from .._tensor_create import zeros_like
            g = zeros_like(t)
        res.append(g)
    return tuple(res)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T . J): the output and the vector-Jacobian product."""
    _no_create_graph("vjp", create_graph)
    in_tuple, xs = _tuple(inputs, "inputs")
    xs = _prepare(xs)
    with enable_grad():
        out = func(*xs)
    out_tuple, outs = _tuple(out, "outputs of the user-provided function")
    if v is None:
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        from .._tensor_create import ones_like
        vs = (ones_like(outs[0]),)
    else:
        _, vs = _tuple(v, "v")
    res = _grads(outs, xs, vs, strict)
    detached = tuple(o.detach() for o in outs)
    return (detached if out_tuple else detached[0]), (res if in_tuple else res[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of func at inputs: for one input and one output, a tensor of shape
    output.shape + input.shape; for tuples, a tuple (of tuples) of them, as PyTorch's."""
    _no_create_graph("jacobian", create_graph)
    if strategy != "reverse-mode":
        raise NotImplementedError("jacobian: pygpu computes in reverse mode only "
                                  "(strategy='reverse-mode')")
    from .._tensor_create import zeros
    in_tuple, xs = _tuple(inputs, "inputs")
    xs = _prepare(xs)
    with enable_grad():
        out = func(*xs)
    out_tuple, outs = _tuple(out, "outputs of the user-provided function")
    jac = []
    for i, o in enumerate(outs):
        rows = []
        n = o.numel()
        for k in range(n):
            seed = zeros(n, dtype=o.dtype, device=o.device)
            seed[k] = 1.0
            seeds = tuple(seed.reshape(o.shape) if j == i else zeros(oj.shape, dtype=oj.dtype,
                                                                     device=oj.device)
                          for j, oj in enumerate(outs))
            rows.append(_grads(outs, xs, seeds, strict))
        per_input = []
        for j, x in enumerate(xs):
            jx = zeros((n, x.numel()), dtype=x.dtype, device=x.device)
            for k, r in enumerate(rows):
                jx[k] = r[j].reshape(-1)
            per_input.append(jx.reshape(tuple(o.shape) + tuple(x.shape)))
        jac.append(tuple(per_input) if in_tuple else per_input[0])
    return tuple(jac) if out_tuple else jac[0]


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), J . v), from the Jacobian (reverse mode, one pass per output
    element: meant for the small functions this API is used on)."""
    _no_create_graph("jvp", create_graph)
    in_tuple, xs = _tuple(inputs, "inputs")
    if v is None:
        if len(xs) != 1 or xs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        from .._tensor_create import ones_like
        vs = (ones_like(xs[0]),)
    else:
        _, vs = _tuple(v, "v")
    with enable_grad():
        out = func(*_prepare(xs))
    out_tuple, outs = _tuple(out, "outputs of the user-provided function")
    jac = jacobian(func, tuple(xs), strict=strict)
    jac = jac if out_tuple else (jac,)
    res = []
    for o, row in zip(outs, jac):
        acc = None
        for x, vx, j in zip(xs, vs, row):
            term = (j.reshape(o.numel(), x.numel()) @ vx.reshape(x.numel(), 1)).reshape(o.shape)
            acc = term if acc is None else acc + term
        res.append(acc)
    detached = tuple(o.detach() for o in outs)
    return (detached if out_tuple else detached[0]), (tuple(res) if out_tuple else res[0])


def _no_create_graph(name, create_graph):
    if create_graph:
        raise NotImplementedError(f"{name}: create_graph=True needs higher-order gradients, "
                                  f"which pygpu's autograd does not record")


def _second_order(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"torch.autograd.functional.{name} differentiates a gradient, which needs "
            f"higher-order gradients (create_graph=True); pygpu's backward does not record "
            f"its own graph, so it cannot compute {name}")
    fn.__name__ = name
    return fn


hessian = _second_order("hessian")
hvp = _second_order("hvp")
vhp = _second_order("vhp")
