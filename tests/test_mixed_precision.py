# test_mixed_precision.py - float16/bfloat16 compute, autocast, GradScaler, master weights,
# Trainer precision and 16-bit interop.
#
# References are float32 NumPy computed on the 16-bit inputs and rounded once to the
# output dtype (ml_dtypes.bfloat16 / np.float16); tolerances are per dtype (TOL).
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import pygpu

from _helpers import ACT_CODE, ACT_NP, ACTS, act_np, dact_np

ml_dtypes = pytest.importorskip("ml_dtypes")

HALF = {"bfloat16": (pygpu.bfloat16, ml_dtypes.bfloat16), "float16": (pygpu.float16, np.float16)}
# relative tolerance of a result rounded once to the dtype, after fp32 accumulation in
# another order than NumPy's: one unit in the last place of the output
TOL = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}


def _f32(t):
    return t.detach().astype(pygpu.float32).numpy()


def _rounded(x, nd):
    return np.asarray(x, np.float32).astype(nd).astype(np.float32)


# ---- the half GEMM ------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(HALF))
def test_ones_4096_dot_accumulates_in_float32(device, name):
    dt = HALF[name][0]
    a = pygpu.ones((1, 4096), dtype=dt, device=device)
    b = pygpu.ones((4096, 1), dtype=dt, device=device)
    c = a @ b
    assert c.dtype is dt and _f32(c).tolist() == [[4096.0]]  # bf16 sums would stop at 256


@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("M,K,N,ta,tb", [(7, 600, 9, False, False), (33, 1030, 17, True, False),
                                          (5, 20, 40, False, True), (64, 513, 70, True, True),
                                          (1, 1, 1, False, False)])
def test_half_matmul_matches_float32_rounded_once(device, name, M, K, N, ta, tb):
    dt, nd = HALF[name]
    rng = np.random.default_rng(M * K + N)
    A = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)
    B = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    pa = pygpu.tensor(A, device=device).astype(dt)
    pb = pygpu.tensor(B, device=device).astype(dt)
    pa, pb = (pa.T if ta else pa), (pb.T if tb else pb)
    Ah, Bh = _rounded(A, nd), _rounded(B, nd)
    ref = (Ah.T if ta else Ah) @ (Bh.T if tb else Bh)
    got = _f32(pa @ pb)
    np.testing.assert_allclose(got, _rounded(ref, nd), rtol=TOL[name], atol=TOL[name] * 4)


def test_half_matmul_batched_and_mixed_dtypes(device):
    rng = np.random.default_rng(3)
    a = pygpu.tensor(rng.standard_normal((3, 4, 5)).astype(np.float32), device=device)
    b = pygpu.tensor(rng.standard_normal((5, 6)).astype(np.float32), device=device)
    got = a.astype(pygpu.bfloat16) @ b.astype(pygpu.bfloat16)
    assert got.dtype is pygpu.bfloat16 and got.shape == (3, 4, 6)
    ref = _f32(a.astype(pygpu.bfloat16)) @ _f32(b.astype(pygpu.bfloat16))
    np.testing.assert_allclose(_f32(got), ref, rtol=2 ** -7, atol=2 ** -6)
    # float16 with bfloat16 promotes to float32 (as PyTorch)
    mixed = a.astype(pygpu.float16) @ b.astype(pygpu.bfloat16)
    assert mixed.dtype is pygpu.float32
    z = pygpu.zeros((2, 0), dtype=pygpu.bfloat16, device=device) @ \
        pygpu.zeros((0, 3), dtype=pygpu.bfloat16, device=device)
    assert _f32(z).tolist() == [[0.0] * 3] * 2


_ACT_CODES = [ACT_CODE[n] for n in ACTS if n]  # every activation row of the op table
_EPIS = ([(0, 0)] + [(1, a) for a in _ACT_CODES] + [(2, a) for a in _ACT_CODES]
         + [(4, 0), (6, ACT_CODE["relu"])])  # (epilogue, act)


