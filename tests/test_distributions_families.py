# test_distributions_families.py - the families beyond the first thirteen (Exponential,
# Laplace, Cauchy, StudentT, Chi2, LogNormal, HalfNormal, HalfCauchy, Gumbel, Pareto, Weibull,
# Poisson, Geometric, Binomial) against torch.distributions on every device: log_prob, cdf,
# icdf, entropy, mean, mode, variance in float64 with the gradients of log_prob + entropy;
# batch/event shapes and expand; draws by their moments over 20k samples; rsample's pathwise
# gradients against the closed form on the same draw; validate_args's errors in torch's
# words; and the KL pairs torch registers between them, with gradients.
import numpy as np
import pytest
import torch
import torch.distributions as TD

import pygpu
import pygpu.distributions as PD

from _helpers import to_device

R = np.random.default_rng(43)
_POS = np.abs(R.standard_normal(3)) + 0.5
_LOC = R.standard_normal(3)
_X = np.abs(R.standard_normal(3)) + 0.2  # values on the half line (and > Pareto's scale)
_PROBS = np.array([0.2, 0.5, 0.85])

# name: (factory(module, *params), parameter arrays, a value, the methods torch has)
_ALL = ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev")
_NO_CDF = ("log_prob", "entropy", "mean", "mode", "variance", "stddev")
FAMILIES = {
    "Exponential": (lambda m, r: m.Exponential(r), [_POS], _X, _ALL),
    "Laplace": (lambda m, a, b: m.Laplace(a, b), [_LOC, _POS], _X - 1, _ALL),
    "Cauchy": (lambda m, a, b: m.Cauchy(a, b), [_LOC, _POS], _X - 1, _ALL),
    "StudentT": (lambda m, d, a, b: m.StudentT(d, a, b), [_POS + 2.1, _LOC, _POS], _X - 1, _NO_CDF),
    "StudentT heavy": (lambda m, d: m.StudentT(d), [np.array([0.7, 1.5, 4.0])], _X, _NO_CDF),
    "Chi2": (lambda m, d: m.Chi2(d), [_POS * 3], _X, _NO_CDF + ("cdf",)),
    "LogNormal": (lambda m, a, b: m.LogNormal(a, b), [_LOC, _POS], _X, _ALL),
    "HalfNormal": (lambda m, s: m.HalfNormal(s), [_POS], _X, _ALL),
    "HalfCauchy": (lambda m, s: m.HalfCauchy(s), [_POS], _X, _ALL),
    "Gumbel": (lambda m, a, b: m.Gumbel(a, b), [_LOC, _POS], _X - 1, _ALL),
    "Pareto": (lambda m, s, a: m.Pareto(s, a), [_X * 0.5, _POS + 2], _X + 0.1, _ALL),
    "Weibull": (lambda m, s, k: m.Weibull(s, k), [_POS, _POS + 1], _X, _ALL),
    "Poisson": (lambda m, r: m.Poisson(r), [_POS * 3], np.array([0.0, 2.0, 5.0]),
                ("log_prob", "mean", "mode", "variance", "stddev")),
    "Geometric probs": (lambda m, p: m.Geometric(probs=p), [_PROBS], np.array([0.0, 2.0, 5.0]),
                        _NO_CDF),
    "Geometric logits": (lambda m, l: m.Geometric(logits=l), [_LOC], np.array([0.0, 2.0, 5.0]),
                         _NO_CDF),
    "Binomial": (lambda m, p: m.Binomial(6, probs=p), [_PROBS], np.array([0.0, 2.0, 6.0]),
                 _NO_CDF),
    "Binomial logits": (lambda m, l: m.Binomial(4, logits=l), [_LOC], np.array([4.0, 1.0, 0.0]),
                        _NO_CDF),
    "NegativeBinomial": (lambda m, n, p: m.NegativeBinomial(n, probs=p), [_POS * 3, _PROBS * 0.9],
                         np.array([0.0, 2.0, 5.0]), ("log_prob", "mean", "mode", "variance", "stddev")),
    "NegativeBinomial logits": (lambda m, n, l: m.NegativeBinomial(n, logits=l), [_POS + 1, _LOC],
                                np.array([3.0, 0.0, 1.0]), ("log_prob", "mean", "mode", "variance",
                                                            "stddev")),
    "Multinomial": (lambda m, p: m.Multinomial(5, probs=p), [_PROBS], np.array([1.0, 2.0, 2.0]),
                    ("log_prob", "entropy", "mean", "variance", "stddev")),
    "FisherSnedecor": (lambda m, a, b: m.FisherSnedecor(a, b), [_POS * 3 + 2.5, _POS * 4 + 4.5], _X,
                       ("log_prob", "mean", "mode", "variance", "stddev")),
    "InverseGamma": (lambda m, a, b: m.InverseGamma(a, b), [_POS + 2, _POS], _X,
                     ("log_prob", "cdf", "entropy", "mean", "mode", "variance", "stddev")),
    "Kumaraswamy": (lambda m, a, b: m.Kumaraswamy(a, b), [_POS + 1, _POS + 1.5], _PROBS * 0.9,
                    ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev")),
    "LogisticNormal": (lambda m, a, b: m.LogisticNormal(a, b), [_LOC, _POS],
                       np.array([0.1, 0.2, 0.3, 0.4]), ("log_prob",)),
    "ContinuousBernoulli": (lambda m, p: m.ContinuousBernoulli(probs=p), [np.array([0.2, 0.5, 0.9])],
                            _PROBS * 0.9, ("log_prob", "cdf", "icdf", "entropy", "mean", "variance",
                                           "stddev")),
    "ContinuousBernoulli logits": (lambda m, l: m.ContinuousBernoulli(logits=l), [_LOC], _PROBS * 0.9,
                                   ("log_prob", "cdf", "icdf", "entropy", "mean", "variance",
                                    "stddev")),
    "RelaxedBernoulli": (lambda m, t, p: m.RelaxedBernoulli(t, probs=p), [np.array([0.5, 1.0, 2.0]), _PROBS],
                         _PROBS * 0.9, ("log_prob",)),
    "RelaxedOneHotCategorical": (lambda m, t, l: m.RelaxedOneHotCategorical(t, logits=l),
                                 [np.array(0.7), _LOC], np.array([0.2, 0.3, 0.5]), ("log_prob",)),
    "VonMises": (lambda m, a, k: m.VonMises(a, k), [_LOC, _POS], _X - 1,
                 ("log_prob", "mean", "mode", "variance", "stddev")),
    "GeneralizedPareto": (lambda m, a, b, c: m.GeneralizedPareto(a, b, c),
                          [_LOC, _POS, np.array([-0.3, 0.0, 0.2])], _LOC + _X * 0.5, _ALL),
    "MixtureSameFamily": (lambda m, l, a, b: m.MixtureSameFamily(m.Categorical(logits=l), m.Normal(a, b)),
                          [_LOC, _LOC * 2, _POS], _X - 1, ("log_prob", "cdf", "mean", "variance", "stddev")),
}


def _vals(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def _evaluate(d, what, v):
    if what in ("log_prob", "cdf"):
        return getattr(d, what)(v)
    if what == "icdf":
        return d.icdf(v * 0 + 0.3)
    if what == "entropy":
        return d.entropy()
    return getattr(d, what)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_matches_torch(device, name):
    fn, arrays, value, methods = FAMILIES[name]
    if name == "GeneralizedPareto":  # torch's log_prob isclose()s with a float32 zero: float64 fails
        arrays, value = [a.astype(np.float32) for a in arrays], value.astype(np.float32)
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    pt = [to_device(a, device).requires_grad_() for a in arrays]
    dt, dp = fn(TD, *tt), fn(PD, *pt)
    assert tuple(dp.batch_shape) == tuple(dt.batch_shape)
    assert tuple(dp.event_shape) == tuple(dt.event_shape)
    assert dp.has_rsample == dt.has_rsample
    vt, vp = torch.tensor(value), to_device(value, device)
    for what in methods:
        want, got = _evaluate(dt, what, vt), _evaluate(dp, what, vp)
        # torch's Multinomial.entropy takes lgamma(total_count + 1) of an int64 tensor, in float32
        rtol = 1e-7 if (name, what) == ("Multinomial", "entropy") else 1e-9
        if name == "VonMises":  # torch's log I0, I1 are polynomial fits good to ~1e-7; ours exact
            rtol = 1e-6
        if name == "GeneralizedPareto":
            rtol = 1e-5
        np.testing.assert_allclose(_vals(got), _vals(want), rtol=rtol, atol=1e-12,
                                   equal_nan=True, err_msg=f"{name}.{what}")
    for what in set(_ALL) - set(methods):  # where torch has no closed form, neither do we
        with pytest.raises(NotImplementedError):
            _evaluate(dp, what, vp)
    loss_t, loss_p = dt.log_prob(vt).sum(), dp.log_prob(vp).sum()
    if "entropy" in methods:
        loss_t, loss_p = loss_t + dt.entropy().sum(), loss_p + dp.entropy().sum()
    loss_t.backward()
    loss_p.backward()
    for k, (a, b) in enumerate(zip(pt, tt)):
        if b.grad is None:
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6 if arrays[0].dtype == np.float64 else 1e-4,
                                   atol=1e-6 if name == "VonMises" else 1e-9,
                                   err_msg=f"{name}: gradient of parameter {k}")
    # expand: the batch grows, the values follow
    ep = dp.expand((2, 3))
    assert tuple(ep.batch_shape) == (2, 3)
    np.testing.assert_allclose(_vals(ep.log_prob(vp)), np.broadcast_to(_vals(dp.log_prob(vp)), (2, 3)),
                               rtol=1e-6, err_msg=f"{name}.expand")


_SAMPLED = ["Exponential", "Laplace", "StudentT", "Chi2", "LogNormal", "HalfNormal", "Gumbel",
            "Pareto", "Weibull", "Poisson", "Geometric probs", "Binomial", "NegativeBinomial",
            "Multinomial", "FisherSnedecor", "InverseGamma", "Kumaraswamy", "ContinuousBernoulli",
            "MixtureSameFamily", "GeneralizedPareto"]
_SAMPLED_PARAMS = {  # a finite fourth moment for every element (the sample variance converges)
    "StudentT": [_POS + 4.5, _LOC, _POS], "Pareto": [_X * 0.5, _POS + 4.5],
    "FisherSnedecor": [_POS * 3 + 4, _POS * 4 + 9], "InverseGamma": [_POS + 4.5, _POS],
    "GeneralizedPareto": [_LOC, _POS, np.array([-0.3, 0.0, 0.1])],
}


def test_draws_have_the_right_moments_and_follow_manual_seed(device):
    n = 20000
    for name in _SAMPLED:
        fn, arrays, _, _ = FAMILIES[name]
        arrays = _SAMPLED_PARAMS.get(name, arrays)
        d = fn(PD, *[to_device(a, device) for a in arrays])
        pygpu.manual_seed(11)
        x = d.sample((n,))
        pygpu.manual_seed(11)
        y = d.sample((n,))
        np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=f"{name}: manual_seed")
        assert tuple(x.shape) == (n,) + tuple(d.batch_shape) + tuple(d.event_shape), name
        xs = x.numpy().astype(np.float64)
        assert np.isfinite(xs).all(), name
        mean, var = d.mean.numpy(), d.variance.numpy()
        bound = 6 * np.sqrt(var / n) + 1e-9
        assert (np.abs(xs.mean(0) - mean) <= bound).all(), (name, xs.mean(0), mean)
        rtol = 0.35 if name in ("LogNormal", "Pareto", "StudentT", "FisherSnedecor", "InverseGamma") \
            else 0.1  # heavy tails
        np.testing.assert_allclose(xs.var(0), var, rtol=rtol, err_msg=f"{name} variance")
    # VonMises: circular, so its mean direction and mean resultant length 1 - variance
    d = PD.VonMises(to_device(np.array([0.5, -3.0]), device), to_device(np.array([4.0, 0.5]), device))
    xs = d.sample((n,)).numpy()
    assert ((xs >= -np.pi) & (xs < np.pi)).all()
    resultant = np.exp(1j * xs).mean(0)
    np.testing.assert_allclose(np.abs(resultant), 1 - d.variance.numpy(), atol=0.02)
    np.testing.assert_allclose(np.angle(resultant)[0], 0.5, atol=0.03)
    # the heavy-tailed ones by their medians (no finite moments)
    for name in ("Cauchy", "HalfCauchy"):
        fn, arrays, _, _ = FAMILIES[name]
        d = fn(PD, *[to_device(a, device) for a in arrays])
        xs = d.sample((n,)).numpy()
        np.testing.assert_allclose(np.median(xs, 0), d.icdf(to_device(np.full(3, 0.5), device)).numpy(),
                                   atol=0.05 * _POS.max(), err_msg=name)


