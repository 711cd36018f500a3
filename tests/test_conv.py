# test_conv.py - the convolutional layers against torch as the oracle, on every device:
# convolution (strided, padded, dilated, grouped, depthwise, asymmetric, 'same'), its
# transpose, padding modes, every pooling, batch norm's running statistics in train and eval;
# forward and every gradient in float64, float32 at a CIFAR layer's size, finite differences
# for each op's gradient, PyTorch's errors raised before any work is queued, and the composed
# path that devices without the CONV/POOL/BATCH_NORM nodes run (pygpu/_ops/_conv.py).
import numpy as np
import pytest

import pygpu
from pygpu._ops import _conv as _conv_ops
from pygpu import nn
from pygpu.nn import functional as F
from _helpers import check_against_torch, same_repr

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(35)
X = rng.standard_normal((2, 4, 9, 8))
X1 = rng.standard_normal((2, 4, 11))


_check = check_against_torch  # tests/_helpers.py: values, then every array's gradient


# (name, input, weight shape, bias, kwargs): each exercised with its input, weight and bias
# gradients
CONV2D = [
    ("plain", X, (6, 4, 3, 3), True, {}),
    ("strided-padded", X, (6, 4, 3, 3), True, dict(stride=2, padding=1)),
    ("dilated", X, (5, 4, 3, 2), False, dict(dilation=(2, 3), padding=(2, 1))),
    ("grouped", X, (6, 2, 3, 2), True, dict(groups=2, stride=(2, 1), padding=(1, 2))),
    ("depthwise", X, (4, 1, 3, 3), True, dict(groups=4, padding=1)),
    ("depthwise-x2-strided", X, (8, 1, 3, 3), True, dict(groups=4, stride=2, padding=1,
                                                          dilation=(1, 2))),
    ("depthwise-uneven", X, (4, 1, 3, 2), False, dict(groups=4, stride=(1, 2), padding=(2, 0),
                                                       dilation=(2, 1))),
    ("depthwise-x3-dilated", X, (12, 1, 2, 3), True, dict(groups=4, stride=(3, 1),
                                                          padding=(1, 2), dilation=(1, 2))),
    ("asymmetric", X, (3, 4, 2, 5), True, dict(stride=(1, 3), padding=(0, 2))),
    ("same-even", X, (3, 4, 4, 3), True, dict(padding="same", dilation=2)),
    ("valid-1x1", X, (7, 4, 1, 1), True, dict(padding="valid")),
]


@pytest.mark.parametrize("name,x,wshape,bias,kw", CONV2D, ids=[c[0] for c in CONV2D])
def test_conv2d_matches_torch(device, name, x, wshape, bias, kw):
    arrays = [x, rng.standard_normal(wshape)] + ([rng.standard_normal(wshape[0])] if bias else [])
    _check(device, lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), arrays)


@pytest.mark.parametrize("shape,stride", [((3, 20, 8, 8), 1), ((2, 20, 4, 4), 1),
                                          ((2, 24, 16, 16), 2), ((1, 17, 5, 7), 2)])
def test_depthwise_float32_at_mobilenets_shapes(device, shape, stride):
    """MobileNetV2's depthwise layers (3x3, padding 1, stride 1 or 2, small planes, channel
    counts that are not a multiple of a vector) in float32, each way, against torch."""
    r = np.random.default_rng(45)
    x = r.standard_normal(shape).astype(np.float32)
    w = r.standard_normal((shape[1], 1, 3, 3)).astype(np.float32)
    kw = dict(stride=stride, padding=1, groups=shape[1])
    _check(device, lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), [x, w],
           rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=2), dict(padding="same", dilation=3),
                                dict(groups=4, padding=1)], ids=["strided", "same", "depthwise"])
def test_conv1d_matches_torch(device, kw):
    w = rng.standard_normal((4 if "groups" in kw else 5, 1 if "groups" in kw else 4, 3))
    _check(device, lambda x, w: F.conv1d(x, w, **kw), lambda x, w: TF.conv1d(x, w, **kw), [X1, w])


def test_unbatched_inputs_match_torch(device):
    w = rng.standard_normal((3, 4, 3, 3))
    _check(device, lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: TF.conv2d(x, w, padding=1),
           [X[0], w])
    _check(device, lambda x: F.max_pool1d(x, 2), lambda x: TF.max_pool1d(x, 2), [X1[0]])


