# test_cuda_half.py - float16/bfloat16 on the CUDA backend: casts, fills,
# elementwise ops, reductions, arange, the cublasGemmEx product and the fused unscale.
#
# The contract (csrc/core/pg_node.h): each element is loaded, computed in float32 and
# rounded to nearest-even once at the store; sums accumulate in float32; compares give
# bool, argmax int64; casts between float dtypes round once, with NaN/inf/subnormals as
# NumPy's float16 and ml_dtypes.bfloat16. So the references are NumPy float32 on the
# 16-bit inputs, rounded once, and the CPU backend running the same ops: bit for bit
# where float32 arithmetic is correctly rounded (+ - * / max min, casts, compares), one
# unit in the last place of the half result where the device's libm may differ from
# the host's (exp, log, tanh, sigmoid), a per-dtype tolerance for sums and products
# (float32 accumulation in another order).
#
# These need a GPU and skip cleanly without one (no GPU has been lent to this project
# yet: docs/cuda.md's table). `pytest --device cuda` also runs tests/test_mixed_precision.py
# on cuda, which covers autocast, GradScaler and training in half there.
import numpy as np
import pytest

import pygpu
from pygpu import cuda

ml_dtypes = pytest.importorskip("ml_dtypes")

HAS_GPU = cuda.is_available()
pytestmark = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")

HALF = {"bfloat16": (pygpu.bfloat16, ml_dtypes.bfloat16), "float16": (pygpu.float16, np.float16)}
ULP = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}  # relative spacing at 1.0
DEV = "cuda:0"

SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-45, 3.4e38, 65520.0,
                     65504.0, 65519.99, 6e-8, 3e-8, 5.96e-8, 1e-5, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8,
                     1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, -2.5, 1e38, -1e39], np.float64)


def _data(n=4099, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.standard_normal(n) * scale, SPECIALS]).astype(np.float32)


def _same_bits(got, ref):
    """Equal bits, NaNs compared as NaN (their payloads are the CPU's, not NumPy's)."""
    got, ref = np.asarray(got), np.asarray(ref)
    nan = np.isnan(ref.astype(np.float32))
    assert np.isnan(got.astype(np.float32)[nan]).all()
    g, r = got.view(np.uint16)[~nan], ref.view(np.uint16)[~nan]
    bad = np.flatnonzero(g != r)
    assert bad.size == 0, f"{bad.size} elements differ, first at {bad[:5]}: {g[bad[:5]]} vs {r[bad[:5]]}"


def _f32(t):
    return t.detach().astype(pygpu.float32).numpy()


# ---- casts ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("src", ["float32", "float64"])
def test_casts_to_half_round_once_with_specials(name, src):
    dt, nd = HALF[name]
    x = np.concatenate([_data().astype(np.float64) * 1.0000001, SPECIALS]).astype(src)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(nd)  # NumPy and ml_dtypes round float64 straight to 16 bits
    got = pygpu.tensor(x, device=DEV).astype(dt).numpy()
    _same_bits(got, ref)


@pytest.mark.parametrize("name", sorted(HALF))
def test_casts_from_half_and_between_halves(name):
    dt, nd = HALF[name]
    x = _data().astype(nd)
    h = pygpu.tensor(x.astype(np.float32), device=DEV).astype(dt)
    wide = x.astype(np.float32)
    assert np.array_equal(h.astype(pygpu.float32).numpy(), wide, equal_nan=True)
    assert np.array_equal(h.astype(pygpu.float64).numpy(), wide.astype(np.float64), equal_nan=True)
    assert np.array_equal(h.astype(pygpu.bool_).numpy(), wide != 0)  # NaN -> True
    finite = np.isfinite(wide) & (np.abs(wide) < 2.0 ** 62)
    assert np.array_equal(h.astype(pygpu.int64).numpy()[finite], wide[finite].astype(np.int64))
    other = "float16" if name == "bfloat16" else "bfloat16"
    odt, ond = HALF[other]
    with np.errstate(over="ignore"):
        _same_bits(h.astype(odt).numpy(), wide.astype(ond))


@pytest.mark.parametrize("name", sorted(HALF))
def test_int64_and_bool_cast_to_half(name):
    dt, nd = HALF[name]
    ints = np.array([0, 1, -1, 2049, 2051, 65519, 65520, -70000, 2 ** 40 + 3, -(2 ** 62)], np.int64)
    with np.errstate(over="ignore"):
        ref = ints.astype(np.float64).astype(nd)
    _same_bits(pygpu.tensor(ints, device=DEV).astype(dt).numpy(), ref)
    b = pygpu.tensor(np.array([True, False, True]), device=DEV).astype(dt)
    assert _f32(b).tolist() == [1.0, 0.0, 1.0]


