"""The continuous families: Normal, Uniform, Gamma, Beta, Dirichlet, MultivariateNormal,
with PyTorch's parameters, formulas and shapes. Each rsample is a differentiable
transform of parameter-free noise (Gamma, Beta and Dirichlet through gamma_sampling's
implicit gradient)."""
import math

from .. import _C
from .._tensor import create as _tensor_create
from . import constraints
from .distribution import (LOG_2PI, Distribution, as_tensor, broadcast_all, sample_normal,
                           sample_uniform)
from .exp_family import ExponentialFamily
from .gamma_sampling import StandardGamma

Tensor = _C.Tensor


class Normal(ExponentialFamily):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.loc + sample_normal(shape, self.loc) * self.scale

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        var = self.scale * self.scale
        return -((value - self.loc) ** 2) / (var * 2.0) - _C.log(self.scale) - 0.5 * LOG_2PI

    def entropy(self):
        return 0.5 + 0.5 * LOG_2PI + _C.log(self.scale)

    def cdf(self, value):
        return 0.5 * (1.0 + _C.erf((as_tensor(value, self.loc) - self.loc) / (self.scale * math.sqrt(2.0))))

    def icdf(self, value):
        return self.loc + self.scale * _C.erfinv(as_tensor(value, self.loc) * 2.0 - 1.0) * math.sqrt(2.0)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self.scale * self.scale

    @property
    def stddev(self):
        return self.scale

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * _C.log(-math.pi / y)

    _mean_carrier_measure = 0


class Uniform(Distribution):
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(tuple(self.low.shape), validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.low + sample_uniform(shape, self.low) * (self.high - self.low)

    def log_prob(self, value):
        value = as_tensor(value, self.low)
        self._validate_sample(value)
        inside = (value >= self.low) & (value < self.high)
        lp = -_C.log(self.high - self.low)
        return _C.where(inside, lp, float("-inf"))

    def entropy(self):
        return _C.log(self.high - self.low)

    def cdf(self, value):
        return ((as_tensor(value, self.low) - self.low) / (self.high - self.low)).clamp(0.0, 1.0)

    def icdf(self, value):
        return self.low + as_tensor(value, self.low) * (self.high - self.low)

    @property
    def mean(self):
        return (self.high + self.low) / 2.0

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12.0


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(tuple(self.concentration.shape), validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        a = self.concentration.expand(*shape) if shape != tuple(self.concentration.shape) \
            else self.concentration
        return StandardGamma.apply(a.contiguous()) / self.rate

    def log_prob(self, value):
        value = as_tensor(value, self.concentration)
        self._validate_sample(value)
        a, b = self.concentration, self.rate
        return _C.xlogy(a, b) + _C.xlogy(a - 1.0, value) - b * value - _C.lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - _C.log(self.rate) + _C.lgamma(a) + (1.0 - a) * _C.digamma(a)

    def cdf(self, value):
        """P(concentration, rate * value): the regularized lower incomplete gamma function."""
        from .._tensor.math import igamma
        value = as_tensor(value, self.concentration)
        self._validate_sample(value)
        return igamma(self.concentration, self.rate * value)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1.0) / self.rate).clamp(min=0.0)

    @property
    def variance(self):
        return self.concentration / (self.rate * self.rate)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _C.lgamma(x + 1) + (x + 1) * _C.log(-y.reciprocal())

    _mean_carrier_measure = 0