TRANSPOSED = [
    ("2d-strided-outpad-grouped", X, (4, 3, 3, 2), dict(stride=2, padding=1, output_padding=1,
                                                        groups=2, dilation=(1, 2))),
    ("2d-plain", X, (4, 5, 2, 2), dict()),
    ("2d-depthwise-strided", X, (4, 1, 3, 3), dict(stride=2, padding=1, groups=4)),
    ("1d-strided", X1, (4, 2, 4), dict(stride=3, padding=1)),
]


@pytest.mark.parametrize("name,x,wshape,kw", TRANSPOSED, ids=[c[0] for c in TRANSPOSED])
def test_conv_transpose_matches_torch(device, name, x, wshape, kw):
    groups = kw.get("groups", 1)
    b = rng.standard_normal(wshape[1] * groups)
    ours = F.conv_transpose2d if x.ndim == 4 else F.conv_transpose1d
    ref = TF.conv_transpose2d if x.ndim == 4 else TF.conv_transpose1d
    _check(device, lambda *a: ours(*a, **kw), lambda *a: ref(*a, **kw),
           [x, rng.standard_normal(wshape), b])


def test_conv_transpose_output_size_matches_torch(device):
    pygpu.manual_seed(0)
    m = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, dtype=pygpu.float64).to(device)
    t = torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, dtype=torch.float64)
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    y = m(pygpu.tensor(X, device=device), output_size=(18, 16))
    np.testing.assert_allclose(y.detach().numpy(), t(torch.tensor(X), output_size=(18, 16)).detach()
                               .numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="requested an output size"):
        m(pygpu.tensor(X, device=device), output_size=(30, 16))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "zeros"])
def test_conv_padding_modes_match_torch(device, mode):
    pygpu.manual_seed(1)
    m = nn.Conv2d(4, 3, (3, 2), padding=(2, 1), padding_mode=mode, dtype=pygpu.float64)
    m = m.to(device)
    t = torch.nn.Conv2d(4, 3, (3, 2), padding=(2, 1), padding_mode=mode, dtype=torch.float64)
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    _check(device, m, t, [X])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_torch(device, mode):
    _check(device, lambda x: F.pad(x, (1, 2, 2, 1), mode=mode),
           lambda x: TF.pad(x, (1, 2, 2, 1), mode=mode), [X])
    if mode == "constant":
        _check(device, lambda x: F.pad(x, (-1, 2), value=0.5),
               lambda x: TF.pad(x, (-1, 2), value=0.5), [X])


