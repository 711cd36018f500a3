"""Count families: Poisson, Geometric and Binomial, with PyTorch's parameters (probs or
logits), formulas, enumerate_support and shapes. Draws: Poisson from pygpu.poisson,
Geometric by inversion, Binomial as a sum of Bernoulli draws on the device."""
from .. import _C
from .._tensor import create as _tensor_create
from . import constraints
from .discrete import _clamp_probs
from .exp_family import ExponentialFamily
from .distribution import Distribution, as_tensor, broadcast_all, finfo_of, sample_uniform, softplus


def _probs_and_logits(probs, logits, *extra):
    """(probs, logits, *extra) broadcast together, the missing one of probs/logits derived."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        probs, *extra = broadcast_all(probs, *extra)
        p = _clamp_probs(probs)
        return probs, _C.log(p) - _C.log1p(-p), extra
    logits, *extra = broadcast_all(logits, *extra)
    return _C.sigmoid(logits), logits, extra


class Poisson(ExponentialFamily):
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(tuple(self.rate.shape), validate_args=validate_args)

    def sample(self, sample_shape=()):
        from .._tensor.random import poisson
        shape = self._extended_shape(sample_shape)
        rate = self.rate.detach()
        return poisson(rate.expand(*shape).contiguous() if shape != tuple(rate.shape) else rate)

    def log_prob(self, value):
        value = as_tensor(value, self.rate)
        self._validate_sample(value)
        return _C.xlogy(value, self.rate) - self.rate - _C.lgamma(value + 1)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    @property
    def _natural_params(self):
        return (_C.log(self.rate),)

    def _log_normalizer(self, x):
        return _C.exp(x)


class Geometric(Distribution):
    """The number of failures before the first success, P(k) = (1 - p)^k p."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        self.probs, self.logits, _ = _probs_and_logits(probs, logits)
        super().__init__(tuple(self.probs.shape), validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(f"Expected parameter probs (Tensor of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to be "
                             f"positive but found invalid values:\n{self.probs}")

    def _param_names(self):
        return ("probs", "logits")

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = finfo_of(self.probs).tiny
        u = sample_uniform(shape, self.probs).clamp(min=tiny)
        return (_C.log(u) / _C.log1p(-self.probs.detach())).floor()

    def log_prob(self, value):
        value = as_tensor(value, self.probs)
        self._validate_sample(value)
        p = self.probs
        # (1 - p)^0 is 1 at p = 1: the k = 0 term must not be 0 * -inf
        log_q = _C.where((p == 1) & (value == 0), 0.0, _C.log1p(-p))
        return value * log_q + _C.log(p)

    def entropy(self):
        # binary_cross_entropy_with_logits(logits, probs) / probs
        return (softplus(self.logits) - self.probs * self.logits) / self.probs

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return _tensor_create.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs


class Binomial(Distribution):
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self.probs, self.logits, (self.total_count,) = _probs_and_logits(probs, logits, total_count)
        self.total_count = self.total_count.to(self.probs.dtype)
        super().__init__(tuple(self.probs.shape), validate_args=validate_args)

    def _param_names(self):
        return ("total_count", "probs", "logits")

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        n_max = int(self.total_count.max()) if self.total_count.numel() else 0
        p = self.probs.detach().expand(*shape)
        n = self.total_count.expand(*shape)
        trials = _tensor_create.arange(n_max, dtype=p.dtype, device=p.device)  # (n_max,)
        u = sample_uniform(shape + (n_max,), p)
        hits = (u < p.unsqueeze(-1)) & (trials < n.unsqueeze(-1))
        return hits.to(p.dtype).sum(-1)

    def log_prob(self, value):
        value = as_tensor(value, self.probs)
        self._validate_sample(value)
        n, l = self.total_count, self.logits
        log_factorial_n = _C.lgamma(n + 1)
        log_factorial_k = _C.lgamma(value + 1)
        log_factorial_nmk = _C.lgamma(n - value + 1)
        # (clamp(min=0) + x - clamp(max=0)) / 2: torch's clamp_by_zero, whose gradient at 0 is 1/2
        clamp_by_zero = (l.clamp(min=0) + l - l.clamp(max=0)) / 2
        normalize_term = n * clamp_by_zero + n * _C.log1p(_C.exp(-l.abs())) - log_factorial_n
        return value * l - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not int(self.total_count.min()) == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(_C.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max())
        if not int(self.total_count.min()) == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by "
                                      "`enumerate_support`.")
        values = _tensor_create.arange(1 + total_count, dtype=self.probs.dtype,
                                       device=self.probs.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(*((-1,) + self._batch_shape)) if expand else values

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)


