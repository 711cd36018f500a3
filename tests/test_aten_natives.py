# test_aten_natives.py - ATen's native_layer_norm, native_dropout, native_norm and
# SyncBatchNorm's kernels at torch's level (pygpu/_tensor/aten_natives.py) on every device.
# Oracles: torch's own ops where its CPU build has them (native_layer_norm, native_dropout's
# contract, batch_norm_update_stats, native_norm on a sparse tensor); for the CUDA-only
# SyncBatchNorm kernels, the whole chain over a batch split between two "workers" (stats,
# gather with counts, elemt; backward_reduce, the sums added, backward_elemt) must give
# torch's one-process batch_norm output, running statistics and input/weight/bias gradients.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

rng = np.random.default_rng(23)


def P(t, device, grad=False):
    a = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    return pygpu.tensor(a, device=device, requires_grad=grad)


def close(p, t, tol=1e-10):
    np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def test_native_layer_norm(device):
    x = torch.tensor(rng.standard_normal((3, 4, 5)))
    w, b = torch.tensor(rng.standard_normal((4, 5))), torch.tensor(rng.standard_normal((4, 5)))
    for args in (([5], None, None), ([4, 5], w, b)):
        ref = torch.native_layer_norm(x, args[0], args[1], args[2], 1e-5)
        out = pygpu.native_layer_norm(P(x, device), args[0],
                                      *(None if a is None else P(a, device) for a in args[1:]),
                                      1e-5)
        for o, r in zip(out, ref):
            assert tuple(o.shape) == tuple(r.shape)
            close(o, r)


def test_native_dropout(device):
    x = pygpu.tensor(rng.standard_normal((200, 50)) + 3.0, device=device)
    out, mask = pygpu.native_dropout(x, 0.3, True)
    assert mask.dtype == pygpu.bool
    np.testing.assert_allclose(out.numpy(), np.where(mask.numpy(), x.numpy() / 0.7, 0.0),
                               rtol=1e-12)
    assert abs(mask.numpy().mean() - 0.7) < 0.02
    tout, tmask = torch.native_dropout(torch.ones(3), 0.3, False)
    out, mask = pygpu.native_dropout(pygpu.ones(3, device=device), 0.3, False)
    np.testing.assert_array_equal(out.numpy(), tout.numpy())
    np.testing.assert_array_equal(mask.numpy(), tmask.numpy())


def test_native_norm_of_a_sparse_tensor(device):
    d = np.array([[0.0, 2, 0], [1, 0, -3]])
    ref = torch.native_norm(torch.tensor(d).to_sparse(), 3)
    out = pygpu.native_norm(pygpu.tensor(d, device=device).to_sparse(), 3)
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-12)
    with pytest.raises(NotImplementedError):
        torch.native_norm(torch.tensor(d))
    with pytest.raises(NotImplementedError):
        pygpu.native_norm(pygpu.tensor(d))


def test_batch_norm_update_stats(device):
    x = torch.tensor(rng.standard_normal((4, 3, 5)))
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    prm, prv = P(rm, device), P(rv, device)
    ref = torch.batch_norm_update_stats(x, rm, rv, 0.1)
    out = pygpu.batch_norm_update_stats(P(x, device), prm, prv, 0.1)
    for o, r in zip(out, ref):
        close(o, r)
    close(prm, rm)
    close(prv, rv)


def test_sync_batch_norm_chain_is_one_batch_norm(device):
    eps, momentum = 1e-5, 0.1
    x = rng.standard_normal((7, 3, 4))
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    dy = rng.standard_normal((7, 3, 4))
    # the oracle: one process, the whole batch
    tx = torch.tensor(x, requires_grad=True)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    ref = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, True, momentum, eps)
    ref.backward(torch.tensor(dy))
    # two workers: rows 0..2 and 3..6
    parts = [P(x[:3], device), P(x[3:], device)]
    stats = [pygpu.batch_norm_stats(p, eps) for p in parts]
    means = pygpu.stack([s[0] for s in stats])
    invstds = pygpu.stack([s[1] for s in stats])
    counts = pygpu.tensor([3.0 * 4, 4.0 * 4], dtype=pygpu.float64, device=device)
    rm = pygpu.zeros(3, dtype=pygpu.float64, device=device)
    rv = pygpu.ones(3, dtype=pygpu.float64, device=device)
    mean, invstd = pygpu.batch_norm_gather_stats_with_counts(parts[0], means, invstds, rm, rv,
                                                             momentum, eps, counts)
    pw, pb = P(w, device), P(b, device)
    outs = [pygpu.batch_norm_elemt(p, pw, pb, mean, invstd, eps) for p in parts]
    np.testing.assert_allclose(np.concatenate([o.numpy() for o in outs]),
                               ref.detach().numpy(), rtol=1e-10, atol=1e-10)
    close(rm, trm)
    close(rv, trv)
    dys = [P(dy[:3], device), P(dy[3:], device)]
    red = [pygpu.batch_norm_backward_reduce(g, p, mean, invstd, pw, True, True, True)
           for g, p in zip(dys, parts)]
    sum_dy = red[0][0] + red[1][0]  # the all-reduce
    sum_dy_xmu = red[0][1] + red[1][1]
    close(red[0][2] + red[1][2], tw.grad)
    close(red[0][3] + red[1][3], tb.grad)
    dx = [pygpu.batch_norm_backward_elemt(g, p, mean, invstd, pw, sum_dy, sum_dy_xmu,
                                          pygpu.tensor([12, 16], device=device))
          for g, p in zip(dys, parts)]
    np.testing.assert_allclose(np.concatenate([d.numpy() for d in dx]), tx.grad.numpy(),
                               rtol=1e-10, atol=1e-10)
    # the equal-count form
    m2, i2 = pygpu.batch_norm_gather_stats(parts[0], means[:1], invstds[:1], None, None,
                                           momentum, eps, 12)
    close(m2, stats[0][0])
    close(i2, stats[0][1])
    assert pygpu.batch_norm_backward_reduce(dys[0], parts[0], mean, invstd, pw, False, False,
                                            True)[:3] == (None, None, None)
