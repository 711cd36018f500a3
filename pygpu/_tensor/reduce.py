"""Reductions with PyTorch's keywords: sum, mean, max, min, argmax, argmin, amax, amin,
prod, std, var, norm, logsumexp, all, any, each taking `dim` (an int or a tuple) and
`keepdim`, while pygpu's own `axis`/`keepdims` keep working.

max/min: `t.max()` is the largest element; `t.max(dim)` returns (values, indices) as a
named tuple (torch.return_types.max); `t.max(other)` is the elementwise maximum; the
pygpu spelling `t.max(axis=...)` still returns the values alone. The values of
max(dim)/min(dim) are gathered at the indices, so their gradient flows to the chosen
element; amax/amin split it evenly between ties, as PyTorch's.

sum and mean are the C methods themselves (they take dim/keepdim as aliases of
axis/keepdims, so the common call runs no Python frame); PyTorch's `dtype=` keyword of
sum/mean is not taken (convert first: t.double().sum()). The kernels are pygpu's C
reductions (sum, max, min, argmax) and the index family's
cumprod (prod is the last running product); the rest are compositions of recorded ops, so
autograd differentiates them without rules of their own."""
import collections

from .. import _C
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from .join import cat

Tensor = _C.Tensor
_c_sum, _c_mean, _c_max, _c_min, _c_argmax = (Tensor.sum, Tensor.mean, Tensor.max, Tensor.min,
                                              Tensor.argmax)

_MAX_T = collections.namedtuple("max", ["values", "indices"])
_MIN_T = collections.namedtuple("min", ["values", "indices"])
_SORT_T = collections.namedtuple("sort", ["values", "indices"])
_TOPK_T = collections.namedtuple("topk", ["values", "indices"])


def _merge(op, dim, keepdim, axis, keepdims):
    if axis is not None:
        if dim is not None:
            raise TypeError(f"{op}: give dim or axis, not both")
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    if isinstance(dim, list):
        dim = tuple(dim)
    if dim == ():
        dim = None
    return dim, bool(keepdim)


def _cast(t, dtype):
    return t if dtype is None else t.to(dtype=dtype)


class Gather(Function):
    """x's values at idx along dim (the INDEX node's gather) with its backward, a scatter-add
    into zeros: gather (_tensor/index.py) and the values at argmax/argmin (here, below
    _tensor_index in the layers) both record this one Function."""
    @staticmethod
    def forward(ctx, x, dim, idx):
        ctx.shape, ctx.dim, ctx.idx = x.shape, dim, idx
        return _C._gather(x, dim, idx)

    @staticmethod
    def backward(ctx, g):  # a scatter-add into zeros, itself differentiable (gather again)
        return _ScatterAddInto.apply(g, ctx.shape, ctx.dim, ctx.idx), None, None


class _ScatterAddInto(Function):
    """g added at idx along dim into zeros of `shape`: Gather's backward, with Gather as its
    own backward, so both have gradients of every order."""
    @staticmethod
    def forward(ctx, g, shape, dim, idx):
        from .create import zeros
        ctx.dim, ctx.idx = dim, idx
        out = zeros(shape, dtype=g.dtype, device=g.device)
        _C._scatter("SCATTER_ADD", out, dim, idx, g.contiguous())
        return out

    @staticmethod
    def backward(ctx, gg):
        return Gather.apply(gg, ctx.dim, ctx.idx), None, None, None


def _reversed_order(x):
    """x mapped so that its order is reversed, for argmin through argmax: -x for floats (NaN
    stays NaN, and argmax takes it as argmin does), ~x for integers (-x - 1: no overflow at
    int8's -128, and uint8's 255 - x), bool as int64."""
    if x.dtype.is_floating_point:
        return -x
    return ~(x.long() if x.dtype.name == "bool" else x)


def _arg_extreme(x, dim, keepdim, largest):
    from .views import norm_dim
    if x.ndim == 0:
        from .create import zeros
        return zeros((), dtype="int64", device=x.device)  # the only index of a 0-d tensor
    d = norm_dim("argmax" if largest else "argmin", dim, x.ndim)
    idx = _c_argmax(x if largest else _reversed_order(x), axis=d, keepdims=True)
    return idx if keepdim else idx.squeeze(d)