@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("out", ["same", "float32"])
@pytest.mark.parametrize("epi,act", _EPIS, ids=[f"epi{e}-act{a}" for e, a in _EPIS])
def test_half_gemm_every_epilogue_alpha_beta_and_output(name, out, epi, act):
    """The half kernel's own epilogue (csrc/backends/cpu/cpu_gemm_half.c) through the GEMM
    contract: bias, activation, DACT, BGRAD, alpha and beta, a float32 C (sgemm writes it
    directly) or a half C (rounded once), K cut into blocks (K=1100), and K = 0."""
    dt, nd = HALF[name]
    cdt, cnd = (dt, nd) if out == "same" else (pygpu.float32, np.float32)
    for (M, N, K, ta, tb, alpha, beta, threads) in [(37, 70, 1100, False, True, 1.0, 0.0, 2),
                                                    (20, 33, 300, True, False, 0.5, -2.0, 1),
                                                    (9, 12, 0, False, False, 1.0, 0.5, 1)]:
        rng = np.random.default_rng(M + N + K + epi)
        A = _rounded(rng.standard_normal((K, M) if ta else (M, K)), nd)
        B = _rounded(rng.standard_normal((N, K) if tb else (K, N)) * 0.1, nd)
        C0 = _rounded(rng.standard_normal((M, N)), cnd)
        bias = _rounded(rng.standard_normal((1, N)), cnd)
        aux = _rounded(rng.random((M, N)) - 0.25, cnd)
        pc = pygpu.tensor(C0).astype(cdt)
        pbg = pygpu.zeros((1, N)).astype(cdt)
        pygpu._C._test_gemm(pygpu.tensor(A).astype(dt), pygpu.tensor(B).astype(dt), pc, ta, tb,
                            alpha, beta, epi, act, pygpu.tensor(bias).astype(cdt),
                            pygpu.tensor(aux).astype(cdt), pbg, threads)
        ref = alpha * ((A.T if ta else A).astype(np.float64) @ (B.T if tb else B)) + beta * C0
        if epi & 1:
            ref = ref + bias[0]
        y = aux.astype(np.float64)
        if epi & 2:
            ref = dact_np(ref, y, act)
        else:
            ref = act_np(ref, act)
        tol = TOL[name] if out == "same" else 1e-5
        got = _f32(pc)
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * 4)
        if epi & 4:
            np.testing.assert_allclose(_f32(pbg)[0], got.astype(np.float64).sum(axis=0),
                                       rtol=tol, atol=tol * 4)


# every blocking edge of the bfloat16 kernels: M around the 6- and 8-row tiles and the
# 144/192-row blocks, N around the 16/32/48-column tiles and the 1536/3072 blocks, K odd
# (a pair word's zero half), at 256 and past it (K slices), both transposes
_EDGES = [(1, 1, 1), (7, 15, 2), (8, 16, 3), (9, 17, 255), (15, 33, 256), (16, 47, 257),
          (17, 48, 513), (193, 49, 31), (6, 1537, 5), (145, 3073, 4), (40, 70, 300)]


@pytest.mark.parametrize("M,N,K", _EDGES, ids=[f"{m}x{n}x{k}" for m, n, k in _EDGES])
def test_bfloat16_kernel_blocking_edges_alpha_beta_and_transposes(M, N, K):
    """Whatever kernel this build runs for bfloat16 (pygpu._C._half_gemm_kernel: the
    convert kernel, the AVX512_BF16 one, or that one under SIMDe emulation in CI's
    emulation lane), against the float64 product of the same bfloat16 operands: a float32
    C with alpha and beta, on one thread and on two (panels)."""
    rng = np.random.default_rng(M * 7 + N * 3 + K)
    nd = ml_dtypes.bfloat16
    for ta in (False, True):
        for tb in (False, True):
            A = _rounded(rng.standard_normal((K, M) if ta else (M, K)), nd)
            B = _rounded(rng.standard_normal((N, K) if tb else (K, N)), nd)
            C0 = rng.standard_normal((M, N)).astype(np.float32)
            ref = 0.5 * ((A.T if ta else A).astype(np.float64) @ (B.T if tb else B)) - 2.0 * C0
            # float32 accumulation of K products: a bound from the magnitudes summed
            scale = np.abs(A.T if ta else A).astype(np.float64) @ np.abs(B.T if tb else B)
            for threads in (1, 2):
                pc = pygpu.tensor(C0)
                pygpu._C._test_gemm(pygpu.tensor(A).astype(pygpu.bfloat16),
                                    pygpu.tensor(B).astype(pygpu.bfloat16), pc, ta, tb, 0.5,
                                    -2.0, 0, 0, None, None, None, threads)
                err = np.abs(pc.numpy() - ref) - 2 ** -20 * (scale + 4 * np.abs(C0))
                assert err.max() <= 0, (ta, tb, threads, float(err.max()))


