# test_pytorch_nn.py - pygpu.nn against torch.nn as the oracle: every functional op and
# loss (values and gradients, float64, on every device, with their options), the layer
# modules (LayerNorm, BatchNorm1d running statistics in train/eval, Embedding, Dropout,
# Flatten/Unflatten), containers, nn.init's distributions, nn.utils, and Module's
# traversal, buffers, hooks and repr laid out as PyTorch's.
import math
from collections import OrderedDict

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import functional as F
from _helpers import same_repr

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(a, device, grad=True):
    p = pygpu.tensor(a, device=device)
    t = torch.tensor(a)
    if grad:
        p.requires_grad_(True)
        t.requires_grad_(True)
    return p, t


def _close(p, t, rtol=1e-9, atol=1e-11):
    np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def _check_fn(device, ours, ref, arrays, grad_of=(0,), rtol=1e-9, atol=1e-11, upstream=True):
    """ours(*pygpu tensors) vs ref(*torch tensors): values, then gradients of the
    arrays at grad_of under a random upstream gradient."""
    pairs = [_pair(a, device, grad=i in grad_of) if isinstance(a, np.ndarray) else (a, a)
             for i, a in enumerate(arrays)]
    po = ours(*[p for p, _ in pairs])
    to = ref(*[t for _, t in pairs])
    _close(po, to, rtol, atol)
    if not grad_of:
        return
    g = np.random.default_rng(9).standard_normal(tuple(to.shape)) if upstream else \
        np.ones(tuple(to.shape))
    (po * pygpu.tensor(g, device=device)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    for i in grad_of:
        _close(pairs[i][0].grad, pairs[i][1].grad, rtol, atol)


rng = np.random.default_rng(0)
X = rng.standard_normal((6, 5)) * 2


@pytest.mark.parametrize("name,ours,ref", [
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
    ("silu", F.silu, TF.silu),
    ("gelu-tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: TF.gelu(x, approximate="tanh")),
    ("softmax", lambda x: F.softmax(x, dim=1), lambda x: TF.softmax(x, dim=1)),
    ("log_softmax0", lambda x: F.log_softmax(x, dim=0), lambda x: TF.log_softmax(x, dim=0)),
    ("relu", F.relu, TF.relu), ("tanh", F.tanh, torch.tanh), ("sigmoid", F.sigmoid, torch.sigmoid),
    ("layer_norm", lambda x: F.layer_norm(x, (5,)), lambda x: TF.layer_norm(x, (5,))),
])
def test_activation_values_and_grads_match_torch(device, name, ours, ref):
    _check_fn(device, ours, ref, [X])


def test_softmax_without_dim_warns_and_picks_pytorchs_dim():
    x = rng.standard_normal((2, 3, 4))
    for a in (x, x[0], x[0, 0]):
        with pytest.warns(UserWarning, match="Implicit dimension"):
            ours = nn.Softmax()(pygpu.tensor(a))
        with pytest.warns(UserWarning):
            ref = torch.nn.Softmax()(torch.tensor(a))
        _close(ours, ref)


def test_gelu_exact_matches_torch_to_float32_precision(device):
    x = np.linspace(-6, 6, 97)
    _check_fn(device, F.gelu, TF.gelu, [x], rtol=1e-6, atol=3e-7)
    x32 = x.astype(np.float32)
    _check_fn(device, lambda v: F.gelu(v), TF.gelu, [x32], rtol=2e-6, atol=1e-6)


def test_layer_norm_with_affine_params_and_two_axes(device):
    w, b = rng.standard_normal((2, 5)), rng.standard_normal((2, 5))
    x = rng.standard_normal((3, 2, 5))
    _check_fn(device, lambda x, w, b: F.layer_norm(x, (2, 5), w, b, 1e-3),
              lambda x, w, b: TF.layer_norm(x, (2, 5), w, b, 1e-3), [x, w, b], grad_of=(0, 1, 2))


def test_one_hot_and_embedding(device):
    idx = np.array([[2, 0], [1, 3]])
    oh = F.one_hot(pygpu.tensor(idx, device=device), 5)
    np.testing.assert_array_equal(oh.numpy(), TF.one_hot(torch.tensor(idx), 5).numpy())
    assert oh.dtype == pygpu.int64
    assert F.one_hot(pygpu.tensor(np.array([0, 3]), device=device)).shape == (2, 4)
    W = rng.standard_normal((4, 3))
    for pad in (None, 1):
        _check_fn(device, lambda w: F.embedding(pygpu.tensor(idx % 4, device=device), w, pad),
                  lambda w: TF.embedding(torch.tensor(idx % 4), w, pad), [W])


_T = np.array([1, 0, 4, 2, 2, 3])
_W = np.array([0.5, 1.0, 2.0, 0.25, 1.5])


@pytest.mark.parametrize("kw", [dict(), dict(reduction="sum"), dict(reduction="none"),
                                dict(weight=_W), dict(weight=_W, reduction="none"),
                                dict(ignore_index=2), dict(ignore_index=2, weight=_W),
                                dict(label_smoothing=0.1),
                                dict(label_smoothing=0.2, weight=_W, ignore_index=4),
                                dict(label_smoothing=0.3, reduction="sum"),
                                dict(label_smoothing=0.3, reduction="none", ignore_index=0)])
def test_cross_entropy_and_nll_options_match_torch(device, kw):
    kwp = dict(kw)
    kwt = dict(kw)
    if "weight" in kw:
        kwp["weight"] = pygpu.tensor(kw["weight"], device=device)
        kwt["weight"] = torch.tensor(kw["weight"])
    tgt_p, tgt_t = pygpu.tensor(_T, device=device), torch.tensor(_T)
    _check_fn(device, lambda x: F.cross_entropy(x, tgt_p, **kwp),
              lambda x: TF.cross_entropy(x, tgt_t, **kwt), [X])
    _check_fn(device, lambda x: nn.CrossEntropyLoss(**kwp)(x, tgt_p),
              lambda x: torch.nn.CrossEntropyLoss(**kwt)(x, tgt_t), [X])
    if "label_smoothing" not in kw:
        _check_fn(device, lambda x: F.nll_loss(F.log_softmax(x, 1), tgt_p, **kwp),
                  lambda x: TF.nll_loss(TF.log_softmax(x, 1), tgt_t, **kwt), [X])
        _check_fn(device, lambda x: nn.NLLLoss(**kwp)(x, tgt_p),
                  lambda x: torch.nn.NLLLoss(**kwt)(x, tgt_t), [X])


def test_cross_entropy_probability_targets_and_k_dim_input(device):
    probs = rng.dirichlet(np.ones(5), size=6)
    for kw in (dict(), dict(label_smoothing=0.1), dict(reduction="none")):
        _check_fn(device, lambda x: F.cross_entropy(x, pygpu.tensor(probs, device=device), **kw),
                  lambda x: TF.cross_entropy(x, torch.tensor(probs), **kw), [X])
    x3 = rng.standard_normal((2, 4, 3))
    t3 = np.array([[0, 3, 1], [2, 2, 0]])
    for kw in (dict(), dict(reduction="none"), dict(ignore_index=2)):
        _check_fn(device, lambda x: F.cross_entropy(x, pygpu.tensor(t3, device=device), **kw),
                  lambda x: TF.cross_entropy(x, torch.tensor(t3), **kw), [x3])


def test_nll_loss_bad_label_is_an_index_error_on_every_device(device):
    """The gather that picks each row's entry checks the labels in its kernel: at once on the
    cpu, at the next read on a device (an asynchronous failure, as the fused op's)."""
    logp = pygpu.zeros(2, 3, device=device)
    tgt = pygpu.tensor(np.array([0, 5]), device=device)
    msg = "index 5 is out of bounds for dimension 1 with size 3"
    if device == "cpu":
        with pytest.raises(IndexError, match=msg):
            F.nll_loss(logp, tgt)
    else:
        with pytest.raises(pygpu.AsyncOpError, match=msg):
            F.nll_loss(logp, tgt).item()
        pygpu.synchronize(device)
    assert F.nll_loss(logp, pygpu.tensor(np.array([0, -100]), device=device)).item() == 0.0
    with pytest.raises(TypeError, match="int64"):
        F.cross_entropy(logp, pygpu.tensor(np.array([0.0, 1.0]), device=device))


A = rng.uniform(0.05, 0.95, (4, 3))
B = rng.uniform(0.0, 1.0, (4, 3))
C = rng.standard_normal((4, 3)) * 2


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,ours,ref,arrays", [
    ("mse", F.mse_loss, TF.mse_loss, [C, B]),
    ("l1", F.l1_loss, TF.l1_loss, [C, B]),
    ("smooth_l1", lambda a, b, **k: F.smooth_l1_loss(a, b, beta=0.7, **k),
     lambda a, b, **k: TF.smooth_l1_loss(a, b, beta=0.7, **k), [C, B]),
    ("huber", lambda a, b, **k: F.huber_loss(a, b, delta=0.6, **k),
     lambda a, b, **k: TF.huber_loss(a, b, delta=0.6, **k), [C, B]),
    ("bce", F.binary_cross_entropy, TF.binary_cross_entropy, [A, B]),
    ("bce_logits", F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits,
     [C * 10, B]),
    ("kl_div", F.kl_div, TF.kl_div, [np.log(A), np.where(B < 0.2, 0.0, B)]),
])
def test_losses_match_torch(device, name, ours, ref, arrays, reduction):
    # kl_div's gradient in the target is -inf (torch: NaN) where the target is 0: input only
    _check_fn(device, lambda a, b: ours(a, b, reduction=reduction),
              lambda a, b: ref(a, b, reduction=reduction), arrays,
              grad_of=(0,) if name == "kl_div" else (0, 1))