POOLS = [
    ("max-ceil-indices", lambda f, x: f.max_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                   return_indices=True)),
    ("max-dilated", lambda f, x: f.max_pool2d(x, (2, 3), (1, 2), dilation=2)),
    ("avg-ceil-nopad", lambda f, x: f.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                 count_include_pad=False)),
    ("avg-divisor", lambda f, x: f.avg_pool2d(x, 3, 2, 1, divisor_override=5)),
    ("adaptive-avg", lambda f, x: f.adaptive_avg_pool2d(x, (4, 3))),
    ("adaptive-max", lambda f, x: f.adaptive_max_pool2d(x, (4, 3), return_indices=True)),
    ("global-avg", lambda f, x: f.adaptive_avg_pool2d(x, 1)),
]
POOLS1D = [
    ("max1d", lambda f, x: f.max_pool1d(x, 3, 2, 1, dilation=2, ceil_mode=True,
                                        return_indices=True)),
    ("avg1d", lambda f, x: f.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ("adaptive-avg1d", lambda f, x: f.adaptive_avg_pool1d(x, 4)),
    ("adaptive-max1d", lambda f, x: f.adaptive_max_pool1d(x, 5)),
]


@pytest.mark.parametrize("name,fn", POOLS + POOLS1D, ids=[p[0] for p in POOLS + POOLS1D])
def test_pooling_matches_torch(device, name, fn):
    x = X1 if name.endswith("1d") else X
    _check(device, lambda x: fn(F, x), lambda x: fn(TF, x), [x])


def test_max_unpool_inverts_max_pool_as_torch(device):
    p, i = F.max_pool2d(pygpu.tensor(X, device=device), 2, return_indices=True)
    tp, ti = TF.max_pool2d(torch.tensor(X), 2, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    ours = nn.MaxUnpool2d(2)(p, i, output_size=X.shape)
    np.testing.assert_array_equal(ours.numpy(), torch.nn.MaxUnpool2d(2)(tp, ti,
                                                                        output_size=X.shape))


def test_max_pool_keeps_nan_and_the_first_maximum_as_torch(device):
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = np.nan
    ours = F.max_pool2d(pygpu.tensor(x, device=device), 2, return_indices=True)
    ref = TF.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(ours[0].numpy(), ref[0].numpy())
    np.testing.assert_array_equal(ours[1].numpy(), ref[1].numpy())


@pytest.mark.parametrize("cls,shape,kw", [
    ("BatchNorm2d", (3, 4, 5, 6), dict(momentum=0.3)),
    ("BatchNorm2d", (3, 4, 5, 6), dict(momentum=None, affine=False)),
    ("BatchNorm1d", (5, 4, 7), dict()),
    ("BatchNorm2d", (3, 4, 5, 6), dict(track_running_stats=False)),
], ids=["2d", "2d-cumulative-noaffine", "1d-ncl", "2d-untracked"])
def test_batch_norm_train_and_eval_match_torch(device, cls, shape, kw):
    m = getattr(nn, cls)(4, dtype=pygpu.float64, **kw).to(device)
    t = getattr(torch.nn, cls)(4, dtype=torch.float64, **kw)
    if m.weight is not None:
        w, b = rng.standard_normal(4), rng.standard_normal(4)
        with pygpu.no_grad():
            m.weight.copy_(pygpu.tensor(w, device=device))
            m.bias.copy_(pygpu.tensor(b, device=device))
        with torch.no_grad():
            t.weight.copy_(torch.tensor(w))
            t.bias.copy_(torch.tensor(b))
    for step in range(3):
        x = rng.standard_normal(shape) * (step + 1) + step
        _check(device, m, t, [x])
        for name, buf in t.named_buffers():
            np.testing.assert_allclose(getattr(m, name).numpy(), buf.numpy(), rtol=1e-12)
    m.eval()
    t.eval()
    _check(device, m, t, [rng.standard_normal(shape)])
    if m.weight is not None:
        np.testing.assert_allclose(m.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-9)


def test_float32_cifar_layer_matches_torch(device):
    """A CIFAR layer's size in float32: the GEMM kernels, the pool's cut and the depthwise
    loops at the sizes the benchmarks run."""
    x = rng.standard_normal((8, 16, 32, 32)).astype(np.float32)
    for wshape, kw in (((32, 16, 3, 3), dict(padding=1)), ((16, 1, 3, 3), dict(padding=1,
                                                                                 groups=16))):
        w = (rng.standard_normal(wshape) * 0.1).astype(np.float32)
        b = rng.standard_normal(wshape[0]).astype(np.float32)
        _check(device, lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), [x, w, b],
               rtol=2e-4, atol=2e-3)  # dW sums 8K products of ~1e2: absolute error ~1e-4
    _check(device, lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [x], rtol=0,
           atol=0)
    _check(device, lambda x: F.batch_norm(x, None, None, training=True),
           lambda x: TF.batch_norm(x, None, None, training=True), [x], rtol=2e-4, atol=2e-4)


# ---- finite differences (no oracle) -----------------------------------------------------------

def _finite_difference(device, fn, arrays, eps=1e-6):
    """d sum(fn(*args) * g) / d args[i], compared with autograd, at a few random entries."""
    g = np.random.default_rng(2).standard_normal(
        tuple(fn(*[pygpu.tensor(a, device=device) for a in arrays]).shape))
    ts = [pygpu.tensor(a, device=device).requires_grad_() for a in arrays]
    (fn(*ts) * pygpu.tensor(g, device=device)).sum().backward()
    pick = np.random.default_rng(3)
    for i, a in enumerate(arrays):
        for _ in range(4):
            k = tuple(int(pick.integers(0, s)) for s in a.shape)
            vals = []
            for sign in (1, -1):
                b = [c.copy() for c in arrays]
                b[i][k] += sign * eps
                out = fn(*[pygpu.tensor(c, device=device) for c in b]).numpy()
                vals.append((out * g).sum())
            np.testing.assert_allclose(ts[i].grad.numpy()[k], (vals[0] - vals[1]) / (2 * eps),
                                       rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["conv", "depthwise", "transpose", "avg_pool", "max_pool",
                                  "batch_norm"])
def test_gradients_match_finite_differences(device, name):
    x = rng.standard_normal((2, 4, 6, 5))
    cases = {
        "conv": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
                 [x, rng.standard_normal((4, 2, 3, 3)), rng.standard_normal(4)]),
        "depthwise": (lambda x, w: F.conv2d(x, w, padding=1, groups=4),
                      [x, rng.standard_normal((8, 1, 3, 2))]),
        "transpose": (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1,
                                                      output_padding=1),
                      [x, rng.standard_normal((4, 3, 3, 3))]),
        "avg_pool": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [x]),
        "max_pool": (lambda x: F.max_pool2d(x, 2, 1), [x]),
        "batch_norm": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                       [x, rng.standard_normal(4), rng.standard_normal(4)]),
    }
    fn, arrays = cases[name]
    _finite_difference(device, fn, arrays)