class Beta(ExponentialFamily):
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(tuple(self.concentration1.shape), validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g1 = Gamma(self.concentration1.expand(*shape), 1.0).rsample()
        g0 = Gamma(self.concentration0.expand(*shape), 1.0).rsample()
        return g1 / (g1 + g0)

    def log_prob(self, value):
        x = as_tensor(value, self.concentration1)
        self._validate_sample(x)
        a, b = self.concentration1, self.concentration0
        return (_C.xlogy(a - 1.0, x) + _C.xlogy(b - 1.0, 1.0 - x)
                - (_C.lgamma(a) + _C.lgamma(b) - _C.lgamma(a + b)))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        t = a + b
        return (_C.lgamma(a) + _C.lgamma(b) - _C.lgamma(t) - (a - 1.0) * _C.digamma(a)
                - (b - 1.0) * _C.digamma(b) + (t - 2.0) * _C.digamma(t))

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return (self.concentration1 - 1.0) / (self.concentration1 + self.concentration0 - 2.0)

    @property
    def variance(self):
        t = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (t * t * (t + 1.0))


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        self.concentration = as_tensor(concentration)
        if self.concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        super().__init__(tuple(self.concentration.shape[:-1]),
                         tuple(self.concentration.shape[-1:]), validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = StandardGamma.apply(self.concentration.expand(*shape).contiguous())
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        x = as_tensor(value, self.concentration)
        self._validate_sample(x)
        a = self.concentration
        return (_C.xlogy(a - 1.0, x).sum(-1) + _C.lgamma(a.sum(-1))
                - _C.lgamma(a).sum(-1))

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return (_C.lgamma(a).sum(-1) - _C.lgamma(a0) - (k - a0) * _C.digamma(a0)
                - ((a - 1.0) * _C.digamma(a)).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def variance(self):
        a0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (a0 - self.concentration) / (a0 * a0 * (a0 + 1.0))


class MultivariateNormal(Distribution):
    """N(loc, Sigma) with Sigma given as covariance_matrix, precision_matrix or
    scale_tril (its Cholesky factor: the form every computation uses)."""
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _lazy_params = ("covariance_matrix", "precision_matrix")

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        from .. import linalg
        if (covariance_matrix is not None) + (scale_tril is not None) + \
                (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        loc = as_tensor(loc)
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if scale_tril is not None:
            L = scale_tril
        elif covariance_matrix is not None:
            L = linalg.cholesky(covariance_matrix)
        else:
            L = linalg.cholesky(linalg.inv(precision_matrix))
        n = loc.shape[-1]
        batch = _broadcast(tuple(loc.shape[:-1]), tuple(L.shape[:-2]))
        self.loc = loc.expand(*(batch + (n,)))
        self._unbroadcasted_scale_tril = L
        self.scale_tril = L.expand(*(batch + (n, n)))
        super().__init__(batch, (n,), validate_args=validate_args)

    @property
    def covariance_matrix(self):
        L = self.scale_tril
        return L @ L.transpose(-2, -1)

    @property
    def precision_matrix(self):
        from .. import linalg
        return linalg.inv(self.covariance_matrix)

    def _param_names(self):
        return ("loc", "scale_tril")

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = sample_normal(shape, self.loc)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        from .._tensor.shape import diagonal
        return _C.log(diagonal(self._unbroadcasted_scale_tril, 0, -2, -1)).sum(-1)

    def _mahalanobis(self, diff):
        """|L^-1 diff|^2 over the last axis (diff broadcast with the batch)."""
        from .. import linalg
        L = self._unbroadcasted_scale_tril
        shape = _broadcast(tuple(diff.shape[:-1]), tuple(L.shape[:-2]))
        Lb = L.expand(*(shape + tuple(L.shape[-2:])))
        db = diff.expand(*(shape + tuple(diff.shape[-1:])))
        y = linalg.solve_triangular(Lb, db.unsqueeze(-1), upper=False).squeeze(-1)
        return (y * y).sum(-1)

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        diff = value - self.loc
        n = self._event_shape[0]
        return -0.5 * (n * LOG_2PI + self._mahalanobis(diff)) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + LOG_2PI) + self._half_log_det()
        return h.expand(*self._batch_shape) if self._batch_shape else h

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return (L * L).sum(-1).expand(*(self._batch_shape + self._event_shape))


def _broadcast(a, b):
    from .distribution import _broadcast_shape
    return _broadcast_shape(a, b)