def test_loss_modules_with_options_match_torch(device):
    pw = np.array([0.5, 2.0, 3.0])
    cases = [
        (nn.BCEWithLogitsLoss(pos_weight=pygpu.tensor(pw, device=device)),
         torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw)), [C, B]),
        (nn.BCELoss(weight=pygpu.tensor(pw, device=device)),
         torch.nn.BCELoss(weight=torch.tensor(pw)), [A, B]),
        (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"),
         [np.log(A), B]),
        (nn.KLDivLoss(reduction="sum", log_target=True),
         torch.nn.KLDivLoss(reduction="sum", log_target=True), [np.log(A), np.log(B + 0.1)]),
        (nn.SmoothL1Loss(beta=0.0), torch.nn.SmoothL1Loss(beta=0.0), [C, B]),
        (nn.HuberLoss(), torch.nn.HuberLoss(), [C, B]),
        (nn.L1Loss(reduction="sum"), torch.nn.L1Loss(reduction="sum"), [C, B]),
        (nn.MSELoss(reduction="none"), torch.nn.MSELoss(reduction="none"), [C, B]),
    ]
    for ours, ref, arrays in cases:
        _check_fn(device, ours, ref, arrays, grad_of=(0,))
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")


# ---- modules ---------------------------------------------------------------------------------

