"""optim.Adam with PyTorch's update rule (L2 weight decay added to the gradient).

    g = g + weight_decay * p
    m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g * g
    p -= lr / (1 - b1**t) * m / (sqrt(v) / sqrt(1 - b2**t) + eps)
One fused in-place op per parameter (pygpu._C._adam_update)."""
from .. import _C
from .optimizer import Optimizer


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        b1, b2 = betas
        if not 0.0 <= b1 < 1.0 or not 0.0 <= b2 < 1.0:
            raise ValueError(f"Adam: betas must be in [0, 1), got {betas!r}")
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError("Adam: lr, eps and weight_decay must be >= 0")
        super().__init__(params, dict(lr=lr, betas=(float(b1), float(b2)), eps=eps,
                                      weight_decay=weight_decay))

    def _update(self, p, group, state):
        if "step" not in state:
            state["step"] = 0
            state["exp_avg"] = _C._full(p.shape, 0, p.dtype, p.device)
            state["exp_avg_sq"] = _C._full(p.shape, 0, p.dtype, p.device)
        state["step"] += 1
        b1, b2 = group["betas"]
        _C._adam_update(p, p.grad, state["exp_avg"], state["exp_avg_sq"], float(group["lr"]),
                        b1, b2, float(group["eps"]), float(group["weight_decay"]),
                        state["step"])
