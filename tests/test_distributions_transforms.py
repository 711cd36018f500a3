# test_distributions_transforms.py - pygpu.distributions.constraints, transforms,
# biject_to / transform_to and TransformedDistribution against torch.distributions on every
# device: each constraint's check on values inside and outside it; each transform's forward,
# inverse and log|det J| (with gradients) in float64, its domain/codomain event_dim, shapes,
# sign and caching; biject_to's round trips onto each constraint; and the squashed Gaussian
# of SAC (Normal through TanhTransform) as a TransformedDistribution: log_prob, rsample's
# gradient, cdf/icdf through monotone transforms.
import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.constraints as TC
import torch.distributions.transforms as TT

import pygpu
import pygpu.distributions as PD
import pygpu.distributions.constraints as PC
import pygpu.distributions.transforms as PT

from _helpers import to_device

R = np.random.default_rng(7)
_L = np.tril(R.standard_normal((3, 3)), -1) + np.diag(np.abs(R.standard_normal(3)) + 0.5)


def _vals(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


CONSTRAINTS = [  # (name, a constraint from each module, values to check)
    ("real", lambda c: c.real, np.array([0.0, -3.0, np.nan, np.inf])),
    ("positive", lambda c: c.positive, np.array([0.0, 1.0, -1.0])),
    ("nonnegative", lambda c: c.nonnegative, np.array([0.0, 1.0, -1.0])),
    ("unit_interval", lambda c: c.unit_interval, np.array([0.0, 1.0, 1.5, -0.1])),
    ("interval", lambda c: c.interval(-1.0, 2.0), np.array([-1.0, 2.0, 2.5, 0.0])),
    ("half_open_interval", lambda c: c.half_open_interval(-1.0, 2.0), np.array([-1.0, 2.0, 1.9])),
    ("greater_than", lambda c: c.greater_than(1.0), np.array([1.0, 1.5])),
    ("greater_than_eq", lambda c: c.greater_than_eq(1.0), np.array([1.0, 0.5])),
    ("less_than", lambda c: c.less_than(1.0), np.array([1.0, 0.5])),
    ("boolean", lambda c: c.boolean, np.array([0.0, 1.0, 0.5])),
    ("nonnegative_integer", lambda c: c.nonnegative_integer, np.array([0.0, 3.0, 1.5, -1.0])),
    ("positive_integer", lambda c: c.positive_integer, np.array([0.0, 3.0, 1.5])),
    ("integer_interval", lambda c: c.integer_interval(0, 4), np.array([0.0, 4.0, 5.0, 2.5])),
    ("real_vector", lambda c: c.real_vector, np.array([[0.0, 1.0], [np.nan, 1.0]])),
    ("simplex", lambda c: c.simplex, np.array([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]])),
    ("one_hot", lambda c: c.one_hot, np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])),
    ("lower_triangular", lambda c: c.lower_triangular, np.stack([_L, _L.T])),
    ("lower_cholesky", lambda c: c.lower_cholesky, np.stack([_L, _L.T, -_L])),
    ("positive_definite", lambda c: c.positive_definite, np.stack([_L @ _L.T, -_L @ _L.T])),
    ("independent", lambda c: c.independent(c.positive, 1), np.array([[1.0, 2.0], [1.0, -2.0]])),
]


@pytest.mark.parametrize("case", CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS])
def test_constraints_check_as_torch(device, case):
    name, make, values = case
    pc, tc = make(PC), make(TC)
    assert pc.event_dim == tc.event_dim and pc.is_discrete == tc.is_discrete, name
    got = pc.check(to_device(values, device)).numpy()
    want = tc.check(torch.tensor(values)).numpy()
    np.testing.assert_array_equal(got, want, err_msg=name)
    assert repr(pc) == repr(tc) or name in ("independent",), (repr(pc), repr(tc))


