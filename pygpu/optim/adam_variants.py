"""optim.NAdam, optim.RAdam, optim.Adamax with PyTorch's update rules, defaults and state
names (step, exp_avg, exp_avg_sq / exp_inf, mu_product), checked step by step against
torch.optim in tests/test_pytorch_optim.py and tests/test_optim_fused.py.

RAdam and Adamax are PG_OPTIM rows of the op table (csrc/core/pg_ops.def): each parameter's
step ONE fused in-place op, or each group's one multi-tensor node (foreach, as torch's:
_multi_tensor.py), their scalars (bias corrections, RAdam's rectification) computed in
csrc/core/pg_ops_train.c from the step count. NAdam is a few in-place tensor ops on the
parameter's device (lerp_, mul_, addcmul_, addcdiv_): its node would need more scalars than
an optimizer node holds (its momentum schedule), and its foreach= is accepted and changes
nothing (the same ops either way)."""
from .._tensor.create import zeros
from ._multi_tensor import Plan, check_flags
from .optimizer import Optimizer, _check_hyper


def _zeros_like(p):
    return zeros(p.shape, dtype=p.dtype, device=p.device)


def _betas(name, betas):
    b1, b2 = betas
    if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
        raise ValueError(f"{name}: invalid beta parameters {betas!r}; each must be in [0, 1)")
    return float(b1), float(b2)


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat): the momentum schedule
    mu_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay))."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_hyper("NAdam", lr=lr, eps=eps, weight_decay=weight_decay,
                     momentum_decay=momentum_decay)
        super().__init__(params, dict(lr=lr, betas=_betas("NAdam", betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=bool(decoupled_weight_decay),
                                      maximize=bool(maximize), foreach=foreach,
                                      capturable=bool(capturable),
                                      differentiable=bool(differentiable)))
        check_flags(foreach, None, differentiable)

    def _update(self, p, group, state):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        wd, md = group["weight_decay"], group["momentum_decay"]
        if "step" not in state:
            state.update(step=0, mu_product=1.0, exp_avg=_zeros_like(p),
                         exp_avg_sq=_zeros_like(p))
        state["step"] += 1
        step = state["step"]
        grad = -p.grad if group.get("maximize") else p.grad
        if wd:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                grad = grad + p * wd
        bias_correction2 = 1 - beta2 ** step
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * md))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
        state["mu_product"] *= mu
        mu_product = state["mu_product"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = (exp_avg_sq / bias_correction2).sqrt() + eps
        p.addcdiv_(grad, denom, value=-lr * (1 - mu) / (1 - mu_product))
        p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1 - mu_product * mu_next))


class RAdam(Optimizer):
    """Adam with the variance of the adaptive rate rectified (Liu et al.): a plain
    momentum step while the approximated SMA length rho_t is at most 5."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_hyper("RAdam", lr=lr, eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=_betas("RAdam", betas), eps=eps,
                                      weight_decay=weight_decay, maximize=bool(maximize),
                                      foreach=foreach, capturable=bool(capturable),
                                      decoupled_weight_decay=bool(decoupled_weight_decay),
                                      differentiable=bool(differentiable)))
        check_flags(foreach, None, differentiable)

    def _plan(self, p, group, state):
        if "step" not in state:
            state.update(step=0, exp_avg=_zeros_like(p), exp_avg_sq=_zeros_like(p))
        state["step"] += 1
        b1, b2 = group["betas"]
        return Plan("radam", (state["exp_avg"], state["exp_avg_sq"], None),
                    (group["lr"], b1, b2, group["eps"], group["weight_decay"]), state["step"],
                    False, bool(group.get("decoupled_weight_decay", False)))


class Adamax(Optimizer):
    """Adam with the infinity norm: exp_inf = max(beta2 * exp_inf, |g| + eps)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_hyper("Adamax", lr=lr, eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=_betas("Adamax", betas), eps=eps,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=bool(maximize),
                                      differentiable=bool(differentiable),
                                      capturable=bool(capturable)))
        check_flags(foreach, None, differentiable)

    def _plan(self, p, group, state):
        if "step" not in state:
            state.update(step=0, exp_avg=_zeros_like(p), exp_inf=_zeros_like(p))
        state["step"] += 1
        b1, b2 = group["betas"]
        return Plan("adamax", (state["exp_avg"], state["exp_inf"], None),
                    (group["lr"], b1, b2, group["eps"], group["weight_decay"]), state["step"],
                    False, False)
