"""torch.autograd.gradcheck and gradgradcheck, with PyTorch's signatures.

gradcheck compares the Jacobian autograd computes (one backward pass per output element,
autograd.grad with a one-hot grad_output: the "analytical" Jacobian) with central finite
differences of the function (the "numerical" one), input by input, in the inputs' own
dtype and on their own device; use float64 inputs, as PyTorch advises. fast_mode=True
compares one random projection u^T J v of each instead (PyTorch's fast mode).
gradgradcheck runs gradcheck on the function's gradient (computed with
create_graph=True), so it checks the second derivatives. A mismatch raises GradcheckError
(a RuntimeError) with PyTorch's message, or returns False with raise_exception=False.

A complex input or output counts as its real pairs (view_as_real): the Jacobian is that of
the real pairs, the finite differences step each real and imaginary part, and a complex
output is seeded with 1 and with 1j at each element. PyTorch's gradient convention is
exactly that Jacobian's transpose applied to the seed's pairs, so the check is the same one
PyTorch's complex gradcheck makes (its Wirtinger form), written over the reals.

pygpu has no forward-mode AD: check_forward_ad, check_batched_forward_grad and
check_fwd_over_rev refuse with NotImplementedError rather than pass unchecked."""
import warnings

import numpy as np

from .. import _C
from .grad import grad as _grad
from .grad import stack_rows
from .grad_mode import no_grad

Tensor = _C.Tensor


