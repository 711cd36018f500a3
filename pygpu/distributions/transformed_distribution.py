"""TransformedDistribution (a base distribution pushed through transforms, log_prob by the
change of variables) and the families PyTorch defines that way: LogNormal, HalfNormal,
HalfCauchy, Gumbel, Pareto, Weibull, RelaxedBernoulli's sigmoid, with PyTorch's shapes."""
import math

from .. import _C
from . import constraints
from .distribution import Distribution, as_tensor, broadcast_all, sum_rightmost
from .independent import Independent
from .transforms import ComposeTransform, Transform


class TransformedDistribution(Distribution):
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = transform.forward_shape(base_shape)
        expanded_base_shape = transform.inverse_shape(forward_shape)
        if base_shape != tuple(expanded_base_shape):
            cut = len(expanded_base_shape) - base_event_dim
            base_distribution = base_distribution.expand(tuple(expanded_base_shape[:cut]))
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        event_dim = transform.codomain.event_dim + max(base_event_dim - transform.domain.event_dim, 0)
        cut = len(forward_shape) - event_dim
        super().__init__(tuple(forward_shape[:cut]), tuple(forward_shape[cut:]),
                         validate_args=validate_args)

    @property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self._event_shape) > support.event_dim:
            support = constraints.independent(support, len(self._event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        shape = batch_shape + self._event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch = shape[:len(shape) - len(self.base_dist.event_shape)]
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.base_dist = self.base_dist.expand(base_batch)
        new._batch_shape = batch_shape
        return new

    def sample(self, sample_shape=()):
        x = self.base_dist.sample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        value = as_tensor(value, _like(self))
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - sum_rightmost(t.log_abs_det_jacobian(x, y),
                                                event_dim - t.domain.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y),
                                        event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        value = as_tensor(value, _like(self))
        for t in reversed(self.transforms):
            value = t.inv(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self._monotonize_cdf(as_tensor(value, _like(self)))
        value = self.base_dist.icdf(value)
        for t in self.transforms:
            value = t(value)
        return value


def _like(d):
    """A parameter tensor of d's innermost base distribution (for dtype and device)."""
    while hasattr(d, "base_dist"):
        d = d.base_dist
    for name in ("loc", "scale", "low", "rate", "concentration", "probs", "logits", "temperature"):
        v = d.__dict__.get(name)
        if v is not None and hasattr(v, "dtype"):
            return v
    return None
