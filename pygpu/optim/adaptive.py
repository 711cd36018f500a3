"""optim.RMSprop, optim.Adagrad, optim.Adadelta with PyTorch's update rules.

Each parameter's step is ONE fused in-place op on its device, or each group's one
multi-tensor node (foreach/fused: _multi_tensor.py; the rules are written out in
csrc/backends/cpu/cpu_train.c and csrc/backends/cuda/kernels/train.cu). State tensors carry
PyTorch's names, so state_dict() reads the same. maximize steps along -grad."""
from .._tensor.create import zeros
from ._multi_tensor import Plan, check_flags
from .optimizer import Optimizer, _check_hyper


def _zeros_like(p, value=0.0):
    z = zeros(p.shape, dtype=p.dtype, device=p.device)
    if value:
        z[...] = value
    return z


class RMSprop(Optimizer):
    """g += wd*p; sq = alpha*sq + (1-alpha)*g^2; avg = sqrt(sq [- ga^2 if centered]) + eps;
    buf = momentum*buf + g/avg, p -= lr*buf (momentum > 0), else p -= lr*g/avg."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, *, foreach=None, maximize=False, differentiable=False,
                 capturable=False):
        _check_hyper("RMSprop", lr=lr, eps=eps, weight_decay=weight_decay, momentum=momentum,
                     alpha=alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=bool(centered),
                                      capturable=bool(capturable), foreach=foreach,
                                      maximize=bool(maximize),
                                      differentiable=bool(differentiable)))
        check_flags(foreach, None, differentiable)

    def _plan(self, p, group, state):
        momentum, centered = float(group["momentum"]), bool(group["centered"])
        if "step" not in state:
            state["step"] = 0
            state["square_avg"] = _zeros_like(p)
        if momentum > 0 and "momentum_buffer" not in state:
            state["momentum_buffer"] = _zeros_like(p)
        if centered and "grad_avg" not in state:
            state["grad_avg"] = _zeros_like(p)
        state["step"] += 1
        return Plan("rmsprop",
                    (state["square_avg"], state.get("momentum_buffer") if momentum > 0 else None,
                     state.get("grad_avg") if centered else None),
                    (group["lr"], group["alpha"], group["eps"], group["weight_decay"], momentum),
                    state["step"], centered, False)


class Adagrad(Optimizer):
    """clr = lr / (1 + (t-1)*lr_decay); g += wd*p; sum += g^2; p -= clr * g / (sqrt(sum) + eps)."""

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0.0, eps=1e-10, *, foreach=None, maximize=False,
                 differentiable=False, fused=None):
        _check_hyper("Adagrad", lr=lr, eps=eps, weight_decay=weight_decay, lr_decay=lr_decay,
                     initial_accumulator_value=initial_accumulator_value)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=bool(maximize),
                                      differentiable=bool(differentiable), fused=fused))
        check_flags(foreach, fused, differentiable)
        # PyTorch makes Adagrad's state at construction (the accumulator has a start value)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[id(p)] = {"step": 0, "sum": _zeros_like(
                    p, float(group["initial_accumulator_value"]))}

    def _plan(self, p, group, state):
        if "sum" not in state:
            state["step"] = 0
            state["sum"] = _zeros_like(p, float(group["initial_accumulator_value"]))
        elif state["sum"].dtype != p.dtype:  # a half parameter's float32 master (_update_half)
            state["sum"] = state["sum"].astype(p.dtype)
        state["step"] += 1
        return Plan("adagrad", (state["sum"], None, None),
                    (group["lr"], group["lr_decay"], group["weight_decay"], group["eps"], 0.0),
                    state["step"], False, False)


class Adadelta(Optimizer):
    """g += wd*p; sq = rho*sq + (1-rho)*g^2; d = sqrt(acc + eps)/sqrt(sq + eps) * g;
    acc = rho*acc + (1-rho)*d^2; p -= lr*d."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, *, foreach=None,
                 capturable=False, maximize=False, differentiable=False):
        _check_hyper("Adadelta", lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Adadelta: rho must be in [0, 1], got {rho!r}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, capturable=bool(capturable),
                                      maximize=bool(maximize),
                                      differentiable=bool(differentiable)))
        check_flags(foreach, None, differentiable)

    def _plan(self, p, group, state):
        if "step" not in state:
            state["step"] = 0
            state["square_avg"] = _zeros_like(p)
            state["acc_delta"] = _zeros_like(p)
        state["step"] += 1
        return Plan("adadelta", (state["square_avg"], state["acc_delta"], None),
                    (group["lr"], group["rho"], group["eps"], group["weight_decay"], 0.0),
                    state["step"], False, False)