class GradcheckError(RuntimeError):
    """Raised by gradcheck and gradgradcheck when a gradient is wrong."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable(outputs):
    return tuple(o for o in _as_tuple(outputs) if isinstance(o, Tensor) and o.requires_grad)


def _host(t):
    """t's values as float64 NumPy (a counted transfer from a device); a complex tensor's
    as its real pairs, shape (..., 2)."""
    with no_grad():
        t = t.detach().cpu()
        if t.dtype.is_complex:
            t = _C._view_as_real(t)
        return np.asarray(t.astype("float64").numpy(), dtype=np.float64)


def _from_host(a, like):
    """a (the real pairs of a complex `like`) as a tensor like `like` (dtype, device, and
    requires_grad: gradgradcheck's function differentiates its inputs)."""
    from .._tensor.create import tensor
    if like.dtype.is_complex:
        t = _C._view_as_complex(tensor(np.ascontiguousarray(a), dtype=like.dtype.to_real(),
                                       device=like.device))
    else:
        t = tensor(a, dtype=like.dtype, device=like.device)
    return t.requires_grad_(True) if like.requires_grad else t


def _inexact(o):
    return isinstance(o, Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex)


def _real_numel(t):
    return t.numel() * (2 if t.dtype.is_complex else 1)


def _real_shape(t):
    return tuple(t.shape) + ((2,) if t.dtype.is_complex else ())


def _eval(func, inputs):
    return [_host(o) for o in _as_tuple(func(*inputs)) if _inexact(o)]


def _outputs_mask(func, inputs):
    """Which of func's tensor outputs are differentiable (the numerical Jacobian keeps the
    same ones the analytical one has)."""
    outs = [o for o in _as_tuple(func(*inputs)) if _inexact(o)]
    return [o.requires_grad for o in outs], outs


def _numerical(func, inputs, diff, eps, keep):
    """jac[i][j]: (numel of output j, numel of input i) by central differences."""
    jac = []
    for i in diff:
        x = inputs[i]
        base = _host(x)
        cols = []
        for k in range(base.size):
            hi, lo = base.copy(), base.copy()
            hi.flat[k] += eps
            lo.flat[k] -= eps
            args = list(inputs)
            args[i] = _from_host(hi, x)
            fp = _eval(func, args)
            args[i] = _from_host(lo, x)
            fm = _eval(func, args)
            cols.append([((a - b) / (2 * eps)).reshape(-1)
                         for a, b, k2 in zip(fp, fm, keep) if k2])
        jac.append([np.stack([c[j] for c in cols], axis=1) if cols else
                    np.zeros((0, 0)) for j in range(sum(keep))])
    return jac


def _analytical(outputs, inputs, diff, check_dtypes):
    """jac[i][j] like _numerical's, one backward per output element; also reports whether
    a second run gave the same values (reentrancy) and whether the dtypes were right."""
    from .._tensor.create import zeros
    xs = [inputs[i] for i in diff]
    jac = [[np.zeros((_real_numel(o), _real_numel(x))) for o in outputs] for x in xs]
    again = [[np.zeros((_real_numel(o), _real_numel(x))) for o in outputs] for x in xs]
    dtype_ok = True
    for j, o in enumerate(outputs):
        n = _real_numel(o)
        for k in range(n):
            seed = zeros(o.numel(), dtype=o.dtype, device=o.device)
            # 1 (or, for a complex output's odd k, 1j) at element k // 2
            (_C._view_as_real(seed).reshape(-1) if o.dtype.is_complex else seed)[k] = 1.0
            seed = seed.reshape(o.shape)
            for target in (jac, again):
                gs = _grad([o], xs, [seed], retain_graph=True, allow_unused=True)
                for i, g in enumerate(gs):
                    if g is None:
                        continue
                    if check_dtypes and g.dtype != xs[i].dtype:
                        dtype_ok = False
                    if tuple(g.shape) != tuple(xs[i].shape):
                        raise GradcheckError("Analytical gradient has incorrect size")
                    target[i][j][k] = _host(g).reshape(-1)
    return jac, again, dtype_ok


def _close(a, n, atol, rtol):
    return np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=False)


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _slow(func, inputs, outputs, diff, keep, eps, atol, rtol, nondet_tol, check_dtypes,
          raise_exception):
    num = _numerical(func, inputs, diff, eps, keep)
    ana, again, dtype_ok = _analytical(outputs, inputs, diff, check_dtypes)
    if not dtype_ok:
        return _fail("Gradient has dtype mismatch", raise_exception)
    for ii, i in enumerate(diff):
        for j in range(len(outputs)):
            a, n = ana[ii][j], num[ii][j]
            if not _close(a, n, atol, rtol):
                return _fail(f"Jacobian mismatch for output {j:d} with respect to input {i:d},\n"
                             f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n", raise_exception)
            if np.abs(a - again[ii][j]).max(initial=0.0) > nondet_tol:
                return _fail("Backward is not reentrant, i.e., running backward with same input "
                             "and grad_output multiple times gives different values, although "
                             "analytical gradient matches numerical gradient.The tolerance for "
                             f"nondeterminism was {nondet_tol}.", raise_exception)
    return True


def _fast(func, inputs, outputs, diff, keep, eps, atol, rtol, raise_exception):
    """u^T J v for random u (outputs) and v (inputs): by one directional difference and one
    backward pass."""
    rng = np.random.default_rng(0)
    us = [rng.standard_normal(_real_numel(o)) for o in outputs]
    vs = {i: rng.standard_normal(_real_numel(inputs[i])) for i in diff}
    for ii, i in enumerate(diff):
        x = inputs[i]
        base = _host(x)
        args = list(inputs)
        args[i] = _from_host(base + eps * vs[i].reshape(base.shape), x)
        fp = [f for f, k in zip(_eval(func, args), keep) if k]
        args[i] = _from_host(base - eps * vs[i].reshape(base.shape), x)
        fm = [f for f, k in zip(_eval(func, args), keep) if k]
        for j, o in enumerate(outputs):
            numerical = float(((fp[j] - fm[j]).reshape(-1) / (2 * eps)) @ us[j])
            seed = _from_host(us[j].reshape(_real_shape(o)), o)
            (g,) = _grad([o], [x], [seed], retain_graph=True, allow_unused=True)
            analytical = 0.0 if g is None else float(_host(g).reshape(-1) @ vs[i])
            if not _close(analytical, numerical, atol, rtol):
                return _fail(f"Jacobian mismatch for output {j:d} with respect to input {i:d},\n"
                             f"numerical:{numerical}\nanalytical:{analytical}\n\n"
                             "(fast mode: u^T J v for random u and v; rerun with "
                             "fast_mode=False for the whole Jacobians)", raise_exception)
    return True


def _fmt(a):
    with np.printoptions(precision=4, suppress=True, threshold=200):
        return "\n" + str(a)


def _batched(outputs, inputs, diff, atol, rtol, raise_exception):
    """check_batched_grad: is_grads_batched gives each row's own backward."""
    from .._tensor.create import randn
    xs = [inputs[i] for i in diff]
    for j, o in enumerate(outputs):
        rows = [randn(tuple(o.shape), dtype=o.dtype, device=o.device) for _ in range(2)]
        batched = _grad([o], xs, [stack_rows(rows)], retain_graph=True, allow_unused=True,
                        is_grads_batched=True)
        for k, r in enumerate(rows):
            single = _grad([o], xs, [r], retain_graph=True, allow_unused=True)
            for i, (b, s) in enumerate(zip(batched, single)):
                if (b is None) != (s is None) or (b is not None and
                                                  not _close(_host(b[k]), _host(s), atol, rtol)):
                    return _fail(f"For output {j} and input {diff[i]}: batched gradients (is_"
                                 "grads_batched=True) differ from the per-row gradients",
                                 raise_exception)
    return True


def _undefined(outputs, inputs, diff, raise_exception):
    """check_undefined_grad: a zero grad_output gives zero (or no) gradients."""
    from .._tensor.create import zeros_like
    xs = [inputs[i] for i in diff]
    gs = _grad(list(outputs), xs, [zeros_like(o) for o in outputs], retain_graph=True,
               allow_unused=True)
    for i, g in zip(diff, gs):
        if g is not None and np.abs(_host(g)).max(initial=0.0) != 0.0:
            return _fail(f"Expected backward function to handle undefined output grads. Please "
                         f"look at \"Notes about undefined output gradients\" in "
                         f"\"tools/autograd/derivatives.yaml\" (input {i} got a nonzero "
                         "gradient from zero grad_outputs)", raise_exception)
    return True


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of func at inputs (the tensors that require grad) against finite
    differences; True, or GradcheckError (False with raise_exception=False)."""
    if check_forward_ad or check_batched_forward_grad:
        raise NotImplementedError("gradcheck: pygpu has no forward-mode AD "
                                  "(check_forward_ad, check_batched_forward_grad)")
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        return _fail("gradcheck expects at least one input tensor to require gradient, but "
                     "none of the them have requires_grad=True.", raise_exception)
    for i in diff:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision "
                          "floating point or complex. This check will likely fail if all the "
                          "inputs are not of double precision floating point or complex. ",
                          UserWarning, stacklevel=2)
    if not check_backward_ad:
        return True
    keep, all_outs = _outputs_mask(func, inputs)
    outputs = tuple(o for o, k in zip(all_outs, keep) if k)
    if not outputs:  # nothing differentiable: the numerical Jacobian must be zero
        for per_input in _numerical(func, inputs, diff, eps, [True] * len(keep)):
            if any(np.abs(j).max(initial=0.0) > atol for j in per_input):
                return _fail("Numerical gradient for function expected to be zero",
                             raise_exception)
        return True
    if fast_mode:
        ok = _fast(func, inputs, outputs, diff, keep, eps, atol, rtol, raise_exception)
    else:
        ok = _slow(func, inputs, outputs, diff, keep, eps, atol, rtol, nondet_tol,
                   check_grad_dtypes, raise_exception)
    if ok and check_batched_grad:
        ok = _batched(outputs, inputs, diff, atol, rtol, raise_exception)
    if ok and check_undefined_grad:
        ok = _undefined(outputs, inputs, diff, raise_exception)
    return ok


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of func's gradient (the vector-Jacobian product with grad_outputs, random in
    [-1, 1) when not given, computed with create_graph=True): checks second derivatives."""
    if check_fwd_over_rev:
        raise NotImplementedError("gradgradcheck: pygpu has no forward-mode AD "
                                  "(check_fwd_over_rev)")
    if not check_rev_over_rev:
        raise AssertionError("Expected at least one of check_fwd_over_rev or "
                             "check_rev_over_rev to be True")
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        outs = _differentiable(func(*inputs))
        grad_outputs = tuple(_from_host(rng.uniform(-1.0, 1.0, _real_shape(o)), o)
                             .requires_grad_(True) for o in outs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_out = len(grad_outputs)
    diff_in = {i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad}

    def first_derivative(*args):
        xs = args[:len(args) - n_out]
        gos = args[len(args) - n_out:]
        outs = _differentiable(func(*xs))
        wrt = [x for i, x in enumerate(xs) if i in diff_in]
        gs = _grad(list(outs), wrt, list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_derivative, inputs + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, masked=masked)
