# test_batchnorm_eval.py - batch norm in evaluation as one BATCH_NORM EVAL_FWD node (issue 45:
# it was five tensor nodes over x, the multiply and the add of a per-channel scale and shift
# among them): against torch on cpu and sim, float32 and float64, with and without affine
# parameters, odd channel counts, 2-d to 5-d inputs, non-contiguous inputs, the ReLU and
# ReLU6 fused after it (nn.Sequential's pairs), 1 and 2 threads, every ISA variant; with a
# gradient wanted it stays the composite (the node has no backward), and agrees with torch
# each way. The module's parameters and running statistics are left as they were.

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import functional as F
from pygpu.profiler import profile
from _helpers import run_under_isa

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# x shapes: odd channels, planes of 1, 3-d and 5-d inputs, a batch of 1
SHAPES = [(4, 7, 5, 3), (2, 13, 9), (3, 5), (1, 97, 4, 4), (2, 3, 2, 3, 4), (16, 70, 16, 16)]
ACTS = [None, "relu", "relu6"]


def _arrays(shape, dtype, seed=0):
    r = np.random.default_rng(seed)
    C = shape[1]
    x = (r.standard_normal(shape) * 4).astype(dtype)
    w, b = r.standard_normal(C).astype(dtype), r.standard_normal(C).astype(dtype)
    rm, rv = r.standard_normal(C).astype(dtype), (r.random(C) + 0.1).astype(dtype)
    return x, w, b, rm, rv


def _torch_ref(x, w, b, rm, rv, act):
    y = TF.batch_norm(x, rm, rv, w, b, training=False, eps=1e-5)
    if act == "relu":
        return TF.relu(y)
    return TF.relu6(y) if act == "relu6" else y


def _ours(x, w, b, rm, rv, act):
    return F.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-5, _relu=act or False)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_eval_matches_torch(device, shape, act, dtype):
    arrays = _arrays(shape, dtype)
    with pygpu.no_grad():
        y = _ours(*(pygpu.tensor(a, device=device) for a in arrays), act)
    ref = _torch_ref(*(torch.tensor(a) for a in arrays), act)
    assert y.dtype == getattr(pygpu, dtype) and y.shape == tuple(ref.shape)
    np.testing.assert_allclose(y.numpy(), ref.numpy(), **_tol(dtype))


@pytest.mark.parametrize("affine", [(True, False), (False, True), (False, False)])
def test_eval_without_weight_or_bias(device, affine):
    x, w, b, rm, rv = _arrays((3, 6, 4, 4), "float64", seed=2)
    w, b = (w if affine[0] else None), (b if affine[1] else None)
    P = (lambda a: None if a is None else pygpu.tensor(a, device=device))
    T = (lambda a: None if a is None else torch.tensor(a))
    with pygpu.no_grad():
        y = _ours(P(x), P(w), P(b), P(rm), P(rv), "relu")
    np.testing.assert_allclose(y.numpy(), _torch_ref(T(x), T(w), T(b), T(rm), T(rv), "relu"),
                               rtol=1e-12, atol=1e-12)


def test_non_contiguous_input(device):
    """A transposed and a sliced input are read in their logical order."""
    x, w, b, rm, rv = _arrays((5, 6, 7, 8), "float32", seed=3)
    P = [pygpu.tensor(a, device=device) for a in (x, w, b, rm, rv)]
    T = [torch.tensor(a) for a in (x, w, b, rm, rv)]
    views = [(lambda t: t.transpose(2, 3)), (lambda t: t[:, :, 1::2, ::3])]
    for view in views:
        px = view(P[0])
        assert not px.is_contiguous()
        with pygpu.no_grad():
            y = _ours(px, *P[1:], "relu6")
        np.testing.assert_allclose(y.numpy(), _torch_ref(view(T[0]), *T[1:], "relu6"),
                                   rtol=1e-5, atol=1e-5)


def test_eval_is_one_node_under_no_grad(device):
    """No gradient wanted: one batch_norm node, the ReLU inside it, no elementwise node."""
    m = nn.Sequential(nn.BatchNorm2d(6), nn.ReLU6()).to(device).eval()
    x = pygpu.randn(2, 6, 5, 5, device=device)
    with pygpu.no_grad(), profile() as prof:
        m(x)
    names = [e.name for e in prof.events() if not e.name.startswith("Memcpy")]
    assert names == ["batch_norm"], names


