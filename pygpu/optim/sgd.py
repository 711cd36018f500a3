"""optim.SGD with PyTorch's update rule (momentum, dampening, Nesterov, weight decay).

    d = g + weight_decay * p                  (g = -grad with maximize)
    buf = d                                   (first step)
    buf = momentum * buf + (1 - dampening) * d   (later steps)
    d = d + momentum * buf  if nesterov  else  buf
    p -= lr * d
One fused in-place op per parameter, or one multi-tensor node per group (foreach/fused:
_multi_tensor.py)."""
from .._tensor.create import zeros
from ._multi_tensor import Plan, check_flags
from .optimizer import Optimizer


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        for name, v in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay)):
            if not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"SGD: {name} must be a number >= 0, got {v!r}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=bool(maximize), foreach=foreach,
                                      differentiable=bool(differentiable), fused=fused))
        check_flags(foreach, fused, differentiable)

    def _plan(self, p, group, state):
        momentum = float(group["momentum"])
        buf = state.get("momentum_buffer")
        first = buf is None
        if momentum != 0 and first:
            buf = state["momentum_buffer"] = zeros(p.shape, dtype=p.dtype, device=p.device)
        return Plan("sgd", (buf if momentum != 0 else None, None, None),
                    (float(group["lr"]), momentum, float(group["dampening"]),
                     float(group["weight_decay"]), 0.0), 0, bool(group["nesterov"]), first)
