"""The families PyTorch defines as a TransformedDistribution of a simpler one: LogNormal
(exp of a Normal), HalfNormal and HalfCauchy (|x|), Gumbel (-log(-log u)), Pareto (scale
exp(x), x Exponential) and Weibull (scale x^(1/k), x Exponential). Their closed-form
moments and entropies are PyTorch's; log_prob, cdf, icdf and rsample come from the
transforms (rsample is reparametrized wherever the base's is)."""
import math

from .. import _C
from .._tensor import create as _tensor_create
from . import constraints
from .continuous import Gamma, Normal, Uniform
from .distribution import as_tensor, broadcast_all, finfo_of
from .location_scale import Cauchy, Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, ExpTransform, PowerTransform,
                         StickBreakingTransform)

EULER_GAMMA = 0.57721566490153286060


def _full(shape, value, like):
    return _tensor_create.full(tuple(shape), value, dtype=like.dtype, device=like.device)


class LogNormal(TransformedDistribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return _C.exp(self.loc + self.scale.pow(2) / 2)

    @property
    def mode(self):
        return _C.exp(self.loc - self.scale.pow(2))

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return _C.expm1(s2) * _C.exp(2 * self.loc + s2)

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _HalfOf(TransformedDistribution):
    """|X| for X symmetric about 0: density doubled on [0, inf)."""
    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self):
        return self.base_dist.scale

    def log_prob(self, value):
        value = as_tensor(value, self.scale)
        self._validate_sample(value)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return _C.where(value >= 0, lp, float("-inf"))

    def cdf(self, value):
        value = as_tensor(value, self.scale)
        self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((as_tensor(prob, self.scale) + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)

    @property
    def mode(self):
        return _tensor_create.zeros_like(self.scale)


class HalfNormal(_HalfOf):
    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        base = Normal(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_HalfOf):
    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        base = Cauchy(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def mean(self):
        return _full(self._extended_shape(), float("inf"), self.scale)

    @property
    def variance(self):
        return self.base_dist.variance


class Gumbel(TransformedDistribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = finfo_of(self.loc)
        base = Uniform(_tensor_create.full_like(self.loc, fi.tiny), _tensor_create.full_like(self.loc, 1 - fi.eps),
                       validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-_tensor_create.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return Gumbel(self.loc.expand(*batch_shape), self.scale.expand(*batch_shape),
                      validate_args=False)

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - _C.exp(y)) - _C.log(self.scale)

    @property
    def mean(self):
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return _C.log(self.scale) + (1 + EULER_GAMMA)


class Pareto(TransformedDistribution):
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return Pareto(self.scale.expand(*batch_shape), self.alpha.expand(*batch_shape),
                      validate_args=False)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return _C.log(self.scale / self.alpha) + self.alpha.reciprocal() + 1


class Weibull(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(_tensor_create.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return Weibull(self.scale.expand(*batch_shape), self.concentration.expand(*batch_shape),
                       validate_args=False)

    @property
    def mean(self):
        return self.scale * _C.exp(_C.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (_C.exp(_C.lgamma(1 + 2 * r))
                                    - _C.exp(2 * _C.lgamma(1 + r)))

    def entropy(self):
        return (EULER_GAMMA * (1 - self.concentration_reciprocal)
                + _C.log(self.scale * self.concentration_reciprocal) + 1)


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -_tensor_create.ones_like(base.rate)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        a = self.concentration
        return _C.where(a > 1, self.rate / (a - 1), float("inf"))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        return _C.where(a > 2, self.rate.pow(2) / ((a - 1).pow(2) * (a - 2)), float("inf"))

    def entropy(self):
        a = self.concentration
        return a + _C.log(self.rate) + _C.lgamma(a) - (1 + a) * _C.digamma(a)


def _kumaraswamy_moment(a, b, n):
    arg1 = 1 + n / a
    return _C.exp(_C.log(b) + _C.lgamma(arg1) + _C.lgamma(b) - _C.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """(1 - (1 - U)^(1/b))^(1/a), U uniform on (0, 1)."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(_tensor_create.full_like(self.concentration0, 0),
                       _tensor_create.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return Kumaraswamy(self.concentration1.expand(*batch_shape),
                           self.concentration0.expand(*batch_shape), validate_args=False)

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        c1, c0 = self.concentration1, self.concentration0
        log_mode = c0.reciprocal() * _C.log1p(-c0) - _C.log1p(-c0 * c1)
        return _C.exp(_C.where((c0 < 1) | (c1 < 1), float("nan"), log_mode))

    @property
    def variance(self):
        return (_kumaraswamy_moment(self.concentration1, self.concentration0, 2)
                - self.mean.pow(2))

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = _C.digamma(self.concentration0 + 1) + EULER_GAMMA
        return t0 + t1 * H0 - _C.log(self.concentration1) - _C.log(self.concentration0)


class LogisticNormal(TransformedDistribution):
    """StickBreakingTransform of a Normal: a distribution on the simplex."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + tuple(self.base_dist.batch_shape[-1:]))
        new._batch_shape = tuple(batch_shape)
        return new

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
