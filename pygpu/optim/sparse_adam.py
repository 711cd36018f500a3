"""optim.SparseAdam: Adam that updates only the rows a gradient touches (the "lazy" Adam
for embedding tables), PyTorch's update rule.

PyTorch feeds it sparse gradients (nn.Embedding(sparse=True)) and updates the moments and
the parameter at the gradient's indices only. pygpu's gradients are dense tensors (its
Embedding(sparse=True) gives a dense gradient with zero rows where no index looked), so
the rows SparseAdam updates are the rows (along dim 0) where the gradient has a nonzero
element: the same update as PyTorch's, except for a looked-up row whose gradient is
exactly zero everywhere, whose moments PyTorch would still decay. A pygpu.sparse
SparseTensor gradient cannot be stored in Tensor.grad; step() takes the dense one."""
import math

from .. import _C
from .._tensor.create import zeros
from .optimizer import Optimizer, _check_hyper


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_hyper("SparseAdam", lr=lr, eps=eps)
        b1, b2 = betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"Invalid beta parameters: {betas}")
        if maximize:
            raise NotImplementedError("SparseAdam: maximize=True is not supported; negate the loss")
        super().__init__(params, dict(lr=lr, betas=(float(b1), float(b2)), eps=eps,
                                      maximize=False))

    def _update(self, p, group, state):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        if "step" not in state:
            state.update(step=0, exp_avg=zeros(p.shape, dtype=p.dtype, device=p.device),
                         exp_avg_sq=zeros(p.shape, dtype=p.dtype, device=p.device))
        state["step"] += 1
        g = p.grad
        g2 = g.reshape(g.shape[0], -1) if g.ndim > 1 else g.reshape(-1, 1)
        rows = (g2 != 0).any(1).nonzero().reshape(-1)  # the rows the gradient touches
        if rows.numel() == 0:
            return
        shape = (rows.shape[0],) + tuple(p.shape[1:])
        gv = g.index_select(0, rows)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        old_avg, old_sq = exp_avg.index_select(0, rows), exp_avg_sq.index_select(0, rows)
        avg_update = (gv - old_avg) * (1 - beta1)
        sq_update = (gv * gv - old_sq) * (1 - beta2)
        exp_avg.index_add_(0, rows, avg_update)
        exp_avg_sq.index_add_(0, rows, sq_update)
        numer = avg_update + old_avg
        denom = (sq_update + old_sq).sqrt() + eps
        bias_correction1 = 1 - beta1 ** state["step"]
        bias_correction2 = 1 - beta2 ** state["step"]
        step_size = lr * math.sqrt(bias_correction2) / bias_correction1
        p.index_add_(0, rows, (numer / denom * -step_size).reshape(shape))