# ---- fill and arange --------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("value", [0.1, -0.0, 0.0, 1e6, 1e-7, 65519.99, float("inf")])
def test_fill_writes_the_value_rounded_once(name, value):
    dt, nd = HALF[name]
    t = pygpu.full((3, 5), value, dtype=dt, device=DEV)
    with np.errstate(over="ignore"):
        ref = np.full((3, 5), value, np.float64).astype(nd)
    _same_bits(t.numpy(), ref)
    t[1, 2:4] = 2.5  # a strided fill
    assert _f32(t)[1, 2:4].tolist() == [2.5, 2.5]


@pytest.mark.parametrize("name", sorted(HALF))
def test_arange_in_half_matches_cpu(name):
    dt, _ = HALF[name]
    got = pygpu.arange(0.0, 300.0, 0.7, dtype=dt, device=DEV).numpy()
    ref = pygpu.arange(0.0, 300.0, 0.7, dtype=dt).numpy()
    _same_bits(got, ref)


# ---- elementwise ------------------------------------------------------------------------

BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "maximum": np.maximum, "minimum": np.minimum}


@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_ops_compute_in_float32_and_round_once(name, op):
    dt, nd = HALF[name]
    a16, b16 = _data(seed=1).astype(nd), _data(seed=2).astype(nd)
    a = pygpu.tensor(a16.astype(np.float32), device=DEV).astype(dt)
    b = pygpu.tensor(b16.astype(np.float32), device=DEV).astype(dt)
    got = getattr(pygpu, op)(a, b)
    assert got.dtype is dt
    with np.errstate(all="ignore"):
        ref = BINARY[op](a16.astype(np.float32), b16.astype(np.float32)).astype(nd)
    _same_bits(got.numpy(), ref)
    # broadcast and strided operands take the N-d path
    a2 = a[: 64 * 64].reshape(64, 64)
    row = b[:64].reshape(1, 64)
    got2 = getattr(pygpu, op)(a2.T, row)
    with np.errstate(all="ignore"):
        ref2 = BINARY[op](a16[: 64 * 64].reshape(64, 64).T.astype(np.float32),
                          b16[:64].reshape(1, 64).astype(np.float32)).astype(nd)
    _same_bits(got2.numpy(), ref2)


@pytest.mark.parametrize("name", sorted(HALF))
def test_scalar_operands_are_float32(name):
    dt, nd = HALF[name]
    a16 = _data(seed=3).astype(nd)
    a = pygpu.tensor(a16.astype(np.float32), device=DEV).astype(dt)
    f = a16.astype(np.float32)
    with np.errstate(all="ignore"):
        _same_bits((a * 0.1).numpy(), (f * np.float32(0.1)).astype(nd))
        _same_bits((3.0 - a).numpy(), (np.float32(3.0) - f).astype(nd))
        _same_bits((a / 7).numpy(), (f / np.float32(7)).astype(nd))


@pytest.mark.parametrize("name", sorted(HALF))
def test_compares_give_bool(name):
    dt, nd = HALF[name]
    a16, b16 = _data(seed=4).astype(nd), _data(seed=5).astype(nd)
    b16[::3] = a16[::3]
    a = pygpu.tensor(a16.astype(np.float32), device=DEV).astype(dt)
    b = pygpu.tensor(b16.astype(np.float32), device=DEV).astype(dt)
    fa, fb = a16.astype(np.float32), b16.astype(np.float32)
    for got, ref in [(a == b, fa == fb), (a != b, fa != fb), (a < b, fa < fb), (a <= b, fa <= fb),
                     (a > b, fa > fb), (a >= b, fa >= fb), (a > 0.5, fa > 0.5)]:
        assert got.dtype is pygpu.bool_
        assert np.array_equal(got.numpy(), ref)


UNARY_EXACT = {"negative": np.negative, "abs": np.abs, "sqrt": np.sqrt}
RELU = lambda x: np.where((x > 0) | np.isnan(x), x, np.float32(0))  # noqa: E731
UNARY_LIBM = {"exp": np.exp, "log": np.log, "tanh": np.tanh,
              "sigmoid": lambda x: np.float32(1) / (np.float32(1) + np.exp(-x))}


