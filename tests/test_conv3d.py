# test_conv3d.py - the 3-d convolutions and pools (pygpu/nn/_conv3d.py, composed over the 2-d
# nodes) against torch as the oracle, on every device: conv3d (strided, padded, dilated,
# grouped, 'same', unbatched), conv_transpose3d (with output_padding and output_size),
# max_pool3d with indices and ceil_mode, avg_pool3d's divisors, the adaptive pools,
# max_unpool3d, lp_pool3d, InstanceNorm3d and the modules; values and every gradient in
# float64, and PyTorch's errors.
import numpy as np
import pytest

import pygpu
from _helpers import check_against_torch
from pygpu import nn
from pygpu.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(43)
X = rng.standard_normal((2, 4, 7, 6, 5))


_check = check_against_torch  # tests/_helpers.py: values, then every array's gradient


CONV3D = [
    ("plain", X, (6, 4, 3, 3, 2), True, {}),
    ("strided-padded", X, (5, 4, 3, 2, 3), True, dict(stride=2, padding=1)),
    ("dilated", X, (3, 4, 2, 3, 2), False, dict(dilation=(2, 1, 2), padding=(1, 0, 2))),
    ("grouped", X, (6, 2, 3, 2, 2), True, dict(groups=2, stride=(1, 2, 1), padding=(1, 1, 0))),
    ("depthwise", X, (8, 1, 2, 2, 2), True, dict(groups=4, stride=(2, 1, 1))),
    ("same", X, (3, 4, 4, 3, 2), True, dict(padding="same", dilation=(1, 2, 1))),
    ("valid", X, (3, 4, 2, 2, 2), True, dict(padding="valid")),
    ("unbatched", X[0], (3, 4, 3, 3, 3), True, dict(padding=1)),
]


@pytest.mark.parametrize("name,x,wshape,bias,kw", CONV3D, ids=[c[0] for c in CONV3D])
def test_conv3d_matches_torch(device, name, x, wshape, bias, kw):
    arrays = [x, rng.standard_normal(wshape)] + ([rng.standard_normal(wshape[0])] if bias else [])
    _check(device, lambda *a: F.conv3d(*a, **kw), lambda *a: TF.conv3d(*a, **kw), arrays)
    _check(device, lambda *a: pygpu.conv3d(*a, **kw), lambda *a: torch.conv3d(*a, **kw),
           arrays, grads=False)


CONVT3D = [
    ("plain", (2, 4, 3, 4, 3), (4, 3, 2, 3, 2), True, {}),
    ("strided-padded", (2, 4, 3, 4, 3), (4, 2, 3, 3, 2), True,
     dict(stride=(2, 1, 2), padding=(1, 1, 0), output_padding=(1, 0, 1))),
    ("output-padding-beyond-padding", (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), False,
     dict(stride=3, padding=(0, 1, 0), output_padding=(2, 1, 1))),
    ("grouped-dilated", (2, 4, 3, 3, 4), (4, 3, 2, 2, 3), True,
     dict(groups=2, dilation=(2, 1, 2), stride=(1, 2, 1))),
    ("unbatched", (4, 3, 4, 3), (4, 2, 3, 2, 2), True, dict(stride=2)),
]


@pytest.mark.parametrize("name,xshape,wshape,bias,kw", CONVT3D, ids=[c[0] for c in CONVT3D])
def test_conv_transpose3d_matches_torch(device, name, xshape, wshape, bias, kw):
    groups = kw.get("groups", 1)
    arrays = [rng.standard_normal(xshape), rng.standard_normal(wshape)]
    if bias:
        arrays.append(rng.standard_normal(wshape[1] * groups))
    _check(device, lambda *a: F.conv_transpose3d(*a, **kw),
           lambda *a: TF.conv_transpose3d(*a, **kw), arrays)