TRANSFORMS = [  # (name, a transform from each module, an input in its domain)
    ("Exp", lambda m: m.ExpTransform(), R.standard_normal((2, 3))),
    ("Affine", lambda m: m.AffineTransform(1.5, -2.0), R.standard_normal((2, 3))),
    ("Affine tensor event", lambda m: m.AffineTransform(
        _t(m, np.array([0.1, 0.2, 0.3])), _t(m, np.array([2.0, -1.0, 0.5])), event_dim=1),
     R.standard_normal((2, 3))),
    ("Sigmoid", lambda m: m.SigmoidTransform(), R.standard_normal((2, 3)) * 3),
    ("Tanh", lambda m: m.TanhTransform(), R.standard_normal((2, 3)) * 2),
    ("Softplus", lambda m: m.SoftplusTransform(), R.standard_normal((2, 3)) * 3),
    ("Power", lambda m: m.PowerTransform(2.5), np.abs(R.standard_normal((2, 3))) + 0.1),
    ("StickBreaking", lambda m: m.StickBreakingTransform(), R.standard_normal((2, 3))),
    ("Compose", lambda m: m.ComposeTransform([m.AffineTransform(0.5, 2.0), m.TanhTransform(),
                                              m.AffineTransform(0.0, 3.0)]), R.standard_normal((2, 3))),
    ("Independent", lambda m: m.IndependentTransform(m.ExpTransform(), 1), R.standard_normal((2, 3))),
    ("Reshape", lambda m: m.ReshapeTransform((2, 3), (3, 2)), R.standard_normal((4, 2, 3))),
    ("CorrCholesky", lambda m: m.CorrCholeskyTransform(), R.standard_normal((2, 6))),
    ("Inverse Exp", lambda m: m.ExpTransform().inv, np.abs(R.standard_normal((2, 3))) + 0.1),
    ("Cat", lambda m: m.CatTransform([m.ExpTransform(), m.AffineTransform(1.0, 2.0)], dim=1,
                                     lengths=[1, 2]), R.standard_normal((2, 3))),
    ("Stack", lambda m: m.StackTransform([m.ExpTransform(), m.TanhTransform()], dim=1),
     R.standard_normal((3, 2))),
    ("CumulativeDistribution", lambda m: m.CumulativeDistributionTransform(
        m.Normal(_t(m, np.zeros(3)), _t(m, np.ones(3)))) if hasattr(m, "Normal") else
     TT.CumulativeDistributionTransform(TD.Normal(torch.zeros(3, dtype=torch.float64),
                                                  torch.ones(3, dtype=torch.float64))),
     R.standard_normal((2, 3))),
]
_DEVICE = {"device": "cpu"}


def _t(m, a):
    return torch.tensor(a) if m in (TT, TD) else to_device(a, _DEVICE["device"])


@pytest.mark.parametrize("case", TRANSFORMS, ids=[c[0] for c in TRANSFORMS])
def test_transforms_match_torch(device, case):
    name, make, x = case
    _DEVICE["device"] = device
    pm = PD if name == "CumulativeDistribution" else PT
    pt, tt = make(pm), make(TT)
    assert pt.domain.event_dim == tt.domain.event_dim, name
    assert pt.codomain.event_dim == tt.codomain.event_dim, name
    assert pt.bijective == tt.bijective, name
    xt = torch.tensor(x, requires_grad=True)
    xp = to_device(x, device).requires_grad_()
    yt, yp = tt(xt), pt(xp)
    np.testing.assert_allclose(_vals(yp), _vals(yt), rtol=1e-10, atol=1e-12, err_msg=f"{name} forward")
    assert tuple(pt.forward_shape(tuple(x.shape))) == tuple(tt.forward_shape(torch.Size(x.shape)))
    assert tuple(pt.inverse_shape(tuple(yp.shape))) == tuple(tt.inverse_shape(yt.shape))
    # inverse on a fresh tensor (no cache), back to x
    y_fresh = to_device(_vals(yt), device)
    np.testing.assert_allclose(_vals(pt.inv(y_fresh)), x, rtol=1e-7, atol=1e-9, err_msg=f"{name} inverse")
    lt = tt.log_abs_det_jacobian(xt, yt)
    lp = pt.log_abs_det_jacobian(xp, yp)
    np.testing.assert_allclose(_vals(lp), _vals(lt), rtol=1e-9, atol=1e-11, err_msg=f"{name} log|det J|")
    (yt.sum() + lt.sum()).backward()
    (yp.sum() + lp.sum()).backward()
    np.testing.assert_allclose(xp.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-10,
                               err_msg=f"{name} gradient")
    if name in ("Exp", "Affine", "Sigmoid", "Tanh", "Softplus"):
        assert int(pt.sign) == int(tt.sign), name


