# test_distributions.py - pygpu.distributions and multinomial against torch.distributions on
# every device: log_prob, entropy, mean, variance, cdf/icdf and kl_divergence (float64,
# values and gradients); draws by their statistics and their reproducibility under
# manual_seed; rsample's gradients (the Gamma family's implicit gradient against torch's
# _standard_gamma_grad on the same draws). Each test loops over its families.
import numpy as np
import pytest
import torch
import torch.distributions as TD

import pygpu
import pygpu.distributions as PD

from _helpers import to_device

R = np.random.default_rng(0)
_CONC = np.abs(R.standard_normal(3)) + 0.5
_LOGITS = R.standard_normal((2, 4))
_A = R.standard_normal((3, 3))
_COV = _A @ _A.T + 3 * np.eye(3)


def _params(device):
    """(name, torch factory, pygpu factory, value for log_prob) over float64 tensors."""
    def both(fn, *arrays):
        def make(m, leaf):
            leaves = [leaf(a) for a in arrays]
            return fn(m, *leaves), leaves
        return (lambda: make(TD, lambda a: torch.tensor(a, requires_grad=True)),
                lambda: make(PD, lambda a: to_device(a, device).requires_grad_()))
    loc, scale = R.standard_normal(3), np.abs(R.standard_normal(3)) + 0.5
    probs = np.array([0.2, 0.5, 0.9])
    return [
        ("Normal", *both(lambda m, a, b: m.Normal(a, b), loc, scale), R.standard_normal(3)),
        ("Uniform", *both(lambda m, a, b: m.Uniform(a, b), loc - 2, loc + 1), loc - 0.5),
        ("Gamma", *both(lambda m, a, b: m.Gamma(a, b), _CONC, scale), scale + 0.1),
        ("Beta", *both(lambda m, a, b: m.Beta(a, b), _CONC, scale), probs * 0.9),
        ("Dirichlet", *both(lambda m, a: m.Dirichlet(a), _CONC), np.array([0.2, 0.3, 0.5])),
        ("Bernoulli probs", *both(lambda m, p: m.Bernoulli(probs=p), probs), np.array([1.0, 0.0, 1.0])),
        ("Bernoulli logits", *both(lambda m, l: m.Bernoulli(logits=l), loc), np.array([0.0, 1.0, 1.0])),
        ("Categorical logits", *both(lambda m, l: m.Categorical(logits=l), _LOGITS), np.array([3, 0])),
        ("Categorical probs", *both(lambda m, p: m.Categorical(probs=p), np.abs(_LOGITS)), np.array([1, 2])),
        ("OneHotCategorical", *both(lambda m, l: m.OneHotCategorical(logits=l), _LOGITS), np.eye(4)[[1, 3]]),
        ("MultivariateNormal cov", *both(lambda m, mu, c: m.MultivariateNormal(mu, covariance_matrix=c), loc, _COV),
         R.standard_normal((2, 3))),
        ("MultivariateNormal tril", *both(lambda m, mu, l: m.MultivariateNormal(mu, scale_tril=l), loc, np.linalg.cholesky(_COV)),
         R.standard_normal(3)),
        ("Independent Normal", *both(lambda m, a, b: m.Independent(m.Normal(a, b), 1), loc, scale), R.standard_normal(3)),
    ]


def _vals(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def test_densities_and_moments_match_torch(device):
    for name, make_t, make_p, value in _params(device):
        (dt, lt), (dp, lp) = make_t(), make_p()
        assert tuple(dp.batch_shape) == tuple(dt.batch_shape), name
        assert tuple(dp.event_shape) == tuple(dt.event_shape), name
        vt = torch.tensor(value)
        vp = to_device(value, device)
        checks = [("log_prob", lambda d, v: d.log_prob(v)), ("entropy", lambda d, v: d.entropy()),
                  ("mean", lambda d, v: d.mean), ("variance", lambda d, v: d.variance)]
        if name in ("Normal", "Uniform"):
            checks += [("cdf", lambda d, v: d.cdf(v)),
                       ("icdf", lambda d, v: d.icdf(v * 0 + 0.3))]
        for what, f in checks:
            want, got = f(dt, vt), f(dp, vp)
            np.testing.assert_allclose(_vals(got), _vals(want), rtol=1e-9, atol=1e-12,
                                       equal_nan=True, err_msg=f"{name}.{what}")
        # gradients of log_prob + entropy with respect to the parameters
        (dt.log_prob(vt).sum() + dt.entropy().sum()).backward()
        (dp.log_prob(vp).sum() + dp.entropy().sum()).backward()
        for k, (a, b) in enumerate(zip(lp, lt)):
            # (torch's float64 trigamma, in the digamma terms' gradients, is good to 1e-9)
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-9,
                                       err_msg=f"{name}: gradient of parameter {k}")