def _extreme(self, largest, dim, keepdim, axis, keepdims, other):
    name = "max" if largest else "min"
    if isinstance(dim, Tensor) and other is None:
        dim, other = None, dim
    if other is not None:
        return _C.maximum(self, other) if largest else _C.minimum(self, other)
    if axis is not None or keepdims is not None:  # pygpu's form: values only
        d, k = _merge(name, dim, keepdim, axis, keepdims)
        return (_c_max if largest else _c_min)(self, axis=d, keepdims=k)
    if dim is None:
        if self.requires_grad and is_grad_enabled():
            return (amax if largest else amin)(self)
        return (_c_max if largest else _c_min)(self)
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}(dim): dim must be an int (use amax/amin for several dims)")
    from .views import norm_dim
    d = norm_dim(name, dim, self.ndim) if self.ndim else 0
    if self.ndim == 0:
        return (_MAX_T if largest else _MIN_T)(self, _arg_extreme(self, 0, False, largest))
    idx = _arg_extreme(self, d, True, largest)
    if self.requires_grad and is_grad_enabled():
        vals = Gather.apply(self, d, idx)
    else:
        vals = _C._gather(self, d, idx)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return (_MAX_T if largest else _MIN_T)(vals, idx)


def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None, other=None):
    """max() the largest element (0-d); max(dim, keepdim=False) a (values, indices)
    namedtuple, as torch.max; max(other) the elementwise maximum; pygpu's max(axis=...,
    keepdims=...) the values only (NaN propagates)."""
    return _extreme(self, True, dim, keepdim, axis, keepdims, other)


def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None, other=None):
    """min() the smallest element (0-d); min(dim, keepdim=False) a (values, indices)
    namedtuple, as torch.min; min(other) the elementwise minimum; pygpu's min(axis=...,
    keepdims=...) the values only (NaN propagates)."""
    return _extreme(self, False, dim, keepdim, axis, keepdims, other)


def argmax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
    dim, keepdim = _merge("argmax", dim, keepdim, axis, keepdims)
    if dim is None:
        out = _c_argmax(self)
        return out.reshape((1,) * self.ndim) if keepdim else out
    return _arg_extreme(self, dim, keepdim, True)


def argmin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
    dim, keepdim = _merge("argmin", dim, keepdim, axis, keepdims)
    if dim is None:
        out = _c_argmax(_reversed_order(self))
        return out.reshape((1,) * self.ndim) if keepdim else out
    return _arg_extreme(self, dim, keepdim, False)


class _AExtreme(Function):
    """amax/amin: the gradient split evenly between the elements equal to the result."""
    @staticmethod
    def forward(ctx, x, largest, dim, keepdim):
        r = (_c_max if largest else _c_min)(x, axis=dim, keepdims=True)
        ctx.save(x, r)
        ctx.dim, ctx.keepdim = dim, keepdim
        return r if keepdim else r.reshape(_drop(x.shape, dim))

    @staticmethod
    def backward(ctx, g):
        x, r = ctx.saved
        if not ctx.keepdim:
            g = g.reshape(r.shape)
        mask = (x == r).astype(g.dtype)
        count = _c_sum(mask, axis=ctx.dim, keepdims=True)
        return mask * (g / count), None, None, None


def _axes(dim, ndim):
    from .views import norm_dim
    if dim is None:
        return tuple(range(ndim))
    dims = dim if isinstance(dim, tuple) else (dim,)
    return tuple(sorted({norm_dim("reduce", d, ndim) for d in dims}))