# ---- the composed path (devices without the nodes) ---------------------------------------

@pytest.mark.parametrize("name", ["conv", "transpose", "pools", "batch_norm"])
def test_composed_path_matches_torch(monkeypatch, name):
    """What a device without the CONV/POOL/BATCH_NORM nodes runs (gathers, matmuls, tensor
    ops), here forced on cpu, against torch."""
    monkeypatch.setattr(_conv_ops, "has_node", lambda kind, x, *more: False)
    if name == "conv":
        for _, x, wshape, bias, kw in CONV2D[3:6]:
            arrays = [x, rng.standard_normal(wshape)] + ([rng.standard_normal(wshape[0])]
                                                         if bias else [])
            _check("cpu", lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), arrays)
    elif name == "transpose":
        _, x, wshape, kw = TRANSPOSED[0]
        _check("cpu", lambda *a: F.conv_transpose2d(*a, **kw),
               lambda *a: TF.conv_transpose2d(*a, **kw), [x, rng.standard_normal(wshape)])
    elif name == "pools":
        for _, fn in POOLS:
            _check("cpu", lambda x: fn(F, x), lambda x: fn(TF, x), [X])
    else:
        rm, trm = pygpu.zeros(4, dtype=pygpu.float64), torch.zeros(4, dtype=torch.float64)
        rv, trv = pygpu.ones(4, dtype=pygpu.float64), torch.ones(4, dtype=torch.float64)
        _check("cpu", lambda x: F.batch_norm(x, rm, rv, training=True),
               lambda x: TF.batch_norm(x, trm, trv, training=True), [X])
        np.testing.assert_allclose(rv.numpy(), trv.numpy())


# ---- PyTorch's errors, before any work is queued --------------------------------------------

def _no_work(fn, exc, match):
    before = pygpu.stats()
    with pytest.raises(exc, match=match):
        fn()
    assert (pygpu.stats() - before).ops == 0


@pytest.mark.parametrize("case", ["channels", "kernel", "groups", "negative-pad", "same-strided",
                                  "pad-string", "bias", "pool-pad"])
def test_bad_input_gets_pytorchs_error_before_any_work(device, case):
    x = pygpu.tensor(X, device=device)
    w = pygpu.tensor(rng.standard_normal((6, 3, 3, 3)), device=device)
    b5 = pygpu.tensor(np.zeros(5), device=device)
    cases = {
        "channels": (lambda: F.conv2d(x, w), RuntimeError,
                     r"expected input\[2, 4, 9, 8\] to have 3 channels, but got 4 channels"),
        "kernel": (lambda: F.conv2d(x[:, :3, :2, :2], w), RuntimeError,
                   "Kernel size can't be greater than actual input size"),
        "groups": (lambda: nn.Conv2d(4, 6, 3, groups=3), ValueError,
                   "in_channels must be divisible by groups"),
        "negative-pad": (lambda: F.conv2d(x[:, :3], w, padding=-1), RuntimeError,
                         "negative padding is not supported"),
        "same-strided": (lambda: F.conv2d(x[:, :3], w, stride=2, padding="same"), ValueError,
                         "padding='same' is not supported for strided convolutions"),
        "pad-string": (lambda: F.conv2d(x[:, :3], w, padding="full"), ValueError,
                       "Invalid padding string 'full'"),
        "bias": (lambda: F.conv2d(x[:, :3], w, b5),
                 RuntimeError, "expected bias to be 1-dimensional with 6 elements"),
        "pool-pad": (lambda: F.max_pool2d(x, 2, padding=2), RuntimeError,
                     "pad should be at most half of effective kernel size"),
    }
    fn, exc, match = cases[case]
    ref = {"channels": lambda: TF.conv2d(torch.tensor(X), torch.zeros(6, 3, 3, 3,
                                                                      dtype=torch.float64))}
    if case in ref:  # the same words as PyTorch's
        with pytest.raises(exc, match=match):
            ref[case]()
    _no_work(fn, exc, match)