def test_softmax_lower_cholesky_and_positive_definite_transforms(device):
    R = np.random.default_rng(20)  # this test's own draws, whatever ran before
    x = R.standard_normal((2, 3, 3))
    for name in ("SoftmaxTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform"):
        pt, tt = getattr(PT, name)(), getattr(TT, name)()
        yp, yt = pt(to_device(x, device)), tt(torch.tensor(x))
        np.testing.assert_allclose(_vals(yp), _vals(yt), rtol=1e-10, atol=1e-12, err_msg=name)
        back_p, back_t = pt.inv(to_device(_vals(yt), device)), tt.inv(yt)
        np.testing.assert_allclose(_vals(back_p), _vals(back_t), rtol=1e-8, atol=1e-10, err_msg=name)
        assert bool(pt.codomain.check(yp).all()), name


def test_caching_and_inverse_identities(device):
    R = np.random.default_rng(21)  # this test's own draws, whatever ran before
    x = to_device(R.standard_normal(4), device)
    t = PT.ExpTransform(cache_size=1)
    y = t(x)
    assert t.inv(y) is x and t(x) is y  # the cached pair, as torch's
    assert PT.ExpTransform()(x) is not PT.ExpTransform()(x)
    assert t.inv.inv is t and PT.ExpTransform() == PT.ExpTransform()
    assert PT.ExpTransform().with_cache(1)._cache_size == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        PT.ExpTransform(cache_size=2)
    c = PT.ComposeTransform([PT.ExpTransform(), PT.AffineTransform(1.0, 2.0)])
    np.testing.assert_allclose(c.inv(c(x)).numpy(), x.numpy(), rtol=1e-12)
    assert PT.identity_transform(x) is x


@pytest.mark.parametrize("name", ["real", "positive", "greater_than", "less_than",
                                  "unit_interval", "interval", "simplex", "real_vector",
                                  "lower_cholesky", "positive_definite", "corr_cholesky"])
def test_biject_to_and_transform_to_map_onto_the_constraint(device, name):
    R = np.random.default_rng(22)  # this test's own draws, whatever ran before
    make = {"real": lambda c: c.real, "positive": lambda c: c.positive,
            "greater_than": lambda c: c.greater_than(2.0), "less_than": lambda c: c.less_than(-1.0),
            "unit_interval": lambda c: c.unit_interval, "interval": lambda c: c.interval(-2.0, 5.0),
            "simplex": lambda c: c.simplex, "real_vector": lambda c: c.real_vector,
            "lower_cholesky": lambda c: c.lower_cholesky, "corr_cholesky": lambda c: c.corr_cholesky,
            "positive_definite": lambda c: c.positive_definite}[name]
    x = R.standard_normal((2, 3, 3)) if name in ("lower_cholesky", "positive_definite") else \
        R.standard_normal((2, 6)) if name == "corr_cholesky" else R.standard_normal((2, 3))
    for registry_p, registry_t in ((PD.transform_to, TD.transform_to), (PD.biject_to, TD.biject_to)):
        try:
            tt = registry_t(make(TC))
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                registry_p(make(PC))
            continue
        pt = registry_p(make(PC))
        assert type(pt).__name__ == type(tt).__name__, (name, pt, tt)
        yp, yt = pt(to_device(x, device)), tt(torch.tensor(x))
        np.testing.assert_allclose(_vals(yp), _vals(yt), rtol=1e-10, atol=1e-12, err_msg=name)
        assert bool(make(PC).check(yp).all()), name


