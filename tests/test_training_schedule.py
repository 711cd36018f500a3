"""The CPU training schedule: the fused linear layers and optimizer
updates cut over the device's pool, checked against NumPy and for reproducibility.

- linear forward/backward with every activation, at sizes the scheduler cuts
  (output-feature slices for dW/db, column or row panels for y and dx) and at
  sizes it does not (10 outputs), on 1 and 2 threads, against NumPy;
- the same inputs and thread count give bitwise the same training run, on cpu
  and on sim; 1 and 2 threads agree within float tolerance (docs/performance.md)."""
import numpy as np
import pytest

import pygpu
from pygpu import _C

from _helpers import ACT_CODE as CODES, ACT_NP, ACTS  # noqa: E402  (the op table's activations)


@pytest.fixture
def threads():
    before = pygpu.get_num_threads()
    yield pygpu.set_num_threads
    pygpu.set_num_threads(before)


def _act(v, act):
    return ACT_NP[act][0](v)


def _dact(y, act):
    return ACT_NP[act][1](y)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("N,I,O", [(64, 300, 130), (200, 70, 10), (3, 513, 520), (0, 8, 33)])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_linear_forward_backward_matches_numpy(threads, nthreads, N, I, O, act):
    threads(nthreads)
    rng = np.random.default_rng(N + I + O)
    x = rng.standard_normal((N, I))  # (N, I)
    w = rng.standard_normal((O, I)) / np.sqrt(I)  # (O, I)
    b = rng.standard_normal(O)  # (O,)
    g = rng.standard_normal((N, O))  # (N, O) the incoming gradient
    y = _C._linear_fwd(pygpu.tensor(x), pygpu.tensor(w), pygpu.tensor(b), CODES[act])
    ref_y = _act(x @ w.T + b, act)
    np.testing.assert_allclose(np.asarray(y), ref_y, rtol=1e-10, atol=1e-10)
    dx, dw, db = _C._linear_bwd(pygpu.tensor(g), pygpu.tensor(x), pygpu.tensor(w),
                                y if act else None, CODES[act], True, True)
    dz = g * _dact(ref_y, act)
    np.testing.assert_allclose(np.asarray(dw), dz.T @ x, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.asarray(db), dz.sum(axis=0), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.asarray(dx), dz @ w, rtol=1e-9, atol=1e-9)


def _train(device, steps=6, batch=64, opt="sgd"):
    rng = np.random.default_rng(0)
    X = rng.random((steps * batch, 96), dtype=np.float32)  # (S, 96)
    y = rng.integers(0, 10, steps * batch).astype(np.int64)  # (S,)
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP([96, 160, 144, 10]).to(device)
    o = (pygpu.optim.SGD(model.parameters(), lr=0.05, momentum=0.9) if opt == "sgd"
         else pygpu.optim.Adam(model.parameters(), lr=1e-3))
    loss_fn = pygpu.nn.CrossEntropyLoss()
    for s in range(steps):
        xb = pygpu.tensor(X[s * batch:(s + 1) * batch]).to(device)
        yb = pygpu.tensor(y[s * batch:(s + 1) * batch]).to(device)
        o.zero_grad()
        loss_fn(model(xb), yb).backward()
        o.step()
    return [np.asarray(p.to("cpu")) for p in model.parameters()]


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_same_threads_bitwise_same_training(threads, nthreads, opt):
    threads(nthreads)
    first, again = _train("cpu", opt=opt), _train("cpu", opt=opt)
    for a, b in zip(first, again):
        assert np.array_equal(a, b)


def test_sim_repeats_bitwise_and_matches_cpu(threads):
    first, again = _train("sim:0"), _train("sim:0")
    for a, b in zip(first, again):
        assert np.array_equal(a, b)
    threads(pygpu.sim.num_threads(0))  # cpu at sim:0's thread count
    for a, c in zip(first, _train("cpu")):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)


def test_thread_counts_agree_within_tolerance(threads):
    threads(1)
    one = _train("cpu")
    threads(2)
    two = _train("cpu")
    for a, b in zip(one, two):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_outside_blas_thread_limit_is_undone_at_the_next_product():
    """threadpoolctl's threadpool_limits(n) sets every OpenBLAS in the process,
    pygpu's own copy included; pygpu calls it once per panel from its pool's
    threads, so it must go back to one BLAS thread at the next product (else
    each panel starts n more threads on the same cores)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    a = pygpu.tensor(np.ones((64, 64), np.float32))
    (a @ a).numpy()
    libs = [p for p in threadpoolctl.threadpool_info() if p["internal_api"] == "openblas"]
    ours = [p for p in libs if p["filepath"].split("/")[-1].startswith("libscipy_openblas.")]
    if not ours:
        pytest.skip("pygpu's OpenBLAS (libscipy_openblas.so) is not visible to threadpoolctl here")
    assert ours[0]["num_threads"] == 1
    with threadpoolctl.threadpool_limits(2):
        now = [p for p in threadpoolctl.threadpool_info() if p["filepath"] == ours[0]["filepath"]]
        assert now[0]["num_threads"] == 2  # the outside change took
        np.testing.assert_array_equal((a @ a).numpy(), np.full((64, 64), 64, np.float32))
        after = [p for p in threadpoolctl.threadpool_info() if p["filepath"] == ours[0]["filepath"]]
        assert after[0]["num_threads"] == 1, "pygpu's BLAS was left on the outside thread count"