def test_conv3d_modules_match_torch(device):
    torch.manual_seed(0)
    for ours_cls, theirs_cls, kw in [
            (nn.Conv3d, torch.nn.Conv3d, dict(stride=(1, 2, 1), padding=1, groups=2)),
            (nn.Conv3d, torch.nn.Conv3d, dict(padding=1, padding_mode="reflect")),
            (nn.ConvTranspose3d, torch.nn.ConvTranspose3d, dict(stride=2, padding=1))]:
        theirs = theirs_cls(4, 6, 3, dtype=torch.float64, **kw)
        ours = ours_cls(4, 6, 3, dtype=pygpu.float64, device=device, **kw)
        ours.load_state_dict({k: pygpu.tensor(v.detach().numpy(), device=device)
                              for k, v in theirs.state_dict().items()})
        x = rng.standard_normal((2, 4, 5, 6, 5))
        np.testing.assert_allclose(ours(pygpu.tensor(x, device=device)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-9,
                                   atol=1e-10)
        assert repr(ours) == repr(theirs).replace("torch.nn", "pygpu.nn")
    m = nn.ConvTranspose3d(2, 3, 3, stride=2, dtype=pygpu.float64)
    t = torch.nn.ConvTranspose3d(2, 3, 3, stride=2, dtype=torch.float64)
    x = rng.standard_normal((1, 2, 3, 3, 3))
    assert tuple(m(pygpu.tensor(x), output_size=(8, 8, 7)).shape) == \
        tuple(t(torch.tensor(x), output_size=(8, 8, 7)).shape)


POOLS = [
    ("max", lambda F_, x: F_.max_pool3d(x, 3, 2, 1, return_indices=True)),
    ("max-ceil-dilated", lambda F_, x: F_.max_pool3d(x, (2, 3, 2), (2, 1, 2), (1, 1, 0),
                                                     dilation=(2, 1, 1), ceil_mode=True,
                                                     return_indices=True)),
    ("max-with-indices", lambda F_, x: F_.max_pool3d_with_indices(x, 2)),
    ("avg", lambda F_, x: F_.avg_pool3d(x, 3, 2, 1)),
    ("avg-exclude-pad-ceil", lambda F_, x: F_.avg_pool3d(x, (3, 2, 3), (2, 2, 1), (1, 1, 1),
                                                         ceil_mode=True,
                                                         count_include_pad=False)),
    ("avg-divisor", lambda F_, x: F_.avg_pool3d(x, 2, divisor_override=3)),
    ("adaptive-avg", lambda F_, x: F_.adaptive_avg_pool3d(x, (3, 4, 2))),
    ("adaptive-avg-none", lambda F_, x: F_.adaptive_avg_pool3d(x, (None, 2, 3))),
    ("adaptive-max", lambda F_, x: F_.adaptive_max_pool3d(x, (3, 4, 2), return_indices=True)),
    ("adaptive-max-with-indices", lambda F_, x: F_.adaptive_max_pool3d_with_indices(x, 2)),
    ("lp2", lambda F_, x: F_.lp_pool3d(x, 2, (2, 2, 2))),
    ("lp-inf", lambda F_, x: F_.lp_pool3d(x, float("inf"), 2, 1)),
]


@pytest.mark.parametrize("name,fn", POOLS, ids=[p[0] for p in POOLS])
def test_pool3d_matches_torch(device, name, fn):
    x = X.copy()
    if name.startswith("lp2"):
        x = np.abs(x) + 0.1
    _check(device, lambda a: fn(F, a), lambda a: fn(TF, a), [x])
    _check(device, lambda a: fn(F, a), lambda a: fn(TF, a), [x[0]], grads=False)  # unbatched


def test_max_pool3d_ties_take_the_first_in_depth_then_plane_order(device):
    x = np.zeros((1, 1, 4, 4, 4))
    x[0, 0, 1, 1, 1] = x[0, 0, 0, 1, 1] = x[0, 0, 1, 0, 1] = 5.0
    _check(device, lambda a: F.max_pool3d(a, 2, return_indices=True),
           lambda a: TF.max_pool3d(a, 2, return_indices=True), [x], grads=False)


@pytest.mark.parametrize("shape,size", [((2, 3, 6, 4, 4), None), ((2, 4, 7, 6, 5), (7, 6, 5))])
def test_max_unpool3d_inverts_max_pool3d(device, shape, size):
    x = rng.standard_normal(shape)
    ty, ti = TF.max_pool3d(torch.tensor(x), 2, return_indices=True)
    py, pi = F.max_pool3d(pygpu.tensor(x, device=device), 2, return_indices=True)
    ref = TF.max_unpool3d(ty, ti, 2, output_size=size)
    ours = F.max_unpool3d(py, pi, 2, output_size=size)
    np.testing.assert_allclose(ours.numpy(), ref.numpy())
    np.testing.assert_allclose(nn.MaxUnpool3d(2)(py, pi, size).numpy(), ref.numpy())


def test_pool3d_modules_and_torch_spelling(device):
    x = pygpu.tensor(X, device=device)
    tx = torch.tensor(X)
    pairs = [(nn.MaxPool3d(2, 1), torch.nn.MaxPool3d(2, 1)),
             (nn.AvgPool3d(3, 2, 1, count_include_pad=False),
              torch.nn.AvgPool3d(3, 2, 1, count_include_pad=False)),
             (nn.AdaptiveAvgPool3d(1), torch.nn.AdaptiveAvgPool3d(1)),
             (nn.AdaptiveMaxPool3d((2, 3, 1)), torch.nn.AdaptiveMaxPool3d((2, 3, 1))),
             (nn.LPPool3d(3, 2), torch.nn.LPPool3d(3, 2))]
    for ours, theirs in pairs:
        arg = (x.abs(), tx.abs()) if isinstance(ours, nn.LPPool3d) else (x, tx)
        np.testing.assert_allclose(ours(arg[0]).numpy(), theirs(arg[1]).numpy(), rtol=1e-9,
                                   atol=1e-12)
    np.testing.assert_allclose(pygpu.max_pool3d(x, 3, 2, 1).numpy(),
                               torch.max_pool3d(tx, 3, 2, 1).numpy())


def test_instance_norm3d_matches_torch(device):
    x = X
    for kw in (dict(), dict(affine=True), dict(track_running_stats=True)):
        theirs = torch.nn.InstanceNorm3d(4, dtype=torch.float64, **kw)
        ours = nn.InstanceNorm3d(4, dtype=pygpu.float64, device=device, **kw)
        _check(device, ours, theirs, [x], rtol=1e-7, atol=1e-9)
        if kw.get("track_running_stats"):
            np.testing.assert_allclose(ours.running_mean.numpy(),
                                       theirs.running_mean.numpy(), rtol=1e-7)
        np.testing.assert_allclose(ours(pygpu.tensor(x[0], device=device)).detach().numpy(),
                                   theirs(torch.tensor(x[0])).detach().numpy(), rtol=1e-7,
                                   atol=1e-9)
    for ours, theirs in ((nn.InstanceNorm3d(4), torch.nn.InstanceNorm3d(4)),
                         (nn.InstanceNorm1d(4), torch.nn.InstanceNorm1d(4))):
        for m, zeros in ((ours, pygpu.zeros), (theirs, torch.zeros)):
            with pytest.raises(ValueError, match=r"expected (4D or 5D|2D or 3D) input \(got "
                                                 r"(3D|1D) input\)"):
                m(zeros(*((2, 3, 4) if "3d" in type(m).__name__ else (2,))))


def test_errors_are_pytorchs():
    x = pygpu.zeros(1, 4, 5, 5, 5)
    with pytest.raises(RuntimeError, match="expected input.*to have 4 channels"):
        F.conv3d(pygpu.zeros(1, 3, 5, 5, 5), pygpu.zeros(2, 4, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input"):
        F.conv3d(x, pygpu.zeros(2, 4, 6, 3, 3))
    with pytest.raises(RuntimeError, match="Expected 4D \\(unbatched\\) or 5D \\(batched\\)"):
        F.conv3d(pygpu.zeros(4, 5, 5), pygpu.zeros(2, 4, 3, 3, 3))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        F.conv3d(x, pygpu.zeros(2, 4, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool3d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool3d(x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        F.conv_transpose3d(x, pygpu.zeros(4, 2, 3, 3, 3), stride=1, output_padding=1)
    for fn in (F.conv3d, F.max_pool3d):
        with pytest.raises(TypeError):
            fn([1.0], pygpu.zeros(2, 4, 3, 3, 3))


def test_torch_level_convolution_spellings_match_torch(device):
    x3 = rng.standard_normal((2, 4, 5, 6, 5))
    w3 = rng.standard_normal((6, 2, 3, 2, 2))
    b = rng.standard_normal(6)
    for transposed, w in ((False, w3), (True, rng.standard_normal((4, 3, 2, 2, 3)))):
        args = ([1, 2, 1], [1, 0, 1], [1, 1, 2], transposed, [0, 1, 0] if transposed else [0] * 3,
                2)
        bias = b if not transposed else rng.standard_normal(6)
        ours = pygpu.convolution(pygpu.tensor(x3, device=device), pygpu.tensor(w, device=device),
                                 pygpu.tensor(bias, device=device), *args)
        theirs = torch.convolution(torch.tensor(x3), torch.tensor(w), torch.tensor(bias), *args)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, atol=1e-10)
    x2, w2 = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 4, 3, 3))
    np.testing.assert_allclose(
        pygpu.convolution(pygpu.tensor(x2), pygpu.tensor(w2), None, [1, 1], [1, 1], [1, 1],
                          False, [0, 0], 1).numpy(),
        torch.convolution(torch.tensor(x2), torch.tensor(w2), None, [1, 1], [1, 1], [1, 1],
                          False, [0, 0], 1).numpy(), rtol=1e-9, atol=1e-10)
    # conv_tbc: (time, batch, channel), its gradients too
    arrays = [rng.standard_normal((7, 2, 3)), rng.standard_normal((3, 3, 4)),
              rng.standard_normal(4)]
    _check(device, lambda *a: pygpu.conv_tbc(*a, 1), lambda *a: torch.conv_tbc(*a, 1), arrays)
    with pytest.raises(RuntimeError, match="Input dim 2 \\(input channels\\) is not == dim 1"):
        pygpu.conv_tbc(pygpu.zeros(7, 2, 3), pygpu.zeros(3, 2, 4), pygpu.zeros(4))
    # native_group_norm: the output and each group's mean and 1/std
    x = rng.standard_normal((2, 6, 3, 3))
    wt, bs = rng.standard_normal(6), rng.standard_normal(6)
    ours = pygpu.native_group_norm(pygpu.tensor(x, device=device), pygpu.tensor(wt, device=device),
                                   pygpu.tensor(bs, device=device), 2, 6, 9, 3, 1e-5)
    theirs = torch.native_group_norm(torch.tensor(x), torch.tensor(wt), torch.tensor(bs), 2, 6,
                                     9, 3, 1e-5)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(
        pygpu.native_channel_shuffle(pygpu.tensor(x, device=device), 3).numpy(),
        torch.native_channel_shuffle(torch.tensor(x), 3).numpy())