@pytest.mark.parametrize("name", sorted(HALF))
def test_half_linear_with_a_float32_weight_is_the_cast_weight_exactly(device, name):
    """autocast's linear hands the float32 weight to the half layer, which rounds each value
    as it packs it (pg_gemm.h b_f32): bit for bit the layer on weight.astype(dtype) forward
    and for dW and db, with values that round up, down, to even, to inf and NaN. The
    backward's dx uses the float32 weight as it is (b_exact) where the kernel computes in
    float32 (convert_f32); the AVX512_BF16 kernel multiplies by the rounded weight, as
    PyTorch's autocast backward does, so its dx is the cast weight's bit for bit. So does
    cuda, whose backward runs both products on 16-bit operands (tensor cores) since
    issue 38; the first H200 run's host had AVX512_BF16 and so expected the rounded
    weight from a cuda kernel that used the float32 one."""
    dt, _ = HALF[name]
    rng = np.random.default_rng(11)
    w = rng.standard_normal((70, 300)).astype(np.float32)
    w[0, :6] = [np.nan, np.inf, -np.inf, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 3.4e38]
    w[1:, :] += np.float32(2 ** -12)  # off the half grid everywhere
    x = pygpu.tensor(rng.standard_normal((33, 300)).astype(np.float32), device=device).astype(dt)
    b = pygpu.tensor(rng.standard_normal(70).astype(np.float32), device=device).astype(dt)
    g = pygpu.tensor(rng.standard_normal((33, 70)).astype(np.float32), device=device).astype(dt)
    w32 = pygpu.tensor(w, device=device)
    wl = w32.astype(dt)
    with np.errstate(invalid="ignore"):
        for act in (0, 1):
            y1, y2 = pygpu._C._linear_fwd(x, w32, b, act), pygpu._C._linear_fwd(x, wl, b, act)
            assert y1.dtype is dt
            assert np.array_equal(_f32(y1), _f32(y2), equal_nan=True)
            out1 = pygpu._C._linear_bwd(g, x, w32, y1, act, True, True, True)
            out2 = pygpu._C._linear_bwd(g, x, wl, y2, act, True, True, True)
            for r1, r2 in zip(out1[1:], out2[1:]):
                assert np.array_equal(_f32(r1), _f32(r2), equal_nan=True)
            assert out1[1].dtype is pygpu.float32 and out1[2].dtype is pygpu.float32
            assert out1[0].dtype is dt
    # dx = dz @ W: the float64 product of the same operands (W's float32 values, or W
    # rounded to bf16 by the AVX512_BF16 kernel), rounded once to the half dtype
    wc = pygpu.tensor(w[1:], device=device)
    gc = g[:, 1:]
    dx = pygpu._C._linear_bwd(gc.contiguous(), x, wc, None, 0, False, True, True)[0]
    dx_cast = pygpu._C._linear_bwd(gc.contiguous(), x, wc.astype(dt), None, 0, False, True,
                                   True)[0]
    rounds_w = (x.device.type == "cuda"
                or pygpu._C._half_gemm_kernel(dt).startswith("avx512_bf16"))
    w_used = _rounded(w[1:], HALF[name][1]) if rounds_w else w[1:]
    ref = _f32(gc).astype(np.float64) @ w_used.astype(np.float64)
    np.testing.assert_allclose(_f32(dx), ref, rtol=TOL[name], atol=TOL[name] * 4)
    # the cast weight's dx: the same where W is rounded, off by W's rounding where it is not
    assert np.array_equal(_f32(dx), _f32(dx_cast)) == rounds_w


def test_float32_weight_rounding_agrees_at_every_isa_level():
    code = ("import numpy as np, pygpu\n"
            "r = np.random.default_rng(5)\n"
            "x = pygpu.tensor(r.standard_normal((9, 260)).astype(np.float32))\n"
            "w = pygpu.tensor(r.standard_normal((40, 260)).astype(np.float32) + 2 ** -12)\n"
            "for dt in (pygpu.bfloat16, pygpu.float16):\n"
            "    y = pygpu._C._linear_fwd(x.astype(dt), w, None, 0).astype(pygpu.float32)\n"
            "    print(y.numpy().tobytes().hex()[:4000])\n")
    outs = []
    for isa in ("baseline", "avx2"):
        env = dict(os.environ, PYGPU_ISA=isa)
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                   text=True, check=True).stdout)
    assert outs[0] == outs[1] and len(outs[0]) > 1000


EMULATED = "avx512_bf16 (SIMDe emulation)"  # the test build of CI's emulation lane


def test_the_avx512_bf16_kernel_is_never_chosen_without_the_instructions():
    used = pygpu.cpu_isa()
    kernel = pygpu._C._half_gemm_kernel(pygpu.bfloat16)
    assert pygpu._C._half_gemm_kernel(pygpu.float16) == "convert_f32"  # no fp16 dot on x86
    if kernel == EMULATED:  # runs on any CPU, whatever PYGPU_ISA says
        return
    assert kernel == ("avx512_bf16" if used == "avx512_bf16" else "convert_f32")
    code = ("import pygpu; print(pygpu.cpu_isa(), pygpu._C._half_gemm_kernel(pygpu.bfloat16))")
    env = dict(os.environ, PYGPU_ISA="avx2")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[1] == "convert_f32" and out[0] in ("avx2", "baseline")