@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("op", sorted(UNARY_EXACT) + ["relu"] + sorted(UNARY_LIBM))
def test_unary_ops(name, op):
    dt, nd = HALF[name]
    x16 = _data(seed=6, scale=2.0).astype(nd)
    x = pygpu.tensor(x16.astype(np.float32), device=DEV).astype(dt)
    got = getattr(pygpu, op)(x)
    assert got.dtype is dt
    with np.errstate(all="ignore"):
        ref = {**UNARY_EXACT, **UNARY_LIBM, "relu": RELU}[op](x16.astype(np.float32)).astype(nd)
    if op in UNARY_EXACT:  # correctly rounded in float32: bit for bit
        _same_bits(got.numpy(), ref)
        return
    if op == "relu":  # by value: relu(-0.0) is -0.0 on the CPU, +0.0 on cuda (float32 too)
        assert np.array_equal(got.numpy().astype(np.float32), ref.astype(np.float32), equal_nan=True)
        return
    g, r = got.numpy().astype(np.float32), ref.astype(np.float32)
    ok = np.isfinite(r)
    assert np.array_equal(np.isnan(g), np.isnan(r))
    np.testing.assert_allclose(g[ok], r[ok], rtol=ULP[name], atol=1e-30)


# ---- reductions ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("shape,axis", [((30011,), None), ((300, 257), 1), ((300, 257), 0),
                                        ((4, 5000, 3), 1)])
def test_sum_and_mean_accumulate_in_float32(name, shape, axis):
    dt, nd = HALF[name]
    rng = np.random.default_rng(7)
    x16 = rng.uniform(0.5, 1.5, size=shape).astype(nd)  # all positive: no cancellation
    x = pygpu.tensor(x16.astype(np.float32), device=DEV).astype(dt)
    ref = x16.astype(np.float64).sum(axis=axis)
    s = x.sum() if axis is None else x.sum(axis=axis)
    assert s.dtype is dt
    # a half running sum of about one would stop near 2048 (float16) or 256 (bfloat16)
    np.testing.assert_allclose(_f32(s), ref, rtol=ULP[name])
    m = x.mean() if axis is None else x.mean(axis=axis)
    np.testing.assert_allclose(_f32(m), ref / (x16.size / np.size(ref)), rtol=ULP[name])


@pytest.mark.parametrize("name", sorted(HALF))
def test_max_min_argmax_exact(name):
    dt, nd = HALF[name]
    x16 = _data(seed=8).astype(nd)
    x16 = x16[np.isfinite(x16.astype(np.float32))][:4096].reshape(64, 64)
    x = pygpu.tensor(x16.astype(np.float32), device=DEV).astype(dt)
    f = x16.astype(np.float32)
    _same_bits(x.max(axis=1).numpy(), f.max(axis=1).astype(nd))
    _same_bits(x.min(axis=0).numpy(), f.min(axis=0).astype(nd))
    am = x.argmax(axis=1)
    assert am.dtype is pygpu.int64 and np.array_equal(am.numpy(), f.argmax(axis=1))
    f[3, 7] = np.nan  # NaN wins, the first one
    xn = pygpu.tensor(f, device=DEV).astype(dt)
    assert int(xn.argmax()) == 3 * 64 + 7 and np.isnan(float(xn.max()))


# ---- the product (cublasGemmEx, fp32 accumulation on the tensor cores) ----------------------

@pytest.mark.parametrize("name", sorted(HALF))
def test_ones_4096_dot_accumulates_in_float32(name):
    dt, _ = HALF[name]
    c = pygpu.ones((1, 4096), dtype=dt, device=DEV) @ pygpu.ones((4096, 1), dtype=dt, device=DEV)
    assert c.dtype is dt and _f32(c).tolist() == [[4096.0]]


@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("M,K,N,ta,tb,batch", [(7, 600, 9, False, False, 0), (64, 513, 70, True, True, 0),
                                               (128, 256, 64, False, True, 3), (1, 1, 1, False, False, 0)])
def test_half_matmul_matches_float32_rounded_once(name, M, K, N, ta, tb, batch):
    dt, nd = HALF[name]
    rng = np.random.default_rng(M + K + N)
    sa = ((K, M) if ta else (M, K)) if not batch else (batch, M, K)
    sb = ((N, K) if tb else (K, N)) if not batch else (batch, K, N)
    A16 = rng.standard_normal(sa).astype(nd)
    B16 = rng.standard_normal(sb).astype(nd)
    a = pygpu.tensor(A16.astype(np.float32), device=DEV).astype(dt)
    b = pygpu.tensor(B16.astype(np.float32), device=DEV).astype(dt)
    A, B = A16.astype(np.float64), B16.astype(np.float64)
    if not batch:
        a, b = (a.T if ta else a), (b.T if tb else b)
        A, B = (A.T if ta else A), (B.T if tb else B)
    got = a @ b
    assert got.dtype is dt
    ref = (A @ B).astype(np.float32).astype(nd).astype(np.float32)
    tol = ULP[name] * 2
    np.testing.assert_allclose(_f32(got), ref, rtol=tol, atol=tol * np.sqrt(K))


