# test_conv_winograd.py - 3x3 convolution at stride 1 by Winograd's transforms
# (csrc/backends/cpu/cpu_conv_winograd.c), F(2,3) and F(4,3) forced through
# PYGPU_CONV_WINOGRAD (read at each call; 0 forces im2col + GEMM), against torch in float64:
# the forward and the input gradient (which runs as a Winograd convolution of the output
# gradient), odd plane sizes (partial tiles at both edges), padding 0, 1 and 2, a channel
# count off the vector width, one sample and several, 1 and 2 threads; then the same under
# every ISA level this CPU has, each in its own process. pygpu's own kernels are what is
# tested: the CPU convolutions' path is pinned to them (pygpu.backends.mkldnn, not oneDNN's).
import os

import numpy as np
import pytest

import pygpu
from pygpu.backends import mkldnn
from pygpu.nn import functional as F
from _helpers import run_under_isa

torch = pytest.importorskip("torch")
TF = torch.nn.functional
LEVELS = ("baseline", "avx2", "avx512", "avx512_bf16")

# (N, C, O, H, W, padding)
CASES = [(1, 16, 16, 8, 8, 1), (3, 17, 19, 13, 11, 1), (2, 33, 20, 25, 27, 0),
         (2, 16, 24, 30, 29, 2), (1, 32, 16, 7, 9, 1), (5, 16, 40, 24, 24, 1),
         (2, 20, 18, 3, 5, 2)]
BOUND = {"0": 2e-6, "2": 2e-6, "4": 2e-5}  # of the layer's largest |value|; F(4,3) loses more


def _one(case, m, threads, seed=0):
    """Relative errors (forward, input gradient, weight gradient) of one case, forced m."""
    N, C, O, H, W, p = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = (rng.standard_normal((O, C, 3, 3)) / np.sqrt(9 * C)).astype(np.float32)
    b = rng.standard_normal(O).astype(np.float32)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    ty = TF.conv2d(tx, tw, torch.tensor(b, dtype=torch.float64), padding=p)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    (ty * torch.tensor(g, dtype=torch.float64)).sum().backward()
    old = pygpu.get_num_threads()
    os.environ["PYGPU_CONV_WINOGRAD"] = m
    path = mkldnn.set_conv_path("own")
    try:
        pygpu.set_num_threads(threads)
        px = pygpu.tensor(x).requires_grad_(True)
        pw = pygpu.tensor(w).requires_grad_(True)
        py = F.conv2d(px, pw, pygpu.tensor(b), padding=p)
        (py * pygpu.tensor(g)).sum().backward()
    finally:
        os.environ.pop("PYGPU_CONV_WINOGRAD")
        mkldnn.set_conv_path(path)
        pygpu.set_num_threads(old)

    def rel(ours, ref):
        ref = ref.detach().numpy()
        return float(np.abs(ours.detach().numpy() - ref).max() / np.abs(ref).max())
    return rel(py, ty), rel(px.grad, tx.grad), rel(pw.grad, tw.grad), py.detach().numpy()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m", ["0", "2", "4"])
@pytest.mark.parametrize("case", CASES, ids=["x".join(map(str, c)) for c in CASES])
def test_winograd_against_torch_float64(case, m, threads):
    ey, ex, ew, _ = _one(case, m, threads)
    assert ey < BOUND[m] and ex < BOUND[m], (ey, ex)
    assert ew < 2e-6, ew  # the weight gradient stays with im2col + GEMM


def test_winograd_really_runs():
    """F(2,3) and F(4,3) round differently from im2col + GEMM: the forced paths are taken."""
    outs = {m: _one(CASES[3], m, 1)[3] for m in "024"}
    assert not np.array_equal(outs["0"], outs["2"])
    assert not np.array_equal(outs["0"], outs["4"])
    assert not np.array_equal(outs["2"], outs["4"])


def test_winograd_same_bits_run_after_run_and_close_at_any_thread_count():
    """The threads split Winograd's tiles, never a sum: the same thread count gives the same
    bits every run; another count may change the last bits only through the GEMM's panels
    (docs/performance.md, "Threads and reproducibility": OpenBLAS's Haswell kernels, which
    OPENBLAS_CORETYPE=Haswell selects, round a panel's rows by its height)."""
    for m in "24":
        one, two = _one(CASES[5], m, 1)[3], _one(CASES[5], m, 2)[3]
        assert np.array_equal(two, _one(CASES[5], m, 2)[3])
        assert np.array_equal(one, _one(CASES[5], m, 1)[3])
        assert np.abs(one - two).max() <= BOUND[m] * np.abs(one).max()  # F(4,3) amplifies it


def _levels():
    return LEVELS[: LEVELS.index(pygpu.cpu_isa(detected=True)) + 1]


@pytest.mark.parametrize("isa", LEVELS)
def test_winograd_under_every_isa_level(isa):
    if isa not in _levels():
        pytest.skip(f"this CPU lacks the {isa} level")  # the levels below it still run
    code = ("import test_conv_winograd as t\n"
            "for case in t.CASES[:4]:\n"
            "    for m in '024':\n"
            "        ey, ex, ew, _ = t._one(case, m, 2)\n"
            "        assert ey < t.BOUND[m] and ex < t.BOUND[m], (case, m, ey, ex)\n")
    run_under_isa(isa, code)