def test_rsample_gradients_are_pathwise(device):
    """d sample / d parameter on the same draw, against the derivative of the closed-form map
    from the base noise (recovered from the draw through cdf)."""
    loc = to_device(np.array([0.5, -1.0]), device).requires_grad_()
    scale = to_device(np.array([2.0, 0.5]), device).requires_grad_()
    rate = to_device(np.array([0.7, 3.0]), device).requires_grad_()
    pygpu.manual_seed(5)
    for name, make, wants in [
        ("Exponential", lambda: PD.Exponential(rate), lambda x: [(rate, -x / rate.detach().numpy())]),
        ("Laplace", lambda: PD.Laplace(loc, scale),
         lambda x: [(loc, np.ones(2)), (scale, (x - loc.detach().numpy()) / scale.detach().numpy())]),
        ("Cauchy", lambda: PD.Cauchy(loc, scale),
         lambda x: [(loc, np.ones(2)), (scale, (x - loc.detach().numpy()) / scale.detach().numpy())]),
        ("Gumbel", lambda: PD.Gumbel(loc, scale),
         lambda x: [(loc, np.ones(2)), (scale, (x - loc.detach().numpy()) / scale.detach().numpy())]),
        ("LogNormal", lambda: PD.LogNormal(loc, scale),
         lambda x: [(loc, x), (scale, x * (np.log(x) - loc.detach().numpy()) / scale.detach().numpy())]),
        ("HalfNormal", lambda: PD.HalfNormal(scale), lambda x: [(scale, x / scale.detach().numpy())]),
    ]:
        for t in (loc, scale, rate):
            t.grad = None
        d = make()
        assert d.has_rsample, name
        x = d.rsample()
        x.sum().backward()
        for t, want in wants(x.detach().numpy()):
            np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-9, err_msg=name)
    # StudentT and Chi2 run through the gamma implicit gradient: finite and nonzero
    df = to_device(np.array([3.0, 7.0]), device).requires_grad_()
    PD.StudentT(df, loc, scale).rsample((8,)).pow(2).sum().backward()
    assert np.isfinite(df.grad.numpy()).all() and (df.grad.numpy() != 0).all()
    with pytest.raises(NotImplementedError, match="Poisson has no reparameterized sample"):
        PD.Poisson(rate).rsample()