def test_batchnorm1d_running_stats_train_eval_match_torch(device):
    ours, ref = nn.BatchNorm1d(4, momentum=0.3).to(device), torch.nn.BatchNorm1d(4, momentum=0.3)
    ours.double()
    ref.double()
    for step in range(3):
        shape = (8, 4) if step != 1 else (5, 4, 3)
        x = rng.standard_normal(shape) * 3 + 1
        _check_fn(device, ours, ref, [x])
    _close(ours.running_mean, ref.running_mean)
    _close(ours.running_var, ref.running_var)
    assert ours.num_batches_tracked.item() == 3
    ours.eval()
    ref.eval()
    _check_fn(device, ours, ref, [rng.standard_normal((3, 4))])
    assert set(ours.state_dict()) == set(ref.state_dict())
    cum, cref = nn.BatchNorm1d(2, momentum=None), torch.nn.BatchNorm1d(2, momentum=None)
    for _ in range(3):
        x = rng.standard_normal((6, 2)).astype(np.float32)
        cum(pygpu.tensor(x))
        cref(torch.tensor(x))
    _close(cum.running_var, cref.running_var, rtol=1e-5)


def test_layernorm_embedding_modules_and_reprs():
    # pygpu prints the norm layers as PyTorch 2.13 does; same_repr says how other versions differ
    same_repr(nn.LayerNorm(8), torch.nn.LayerNorm(8))
    assert repr(nn.LayerNorm(8, bias=False)).endswith("bias=False)")
    same_repr(nn.BatchNorm1d(8), torch.nn.BatchNorm1d(8))
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == repr(torch.nn.Embedding(10, 3,
                                                                              padding_idx=0))
    for m, r in [(nn.Dropout(0.2), torch.nn.Dropout(0.2)), (nn.GELU(), torch.nn.GELU()),
                 (nn.LeakyReLU(0.1), torch.nn.LeakyReLU(0.1)), (nn.Softmax(1), torch.nn.Softmax(1)),
                 (nn.Flatten(), torch.nn.Flatten()), (nn.Unflatten(1, (2, 3)),
                                                      torch.nn.Unflatten(1, (2, 3))),
                 (nn.Identity(), torch.nn.Identity()), (nn.SiLU(), torch.nn.SiLU()),
                 (nn.ReLU(), torch.nn.ReLU()), (nn.LogSoftmax(dim=1), torch.nn.LogSoftmax(dim=1))]:
        assert repr(m) == repr(r)
    e = nn.Embedding(10, 3, padding_idx=2)
    assert e.weight.numpy()[2].tolist() == [0.0, 0.0, 0.0]
    out = e(pygpu.tensor(np.array([[2, 5]])))
    assert out.shape == (1, 2, 3)


