"""LayerNorm, BatchNorm1d/2d/3d (with running statistics, train/eval), GroupNorm,
InstanceNorm1d/2d and LocalResponseNorm, over nn.functional."""
import numbers

from .._tensor import create as _tensor_create
from ..autograd import no_grad
from .._dtype import int64
from . import functional as F
from .module import Module
from .parameter import Parameter


class LayerNorm(Module):
    """Normalize over the last len(normalized_shape) axes; weight (ones) and bias (zeros)
    of normalized_shape when elementwise_affine."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (int(normalized_shape),)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_tensor_create.ones(self.normalized_shape, device=device,
                                                   dtype=dtype))
            if bias:
                self.bias = Parameter(_tensor_create.zeros(self.normalized_shape, device=device,
                                                      dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class _BatchNorm(Module):
    """Per-channel normalization of (N, C, ...): batch statistics in training
    (running_mean/running_var updated with momentum; momentum=None: a cumulative average
    over num_batches_tracked), running statistics in eval; with track_running_stats=False
    always the batch's."""
    _dims = ()  # the input ranks the subclass takes

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        C = self.num_features
        if affine:
            self.weight = Parameter(_tensor_create.ones(C, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(_tensor_create.zeros(C, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _tensor_create.zeros(C, device=device, dtype=dtype))
            self.register_buffer("running_var", _tensor_create.ones(C, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 _tensor_create.zeros((), device=device, dtype=int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    _version = 2  # PyTorch's: checkpoints before version 2 have no num_batches_tracked

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict:
            nbt = self.num_batches_tracked
            state_dict[key] = (nbt if nbt is not None and nbt.device.type != "meta"
                               else _tensor_create.zeros((), dtype=int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.copy_(self.running_mean * 0.0)
                self.running_var.copy_(self.running_var * 0.0 + 1.0)
                self.num_batches_tracked.copy_(self.num_batches_tracked * 0)

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            with no_grad():
                self.weight.copy_(self.weight * 0.0 + 1.0)
                if self.bias is not None:
                    self.bias.copy_(self.bias * 0.0)

    def _check_input_dim(self, x):
        if x.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {x.ndim}D input)")

    def forward(self, x, activation=None):
        """activation: None, "relu" or "relu6" (nn.Sequential fuses a ReLU or ReLU6 after
        it)."""
        self._check_input_dim(x)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or not self.track_running_stats
        keep = not use_batch or self.training
        return F.batch_norm(x, self.running_mean if keep else None,
                            self.running_var if keep else None,
                            self.weight, self.bias, use_batch, momentum, self.eps,
                            _relu=activation if activation in ("relu", "relu6") else False)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L)."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) per channel C."""
    _dims = (4,)
    _fold_role = "batch_norm"  # nn/_fold.py: this class itself may be folded into a conv


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) per channel C."""
    _dims = (5,)


class GroupNorm(Module):
    """Normalization over groups of num_channels/num_groups channels, weight and bias per
    channel (ones and zeros) when affine."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, \
            eps, affine
        if affine:
            self.weight = Parameter(_tensor_create.ones(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(_tensor_create.zeros(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_BatchNorm):
    """Per-(sample, channel) normalization; affine and track_running_stats off by default,
    as PyTorch's."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias)

    def _check_input_dim(self, x):
        if x.ndim not in (min(self._dims) - 1,) + self._dims:
            raise ValueError(f"expected {min(self._dims) - 1}D or {min(self._dims)}D input (got "
                             f"{x.ndim}D input)")

    def forward(self, x, activation=None):
        if x.ndim == min(self._dims) - 1:  # unbatched
            return self.forward(x.reshape(1, *x.shape)).reshape(*x.shape)
        self._check_input_dim(x)
        use_input = self.training or not self.track_running_stats
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              use_input, 0.1 if self.momentum is None else self.momentum,
                              self.eps)
        return out.relu() if activation == "relu" else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L)."""
    _dims = (3,)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W)."""
    _dims = (4,)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W)."""
    _dims = (5,)


class LocalResponseNorm(Module):
    """Normalization by the squares of `size` neighbouring channels (AlexNet's)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _cross_map_windows(channels, size):
    """The (C, C) 0/1 matrix of which channels' squares each channel's scale sums, as the
    legacy CrossMapLRN2d slides its window (its first channels see a window that grows, and
    it drops a channel only once c > pre_pad: Lua torch's, kept by PyTorch)."""
    import numpy as np
    pre_pad = int((size - 1) / 2 + 1)
    rows = np.zeros((channels, channels))
    rows[0, :min(pre_pad, channels)] = 1
    for c in range(1, channels):
        rows[c] = rows[c - 1]
        if c < channels - pre_pad + 1:
            rows[c, c + pre_pad - 1] += 1
        if c > pre_pad:
            rows[c, c - pre_pad] -= 1
    return rows


class CrossMapLRN2d(LocalResponseNorm):
    """The legacy cross-channel LRN of (N, C, H, W): x * (k + alpha / size * the sum of the
    squares in each channel's window) ** -beta, with the legacy window
    (_cross_map_windows); differentiable through the composition."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__(size, alpha, beta, k)

    def forward(self, x):
        if x.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {x.ndim}D instead.")
        windows = _tensor_create.tensor(_cross_map_windows(x.shape[1], self.size),
                                        dtype=x.dtype, device=x.device)
        n, c, h, w = x.shape
        squares = (x * x).permute(0, 2, 3, 1).reshape(-1, c)  # (N*H*W, C)
        sums = (squares @ windows.t()).reshape(n, h, w, c).permute(0, 3, 1, 2)
        return x * (sums * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class RMSNorm(Module):
    """x / sqrt(mean(x**2) + eps) over the trailing normalized_shape axes, times a learned
    weight (elementwise_affine); eps None: the dtype's machine epsilon (F.rms_norm)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_tensor_create.ones(self.normalized_shape, dtype=dtype,
                                                        device=device))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.weight is not None:
            with no_grad():
                self.weight.fill_(1.0)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, " \
               f"elementwise_affine={self.elementwise_affine}"
