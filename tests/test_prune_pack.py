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
    if ab != "float32":
        a = a.astype(getattr(pygpu, ab))
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


@pytest.mark.parametrize("ab", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("tb", [False, True], ids=["B", "BT"])
@pytest.mark.parametrize("threads", [1, 2])
def test_fused_mask_is_the_masked_product_bit_for_bit(ab, tb, threads):
    for M, N, K in SHAPES:
        fused, ref, (nf, nc) = _pair(M, N, K, tb, ab, threads)
        np.testing.assert_array_equal(fused.view(np.uint32), ref.view(np.uint32),
                                      err_msg=f"{ab} {M}x{N}x{K} tb={tb}")
        assert nf + nc >= 1  # the mask went one way or the other, never ignored
        if ab == "float16":  # the convert kernel: never packs the mask, always a copy
            assert nf == 0 and nc >= 1
        elif _C._gemm_packs_b(ab) and N >= 16 and K >= 1:
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
        f, r, _ = t._pair(M, N, K, tb, "bfloat16", 2)  # the convert kernel (no AVX512_BF16)
        assert np.array_equal(f.view(np.uint32), r.view(np.uint32)), (M, N, K, tb)
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


# ---- the pruned Linear layer: fused path against the cached product --------------------

from pygpu import nn  # noqa: E402
from pygpu.nn.utils import prune  # noqa: E402

LAYER_SHAPES = [(1, 3, 1), (5, 17, 16), (64, 784, 512), (7, 301, 33), (33, 16, 10)]


def _layer_run(fuse, device, batch, fin, fout, act, amp, seed=0):
    """y, dx, dW_orig, db of one pruned Linear (fusion on or off), and whether it fused"""
    old = prune._set_mask_fusion(fuse)
    try:
        pygpu.manual_seed(seed)
        layer = nn.Linear(fin, fout).to(device)
        prune.random_unstructured(layer, "weight", amount=0.5)
        rng = np.random.default_rng(seed)
        x = pygpu.tensor(rng.standard_normal((batch, fin)).astype(np.float32)).to(device)
        x.requires_grad = True
        if amp:
            with pygpu.autocast(device.split(":")[0], dtype=pygpu.bfloat16):
                y = layer(x, activation=act)
        else:
            y = layer(x, activation=act)
        fused = bool(layer.__dict__.get("_mask_fused"))
        y.astype(pygpu.float32).sum().backward()
        out = [y.astype(pygpu.float32), x.grad, layer.weight_orig.grad, layer.bias.grad]
        return [np.asarray(t.to("cpu").numpy()) for t in out], fused, layer
    finally:
        prune._set_mask_fusion(old)


def _assert_same(a, b, what):
    for i, (p, q) in enumerate(zip(a, b)):
        np.testing.assert_array_equal(p.view(np.uint32), q.view(np.uint32),
                                      err_msg=f"{what}: output {i} (y, dx, dW, db)")


@pytest.mark.parametrize("act", [None, "relu"])
@pytest.mark.parametrize("amp", [False, True], ids=["f32", "bf16"])
def test_pruned_linear_fused_equals_cached_product(device, act, amp):
    for batch, fin, fout in LAYER_SHAPES:
        (fa, fused, layer), (ca, cached, _) = (_layer_run(True, device, batch, fin, fout, act,
                                                          amp),
                                               _layer_run(False, device, batch, fin, fout, act,
                                                          amp))
        assert not cached
        _assert_same(fa, ca, f"{device} {batch}x{fin}->{fout} act={act} amp={amp}")
        mask = layer.weight_mask.to("cpu").numpy()
        assert (fa[2][mask == 0] == 0).all()  # no gradient under the mask
        if fused:  # module.weight is still orig * mask, computed on access
            np.testing.assert_array_equal(layer.weight.to("cpu").numpy(),
                                          layer.weight_orig.detach().to("cpu").numpy() * mask)


def test_fused_path_runs_and_writes_no_masked_product():
    """Under autocast bfloat16 on a CPU with AVX512_BF16 (this project's), the pruned
    layer's forward and backward run the fused kernel: counted fused, nothing copied, and
    the hook's cache of weight * mask never filled."""
    if not _C._gemm_packs_b("bfloat16"):
        pytest.skip("no AVX512_BF16 here: the bfloat16 kernel does not run")
    before = _C._gemm_mask_counts()
    _, fused, layer = _layer_run(True, "cpu", 64, 784, 512, "relu", True)
    after = _C._gemm_mask_counts()
    assert fused
    assert after[0] - before[0] >= 2 and after[1] == before[1]  # forward and dx, no copy
    hook = next(h for h in layer._forward_pre_hooks.values()
                if isinstance(h, prune.BasePruningMethod))
    made = hook._cache  # the product the prune call itself made (module.weight's first value)
    with pygpu.no_grad():
        layer.weight_orig.mul_(0.5)  # an optimizer step's write: a new _write_stamp
    old = prune._set_mask_fusion(True)
    try:
        with pygpu.autocast("cpu", dtype=pygpu.bfloat16):
            layer(pygpu.ones(8, 784)).astype(pygpu.float32).sum().backward()
    finally:
        prune._set_mask_fusion(old)
    assert hook._cache is made  # no new weight_orig * weight_mask was materialized
    assert _C._gemm_mask_counts()[1] == after[1]


def test_remove_after_fused_forward_restores_a_plain_weight():
    _, fused, layer = _layer_run(True, "cpu", 4, 16, 16, None, True)
    expect = layer.weight_orig.detach().numpy() * layer.weight_mask.numpy()
    prune.remove(layer, "weight")
    assert "_mask_fused" not in layer.__dict__ and not layer.__dict__.get("_lazy_attrs")
    np.testing.assert_array_equal(layer.weight.detach().numpy(), expect)
    y = layer(pygpu.ones(2, 16))
    assert y.shape == (2, 16)


def test_fused_mask_bad_operands_are_errors():
    x = pygpu.ones(2, 4)
    w = pygpu.ones(3, 4)
    with pytest.raises(ValueError, match="mask"):
        _C._linear_fwd(x, w, None, 0, pygpu.ones(4, 3))
    with pytest.raises(TypeError, match="float32"):
        _C._linear_fwd(x.astype(pygpu.float64), w.astype(pygpu.float64), None, 0,
                       pygpu.ones(3, 4).astype(pygpu.float64))


_LAYER_CHILD = """
import sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
import test_prune_pack as t
for device in ("cpu", "sim"):
    for act in (None, "relu"):
        for batch, fin, fout in t.LAYER_SHAPES:
            (fa, fused, _), (ca, cached, _) = (t._layer_run(True, device, batch, fin, fout, act,
                                                            False),
                                               t._layer_run(False, device, batch, fin, fout, act,
                                                            False))
            assert fused and not cached, (device, batch, fin, fout)
            t._assert_same(fa, ca, f"{{device}} {{batch}}x{{fin}}->{{fout}} act={{act}}")
print("ok")
"""


def test_pruned_linear_float32_fused_with_the_own_kernel():
    """PYGPU_ISA=avx2: float32 pruned layers take the fused path (pygpu's own kernel packs
    the weight), bit for bit the cached product's outputs and gradients"""
    here = os.path.dirname(os.path.abspath(__file__))
    code = _LAYER_CHILD.format(root=os.path.dirname(here), tests=here)
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYGPU_ISA": "avx2"},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