class NegativeBinomial(Distribution):
    """The number of successes before total_count failures, success probability probs."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        self.probs, self.logits, (self.total_count,) = _probs_and_logits(probs, logits, total_count)
        self.total_count = self.total_count.to(self.probs.dtype)
        super().__init__(tuple(self.probs.shape), validate_args=validate_args)

    def _param_names(self):
        return ("total_count", "probs", "logits")

    def sample(self, sample_shape=()):
        from .continuous import Gamma
        from ..autograd.grad_mode import no_grad
        with no_grad():
            rate = _C.exp(-self.logits.detach())
            gamma = Gamma(self.total_count.detach(), rate, validate_args=False).sample(sample_shape)
            return Poisson(gamma, validate_args=False).sample()

    def log_prob(self, value):
        value = as_tensor(value, self.probs)
        self._validate_sample(value)
        n, l = self.total_count, self.logits
        log_unnormalized_prob = n * -softplus(l) + value * -softplus(-l)  # logsigmoid(-l), (l)
        log_normalization = -_C.lgamma(n + value) + _C.lgamma(1.0 + value) + _C.lgamma(n)
        log_normalization = _C.where(n + value == 0, 0.0, log_normalization)
        return log_unnormalized_prob - log_normalization

    @property
    def mean(self):
        return self.total_count * _C.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * _C.exp(self.logits)).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / _C.sigmoid(-self.logits)


class Multinomial(Distribution):
    """Counts of total_count independent Categorical(probs) draws (event shape (k,))."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        from .discrete import Categorical
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=validate_args)
        self._binomial = Binomial(total_count=total_count, probs=self._categorical.probs,
                                  validate_args=False)
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,),
                         validate_args=validate_args)

    def _check_parameters(self):
        pass  # _categorical checked them

    def expand(self, batch_shape, _instance=None):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._categorical = self._categorical.expand(tuple(batch_shape))
        new._binomial = self._binomial.expand(tuple(batch_shape) + self._event_shape)
        new._batch_shape = tuple(batch_shape)
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        k = self._categorical._num_events
        idx = self._categorical.sample((self.total_count,) + tuple(sample_shape))  # (n, S, B)
        categories = _tensor_create.arange(k, device=idx.device)
        return (idx.unsqueeze(-1) == categories).to(self.probs.dtype).sum(0)

    def entropy(self):
        n = float(self.total_count)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - _C.lgamma(_tensor_create.full((), n, dtype=self.probs.dtype,
                                                                 device=self.probs.device) + 1)
        support = self._binomial.enumerate_support(expand=False)
        support = support.narrow(0, 1, support.shape[0] - 1)
        binomial_probs = _C.exp(self._binomial.log_prob(support))
        weights = _C.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum((0, -1))

    def log_prob(self, value):
        value = as_tensor(value, self.probs)
        self._validate_sample(value)
        logits = self.logits
        log_factorial_n = _C.lgamma(value.sum(-1) + 1)
        log_factorial_xs = _C.lgamma(value + 1).sum(-1)
        logits = _C.where((value == 0) & (logits == float("-inf")), 0.0, logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
