# test_nn_utils_reparam.py - nn.utils's reparametrizations and fusions against torch's:
# weight_norm and spectral_norm in both forms (hooks; parametrizations), parametrize's
# protocol (register, chain, right_inverse, cached, remove), fuse_conv_bn/fuse_linear_bn,
# skip_init and the deprecated clip_grad_norm. Values are copied from pygpu's module into
# torch's so both compute from the same numbers.
import numpy as np
import pytest

import pygpu
import pygpu.nn as nn
from pygpu.nn.utils import parametrize

torch = pytest.importorskip("torch")
P = torch.nn.utils.parametrize


def _copy_into(ref, ours):
    """ref's state (torch) := ours's (pygpu), key by key."""
    sd = ours.state_dict()
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in sd.items()})


def _close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if hasattr(a, "detach") else a),
                               b.detach().numpy(), rtol=tol, atol=tol)


def test_weight_norm_hook_form_as_torch():
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        ours = nn.utils.weight_norm(nn.Linear(4, 3), dim=0)
    with pytest.warns(FutureWarning):
        ref = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3), dim=0)
    assert list(ours.state_dict()) == list(ref.state_dict())  # bias, weight_g, weight_v
    _copy_into(ref, ours)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    yo, yr = ours(pygpu.tensor(x)), ref(torch.tensor(x))
    _close(yo, yr)
    yo.sum().backward()
    yr.sum().backward()
    _close(ours.weight_g.grad, ref.weight_g.grad)
    _close(ours.weight_v.grad, ref.weight_v.grad)
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(ref)
    assert list(ours.state_dict()) == list(ref.state_dict())
    _close(ours.weight, ref.weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(ours)


@pytest.mark.parametrize("layer", ["linear", "conv_transpose"])
def test_spectral_norm_hook_form_as_torch(layer, tmp_path):
    def make(lib):
        return (lib.nn.Linear(6, 4) if layer == "linear"
                else lib.nn.ConvTranspose2d(3, 2, 3))
    ours = nn.utils.spectral_norm(make(pygpu), n_power_iterations=2)
    ref = torch.nn.utils.spectral_norm(make(torch), n_power_iterations=2)
    assert list(ours.state_dict()) == list(ref.state_dict())
    _copy_into(ref, ours)  # weight_orig, u, v: the same starting vectors
    x = np.random.default_rng(1).standard_normal((2, 6) if layer == "linear"
                                                 else (1, 3, 4, 4)).astype(np.float32)
    for _ in range(3):  # training: power iteration each call
        _close(ours(pygpu.tensor(x)), ref(torch.tensor(x)), 1e-5)
    _close(ours.weight_u, ref.weight_u, 1e-5)
    ours.eval()
    ref.eval()
    _close(ours(pygpu.tensor(x)), ref(torch.tensor(x)), 1e-5)
    assert ours.state_dict()._metadata[""]["spectral_norm"] == \
        ref.state_dict()._metadata[""]["spectral_norm"]
    pygpu.save(ours.state_dict(), tmp_path / "sn.pt")  # loads into torch's module
    ref.load_state_dict(torch.load(tmp_path / "sn.pt"))
    nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(ref)
    assert list(ours.state_dict()) == list(ref.state_dict())
    _close(ours.weight, ref.weight, 1e-5)


def test_weight_norm_parametrization_as_torch():
    ours = nn.utils.parametrizations.weight_norm(nn.Conv2d(2, 3, 3))
    ref = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv2d(2, 3, 3))
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert type(ours).__name__ == type(ref).__name__ == "ParametrizedConv2d"
    _copy_into(ref, ours)
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5)).astype(np.float32)
    yo, yr = ours(pygpu.tensor(x)), ref(torch.tensor(x))
    _close(yo, yr, 1e-5)
    yo.sum().backward()
    yr.sum().backward()
    g_o = ours.parametrizations.weight.original0.grad
    g_r = ref.parametrizations.weight.original0.grad
    _close(g_o, g_r, 1e-5)
    # a checkpoint of the hook form loads into the parametrized module
    with pytest.warns(FutureWarning):
        old = nn.utils.weight_norm(nn.Conv2d(2, 3, 3))
    ours.load_state_dict(old.state_dict())
    old(pygpu.tensor(x))  # the hook recomputes old.weight from g and v
    _close(ours.weight, old.weight, 1e-6)
    parametrize.remove_parametrizations(ours, "weight")
    P.remove_parametrizations(ref, "weight")
    assert type(ours) is nn.Conv2d and list(ours.state_dict()) == list(ref.state_dict())