# ---- casts: one rounding, NumPy's float16 and ml_dtypes' bfloat16 bit for bit ------------

@pytest.mark.parametrize("name", sorted(HALF))
def test_float32_casts_round_to_nearest_even_with_specials(name):
    dt, nd = HALF[name]
    rng = np.random.default_rng(0)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-45, 3.4e38,
                         65520.0, 65504.0, 6e-8, 3e-8, 1e-5, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8],
                        np.float32)
    x = np.concatenate([rng.standard_normal(10007).astype(np.float32) * 1e3, specials])
    h = pygpu.tensor(x).astype(dt)
    with np.errstate(over="ignore"):
        ref = x.astype(nd)
    got = h.numpy()
    nan = np.isnan(ref.astype(np.float32))
    assert np.array_equal(got.view(np.uint16)[~nan], ref.view(np.uint16)[~nan])
    assert np.isnan(got.astype(np.float32)[nan]).all()
    back = h.astype(pygpu.float32).numpy()  # widening is exact
    assert np.array_equal(back[~nan], ref.astype(np.float32)[~nan])


# ---- fused linear on half tensors ------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("act", ACTS)
def test_half_linear_forward_and_backward(device, name, act):
    dt, nd = HALF[name]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((37, 50)).astype(np.float32)
    w = (rng.standard_normal((20, 50)) * 0.2).astype(np.float32)
    b = rng.standard_normal(20).astype(np.float32)
    g = rng.standard_normal((37, 20)).astype(np.float32)
    px, pw, pb = (pygpu.tensor(v, device=device).astype(dt).requires_grad_() for v in (x, w, b))
    y = pygpu.nn.functional.linear(px, pw, pb, activation=act)
    assert y.dtype is dt
    y.backward(pygpu.tensor(g, device=device).astype(dt))
    xf, wf, bf, gf = (_rounded(v, nd) for v in (x, w, b, g))
    z = xf @ wf.T + bf
    yr = ACT_NP[act][0](z)
    tol = TOL[name]
    np.testing.assert_allclose(_f32(y), yr, rtol=2 * tol, atol=2 * tol)
    yv = _f32(y)
    dz = gf * ACT_NP[act][1](yv)
    for got, ref in ((px.grad, dz @ wf), (pw.grad, dz.T @ xf), (pb.grad, dz.sum(0))):
        assert got.dtype is dt
        scale = np.abs(ref).max()
        np.testing.assert_allclose(_f32(got) / scale, ref / scale, atol=8 * tol)


# The half kernels sit in the GEMM kernel table (cpu_gemm_half.c's pg_cpu_gemm_half_register),
# so the scheduler (cpu_gemm_schedule.c) cuts these products into panels on the pool, and the
# fused linear backward cuts dW/db by output features, as for float32 (test_training_schedule.py).
@pytest.fixture
def threads():
    before = pygpu.get_num_threads()
    yield pygpu.set_num_threads
    pygpu.set_num_threads(before)


@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("nthreads", [1, 2])
def test_half_products_cut_into_panels_match_float32(threads, nthreads, name):
    threads(nthreads)
    dt, nd = HALF[name]
    tol = TOL[name]
    rng = np.random.default_rng(11)
    # matmul (rows and columns panels) and batched matmul (batch panels), above the grain
    for sa, sb in (((130, 300), (300, 160)), ((4, 60, 200), (200, 90))):
        A = rng.standard_normal(sa).astype(np.float32)
        B = rng.standard_normal(sb).astype(np.float32)
        got = _f32(pygpu.tensor(A).astype(dt) @ pygpu.tensor(B).astype(dt))
        ref = _rounded(A, nd) @ _rounded(B, nd)
        scale = np.abs(ref).max()
        np.testing.assert_allclose(got / scale, ref / scale, atol=2 * tol)
    # the fused linear layer: forward (BIAS|relu epilogue), backward (prologue + dW per slice)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    w = (rng.standard_normal((130, 300)) / np.sqrt(300)).astype(np.float32)
    b = rng.standard_normal(130).astype(np.float32)
    g = rng.standard_normal((64, 130)).astype(np.float32)
    px, pw, pb = (pygpu.tensor(v).astype(dt).requires_grad_() for v in (x, w, b))
    y = pygpu.nn.functional.linear(px, pw, pb, activation="relu")
    y.backward(pygpu.tensor(g).astype(dt))
    xf, wf, bf, gf = (_rounded(v, nd) for v in (x, w, b, g))
    yr = np.maximum(xf @ wf.T + bf, 0)
    np.testing.assert_allclose(_f32(y), yr, rtol=2 * tol, atol=2 * tol)
    dz = _rounded(gf * (_f32(y) > 0), nd)
    for got, ref in ((px.grad, dz @ wf), (pw.grad, dz.T @ xf), (pb.grad, dz.sum(0))):
        assert got.dtype is dt
        scale = np.abs(ref).max()
        np.testing.assert_allclose(_f32(got) / scale, ref / scale, atol=8 * tol)


