# test_conv_depthwise_bn.py - issue 45's rebuilt depthwise convolution and batch norm
# (csrc/backends/cpu/cpu_conv_direct.c, cpu_batchnorm.c) against torch, each way, on cpu and
# sim: depthwise in blocks of samples laid side by side (several blocks a batch on 32 x 32
# planes, one block of the whole batch on 4 x 4), strided inputs dealt to the phase planes
# row by row (stride 2 with padding 0 and 1, odd widths), channel multipliers, dilation,
# batch 1; batch norm in channel groups, sample by sample (several groups a task, odd
# channels, small planes, the fused ReLU's mask read in both passes). Both promise the same
# bits at 1 and 2 threads, which is checked; every ISA variant runs in a subprocess.

import numpy as np
import pytest

import pygpu
from pygpu._ops import _conv as conv_ops
from pygpu.nn import functional as F
from _helpers import check_against_torch, run_under_isa

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# (name, x shape, channel multiplier, kernel, kwargs)
DEPTHWISE = [
    ("blocks-32x32", (7, 5, 32, 32), 1, (3, 3), dict(padding=1)),  # blocks of 3, 3, 1
    ("one-block-4x4-odd-channels", (33, 13, 4, 4), 1, (3, 3), dict(padding=1)),
    ("stride-2-pad-1-odd-width", (3, 6, 11, 9), 1, (3, 3), dict(stride=2, padding=1)),
    ("stride-2-pad-0", (4, 5, 10, 10), 1, (3, 3), dict(stride=2, padding=0)),
    ("stride-2x1-pad-2x0", (2, 3, 9, 8), 1, (3, 3), dict(stride=(2, 1), padding=(2, 0))),
    ("multiplier-2", (5, 4, 8, 8), 2, (3, 3), dict(padding=1, bias=True)),
    ("dilation-2", (3, 4, 12, 12), 1, (3, 3), dict(padding=2, dilation=2)),
    ("batch-1-5x5", (1, 9, 7, 7), 1, (5, 5), dict(padding=2)),
    ("stride-3-2x3", (3, 4, 13, 11), 1, (2, 3), dict(stride=3, padding=1)),
]


def _depthwise_arrays(xs, mult, k, kw, dtype):
    r = np.random.default_rng(45)
    C = xs[1]
    arrays = [r.standard_normal(xs).astype(dtype),
              r.standard_normal((C * mult, 1) + k).astype(dtype)]
    kw = dict(kw)
    if kw.pop("bias", False):
        arrays.append(r.standard_normal(C * mult).astype(dtype))
    kw["groups"] = C
    return arrays, kw


@pytest.fixture
def threads():
    before = pygpu.get_num_threads()
    yield pygpu.set_num_threads
    pygpu.set_num_threads(before)


@pytest.mark.parametrize("name,xs,mult,k,kw", DEPTHWISE, ids=[c[0] for c in DEPTHWISE])
def test_depthwise_matches_torch_each_way(device, name, xs, mult, k, kw):
    arrays, kw = _depthwise_arrays(xs, mult, k, kw, np.float64)
    check_against_torch(device, lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw),
                        arrays, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name,xs,mult,k,kw", DEPTHWISE[:4], ids=[c[0] for c in DEPTHWISE[:4]])
def test_depthwise_float32_matches_torch(device, name, xs, mult, k, kw):
    arrays, kw = _depthwise_arrays(xs, mult, k, kw, np.float32)
    check_against_torch(device, lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw),
                        arrays, rtol=3e-5, atol=3e-5)


