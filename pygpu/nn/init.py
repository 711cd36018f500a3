"""nn.init: PyTorch's in-place initializers, drawing from pygpu's Philox generator on the
tensor's device (pygpu.manual_seed makes them reproducible, and the same on every device),
or from generator= (a torch.Generator: pygpu/_random.py). The spellings without the
underscore (uniform, normal, ...) are PyTorch's deprecated ones, with its FutureWarning.

Each fills `tensor` in place under no_grad and returns it. Fans are PyTorch's: for a
weight (out, in, *k), fan_in = in * prod(k), fan_out = out * prod(k)."""
import math
import numbers
import warnings

from .. import _C, _dtype
from .._tensor import create as _tensor_create
from ..autograd import no_grad

Tensor = _C.Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant", "eye",
           "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
           "orthogonal", "sparse"]


def _check(tensor, fn):
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"nn.init.{fn}: expected a pygpu.Tensor, got {type(tensor).__name__}")


def _fill(tensor, values):
    with no_grad():
        tensor.copy_(values)
    return tensor


def _nonempty(tensor):
    """False (with PyTorch's warning) for a tensor with no elements: nothing to draw."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return False
    return True


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
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    _check(tensor, "normal_")
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std) restricted to [a, b], exactly, by PyTorch's rejection: normal draws
    redrawn where outside when [a, b] holds more than 30% of the mass, else uniform
    candidates on [a, b] accepted with the normal's density ratio. Each round draws on the
    device and reads back one flag."""
    _check(tensor, "trunc_normal_")
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    with no_grad():
        if norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3:
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                outside = (result < a) | (result > b)
                if not bool(outside.any()):
                    break
                fresh = _tensor_create.empty_like(result).normal_(mean, std, generator=generator)
                result = _C.where(outside, fresh, result)
        else:
            log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2

            def log_ratio(x):
                return ((x - mean) / std) ** 2 * -0.5 - log_peak

            def rejected(x):
                u = _tensor_create.empty_like(x).uniform_(generator=generator)
                return u.log() > log_ratio(x)

            result = _tensor_create.empty_like(tensor).uniform_(a, b, generator=generator)
            pending = rejected(result)
            while bool(pending.any()):
                cand = _tensor_create.empty_like(tensor).uniform_(a, b, generator=generator)
                result = _C.where(pending, cand, result)
                pending = pending & rejected(cand)
        if result is not tensor:
            tensor.copy_(result)
    return tensor


def constant_(tensor, val):
    _check(tensor, "constant_")
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    """The identity matrix in a 2-d tensor (as many ones as the shorter side)."""
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, _tensor_create.eye(*tensor.shape, dtype=tensor.dtype,
                                            device=tensor.device))


def dirac_(tensor, groups=1):
    """A {3, 4, 5}-d convolution weight that passes its input channels through (per group)."""
    _check(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    n = min(per_group, sizes[1])
    centre = tuple(k // 2 for k in sizes[2:])
    with no_grad():
        tensor.zero_()
        if n:
            outs = [g * per_group + d for g in range(groups) for d in range(n)]
            ins = [d for _ in range(groups) for d in range(n)]
            index = (outs, ins) + tuple([c] * len(outs) for c in centre)
            tensor[index] = 1
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    _check(tensor, "xavier_uniform_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    _check(tensor, "xavier_normal_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    _check(tensor, "kaiming_uniform_")
    if not _nonempty(tensor):
        return tensor
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    _check(tensor, "kaiming_normal_")
    if not _nonempty(tensor):
        return tensor
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode)),
                   generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix (Saxe et al. 2013) in the tensor seen as rows x the rest:
    the Q of the QR factorization of a normal matrix, its columns' signs fixed by R's
    diagonal so that the distribution is uniform (Haar), times gain."""
    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    from .. import linalg
    with no_grad():
        flat = _tensor_create.empty(rows, cols, dtype=tensor.dtype, device=tensor.device)
        flat.normal_(0, 1, generator=generator)
        if rows < cols:
            flat = flat.t()
        q, r = linalg.qr(flat)
        q = q * r.diagonal().sign()
        if rows < cols:
            q = q.t()
        tensor.view_as(q).copy_(q * gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-d tensor of N(0, std) values with ceil(sparsity * rows) zeros in each column, at
    random rows (a random ranking of each column's rows: one draw, no loop)."""
    _check(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        if num_zeros:
            keys = _tensor_create.rand(rows, cols, dtype=_dtype.float64, device=tensor.device,
                                       generator=generator)
            rank = keys.argsort(0).argsort(0)  # each element's place in its column's order
            tensor.masked_fill_(rank < num_zeros, 0)
    return tensor


def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)
    deprecated_init.__name__ = old_name
    deprecated_init.__doc__ = f"Deprecated spelling of nn.init.{new_name}."
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
