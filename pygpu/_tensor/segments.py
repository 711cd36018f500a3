"""Reductions over groups of elements, as PyTorch's: torch.segment_reduce (contiguous
segments along an axis, given by lengths or offsets) and torch.histogramdd (the joint
histogram of D coordinates).

segment_reduce numbers each position along the axis with its segment (a searchsorted of
the positions in the segments' ends, on the device) and reduces with one scatter_reduce
(pygpu/_tensor/scatter.py: a sort and a segmented scan, differentiable); the mean divides
the sum by the lengths. histogramdd bins each coordinate (a searchsorted in its edges),
folds the D bin numbers into one flat bin and counts with one index_add_."""
import builtins
import collections
import math

from .. import _C, _dtype
from . import create as _tensor_create

Tensor = _C.Tensor

_REDUCE = {"sum": "sum", "prod": "prod", "mean": "sum", "max": "amax", "amax": "amax",
           "min": "amin", "amin": "amin"}
# an empty segment's value when no initial is given (PyTorch's)
_EMPTY = {"sum": 0.0, "prod": 1.0, "mean": float("nan"), "amax": float("-inf"),
          "amin": float("inf")}


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """data reduced over the consecutive segments of `axis` that lengths (..., S) or offsets
    (..., S + 1) give (their leading dims are data's before axis): (..., S, *rest). reduce
    is sum, mean, prod, max (amax) or min (amin); initial starts every segment (an empty
    segment's value; else 0, nan, 1, -inf, inf)."""
    if not isinstance(data, Tensor):
        raise TypeError(f"segment_reduce(): argument 'data' (position 1) must be Tensor, not "
                        f"{type(data).__name__}")
    if reduce not in _REDUCE:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined")
    axis = axis % data.ndim if data.ndim else 0
    if lengths is None:
        if offsets.ndim != axis + 1:
            raise RuntimeError(f"segment_reduce(): Expected offsets of {axis + 1} dims (axis "
                               f"{axis}), got {offsets.ndim}")
        lengths = offsets[..., 1:] - offsets[..., :-1]
        starts = offsets[..., :1]
    else:
        if lengths.ndim != axis + 1:
            raise RuntimeError(f"segment_reduce(): Expected lengths of {axis + 1} dims (axis "
                               f"{axis}), got {lengths.ndim}")
        starts = None
    lengths = lengths.astype(_dtype.int64)
    n = data.shape[axis]
    if not unsafe:
        if bool((lengths < 0).any().item()):
            raise RuntimeError("segment_reduce(): lengths contains negative value!")
        if starts is None and bool((lengths.sum(-1) != n).any().item()):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum "
                               "to data.size(lengths.dim()-1) when !unsafe.")
    S = lengths.shape[-1]
    ends = lengths.cumsum(-1) + (0 if starts is None else starts.astype(_dtype.int64))
    pos = _tensor_create.arange(n, device=data.device)
    from .shape import searchsorted
    if ends.ndim == 1:
        seg = searchsorted(ends, pos, right=True)
    else:
        seg = searchsorted(ends, pos.expand(*ends.shape[:-1], n).contiguous(), right=True)
    # positions outside every segment (offsets that skip some) go to a spare slot S
    if starts is not None:
        before = pos < starts.astype(_dtype.int64)
        seg = _C.where(before, _tensor_create.full((), S, dtype=_dtype.int64,
                                                   device=data.device), seg)
    seg = seg.clamp(0, S)
    rest = data.ndim - axis - 1
    index = seg.reshape(*seg.shape, *([1] * rest)).expand(*data.shape).contiguous()
    out_shape = list(data.shape)
    out_shape[axis] = S + 1
    op = _REDUCE[reduce]
    start = _EMPTY[op if reduce != "mean" else "mean"] if initial is None else float(initial)
    base = _tensor_create.full(tuple(out_shape), 0.0 if reduce == "mean" and initial is None
                               else start, dtype=data.dtype, device=data.device)
    from .scatter import scatter_reduce
    out = scatter_reduce(base, axis, index, data, op, include_self=initial is not None
                         or reduce == "mean")
    out = out.narrow(axis, 0, S)
    if reduce == "mean":
        L = lengths.astype(data.dtype).reshape(*lengths.shape, *([1] * rest))
        empty = start if initial is not None else float("nan")
        out = _C.where(L > 0, out / L.clamp(min=1), _tensor_create.full((), empty,
                                                                        dtype=data.dtype,
                                                                        device=data.device))
    return out