# ---- modules: PyTorch's shapes, initialisation, reprs and state_dict keys ----------------------

def test_modules_mirror_torch_layout():
    pairs = [
        (nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2, bias=False),
         torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2, bias=False)),
        (nn.Conv1d(4, 6, 3, padding="same", padding_mode="reflect"),
         torch.nn.Conv1d(4, 6, 3, padding="same", padding_mode="reflect")),
        (nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1),
         torch.nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1)),
        (nn.MaxPool2d(2), torch.nn.MaxPool2d(2)),
        (nn.AvgPool2d(3, 2), torch.nn.AvgPool2d(3, 2)),
        (nn.AdaptiveAvgPool2d((1, 1)), torch.nn.AdaptiveAvgPool2d((1, 1))),
        (nn.BatchNorm2d(6, momentum=None), torch.nn.BatchNorm2d(6, momentum=None)),
    ]
    for ours, ref in pairs:
        same_repr(ours, ref)
        assert list(ours.state_dict()) == list(ref.state_dict())
        for (k, v), (_, tv) in zip(ours.state_dict().items(), ref.state_dict().items()):
            assert tuple(v.shape) == tuple(tv.shape), k
    w = nn.Conv2d(8, 16, 3).weight.detach().numpy()  # U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in 72
    assert np.abs(w).max() <= 1 / np.sqrt(72) and np.abs(w).max() > 0.9 / np.sqrt(72)


def test_conv_weights_cross_once_when_the_model_moves():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2))
    before = pygpu.stats()
    model.to("sim:0")
    tensors = len(list(model.parameters())) + len(list(model.buffers()))
    assert (pygpu.stats() - before).h2d_count == tensors
    x = pygpu.randn(2, 3, 10, 10, device="sim:0")
    assert model(x).shape == (2, 8, 4, 4)


# ---- the rest of the layers: norms, resampling, folding, channel dropout -------------------

REST = [
    ("group_norm", lambda f, x, w, b: f.group_norm(x, 2, w, b)),
    ("instance_norm", lambda f, x, w, b: f.instance_norm(x, weight=w, bias=b)),
    ("local_response_norm", lambda f, x, w, b: f.local_response_norm(x, 3, 1e-2, 0.75, 2.0)),
    ("nearest-size", lambda f, x, w, b: f.interpolate(x, size=(13, 5))),
    ("nearest-scale", lambda f, x, w, b: f.interpolate(x, scale_factor=1.7)),
    ("bilinear", lambda f, x, w, b: f.interpolate(x, size=(14, 11), mode="bilinear",
                                                  align_corners=False)),
    ("bilinear-corners", lambda f, x, w, b: f.interpolate(x, scale_factor=(2, 0.5),
                                                          mode="bilinear", align_corners=True)),
    ("linear", lambda f, x, w, b: f.interpolate(x[:, :, 0], size=13, mode="linear")),
    ("unfold", lambda f, x, w, b: f.unfold(x, (3, 2), dilation=(1, 2), padding=1, stride=2)),
    ("fold", lambda f, x, w, b: f.fold(f.unfold(x, 3, padding=1), (9, 8), 3, padding=1)),
    ("pixel_shuffle", lambda f, x, w, b: f.pixel_shuffle(x, 2)),
    ("pixel_unshuffle", lambda f, x, w, b: f.pixel_unshuffle(x[:, :, :8], 2)),
]


@pytest.mark.parametrize("name,fn", REST, ids=[r[0] for r in REST])
def test_the_rest_of_the_layers_match_torch(device, name, fn):
    _check(device, lambda x, w, b: fn(F, x, w, b), lambda x, w, b: fn(TF, x, w, b),
           [X, rng.standard_normal(4), rng.standard_normal(4)], rtol=1e-6, atol=1e-8)


