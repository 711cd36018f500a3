"""torch.optim.swa_utils: stochastic weight averaging and exponential moving averages of a
model's weights (AveragedModel, the avg_fn factories, update_bn) and the SWA learning-rate
schedule (SWALR), as PyTorch has them: the same update formulas (an EMA is lerp(ema, p,
1 - decay); SWA's running mean is lerp(avg, p, 1 / (n + 1))), the same buffer handling and
state_dict keys (module.*, n_averaged), so an averaged model's checkpoint crosses both ways."""
import copy
import itertools
import math

from .. import _C
from .._tensor import create as _create
from .._dtype import int64
from ..autograd import no_grad
from ..nn.module import Module
from ..nn.normalization import _BatchNorm
from .lr_scheduler import LRScheduler, _per_group

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]

Tensor = _C.Tensor


def _floating(t):
    return t.dtype.is_floating_point or t.dtype.is_complex


def get_ema_multi_avg_fn(decay=0.999):
    """In place, each averaged tensor moves (1 - decay) of the way to the model's."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                if _floating(p_ema):
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """In place, the running mean of the model's tensors over n_averaged + 1 updates."""
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if _floating(p_avg):
                    n = num_averaged.item() if isinstance(num_averaged, Tensor) else num_averaged
                    p_avg.lerp_(p_model, 1 / (n + 1))
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """decay * ema + (1 - decay) * current, per tensor (a new tensor)."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """avg + (current - avg) / (n + 1), per tensor (a new tensor)."""
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and, with use_buffers, buffers) are the average
    of the model's over update_parameters() calls: SWA's mean by default, or avg_fn /
    multi_avg_fn (an EMA from get_ema_multi_avg_fn)."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _create.tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        ours = (itertools.chain(self.module.parameters(), self.module.buffers())
                if self.use_buffers else self.parameters())
        theirs = (itertools.chain(model.parameters(), model.buffers())
                  if self.use_buffers else model.parameters())
        ours_d, theirs_d = [], []
        first = int(self.n_averaged.item()) == 0
        for p_avg, p_model in zip(ours, theirs):
            p_model_ = p_model.detach().to(p_avg.device)
            ours_d.append(p_avg.detach())
            theirs_d.append(p_model_)
            if first:
                with no_grad():
                    p_avg.detach().copy_(p_model_)
        if not first:
            if self.avg_fn is None:
                (self.multi_avg_fn or get_swa_multi_avg_fn())(ours_d, theirs_d,
                                                             self.n_averaged)
            else:
                for p_avg, p_model in zip(ours_d, theirs_d):
                    n = self.n_averaged.to(p_avg.device)
                    with no_grad():
                        p_avg.copy_(self.avg_fn(p_avg, p_model, n))
        if not self.use_buffers:
            with no_grad():
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        with no_grad():
            self.n_averaged += 1


def update_bn(loader, model, device=None):
    """Recompute the batch norms' running statistics over one pass of `loader` (their
    cumulative average: momentum None), as after SWA."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for inp in loader:
            if isinstance(inp, (list, tuple)):
                inp = inp[0]
            if device is not None:
                inp = inp.to(device)
            model(inp)
    for module in momenta:
        module.momentum = momenta[module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to its swa_lr over anneal_epochs ("cos" or "linear"), then
    hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
                    for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = (self._cosine_anneal if anneal_strategy == "cos"
                            else self._linear_anneal)

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)


