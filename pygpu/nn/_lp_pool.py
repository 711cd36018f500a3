"""nn.functional.lp_pool1d/lp_pool2d and channel_shuffle, with PyTorch's formulas: the
power-average pool is avg_pool of x**p times the window size, to the 1/p (inf: max of |x|);
channel_shuffle regroups the channels of (N, C, *) as (N, g, C/g, *) transposed."""
from .. import _C
from ._conv import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d


def _pair(k):
    return (k, k) if isinstance(k, int) else tuple(k)


def _lp(input, norm_type, window, pooled, maxpool):
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return maxpool(_C.abs(input))
        if norm_type == -float("inf"):
            return -maxpool(-_C.abs(input))
    out = pooled(input.pow(norm_type))
    return (_C.sign(out) * _C.relu(_C.abs(out))).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x**p) ** (1/p)."""
    return _lp(input, norm_type, kernel_size,
               lambda x: avg_pool1d(x, kernel_size, stride, 0, ceil_mode),
               lambda x: max_pool1d(x, kernel_size, stride, 0, 1, ceil_mode))


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x**p) ** (1/p), over the last two axes."""
    kw, kh = _pair(kernel_size)
    return _lp(input, norm_type, kw * kh,
               lambda x: avg_pool2d(x, kernel_size, stride, 0, ceil_mode),
               lambda x: max_pool2d(x, kernel_size, stride, 0, 1, ceil_mode))


def channel_shuffle(input, groups):
    """(N, C, *) -> the channels taken one from each of `groups` groups in turn."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle

FUNCTIONS = {"lp_pool1d": lp_pool1d, "lp_pool2d": lp_pool2d, "channel_shuffle": channel_shuffle,
             "native_channel_shuffle": native_channel_shuffle}
