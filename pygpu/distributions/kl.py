"""kl_divergence(p, q) and register_kl, as torch.distributions.kl: the same-family closed
forms, registered in kl_registry.py's table (its lookup is torch's); the cross-family ones
(and ContinuousBernoulli's, the low-rank normals', TransformedDistribution's) are in
kl_cross.py, imported at the end so that loading this module registers every pair."""
import math

from .. import _C
from .continuous import Beta, Dirichlet, Gamma, MultivariateNormal, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .independent import Independent
from .kl_registry import _KL, _KL_MEMO, kl_divergence, register_kl  # noqa: F401


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1.0 - _C.log(var_ratio))


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = _C.log((q.high - q.low) / (p.high - p.low))
    outside = (q.low > p.low) | (q.high < p.high)
    return _C.where(outside, float("inf"), result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    common = p.high - p.low
    t1 = _C.log(math.sqrt(math.pi * 2) * q.scale / common)
    t2 = common ** 2 / 12.0
    t3 = ((p.high + p.low - 2.0 * q.loc) / 2.0) ** 2
    return t1 + 0.5 * (t2 + t3) / q.scale ** 2


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    def softplus(x):
        return _C.maximum(x, 0.0) + _C.log1p(_C.exp(-x.abs()))
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _C.where(q.probs == 0, float("inf"), t1)
    t1 = _C.where(p.probs == 0, 0.0, t1)
    t2 = (1.0 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _C.where(q.probs == 1, float("inf"), t2)
    t2 = _C.where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _C.where(q.probs == 0, float("inf"), t)
    t = _C.where(p.probs == 0, 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a, b, c, d = p.concentration, p.rate, q.concentration, q.rate
    t1 = c * _C.log(b / d)
    t2 = _C.lgamma(c) - _C.lgamma(a)
    t3 = (a - c) * _C.digamma(a)
    t4 = (d - b) * (a / b)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    s1, s2 = a1 + b1, a2 + b2
    t1 = _C.lgamma(a2) + _C.lgamma(b2) + _C.lgamma(s1)
    t2 = _C.lgamma(a1) + _C.lgamma(b1) + _C.lgamma(s2)
    t3 = (a1 - a2) * _C.digamma(a1)
    t4 = (b1 - b2) * _C.digamma(b1)
    t5 = (s2 - s1) * _C.digamma(s1)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    ap, aq = p.concentration, q.concentration
    sp, sq = ap.sum(-1), aq.sum(-1)
    t1 = _C.lgamma(sp) - _C.lgamma(sq)
    t2 = (_C.lgamma(ap) - _C.lgamma(aq)).sum(-1)
    t3 = ap - aq
    t4 = _C.digamma(ap) - _C.digamma(sp).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    from .. import linalg
    n = p.event_shape[0]
    half_term1 = q._half_log_det() - p._half_log_det()
    Lq, Lp = q._unbroadcasted_scale_tril, p._unbroadcasted_scale_tril
    batch = tuple(p.batch_shape) if len(p.batch_shape) >= len(q.batch_shape) else tuple(q.batch_shape)
    Lq_b = Lq.expand(*(batch + (n, n)))
    Lp_b = Lp.expand(*(batch + (n, n)))
    M = linalg.solve_triangular(Lq_b, Lp_b, upper=False)
    term2 = (M * M).sum((-2, -1))
    term3 = q._mahalanobis(p.loc - q.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different reinterpreted "
                                  "batch dimensions")
    r = kl_divergence(p.base_dist, q.base_dist)
    for _ in range(p.reinterpreted_batch_ndims):
        r = r.sum(-1)
    return r


# ---- the families of location_scale, transformed_families and counts (PyTorch's forms)
from .counts import Binomial, Geometric, Poisson  # noqa: E402
from .location_scale import Cauchy, Exponential, Laplace  # noqa: E402
from .transformed_families import EULER_GAMMA, Gumbel, HalfNormal, LogNormal, Pareto  # noqa: E402


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -_C.log(rate_ratio) + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -_C.log(scale_ratio)
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * _C.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = _C.log((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2))
    t2 = _C.log(4 * p.scale * q.scale)
    return t1 - t2


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -_C.log(ct1) - ct2 + ct3
    t2 = ct1 * EULER_GAMMA
    t3 = _C.exp(ct2 + _C.lgamma(1 + ct1) - ct3)
    return t1 + t2 + t3 - (1 + EULER_GAMMA)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    t1 = q.alpha * _C.log(scale_ratio)
    t2 = -_C.log(alpha_ratio)
    result = t1 + t2 + alpha_ratio - 1
    return _C.where(p.scale < q.scale, float("inf"), result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (_C.log(p.rate) - _C.log(q.rate)) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - _C.log1p(-q.probs) / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count "
                                  "is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + _C.log1p(-p.probs)
                          - _C.log1p(-q.probs))
    return _C.where(p.total_count > q.total_count, float("inf"), kl)


from .exp_family import ExponentialFamily  # noqa: E402


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer between q's and p's natural parameters."""
    from ..autograd import grad
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_nparams = [np_.detach().requires_grad_() for np_ in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        term = (qnp - pnp) * g
        for _ in range(len(q.event_shape)):
            term = term.sum(-1)
        result = result - term
    return result


from . import kl_cross  # noqa: E402,F401  (registers the cross-family pairs)
