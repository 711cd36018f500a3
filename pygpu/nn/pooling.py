"""The pooling modules with PyTorch's arguments and reprs, over nn.functional:
MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d,
MaxUnpool1d/2d/3d, LPPool1d/2d/3d."""
from . import _conv as F
from . import _conv3d as _F3
from .module import Module


class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding,
                              self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over windows of (N, C, L); return_indices gives each maximum's position too."""
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max over windows of (N, C, H, W); return_indices gives each maximum's flat position
    in its plane too (what MaxUnpool2d takes)."""
    _fn = staticmethod(F.max_pool2d)


class AvgPool1d(Module):
    """Average over windows of (N, C, L)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, \
            count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Average over windows of (N, C, H, W); count_include_pad counts the zero padding in
    the divisor, divisor_override replaces it."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveNd(Module):
    _fn = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveNd):
    """Average over output_size windows spanning (N, C, L)."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveNd):
    """Average over output_size windows spanning (N, C, H, W) (1: global average pooling)."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptiveNd):
    """Max over output_size windows spanning (N, C, L)."""

    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveNd):
    """Max over output_size windows spanning (N, C, H, W)."""

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of MaxPool1d: each value put back at its index, zeros elsewhere."""
    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of MaxPool2d: each value put back at its index, zeros elsewhere."""
    _fn = staticmethod(F.max_unpool2d)


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, x):
        from . import _lp_pool
        return getattr(_lp_pool, self._fn)(x, float(self.norm_type), self.kernel_size,
                                           self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """The power-average pool of (N, C, L): (sum of x**p over each window) ** (1/p)."""
    _fn = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    """The power-average pool of (N, C, H, W)."""
    _fn = "lp_pool2d"


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        from ._lp_pool import channel_shuffle
        return channel_shuffle(x, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


# ---- the 3-d pools (nn.functional's over pygpu/nn/_conv3d.py) ------------------------------

class MaxPool3d(_MaxPoolNd):
    """Max over windows of (N, C, D, H, W); return_indices gives each maximum's flat
    position in its volume too (what MaxUnpool3d takes)."""
    _fn = staticmethod(_F3.max_pool3d)


class AvgPool3d(AvgPool2d):
    """Average over windows of (N, C, D, H, W); count_include_pad and divisor_override as
    AvgPool2d's."""

    def forward(self, input):
        return _F3.avg_pool3d(input, self.kernel_size, self.stride, self.padding,
                              self.ceil_mode, self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_AdaptiveNd):
    """Average over output_size windows spanning (N, C, D, H, W)."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return _F3.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveNd):
    """Max over output_size windows spanning (N, C, D, H, W)."""

    def forward(self, input):
        return _F3.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of MaxPool3d: each value put back at its index, zeros elsewhere."""
    _fn = staticmethod(_F3.max_unpool3d)


class LPPool3d(_LPPoolNd):
    """The power-average pool of (N, C, D, H, W)."""

    def forward(self, x):
        return _F3.lp_pool3d(x, float(self.norm_type), self.kernel_size, self.stride,
                             self.ceil_mode)
