"""MixtureSameFamily: a Categorical over k components of one family (the component
distribution's rightmost batch axis), as torch.distributions.MixtureSameFamily: log_prob by
logsumexp over components, mean and variance by the laws of total expectation and variance,
draws by gathering the chosen component's draw."""
from . import constraints
from .discrete import Categorical
from .distribution import Distribution, as_tensor


class MixtureSameFamily(Distribution):
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape)[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 f"compatible with `component_distribution.batch_shape`({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km is not None and kc is not None and km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, tuple(component_distribution.event_shape),
                         validate_args=validate_args)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        comp = self._component_distribution.expand(batch_shape + (self._num_component,))
        mix = self._mixture_distribution.expand(batch_shape)
        return MixtureSameFamily(mix, comp, validate_args=False)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_batch_ndims = len(self._batch_shape)
        cat_batch_ndims = len(self._mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        shape = tuple(x.shape)
        return x.reshape(shape[:-1] + (1,) * pad_ndims + shape[-1:] + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        comp = self._component_distribution
        mean_cond_var = (probs * comp.variance).sum(-1 - self._event_ndims)
        var_cond_mean = (probs * (comp.mean - self._pad(self.mean)) ** 2).sum(-1 - self._event_ndims)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        x = self._pad(as_tensor(x, self._mixture_distribution.probs))
        return (self._component_distribution.cdf(x) * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        x = as_tensor(x, self._mixture_distribution.probs)
        self._validate_sample(x)
        log_prob_x = self._component_distribution.log_prob(self._pad(x))  # [S, B, k]
        log_mix_prob = self._mixture_distribution.logits  # [B, k], already log-normalized
        return (log_prob_x + log_mix_prob).logsumexp(-1)  # [S, B]

    def sample(self, sample_shape=()):
        from ..autograd.grad_mode import no_grad
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        with no_grad():
            gather_dim = len(sample_shape) + len(self._batch_shape)
            es = self._event_shape
            mix_sample = self._mixture_distribution.sample(sample_shape)  # [n, B]
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self._component_distribution.sample(sample_shape)  # [n, B, k, E]
            idx = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            idx = idx.expand(*(mix_shape + (1,) + es)).contiguous()
            return comp_samples.gather(gather_dim, idx).squeeze(gather_dim)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  "
                f"{self._component_distribution!r})")


