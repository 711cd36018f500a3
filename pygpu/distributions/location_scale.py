"""Continuous families with closed forms on the real line or half line: Exponential,
Laplace, Cauchy, StudentT, Chi2 and FisherSnedecor, with PyTorch's parameters, formulas and shapes. Each
rsample is a differentiable map of parameter-free noise (StudentT's through a Chi2 draw,
whose gradient is gamma_sampling's implicit one)."""
import math

from .. import _C
from .._tensor import create as _tensor_create
from . import constraints
from .continuous import Gamma, Normal
from .exp_family import ExponentialFamily
from .distribution import Distribution, as_tensor, broadcast_all, finfo_of, sample_uniform


def _full(shape, value, like):
    return _tensor_create.full(tuple(shape), value, dtype=like.dtype, device=like.device)


class Exponential(ExponentialFamily):
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(tuple(self.rate.shape), validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = sample_uniform(shape, self.rate)
        # -log(1 - u) with u in [0, 1): finite, and 0 only where u is 0
        return -_C.log1p(-u) / self.rate

    def log_prob(self, value):
        value = as_tensor(value, self.rate)
        self._validate_sample(value)
        return _C.log(self.rate) - self.rate * value

    def cdf(self, value):
        value = as_tensor(value, self.rate)
        self._validate_sample(value)
        return 1.0 - _C.exp(-self.rate * value)

    def icdf(self, value):
        return -_C.log1p(-as_tensor(value, self.rate)) / self.rate

    def entropy(self):
        return 1.0 - _C.log(self.rate)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return _tensor_create.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -_C.log(-x)

    _mean_carrier_measure = 0


class Laplace(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = finfo_of(self.loc).eps
        u = sample_uniform(shape, self.loc) * (2.0 - eps) + (eps - 1.0)  # in (-1, 1)
        return self.loc - self.scale * _C.sign(u) * _C.log1p(-u.abs())

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        return -_C.log(2.0 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * _C.sign(d) * _C.expm1(-d.abs() / self.scale)

    def icdf(self, value):
        term = as_tensor(value, self.loc) - 0.5
        return self.loc - self.scale * _C.sign(term) * _C.log1p(-2.0 * term.abs())

    def entropy(self):
        return 1.0 + _C.log(2.0 * self.scale)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2.0 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale


class Cauchy(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = sample_uniform(shape, self.loc)
        return self.loc + self.scale * _C.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        return (-math.log(math.pi) - _C.log(self.scale)
                - _C.log1p(((value - self.loc) / self.scale) ** 2))

    def cdf(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        return _C.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return _C.tan(math.pi * (as_tensor(value, self.loc) - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + _C.log(self.scale)

    @property
    def mean(self):
        return _full(self._extended_shape(), float("nan"), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return _full(self._extended_shape(), float("inf"), self.loc)


class Chi2(Gamma):
    """Gamma(df / 2, 1 / 2)."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, _tensor_create.full_like(df, 0.5), validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2.0

    def _param_names(self):
        return ("concentration", "rate")


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        new._chi2 = self._chi2.expand(tuple(batch_shape))
        return new

    def rsample(self, sample_shape=()):
        # Y = X * rsqrt(Z / df), X ~ N(0, 1), Z ~ Chi2(df)
        X = Normal(_tensor_create.zeros_like(self.df), _tensor_create.ones_like(self.df)).rsample(sample_shape)
        Z = self._chi2.rsample(sample_shape)
        Y = X * _C.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        value = as_tensor(value, self.df)
        self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (_C.log(self.scale) + 0.5 * _C.log(self.df) + 0.5 * math.log(math.pi)
             + _C.lgamma(0.5 * self.df) - _C.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * _C.log1p(y ** 2.0 / self.df) - Z

    def entropy(self):
        lbeta = (_C.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - _C.lgamma(0.5 * (self.df + 1)))
        return (_C.log(self.scale) + 0.5 * (self.df + 1)
                * (_C.digamma(0.5 * (self.df + 1)) - _C.digamma(0.5 * self.df))
                + 0.5 * _C.log(self.df) + lbeta)

    @property
    def mean(self):
        return _C.where(self.df > 1, self.loc, float("nan"))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / _C.where(df > 2, df - 2.0, 1.0)
        m = _C.where(df > 2, finite, float("inf"))
        return _C.where(df <= 1, float("nan"), m)


class FisherSnedecor(Distribution):
    """F(df1, df2): the ratio of two scaled Chi2 draws."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=False)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=False)
        super().__init__(tuple(self.df1.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return FisherSnedecor(self.df1.expand(*batch_shape), self.df2.expand(*batch_shape),
                              validate_args=False)

    @property
    def mean(self):
        df2 = _C.where(self.df2 <= 2, float("nan"), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _C.where(self.df1 <= 2, float("nan"), mode)

    @property
    def variance(self):
        df2 = _C.where(self.df2 <= 4, float("nan"), self.df2)
        return (2 * df2.pow(2) * (self.df1 + df2 - 2)
                / (self.df1 * (df2 - 2).pow(2) * (df2 - 4)))

    def rsample(self, sample_shape=()):
        # X1 ~ Gamma(df1 / 2, 1 / df1), X2 ~ Gamma(df2 / 2, 1 / df2): X1 / X2 ~ F(df1, df2)
        X1 = self._gamma1.rsample(sample_shape)
        X2 = self._gamma2.rsample(sample_shape).clamp(min=finfo_of(self.df2).tiny)
        return (X1 / X2).clamp(min=finfo_of(self.df2).tiny)

    def log_prob(self, value):
        value = as_tensor(value, self.df1)
        self._validate_sample(value)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = _C.lgamma(ct1 + ct2) - _C.lgamma(ct1) - _C.lgamma(ct2)
        t2 = ct1 * _C.log(ct3) + (ct1 - 1) * _C.log(value)
        t3 = (ct1 + ct2) * _C.log1p(ct3 * value)
        return t1 + t2 - t3


class GeneralizedPareto(Distribution):
    """The generalized Pareto of extreme-value theory (concentration 0 is the exponential
    tail), as torch's: rsample by its icdf of a uniform."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    def _safe_concentration(self):
        eq_zero = self.concentration.abs() <= 1e-8  # torch.isclose(c, 0): atol 1e-8
        return eq_zero, _C.where(eq_zero, 1.0, self.concentration)

    def rsample(self, sample_shape=()):
        return self.icdf(sample_uniform(self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, c = self._safe_concentration()
        y = 1 / c + _tensor_create.ones_like(z)
        where_nonzero = _C.where(y == 0, y, y * _C.log1p(c * z))
        return -_C.log(self.scale) - _C.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, c = self._safe_concentration()
        return _C.where(eq_zero, -z, -_C.log1p(c * z) / c)

    def log_cdf(self, value):
        return _C.log1p(-_C.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return _C.exp(self.log_cdf(value))

    def icdf(self, value):
        value = as_tensor(value, self.loc)
        eq_zero, c = self._safe_concentration()
        logu = _C.log1p(-value)
        where_nonzero = self.loc + self.scale / c * _C.expm1(-c * logu)
        return _C.where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        c = _C.where(valid, self.concentration, 0.5)
        return _C.where(valid, self.loc + self.scale / (1 - c), float("nan"))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        c = _C.where(valid, self.concentration, 0.25)
        return _C.where(valid, self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c)), float("nan"))

    def entropy(self):
        ans = _C.log(self.scale) + self.concentration + 1
        return ans.expand(*self._batch_shape) if tuple(ans.shape) != self._batch_shape else ans

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = _C.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                         float("inf"))
        return constraints.interval(self.loc, upper)