def test_validate_args_raises_torch_errors(device):
    neg = to_device(np.array([1.0, -1.0]), device)
    for make, param, constraint in [
        (lambda: PD.Exponential(neg), "rate", "GreaterThan(lower_bound=0.0)"),
        (lambda: PD.Normal(0.0, neg), "scale", "GreaterThan(lower_bound=0.0)"),
        (lambda: PD.Laplace(0.0, neg), "scale", "GreaterThan(lower_bound=0.0)"),
        (lambda: PD.Poisson(neg), "rate", "GreaterThanEq(lower_bound=0.0)"),
        (lambda: PD.Binomial(neg * 2, probs=0.5), "total_count", "IntegerGreaterThan(lower_bound=0)"),
        (lambda: PD.Chi2(neg), "df", "GreaterThan(lower_bound=0.0)"),
        (lambda: PD.LogNormal(0.0, neg), "scale", "GreaterThan(lower_bound=0.0)"),
    ]:
        with pytest.raises(ValueError, match=rf"Expected parameter {param} \(Tensor of shape \(2,\)\) "
                                             rf"of distribution .* to satisfy the constraint "
                                             rf"{constraint.replace('(', '[(]').replace(')', '[)]')}, "
                                             "but found invalid values"):
            make()
    d = PD.Exponential(to_device(np.array([1.0, 2.0]), device))
    with pytest.raises(ValueError, match=r"Expected value argument \(Tensor of shape \(2,\)\) to be "
                                         r"within the support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        d.log_prob(neg)
    with pytest.raises(ValueError, match="Value is not broadcastable with batch_shape"):
        d.log_prob(to_device(np.ones(3), device))
    # validate_args=False and set_default_validate_args(False) switch it off, as torch's
    PD.Exponential(neg, validate_args=False)
    PD.Distribution.set_default_validate_args(False)
    try:
        lp = PD.Exponential(neg).log_prob(neg).numpy()
        np.testing.assert_allclose(lp, [-1.0, np.nan], equal_nan=True)  # log(-1) unchecked
        PD.Normal(0.0, neg)
    finally:
        PD.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        PD.Distribution.set_default_validate_args(3)


@pytest.mark.parametrize("pair", ["Exponential", "Laplace", "Cauchy", "Gumbel", "HalfNormal",
                                  "LogNormal", "Pareto", "Poisson", "Geometric", "Binomial"])
def test_kl_pairs_match_torch_with_gradients(device, pair):
    rng = np.random.default_rng(len(pair))
    pos = lambda: np.abs(rng.standard_normal(3)) + 0.5  # noqa: E731
    std = lambda: rng.standard_normal(3)  # noqa: E731
    build = {
        "Exponential": (lambda m, a, b: (m.Exponential(a), m.Exponential(b)), [pos(), pos()]),
        "Laplace": (lambda m, a, b, c, d: (m.Laplace(a, b), m.Laplace(c, d)), [std(), pos(), std(), pos()]),
        "Cauchy": (lambda m, a, b, c, d: (m.Cauchy(a, b), m.Cauchy(c, d)), [std(), pos(), std(), pos()]),
        "Gumbel": (lambda m, a, b, c, d: (m.Gumbel(a, b), m.Gumbel(c, d)), [std(), pos(), std(), pos()]),
        "HalfNormal": (lambda m, a, b: (m.HalfNormal(a), m.HalfNormal(b)), [pos(), pos()]),
        "LogNormal": (lambda m, a, b, c, d: (m.LogNormal(a, b), m.LogNormal(c, d)), [std(), pos(), std(), pos()]),
        "Pareto": (lambda m, a, b, c, d: (m.Pareto(a, b), m.Pareto(c, d)),
                   [np.array([1.0, 2.0, 0.5]), pos(), np.array([0.5, 3.0, 0.5]), pos()]),
        "Poisson": (lambda m, a, b: (m.Poisson(a), m.Poisson(b)), [pos(), pos()]),
        "Geometric": (lambda m, a, b: (m.Geometric(logits=a), m.Geometric(logits=b)), [std(), std()]),
        "Binomial": (lambda m, a, b: (m.Binomial(5, logits=a), m.Binomial(5, logits=b)), [std(), std()]),
    }
    fn, arrays = build[pair]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    pt = [to_device(a, device).requires_grad_() for a in arrays]
    want = TD.kl_divergence(*fn(TD, *tt))
    got = PD.kl_divergence(*fn(PD, *pt))
    np.testing.assert_allclose(_vals(got), _vals(want), rtol=1e-9, atol=1e-12, err_msg=pair)
    finite = np.isfinite(_vals(want))
    want[torch.tensor(finite)].sum().backward()
    (got * to_device(finite.astype(np.float64), device)).sum().backward()
    for k, (a, b) in enumerate(zip(pt, tt)):
        if b.grad is None:
            continue
        np.testing.assert_allclose(np.nan_to_num(a.grad.numpy()), b.grad.numpy(), rtol=1e-7, atol=1e-10,
                                   err_msg=f"{pair}: gradient of parameter {k}")


def test_relaxed_and_straight_through_rsample_gradients(device):
    """The Concrete draws are a deterministic map of their noise: d x / d logits recovered from
    the draw; straight-through's gradient is the softmax Jacobian's, as torch's."""
    logits = to_device(np.array([-1.0, 0.3, 2.0]), device).requires_grad_()
    temp = 0.7
    pygpu.manual_seed(9)
    x = PD.RelaxedBernoulli(temp, logits=logits).rsample()
    assert ((x.detach().numpy() > 0) & (x.detach().numpy() < 1)).all()
    x.sum().backward()
    xs = x.detach().numpy()
    np.testing.assert_allclose(logits.grad.numpy(), xs * (1 - xs) / temp, rtol=1e-6)
    # RelaxedOneHotCategorical: draws on the simplex; d sum(w * x) / d logits as softmax's
    logits.grad = None
    y = PD.RelaxedOneHotCategorical(temp, logits=logits).rsample((5,))
    assert tuple(y.shape) == (5, 3)
    np.testing.assert_allclose(y.detach().numpy().sum(-1), np.ones(5), rtol=1e-6)
    w = np.array([1.0, -2.0, 0.5])
    (y * to_device(w, device)).sum().backward()
    ys = y.detach().numpy()
    want = (ys * (w - (ys * w).sum(-1, keepdims=True))).sum(0) / temp
    np.testing.assert_allclose(logits.grad.numpy(), want, rtol=1e-6, atol=1e-9)
    # OneHotCategoricalStraightThrough against torch (the gradient does not depend on the draw)
    lt = torch.tensor([[-1.0, 0.3, 2.0]], dtype=torch.float64, requires_grad=True)
    lp = to_device(lt.detach().numpy(), device).requires_grad_()
    wt = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    (TD.OneHotCategoricalStraightThrough(logits=lt).rsample((4,)) * wt).sum().backward()
    sp = PD.OneHotCategoricalStraightThrough(logits=lp).rsample((4,))
    assert set(np.unique(sp.detach().numpy()).tolist()) <= {0.0, 1.0}
    (sp * to_device(wt.numpy(), device)).sum().backward()
    np.testing.assert_allclose(lp.grad.numpy(), lt.grad.numpy(), rtol=1e-9, atol=1e-12)
    # ContinuousBernoulli's rsample is its icdf of a uniform: in (0, 1), gradient flows
    probs = to_device(np.array([0.2, 0.5, 0.9]), device).requires_grad_()
    c = PD.ContinuousBernoulli(probs=probs).rsample((6,))
    c.sum().backward()
    assert np.isfinite(probs.grad.numpy()).all()


def test_mixture_and_multinomial_errors(device):
    comp = PD.Normal(to_device(np.zeros((2, 3)), device), to_device(np.ones((2, 3)), device))
    with pytest.raises(ValueError, match="The Mixture distribution needs to be an  instance"):
        PD.MixtureSameFamily(comp, comp)
    with pytest.raises(ValueError, match="does not equal `component_distribution.batch_shape"):
        PD.MixtureSameFamily(PD.Categorical(logits=to_device(np.zeros(4), device)), comp)
    m = PD.MixtureSameFamily(PD.Categorical(logits=to_device(np.zeros(3), device)), comp)
    assert tuple(m.batch_shape) == (2,) and tuple(m.event_shape) == ()
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        PD.Multinomial(3)
    with pytest.raises(ValueError, match="Expected value argument"):
        PD.Multinomial(3, probs=to_device(np.array([0.5, 0.5]), device)).log_prob(
            to_device(np.array([3.0, 1.0]), device))


def test_low_rank_multivariate_normal_matches_torch(device):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((2, 4)), rng.standard_normal((4, 2)), np.abs(rng.standard_normal(4)) + 0.5]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    pt = [to_device(a, device).requires_grad_() for a in arrays]
    dt, dp = TD.LowRankMultivariateNormal(*tt), PD.LowRankMultivariateNormal(*pt)
    assert tuple(dp.batch_shape) == (2,) and tuple(dp.event_shape) == (4,)
    v = rng.standard_normal((3, 1, 4))
    for what in ("log_prob", "entropy", "mean", "variance", "covariance_matrix", "scale_tril",
                 "precision_matrix"):
        want = dt.log_prob(torch.tensor(v)) if what == "log_prob" else \
            dt.entropy() if what == "entropy" else getattr(dt, what)
        got = dp.log_prob(to_device(v, device)) if what == "log_prob" else \
            dp.entropy() if what == "entropy" else getattr(dp, what)
        np.testing.assert_allclose(_vals(got), _vals(want), rtol=1e-9, atol=1e-12, err_msg=what)
    (dt.log_prob(torch.tensor(v)).sum() + dt.entropy().sum()).backward()
    (dp.log_prob(to_device(v, device)).sum() + dp.entropy().sum()).backward()
    for a, b in zip(pt, tt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-8, atol=1e-10)
    pygpu.manual_seed(2)
    x = dp.sample((20000,)).numpy()  # (n, 2, 4)
    cov = dt.covariance_matrix.detach().numpy()[0]
    np.testing.assert_allclose(np.cov(x[:, 0].T), cov, atol=0.1 * np.abs(cov).max())
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices with shape 4 x m"):
        PD.LowRankMultivariateNormal(pt[0], to_device(np.ones((3, 2)), device), pt[2])
    with pytest.raises(ValueError, match=r"cov_diag must be a batch of vectors with shape \(4,\)"):
        PD.LowRankMultivariateNormal(pt[0], pt[1], to_device(np.ones(3), device))


