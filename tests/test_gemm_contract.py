"""The GEMM contract (csrc/core/pg_gemm.h) on the CPU: every field of the descriptor.

_C._test_gemm runs one descriptor through the CPU's kernel table and scheduler
(csrc/backends/cpu/cpu_gemm*.c) on a pool of the given size, so the parts the
public ops use only in part (beta accumulate, alpha, DACT, BGRAD, strided and
transposed operands) are checked against NumPy here, for one thread and for
panels cut over several. The public paths (matmul, linear forward/backward)
are covered by test_ops_semantics.py and test_ops_layouts.py, test_nn.py and test_training_schedule.py."""
import itertools

import numpy as np
import pytest

import pygpu
from pygpu import _C

from _helpers import ACT_CODE, ACTS, act_np, dact_np

EPI_NONE, EPI_BIAS, EPI_DACT, EPI_BGRAD = 0, 1, 2, 4
TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}


_act, _dact = act_np, dact_np  # the activations' NumPy references (_helpers.py)


def _strided(rng, rows, cols, dt, strided):
    """A (rows, cols) pygpu matrix and its values; strided: a column slice of a wider one."""
    full = rng.standard_normal((rows, cols + (5 if strided else 0))).astype(dt)
    t = pygpu.tensor(full)
    if strided:
        t = t[:, 2:2 + cols]
    return t, full[:, 2:2 + cols] if strided else full


def _run(M, N, K, dt, ta, tb, strided, alpha, beta, epi, act, threads, seed=0):
    rng = np.random.default_rng(seed)
    a, av = _strided(rng, K if ta else M, M if ta else K, dt, strided)
    b, bv = _strided(rng, N if tb else K, K if tb else N, dt, strided)
    c, cv = _strided(rng, M, N, dt, strided)
    bias = rng.standard_normal((1, N)).astype(dt)
    aux = rng.random((M, N)).astype(dt) - dt(0.25)  # activation outputs, some <= 0 for relu
    bgrad = pygpu.tensor(np.full((1, N), np.nan, dt))
    _C._test_gemm(a, b, c, ta, tb, alpha, beta, epi, act, pygpu.tensor(bias), pygpu.tensor(aux),
                  bgrad, threads)
    A = av.astype(np.float64).T if ta else av.astype(np.float64)
    B = bv.astype(np.float64).T if tb else bv.astype(np.float64)
    ref = alpha * (A @ B) + (beta * cv.astype(np.float64) if beta else 0)
    if epi & EPI_BIAS:
        ref = ref + bias[0]
    if epi & EPI_DACT:
        ref = _dact(ref, aux.astype(np.float64), act)
    else:
        ref = _act(ref, act)
    out = np.asarray(c)
    np.testing.assert_allclose(out, ref, **TOL[dt])
    if epi & EPI_BGRAD:
        np.testing.assert_allclose(np.asarray(bgrad)[0], ref.sum(axis=0), rtol=1e-4,
                                   atol=1e-3 if dt is np.float32 else 1e-9)
    return out, np.asarray(bgrad)


_CODES = [ACT_CODE[n] for n in ACTS if n]  # every activation row of the op table
EPILOGUES = [(EPI_NONE, 0), (EPI_BIAS, 0)] + [(EPI_BIAS, a) for a in _CODES] + \
    [(EPI_NONE, ACT_CODE["tanh"])] + [(EPI_DACT, a) for a in _CODES] + [(EPI_BGRAD, 0)] + \
    [(EPI_DACT | EPI_BGRAD, a) for a in _CODES]


@pytest.mark.parametrize("epi,act", EPILOGUES, ids=[f"epi{e}-act{a}" for e, a in EPILOGUES])
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_every_epilogue(epi, act, dt):
    for threads in (1, 2):  # (70, 90, 60) carries enough work to be cut into panels
        _run(70, 90, 60, dt, False, True, False, 1.0, 0.0, epi, act, threads)


@pytest.mark.parametrize("ta,tb,strided", list(itertools.product([False, True], repeat=3)))
def test_transposed_and_strided_operands(ta, tb, strided):
    for threads in (1, 2, 3):
        _run(67, 45, 81, np.float32, ta, tb, strided, 1.0, 0.0, EPI_BIAS, 1, threads)
        _run(9, 130, 300, np.float64, ta, tb, strided, 1.0, 0.0, EPI_NONE, 0, threads)


@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, -2.0), (2.0, 0.0)])
def test_alpha_and_beta_accumulate(alpha, beta):
    for threads in (1, 2):
        _run(64, 200, 100, np.float32, False, False, True, alpha, beta, EPI_BIAS | EPI_BGRAD, 0,
             threads)
        _run(200, 30, 100, np.float64, True, False, False, alpha, beta, EPI_NONE, 3, threads)


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_float32_blocking_edges(ta, tb):
    """One past each block edge of pygpu's float32 kernel (cpu_sgemm.c: MR 6, NR 16, MC 144,
    KC 256, NC 3072), where K slices accumulate and partial tiles are written."""
    for M, N, K in ((145, 17, 257), (7, 3073, 20), (6, 16, 513), (13, 47, 300)):
        for alpha, beta in ((1.0, 0.0), (0.5, -2.0)):
            for threads in (1, 2):
                _run(M, N, K, np.float32, ta, tb, True, alpha, beta, EPI_NONE, 0, threads)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_beta_zero_never_reads_the_output(dt):
    """C = A @ B with beta = 0 overwrites C: NaN already there must not leak in (0 * NaN)."""
    rng = np.random.default_rng(3)
    for M, N, K in ((40, 50, 30), (150, 33, 300)):
        a, b = rng.standard_normal((M, K)).astype(dt), rng.standard_normal((K, N)).astype(dt)
        c = pygpu.tensor(np.full((M, N), np.nan, dt))
        _C._test_gemm(pygpu.tensor(a), pygpu.tensor(b), c, False, False, 1.0, 0.0, 0, 0)
        np.testing.assert_allclose(np.asarray(c), a.astype(np.float64) @ b, **TOL[dt])


def test_small_and_empty_shapes():
    _run(1, 1, 1, np.float32, False, False, False, 1.0, 0.0, EPI_BIAS, 1, 2)
    _run(3, 5, 0, np.float32, False, False, False, 1.0, 0.0, EPI_BIAS | EPI_BGRAD, 0, 2)


def test_same_threads_same_bits():
    """A panel split is fixed by the shape and the thread count: bitwise the same every run."""
    for threads in (1, 2, 3):
        first = _run(150, 257, 190, np.float32, False, True, False, 1.0, 0.5, EPI_DACT | EPI_BGRAD,
                     1, threads)
        again = _run(150, 257, 190, np.float32, False, True, False, 1.0, 0.5, EPI_DACT | EPI_BGRAD,
                     1, threads)
        assert all(np.array_equal(x, y) for x, y in zip(first, again))


def test_bad_descriptor_is_an_error():
    a = pygpu.zeros((4, 3))
    with pytest.raises(ValueError, match="must be a cpu float32 matrix of shape"):
        _C._test_gemm(a, pygpu.zeros((4, 5)), pygpu.zeros((4, 5)), False, False, 1.0, 0.0, 0, 0)
    with pytest.raises(ValueError, match="bad epilogue"):
        _C._test_gemm(a, pygpu.zeros((3, 5)), pygpu.zeros((4, 5)), False, False, 1.0, 0.0, 8, 0)