def test_spectral_norm_parametrization_as_torch():
    ours = nn.utils.parametrizations.spectral_norm(nn.Linear(5, 4))
    ref = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(5, 4))
    assert list(ours.state_dict()) == list(ref.state_dict())
    _copy_into(ref, ours)
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    for _ in range(3):
        _close(ours(pygpu.tensor(x)), ref(torch.tensor(x)), 1e-5)
    # sigma ~ the largest singular value: the normalized weight's is ~1
    s = np.linalg.svd(ours.weight.detach().numpy(), compute_uv=False)
    assert abs(s[0] - 1.0) < 0.05
    with pytest.raises(IndexError, match="Dimension out of range"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(5, 4), dim=3)


def test_parametrize_protocol_as_torch():
    def run(lib, Pz):
        class Symmetric(lib.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)

            def right_inverse(self, A):
                return A.triu()

        class Double(lib.nn.Module):
            def forward(self, X):
                return X * 2

            def right_inverse(self, A):
                return A / 2

        m = lib.nn.Linear(3, 3)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.arange(9.0, dtype=np.float32).reshape(3, 3)))
        Pz.register_parametrization(m, "weight", Symmetric())
        Pz.register_parametrization(m, "weight", Double())
        out = [m.weight.detach().numpy().copy(), Pz.is_parametrized(m),
               Pz.is_parametrized(m, "bias"), Pz.type_before_parametrizations(m).__name__,
               list(m.state_dict())]
        m.weight = lib.tensor(np.eye(3, dtype=np.float32) * 4)  # right_inverse chain
        out.append(m.parametrizations.weight.original.detach().numpy().copy())
        with Pz.cached():
            assert m.weight is m.weight
        with pytest.raises(ValueError, match="may not change the shape"):
            class Row(lib.nn.Module):
                def forward(self, X):
                    return X[0]
            Pz.register_parametrization(lib.nn.Linear(3, 3), "weight", Row())
        with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
            Pz.register_parametrization(m, "nothing", Double())
        Pz.remove_parametrizations(m, "weight", leave_parametrized=False)
        out += [type(m).__name__, m.weight.detach().numpy().copy(), list(m.state_dict())]
        return out

    ours, ref = run(pygpu, parametrize), run(torch, P)
    for a, b in zip(ours, ref):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


@pytest.mark.parametrize("kind", ["conv", "conv_transpose", "linear"])
def test_fuse_batch_norm_eval_equals_torch(kind):
    rng = np.random.default_rng(4)

    def make(lib):
        if kind == "conv":
            layer, bn = lib.nn.Conv2d(3, 4, 3), lib.nn.BatchNorm2d(4)
        elif kind == "conv_transpose":
            layer, bn = lib.nn.ConvTranspose2d(3, 4, 3), lib.nn.BatchNorm2d(4)
        else:
            layer, bn = lib.nn.Linear(5, 4), lib.nn.BatchNorm1d(4)
        return lib.nn.Sequential(layer, bn).eval()

    ours, ref = make(pygpu), make(torch)
    with pygpu.no_grad():
        ours[1].running_mean.copy_(pygpu.tensor(rng.standard_normal(4).astype(np.float32)))
        ours[1].running_var.copy_(pygpu.tensor(rng.uniform(0.5, 2, 4).astype(np.float32)))
        ours[1].weight.copy_(pygpu.tensor(rng.standard_normal(4).astype(np.float32)))
    _copy_into(ref, ours)
    if kind == "linear":
        fo = nn.utils.fuse_linear_bn_eval(ours[0], ours[1])
        fr = torch.nn.utils.fuse_linear_bn_eval(ref[0], ref[1])
        x = rng.standard_normal((2, 5)).astype(np.float32)
    else:
        t = kind == "conv_transpose"
        fo = nn.utils.fuse_conv_bn_eval(ours[0], ours[1], transpose=t)
        fr = torch.nn.utils.fuse_conv_bn_eval(ref[0], ref[1], transpose=t)
        x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    _close(fo.weight, fr.weight)
    _close(fo.bias, fr.bias)
    _close(fo(pygpu.tensor(x)), ours(pygpu.tensor(x)), 1e-5)  # fused == unfused
    assert ours[0].weight is not fo.weight  # a copy: the model is untouched
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1))


def test_skip_init_and_deprecated_clip_grad_norm():
    m = nn.utils.skip_init(nn.Linear, 4, 3)
    assert m.weight.shape == (3, 4) and m.weight.device.type == "cpu"
    with pytest.raises(RuntimeError, match="must support a 'device' arg"):
        class NoDevice(nn.Module):
            def __init__(self):
                super().__init__()
        nn.utils.skip_init(NoDevice)
    p = nn.Parameter(pygpu.ones(4))
    p.grad = pygpu.ones(4) * 3
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = nn.utils.clip_grad_norm(p, 1.0)
    assert abs(float(total) - 6.0) < 1e-6 and abs(float(p.grad.norm()) - 1.0) < 1e-5