# ---- autocast -------------------------------------------------------------------------------

def test_autocast_policy_low_ops_and_float32_ops(device):
    dev_type = pygpu.device(device).type
    w = pygpu.randn(4, 3, device=device).requires_grad_()
    x = pygpu.randn(5, 3, device=device)
    labels = pygpu.tensor([0, 1, 2, 3, 0], device=device)
    with pygpu.autocast(dev_type):
        assert pygpu.is_grad_enabled()
        assert pygpu.amp.is_autocast_enabled(dev_type)
        y = x @ w.T
        z = pygpu.nn.functional.linear(x, w, activation="relu")
        assert y.dtype is pygpu.bfloat16 and z.dtype is pygpu.bfloat16
        assert y.sum().dtype is pygpu.float32 and y.mean(axis=0).dtype is pygpu.float32
        assert pygpu.softmax(y).dtype is pygpu.float32
        assert pygpu.log_softmax(y).dtype is pygpu.float32
        loss = pygpu.cross_entropy(z, labels)
        assert loss.dtype is pygpu.float32
        assert (y + 1).dtype is pygpu.bfloat16  # other ops: the inputs' dtype
        with pygpu.autocast(dev_type, enabled=False):
            assert (x @ w.T).dtype is pygpu.float32
            assert not pygpu.amp.is_autocast_enabled(dev_type)
        with pygpu.autocast(dev_type, dtype=pygpu.float16):
            assert (x @ w.T).dtype is pygpu.float16
        assert (x @ w.T).dtype is pygpu.bfloat16
    assert (x @ w.T).dtype is pygpu.float32
    loss.backward()
    assert w.grad.dtype is pygpu.float32 and w.grad.shape == (4, 3)
    other = "sim" if dev_type != "sim" else "cpu"
    with pygpu.autocast(other):  # a region for another device type leaves these alone
        assert (x @ w.T).dtype is pygpu.float32


def test_autocast_decorator_threads_and_cache():
    w = pygpu.randn(3, 3).requires_grad_()
    x = pygpu.randn(2, 3)

    @pygpu.autocast("cpu", dtype=pygpu.float16)
    def f(a):
        return a @ w

    assert f(x).dtype is pygpu.float16 and (x @ w).dtype is pygpu.float32
    seen = []
    with pygpu.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append((x @ w).dtype))
        t.start()
        t.join()
        from pygpu.amp import autocast_mode
        a1, = autocast_mode.cast_inputs("linear", w)
        a2, = autocast_mode.cast_inputs("matmul", w)
        assert a1 is a2  # a parameter is cast once per region, not once per use
        b1, = autocast_mode.cast_inputs("linear", x)
        assert b1.dtype is pygpu.bfloat16  # non-parameters are cast, not cached
    assert seen == [pygpu.float32]  # autocast is per thread
    a3, = autocast_mode.cast_inputs("linear", w)
    assert a3 is w  # outside: untouched
    with pytest.raises(ValueError, match="device_type"):
        pygpu.autocast("tpu")
    with pytest.raises(ValueError, match="bfloat16 or pygpu.float16"):
        pygpu.autocast("cpu", dtype=pygpu.float64)


