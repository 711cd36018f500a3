"""torch.distributions.transforms: invertible maps between constraint sets, with the log
|det J| a TransformedDistribution's log_prob needs. A Transform maps x -> y (__call__),
y -> x (inv), knows its domain and codomain (constraints, whose event_dim says how many
rightmost axes one event spans), its sign (monotone ones) and, with cache_size=1, returns
the last pair without recomputing (so inv(t(x)) is x itself, as PyTorch's)."""
import math
import operator
from functools import reduce

from .. import _C
from .._tensor import create as _tensor_create
from . import constraints
from .distribution import Tensor, as_tensor, clamp_probs, finfo_of, softplus, sum_rightmost

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]


class Transform:
    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = None, None

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        inv = self._inv
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__ + "()"

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform, sharing its cache (t.inv.inv is t)."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """parts applied in order; its log|det J| sums each part's over the event axes."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = self._inv
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = inv
            inv._inv = self
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return _tensor_create.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(sum_rightmost(part.log_abs_det_jacobian(a, b),
                                       event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return reduce(operator.add, terms)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        return "ComposeTransform(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """base_transform with reinterpreted_batch_ndims more rightmost axes in one event."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.ndim < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.ndim < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """The rightmost in_shape axes reshaped to out_shape (same numel; log|det J| = 0)."""
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape)[:x.ndim - len(self.in_shape)]
        return x.reshape(batch_shape + self.out_shape)

    def _inverse(self, y):
        batch_shape = tuple(y.shape)[:y.ndim - len(self.out_shape)]
        return y.reshape(batch_shape + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch_shape = tuple(x.shape)[:x.ndim - len(self.in_shape)]
        return _tensor_create.zeros_like(x).sum(tuple(range(-len(self.in_shape), 0))).expand(*batch_shape) \
            if self.in_shape else _tensor_create.zeros_like(x)

    def forward_shape(self, shape):
        if len(shape) < len(self.in_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.in_shape)
        if tuple(shape[cut:]) != self.in_shape:
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {self.in_shape}")
        return tuple(shape[:cut]) + self.out_shape

    def inverse_shape(self, shape):
        if len(shape) < len(self.out_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.out_shape)
        if tuple(shape[cut:]) != self.out_shape:
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {self.out_shape}")
        return tuple(shape[:cut]) + self.in_shape


class ExpTransform(Transform):
    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return _C.exp(x)

    def _inverse(self, y):
        return _C.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""
    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        e = self.exponent
        return _C.sign(e) if isinstance(e, Tensor) else (1 if e > 0 else -1 if e < 0 else 0)

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(as_tensor(self.exponent).eq(
            as_tensor(other.exponent)).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return _C.log((self.exponent * y / x).abs())

    def forward_shape(self, shape):
        return _shape_with(shape, self.exponent)

    def inverse_shape(self, shape):
        return _shape_with(shape, self.exponent)


def _shape_with(shape, param):
    from .distribution import _broadcast_shape
    return _broadcast_shape(tuple(shape), tuple(getattr(param, "shape", ())))


class SigmoidTransform(Transform):
    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        fi = finfo_of(x)
        return _C.sigmoid(x).clamp(fi.tiny, 1.0 - fi.eps)

    def _inverse(self, y):
        fi = finfo_of(y)
        y = y.clamp(fi.tiny, 1.0 - fi.eps)
        return _C.log(y) - _C.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x) - softplus(x)


class SoftplusTransform(Transform):
    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return softplus(x)

    def _inverse(self, y):
        return _C.log(-_C.expm1(-y)) + y

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x)


class TanhTransform(Transform):
    """y = tanh(x): the squashing of SAC's policy; log|det J| in the stable form
    2 (log 2 - x - softplus(-2x))."""
    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return _C.tanh(x)

    def _inverse(self, y):
        return _C.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(Transform):
    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale * x, over event_dim rightmost axes as one event."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale = loc, scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else \
            constraints.independent(constraints.real, self._event_dim)

    @property
    def codomain(self):
        return self.domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                if a != b:
                    return False
            elif not bool((as_tensor(a) == as_tensor(b)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        s = self.scale
        if isinstance(s, (int, float)):
            return 1 if s > 0 else -1 if s < 0 else 0
        return _C.sign(s)

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        scale = self.scale
        if isinstance(scale, (int, float)):
            result = _tensor_create.full_like(x, math.log(abs(scale)))
        else:
            result = _C.log(scale.abs())
        if self._event_dim:
            result_size = tuple(result.shape)[:result.ndim - self._event_dim] + (-1,)
            result = result.reshape(result_size).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(*shape) if tuple(result.shape) != shape else result

    def forward_shape(self, shape):
        return _shape_with(_shape_with(shape, self.loc), self.scale)

    def inverse_shape(self, shape):
        return _shape_with(_shape_with(shape, self.loc), self.scale)


class SoftmaxTransform(Transform):
    """x -> softmax(x) over the last axis (not bijective: no log|det J|)."""
    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        probs = _C.exp(x - x.max(-1, keepdim=True).values)
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return _C.log(y)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


def _stick_offset(x, k):
    """log(k + 1 - i) for i = 1..k on x's device: the shift that makes zero map to the
    simplex's centre."""
    from .._tensor import create
    return create.arange(k, 0, -1, dtype=x.dtype, device=x.device)


class StickBreakingTransform(Transform):
    """R^K -> the (K+1)-simplex by stick breaking (bijective; PyTorch's formulas)."""
    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        from .._tensor.join import cat
        offset = _stick_offset(x, x.shape[-1])
        z = clamp_probs(_C.sigmoid(x - _C.log(offset)))
        z_cumprod = (1.0 - z).cumprod(-1)
        ones = _tensor_create.ones_like(z.narrow(-1, 0, 1))
        return cat([z, ones], -1) * cat([ones, z_cumprod], -1)

    def _inverse(self, y):
        y_crop = y.narrow(-1, 0, y.shape[-1] - 1)
        offset = _stick_offset(y, y_crop.shape[-1])
        sf = (1.0 - y_crop.cumsum(-1)).clamp(min=finfo_of(y).tiny)
        return _C.log(y_crop) - _C.log(sf) + _C.log(offset)

    def log_abs_det_jacobian(self, x, y):
        offset = _stick_offset(x, x.shape[-1])
        x = x - _C.log(offset)
        y_crop = y.narrow(-1, 0, y.shape[-1] - 1)
        return (-x - softplus(-x) + _C.log(y_crop)).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """An unconstrained square matrix -> a lower triangular one with a positive diagonal
    (strict lower part kept, diagonal exponentiated)."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + _diag_embed(_C.exp(x.diagonal(0, -2, -1)))

    def _inverse(self, y):
        return y.tril(-1) + _diag_embed(_C.log(y.diagonal(0, -2, -1)))


class PositiveDefiniteTransform(Transform):
    """An unconstrained square matrix -> L L^T with L its LowerCholeskyTransform."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        L = LowerCholeskyTransform()(x)
        return L @ L.transpose(-2, -1)

    def _inverse(self, y):
        from .. import linalg
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """x -> distribution.cdf(x): onto the unit interval; log|det J| is the log density."""
    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)


class CatTransform(Transform):
    """tseq applied to consecutive slices of lengths along dim, results concatenated."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: lengths and transforms differ in number")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, x, fns):
        from .._tensor.join import cat
        if not -x.ndim <= self.dim < x.ndim or x.shape[self.dim] != self.length:
            raise ValueError("CatTransform: input does not match dim and lengths")
        out, start = [], 0
        for fn, length in zip(fns, self.lengths):
            out.append(fn(x.narrow(self.dim, start, length)))
            start += length
        return cat(out, self.dim)

    def _call(self, x):
        return self._map(x, self.transforms)

    def _inverse(self, y):
        return self._map(y, [t.inv for t in self.transforms])

    def log_abs_det_jacobian(self, x, y):
        from .._tensor.join import cat
        parts, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            xs, ys = x.narrow(self.dim, start, length), y.narrow(self.dim, start, length)
            ladj = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                ladj = sum_rightmost(ladj, self.event_dim - t.event_dim)
            parts.append(ladj)
            start += length
        dim = self.dim
        if dim >= 0:
            dim = dim - x.ndim
        dim = dim + self.event_dim
        return cat(parts, dim) if dim < 0 else reduce(operator.add, parts)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """tseq applied to the slices of x along dim, results stacked."""

    def __init__(self, tseq, dim=0, cache_size=0):
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _map(self, x, fns):
        from .._tensor.join import stack
        if x.shape[self.dim] != len(self.transforms):
            raise ValueError("StackTransform: input size along dim differs from the transforms'")
        return stack([fn(x.select(self.dim, i)) for i, fn in enumerate(fns)], self.dim)

    def _call(self, x):
        return self._map(x, self.transforms)

    def _inverse(self, y):
        return self._map(y, [t.inv for t in self.transforms])

    def log_abs_det_jacobian(self, x, y):
        from .._tensor.join import stack
        return stack([t.log_abs_det_jacobian(x.select(self.dim, i), y.select(self.dim, i))
                      for i, t in enumerate(self.transforms)], self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


def _diag_embed(v):
    from .._tensor.shape import diag_embed
    return diag_embed(v)


def _tril_selector(n, diag, like):
    """(N, n*n) 0/1 matrix picking the entries of an n x n matrix's lower triangle below
    diagonal `diag` in row order (N of them): vec = flat @ P.T, flat = vec @ P. A product
    with a constant selector keeps both directions differentiable on every device."""
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    picks = [i * n + j for i in range(n) for j in range(n) if j < i + diag + 1]
    rows = [[1.0 if c == p else 0.0 for c in range(n * n)] for p in picks]
    return _tensor_create.tensor(rows, dtype=like.dtype, device=like.device).reshape(len(picks), n * n)


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    P = _tril_selector(n, diag, mat)
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat @ P.transpose(0, 1)


def vec_to_tril_matrix(vec, diag=0):
    N = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * N + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > finfo_of(vec).eps:
        raise ValueError(f"The size of last dimension is {N} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    n = round(n)
    flat = vec @ _tril_selector(n, diag, vec)
    return flat.reshape(tuple(vec.shape[:-1]) + (n, n))


class CorrCholeskyTransform(Transform):
    """A real vector of length D(D-1)/2 -> the Cholesky factor of a D x D correlation matrix
    (a signed stick breaking of tanh(x) per row, as torch's)."""
    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        from .._tensor.join import cat
        eps = finfo_of(x).eps
        x = _C.tanh(x).clamp(-1 + eps, 1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z = r * r
        z1m_cumprod_sqrt = _C.sqrt(1 - z).cumprod(-1)
        n = r.shape[-1]
        r = r + _tensor_create.eye(n, dtype=r.dtype, device=r.device)
        ones = _tensor_create.ones_like(z1m_cumprod_sqrt.narrow(-1, 0, 1))
        return r * cat([ones, z1m_cumprod_sqrt.narrow(-1, 0, n - 1)], -1)

    def _inverse(self, y):
        from .._tensor.join import cat
        n = y.shape[-1]
        y_cumsum = 1 - (y * y).cumsum(-1)
        ones = _tensor_create.ones_like(y_cumsum.narrow(-1, 0, 1))
        y_cumsum_shifted = cat([ones, y_cumsum.narrow(-1, 0, n - 1)], -1)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / _C.sqrt(y_cumsum_vec)
        return (_C.log1p(t) - _C.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)
        stick_breaking_logdet = 0.5 * _C.log(y1m_cumsum_tril).sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        N = shape[-1]
        D = round((0.25 + 2 * N) ** 0.5 + 0.5)
        if D * (D - 1) // 2 != N:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (D, D)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        D = shape[-1]
        return tuple(shape[:-2]) + (D * (D - 1) // 2,)