@pytest.mark.parametrize("pair", ["Normal", "Uniform", "Gamma", "Beta", "Dirichlet", "Bernoulli",
                                  "Categorical", "OneHotCategorical", "MultivariateNormal",
                                  "Independent"])
def test_kl_divergence_matches_torch_with_gradients(device, pair):
    rng = np.random.default_rng(len(pair))
    pos = lambda *s: np.abs(rng.standard_normal(s)) + 0.5  # noqa: E731
    build = {
        "Normal": (lambda m, a, b, c, d: (m.Normal(a, b), m.Normal(c, d)), [rng.standard_normal(3), pos(3), rng.standard_normal(3), pos(3)]),
        "Uniform": (lambda m, a, b, c, d: (m.Uniform(a, a + b), m.Uniform(a - c.abs(), a + b + d)), [rng.standard_normal(3), pos(3), pos(3), pos(3)]),
        "Gamma": (lambda m, a, b, c, d: (m.Gamma(a, b), m.Gamma(c, d)), [pos(3), pos(3), pos(3), pos(3)]),
        "Beta": (lambda m, a, b, c, d: (m.Beta(a, b), m.Beta(c, d)), [pos(3), pos(3), pos(3), pos(3)]),
        "Dirichlet": (lambda m, a, c: (m.Dirichlet(a), m.Dirichlet(c)), [pos(2, 3), pos(2, 3)]),
        "Bernoulli": (lambda m, a, c: (m.Bernoulli(logits=a), m.Bernoulli(logits=c)), [rng.standard_normal(3), rng.standard_normal(3)]),
        "Categorical": (lambda m, a, c: (m.Categorical(logits=a), m.Categorical(logits=c)), [rng.standard_normal((2, 4)), rng.standard_normal((2, 4))]),
        "OneHotCategorical": (lambda m, a, c: (m.OneHotCategorical(logits=a), m.OneHotCategorical(logits=c)), [rng.standard_normal(4), rng.standard_normal(4)]),
        "MultivariateNormal": (lambda m, a, c: (m.MultivariateNormal(a, covariance_matrix=torch_or_pg(m).eye(3, dtype=a.dtype, device=_dev(a)) * 2.0),
                                                m.MultivariateNormal(c, scale_tril=torch_or_pg(m).tensor(np.linalg.cholesky(_COV), device=_dev(c)))),
                               [rng.standard_normal(3), rng.standard_normal(3)]),
        "Independent": (lambda m, a, b, c, d: (m.Independent(m.Normal(a, b), 1), m.Independent(m.Normal(c, d), 1)),
                        [rng.standard_normal((2, 3)), pos(2, 3), rng.standard_normal((2, 3)), pos(2, 3)]),
    }
    fn, arrays = build[pair]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    pt = [to_device(a, device).requires_grad_() for a in arrays]
    want = TD.kl_divergence(*fn(TD, *tt))
    got = PD.kl_divergence(*fn(PD, *pt))
    np.testing.assert_allclose(_vals(got), _vals(want), rtol=1e-9, atol=1e-12, err_msg=pair)
    want.sum().backward()
    got.sum().backward()
    for k, (a, b) in enumerate(zip(pt, tt)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-10,
                                   err_msg=f"{pair}: gradient of parameter {k}")


def torch_or_pg(m):
    return torch if m is TD else pygpu


def _dev(t):
    return t.device