@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("act", [None, "relu", "tanh", "sigmoid"])
@pytest.mark.parametrize("bias", [True, False])
def test_half_linear_forward_and_backward_match_the_cpu(name, act, bias):
    dt, _ = HALF[name]
    rng = np.random.default_rng(11)
    x = rng.standard_normal((67, 130)).astype(np.float32)
    w = (rng.standard_normal((40, 130)) * 0.1).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    g = rng.standard_normal((67, 40)).astype(np.float32)
    res = {}
    for dev in ("cpu", DEV):
        px, pw, pb = (pygpu.tensor(v, device=dev).astype(dt).requires_grad_() for v in (x, w, b))
        y = pygpu.nn.functional.linear(px, pw, pb if bias else None, activation=act)
        assert y.dtype is dt
        y.backward(pygpu.tensor(g, device=dev).astype(dt))
        res[dev] = [_f32(y), _f32(px.grad), _f32(pw.grad)] + ([_f32(pb.grad)] if bias else [])
    for c, d in zip(res["cpu"], res[DEV]):  # one ulp each way, relative to the tensor's scale
        scale = np.abs(c).max()
        np.testing.assert_allclose(d / scale, c / scale, atol=4 * ULP[name])


@pytest.mark.parametrize("name", sorted(HALF))
def test_autocast_training_steps_on_cuda(name):
    dt, _ = HALF[name]
    rng = np.random.default_rng(12)
    X = rng.standard_normal((256, 32)).astype(np.float32)
    Y = (X[:, :4].sum(axis=1) > 0).astype(np.int64)
    losses = {}
    for dev in ("cpu", DEV):
        pygpu.manual_seed(0)
        net = pygpu.nn.Sequential(pygpu.nn.Linear(32, 64), pygpu.nn.ReLU(), pygpu.nn.Linear(64, 2)).to(dev)
        opt = pygpu.optim.SGD(net.parameters(), lr=0.1)
        scaler = pygpu.amp.GradScaler(enabled=dt is pygpu.float16)
        x, y = pygpu.tensor(X, device=dev), pygpu.tensor(Y, device=dev)
        out = []
        for _ in range(5):
            opt.zero_grad()
            with pygpu.autocast(dev.split(":")[0], dtype=dt):
                loss = pygpu.nn.functional.cross_entropy(net(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            out.append(float(loss))
        losses[dev] = out
    assert all(np.isfinite(losses[DEV])) and losses[DEV][-1] < losses[DEV][0]
    np.testing.assert_allclose(losses[DEV], losses["cpu"], rtol=0.05)


# ---- the fused unscale ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_fused_unscale_on_cuda(dtype):
    dt = pygpu._dtype.to_dtype(dtype)
    g = pygpu.tensor(np.linspace(-8, 8, 10001), device=DEV).astype(dt)
    ref = g.astype(pygpu.float64).numpy() * 0.25
    flag = pygpu.zeros((), device=DEV)
    pygpu._C._amp_unscale_(g, 0.25, flag)
    assert np.array_equal(g.astype(pygpu.float64).numpy(), ref) and float(flag) == 0.0
    bad = pygpu.tensor([1.0, float("inf"), float("nan")], device=DEV).astype(dt)
    pygpu._C._amp_unscale_(bad, 0.5, flag)
    assert float(flag) == 1.0
    pygpu._C._amp_unscale_(g, 1.0, flag)  # a later finite gradient never lowers it
    assert float(flag) == 1.0


# ---- cuda against the CPU backend, op by op ------------------------------------------------

@pytest.mark.parametrize("name", sorted(HALF))
def test_cuda_matches_the_cpu_backend_bit_for_bit(name):
    dt, _ = HALF[name]
    x = _data(seed=9)
    y = _data(seed=10)
    outs = {}
    for dev in ("cpu", DEV):
        a = pygpu.tensor(x, device=dev).astype(dt)
        b = pygpu.tensor(y, device=dev).astype(dt)
        outs[dev] = [a + b, a * b, a - 1.5, pygpu.maximum(a, b), -a, abs(a), a.astype(pygpu.float32),
                     a.astype(pygpu.float64).astype(dt), pygpu.full((7,), 0.3, dtype=dt, device=dev)]
    for c, g in zip(outs["cpu"], outs[DEV]):
        assert c.dtype is g.dtype
        if c.dtype in (pygpu.float16, pygpu.bfloat16):
            _same_bits(g.numpy(), c.numpy())
        else:
            assert np.array_equal(g.numpy(), c.numpy(), equal_nan=True)