@pytest.mark.parametrize("name,tol", [("bfloat16", 0.1), ("float16", 0.005)])
def test_gradients_under_autocast_match_float64(device, name, tol):
    """Gradient check: float32 parameters trained under autocast get float32 gradients
    within the low dtype's precision of the float64 ones (norm-wise; bfloat16's 8 bits
    give PyTorch's autocast the same few-percent error on this model)."""
    dev_type = pygpu.device(device).type
    rng = np.random.default_rng(5)
    X = rng.standard_normal((64, 16)).astype(np.float32)
    y = rng.integers(0, 4, 64)
    pygpu.manual_seed(0)
    m32 = pygpu.nn.MLP([16, 32, 4]).to(device)
    m64 = pygpu.nn.MLP([16, 32, 4]).to(device).double()
    m64.load_state_dict({k: v.astype(pygpu.float64) for k, v in m32.state_dict().items()})
    xb, yb = pygpu.tensor(X, device=device), pygpu.tensor(y, device=device)
    with pygpu.autocast(dev_type, dtype=HALF[name][0]):
        loss = pygpu.cross_entropy(m32(xb), yb)
    loss.backward()
    pygpu.cross_entropy(m64(xb.astype(pygpu.float64)), yb).backward()
    for (pname, p32), p64 in zip(m32.named_parameters(), m64.parameters()):
        assert p32.grad.dtype is pygpu.float32
        g32, g64 = p32.grad.numpy(), p64.grad.numpy()
        err = np.linalg.norm(g32 - g64) / np.linalg.norm(g64)
        assert err < tol, f"{pname}: relative gradient error {err:.4f}"


# ---- GradScaler -----------------------------------------------------------------------------

def _scaler_setup(device):
    pygpu.manual_seed(1)
    model = pygpu.nn.Linear(4, 2).to(device)
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1)
    x = pygpu.randn(8, 4, device=device)
    return model, opt, x