def test_draws_have_the_right_statistics_and_follow_manual_seed(device):
    n = 20000
    dev = device
    cases = [
        ("Normal", PD.Normal(to_device(np.array([1.0, -2.0]), dev), to_device(np.array([0.5, 2.0]), dev))),
        ("Uniform", PD.Uniform(to_device(np.array([0.0, -1.0]), dev), to_device(np.array([1.0, 3.0]), dev))),
        ("Gamma", PD.Gamma(to_device(np.array([0.3, 4.0]), dev), to_device(np.array([1.0, 2.0]), dev))),
        ("Beta", PD.Beta(to_device(np.array([0.5, 3.0]), dev), to_device(np.array([2.0, 1.5]), dev))),
        ("Bernoulli", PD.Bernoulli(probs=to_device(np.array([0.1, 0.7]), dev))),
        ("Categorical", PD.Categorical(probs=to_device(np.array([0.2, 0.5, 0.3]), dev))),
        ("MultivariateNormal", PD.MultivariateNormal(to_device(np.zeros(3), dev), covariance_matrix=to_device(_COV, dev))),
        ("Dirichlet", PD.Dirichlet(to_device(np.array([1.0, 2.0, 3.0]), dev))),
    ]
    for name, d in cases:
        pygpu.manual_seed(7)
        x = d.sample((n,))
        pygpu.manual_seed(7)
        y = d.sample((n,))
        np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=f"{name}: manual_seed")
        assert tuple(x.shape) == (n,) + tuple(d.batch_shape) + tuple(d.event_shape), name
        xs = x.numpy().astype(np.float64)
        if name == "Categorical":
            freq = np.bincount(xs.astype(int), minlength=3) / n
            np.testing.assert_allclose(freq, [0.2, 0.5, 0.3], atol=0.015, err_msg=name)
            continue
        mean, var = d.mean.numpy(), d.variance.numpy()
        bound = 5 * np.sqrt(var / n) + 1e-9
        assert (np.abs(xs.mean(0) - mean) <= bound).all(), (name, xs.mean(0), mean)
        np.testing.assert_allclose(xs.var(0), var, rtol=0.1, err_msg=f"{name} variance")
    pygpu.manual_seed(3)
    a = pygpu.multinomial(to_device(np.array([0.1, 0.2, 0.7]), dev), 8, replacement=True)
    pygpu.manual_seed(3)
    b = pygpu.multinomial(to_device(np.array([0.1, 0.2, 0.7]), dev), 8, replacement=True)
    assert a.tolist() == b.tolist()


def test_rsample_gradients(device):
    # Normal: the pathwise gradient of a draw is (1, eps)
    loc = to_device(np.array([0.5, -1.0]), device).requires_grad_()
    scale = to_device(np.array([2.0, 0.5]), device).requires_grad_()
    pygpu.manual_seed(1)
    x = PD.Normal(loc, scale).rsample()
    x.sum().backward()
    eps = (x.detach().numpy() - loc.detach().numpy()) / scale.detach().numpy()
    np.testing.assert_allclose(loc.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(scale.grad.numpy(), eps, rtol=1e-12)
    # Gamma: the implicit gradient, against torch's on the same draws
    alpha = to_device(np.array([0.3, 1.0, 2.5, 9.0, 40.0]), device).requires_grad_()
    pygpu.manual_seed(2)
    g = PD.Gamma(alpha, 1.0).rsample((4,))
    g.sum().backward()
    xs = torch.tensor(g.detach().numpy())
    want = torch._standard_gamma_grad(torch.tensor(alpha.detach().numpy()).expand(4, 5), xs).sum(0)
    np.testing.assert_allclose(alpha.grad.numpy(), want.numpy(), rtol=2e-4)
    # Beta and Dirichlet run through it
    c = to_device(np.array([1.5, 2.0]), device).requires_grad_()
    PD.Beta(c[0], c[1]).rsample((3,)).sum().backward()
    assert c.grad is not None and np.isfinite(c.grad.numpy()).all()
    with pytest.raises(NotImplementedError, match="Categorical has no reparameterized sample"):
        PD.Categorical(logits=to_device(np.zeros(3), device)).rsample()


def test_multinomial_and_errors(device):
    p = to_device(np.array([[0.0, 1.0, 3.0], [2.0, 0.0, 0.0]]), device)
    pygpu.manual_seed(0)
    s = pygpu.multinomial(p, 2)
    assert s.shape == (2, 2) and sorted(s.numpy()[0].tolist()) == [1, 2] and s.numpy()[1, 0] == 0
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        pygpu.multinomial(p, 4)
    with pytest.raises(RuntimeError, match="probability tensor contains"):
        pygpu.multinomial(to_device(np.array([0.5, -0.1]), device), 1)
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        PD.Categorical()
    # (Normal, Gamma) is a pair torch registers (both are exponential families); Cauchy is not
    with pytest.raises(NotImplementedError, match="No KL"):
        PD.kl_divergence(PD.Normal(0.0, 1.0), PD.Cauchy(1.0, 1.0))
