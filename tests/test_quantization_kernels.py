# test_quantization_kernels.py - each int8 GEMM kernel against an exact int64 reference.
#
# The kernels (csrc/backends/cpu/cpu_gemm_int8*.c): portable C, AVX2 (vpmaddubsw +
# vpmaddwd, 7-bit activations) and AVX512_VNNI (vpdpbusd), all reading one packed weight
# layout (pygpu/quantization/_pack.py). _C._qgemm_test runs one descriptor (pg_gemm.h's int8
# extension) through a named kernel on NumPy buffers: the raw int32 sums (with the
# zero-point correction) must equal int64 NumPy's bit for bit over the edge shapes (M, N, K
# tails: N not a multiple of 16 or 64, K not a multiple of 4, single rows and columns), with
# the scheduler's row and column panels on 2 threads; the float and u8 epilogues must equal
# a NumPy float32 model of the same arithmetic. Every PYGPU_ISA level this CPU has runs in
# its own process, where the dispatcher's choice must be that level's kernel.
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import pygpu
from pygpu import _C
from pygpu.quantization import pack_weight, packed_bytes, unpack_weight

LEVELS = ("baseline", "avx2", "avx512", "avx512_bf16")
ROOT = pathlib.Path(__file__).resolve().parent.parent
SHAPES = [(1, 1, 1), (1, 10, 784), (2, 17, 3), (5, 16, 4), (7, 63, 5), (6, 64, 8), (13, 65, 33),
          (3, 130, 9), (100, 200, 97), (97, 512, 64), (12, 48, 257)]
KERNELS = ("portable", "avx2", "avx_vnni", "avx_vnni_evex", "avx512_vnni")


def _runs(kernel, a_max=127):
    try:
        _C._qgemm_test(kernel, np.zeros((1, 1), np.uint8), pack_weight(np.zeros((1, 1), np.int8)),
                       1, np.zeros((1, 1), np.int32), a_max=a_max)
        return True
    except ValueError:
        return False


def _case(m, n, k, a_max, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, a_max + 1, (m, k)).astype(np.uint8)
    a[0, :] = a_max  # the extremes: the largest products, where int16 would saturate
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    w[0, :] = -127 if n > 1 else w[0, :]
    return a, w


def test_pack_layout_round_trips_and_has_the_documented_size():
    rng = np.random.default_rng(0)
    for n, k in [(1, 1), (10, 784), (65, 3), (130, 9), (64, 64)]:
        w = rng.integers(-127, 128, (n, k)).astype(np.int8)
        p = pack_weight(w)
        assert p.dtype == np.uint8 and p.size == packed_bytes(n, k)
        assert np.array_equal(unpack_weight(p, n, k), w)
        np_ = (n + 15) // 16 * 16
        colsum = p[-4 * np_:].view("<i4")
        assert np.array_equal(colsum[:n], w.astype(np.int64).sum(1)) and not colsum[n:].any()


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("a_max", [127, 255])
def test_each_kernel_is_exact_over_edge_shapes(kernel, a_max):
    if not _runs(kernel, a_max):
        pytest.skip(f"{kernel} does not run here with a_max={a_max}")
    for i, (m, n, k) in enumerate(SHAPES):
        a, w = _case(m, n, k, a_max, i)
        for zp in (0, 3, a_max):
            ref = (a.astype(np.int64) - zp) @ w.astype(np.int64).T
            for threads in (1, 2):
                out = np.full((m, n), -7, np.int32)
                _C._qgemm_test(kernel, a, pack_weight(w), n, out, a_zp=zp, a_max=a_max,
                               threads=threads)
                assert np.array_equal(out.astype(np.int64), ref), (kernel, m, n, k, zp, threads)


def test_the_avx2_kernel_refuses_8_bit_activations():
    if not _runs("avx2"):
        pytest.skip("no AVX2 here")
    assert not _runs("avx2", 255)  # vpmaddubsw could saturate: the portable kernel takes them
    with pytest.raises(ValueError, match="does not run here"):
        _C._qgemm_test("avx2", np.zeros((1, 4), np.uint8), pack_weight(np.zeros((1, 4), np.int8)),
                       1, np.zeros((1, 1), np.int32), a_max=255)


def _epilogue_model(acc, sa, za, colsum, sw, bias, act):
    """NumPy float32 with the kernel's order: (acc - za*colsum) * (sa*sw) + bias, then act."""
    y = (acc - za[:, None] * colsum[None, :]).astype(np.float32) * (sa[:, None] * sw[None, :])
    y = y + bias[None, :]
    return np.maximum(y, np.float32(0)) if act == 1 else y


