"""Continuous relaxations of the discrete families, as torch.distributions: the Concrete /
Gumbel-softmax ones (LogitRelaxedBernoulli and RelaxedBernoulli, ExpRelaxedCategorical and
RelaxedOneHotCategorical), OneHotCategoricalStraightThrough (one-hot draws whose gradient is
the probabilities'), and ContinuousBernoulli (Loaiza-Ganem and Cunningham, 2019) with
PyTorch's Taylor expansions near probs = 1/2. All of them rsample."""
import math

from .. import _C
from . import constraints
from .exp_family import ExponentialFamily
from .discrete import Categorical, OneHotCategorical
from .distribution import (Distribution, as_tensor, broadcast_all, clamp_probs, sample_uniform,
                           softplus)
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform


def _probs_logits(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        (probs,) = broadcast_all(probs)
        p = clamp_probs(probs)
        return probs, _C.log(p) - _C.log1p(-p)
    (logits,) = broadcast_all(logits)
    return _C.sigmoid(logits), logits


class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli draw: (logit u + logits) / temperature."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.probs, self.logits = _probs_logits(probs, logits)
        self.temperature = as_tensor(temperature, self.probs)
        super().__init__(tuple(self.probs.shape), validate_args=validate_args)

    def _param_names(self):
        return ("probs", "logits")

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(*shape))
        uniforms = clamp_probs(sample_uniform(shape, probs))
        return (_C.log(uniforms) - _C.log1p(-uniforms) + _C.log(probs)
                - _C.log1p(-probs)) / self.temperature

    def log_prob(self, value):
        value = as_tensor(value, self.logits)
        self._validate_sample(value)
        diff = self.logits - value * self.temperature
        return _C.log(self.temperature) + diff - 2 * _C.log1p(_C.exp(diff))


class RelaxedBernoulli(TransformedDistribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical draw (Gumbel-softmax scores, log-normalized)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        self.temperature = as_tensor(temperature, self._categorical.probs)
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,),
                         validate_args=validate_args)

    def _check_parameters(self):
        pass  # _categorical checked them

    def expand(self, batch_shape, _instance=None):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._categorical = self._categorical.expand(tuple(batch_shape))
        new._batch_shape = tuple(batch_shape)
        return new

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(sample_uniform(shape, self.logits))
        gumbels = -_C.log(-_C.log(uniforms))
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        value = as_tensor(value, self.logits)
        self._validate_sample(value)
        log_scale = math.lgamma(k) + _C.log(self.temperature) * (k - 1)
        score = self.logits - value * self.temperature
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def _check_parameters(self):
        pass  # the base checked them

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample is the one-hot draw plus (probs - probs.detach()):
    the straight-through gradient estimator (Bengio et al., 2013)."""
    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


class ContinuousBernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            p = clamp_probs(self.probs)
            self.logits = _C.log(p) - _C.log1p(-p)
        else:
            (self.logits,) = broadcast_all(logits)
            self.probs = clamp_probs(_C.sigmoid(self.logits))
        self._lims = lims
        super().__init__(tuple(self.probs.shape), validate_args=validate_args)

    def _param_names(self):
        return ("probs", "logits")

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return _C.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self):
        """log of the normalizing constant; a Taylor series where probs is near 1/2."""
        cut = self._cut_probs()
        below = _C.where(cut <= 0.5, cut, 0.0)
        above = _C.where(cut >= 0.5, cut, 1.0)
        log_norm = (_C.log((_C.log1p(-cut) - _C.log(cut)).abs())
                    - _C.where(cut <= 0.5, _C.log1p(-2.0 * below), _C.log(2.0 * above - 1.0)))
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _C.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (_C.log1p(-cut) - _C.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return _C.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return _C.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        var = (cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2
               + 1.0 / (_C.log1p(-cut) - _C.log(cut)) ** 2)
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 180.0 - 31.0 / 3780.0 * x) * x
        return _C.where(self._outside_unstable_region(), var, taylor)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(sample_uniform(shape, self.probs))

    def log_prob(self, value):
        value = as_tensor(value, self.probs)
        self._validate_sample(value)
        bce = softplus(self.logits) - self.logits * value  # binary_cross_entropy_with_logits
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value):
        value = as_tensor(value, self.probs)
        self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut ** value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = _C.where(self._outside_unstable_region(), cdfs, value)
        return _C.where(value <= 0.0, 0.0, _C.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value):
        value = as_tensor(value, self.probs)
        cut = self._cut_probs()
        inv = ((_C.log1p(-cut + value * (2.0 * cut - 1.0)) - _C.log1p(-cut))
               / (_C.log(cut) - _C.log1p(-cut)))
        return _C.where(self._outside_unstable_region(), inv, value)

    def entropy(self):
        log_probs0 = _C.log1p(-self.probs)
        log_probs1 = _C.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0