def test_dropout_train_and_eval(device):
    pygpu.manual_seed(1)
    d = nn.Dropout(0.25)
    x = pygpu.ones(200, 100, device=device)
    y = d(x).numpy()
    zero = (y == 0).mean()
    assert 0.22 < zero < 0.28
    np.testing.assert_allclose(y[y != 0], 1 / 0.75, rtol=1e-6)
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_flatten_unflatten(device):
    x = pygpu.zeros(2, 3, 4, 5, device=device)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Flatten(-2)(x).shape == (2, 3, 20)
    assert nn.Unflatten(1, (3, -1))(pygpu.zeros(2, 12, device=device)).shape == (2, 3, 4)
    with pytest.raises(RuntimeError, match="multiply"):
        nn.Unflatten(1, (5, 5))(pygpu.zeros(2, 12))


class NeuralNetwork(nn.Module):
    def __init__(self, mod=nn):
        super().__init__()
        self.flatten = mod.Flatten()
        self.linear_relu_stack = mod.Sequential(
            mod.Linear(28 * 28, 512), mod.ReLU(), mod.Linear(512, 512), mod.ReLU(),
            mod.Linear(512, 10))

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


class TorchNeuralNetwork(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = torch.nn.Flatten()
        self.linear_relu_stack = torch.nn.Sequential(
            torch.nn.Linear(28 * 28, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
            torch.nn.ReLU(), torch.nn.Linear(512, 10))


def test_module_repr_is_pytorchs():
    assert repr(NeuralNetwork()) == repr(TorchNeuralNetwork()).replace("TorchNeural", "Neural")
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])
    tl = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)] + [torch.nn.ReLU()])
    assert repr(ml) == repr(tl)
    md = nn.ModuleDict({"a": nn.Linear(1, 2), "b": nn.Tanh()})
    assert repr(md) == repr(torch.nn.ModuleDict({"a": torch.nn.Linear(1, 2), "b": torch.nn.Tanh()}))


def test_named_modules_children_buffers_order_match_torch():
    def make(lib):
        m = lib.nn

        class Net(m.Module):
            def __init__(self):
                super().__init__()
                self.a = m.Sequential(OrderedDict(l1=m.Linear(2, 3), bn=m.BatchNorm1d(3)))
                self.b = m.Linear(3, 1)
                self.register_buffer("steps", lib.zeros(1))
                self.register_buffer("scratch", lib.zeros(2), persistent=False)
        return Net()
    ours, ref = make(pygpu), make(torch)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in ref.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in ref.named_children()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in ref.named_buffers()]
    assert list(ours.state_dict()) == list(ref.state_dict())  # "scratch" is not persistent
    assert len(list(ours.children())) == 2 and len(list(ours.buffers())) == 5
    assert ours.get_submodule("a.l1") is ours.a.l1


