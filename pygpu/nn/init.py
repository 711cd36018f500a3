"""nn.init: PyTorch's in-place initializers, drawing from pygpu's Philox generator on the
tensor's device (pygpu.manual_seed makes them reproducible, and the same on every device).

Each fills `tensor` in place under no_grad and returns it. Fans are PyTorch's: for a
weight (out, in, *k), fan_in = in * prod(k), fan_out = out * prod(k)."""
import math
import numbers

from .. import _C, _tensor_create
from ..autograd import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_"]


def _check(tensor, fn):
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"nn.init.{fn}: expected a pygpu.Tensor, got {type(tensor).__name__}")


def _fill(tensor, values):
    with no_grad():
        tensor.copy_(values)
    return tensor


def _rand(tensor):
    return _tensor_create.rand(*tensor.shape, device=tensor.device, dtype=tensor.dtype)


def _randn(tensor):
    return _tensor_create.randn(*tensor.shape, device=tensor.device, dtype=tensor.dtype)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity, as torch.nn.init.calculate_gain."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    field = 1
    for s in tensor.shape[2:]:
        field *= s
    return tensor.shape[1] * field, tensor.shape[0] * field


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    _check(tensor, "uniform_")
    return _fill(tensor, _rand(tensor) * (b - a) + a)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    _check(tensor, "normal_")
    return _fill(tensor, _randn(tensor) * std + mean)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std) restricted to [a, b]: out-of-range draws are redrawn (vectorized, a few
    rounds; the chance an element is still out after them is below 1e-9 for the default
    bounds), and whatever remains is clamped."""
    _check(tensor, "trunc_normal_")
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    x = _randn(tensor) * std + mean
    for _ in range(8):
        inside = ((x >= a).astype(x.dtype) * (x <= b).astype(x.dtype))
        x = x * inside + (_randn(tensor) * std + mean) * (1.0 - inside)
    return _fill(tensor, _C.minimum(_C.maximum(x, float(a)), float(b)))


def constant_(tensor, val):
    _check(tensor, "constant_")
    return _fill(tensor, _tensor_create.full(tensor.shape, float(val), dtype=tensor.dtype,
                                        device=tensor.device))


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    _check(tensor, "xavier_uniform_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0, generator=None):
    _check(tensor, "xavier_normal_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    _check(tensor, "kaiming_uniform_")
    fan = _fan(tensor, mode)
    if fan == 0:
        return tensor  # PyTorch warns and leaves an empty tensor alone
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    _check(tensor, "kaiming_normal_")
    fan = _fan(tensor, mode)
    if fan == 0:
        return tensor
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))