@pytest.mark.parametrize("name", ["Normal", "Exponential", "Gamma", "Bernoulli", "Poisson"])
def test_exponential_family_entropy_and_bregman_kl(device, name):
    """The generic ExponentialFamily entropy (autograd of the log normalizer) and the Bregman KL
    against torch's same generic forms and the closed forms."""
    from torch.distributions.kl import _kl_expfamily_expfamily as torch_bregman

    from pygpu.distributions.kl import _kl_expfamily_expfamily as bregman
    rng = np.random.default_rng(len(name))
    pos = lambda: np.abs(rng.standard_normal(3)) + 0.5  # noqa: E731
    arrays = {"Normal": [rng.standard_normal(3), pos()], "Exponential": [pos()],
              "Gamma": [pos() + 1, pos()], "Bernoulli": [np.array([0.2, 0.5, 0.7])],
              "Poisson": [pos()]}[name]
    arrays_q = [a * 0.8 + 0.05 for a in arrays]
    tp, tq = (getattr(TD, name)(*[torch.tensor(a) for a in arr]) for arr in (arrays, arrays_q))
    pp, pq = (getattr(PD, name)(*[to_device(a, device) for a in arr]) for arr in (arrays, arrays_q))
    assert isinstance(pp, PD.ExponentialFamily)
    if name != "Poisson":  # torch's Poisson has no carrier measure: no generic entropy
        np.testing.assert_allclose(_vals(PD.ExponentialFamily.entropy(pp)),
                                   _vals(TD.ExponentialFamily.entropy(tp)), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(_vals(PD.ExponentialFamily.entropy(pp)), _vals(pp.entropy()),
                                   rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_vals(bregman(pp, pq)), _vals(torch_bregman(tp, tq)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_vals(bregman(pp, pq)), _vals(PD.kl_divergence(pp, pq)), rtol=1e-8,
                               atol=1e-12)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        bregman(PD.Exponential(to_device(pos(), device)), PD.Poisson(to_device(pos(), device)))


def test_lkj_cholesky_matches_torch_and_its_marginals(device):
    c = np.array([0.5, 1.0, 3.0])
    ct = torch.tensor(c, requires_grad=True)
    cp = to_device(c, device).requires_grad_()
    dt, dp = TD.LKJCholesky(4, ct), PD.LKJCholesky(4, cp)
    assert tuple(dp.batch_shape) == (3,) and tuple(dp.event_shape) == (4, 4)
    torch.manual_seed(0)
    v = dt.sample((5,))
    lt, lp = dt.log_prob(v), dp.log_prob(to_device(v.numpy(), device))
    np.testing.assert_allclose(_vals(lp), _vals(lt), rtol=1e-10, atol=1e-12)
    lt.sum().backward()
    lp.sum().backward()
    np.testing.assert_allclose(cp.grad.numpy(), ct.grad.numpy(), rtol=1e-8)
    pygpu.manual_seed(4)
    x = dp.sample((20000,))
    assert bool(PD.constraints.corr_cholesky.check(x).all())
    corr = (x @ x.transpose(-2, -1)).numpy()[:, :, 0, 1]
    # an off-diagonal correlation of LKJ(eta) in dimension d is 2 Beta(b, b) - 1, b = eta - 1 + d/2
    b = c - 1 + 4 / 2
    np.testing.assert_allclose(corr.var(0), 1 / (2 * b + 1), rtol=0.06)
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal to 2"):
        PD.LKJCholesky(1)


@pytest.mark.parametrize("param", ["covariance_matrix", "scale_tril", "precision_matrix"])
def test_wishart_matches_torch(device, param):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    mat = {"covariance_matrix": cov, "scale_tril": np.linalg.cholesky(cov),
           "precision_matrix": np.linalg.inv(cov)}[param]
    df = np.array([4.0, 6.5])
    dft, mt = torch.tensor(df, requires_grad=True), torch.tensor(mat, requires_grad=True)
    dfp, mp = to_device(df, device).requires_grad_(), to_device(mat, device).requires_grad_()
    dt, dp = TD.Wishart(dft, **{param: mt}), PD.Wishart(dfp, **{param: mp})
    assert tuple(dp.batch_shape) == (2,) and tuple(dp.event_shape) == (3, 3)
    torch.manual_seed(1)
    v = dt.sample((4,))
    for what in ("log_prob", "entropy", "mean", "mode", "variance"):
        want = dt.log_prob(v) if what == "log_prob" else dt.entropy() if what == "entropy" else getattr(dt, what)
        got = dp.log_prob(to_device(v.numpy(), device)) if what == "log_prob" else \
            dp.entropy() if what == "entropy" else getattr(dp, what)
        np.testing.assert_allclose(_vals(got), _vals(want), rtol=1e-9, atol=1e-10, equal_nan=True,
                                   err_msg=what)
    (dt.log_prob(v).sum() + dt.entropy().sum()).backward()
    (dp.log_prob(to_device(v.numpy(), device)).sum() + dp.entropy().sum()).backward()
    np.testing.assert_allclose(dfp.grad.numpy(), dft.grad.numpy(), rtol=1e-7)
    # (a scale_tril's upper triangle is not read: torch's cholesky_solve still sends it a gradient)
    keep = np.tril if param == "scale_tril" else (lambda g: g)
    np.testing.assert_allclose(keep(mp.grad.numpy()), keep(mt.grad.numpy()), rtol=1e-7, atol=1e-10)
    pygpu.manual_seed(6)
    dfp.grad = None
    x = PD.Wishart(dfp, **{param: mp}).rsample((20000,))  # a fresh graph: the first one is spent
    xs = x.detach().numpy()
    mean, var = dt.mean.detach().numpy(), dt.variance.detach().numpy()
    assert (np.abs(xs.mean(0) - mean) <= 6 * np.sqrt(var / 20000)).all()
    np.testing.assert_allclose(xs.var(0), var, rtol=0.15)
    x.sum().backward()  # rsample is differentiable in df and the scale
    assert np.isfinite(dfp.grad.numpy()).all()
    with pytest.raises(ValueError, match="expected to be greater than ndim - 1 = 2"):
        PD.Wishart(1.5, covariance_matrix=mp)


def test_the_first_families_validate_values_as_torch(device):
    """Normal, Uniform, Categorical, MultivariateNormal check their values' support too."""
    cases = [
        (PD.Normal(to_device(np.zeros(2), device), to_device(np.ones(2), device)),
         np.array([0.0, np.nan]), r"within the support \(Real\(\)\)"),
        (PD.Uniform(to_device(np.zeros(2), device), to_device(np.ones(2), device)),
         np.array([0.5, 2.0]), r"within the support \(Interval\(lower_bound="),
        (PD.Categorical(probs=to_device(np.array([0.5, 0.5]), device)), np.array([2.0]),
         r"within the support \(IntegerInterval\(lower_bound=0, upper_bound=1\)\)"),
        (PD.MultivariateNormal(to_device(np.zeros(2), device), covariance_matrix=to_device(np.eye(2), device)),
         np.array([0.0, 1.0, 2.0]), "The right-most size of value must match event_shape"),
    ]
    for d, bad, message in cases:
        with pytest.raises(ValueError, match=message):
            d.log_prob(to_device(bad, device))
    with pytest.raises(ValueError, match=r"Expected parameter low .* LessThan\(upper_bound="):
        PD.Uniform(to_device(np.ones(2), device), to_device(np.zeros(2), device))
    with pytest.raises(ValueError, match="Expected parameter probs"):
        PD.Bernoulli(probs=to_device(np.array([0.5, 1.5]), device))
