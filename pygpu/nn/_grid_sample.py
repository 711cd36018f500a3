"""nn.functional.grid_sample and affine_grid with PyTorch's signatures and arithmetic
(aten/src/ATen/native/GridSampler.h): input (N, C, H, W) sampled at grid (N, Ho, Wo, 2) of
(x, y) in [-1, 1], or (N, C, D, H, W) at (N, Do, Ho, Wo, 3); modes bilinear (trilinear in
3-d), nearest and bicubic (2-d); padding zeros, border and reflection; align_corners.

Each output point's taps (2**n corners, 1 nearest, or 4x4 bicubic) are flat indices into
the input, gathered in one gather per tap and weighted: the weights are tensor arithmetic on
the grid, so autograd gives the gradient for the input (gather's) and for the grid (the
weights'), as PyTorch's kernel does. The tap positions themselves (floor, rounding, which
taps lie outside) carry no gradient, as in PyTorch."""
import itertools
import math
import warnings

from .. import _C
from .._ops._common import float_input as _float_input

Tensor = _C.Tensor

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


def _unnormalize(c, size, align_corners):
    """[-1, 1] -> pixel coordinates: corner pixels' centres (align_corners) or their edges."""
    if align_corners:
        return (c + 1.0) * ((size - 1) / 2.0)
    return ((c + 1.0) * size - 1.0) / 2.0


def _reflect(c, twice_low, twice_high):
    """PyTorch's reflect_coordinates: c folded into [low, high] by reflections."""
    if twice_low == twice_high:
        return c * 0.0
    low, span = twice_low / 2.0, (twice_high - twice_low) / 2.0
    d = (c - low).abs()
    flips = (d.detach() / span).floor()
    extra = d - flips * span  # fmod(d, span), differentiable in d
    odd = flips - (flips / 2.0).floor() * 2.0  # 1 where the number of flips is odd
    return low + extra + odd * (span - 2.0 * extra)


def _pad_coordinates(c, size, padding_mode, align_corners):
    """PyTorch's compute_coordinates: border clips, reflection reflects then clips."""
    if padding_mode == "border":
        return c.clamp(0.0, size - 1.0)
    if padding_mode == "reflection":
        c = (_reflect(c, 0, 2 * (size - 1)) if align_corners
             else _reflect(c, -1, 2 * size - 1))
        return c.clamp(0.0, size - 1.0)
    return c


def _cubic_weights(t, A=-0.75):
    """The four cubic-convolution coefficients of fraction t (PyTorch's
    get_cubic_upsampling_coefficients)."""
    def near(x):  # |x| <= 1
        return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A
    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _tap_value(flat, taps, sizes, weight, L):
    """sum over taps of input[tap] * weight, zero where a tap is outside: `taps` per spatial
    axis (N, L) integer-valued float tensors, flat (N, C, prod(sizes))."""
    N, C = flat.shape[0], flat.shape[1]
    inside = None
    index = None
    stride = 1
    for t, size in zip(reversed(taps), reversed(sizes)):
        ok = (t >= 0) & (t <= size - 1)
        inside = ok if inside is None else inside & ok
        term = t.clamp(0, size - 1) * float(stride)
        index = term if index is None else index + term
        stride *= size
    idx = index.astype(_int64()).reshape(N, 1, L).expand(N, C, L)
    w = weight * inside.astype(weight.dtype)
    return flat.gather(2, idx) * w.reshape(N, 1, L)


