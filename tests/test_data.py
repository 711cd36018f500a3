# test_data.py - pygpu.data.DataLoader: batches, order, staging, counters, overlap.
#
# Every batch must hold exactly the rows its labels name, on the device asked
# for, in the order the sampler gives; the pinned staging ring must be reused,
# never reallocated; each batch must be counted as pinned asynchronous h2d
# copies; and on sim with the link model on, prefetching must hide the
# transfer behind compute (the timing test at the end).

import numpy as np
import pytest

import pygpu
from pygpu.data import DataLoader, RandomSampler

from _helpers import timed, two_thread_ratio


def _data(n=23, d=5):
    X = np.arange(n * d, dtype=np.float32).reshape(n, d)
    return X, np.arange(n, dtype=np.int64)


def _epoch(loader):
    out = []
    for xb, yb in loader:
        x, y = xb.numpy(), yb.numpy()
        out.append((x, y, xb.device))
    return out


@pytest.mark.parametrize("prefetch", [0, 1, 2, 4])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batches_hold_the_rows_their_labels_name(device, prefetch, shuffle, drop_last):
    X, y = _data()
    loader = DataLoader(X, y, batch_size=4, shuffle=shuffle, drop_last=drop_last, device=device,
                        prefetch=prefetch, seed=7)
    batches = _epoch(loader)
    assert len(batches) == len(loader) == (5 if drop_last else 6)
    seen = np.concatenate([b[1] for b in batches])
    for x, yb, dev in batches:
        np.testing.assert_array_equal(x, X[yb])
        assert str(dev) == str(pygpu.device(device))
    assert len(seen) == (20 if drop_last else 23)
    assert len(set(seen.tolist())) == len(seen)  # no sample twice
    if not shuffle:
        np.testing.assert_array_equal(seen, np.arange(len(seen)))
    elif not drop_last:
        assert sorted(seen.tolist()) == list(range(23)) and seen.tolist() != list(range(23))


def test_shuffle_is_seeded_and_differs_per_epoch():
    X, y = _data(50)
    a = DataLoader(X, y, batch_size=50, shuffle=True, seed=3)
    b = DataLoader(X, y, batch_size=50, shuffle=True, seed=3)
    ea1, ea2 = [next(iter(a))[1].numpy() for _ in range(2)]
    eb1 = next(iter(b))[1].numpy()
    np.testing.assert_array_equal(ea1, eb1)
    assert not np.array_equal(ea1, ea2)
    a.set_epoch(0)
    np.testing.assert_array_equal(next(iter(a))[1].numpy(), ea1)


def test_sampler_decides_the_order():
    X, y = _data(10)
    order = [9, 0, 4, 4, 2]
    got = np.concatenate([yb.numpy() for _, yb in DataLoader(X, y, batch_size=2, sampler=order,
                                                             device="sim")])
    np.testing.assert_array_equal(got, order)


def test_sampler_with_set_epoch_is_told_the_epoch():
    class Recording:
        def __init__(self):
            self.epochs = []

        def set_epoch(self, e):
            self.epochs.append(e)

        def __iter__(self):
            return iter(range(4))

    s = Recording()
    loader = DataLoader(*_data(4), batch_size=2, sampler=s)
    list(loader), list(loader)
    loader.set_epoch(10)
    list(loader)
    assert s.epochs == [0, 1, 10]


def test_x_alone_yields_tensors_and_tensors_are_accepted(device):
    X, _ = _data()
    xs = [xb.numpy() for xb in DataLoader(pygpu.from_numpy(X), batch_size=10, device=device)]
    np.testing.assert_array_equal(np.concatenate(xs), X)


def test_data_already_on_the_device_is_sliced_not_copied(fresh_stats):
    X, y = _data()
    Xd, yd = pygpu.tensor(X, device="sim"), pygpu.tensor(y, device="sim")
    pygpu.synchronize()
    with pygpu.track() as t:
        got = [xb for xb, _ in DataLoader(Xd, yd, batch_size=8, device="sim")]
    assert t.transfer_count == 0
    np.testing.assert_array_equal(np.concatenate([g.numpy() for g in got]), X)


def test_shuffled_data_on_the_device_stays_there(fresh_stats):
    X, y = _data()
    Xd, yd = pygpu.tensor(X, device="sim"), pygpu.tensor(y, device="sim")
    pygpu.synchronize()
    with pygpu.track() as t:
        got = [(xb, yb) for xb, yb in DataLoader(Xd, yd, batch_size=8, shuffle=True, seed=1, device="sim")]
        pygpu.synchronize()
    # the data stays; the epoch's order goes to the device once (23 int64 indices), and each
    # batch is one gather per tensor from it
    assert t.transfer_count == 1 and t.h2d_bytes == 23 * 8
    labels = np.concatenate([yb.numpy() for _, yb in got])
    assert sorted(labels.tolist()) == list(range(23)) and labels.tolist() != list(range(23))
    for xb, yb in got:
        np.testing.assert_array_equal(xb.numpy(), X[yb.numpy()])


def test_labels_become_int64_and_cpu_batches_are_zero_copy_views():
    X, y = _data()
    xb, yb = next(iter(DataLoader(X, y.astype(np.int32), batch_size=4)))
    assert yb.dtype == pygpu.int64
    assert np.shares_memory(np.asarray(xb), X)


