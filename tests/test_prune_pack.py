"""A pruned layer's mask fused into the GEMM's packing of B (csrc/core/pg_gemm.h b_mask).

The contract: op(A) @ op(B * mask) for a float32 B (or autocast's float32 weights under a
bfloat16 product), bit for bit the product with B * mask written first, whichever kernel
runs: pygpu's own float32 AVX2 kernel (PYGPU_ISA=avx2) and the AVX512_BF16 kernel multiply
the mask in as they pack B; OpenBLAS and the convert kernel get the masked copy. The edge
shapes are the kernels' tile and block edges (16/48-wide B panels, K slices of 256, odd K
for bfloat16 pairs, panels cut over threads). The pruned Linear's forward and backward
that use it are checked in test_prune.py-style against the cached product path below."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pygpu
from pygpu import _C

SHAPES = [(1, 1, 1), (5, 17, 3), (6, 16, 8), (7, 33, 301), (64, 48, 257), (130, 10, 512),
          (9, 49, 2), (64, 512, 784)]


def _pair(M, N, K, tb, ab, threads, seed=0):
    """C with the mask fused and C from B * mask, for one descriptor; and the counts' change"""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    m = (rng.random(w.shape) > 0.4).astype(np.float32)
    w[0, 0] = np.nan if w.size > 4 else w[0, 0]  # NaN under a 0 stays NaN: bits, not values
    m[0, 0] = 0.0
    a = pygpu.tensor(rng.standard_normal((M, K)).astype(np.float32))
    if ab == "bfloat16":
        a = a.astype(pygpu.bfloat16)
    out = []
    before = _C._gemm_mask_counts()
    for b, mask in ((w, m), (w * m, None)):
        c = pygpu.tensor(np.zeros((M, N), np.float32))
        args = (a, pygpu.tensor(b), c, False, tb, 1.0, 0.0, 0, 0, None, None, None, threads)
        _C._test_gemm(*args, pygpu.tensor(mask)) if mask is not None else _C._test_gemm(*args)
        out.append(np.asarray(c))
        if mask is not None:
            after = _C._gemm_mask_counts()
    return out[0], out[1], (after[0] - before[0], after[1] - before[1])


@pytest.mark.parametrize("ab", ["float32", "bfloat16"])
@pytest.mark.parametrize("tb", [False, True], ids=["B", "BT"])
@pytest.mark.parametrize("threads", [1, 2])
def test_fused_mask_is_the_masked_product_bit_for_bit(ab, tb, threads):
    for M, N, K in SHAPES:
        fused, ref, (nf, nc) = _pair(M, N, K, tb, ab, threads)
        np.testing.assert_array_equal(fused.view(np.uint32), ref.view(np.uint32),
                                      err_msg=f"{ab} {M}x{N}x{K} tb={tb}")
        assert nf + nc >= 1  # the mask went one way or the other, never ignored
        if _C._gemm_packs_b(ab) and N >= 16 and K >= 1:
            assert nc == 0, f"{ab} {M}x{N}x{K}: a masked copy was written where B is packed"


_CHILD = """
import numpy as np, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
from pygpu import _C
import test_prune_pack as t
assert _C._gemm_packs_b("float32")
for tb in (False, True):
    for M, N, K in t.SHAPES:
        f, r, (nf, nc) = t._pair(M, N, K, tb, "float32", 2)
        assert np.array_equal(f.view(np.uint32), r.view(np.uint32)), (M, N, K, tb)
        assert (nc == 0) == (N >= 16), (M, N, K, nf, nc)
print("ok")
"""


def test_own_float32_kernel_fuses_the_mask():
    """PYGPU_ISA=avx2 selects pygpu's own float32 kernel (cpu_sgemm.c), which packs B"""
    here = os.path.dirname(os.path.abspath(__file__))
    code = _CHILD.format(root=os.path.dirname(here), tests=here)
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYGPU_ISA": "avx2"},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


def test_mask_on_a_float64_product_is_an_error():
    a = pygpu.tensor(np.ones((2, 3)))
    b = pygpu.tensor(np.ones((3, 4)))
    c = pygpu.tensor(np.zeros((2, 4)))
    with pytest.raises(TypeError, match="float32"):
        _C._test_gemm(a, b, c, False, False, 1.0, 0.0, 0, 0, None, None, None, 1,
                      pygpu.tensor(np.ones((3, 4), np.float32)))
