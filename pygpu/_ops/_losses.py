"""The losses that are compositions of tensor ops, written once for pygpu.mse_loss and
nn.functional's (which adds the rest of the losses on top, pygpu/_ops/_nn_losses.py), with
PyTorch's reduction arguments. No fused node: autograd records the ops."""
from .. import _C
from ..amp.autocast_mode import cast_inputs as _autocast
from ._common import want_tensor

_REDUCTIONS = ("none", "mean", "sum")


def reduction_of(fn, reduction, size_average=None, reduce=None):
    """The reduction a loss applies, from PyTorch's reduction= or its deprecated
    size_average/reduce pair."""
    if size_average is not None or reduce is not None:
        reduce = True if reduce is None else reduce
        size_average = True if size_average is None else size_average
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{fn}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    return reduction


def reduced(x, reduction):
    if reduction == "mean":
        return x.mean()
    if reduction == "sum":
        return x.sum()
    return x


def check_target(input, target, fn):
    want_tensor(input, fn)
    want_tensor(target, fn, "target")
    if target.device != input.device:
        raise _C.DeviceMismatchError(f"{fn}: input is on {input.device} but target is on "
                                     f"{target.device}; move the target with .to(device)")


def check_pair(input, target, fn):
    check_target(input, target, fn)
    if input.shape != target.shape:
        raise _C.ShapeError(f"{fn}: input has shape {input.shape} but target has {target.shape}; "
                         "they must match")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2, reduced ("mean", "sum" or "none"). Under pygpu.autocast: float32.
    weight: accepted, as PyTorch's signature has it, and not applied (as before)."""
    reduction = reduction_of("mse_loss", reduction, size_average, reduce)
    check_pair(input, target, "mse_loss")
    input, target = _autocast("mse_loss", input, target)
    d = input - target
    return reduced(d * d, reduction)
