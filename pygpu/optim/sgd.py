"""optim.SGD with PyTorch's update rule (momentum, dampening, Nesterov, weight decay).

    d = g + weight_decay * p
    buf = d                                   (first step)
    buf = momentum * buf + (1 - dampening) * d   (later steps)
    d = d + momentum * buf  if nesterov  else  buf
    p -= lr * d
One fused in-place op per parameter (pygpu._ops._train.sgd_update_)."""
from .._tensor.create import zeros
from .._ops._train import sgd_update_
from .optimizer import Optimizer


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        for name, v in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay)):
            if not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"SGD: {name} must be a number >= 0, got {v!r}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def _update(self, p, group, state):
        momentum = float(group["momentum"])
        buf = state.get("momentum_buffer")
        first = buf is None
        if momentum != 0 and first:
            buf = state["momentum_buffer"] = zeros(p.shape, dtype=p.dtype, device=p.device)
        sgd_update_(p, p.grad, buf if momentum != 0 else None, float(group["lr"]), momentum,
                       float(group["dampening"]), float(group["weight_decay"]),
                       bool(group["nesterov"]), first)
