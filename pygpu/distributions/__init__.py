"""pygpu.distributions: torch.distributions on pygpu tensors (every device): the
Distribution base class with validate_args, constraints, transforms, biject_to /
transform_to, TransformedDistribution, the families below, and kl_divergence with
register_kl. Draws come from the devices' Philox generators, which pygpu.manual_seed
seeds."""
from . import constraints, kl, transforms  # noqa: F401
from .constraint_registry import biject_to, transform_to
from .continuous import Beta, Dirichlet, Gamma, MultivariateNormal, Normal, Uniform
from .counts import Binomial, Geometric, Multinomial, NegativeBinomial, Poisson
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .kl import kl_divergence, register_kl
from .location_scale import (Cauchy, Chi2, Exponential, FisherSnedecor, GeneralizedPareto, Laplace,
                             StudentT)
from .lkj import LKJCholesky
from .low_rank_mvn import LowRankMultivariateNormal
from .mixture import MixtureSameFamily
from .relaxed import (ContinuousBernoulli, ExpRelaxedCategorical, LogitRelaxedBernoulli,
                      OneHotCategoricalStraightThrough, RelaxedBernoulli,
                      RelaxedOneHotCategorical)
from .transformed_distribution import TransformedDistribution
from .transformed_families import (Gumbel, HalfCauchy, HalfNormal, InverseGamma, Kumaraswamy,
                                   LogisticNormal, LogNormal, Pareto, Weibull)
from .von_mises import VonMises
from .wishart import Wishart
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform,
                         CorrCholeskyTransform,
                         CumulativeDistributionTransform, ExpTransform, IndependentTransform,
                         LowerCholeskyTransform, PositiveDefiniteTransform, PowerTransform,
                         ReshapeTransform, SigmoidTransform, SoftmaxTransform,
                         SoftplusTransform, StackTransform, StickBreakingTransform,
                         TanhTransform, Transform, identity_transform)

__all__ = ["Distribution", "ExponentialFamily", "Normal", "Uniform", "Gamma", "Beta", "Dirichlet",
           "MultivariateNormal", "Bernoulli", "Categorical", "OneHotCategorical", "Independent",
           "Exponential", "Laplace", "Cauchy", "StudentT", "Chi2", "LogNormal", "HalfNormal",
           "HalfCauchy", "Gumbel", "Pareto", "Weibull", "Poisson", "Geometric", "Binomial",
           "NegativeBinomial", "Multinomial", "MixtureSameFamily", "FisherSnedecor",
           "InverseGamma", "Kumaraswamy", "LogisticNormal", "ContinuousBernoulli",
           "RelaxedBernoulli", "LogitRelaxedBernoulli", "RelaxedOneHotCategorical",
           "ExpRelaxedCategorical", "OneHotCategoricalStraightThrough",
           "LowRankMultivariateNormal", "LKJCholesky", "Wishart", "VonMises", "GeneralizedPareto",
           "TransformedDistribution", "biject_to", "transform_to", "constraints", "transforms",
           "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform",
           "LowerCholeskyTransform", "PositiveDefiniteTransform", "PowerTransform",
           "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
           "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform", "identity_transform",
           "kl_divergence", "register_kl"]
