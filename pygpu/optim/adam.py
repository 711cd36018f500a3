"""optim.Adam and optim.AdamW with PyTorch's update rules.

Adam (L2 weight decay added to the gradient), AdamW (decoupled: p *= 1 - lr*wd first):
    g = g + weight_decay * p                    (Adam)   |  p = p * (1 - lr * wd)  (AdamW)
    m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g * g
    vmax = max(vmax, v)  and v := vmax           (amsgrad)
    p -= lr / (1 - b1**t) * m / (sqrt(v) / sqrt(1 - b2**t) + eps)
One fused in-place op per parameter (pygpu._ops._train.optim_update_; the op table's PG_OPTIM row adam)."""
from .._tensor.create import zeros
from .._ops._train import optim_update_
from .optimizer import Optimizer, _check_hyper


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        name = type(self).__name__
        b1, b2 = betas
        if not 0.0 <= b1 < 1.0 or not 0.0 <= b2 < 1.0:
            raise ValueError(f"{name}: betas must be in [0, 1), got {betas!r}")
        _check_hyper(name, lr=lr, eps=eps, weight_decay=weight_decay)
        if maximize:
            raise NotImplementedError(f"{name}: maximize=True is not supported; negate the loss")
        super().__init__(params, dict(lr=lr, betas=(float(b1), float(b2)), eps=eps,
                                      weight_decay=weight_decay, amsgrad=bool(amsgrad),
                                      maximize=False))

    def _update(self, p, group, state):
        amsgrad = bool(group.get("amsgrad", False))
        if "step" not in state:
            state["step"] = 0
            state["exp_avg"] = zeros(p.shape, dtype=p.dtype, device=p.device)
            state["exp_avg_sq"] = zeros(p.shape, dtype=p.dtype, device=p.device)
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = zeros(p.shape, dtype=p.dtype, device=p.device)
        state["step"] += 1
        b1, b2 = group["betas"]
        optim_update_("adam", p, p.grad,
                      (state["exp_avg"], state["exp_avg_sq"],
                       state["max_exp_avg_sq"] if amsgrad else None),
                      (group["lr"], b1, b2, group["eps"], group["weight_decay"]),
                      state["step"], amsgrad, self._decoupled)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter); weight_decay defaults to 1e-2."""
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, **kwargs):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **kwargs)
