# test_pytorch_nn_more.py - the rest of torch.nn and nn.functional (issue 43, item 7):
# activations, distances, normalize/rms_norm/bilinear, the margin and likelihood losses,
# the padding modules, and their modules, each against torch in float64: values and
# gradients, on cpu and sim, with inputs that sit on the functions' kinks (0, the bounds
# of hardtanh/relu6/hardsigmoid/hardswish, the shrink thresholds), where PyTorch's gradient
# is decided by a strict or an inclusive comparison.
import math
import warnings

import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as F
from pygpu import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

KINKS = np.array([-6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 20.0, -20.0, 2.5, -2.5,
                  7.0, -0.25, 0.25])


def _inputs(shape, seed, kinks=True):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) * 3
    if kinks:
        flat = a.reshape(-1)
        flat[:min(len(KINKS), flat.size)] = KINKS[:flat.size]
    return a


def _compare(fn_ours, fn_theirs, arrays, device, grads=True, rtol=1e-9, atol=1e-12):
    """Run both on the same float64 data; compare the outputs and the inputs' gradients of
    sum(out * w) for a fixed random w."""
    ours = [pygpu.tensor(a, dtype=pygpu.float64, device=device).requires_grad_(grads)
            for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64).requires_grad_(grads) for a in arrays]
    o, t = fn_ours(*ours), fn_theirs(*theirs)
    np.testing.assert_allclose(o.detach().cpu().numpy(), t.detach().numpy(), rtol=rtol,
                               atol=atol)
    if not grads:
        return
    w = np.random.default_rng(7).standard_normal(tuple(t.shape))
    (o * pygpu.tensor(w, dtype=pygpu.float64, device=device)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None or not np.any(a.grad.numpy())
            continue
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


ACTIVATIONS = [
    ("hardtanh", lambda m, x: m.hardtanh(x)),
    ("hardtanh(-2, 3)", lambda m, x: m.hardtanh(x, -2.5, 3.0)),
    ("relu6", lambda m, x: m.relu6(x)),
    ("hardsigmoid", lambda m, x: m.hardsigmoid(x)),
    ("hardswish", lambda m, x: m.hardswish(x)),
    ("softplus", lambda m, x: m.softplus(x)),
    ("softplus(beta, threshold)", lambda m, x: m.softplus(x, 2.0, 5.0)),
    ("softsign", lambda m, x: m.softsign(x)),
    ("softshrink", lambda m, x: m.softshrink(x)),
    ("softshrink(1)", lambda m, x: m.softshrink(x, 1.0)),
    ("hardshrink", lambda m, x: m.hardshrink(x)),
    ("tanhshrink", lambda m, x: m.tanhshrink(x)),
    ("threshold", lambda m, x: m.threshold(x, 0.5, -7.0)),
    ("selu", lambda m, x: m.selu(x)),
    ("celu", lambda m, x: m.celu(x)),
    ("celu(2)", lambda m, x: m.celu(x, 2.0)),
    ("mish", lambda m, x: m.mish(x)),
    ("logsigmoid", lambda m, x: m.logsigmoid(x)),
    ("glu", lambda m, x: m.glu(x, 1)),
    ("softmin", lambda m, x: m.softmin(x, 1)),
    ("rrelu (eval)", lambda m, x: m.rrelu(x)),
    ("normalize", lambda m, x: m.normalize(x, dim=1)),
    ("normalize(p=1, dim=0)", lambda m, x: m.normalize(x, p=1.0, dim=0)),
]


@pytest.mark.parametrize("name,fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_match_torch(device, name, fn):
    # PyTorch's hardsigmoid backward multiplies by 1.0f / 6.0f, a float32 constant even in
    # float64 (aten's kernel): pygpu's 1/6 is double's, so the gradients differ at 3e-8
    rtol = 1e-7 if name == "hardsigmoid" else 1e-9
    _compare(lambda x: fn(F, x), lambda x: fn(TF, x), [_inputs((4, 6), 1)], device, rtol=rtol)


def test_prelu_matches_torch(device):
    x = _inputs((3, 4, 5), 2)
    for w in (np.array([0.25]), np.array([0.1, -0.2, 0.3, 0.5])):
        _compare(lambda a, b: F.prelu(a, b), lambda a, b: TF.prelu(a, b), [x, w], device)


TWO_INPUT = [
    ("cosine_similarity", lambda m, a, b: m.cosine_similarity(a, b), (5, 4), (5, 4), 1e-7),
    ("cosine_similarity(dim=0)", lambda m, a, b: m.cosine_similarity(a, b, dim=0), (5, 4),
     (5, 4), 1e-7),
    ("pairwise_distance", lambda m, a, b: m.pairwise_distance(a, b), (5, 4), (5, 4), 1e-9),
    ("pairwise_distance(p=1, keepdim)",
     lambda m, a, b: m.pairwise_distance(a, b, 1.0, keepdim=True), (5, 4), (5, 4), 1e-9),
    ("margin_ranking_loss", lambda m, a, b: m.margin_ranking_loss(
        a, b, (a.detach() > 0).double() * 2 - 1, margin=0.3), (7,), (7,), 1e-9),
    ("soft_margin_loss", lambda m, a, b: m.soft_margin_loss(
        a, (b.detach() > 0).double() * 2 - 1), (4, 5), (4, 5), 1e-9),
    ("hinge_embedding_loss", lambda m, a, b: m.hinge_embedding_loss(
        a, (b.detach() > 0).double() * 2 - 1, margin=0.7), (4, 5), (4, 5), 1e-9),
    ("multilabel_soft_margin_loss", lambda m, a, b: m.multilabel_soft_margin_loss(
        a, (b.detach() > 0).double()), (4, 5), (4, 5), 1e-9),
    ("cosine_embedding_loss", lambda m, a, b: m.cosine_embedding_loss(
        a, b, (a.detach()[:, 0] > 0).double() * 2 - 1, margin=0.1), (6, 4), (6, 4), 1e-7),
    ("poisson_nll_loss", lambda m, a, b: m.poisson_nll_loss(a, b.detach().abs() * 3),
     (4, 5), (4, 5), 1e-9),
    ("poisson_nll_loss(full, not log)", lambda m, a, b: m.poisson_nll_loss(
        a.abs() + 0.1, b.detach().abs() * 3, log_input=False, full=True), (4, 5), (4, 5), 1e-9),
    ("gaussian_nll_loss", lambda m, a, b: m.gaussian_nll_loss(a, b, b.abs() + 0.5), (4, 5),
     (4, 5), 1e-9),
    ("gaussian_nll_loss(one var per row, full)", lambda m, a, b: m.gaussian_nll_loss(
        a, b, (b[:, 0].abs() + 0.1), full=True), (4, 5), (4, 5), 1e-9),
]


# each loss with every reduction; a distance once
TWO_INPUT_CASES = [(*case, red) for case in TWO_INPUT
                   for red in (("mean", "none", "sum") if "loss" in case[0] else (None,))]


@pytest.mark.parametrize("name,fn,s1,s2,rtol,reduction", TWO_INPUT_CASES,
                         ids=[f"{a[0]}-{a[-1]}" for a in TWO_INPUT_CASES])
def test_distances_and_losses_match_torch(device, name, fn, s1, s2, rtol, reduction):
    kw = {"reduction": reduction} if reduction else {}

    def run(m):
        def f(a, b):
            if not kw:
                return fn(m, a, b)
            out = fn(_with(m, kw), a, b)
            return out
        return f
    _compare(run(F), run(TF), [_inputs(s1, 3, False), _inputs(s2, 4, False)], device,
             rtol=rtol, atol=1e-12)


class _with:
    """A functional module whose losses get the given keyword arguments."""

    def __init__(self, module, kw):
        self.module, self.kw = module, kw

    def __getattr__(self, name):
        fn = getattr(self.module, name)
        return (lambda *a, **k: fn(*a, **{**self.kw, **k})) if name.endswith("_loss") else fn


def test_class_index_losses_match_torch(device):
    x = _inputs((5, 4), 5, False)
    y = np.array([0, 3, 1, 1, 2])
    for p, margin in ((1, 1.0), (2, 0.5)):
        _compare(lambda a: F.multi_margin_loss(a, pygpu.tensor(y, device=device), p=p,
                                               margin=margin),
                 lambda a: TF.multi_margin_loss(a, torch.tensor(y), p=p, margin=margin),
                 [x], device)
    w = np.array([1.0, 0.5, 2.0, 1.5])
    _compare(lambda a: F.multi_margin_loss(a, pygpu.tensor(y, device=device),
                                           weight=pygpu.tensor(w, device=device)),
             lambda a: TF.multi_margin_loss(a, torch.tensor(y), weight=torch.tensor(w)),
             [x], device)
    targets = np.array([[3, 0, -1, 1], [1, -1, 2, 2], [0, 1, 2, 3], [2, -1, -1, -1],
                        [-1, 0, 0, 0]])
    _compare(lambda a: F.multilabel_margin_loss(a, pygpu.tensor(targets, device=device)),
             lambda a: TF.multilabel_margin_loss(a, torch.tensor(targets)), [x], device)


def test_triplet_losses_match_torch(device):
    arrays = [_inputs((6, 4), s, False) for s in (10, 11, 12)]
    for kw in ({}, {"margin": 0.5, "p": 1.0, "swap": True}):
        _compare(lambda a, p, n: F.triplet_margin_loss(a, p, n, **kw),
                 lambda a, p, n: TF.triplet_margin_loss(a, p, n, **kw), arrays, device)

    def cos_dist(m):
        return lambda x, y: 1.0 - m.cosine_similarity(x, y)
    _compare(lambda a, p, n: F.triplet_margin_with_distance_loss(
                 a, p, n, distance_function=cos_dist(F), margin=0.4),
             lambda a, p, n: TF.triplet_margin_with_distance_loss(
                 a, p, n, distance_function=cos_dist(TF), margin=0.4), arrays, device,
             rtol=1e-7)


def test_pdist_rms_norm_bilinear_match_torch(device):
    _compare(lambda x: F.pdist(x), lambda x: TF.pdist(x), [_inputs((5, 3), 13, False)], device)
    _compare(lambda x: F.pdist(x, 1.0), lambda x: TF.pdist(x, 1.0),
             [_inputs((4, 3), 14, False)], device)
    _compare(lambda x, w: F.rms_norm(x, (4,), w, 1e-6),
             lambda x, w: TF.rms_norm(x, (4,), w, 1e-6),
             [_inputs((3, 4), 15, False), _inputs((4,), 16, False)], device)
    _compare(lambda x: F.rms_norm(x, (2, 4)), lambda x: TF.rms_norm(x, (2, 4)),
             [_inputs((3, 2, 4), 17, False)], device)
    _compare(lambda a, b, w, c: F.bilinear(a, b, w, c), lambda a, b, w, c: TF.bilinear(a, b, w, c),
             [_inputs((2, 3, 4), 18, False), _inputs((2, 3, 5), 19, False),
              _inputs((6, 4, 5), 20, False), _inputs((6,), 21, False)], device)


PADS = [("ReflectionPad1d", 2, (2, 3, 5)), ("ReflectionPad2d", (1, 2, 0, 1), (2, 2, 4, 4)),
        ("ReflectionPad3d", 1, (1, 2, 3, 3, 3)), ("ReplicationPad1d", (3, 1), (2, 4)),
        ("ReplicationPad2d", 2, (1, 3, 3)), ("ReplicationPad3d", (1, 0, 2, 1, 0, 1),
                                             (1, 1, 2, 3, 2)),
        ("CircularPad1d", 1, (1, 2, 4)), ("CircularPad2d", (1, 1, 2, 0), (1, 2, 3, 3)),
        ("CircularPad3d", 1, (1, 1, 2, 2, 2)), ("ZeroPad1d", 2, (2, 3)),
        ("ZeroPad2d", (1, 0, 2, 3), (1, 2, 2)), ("ZeroPad3d", 1, (1, 1, 2, 2, 2))]


@pytest.mark.parametrize("name,padding,shape", PADS, ids=[p[0] for p in PADS])
def test_padding_modules_match_torch(device, name, padding, shape):
    ours, theirs = getattr(nn, name)(padding), getattr(torch.nn, name)(padding)
    assert repr(ours) == repr(theirs)
    _compare(lambda x: ours(x), lambda x: theirs(x), [_inputs(shape, 22, False)], device)
    c_ours, c_theirs = (nn.ConstantPad2d(padding if isinstance(padding, int) else 1, 2.5),
                        torch.nn.ConstantPad2d(padding if isinstance(padding, int) else 1, 2.5))
    assert repr(c_ours) == repr(c_theirs)


def test_modules_match_torch_in_repr_and_output(device):
    pairs = [
        (nn.Hardtanh(-2.0, 2.0), torch.nn.Hardtanh(-2.0, 2.0)), (nn.ReLU6(), torch.nn.ReLU6()),
        (nn.Hardsigmoid(), torch.nn.Hardsigmoid()), (nn.Hardswish(), torch.nn.Hardswish()),
        (nn.Softplus(2.0), torch.nn.Softplus(2.0)), (nn.Softsign(), torch.nn.Softsign()),
        (nn.Softshrink(0.3), torch.nn.Softshrink(0.3)),
        (nn.Hardshrink(0.3), torch.nn.Hardshrink(0.3)),
        (nn.Tanhshrink(), torch.nn.Tanhshrink()), (nn.Threshold(0.1, 20), torch.nn.Threshold(0.1, 20)),
        (nn.SELU(), torch.nn.SELU()), (nn.CELU(0.5), torch.nn.CELU(0.5)), (nn.Mish(), torch.nn.Mish()),
        (nn.LogSigmoid(), torch.nn.LogSigmoid()), (nn.GLU(0), torch.nn.GLU(0)),
        (nn.Softmin(1), torch.nn.Softmin(1)), (nn.Softmax2d(), torch.nn.Softmax2d()),
        (nn.RReLU().eval(), torch.nn.RReLU().eval()), (nn.PReLU(), torch.nn.PReLU()),
        (nn.CrossMapLRN2d(3), torch.nn.CrossMapLRN2d(3)), (nn.RMSNorm(5), torch.nn.RMSNorm(5)),
    ]
    x = _inputs((2, 4, 3, 5), 23)
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        ours.to(device).double()
        theirs.double()
        a = pygpu.tensor(x, device=device)
        b = torch.tensor(x)
        np.testing.assert_allclose(ours(a).detach().cpu().numpy(), theirs(b).detach().numpy(),
                                   rtol=1e-9, atol=1e-12, err_msg=repr(ours))
    bil, tbil = nn.Bilinear(3, 4, 2), torch.nn.Bilinear(3, 4, 2)
    assert repr(bil) == repr(tbil) and tuple(bil.weight.shape) == tuple(tbil.weight.shape)
    bound = 1 / math.sqrt(3)
    assert float(bil.weight.abs().max()) <= bound
    for ours, theirs in [(nn.CosineSimilarity(), torch.nn.CosineSimilarity()),
                         (nn.PairwiseDistance(), torch.nn.PairwiseDistance()),
                         (nn.MarginRankingLoss(0.1), torch.nn.MarginRankingLoss(0.1)),
                         (nn.TripletMarginLoss(), torch.nn.TripletMarginLoss()),
                         (nn.GaussianNLLLoss(), torch.nn.GaussianNLLLoss()),
                         (nn.FeatureAlphaDropout(0.2), torch.nn.FeatureAlphaDropout(0.2))]:
        assert repr(ours) == repr(theirs)


def test_random_activations_and_dropouts_keep_their_distribution():
    x = pygpu.full((200, 500), -1.0)
    y = F.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert -0.3 <= y.min() and y.max() <= -0.1 and abs(y.mean() + 0.2) < 0.005
    z = pygpu.randn(64, 32, 4, 4)
    out = F.feature_alpha_dropout(z, 0.5, training=True).numpy()
    assert abs(out.mean()) < 0.05 and abs(out.std() - 1.0) < 0.05  # SELU's fixed point
    alpha = 1.0507009873554804934193349852946 * 1.6732632423543772848170429916717
    a = (0.5 * (1.0 + 0.5 * alpha ** 2)) ** -0.5
    kept = np.isclose(out, a * z.numpy() + alpha * a * 0.5, atol=1e-5).reshape(64, 32, -1)
    dropped = np.isclose(out, alpha * a * 0.5 - alpha * a, atol=1e-5).reshape(64, 32, -1)
    assert (kept.all(-1) | dropped.all(-1)).all()  # whole channels: kept or dropped
    assert 0.4 < dropped.all(-1).mean() < 0.6
    g = F.gumbel_softmax(pygpu.zeros(1000, 4), tau=0.5, hard=True)
    assert (g.sum(1).numpy() == 1).all() and set(np.unique(g.numpy())) <= {0.0, 1.0}
    counts = g.sum(0).numpy()
    assert counts.min() > 180  # each of 4 equal logits chosen about 250 times of 1000
    logits = pygpu.randn(3, 5, requires_grad=True)
    F.gumbel_softmax(logits, hard=True).sum().backward()
    assert logits.grad is not None


def test_inplace_spellings_and_deprecated_ones():
    for name, args in [("relu_", ()), ("hardtanh_", ()), ("elu_", ()), ("leaky_relu_", ()),
                       ("selu_", ()), ("celu_", ()), ("threshold_", (0.0, -1.0)),
                       ("rrelu_", ())]:
        a = pygpu.tensor(KINKS.copy())
        b = torch.tensor(KINKS.copy())
        assert getattr(F, name)(a, *args) is a
        getattr(TF, name)(b, *args)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, err_msg=name)
    x = pygpu.randn(1, 2, 4, 4)
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        up = F.upsample_nearest(x, scale_factor=2)
    np.testing.assert_array_equal(up.numpy(), F.interpolate(x, scale_factor=2).numpy())
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        ub = F.upsample_bilinear(x, scale_factor=2)
    ref = TF.interpolate(torch.tensor(x.numpy()), scale_factor=2, mode="bilinear",
                         align_corners=True)
    np.testing.assert_allclose(ub.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    out, idx = F.max_pool2d_with_indices(x, 2)
    t_out, t_idx = TF.max_pool2d_with_indices(torch.tensor(x.numpy()), 2)
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    assert F.Tensor is pygpu.Tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.Container  # the class itself does not warn; making one does
    with pytest.warns(UserWarning, match="nn.Container is deprecated"):
        c = nn.Container(fc=nn.Linear(2, 2))
    assert len(list(c.parameters())) == 2
    nll = nn.NLLLoss2d()
    assert isinstance(nll, nn.NLLLoss)


def test_errors_match_torch():
    for call in [lambda m: m.nn.functional.glu(m.ones(3, 5), 1),
                 lambda m: m.nn.functional.softshrink(m.ones(3), -1.0),
                 lambda m: m.nn.functional.pdist(m.ones(3)),
                 lambda m: m.nn.functional.prelu(m.ones(2, 3), m.ones(2)),
                 lambda m: m.nn.functional.hardtanh(m.ones(3), 2.0, 1.0)]:
        with pytest.raises(Exception) as theirs:
            call(torch)
        with pytest.raises(type(theirs.value)) as ours:
            call(pygpu)
        assert str(theirs.value).split("\n")[0][:40] in str(ours.value)
