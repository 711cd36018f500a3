# test_sgemm_dnnl.py - float32 GEMM panels on oneDNN's sgemm (csrc/backends/cpu/cpu_sgemm_dnnl.c):
# every path (PYGPU_SGEMM=auto|dnnl|openblas) under every forced ISA gives torch's products
# within float32 tolerance at odd shapes, both transposes, alpha/beta, sizes 0 and 1 and the
# fused bias + ReLU epilogue; the paths are told apart by their bits (so the test fails if
# the dnnl path never runs); auto follows the table (few rows: oneDNN, 512^3: OpenBLAS, on
# AVX-512); repeated calls repeat their bits; a child forked after oneDNN loaded uses OpenBLAS.
# Each configuration runs in a child process: PYGPU_SGEMM and PYGPU_ISA are read once.
import json
import os
import subprocess
import sys
import textwrap

import pytest

import pygpu
from pygpu.backends import mkldnn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(not mkldnn.is_available(),
                                reason=f"oneDNN is not available: {mkldnn.unavailable_reason()}")

CHILD = textwrap.dedent("""
    import hashlib, json, os, sys
    import numpy as np
    import pygpu
    import pygpu.nn.functional as F
    rng = np.random.default_rng(7)
    out = {"bits": {}, "repeat": True}
    # (M, K, N): the few-rows and short-K classes, a large one, odd and edge sizes
    SHAPES = [(64, 784, 512), (65, 192, 576), (32, 64, 64), (300, 64, 200), (512, 512, 512), (1, 5, 7),
              (3, 1, 2), (129, 130, 17), (7, 300, 1), (0, 4, 5), (4, 0, 5), (5, 4, 0)]
    def h(a):
        return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]
    for M, K, N in SHAPES:
        for ta in (0, 1):
            for tb in (0, 1):
                A = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)
                B = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
                pa, pb = pygpu.tensor(A), pygpu.tensor(B)
                pa = pa.t() if ta else pa
                pb = pb.t() if tb else pb
                ref = (A.T if ta else A).astype(np.float64) @ (B.T if tb else B).astype(np.float64)
                r = (pa @ pb).numpy()
                assert r.shape == ref.shape, (r.shape, ref.shape)
                np.testing.assert_allclose(r, ref, rtol=1e-4, atol=1e-4 * (1 + np.sqrt(K)))
                out["repeat"] &= h((pa @ pb).numpy()) == h(r)
                C0 = rng.standard_normal((M, N)).astype(np.float32)
                r2 = pygpu.addmm(pygpu.tensor(C0), pa, pb, beta=0.5, alpha=-2.0).numpy()
                np.testing.assert_allclose(r2, 0.5 * C0 - 2.0 * ref, rtol=1e-4,
                                           atol=1e-3 * (1 + np.sqrt(K)))
                out["bits"][f"{M}x{K}x{N}:{ta}{tb}"] = h(r)
    # a linear layer's fused bias + ReLU on the panels
    x = rng.standard_normal((64, 784)).astype(np.float32)
    w = rng.standard_normal((512, 784)).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32)
    y = F.relu(F.linear(pygpu.tensor(x), pygpu.tensor(w), pygpu.tensor(b))).numpy()
    np.testing.assert_allclose(y, np.maximum(x.astype(np.float64) @ w.T + b, 0), rtol=1e-4,
                               atol=1e-3)
    if sys.argv[1] == "fork":  # a child forked after oneDNN ran keeps OpenBLAS
        A = rng.standard_normal((64, 784)).astype(np.float32)
        B = rng.standard_normal((784, 512)).astype(np.float32)
        out["parent"] = h((pygpu.tensor(A) @ pygpu.tensor(B)).numpy())
        r, w_ = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w_, h((pygpu.tensor(A) @ pygpu.tensor(B)).numpy()).encode())
            os._exit(0)
        os.close(w_)
        out["child"] = os.read(r, 64).decode()
        os.waitpid(pid, 0)
    print("JSON " + json.dumps(out))
""")


def run(mode, isa=None, what="plain"):
    env = dict(os.environ, PYGPU_SGEMM=mode)
    env.pop("PYGPU_ISA", None)
    if isa:
        env["PYGPU_ISA"] = isa
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", CHILD, what], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(next(x for x in p.stdout.splitlines() if x.startswith("JSON "))[5:])


@pytest.mark.parametrize("isa", [None, "avx512", "avx2", "baseline"])
def test_every_path_matches_and_repeats(isa):
    got = {m: run(m, isa) for m in ("dnnl", "openblas", "auto")}
    for m, r in got.items():
        assert r["repeat"], (m, isa)
    dnnl, blas = got["dnnl"]["bits"], got["openblas"]["bits"]
    # the forced paths are different code: their bits differ at the few-rows shapes
    differ = [k for k in dnnl if k.startswith(("64x784x512", "65x192x576")) and dnnl[k] != blas[k]]
    assert differ, "PYGPU_SGEMM=dnnl gave OpenBLAS's bits: oneDNN's sgemm never ran"
    if isa in (None, "avx512") and pygpu.cpu_isa(detected=True).startswith("avx512"):
        auto = got["auto"]["bits"]
        # few rows and short K: oneDNN; 512^3 and under 2^19 multiply-adds: OpenBLAS (the
        # table in cpu_sgemm_dnnl.c)
        for k in ("64x784x512:01", "65x192x576:01", "300x64x200:00"):
            assert auto[k] == dnnl[k], k
        for k in ("512x512x512:00", "512x512x512:11", "32x64x64:01"):
            assert auto[k] == blas[k], k


def test_forked_child_keeps_openblas():
    r = run("dnnl", None, "fork")
    blas = run("openblas", None, "fork")
    assert r["parent"] != blas["parent"]  # oneDNN ran in the parent
    assert r["child"] == blas["parent"]   # and OpenBLAS in the forked child