def _drop(shape, dim):
    axes = _axes(dim, len(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def amax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
    dim, keepdim = _merge("amax", dim, keepdim, axis, keepdims)
    dim = _axes(dim, self.ndim) if self.ndim else None
    if self.requires_grad and is_grad_enabled():
        return _AExtreme.apply(self, True, dim, keepdim)
    return _c_max(self, axis=dim, keepdims=keepdim)


def amin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
    dim, keepdim = _merge("amin", dim, keepdim, axis, keepdims)
    dim = _axes(dim, self.ndim) if self.ndim else None
    if self.requires_grad and is_grad_enabled():
        return _AExtreme.apply(self, False, dim, keepdim)
    return _c_min(self, axis=dim, keepdims=keepdim)


class _Prod(Function):
    """prod along one axis; backward: the product of all the others, as the running
    products from the left and from the right (exact with zeros, as PyTorch's)."""
    @staticmethod
    def forward(ctx, x, d):
        ctx.save(x)
        ctx.d = d
        return _prod_axis(x, d)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        d = ctx.d
        n = x.shape[d]
        from .create import ones
        one = ones(x.shape[:d] + (1,) + x.shape[d + 1:], dtype=x.dtype, device=x.device)
        left = x.cumprod(d)  # differentiable where x requires grad (create_graph=True)
        right = x.flip(d).cumprod(d).flip(d)
        excl_left = cat([one, left.narrow(d, 0, n - 1)], d) if n > 1 else one
        excl_right = cat([right.narrow(d, 1, n - 1), one], d) if n > 1 else one
        return g.unsqueeze(d) * excl_left * excl_right, None


def _prod_axis(x, d):
    n = x.shape[d]
    if n == 0:
        from .create import ones
        shape = x.shape[:d] + x.shape[d + 1:]
        dt = x.dtype if x.dtype.is_floating_point else None
        return ones(shape, dtype=dt or "int64", device=x.device)
    return _C._cumulative(x, d, True).narrow(d, n - 1, 1).squeeze(d).contiguous()


def prod(self, dim=None, keepdim=False, *, dtype=None):
    x = _cast(self, dtype)
    if x.dtype.is_complex:  # a tree of complex multiplies (pygpu/_tensor/complex.py)
        from . import complex as _complex
        return _complex.prod(x, dim, keepdim)
    if dim is None:
        x = x.reshape(-1)
        d, shape = 0, (1,) * self.ndim if keepdim else ()
    else:
        from .views import norm_dim
        if x.ndim == 0:
            x = x.reshape(1)
        d = norm_dim("prod", dim, x.ndim)
        shape = None
    if x.requires_grad and is_grad_enabled():
        out = _Prod.apply(x, d)
    else:
        out = _prod_axis(x, d)
    if dim is None:
        return out.reshape(shape)
    if keepdim and self.ndim:
        out = out.unsqueeze(d)
    return out


def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """var(dim=None, unbiased=True, keepdim=False, *, correction=1)."""
    if isinstance(dim, bool) and unbiased is None:  # var(False): the old positional form
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dim, keepdim = _merge("var", dim, keepdim, None, None)
    axes = _axes(dim, self.ndim) if self.ndim else None
    n = 1
    for a in axes or ():
        n *= self.shape[a]
    mu = _c_mean(self, axis=axes, keepdims=True)
    dev = self - mu
    denom = float(n - correction if n > correction else 0)
    return _c_sum(dev * dev, axis=axes, keepdims=keepdim) / denom


def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(self, dim, unbiased, keepdim, correction=correction).sqrt()


def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    """norm(p=2): 'fro' and 2 (Euclidean), 1, inf, -inf, 0 (count of non-zeros) and any
    other number p (sum(|x|**p)**(1/p))."""
    x = _cast(self, dtype)
    dim, keepdim = _merge("norm", dim, keepdim, None, None)
    if p == "fro" or p == 2:
        return _c_sum(x * x, axis=dim, keepdims=keepdim).sqrt()
    if p == 1:
        return _c_sum(x.abs(), axis=dim, keepdims=keepdim)
    if p == float("inf"):
        return amax(x.abs(), dim, keepdim)
    if p == float("-inf"):
        return amin(x.abs(), dim, keepdim)
    if p == 0:
        return _c_sum((x != 0).astype(x.dtype), axis=dim, keepdims=keepdim)
    if isinstance(p, (int, float)):
        a = x.abs()
        powed = (a.log() * float(p)).exp()
        return (_c_sum(powed, axis=dim, keepdims=keepdim).log() * (1.0 / p)).exp()
    raise ValueError(f"norm: p={p!r} is not supported (use 'fro', a number, inf or -inf)")


def logsumexp(self, dim, keepdim=False):
    """log(sum(exp(x))) over dim, stable: the maximum is subtracted first (and an infinite
    maximum replaced by 0, so a row of -inf gives -inf, not NaN)."""
    dim, keepdim = _merge("logsumexp", dim, keepdim, None, None)
    axes = _axes(dim, self.ndim) if self.ndim else None
    m = _c_max(self.detach(), axis=axes, keepdims=True)
    _C._masked_fill_(m, (m.abs() == float("inf")), 0.0)
    s = _c_sum((self - m).exp(), axis=axes, keepdims=True).log() + m
    return s if keepdim else s.reshape(_drop(self.shape, axes) if self.ndim else ())


def _empty_shape(t, dim, keepdim):
    if not keepdim:
        return _drop(t.shape, dim)
    axes = _axes(dim, t.ndim)
    return tuple(1 if i in axes else s for i, s in enumerate(t.shape))


def all(self, dim=None, keepdim=False):
    dim, keepdim = _merge("all", dim, keepdim, None, None)
    b = self if self.dtype.name == "bool" else self != 0
    if b.numel() == 0:
        from .create import ones
        return ones(_empty_shape(self, dim, keepdim), dtype="bool", device=self.device)
    return _c_min(b, axis=dim, keepdims=keepdim)


def any(self, dim=None, keepdim=False):
    dim, keepdim = _merge("any", dim, keepdim, None, None)
    b = self if self.dtype.name == "bool" else self != 0
    if b.numel() == 0:
        from .create import zeros
        return zeros(_empty_shape(self, dim, keepdim), dtype="bool", device=self.device)
    return _c_max(b, axis=dim, keepdims=keepdim)


METHODS = {
    "max": max, "min": min, "argmax": argmax, "argmin": argmin,
    "amax": amax, "amin": amin, "prod": prod, "var": var, "std": std, "norm": norm,
    "logsumexp": logsumexp, "all": all, "any": any,
}
