"""Order statistics and NaN-aware reductions, as PyTorch's Tensor methods and torch
functions: median, nanmedian, mode, kthvalue, quantile, nanquantile, msort, nansum, nanmean,
std_mean, var_mean, aminmax, count_nonzero, cummax, cummin, logcumsumexp.

Built on pygpu's sort, gather and elementwise ops, on the tensor's device, no Python loop
over elements: a selection is a stable sort along the axis and a gather at the wanted rank
(so values are differentiable through gather, as PyTorch's are through their indices); the
running ones (cummax, cummin, logcumsumexp) are log2(n) rounds of one elementwise step over
a shifted copy (a Hillis-Steele scan). NaN as PyTorch treats it: greater than every number
for sorting and the running maximum, propagated by median and quantile, skipped by the nan*
ones. Where several elements tie, the index reported is that of a stable sort (PyTorch's CPU
kernels pick among ties by their own order; the values agree)."""
import collections

from .. import _C, _dtype
from . import create as _tensor_create
from ..autograd.engine import number_outputs

Tensor = _C.Tensor

_MEDIAN_T = collections.namedtuple("median", ["values", "indices"])
_NANMEDIAN_T = collections.namedtuple("nanmedian", ["values", "indices"])
_MODE_T = collections.namedtuple("mode", ["values", "indices"])
_KTH_T = collections.namedtuple("kthvalue", ["values", "indices"])
_AMINMAX_T = collections.namedtuple("aminmax", ["min", "max"])
_CUMMAX_T = collections.namedtuple("cummax", ["values", "indices"])
_CUMMIN_T = collections.namedtuple("cummin", ["values", "indices"])