def test_autocast_linear_weight_gradient_is_float32_never_rounded(device):
    """Under autocast the parameters get float32 dW and db straight from the float32
    accumulators: the product of the bf16 operands, not that product rounded to bf16
    (which a cast node's backward would give: a relative error up to 2^-9)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    lin = pygpu.nn.Linear(300, 40).to(device)
    g = rng.standard_normal((64, 40)).astype(np.float32)
    with pygpu.autocast(device):
        y = lin(pygpu.tensor(x, device=device))
    assert y.dtype is pygpu.bfloat16
    gb = pygpu.tensor(g, device=device).astype(pygpu.bfloat16)
    y.backward(gb)
    nd = ml_dtypes.bfloat16
    ref = _rounded(g, nd).astype(np.float64).T @ _rounded(x, nd).astype(np.float64)
    assert lin.weight.grad.dtype is pygpu.float32 and lin.bias.grad.dtype is pygpu.float32
    np.testing.assert_allclose(lin.weight.grad.numpy(), ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(lin.bias.grad.numpy(), _rounded(g, nd).sum(axis=0), rtol=1e-5,
                               atol=1e-4)


def test_grad_scaler_skips_overflow_backs_off_and_grows(device):
    model, opt, x = _scaler_setup(device)
    scaler = pygpu.amp.GradScaler(init_scale=2.0 ** 16, growth_interval=3)
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    opt.zero_grad()
    loss = (model(x) * 1e36).sum()  # times 2**16: the gradients overflow to inf
    scaler.scale(loss).backward()
    scaler.step(opt)
    assert scaler.last_step_skipped
    scaler.update()
    assert scaler.get_scale() == 2.0 ** 15
    for k, v in model.state_dict().items():
        assert np.array_equal(v.numpy().view(np.uint32), before[k].view(np.uint32)), k
    for i in range(3):
        opt.zero_grad()
        scaler.scale((model(x) ** 2).mean() if hasattr(pygpu.Tensor, "__pow__") else
                     (model(x) * model(x)).mean()).backward()
        scaler.step(opt)
        assert not scaler.last_step_skipped
        scaler.update()
        assert scaler.get_scale() == (2.0 ** 16 if i == 2 else 2.0 ** 15)
    changed = any(not np.array_equal(v.numpy(), before[k]) for k, v in model.state_dict().items())
    assert changed


def test_grad_scaler_unscales_once_and_matches_unscaled_training(device):
    model, opt, x = _scaler_setup(device)
    scaler = pygpu.amp.GradScaler(init_scale=1024.0)
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    scaler.unscale_(opt)
    g_scaled = model.weight.grad.numpy().copy()
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    model2, opt2, _ = _scaler_setup(device)
    opt2.zero_grad()
    model2(x).sum().backward()
    np.testing.assert_allclose(g_scaled, model2.weight.grad.numpy(), rtol=1e-6)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step"):
        scaler.step(opt)
    scaler.update()
    sd = scaler.state_dict()
    assert sd["scale"] == 1024.0 and sd["_growth_tracker"] == 1
    other = pygpu.amp.GradScaler()
    other.load_state_dict(sd)
    assert other.get_scale() == 1024.0 and other.state_dict() == sd
    off = pygpu.amp.GradScaler(enabled=False)
    loss = model(x).sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(ValueError, match="growth_factor"):
        pygpu.amp.GradScaler(growth_factor=0.5)


def test_grad_scaler_reads_the_device_once_per_step(fresh_stats):
    model, opt, x = _scaler_setup("sim:0")
    scaler = pygpu.amp.GradScaler()
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    with pygpu.track() as t:
        scaler.step(opt)
        scaler.update()
    assert sum(t.stats.implicit.values()) == 1


# ---- modules, optimizers: float32 master weights --------------------------------------------

@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_half_parameters_keep_a_float32_master(opt_name):
    model = pygpu.nn.Linear(4, 1)
    with pygpu.no_grad():
        model.weight[...] = 1.0
        model.bias[...] = 1.0
    assert model.bfloat16() is model and model.weight.dtype is pygpu.bfloat16
    lr = 1e-3 if opt_name == "SGD" else 1e-3
    opt = getattr(pygpu.optim, opt_name)(model.parameters(), lr=lr)
    for _ in range(10):  # each update 1e-3, below half of bfloat16's ulp at 1.0 (2**-8)
        model.weight.grad = pygpu.ones((1, 4), dtype=pygpu.bfloat16)
        model.bias.grad = pygpu.ones((1,), dtype=pygpu.bfloat16)
        opt.step()
    state = opt.state[id(model.weight)]
    assert state["master"].dtype is pygpu.float32
    assert all(v.dtype is pygpu.float32 for v in state.values() if isinstance(v, pygpu.Tensor))
    np.testing.assert_allclose(state["master"].numpy(), 0.99, rtol=1e-4)
    assert _f32(model.weight).max() < 1.0  # without the master it would still be 1.0
    assert model.half().weight.dtype is pygpu.float16
    assert model.float().weight.dtype is pygpu.float32
    assert model.to(pygpu.bfloat16).weight.dtype is pygpu.bfloat16


# ---- Trainer --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order].astype(np.int64)
    n = len(X) * 3 // 4
    return X[:n], y[:n], X[n:], y[n:]


@pytest.mark.parametrize("precision", ["bf16-mixed", "16-mixed"])
def test_digits_reach_95_percent_with_mixed_precision(device, digits, precision):
    Xtr, ytr, Xte, yte = digits
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP([64, 64, 10])
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    trainer = pygpu.Trainer(model, opt, pygpu.nn.CrossEntropyLoss(), device=device,
                            precision=precision)
    history = trainer.fit(Xtr, ytr, epochs=12, batch_size=32, progress=False, seed=0)
    acc = trainer.evaluate(Xte, yte)["accuracy"]
    assert acc >= 0.95, f"{precision} on {device}: held-out accuracy {acc:.3f}"
    assert model.weight.dtype is pygpu.float32 if hasattr(model, "weight") else True
    assert all(p.dtype is pygpu.float32 for p in model.parameters())
    assert history[-1]["precision"] == precision
    if precision == "16-mixed":
        assert history[-1]["skipped_steps"] >= 0 and history[-1]["scale"] > 0
    with pytest.raises(ValueError, match="precision"):
        pygpu.Trainer(model, opt, pygpu.nn.CrossEntropyLoss(), precision="8-mixed")


def test_a_bf16_batch_moves_half_the_bytes(digits, fresh_stats):
    Xtr, ytr, _, _ = digits
    X, y = Xtr[:256], ytr[:256]
    bytes_by = {}
    for precision in ("32", "bf16-mixed"):
        pygpu.manual_seed(0)
        model = pygpu.nn.MLP([64, 32, 10]).to("sim:0")
        opt = pygpu.optim.SGD(model.parameters(), lr=0.1)
        h = pygpu.Trainer(model, opt, pygpu.nn.CrossEntropyLoss(), precision=precision).fit(
            X, y, epochs=1, batch_size=64, progress=False, shuffle=False)
        bytes_by[precision] = h[0]["h2d_bytes"]
    assert bytes_by["32"] == X.nbytes + y.nbytes
    assert bytes_by["bf16-mixed"] == X.nbytes // 2 + y.nbytes


# ---- interop --------------------------------------------------------------------------------

def test_bfloat16_numpy_export_uses_ml_dtypes_or_says_how_to_get_it(monkeypatch):
    t = pygpu.tensor([1.5, -2.0, 3.0], dtype=pygpu.bfloat16)
    a = t.numpy()
    assert a.dtype == np.dtype(ml_dtypes.bfloat16) and a.astype(np.float32).tolist() == [1.5, -2, 3]
    a[0] = 7  # a view, as for the other dtypes
    assert t.tolist()[0] == 7.0
    back = pygpu.tensor(a)
    assert back.dtype is pygpu.bfloat16 and back.tolist() == [7.0, -2.0, 3.0]
    assert pygpu.from_numpy(a).dtype is pygpu.bfloat16

    def missing():
        raise ImportError("No module named 'ml_dtypes'")

    monkeypatch.setattr(pygpu._dtype, "_import_ml_dtypes", missing)
    with pytest.raises(TypeError, match=r"pip install ml_dtypes.*astype\(pygpu.float32\)"):
        t.numpy()


def test_safetensors_round_trip_f16_bf16_exactly(tmp_path):
    bits = np.array([0x3fc0, 0xc000, 0x0001, 0x7f80, 0xff80, 0x7fc1, 0x8000, 0x0000, 0x7f7f],
                    np.uint16)
    state = {"bf": pygpu.tensor(bits.view(ml_dtypes.bfloat16)),
             "f16": pygpu.tensor(np.array([1.5, 6e-8, 65504.0, -0.0, np.inf], np.float16)),
             "f32": pygpu.ones(3)}
    path = tmp_path / "half.safetensors"
    pygpu.save(state, path)
    from safetensors import safe_open
    with safe_open(str(path), "np") as f:
        assert f.get_slice("bf").get_dtype() == "BF16" and f.get_slice("f16").get_dtype() == "F16"
    back = pygpu.load(path)
    for k, v in state.items():
        assert back[k].dtype is v.dtype
        assert back[k].numpy().tobytes() == v.numpy().tobytes(), k


def test_dlpack_exports_bfloat16_as_kdlbfloat():
    torch = pytest.importorskip("torch")
    t = pygpu.tensor([1.5, -2.0], dtype=pygpu.bfloat16)
    tt = torch.from_dlpack(t)
    assert tt.dtype == torch.bfloat16 and tt.float().tolist() == [1.5, -2.0]
    assert pygpu.from_dlpack(torch.tensor([0.5], dtype=torch.bfloat16)).dtype is pygpu.bfloat16


# ---- docs -----------------------------------------------------------------------------------

def test_the_mixed_precision_page_runs():
    import re
    path = os.path.join(os.path.dirname(__file__), "..", "docs", "mixed_precision.md")
    with open(path) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 2  # the example and the training loop (and how half ops run)
    ns = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/mixed_precision.md python block {i}", "exec"), ns)
    assert ns["model"].layers[0].weight.dtype is pygpu.float32


def test_estimate_memory_follows_precision():
    model = pygpu.nn.MLP([784, 512, 10])
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    full = pygpu.nn.estimate_memory(model, 512, opt)
    mixed = pygpu.nn.estimate_memory(model, 512, opt, precision="bf16-mixed")
    assert mixed.gradients == full.gradients and mixed.optimizer_state == full.optimizer_state
    assert mixed.parameters > full.parameters  # + the per-step 16-bit weight copies
    assert mixed.activations * 2 == full.activations
    with pytest.raises(ValueError, match="precision"):
        pygpu.nn.estimate_memory(model, 512, opt, precision="fp8")


def test_main_job_trains_with_precision(capsys):
    from pygpu.tools import mlp_demo
    rec = mlp_demo.train("sim:0", steps=3, batch=16, precision="bf16-mixed")
    assert rec["precision"] == "bf16-mixed" and np.isfinite(rec["loss"])
    assert rec["h2d_bytes"] == 3 * 16 * (784 * 2 + 8)  # bfloat16 batches, int64 labels


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_fused_unscale_scales_in_place_and_raises_the_flag(device, dtype):
    dt = pygpu._dtype.to_dtype(dtype)
    g = pygpu.tensor([2.0, -4.0, 8.0], device=device).astype(dt)
    flag = pygpu.zeros((), device=device)
    pygpu._C._amp_unscale_(g, 0.25, flag)
    assert g.astype(pygpu.float32).tolist() == [0.5, -1.0, 2.0] and float(flag) == 0.0
    bad = pygpu.tensor([1.0, float("inf"), float("nan")], device=device).astype(dt)
    pygpu._C._amp_unscale_(bad, 0.5, flag)
    assert float(flag) == 1.0
    pygpu._C._amp_unscale_(g, 1.0, flag)  # a later finite gradient never lowers it
    assert float(flag) == 1.0
    with pytest.raises(TypeError, match="float32"):
        pygpu._C._amp_unscale_(g, 1.0, pygpu.zeros((), dtype=pygpu.float64, device=device))
    with pytest.raises(ValueError, match="contiguous"):
        pygpu._C._amp_unscale_(pygpu.ones((2, 2), device=device).T[0], 1.0, flag)
