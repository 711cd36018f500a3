"""optim.ASGD, optim.Rprop, optim.Adafactor and optim.Muon, with PyTorch's update rules,
defaults and state names (ASGD: step, eta, mu, ax; Rprop: step, prev, step_size;
Adafactor: step, row_var/col_var or variance; Muon: momentum_buffer), checked step by step
against torch.optim in tests/test_pytorch_optim_more.py.

Each update is a few in-place tensor ops on the parameter's device, as NAdam's are
(adam_variants.py); the scalar schedules are Python floats, as PyTorch's single-tensor path
computes them. Adafactor's factored second moment is the outer product of its row and
column means (row_var * col_var, broadcast, which is PyTorch's row_var @ col_var); Muon
orthogonalizes the update with PyTorch's quintic Newton-Schulz iteration in bfloat16."""
import math

from .. import _C, _dtype
from .._tensor.create import full, zeros
from .optimizer import Optimizer


def _zeros_like(p):
    return zeros(p.shape, dtype=p.dtype, device=p.device)


def _refuse_maximize(name, maximize):
    if maximize:
        raise NotImplementedError(f"{name}: maximize=True is not supported; negate the loss")


def _scalar(x):
    """x held as PyTorch holds an optimizer's scalar state (a tensor of the default dtype:
    float32 unless the default is float64), so the schedule rounds as PyTorch's does."""
    from .. import _defaults
    if _defaults.dtype() is _dtype.float64:
        return float(x)
    import numpy as np
    return float(np.float32(x))


class ASGD(Optimizer):
    """Averaged SGD (Polyak and Juditsky): SGD with a decaying step eta and, from step t0,
    a running average `ax` of the iterates."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _refuse_maximize("ASGD", maximize)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=False, differentiable=False, capturable=False))

    def _update(self, p, group, state):
        if "step" not in state:
            state.update(step=0, eta=_scalar(group["lr"]), mu=1.0, ax=_zeros_like(p))
        state["step"] += 1
        step = state["step"]
        grad = p.grad
        if group["weight_decay"]:
            grad = grad + p * group["weight_decay"]
        eta = state["eta"]
        p.mul_(1 - group["lambd"] * eta)
        p.add_(grad, alpha=-eta)
        if state["mu"] != 1:
            state["ax"].add_((p - state["ax"]) * state["mu"])
        else:
            state["ax"].copy_(p)
        lr = group["lr"]
        state["eta"] = _scalar(lr / ((1 + group["lambd"] * lr * step) ** group["alpha"]))
        state["mu"] = _scalar(1 / max(1, step - group["t0"]))


class Rprop(Optimizer):
    """Resilient backpropagation: each weight's step grows by etaplus while its gradient
    keeps its sign and shrinks by etaminus when it flips (that step then skipped), within
    step_sizes; the update is -sign(grad) * step."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _refuse_maximize("Rprop", maximize)
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      foreach=foreach, maximize=False, differentiable=False,
                                      capturable=False))

    def _update(self, p, group, state):
        if "step" not in state:
            state.update(step=0, prev=_zeros_like(p),
                         step_size=full(tuple(p.shape), float(group["lr"]), dtype=p.dtype,
                                        device=p.device))
        state["step"] += 1
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        grad = p.grad
        agree = grad * state["prev"]
        factor = _C.where(agree > 0, full((), etaplus, dtype=p.dtype, device=p.device),
                          _C.where(agree < 0, full((), etaminus, dtype=p.dtype,
                                                   device=p.device),
                                   full((), 1.0, dtype=p.dtype, device=p.device)))
        state["step_size"].mul_(factor).clamp_(lo, hi)
        flipped = agree < 0
        grad = grad.masked_fill(flipped, 0.0)
        p.addcmul_(grad.sign(), state["step_size"], value=-1)
        state["prev"].copy_(grad)


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern), PyTorch's form: a factored second moment (row and
    column means of g**2 for a matrix, the full one for a vector) with decay
    1 - step**beta2_decay, an update clipped to RMS d, and a relative step size."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        _refuse_maximize("Adafactor", maximize)
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=False))

    def _update(self, p, group, state):
        grad = p.grad
        if "step" not in state:
            state["step"] = 0
            if grad.ndim > 1:
                row = list(grad.shape)
                row[-1] = 1
                col = list(grad.shape)
                col[-2] = 1
                state["row_var"] = zeros(tuple(row), dtype=grad.dtype, device=grad.device)
                state["col_var"] = zeros(tuple(col), dtype=grad.dtype, device=grad.device)
            else:
                state["variance"] = _zeros_like(grad)
        lr, d, wd = group["lr"], group["d"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            from .._tensor.compat import finfo
            eps1 = finfo(p.dtype).eps
        state["step"] += 1
        step = float(state["step"])
        one_minus_beta2 = step ** group["beta2_decay"]
        rho = min(lr, 1 / (step ** 0.5))
        alpha = max(eps2, float(p.norm(2).item()) / (p.numel() ** 0.5)) * rho
        if wd:
            p.mul_(1 - lr * wd)
        if grad.ndim > 1:
            row_mean = (grad * grad).sum(-1, keepdim=True) / grad.shape[-1]
            state["row_var"].lerp_(row_mean, one_minus_beta2)
            col_mean = (grad * grad).sum(-2, keepdim=True) / grad.shape[-2]
            state["col_var"].lerp_(col_mean, one_minus_beta2)
            estimate = state["row_var"] * state["col_var"]
            estimate = estimate / state["row_var"].mean(-2, keepdim=True).clamp(min=eps1)
        else:
            state["variance"].lerp_(grad * grad, one_minus_beta2)
            estimate = state["variance"].clone()
        update = estimate.clamp(min=eps1 * eps1).rsqrt() * grad
        denom = max(1.0, float(update.norm(2).item()) / ((update.numel() ** 0.5) * d))
        p.add_(update, alpha=-alpha / denom)


# Muon's Newton-Schulz coefficients, step count and epsilon (PyTorch's defaults)
_NS = (3.4445, -4.7750, 2.0315)
_NS_STEPS = 5
_EPS = 1e-7


def _orthogonalize(grad, coefficients, steps, eps):
    """U S' V^T of grad's SVD with S' about 1 (the quintic Newton-Schulz iteration, in
    bfloat16, on the wider side's transpose), as PyTorch's _zeropower_via_newtonschulz."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    a, b, c = coefficients
    x = grad.astype(_dtype.bfloat16)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.t()
    x = x / x.norm().clamp(min=eps)
    from .._tensor.products import addmm
    for _ in range(steps):
        gram = x @ x.t()
        gram_update = addmm(gram, gram, gram, beta=b, alpha=c)
        x = addmm(x, gram_update, x, beta=a)
    return x.t() if tall else x


def _adjusted_lr(lr, adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Momentum whose update is orthogonalized (Jordan et al.): for 2-d parameters."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=_NS, eps=_EPS, ns_steps=_NS_STEPS, adjust_lr_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=tuple(ns_coefficients),
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {tuple(p.shape)}")

    def _update(self, p, group, state):
        grad = p.grad
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = _zeros_like(grad)
        buf = state["momentum_buffer"]
        buf.lerp_(grad, 1 - group["momentum"])
        update = grad.lerp(buf, group["momentum"]) if group["nesterov"] else buf
        update = _orthogonalize(update, group["ns_coefficients"], group["ns_steps"],
                                group["eps"])
        p.mul_(1 - group["lr"] * group["weight_decay"])
        p.add_(update.astype(p.dtype), alpha=-_adjusted_lr(group["lr"], group["adjust_lr_fn"],
                                                           tuple(p.shape)))
