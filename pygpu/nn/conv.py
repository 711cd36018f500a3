"""Conv1d, Conv2d, ConvTranspose1d and ConvTranspose2d with PyTorch's arguments, checks
and initialisation (weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in the
weight's size(1) times its kernel's elements: kaiming_uniform_ with a=sqrt(5), drawn from
pygpu's Philox generator on the layer's device), over nn.functional.

padding_mode other than 'zeros' pads with F.pad (reflect, replicate, circular) and then
convolves without padding, as PyTorch's modules do."""
import math
import numbers

from . import _conv as F
from . import _conv3d as _F3
from .layers import _uniform
from .module import Module
from .parameter import Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(v, n):
    if isinstance(v, numbers.Integral):
        return (int(v),) * n
    v = tuple(int(e) for e in v)
    return v * n if len(v) == 1 else v


class _ConvNd(Module):
    _n = 2
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None, output_padding=0):
        super().__init__()
        n = self._n
        if not isinstance(groups, numbers.Integral) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        if self.transposed and padding_mode != "zeros":
            raise ValueError(f"Only \"zeros\" padding mode is supported for "
                             f"{type(self).__name__}")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.output_padding = _ntuple(output_padding, n)
        self.groups, self.padding_mode = int(groups), padding_mode
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups) + self.kernel_size
        else:
            shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        fan_in = shape[1] * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = Parameter(_uniform(shape, bound, device, dtype))
        if bias:
            self.bias = Parameter(_uniform((self.out_channels,), bound, device, dtype))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        """weight and bias drawn again from U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        from . import init
        fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def _mode_pad(self):
        """F.pad's (left, right, ...) for a non-zeros padding_mode, last axis first."""
        if isinstance(self.padding, str):  # 'same' / 'valid'
            out = []
            for k, d in zip(reversed(self.kernel_size), reversed(self.dilation)):
                total = d * (k - 1) if self.padding == "same" else 0
                out += [total // 2, total - total // 2]
            return out
        return [p for p in reversed(self.padding) for _ in range(2)]

    def _conv(self, x, weight, bias):
        fn = {1: F.conv1d, 2: F.conv2d, 3: _F3.conv3d}[self._n]
        if self.padding_mode != "zeros":
            mode = "constant" if self.padding_mode == "zeros" else self.padding_mode
            return fn(F.pad(x, self._mode_pad(), mode=mode), weight, bias, self.stride, 0,
                      self.dilation, self.groups)
        return fn(x, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv(input, self.weight, self.bias)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-d convolution over (N, C_in, L): weight (C_out, C_in/groups, k)."""
    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)


class Conv2d(_ConvNd):
    """2-d convolution over (N, C_in, H, W): weight (C_out, C_in/groups, kH, kW)."""
    _n = 2
    _fold_role = "conv"  # nn/_fold.py: this class itself, not a subclass, may be folded

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of "
                             f"ints, not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def forward(self, input, output_size=None):
        if self._n == 3:
            return _F3.conv_transpose3d(input, self.weight, self.bias, self.stride,
                                        self.padding, self._output_padding3(input, output_size),
                                        self.groups, self.dilation)
        fn = F._conv_transposend
        name = "conv_transpose1d" if self._n == 1 else "conv_transpose2d"
        return fn(input, self.weight, self.bias, self.stride, self.padding,
                  self.output_padding, self.groups, self.dilation, self._n, name, output_size)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution: weight (C_in, C_out/groups, k)."""
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution: weight (C_in, C_out/groups, kH, kW)."""
    _n = 2


class Conv3d(_ConvNd):
    """3-d convolution over (N, C_in, D, H, W): weight (C_out, C_in/groups, kD, kH, kW)."""
    _n = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution: weight (C_in, C_out/groups, kD, kH, kW)."""
    _n = 3

    def _output_padding3(self, input, output_size):
        """output_padding, or the one that makes the output output_size (PyTorch's
        _output_padding: the last three sizes, each within stride of the default)."""
        if output_size is None:
            return self.output_padding
        size = list(output_size)[-3:]
        if len(size) != 3:
            raise ValueError(f"ConvTranspose3d: output_size must have 3 or 5 elements (got "
                             f"{len(list(output_size))})")
        pad = []
        for i in range(3):
            n = input.shape[input.ndim - 3 + i]
            least = ((n - 1) * self.stride[i] - 2 * self.padding[i]
                     + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            if not least <= size[i] < least + self.stride[i]:
                raise ValueError(f"requested an output size of {size}, but valid sizes range "
                                 f"from {least} to {least + self.stride[i] - 1} (for an input "
                                 f"of {list(input.shape[2:])})")
            pad.append(size[i] - least)
        return tuple(pad)