def _dim(x, dim):
    n = max(x.ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _select(x, dim, keepdim, rank, name, fn):
    """(values, indices) of the element at sorted position `rank` (a tensor of x's shape
    with dim of size 1, or an int) along dim."""
    if x.ndim == 0:
        v = x.clone()
        return fn(v, _tensor_create.zeros((), dtype=_dtype.int64, device=x.device))
    d = _dim(x, dim)
    if x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    order = x.detach().argsort(d, stable=True)
    if isinstance(rank, int):
        shape = list(x.shape)
        shape[d] = 1
        rank = _tensor_create.full(tuple(shape), rank, dtype=_dtype.int64, device=x.device)
    idx = order.gather(d, rank)
    values = x.gather(d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return fn(values, idx)


def _nan_rows(x, d):
    return _C.isnan(x.detach()).any(d, keepdim=True) if x.dtype.is_floating_point else None


def median(self, dim=None, keepdim=False):
    """The lower median: the element at sorted position (n - 1) // 2 (NaN if there is a
    NaN); with dim, (values, indices)."""
    if dim is None:
        flat = self.reshape(-1)
        if flat.numel() == 0:
            return _tensor_create.full((), float("nan"), dtype=self.dtype, device=self.device)
        out = _select(flat, 0, False, (flat.numel() - 1) // 2, "median", _MEDIAN_T).values
        return out
    d = _dim(self, dim)
    n = self.shape[d] if self.ndim else 1
    res = _select(self, d, keepdim, (n - 1) // 2, "median", _MEDIAN_T)
    nan = _nan_rows(self, d) if self.ndim else None
    if nan is not None and bool(nan.any()):
        first = _C.isnan(self.detach()).astype(_dtype.int64).argmax(d, keepdim=True)
        idx = _C.where(nan, first, res.indices if keepdim else res.indices.unsqueeze(d))
        values = self.gather(d, idx)
        if not keepdim:
            values, idx = values.squeeze(d), idx.squeeze(d)
        return _MEDIAN_T(values, idx)
    return res


def nanmedian(self, dim=None, keepdim=False):
    """median of the elements that are not NaN (NaN where all are)."""
    if not self.dtype.is_floating_point:
        return median(self, dim, keepdim) if dim is not None else median(self)
    x = self.reshape(-1) if dim is None else self
    d = 0 if dim is None else _dim(x, dim)
    if x.ndim == 0:
        return x.clone() if dim is None else _NANMEDIAN_T(x.clone(), _tensor_create.zeros(
            (), dtype=_dtype.int64, device=x.device))
    valid = (~_C.isnan(x.detach())).astype(_dtype.int64).sum(d, keepdim=True)
    rank = _C.maximum((valid - 1), 0) // 2
    res = _select(x, d, True, rank, "nanmedian", _NANMEDIAN_T)
    values = _C.where(valid == 0, _nan_like(res.values), res.values)
    idx = res.indices
    if dim is None:
        return values.reshape(())
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return _NANMEDIAN_T(values, idx)


def kthvalue(self, k, dim=-1, keepdim=False):
    """The k-th smallest element (k from 1) along dim: (values, indices)."""
    d = _dim(self, dim)
    n = self.shape[d] if self.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _select(self, dim, keepdim, k - 1, "kthvalue", _KTH_T)


def mode(self, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest of those tied) and the index of its
    last occurrence: (values, indices)."""
    if self.ndim == 0:
        return _MODE_T(self.clone(), _tensor_create.zeros((), dtype=_dtype.int64,
                                                          device=self.device))
    d = _dim(self, dim)
    n = self.shape[d]
    x = self.detach().movedim(d, -1)  # (..., n)
    srt = x.sort(-1, stable=True)
    vals = srt.values
    # run lengths: for each sorted position, how many equal values end there
    starts = _tensor_create.ones(*vals.shape, dtype=_dtype.bool_, device=x.device)
    if n > 1:
        starts[..., 1:] = vals[..., 1:] != vals[..., :-1]
    pos = _tensor_create.arange(n, device=x.device).expand(*vals.shape)
    run_start = (pos * starts.astype(_dtype.int64)).cummax(-1).values
    length = pos - run_start + 1
    best = length.amax(-1, keepdim=True)
    # the first run (smallest value) reaching the greatest length ends at `at`
    hit = (length == best).astype(_dtype.int64)
    at = hit.argmax(-1, keepdim=True)
    value = vals.gather(-1, at)
    last = ((x == value).astype(_dtype.int64) * pos).amax(-1, keepdim=True)
    values = self.movedim(d, -1).gather(-1, last).movedim(-1, d)
    idx = last.movedim(-1, d)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return _MODE_T(values, idx)


def msort(self):
    """sort along the first axis (the values)."""
    return self.sort(0).values


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(self, q, dim, keepdim, interpolation, ignore_nan, name):
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{name}() interpolation must be one of linear, lower, higher, "
                         f"midpoint or nearest. Got {interpolation}")
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    qt = _tensor_create.tensor([float(q)] if scalar_q else q.tolist(), dtype=self.dtype,
                               device=self.device).reshape(-1)
    if not scalar_q and q.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if bool(((qt < 0) | (qt > 1)).any()):
        if scalar_q:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    x = self.reshape(-1) if dim is None else self
    d = 0 if dim is None else _dim(x, dim)
    if x.ndim == 0:
        x, d = x.reshape(1), 0
    if x.shape[d] == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    xs = x.movedim(d, -1)  # (..., n)
    srt = xs.sort(-1).values  # NaN last
    n = srt.shape[-1]
    nan = _C.isnan(xs.detach())
    count = (n - nan.astype(_dtype.int64).sum(-1, keepdim=True)) if ignore_nan else \
        _tensor_create.full(tuple(xs.shape[:-1]) + (1,), n, dtype=_dtype.int64,
                            device=x.device)
    last = _C.maximum(count - 1, 0).astype(self.dtype)  # (..., 1)
    ranks = qt.reshape((-1,) + (1,) * (xs.ndim - 1) + (1,)) * last  # (Q, ..., 1)... broadcast
    lo = ranks.floor()
    hi = ranks.ceil()
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = ranks.round()
    expand = (qt.shape[0],) + tuple(srt.shape)
    srt_q = srt.unsqueeze(0).expand(*expand)
    lo_i = lo.astype(_dtype.int64).expand(*expand[:-1], 1)
    hi_i = hi.astype(_dtype.int64).expand(*expand[:-1], 1)
    a, b = srt_q.gather(-1, lo_i), srt_q.gather(-1, hi_i)
    if interpolation == "midpoint":
        out = a + (b - a) * 0.5
    elif interpolation == "linear":
        out = a + (b - a) * (ranks - lo)
    else:
        out = a
    out = out.squeeze(-1)  # (Q, ...)
    if ignore_nan:
        out = _C.where((count == 0).squeeze(-1).unsqueeze(0).expand(*out.shape),
                       _nan_like(out), out)
    else:
        has_nan = nan.any(-1).unsqueeze(0).expand(*out.shape)
        out = _C.where(has_nan, _nan_like(out), out)
    if keepdim:
        if dim is None:
            out = out.reshape((qt.shape[0],) + (1,) * self.ndim)
        else:
            out = out.unsqueeze(d + 1)
    return out[0] if scalar_q else out


def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-quantiles (q a number or a 1-d tensor) along dim, or of all elements;
    NaN where a slice holds a NaN."""
    result = _quantile(self, q, dim, keepdim, interpolation, False, "quantile")
    return result if out is None else out.copy_(result)


def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile of the elements that are not NaN."""
    result = _quantile(self, q, dim, keepdim, interpolation, True, "nanquantile")
    return result if out is None else out.copy_(result)


def _nan_like(x):
    """NaN of x's shape, a constant (x * nan in a where's other branch would make the
    gradient NaN: 0 * nan)."""
    return _tensor_create.full(tuple(x.shape), float("nan"), dtype=x.dtype, device=x.device)


def _zero_nan(x):
    if not x.dtype.is_floating_point:
        return x
    zero = _tensor_create.zeros(*x.shape, dtype=x.dtype, device=x.device)
    return _C.where(_C.isnan(x), zero, x)


def nansum(self, dim=None, keepdim=False, *, dtype=None):
    """sum with NaN taken as 0."""
    x = _zero_nan(self)
    out = x.sum() if dim is None else x.sum(dim, keepdim=keepdim)
    return out if dtype is None else out.astype(dtype)


def nanmean(self, dim=None, keepdim=False, *, dtype=None):
    """mean of the elements that are not NaN."""
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {_type_word(self.dtype)}")
    count = (~_C.isnan(self)).astype(self.dtype)
    total = nansum(self, dim, keepdim)
    n = count.sum() if dim is None else count.sum(dim, keepdim=keepdim)
    out = total / n
    return out if dtype is None else out.astype(dtype)


def _type_word(dt):
    return {"int64": "Long", "bool": "Bool", "int32": "Int"}.get(dt.name, dt.name)


def _moments(self, dim, correction, keepdim, unbiased):
    if unbiased is not None:
        correction = 1 if unbiased else 0
    if correction is None:
        correction = 1
    std_kw = {"correction": correction, "keepdim": keepdim}
    if dim is not None:
        std_kw["dim"] = dim
    return std_kw


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) along dim (correction=1 by default: Bessel's)."""
    if isinstance(dim, bool):  # var_mean(x, False): the old unbiased= positional
        unbiased, dim = dim, None
    kw = _moments(input, dim, correction, keepdim, unbiased)
    mean = input.mean() if dim is None else input.mean(dim, keepdim=keepdim)
    return number_outputs((input.var(**kw), mean), input)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) along dim (correction=1 by default: Bessel's)."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    kw = _moments(input, dim, correction, keepdim, unbiased)
    mean = input.mean() if dim is None else input.mean(dim, keepdim=keepdim)
    return number_outputs((input.std(**kw), mean), input)


def aminmax(self, *, dim=None, keepdim=False):
    """(min, max) along dim, or over all elements."""
    if dim is None:
        if keepdim:
            shape = (1,) * self.ndim
            return number_outputs(_AMINMAX_T(self.amin().reshape(shape),
                                             self.amax().reshape(shape)), self)
        return number_outputs(_AMINMAX_T(self.amin(), self.amax()), self)
    return number_outputs(_AMINMAX_T(self.amin(dim, keepdim=keepdim),
                                     self.amax(dim, keepdim=keepdim)), self)


def count_nonzero(self, dim=None):
    """How many elements are not zero, along dim (an int or a tuple) or over all."""
    nz = (self != 0).astype(_dtype.int64)
    return nz.sum() if dim is None else nz.sum(dim)


def _shifted(x, s, fill, d):
    """x shifted by s along the last axis d, the first s places `fill`."""
    n = x.shape[-1]
    head = _tensor_create.full(tuple(x.shape[:-1]) + (min(s, n),), fill, dtype=x.dtype,
                               device=x.device)
    from .join import cat
    return cat([head, x[..., :n - s]], -1) if s < n else head


def _running_arg(self, dim, greater, name, tuple_type):
    """(values, indices) of the running maximum (greater=True) or minimum along dim: the
    later index among ties, NaN beating every number, as PyTorch's."""
    if self.ndim == 0:
        return tuple_type(self.clone(), _tensor_create.zeros((), dtype=_dtype.int64,
                                                             device=self.device))
    d = _dim(self, dim)
    x = self.detach().movedim(d, -1)
    n = x.shape[-1]
    idx = _tensor_create.arange(n, device=x.device).expand(*x.shape).contiguous()
    val = x
    floating = x.dtype.is_floating_point
    s = 1
    while s < n:
        left_v = _shifted(val, s, 0, -1)
        left_i = _shifted(idx, s, -1, -1)
        beats = (left_v > val) if greater else (left_v < val)
        if floating:
            beats = beats | (_C.isnan(left_v) & ~_C.isnan(val))
        beats = beats & (left_i >= 0)
        val = _C.where(beats, left_v, val)
        idx = _C.where(beats, left_i, idx)
        s *= 2
    idx = idx.movedim(-1, d)
    return tuple_type(self.gather(d, idx), idx)


def cummax(self, dim):
    return _running_arg(self, dim, True, "cummax", _CUMMAX_T)


def cummin(self, dim):
    return _running_arg(self, dim, False, "cummin", _CUMMIN_T)


def logcumsumexp(self, dim):
    """log(cumsum(exp(x))) along dim, computed stably (a scan of logaddexp)."""
    if self.ndim == 0:
        return self.clone()
    d = _dim(self, dim)
    x = self.movedim(d, -1)
    n = x.shape[-1]
    s = 1
    while s < n:
        x = _C.logaddexp(x, _shifted(x, s, float("-inf"), -1))
        s *= 2
    return x.movedim(-1, d)


METHODS = {name: globals()[name] for name in (
    "median", "nanmedian", "kthvalue", "mode", "msort", "quantile", "nanquantile", "nansum",
    "nanmean", "aminmax", "count_nonzero", "cummax", "cummin", "logcumsumexp")}
FUNCTIONS = dict(METHODS, var_mean=var_mean, std_mean=std_mean)