def test_squashed_gaussian_and_transformed_distribution(device):
    """SAC's policy: a = tanh(u), u ~ N(mu, sigma); log pi(a) by the change of variables."""
    R = np.random.default_rng(23)  # this test's own draws, whatever ran before
    mu, sigma = R.standard_normal((4, 2)), np.abs(R.standard_normal((4, 2))) + 0.3
    mt, st = torch.tensor(mu, requires_grad=True), torch.tensor(sigma, requires_grad=True)
    mp, sp = to_device(mu, device).requires_grad_(), to_device(sigma, device).requires_grad_()
    dt = TD.TransformedDistribution(TD.Normal(mt, st), [TT.TanhTransform(cache_size=1)])
    dp = PD.TransformedDistribution(PD.Normal(mp, sp), [PT.TanhTransform(cache_size=1)])
    assert tuple(dp.batch_shape) == (4, 2) and dp.has_rsample
    a = np.tanh(R.standard_normal((4, 2)))
    lt, lp = dt.log_prob(torch.tensor(a)), dp.log_prob(to_device(a, device))
    np.testing.assert_allclose(_vals(lp), _vals(lt), rtol=1e-9, atol=1e-11)
    lt.sum().backward()
    lp.sum().backward()
    np.testing.assert_allclose(mp.grad.numpy(), mt.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(sp.grad.numpy(), st.grad.numpy(), rtol=1e-8, atol=1e-10)
    # rsample: a = tanh(mu + sigma eps); log_prob of its own draw goes through the cache
    mp.grad = sp.grad = None
    pygpu.manual_seed(3)
    act = dp.rsample()
    eps = (np.arctanh(act.detach().numpy()) - mu) / sigma
    act.sum().backward()
    np.testing.assert_allclose(mp.grad.numpy(), 1 - act.detach().numpy() ** 2, rtol=1e-9)
    np.testing.assert_allclose(sp.grad.numpy(), (1 - act.detach().numpy() ** 2) * eps, rtol=1e-6,
                               atol=1e-9)
    # cdf / icdf through a decreasing affine map, as torch's monotonized cdf
    base_t = TD.Normal(torch.tensor(mu), torch.tensor(sigma))
    base_p = PD.Normal(to_device(mu, device), to_device(sigma, device))
    ft = TD.TransformedDistribution(base_t, [TT.AffineTransform(1.0, -2.0), TT.ExpTransform()])
    fp = PD.TransformedDistribution(base_p, [PT.AffineTransform(1.0, -2.0), PT.ExpTransform()])
    v = np.abs(R.standard_normal((4, 2))) + 0.1
    for what, arg in (("cdf", v), ("icdf", np.full((4, 2), 0.3)), ("log_prob", v)):
        np.testing.assert_allclose(_vals(getattr(fp, what)(to_device(arg, device))),
                                   _vals(getattr(ft, what)(torch.tensor(arg))), rtol=1e-9,
                                   atol=1e-14, err_msg=what)
    # an event-changing transform: StickBreaking turns a (3,) batch into a (4,) event
    sb_t = TD.TransformedDistribution(TD.Normal(torch.zeros(3, dtype=torch.float64),
                                                torch.ones(3, dtype=torch.float64)),
                                      TT.StickBreakingTransform())
    sb_p = PD.TransformedDistribution(PD.Normal(to_device(np.zeros(3), device),
                                                to_device(np.ones(3), device)),
                                      PT.StickBreakingTransform())
    assert tuple(sb_p.event_shape) == (4,) and tuple(sb_p.batch_shape) == ()
    y = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(_vals(sb_p.log_prob(to_device(y, device))),
                               _vals(sb_t.log_prob(torch.tensor(y))), rtol=1e-9)
    with pytest.raises(ValueError, match="transforms must be a Transform or list"):
        PD.TransformedDistribution(base_p, "exp")