def test_every_batch_is_a_counted_pinned_async_copy(fresh_stats):
    X, y = _data(64, 8)
    loader = DataLoader(X, y, batch_size=16, device="sim", prefetch=2)
    list(loader)  # the first epoch allocates the staging ring
    pygpu.synchronize()
    with pygpu.track() as t:
        for _ in range(2):
            list(loader)
        pygpu.synchronize()
    assert t.h2d_count == 2 * 4 * 2  # two epochs x four batches x (X, y)
    assert t.h2d_bytes == 2 * (X.nbytes + y.nbytes)
    (pair,) = t.transfers
    assert pair["pinned"] == pair["async"] == pair["count"]
    assert t.per_device["cpu"]["allocs"] == 0  # staging buffers reused, not reallocated
    assert t.d2h_count == 0 and t.implicit_count == 0


def test_staging_ring_has_prefetch_plus_one_pinned_slots():
    X, y = _data(64, 8)
    loader = DataLoader(X, y, batch_size=16, device="sim", prefetch=3)
    it = iter(loader)
    next(it)
    ring = loader._ring
    assert len(ring) == 4 and all(t.is_pinned() for s in ring for t in s.tensors)
    list(it), list(loader)
    assert loader._ring is ring and all(a is b for a, b in zip(ring, loader._ring))


def test_a_slot_is_not_overwritten_while_its_copy_is_in_flight(link_model_off):
    # A slow link: each copy takes ~20 ms. If the loader refilled a slot without waiting
    # for the copy reading it, a batch would arrive with the next batch's rows.
    X, y = _data(40, 1024)
    pygpu.sim.configure(latency_us=20_000)
    for xb, yb in DataLoader(X, y, batch_size=4, device="sim", prefetch=1):
        np.testing.assert_array_equal(xb.numpy(), X[yb.numpy()])


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(batch_size=0), ValueError, "batch_size must be a positive int"),
    (dict(batch_size=2.5), ValueError, "batch_size"),
    (dict(prefetch=-1), ValueError, "prefetch must be an int >= 0"),
    (dict(shuffle=True, sampler=[0, 1]), ValueError, "not both"),
    (dict(y=np.zeros(3)), ValueError, "same number of samples, got 23 and 3"),
    (dict(X=np.array(["a"] * 23)), TypeError, "astype"),
    (dict(X=np.float32(1.0)), ValueError, "leading sample axis"),
    (dict(device="tpu"), ValueError, "tpu"),
])
def test_bad_arguments_say_what_is_wrong(kwargs, error, words):
    X, y = _data()
    args = dict(X=X, y=y, batch_size=4)
    args.update(kwargs)
    with pytest.raises(error, match=words):
        DataLoader(**args)


def test_sampler_index_out_of_range_is_a_clear_error():
    with pytest.raises(IndexError, match="index 99, but there are only 23 samples"):
        list(DataLoader(*_data(), batch_size=4, sampler=[0, 99]))


def test_random_sampler_is_a_permutation():
    s = RandomSampler(10, seed=1)
    assert sorted(s) == list(range(10)) and len(s) == 10


@pytest.fixture
def one_blas_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1):
        yield


@pytest.mark.slow
@pytest.mark.timing
def test_prefetch_hides_the_transfer_behind_compute(link_model_off, one_blas_thread):
    B, D, nb = 256, 512, 24
    X = np.random.default_rng(0).standard_normal((B * nb, D)).astype(np.float32)
    y = np.zeros(B * nb, np.int64)
    W = pygpu.randn(D, D, device="sim") * 0.05

    def step(xb):
        h = xb
        for _ in range(3):
            h = (h @ W).relu()

    resident = [pygpu.tensor(X[i * B:(i + 1) * B], device="sim") for i in range(nb)]

    def compute_only():
        for xb in resident:
            step(xb)
        pygpu.synchronize()

    def epoch(prefetch, train=True):
        def run():
            for xb, _ in DataLoader(X, y, B, device="sim", prefetch=prefetch):
                if train:
                    step(xb)
            pygpu.synchronize()
        return run

    compute_only()
    a, w = X[:B], np.asarray(W.numpy())

    def host_compute():  # the same matmuls with NumPy (it releases the GIL)
        for _ in range(nb // 2):
            h = a
            for _ in range(3):
                h = np.maximum(h @ w, 0)

    control = two_thread_ratio(host_compute, runs=2)
    if control > 1.4:  # overlap needs a core for the device's compute beside the host's work
        pytest.skip(f"no spare core: two NumPy threads take {control:.2f}x one on this machine now")
    # Make one batch's transfer take about as long as one batch's compute.
    gbps = B * (D * 4 + 8) / (min(timed(compute_only)[0] for _ in range(2)) / nb) / 1e9
    pygpu.sim.configure(latency_us=0, h2d_gbps=gbps)
    trials = []
    for _ in range(4):  # interleaved, so each trial's timings see the same machine load
        c, k = timed(compute_only)[0], timed(epoch(2, train=False))[0]
        p, s = timed(epoch(2))[0], timed(epoch(0))[0]
        trials.append((c, k, p, s))
        if p <= 1.25 * max(c, k) and s >= 0.8 * (c + k):
            break
    report = "; ".join(f"compute {c:.3f} s, transfer {k:.3f} s, prefetch=2 {p:.3f} s, "
                       f"prefetch=0 {s:.3f} s" for c, k, p, s in trials)
    assert any(p <= 1.25 * max(c, k) for c, k, p, s in trials), "no overlap: " + report
    assert any(s >= 0.8 * (c + k) for c, k, p, s in trials), "prefetch=0 overlapped: " + report
