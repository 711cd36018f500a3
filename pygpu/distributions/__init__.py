"""pygpu.distributions: torch.distributions' families pygpu has (Normal, Uniform, Gamma,
Beta, Dirichlet, MultivariateNormal, Bernoulli, Categorical, OneHotCategorical,
Independent), kl_divergence with register_kl, and the Distribution base class. Draws
come from the devices' Philox generators, which pygpu.manual_seed seeds."""
from . import kl  # noqa: F401
from .continuous import Beta, Dirichlet, Gamma, MultivariateNormal, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .distribution import Distribution
from .independent import Independent
from .kl import kl_divergence, register_kl

__all__ = ["Distribution", "Normal", "Uniform", "Gamma", "Beta", "Dirichlet",
           "MultivariateNormal", "Bernoulli", "Categorical", "OneHotCategorical", "Independent",
           "kl_divergence", "register_kl"]
