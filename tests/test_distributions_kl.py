# test_distributions_kl.py - kl_divergence over every pair of families torch registers
# (torch.distributions.kl's table, read from the installed torch): pygpu registers the same
# pairs, and each gives torch's value (float64, +inf where q cannot hold p's support) and
# torch's gradients where it is finite, on every device. Also the lookup's rule (the most
# specific pair, torch's ambiguity warning) and Gamma's cdf / special.gammainc.
import warnings

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.kl as TKL

import pygpu
import pygpu.distributions as PD
import pygpu.distributions.kl as PKL

from _helpers import to_device

_L = np.linalg.cholesky(np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.2]]))

# family -> (factory(module, *leaves), parameter arrays): batch shape (3,) where the family
# has one, with values chosen so that some pairs are finite in one entry and infinite in
# another (a Uniform outside [0, 1] or below 0, a Pareto with alpha <= 1 or <= 2)
FAMILIES = {
    "Bernoulli": (lambda m, a: m.Bernoulli(logits=a), [[0.3, -1.2, 0.8]]),
    "Beta": (lambda m, a, b: m.Beta(a, b), [[1.5, 0.7, 2.2], [0.9, 1.8, 2.5]]),
    "Binomial": (lambda m, a: m.Binomial(5, logits=a), [[0.2, -0.4, 1.1]]),
    "Categorical": (lambda m, a: m.Categorical(logits=a), [[[0.1, 0.5, -0.3], [1.0, -1.0, 0.2],
                                                            [0.0, 0.3, 0.6]]]),
    "ContinuousBernoulli": (lambda m, a: m.ContinuousBernoulli(probs=a), [[0.2, 0.62, 0.35]]),
    "Dirichlet": (lambda m, a: m.Dirichlet(a), [[[1.5, 0.7, 2.2], [0.9, 1.8, 2.5],
                                                 [1.1, 1.2, 0.8]]]),
    "Exponential": (lambda m, a: m.Exponential(a), [[0.8, 1.7, 2.4]]),
    "Gamma": (lambda m, a, b: m.Gamma(a, b), [[1.3, 0.6, 2.8], [0.9, 1.4, 2.0]]),
    "Geometric": (lambda m, a: m.Geometric(logits=a), [[0.3, -0.7, 1.2]]),
    "Gumbel": (lambda m, a, b: m.Gumbel(a, b), [[0.2, -0.5, 1.0], [0.8, 1.3, 0.6]]),
    "HalfNormal": (lambda m, a: m.HalfNormal(a), [[0.7, 1.2, 2.0]]),
    "Laplace": (lambda m, a, b: m.Laplace(a, b), [[0.1, -0.6, 0.9], [0.7, 1.1, 1.6]]),
    "LowRankMultivariateNormal": (
        lambda m, a, w, d: m.LowRankMultivariateNormal(a, w, d),
        [[0.2, -0.4, 0.5], [[0.5, 0.1], [0.3, -0.2], [-0.1, 0.4]], [0.9, 1.2, 0.7]]),
    "MultivariateNormal": (lambda m, a, t: m.MultivariateNormal(a, scale_tril=t),
                           [[0.1, 0.3, -0.2], _L]),
    "Normal": (lambda m, a, b: m.Normal(a, b), [[0.3, -0.8, 0.5], [0.9, 1.4, 0.6]]),
    "OneHotCategorical": (lambda m, a: m.OneHotCategorical(logits=a),
                          [[[0.4, -0.5, 0.1], [0.2, 0.2, -1.0], [0.5, 0.0, 0.3]]]),
    "Pareto": (lambda m, a, b: m.Pareto(a, b), [[1.0, 2.0, 0.5], [2.5, 0.8, 3.5]]),
    "Poisson": (lambda m, a: m.Poisson(a), [[0.8, 2.1, 3.3]]),
    "TransformedDistribution": (
        lambda m, a, b: m.TransformedDistribution(m.Normal(a, b), [m.transforms.ExpTransform()]),
        [[0.2, -0.3, 0.6], [0.5, 0.9, 1.3]]),
    "Uniform": (lambda m, a, b: m.Uniform(a, a + b), [[0.1, -0.5, 0.3], [0.5, 0.4, 0.6]]),
    "Independent": (lambda m, a, b: m.Independent(m.Normal(a, b), 1),
                    [[[0.3, -0.8, 0.5]], [[0.9, 1.4, 0.6]]]),
    "Cauchy": (lambda m, a, b: m.Cauchy(a, b), [[0.2, -0.7, 1.1], [0.6, 1.5, 0.9]]),
}
# a second parameter set per family for the same-family pairs (q differs from p)
SECOND = {"Independent": [[[0.1, 0.2, -0.4]], [[1.2, 0.7, 0.8]]],
          "Pareto": [[0.5, 1.5, 0.4], [1.5, 2.5, 3.0]],
          "Binomial": [[0.5, -0.1, 0.4]],
          "MultivariateNormal": [[-0.2, 0.4, 0.1], _L * 1.3],
          "LowRankMultivariateNormal": [[-0.1, 0.2, 0.3], [[0.2, -0.3], [0.4, 0.1], [0.0, 0.5]],
                                        [1.1, 0.8, 1.3]]}


def _pairs():
    """torch's registered pairs, by name (the abstract ExponentialFamily pair is checked
    through its families elsewhere: test_distributions_families.py's Bregman test)."""
    return sorted((p.__name__, q.__name__) for (p, q) in TKL._KL_REGISTRY
                  if "ExponentialFamily" not in (p.__name__, q.__name__))