@pytest.mark.parametrize("kernel", KERNELS)
def test_float_and_u8_epilogues(kernel):
    if not _runs(kernel):
        pytest.skip(f"{kernel} does not run here")
    rng = np.random.default_rng(5)
    m, n, k = 37, 70, 45
    _, w = _case(m, n, k, 127, 9)
    x = rng.standard_normal((m, k)).astype(np.float32)
    x[3] = 0.0  # an all-zero row: any scale, exact zeros
    sw = rng.uniform(0.001, 0.02, n).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    colsum = w.astype(np.int64).sum(1)
    # static: fixed scale and zero point
    sa, za = np.float32(0.03), 60
    q = np.clip(np.rint(x * np.float32(1 / sa) + za), 0, 127).astype(np.int64)
    ref = _epilogue_model(q @ w.astype(np.int64).T, np.full(m, sa, np.float32), np.full(m, za),
                          colsum, sw, bias, 1)
    out = np.zeros((m, n), np.float32)
    _C._qgemm_test(kernel, x, pack_weight(w), n, out, a_float=True, a_scale=float(sa), a_zp=za,
                   w_scale=sw, bias=bias, act=1, out_kind="f32")
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    # requantized to u8 (the next layer's input)
    u8 = np.zeros((m, n), np.uint8)
    _C._qgemm_test(kernel, x, pack_weight(w), n, u8, a_float=True, a_scale=float(sa), a_zp=za,
                   w_scale=sw, bias=bias, act=1, out_kind="u8", c_scale=0.05, c_zp=2, c_max=127)
    want = np.clip(np.rint(ref * np.float32(1 / 0.05) + 2), 0, 127)
    assert np.abs(u8.astype(np.int64) - want).max() <= 1  # ties may round either way
    # dynamic: each row's own range over 128 levels
    out_d = np.zeros((m, n), np.float32)
    _C._qgemm_test(kernel, x, pack_weight(w), n, out_d, a_float=True, a_dynamic=True,
                   w_scale=sw, bias=bias, out_kind="f32")
    exact = x @ (w.astype(np.float32) * sw[:, None]).T + bias
    row_scale = (np.maximum(x.max(1), 0) - np.minimum(x.min(1), 0)) / 127
    bound = (row_scale[:, None] * np.abs(w.astype(np.float32) * sw[:, None]).sum(1)[None, :])
    assert np.all(np.abs(out_d - exact) <= 0.5 * bound + 1e-5)
    assert np.array_equal(out_d[3], bias)


def test_every_kernel_gives_the_same_bits():
    kernels = [k for k in KERNELS if _runs(k)]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((50, 99)).astype(np.float32)
    w = rng.integers(-127, 128, (33, 99)).astype(np.int8)
    sw = rng.uniform(0.001, 0.02, 33).astype(np.float32)
    outs = []
    for kern in kernels:
        out = np.zeros((50, 33), np.float32)
        _C._qgemm_test(kern, x, pack_weight(w), 33, out, a_float=True, a_dynamic=True, w_scale=sw,
                       out_kind="f32", threads=2)
        outs.append(out)
    for o in outs[1:]:
        assert np.array_equal(o, outs[0])


def test_bad_buffers_raise_instead_of_reaching_a_kernel():
    w = pack_weight(np.zeros((4, 8), np.int8))
    with pytest.raises(ValueError, match="packed"):
        _C._qgemm_test(None, np.zeros((2, 8), np.uint8), w[:-1], 4, np.zeros((2, 4), np.int32))
    with pytest.raises(ValueError, match="out"):
        _C._qgemm_test(None, np.zeros((2, 8), np.uint8), w, 4, np.zeros((2, 3), np.int32))
    with pytest.raises(ValueError, match="kernel nope"):
        _C._qgemm_test("nope", np.zeros((2, 8), np.uint8), w, 4, np.zeros((2, 4), np.int32))


_CHILD = r"""
import numpy as np, sys
sys.path.insert(0, {tests!r})
from pygpu import _C
import test_quantization_kernels as t
from pygpu.quantization import pack_weight
print(_C._qgemm_kernel(127)); print(_C._qgemm_kernel(255))
for i, (m, n, k) in enumerate(t.SHAPES):
    a, w = t._case(m, n, k, 127, i)
    out = np.zeros((m, n), np.int32)
    _C._qgemm_test(None, a, pack_weight(w), n, out, a_zp=5, threads=2)
    assert np.array_equal(out.astype(np.int64), (a.astype(np.int64) - 5) @ w.astype(np.int64).T)
"""


def _available_levels():
    top = LEVELS.index(pygpu.cpu_isa(detected=True))
    return LEVELS[: top + 1]


@pytest.mark.parametrize("isa", LEVELS)
def test_pygpu_isa_forces_each_kernel(isa):
    if isa not in _available_levels():
        pytest.skip(f"this CPU has no {isa}")
    env = dict(os.environ, PYGPU_ISA=isa, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", _CHILD.format(tests=str(ROOT / "tests"))], env=env,
                       capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr[-3000:]
    k127, k255 = r.stdout.splitlines()[:2]
    if "SIMDe" in _C._qgemm_kernel():  # the emulation build runs its VNNI kernel everywhere
        assert k127 == k255 == "avx512_vnni (SIMDe emulation)"
        return
    cpuinfo = pathlib.Path("/proc/cpuinfo")
    flags = set(cpuinfo.read_text().split()) if cpuinfo.exists() else set()
    ymm = ("avx_vnni", "avx_vnni") if "avx_vnni" in flags else ("avx2", "portable")
    want = {"baseline": ("portable", "portable"), "avx2": ymm}.get(
        isa, ("avx512_vnni", "avx512_vnni") if "avx512_vnni" in flags else ymm)
    assert (k127, k255) == want, r.stdout