_histogramdd_t = collections.namedtuple("histogramdd", ["hist", "bin_edges"])


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """(hist, bin_edges): the D-dimensional histogram of input's rows (..., D). bins: one
    int for every dimension, D ints, or D tensors of edges; range: (lo_0, hi_0, lo_1, ...)
    (each dimension's min and max by default)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"histogramdd(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the "
                           f"same dtype, but got input {input.dtype}")
    if input.ndim < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension, "
                           "but got 0")
    D = input.shape[-1]
    x = input.reshape(-1, D).astype(_dtype.float64)
    if isinstance(bins, int):
        bins = [bins] * D
    if len(bins) != D:
        raise RuntimeError(f"torch.histogramdd: expected {D} sequences of bin edges for each "
                           f"of the {D} input dimensions, but got {len(bins)} bin sequences "
                           f"instead")
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should "
                           f"have {2 * D} elements, but got {len(range)}")
    edges, flat, volume = [], None, None
    inside = _tensor_create.ones(x.shape[0], dtype=_dtype.bool_, device=x.device)
    from .shape import searchsorted
    for d in builtins.range(D):
        col = x[:, d]
        if isinstance(bins[d], Tensor):
            e = bins[d].astype(_dtype.float64)
        else:
            nb = int(bins[d])
            if nb <= 0:
                raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {nb} for "
                                   f"dimension {d}")
            if range is not None:
                lo, hi = float(range[2 * d]), float(range[2 * d + 1])
                if lo > hi:
                    raise RuntimeError(f"torch.histogramdd: expected upper bound of range "
                                       f"({hi}) to be greater than or equal to its lower bound "
                                       f"({lo}) for dimension {d}")
            elif col.numel():
                lo, hi = float(col.min().item()), float(col.max().item())
            else:
                lo, hi = 0.0, 0.0
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5  # PyTorch widens a point to a unit range
            e = _tensor_create.linspace(lo, hi, nb + 1, dtype=_dtype.float64,
                                        device=x.device)
        nb = e.shape[0] - 1
        k = searchsorted(e, col.contiguous(), right=True) - 1
        k = _C.where(col == e[-1], _tensor_create.full((), nb - 1, dtype=_dtype.int64,
                                                       device=x.device), k)
        inside = inside & (k >= 0) & (k < nb)
        k = k.clamp(0, max(nb - 1, 0))
        flat = k if flat is None else flat * nb + k
        width = e[1:] - e[:-1]
        volume = width if volume is None else volume.unsqueeze(-1) * width
        edges.append(e)
    sizes = [e.shape[0] - 1 for e in edges]
    w = weight.reshape(-1).astype(_dtype.float64) if weight is not None else \
        _tensor_create.ones(x.shape[0], dtype=_dtype.float64, device=x.device)
    w = w * inside.astype(_dtype.float64)
    hist = _tensor_create.zeros(math.prod(sizes), dtype=_dtype.float64, device=x.device)
    if x.shape[0]:
        hist.index_add_(0, flat, w)
    hist = hist.reshape(*sizes)
    if density:
        hist = hist / (hist.sum() * volume)
    return _histogramdd_t(hist.astype(input.dtype), tuple(e.astype(input.dtype) for e in edges))


FUNCTIONS = {"segment_reduce": segment_reduce, "histogramdd": histogramdd}