def _make(module, name, arrays, leaf):
    fn, _ = FAMILIES[name]
    leaves = [leaf(np.asarray(a, dtype=np.float64)) for a in arrays]
    return fn(module, *leaves), leaves


def _second(name):
    if name in SECOND:
        return SECOND[name]
    return [np.asarray(a, dtype=np.float64)[..., ::-1].copy() * (1.1 if i else 1.0)
            for i, a in enumerate(FAMILIES[name][1])]


def test_pygpu_registers_every_pair_torch_does():
    ours = {(p.__name__, q.__name__) for (p, q) in PKL._KL}
    missing = [p for p in _pairs() if p not in ours]
    assert not missing, f"pairs torch registers and pygpu does not: {missing}"


@pytest.mark.parametrize("pair", _pairs(), ids=lambda p: f"{p[0]}-{p[1]}")
def test_kl_pair_matches_torch(device, pair):
    pn, qn = pair
    p_arrays = FAMILIES[pn][1]
    q_arrays = _second(qn) if pn == qn else FAMILIES[qn][1]
    tp, tpl = _make(TD, pn, p_arrays, lambda a: torch.tensor(a, requires_grad=True))
    tq, tql = _make(TD, qn, q_arrays, lambda a: torch.tensor(a, requires_grad=True))
    gp, gpl = _make(PD, pn, p_arrays, lambda a: to_device(a, device).requires_grad_())
    gq, gql = _make(PD, qn, q_arrays, lambda a: to_device(a, device).requires_grad_())
    want = TD.kl_divergence(tp, tq)
    got = PD.kl_divergence(gp, gq)
    w = want.detach().numpy()
    g = got.detach().cpu().numpy()
    np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, equal_nan=True,
                               err_msg=f"KL({pn} || {qn})")
    finite = np.isfinite(w)
    if not finite.any():
        return
    want[torch.tensor(finite)].sum().backward()
    (got * to_device(finite.astype(np.float64), device)).sum().backward()
    for k, (a, b) in enumerate(zip(gpl + gql, tpl + tql)):
        if b.grad is None:
            continue
        # (torch's xlogy gives NaN gradients at a masked-out entry, x log x at x < 0, where
        # the result is +inf: compared where torch's gradient is a number)
        tg = b.grad.numpy()
        ok = np.isfinite(tg)
        np.testing.assert_allclose(np.nan_to_num(a.grad.cpu().numpy())[ok], tg[ok],
                                   rtol=1e-7, atol=1e-10,
                                   err_msg=f"KL({pn} || {qn}): gradient of parameter {k}")


def test_the_most_specific_pair_wins_and_a_tie_warns_as_torch():
    class P1(PD.Normal):
        pass

    class P2(P1):
        pass

    marker = []
    saved = dict(PKL._KL)
    try:
        @PD.register_kl(P1, PD.Normal)
        def _a(p, q):
            marker.append("a")
            return p.loc * 0

        @PD.register_kl(P2, PD.Normal)
        def _b(p, q):
            marker.append("b")
            return p.loc * 0

        PD.kl_divergence(P2(0.0, 1.0), PD.Normal(0.0, 1.0))
        PD.kl_divergence(P1(0.0, 1.0), PD.Normal(0.0, 1.0))
        assert marker == ["b", "a"]

        @PD.register_kl(PD.Normal, P1)
        def _c(p, q):
            return p.loc * 0
        # (P2, P1): (P2, Normal) by p's type first, (Normal, P1) by q's type first: a tie
        with pytest.warns(RuntimeWarning, match=r"Ambiguous kl_divergence\(P2, P1\). "
                                                r"Please register_kl\(P2, P1\)"):
            PD.kl_divergence(P2(0.0, 1.0), P1(0.0, 1.0))
    finally:
        PKL._KL.clear()
        PKL._KL.update(saved)
        PKL._KL_MEMO.clear()
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        PD.register_kl(int, PD.Normal)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PD.kl_divergence(PD.Normal(0.0, 1.0), PD.Normal(1.0, 2.0))


def test_gamma_cdf_and_special_gammainc_match_torch(device):
    a = np.array([0.5, 1.3, 2.0, 7.5])
    b = np.array([1.0, 0.4, 2.5, 1.1])
    x = np.array([0.3, 2.0, 0.7, 6.0])
    for name in ("Gamma", "Chi2"):
        args_t = (torch.tensor(a),) if name == "Chi2" else (torch.tensor(a), torch.tensor(b))
        args_p = ((to_device(a, device),) if name == "Chi2"
                  else (to_device(a, device), to_device(b, device)))
        want = getattr(TD, name)(*args_t).cdf(torch.tensor(x)).numpy()
        got = getattr(PD, name)(*args_p).cdf(to_device(x, device)).cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13, err_msg=name)
    want = torch.special.gammainc(torch.tensor(a), torch.tensor(x)).numpy()
    got = pygpu.special.gammainc(to_device(a, device), to_device(x, device)).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
    want = torch.special.gammaincc(torch.tensor(a), torch.tensor(x)).numpy()
    got = pygpu.special.gammaincc(to_device(a, device), to_device(x, device)).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    # the upper tail: Q computed as itself (1 - P rounds to 0 at Q ~ 1e-17, and keeps only
    # 5 digits at Q ~ 1e-12)
    a_t, x_t = np.array([1.0, 2.0, 5.0, 0.5]), np.array([40.0, 30.0, 50.0, 20.0])
    want = torch.igammac(torch.tensor(a_t), torch.tensor(x_t)).numpy()
    got = pygpu.igammac(to_device(a_t, device), to_device(x_t, device)).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(ValueError, match="Expected value argument"):
        PD.Gamma(to_device(a, device), to_device(b, device)).cdf(to_device(-x, device))