def _int64():
    from .._dtype import int64
    return int64


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """input (N, C, H, W) [or (N, C, D, H, W)] sampled at grid (N, Ho, Wo, 2) [(N, Do, Ho, Wo,
    3)], the last axis (x, y[, z]) in [-1, 1] over width, height[, depth]."""
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return grid_sampler(input, grid, GRID_SAMPLE_INTERPOLATION_MODES[mode],
                        GRID_SAMPLE_PADDING_MODES[padding_mode], align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler: grid_sample with the modes as their numbers."""
    _float_input(input, "grid_sampler")
    if not isinstance(grid, Tensor):
        raise TypeError(f"grid_sampler: grid must be a pygpu.Tensor, got {type(grid).__name__}")
    modes = {v: k for k, v in GRID_SAMPLE_INTERPOLATION_MODES.items()}
    pads = {v: k for k, v in GRID_SAMPLE_PADDING_MODES.items()}
    mode, padding = modes[int(interpolation_mode)], pads[int(padding_mode)]
    n = input.ndim - 2
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    N, C = input.shape[0], input.shape[1]
    if grid.shape[0] != N:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != n:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {n} in last dimension, "
                           f"but got grid with sizes {list(grid.shape)}")
    if grid.dtype != input.dtype or grid.device != input.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype and "
                           f"device, but input has {input.dtype} on {input.device} and grid has "
                           f"{grid.dtype} on {grid.device}")
    if mode == "bicubic" and n != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if any(s <= 0 for s in input.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {list(input.shape)}")
    sizes = tuple(input.shape[2:])  # (H, W) or (D, H, W)
    out_spatial = tuple(grid.shape[1:-1])
    L = math.prod(out_spatial)
    g = grid.reshape(N, L, n)
    flat = input.reshape(N, C, math.prod(sizes))
    # the grid's last axis runs x (width, the last input axis), y, z: reversed to axis order
    raw = [_unnormalize(g[:, :, n - 1 - a], sizes[a], align_corners) for a in range(n)]
    out = None
    if mode == "bicubic":
        base = [c.detach().floor() for c in raw]
        weights = [_cubic_weights(c - b) for c, b in zip(raw, base)]
        for offs in itertools.product(range(4), repeat=n):
            taps, weight = [], None
            for a, o in enumerate(offs):
                t = base[a] + float(o - 1)
                if padding != "zeros":  # each tap's position padded (get_value_bounded)
                    t = _pad_coordinates(t, sizes[a], padding, align_corners).detach().round()
                taps.append(t)
                weight = weights[a][o] if weight is None else weight * weights[a][o]
            v = _tap_value(flat, taps, sizes, weight, L)
            out = v if out is None else out + v
    else:
        coords = [_pad_coordinates(c, sizes[a], padding, align_corners)
                  for a, c in enumerate(raw)]
        if mode == "nearest":
            taps = [c.detach().round() for c in coords]  # half to even, as nearbyint
            # weight 1 (a zero gradient for the grid, as PyTorch gives)
            out = _tap_value(flat, taps, sizes, g[:, :, 0] * 0.0 + 1.0, L)
        else:
            low = [c.detach().floor() for c in coords]
            for corner in itertools.product((0, 1), repeat=n):
                taps, weight = [], None
                for a, bit in enumerate(corner):
                    frac = coords[a] - low[a]
                    w = frac if bit else 1.0 - frac
                    taps.append(low[a] + float(bit))
                    weight = w if weight is None else weight * w
                v = _tap_value(flat, taps, sizes, weight, L)
                out = v if out is None else out + v
    return out.reshape(N, C, *out_spatial)


def _base_axis(n, align_corners, like):
    """PyTorch's linspace_from_neg_one: n points over [-1, 1] (align_corners) or their
    cell centres; a single point is 0."""
    from .._tensor.create import linspace, zeros
    if n <= 1:
        return zeros(1, dtype=like.dtype, device=like.device)
    r = linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid_generator(theta, size, align_corners):
    """torch.affine_grid_generator: the sampling grid of the affine maps theta."""
    size = [int(s) for s in size]
    n = len(size) - 2
    spatial = size[2:]  # (H, W) or (D, H, W)
    from .._tensor.create import ones
    from .._tensor.join import stack
    axes = [_base_axis(s, align_corners, theta) for s in spatial]
    # the base grid (*spatial, n + 1) of (x, y[, z], 1): x runs along the last axis
    comps = []
    for a in reversed(range(n)):
        shape = [1] * n
        shape[a] = spatial[a]
        comps.append(axes[a].reshape(*shape).expand(*spatial))
    comps.append(ones(tuple(spatial), dtype=theta.dtype, device=theta.device))
    base = stack(comps, -1).reshape(1, math.prod(spatial), n + 1)
    N = size[0]
    grid = base.expand(N, math.prod(spatial), n + 1) @ theta.transpose(1, 2)
    return grid.reshape(N, *spatial, n)


def affine_grid(theta, size, align_corners=None):
    """The grid (N, H, W, 2) [(N, D, H, W, 3)] that grid_sample reads to apply the affine maps
    theta (N, 2, 3) [(N, 3, 4)] to an image of `size` (N, C, H, W) [(N, C, D, H, W)]."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not isinstance(theta, Tensor):
        raise TypeError(f"affine_grid: theta must be a pygpu.Tensor, got {type(theta).__name__}")
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.ndim != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return affine_grid_generator(theta, size, align_corners)


FUNCTIONS = {"grid_sample": grid_sample, "affine_grid": affine_grid,
             "GRID_SAMPLE_INTERPOLATION_MODES": GRID_SAMPLE_INTERPOLATION_MODES,
             "GRID_SAMPLE_PADDING_MODES": GRID_SAMPLE_PADDING_MODES}
