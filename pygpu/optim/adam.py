"""optim.Adam and optim.AdamW with PyTorch's update rules.

Adam (L2 weight decay added to the gradient), AdamW (decoupled: p *= 1 - lr*wd first; Adam
with decoupled_weight_decay=True is the same):
    g = g + weight_decay * p                    (Adam)   |  p = p * (1 - lr * wd)  (AdamW)
    m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g * g
    vmax = max(vmax, v)  and v := vmax           (amsgrad)
    p -= lr / (1 - b1**t) * m / (sqrt(v) / sqrt(1 - b2**t) + eps)
(g = -grad with maximize.) One fused in-place op per parameter (the op table's PG_OPTIM row
adam), or one multi-tensor node per group (foreach/fused: _multi_tensor.py)."""
from .._tensor.create import zeros
from ._multi_tensor import Plan, check_flags
from .optimizer import Optimizer, _check_hyper


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        name = type(self).__name__
        b1, b2 = betas
        if not 0.0 <= b1 < 1.0 or not 0.0 <= b2 < 1.0:
            raise ValueError(f"{name}: betas must be in [0, 1), got {betas!r}")
        _check_hyper(name, lr=lr, eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=(float(b1), float(b2)), eps=eps,
                                      weight_decay=weight_decay, amsgrad=bool(amsgrad),
                                      maximize=bool(maximize), foreach=foreach,
                                      capturable=bool(capturable),
                                      differentiable=bool(differentiable), fused=fused,
                                      decoupled_weight_decay=bool(decoupled_weight_decay)))
        check_flags(foreach, fused, differentiable)

    def _plan(self, p, group, state):
        amsgrad = bool(group.get("amsgrad", False))
        if "step" not in state:
            state["step"] = 0
            state["exp_avg"] = zeros(p.shape, dtype=p.dtype, device=p.device)
            state["exp_avg_sq"] = zeros(p.shape, dtype=p.dtype, device=p.device)
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = zeros(p.shape, dtype=p.dtype, device=p.device)
        state["step"] += 1
        b1, b2 = group["betas"]
        return Plan("adam", (state["exp_avg"], state["exp_avg_sq"],
                             state["max_exp_avg_sq"] if amsgrad else None),
                    (group["lr"], b1, b2, group["eps"], group["weight_decay"]), state["step"],
                    amsgrad, bool(group.get("decoupled_weight_decay", False)))


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter); weight_decay defaults to 1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        for group in self.param_groups:  # as PyTorch's AdamW: always decoupled
            group["decoupled_weight_decay"] = True