def _depthwise_all_ways(xs, mult, k, kw):
    arrays, kw = _depthwise_arrays(xs, mult, k, kw, np.float32)
    ts = [pygpu.tensor(a, requires_grad=True) for a in arrays]
    y = F.conv2d(*ts, **kw)
    g = np.random.default_rng(2).standard_normal(tuple(y.shape)).astype(np.float32)
    (y * pygpu.tensor(g)).sum().backward()
    return [y.detach().numpy()] + [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("case", [DEPTHWISE[0], DEPTHWISE[1], DEPTHWISE[2]],
                         ids=lambda c: c[0])
def test_depthwise_same_bits_at_1_and_2_threads(threads, case):
    """Forward and input gradient units are independent; the weight gradient sums whole
    channels over blocks fixed by the shape: 1 and 2 threads give the same bits. pygpu's own
    kernel's promise, so its path is pinned (oneDNN's weight gradient at 2 threads sums two
    halves of the batch, which may change the last bits, as docs/performance.md allows)."""
    from pygpu.backends import mkldnn
    runs = []
    path = mkldnn.set_conv_path("own")
    try:
        for n in (1, 2):
            threads(n)
            runs.append(_depthwise_all_ways(*case[1:]))
    finally:
        mkldnn.set_conv_path(path)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


# (x shape, fused ReLU): (4, 70, 32, 32) runs two channel groups of 64 and 6; (32, 97, 4, 4)
# one group of the whole task, rows of 16
NORMS = [((4, 70, 32, 32), False), ((4, 70, 32, 32), True), ((32, 97, 4, 4), True),
         ((2, 5, 3, 1), False), ((3, 8, 2, 2), True)]


def _bn(relu):
    def ours(x, w, b):
        C = x.shape[1]
        rm = pygpu.zeros(C, dtype=x.dtype, device=x.device)
        rv = pygpu.ones(C, dtype=x.dtype, device=x.device)
        y = conv_ops.batch_norm_train(x, w, b, rm, rv, 0.1, 1e-5, relu)
        return y, rm, rv

    def ref(x, w, b):
        C = x.shape[1]
        rm, rv = torch.zeros(C, dtype=x.dtype), torch.ones(C, dtype=x.dtype)
        y = TF.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
        return (TF.relu(y) if relu else y), rm, rv
    return ours, ref


@pytest.mark.parametrize("shape,relu", NORMS, ids=[f"{s}-relu{r}" for s, r in NORMS])
def test_batch_norm_matches_torch_each_way(device, shape, relu):
    r = np.random.default_rng(7)
    C = shape[1]
    arrays = [r.standard_normal(shape) * 3 + 1, r.standard_normal(C), r.standard_normal(C)]
    ours, ref = _bn(relu)
    check_against_torch(device, ours, ref, arrays, rtol=1e-9, atol=1e-9)


def test_batch_norm_same_bits_at_1_and_2_threads(threads):
    r = np.random.default_rng(8)
    x = r.standard_normal((16, 70, 16, 16)).astype(np.float32)
    g = r.standard_normal(x.shape).astype(np.float32)
    runs = []
    for n in (1, 2):
        threads(n)
        xt = pygpu.tensor(x, requires_grad=True)
        w = pygpu.ones(70, requires_grad=True)
        b = pygpu.zeros(70, requires_grad=True)
        y = conv_ops.batch_norm_train(xt, w, b, None, None, 0.1, 1e-5, True)
        (y * pygpu.tensor(g)).sum().backward()
        runs.append([y.detach().numpy(), xt.grad.numpy(), w.grad.numpy(), b.grad.numpy()])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_every_isa_variant_matches_torch(isa):
    """PYGPU_ISA caps the vector kernels' level (cpu_vecmath.h): each variant of the
    depthwise and batch-norm kernels, run in a process of its own, against torch."""
    code = ("import test_conv_depthwise_bn as t\n"
            "for c in t.DEPTHWISE[:3] + t.DEPTHWISE[5:6]:\n"
            "    t.test_depthwise_float32_matches_torch('cpu', *c)\n"
            "for s, r in t.NORMS[1:3]:\n"
            "    t.test_batch_norm_matches_torch_each_way('cpu', s, r)\n")
    run_under_isa(isa, code)