def test_apply_requires_grad_and_init():
    net = NeuralNetwork()
    seen = []

    def init(m):
        seen.append(type(m).__name__)
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.bias)
            nn.init.constant_(m.weight, 0.5)
    assert net.apply(init) is net
    assert seen[-1] == "NeuralNetwork" and seen.count("Linear") == 3
    assert net.linear_relu_stack[0].weight.numpy().min() == 0.5
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_forward_hooks_and_pre_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 2.0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out * 0.0)
    x = pygpu.ones(1, 2)
    assert lin(x).numpy().tolist() == [[0.0, 0.0]] and calls == [(1, 2)]
    h1.remove()
    h2.remove()
    ref = F.linear(x, lin.weight, lin.bias)
    np.testing.assert_allclose(lin(x).numpy(), ref.numpy())
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    acts = []
    seq[1].register_forward_hook(lambda m, a, o: acts.append(o))
    seq(x)
    assert len(acts) == 1  # the fused Linear+ReLU path steps aside for a hooked ReLU


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(pygpu.zeros(2)), pygpu.ones(3)])
    assert len(pl) == 2 and isinstance(pl[1], nn.Parameter) and pl[1].requires_grad
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.pl = pl
            self.pd = nn.ParameterDict({"w": pygpu.ones(1)})
    assert [n for n, _ in Holder().named_parameters()] == ["pl.0", "pl.1", "pd.w"]


# ---- nn.init ---------------------------------------------------------------------------------

def test_init_distributions_have_pytorchs_bounds_and_stds(device):
    pygpu.manual_seed(3)
    w = pygpu.zeros(400, 300, device=device)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = math.sqrt(6 / ((1 + 5) * 300))
    assert abs(w.numpy()).max() <= bound and abs(w.numpy()).max() > 0.99 * bound
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 400)) < 0.01 * math.sqrt(2 / 400) * 5
    nn.init.xavier_uniform_(w, gain=nn.init.calculate_gain("tanh"))
    b = 5 / 3 * math.sqrt(6 / 700)
    assert abs(w.numpy()).max() <= b * (1 + 1e-6)
    nn.init.xavier_normal_(w)
    assert abs(w.numpy().std() - math.sqrt(2 / 700)) < 0.03 * math.sqrt(2 / 700)
    nn.init.trunc_normal_(w, std=0.5, a=-0.4, b=0.9)
    ref = torch.nn.init.trunc_normal_(torch.zeros(400, 300), std=0.5, a=-0.4, b=0.9).numpy()
    assert w.numpy().min() >= -0.4 and w.numpy().max() <= 0.9
    assert abs(w.numpy().mean() - ref.mean()) < 0.01 and abs(w.numpy().std() - ref.std()) < 0.01
    nn.init.uniform_(w, -2, 3)
    assert w.numpy().min() >= -2 and w.numpy().max() < 3
    nn.init.normal_(w, 1.0, 0.1)
    assert abs(w.numpy().mean() - 1.0) < 0.01
    nn.init.ones_(w)
    assert w.numpy().min() == 1 == w.numpy().max()
    for g in ("linear", "relu", "tanh", "sigmoid", "selu"):
        assert nn.init.calculate_gain(g) == torch.nn.init.calculate_gain(g)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == torch.nn.init.calculate_gain(
        "leaky_relu", 0.2)


def test_init_keeps_parameter_identity_and_grad_flag():
    lin = nn.Linear(3, 2)
    w = lin.weight
    assert nn.init.xavier_uniform_(lin.weight) is w and w.requires_grad and w.is_leaf


# ---- nn.utils --------------------------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
def test_clip_grad_norm_matches_torch(device, norm_type):
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(5) * 4]
    ps = [pygpu.zeros(*g.shape, device=device, dtype=pygpu.float64).requires_grad_() for g in grads]
    ts = [torch.zeros(*g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, t, g in zip(ps, ts, grads):
        p.grad, t.grad = pygpu.tensor(g, device=device), torch.tensor(g)
    n1 = nn.utils.clip_grad_norm_(ps, 1.5, norm_type=norm_type)
    n2 = torch.nn.utils.clip_grad_norm_(ts, 1.5, norm_type=norm_type)
    assert math.isclose(n1.item(), n2.item(), rel_tol=1e-9)
    for p, t in zip(ps, ts):
        _close(p.grad, t.grad)


def test_clip_grad_value_and_vector_round_trip(device):
    p = pygpu.zeros(4, device=device).requires_grad_()
    p.grad = pygpu.tensor(np.array([-3.0, -0.5, 0.5, 3.0], np.float32), device=device)
    nn.utils.clip_grad_value_([p], 1.0)
    assert p.grad.numpy().tolist() == [-1.0, -0.5, 0.5, 1.0]
    net = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1)).to(device)
    vec = nn.utils.parameters_to_vector(net.parameters())
    assert vec.shape == (sum(p.numel() for p in net.parameters()),)
    nn.utils.vector_to_parameters(vec * 2.0, net.parameters())
    np.testing.assert_allclose(nn.utils.parameters_to_vector(net.parameters()).numpy(),
                               vec.numpy() * 2, rtol=1e-6)
    with pytest.raises(ValueError, match="elements"):
        nn.utils.vector_to_parameters(vec[:3], net.parameters())