def test_norm_modules_running_statistics_match_torch(device):
    for ours, ref in ((nn.InstanceNorm2d(4, affine=True, track_running_stats=True,
                                         dtype=pygpu.float64),
                       torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True,
                                               dtype=torch.float64)),
                      (nn.GroupNorm(2, 4, dtype=pygpu.float64),
                       torch.nn.GroupNorm(2, 4, dtype=torch.float64))):
        same_repr(ours, ref)
        ours = ours.to(device)
        for _ in range(2):
            _check(device, ours, ref, [rng.standard_normal((3, 4, 5, 6)) * 2 + 1])
        for name, buf in ref.named_buffers():
            if name != "num_batches_tracked":
                np.testing.assert_allclose(getattr(ours, name).numpy(), buf.numpy(), rtol=1e-9)
        ours.eval()
        ref.eval()
        _check(device, ours, ref, [rng.standard_normal((3, 4, 5, 6))])


def test_channel_dropout_zeroes_whole_channels(device):
    x = pygpu.ones((16, 8, 5, 5), device=device)
    pygpu.manual_seed(0)
    y = nn.Dropout2d(0.5)(x).numpy()
    per_channel = y.reshape(16 * 8, 25)
    assert set(np.unique(per_channel.min(axis=1))) <= {0.0, 2.0}
    assert (per_channel.min(axis=1) == per_channel.max(axis=1)).all()
    assert 0.3 < (per_channel[:, 0] == 0).mean() < 0.7
    assert nn.Dropout1d(0.5).eval()(x[:, :, 0]).numpy().tolist() == x[:, :, 0].numpy().tolist()
    a = nn.AlphaDropout(0.2)(pygpu.randn(20000, device=device)).numpy()
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05  # SELU's fixed point kept


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_runs_convolutions_low_as_torch(device, dtype):
    """conv1d/2d and the transposed ones are on autocast's lower-precision list (PyTorch's):
    float32 operands rounded to the region's dtype, products accumulated in float32, the
    result in the low dtype; pooling and batch norm follow their input; gradients reach the
    float32 parameters in float32."""
    pygpu.manual_seed(5)
    m = nn.Sequential(nn.Conv2d(4, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                      nn.MaxPool2d(2), nn.ConvTranspose2d(6, 3, 2, stride=2)).to(device)
    t = torch.nn.Sequential(torch.nn.Conv2d(4, 6, 3, padding=1), torch.nn.BatchNorm2d(6),
                            torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                            torch.nn.ConvTranspose2d(6, 3, 2, stride=2))
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    x = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
    with pygpu.autocast(device.split(":")[0], dtype=getattr(pygpu, dtype)):
        y = m(pygpu.tensor(x, device=device))
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        ty = t(torch.tensor(x))
    assert y.dtype == getattr(pygpu, dtype) and str(ty.dtype) == f"torch.{dtype}"
    np.testing.assert_allclose(y.detach().astype(pygpu.float32).numpy(),
                               ty.float().detach().numpy(), rtol=0.05, atol=0.05)
    y.astype(pygpu.float32).sum().backward()
    assert m[0].weight.grad.dtype == pygpu.float32
    ty.float().sum().backward()
    np.testing.assert_allclose(m[0].weight.grad.numpy(), t[0].weight.grad.numpy(), rtol=0.1,
                               atol=0.1)


# ---- structured pruning of convolutions and compact --------------------------------------------

def test_compact_cuts_pruned_conv_channels_and_keeps_the_outputs(device):
    from pygpu.nn.utils import prune
    pygpu.manual_seed(6)
    m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                      nn.ReLU(), nn.Conv2d(32, 8, 3), nn.ReLU(), nn.Flatten(),
                      nn.Linear(8 * 6 * 6, 10)).to(device)
    x = pygpu.randn(4, 3, 16, 16, device=device)
    m(x)  # training: running statistics that are not the defaults
    for i in (0, 4, 7):
        prune.ln_structured(m[i], "weight", 0.5, 2, dim=0)
    m.eval()
    c = prune.compact(m)
    # conv 0's dead channels feed a padded conv (a constant plane is not foldable there)
    # unless their constant is 0: ReLU(BN(bias)) may be either; conv 4 and 7's all fold
    assert c[7].out_channels == 4 and c[10].in_features == 4 * 36
    assert c[4].out_channels == 16 and c[5].num_features == 16 and c[7].in_channels == 16
    assert c[0].out_channels <= 16 and c[1].num_features == c[0].out_channels
    np.testing.assert_allclose(c(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="grouped"):
        prune.compact(nn.Sequential(nn.Conv2d(4, 4, 3, groups=2), nn.ReLU()))