@pytest.mark.parametrize("act", ACTS)
def test_eval_with_a_gradient_matches_torch_each_way(device, act):
    """Frozen statistics with trainable affine parameters (fine-tuning): the composite, whose
    gradients match torch's, ReLU6's strictly inside (0, 6) as hardtanh's."""
    x, w, b, rm, rv = _arrays((3, 5, 4, 4), "float64", seed=4)
    x[0, 0, 0, :2] = (6.0 - b[0]) / w[0] * np.sqrt(rv[0] + 1e-5) + rm[0]  # y = 6 exactly-ish
    px, pw, pb = (pygpu.tensor(a, device=device, requires_grad=True) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    prm, prv = pygpu.tensor(rm, device=device), pygpu.tensor(rv, device=device)
    y = _ours(px, pw, pb, prm, prv, act)
    ref = _torch_ref(tx, tw, tb, torch.tensor(rm), torch.tensor(rv), act)
    np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = np.random.default_rng(5).standard_normal(x.shape)
    (y * pygpu.tensor(g, device=device)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    for p, t in ((px, tx), (pw, tw), (pb, tb)):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("act", [nn.ReLU, nn.ReLU6])
def test_module_pairs_match_torch_and_leave_the_state(act):
    """nn.Sequential(BatchNorm2d, ReLU/ReLU6) in eval under no_grad against torch's; the
    state_dict (parameters, running statistics, num_batches_tracked) unchanged by it."""
    ours = nn.Sequential(nn.Conv2d(3, 11, 3, padding=1), nn.BatchNorm2d(11), act())
    ref = torch.nn.Sequential(torch.nn.Conv2d(3, 11, 3, padding=1), torch.nn.BatchNorm2d(11),
                              getattr(torch.nn, act.__name__)())
    x = np.random.default_rng(6).standard_normal((4, 3, 9, 9)).astype(np.float32) * 3
    ours.train()
    ours(pygpu.tensor(x)).sum().backward()  # running statistics away from 0 and 1
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    ours.eval()
    ref.eval()
    before = {k: v.numpy().copy() for k, v in ours.state_dict().items()}
    with pygpu.no_grad():
        y = ours(pygpu.tensor(x * 2)).numpy()
    with torch.no_grad():
        want = ref(torch.tensor(x * 2)).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    assert (y >= 0).all() and (act is nn.ReLU or (y <= 6).all())
    for k, v in ours.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)


@pytest.fixture
def threads():
    before = pygpu.get_num_threads()
    yield pygpu.set_num_threads
    pygpu.set_num_threads(before)


def test_same_bits_at_1_and_2_threads(threads):
    arrays = [pygpu.tensor(a) for a in _arrays((16, 70, 16, 16), "float32", seed=7)]
    runs = []
    for n in (1, 2):
        threads(n)
        with pygpu.no_grad():
            runs.append(_ours(*arrays, "relu").numpy())
    np.testing.assert_array_equal(runs[0], runs[1])


def test_bad_input_raises_torch_errors():
    x = pygpu.randn(2, 4, 3)
    with pygpu.no_grad():
        with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
            F.batch_norm(x, pygpu.zeros(3), pygpu.ones(4), training=False)
        with pytest.raises(RuntimeError, match="must be defined in evaluation mode"):
            F.batch_norm(x, None, None, training=False)
        with pytest.raises(RuntimeError, match="weight should contain 4 elements not 5"):
            F.batch_norm(x, pygpu.zeros(4), pygpu.ones(4), pygpu.ones(5), training=False)


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_every_isa_variant_matches_torch(isa):
    """PYGPU_ISA caps the vector kernels' level: each variant of the node's pass, run in a
    process of its own, against torch."""
    code = ("import test_batchnorm_eval as t\n"
            "for s in t.SHAPES:\n"
            "    for a in t.ACTS:\n"
            "        t.test_eval_matches_torch('cpu', s, a, 'float32')\n")
    run_under_isa(isa, code)