def test_clip_grad_norm_makes_no_transfer_on_sim(fresh_stats):
    p = pygpu.zeros(10, device="sim").requires_grad_()
    p.grad = pygpu.ones(10, device="sim")
    pygpu.synchronize()
    with pygpu.track() as t:
        nn.utils.clip_grad_norm_([p], 0.1)
        pygpu.synchronize()
    assert t.d2h_count == 0 and t.h2d_count == 0


def test_a_node_reached_by_two_paths_of_different_length_gets_both_gradients(device):
    # d feeds y directly and through mean(d): the engine's order must run d's backward
    # after both consumers (the bug: d came out first and the mean path's gradient was lost)
    a = rng.standard_normal((3, 4))
    x, t = _pair(a, device)
    d = x * 1.0
    (d * d.mean(axis=1, keepdims=True)).sum().backward()
    td = t * 1.0
    (td * td.mean(dim=1, keepdim=True)).sum().backward()
    _close(x.grad, t.grad)


# ---- save / load -----------------------------------------------------------------------------

def test_save_load_whole_module_needs_weights_only_false(tmp_path, device):
    pygpu.manual_seed(0)
    model = NeuralNetwork().to(device)
    model.linear_relu_stack[4].bias = model.linear_relu_stack[4].bias  # still a Parameter
    pygpu.save(model, tmp_path / "model.pth")
    with pytest.raises(Exception, match="weights_only=True.*NeuralNetwork.*weights_only=False"):
        pygpu.load(tmp_path / "model.pth")
    back = pygpu.load(tmp_path / "model.pth", weights_only=False)
    assert type(back) is NeuralNetwork and back is not model
    x = pygpu.randn(2, 28, 28, device=device)
    np.testing.assert_array_equal(back(x).numpy(), model(x).numpy())
    w = back.linear_relu_stack[0].weight
    assert isinstance(w, nn.Parameter) and w.requires_grad and w.is_leaf
    assert str(w.device) == str(pygpu.device(device))
    on_cpu = pygpu.load(tmp_path / "model.pth", weights_only=False, map_location="cpu")
    assert str(on_cpu.linear_relu_stack[0].weight.device) == "cpu"


def test_state_dict_to_a_file_object_and_tied_tensors(tmp_path):
    import io
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    buf = io.BytesIO()
    pygpu.save(model.state_dict(), buf)
    buf.seek(0)
    sd = pygpu.load(buf)  # weights_only=True is fine for a state_dict
    assert list(sd) == list(model.state_dict())
    m2 = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    m2.load_state_dict(sd)
    np.testing.assert_array_equal(m2[1].weight.numpy(), model[1].weight.numpy())
    shared = pygpu.ones(2)
    pygpu.save([shared, {"again": shared}, (1, "x")], tmp_path / "tied.pt")
    a, d, tup = pygpu.load(tmp_path / "tied.pt")
    assert d["again"] is a and tup == (1, "x")


def test_load_refuses_code_execution_by_default(tmp_path):
    import os
    import pickle
    from pygpu.serialization import _pygpu_pickle as _pickle_io

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    (tmp_path / "evil.pt").write_bytes(_pickle_io.MAGIC + pickle.dumps(Evil()))
    with pytest.raises(pickle.UnpicklingError, match="weights_only=True.*system"):
        pygpu.load(tmp_path / "evil.pt")
    torch.save({"w": torch.ones(2)}, tmp_path / "torch.pt")
    assert pygpu.load(tmp_path / "torch.pt")["w"].tolist() == [1.0, 1.0]  # PyTorch's own format
