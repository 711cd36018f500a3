# test_counters.py - pygpu.stats() / reset_stats() / track() count exactly what crossed.
#
# Every host<->device copy is counted once with its bytes, device-to-device
# copies separately, and copies the user did not write as .to() (repr,
# item(), float(), tolist(), np.asarray of a device tensor) also as implicit
# with their trigger. Counts must be exact, also when 8 Python threads do round
# trips at once; cpu-only work counts no transfers; ops and syncs are counted
# per device. Snapshots are values: they do not change after they are taken.
import threading

import numpy as np
import pytest

import pygpu
from pygpu import nn, optim
from pygpu.cost import link_model_profile, predict

N = 64
NBYTES = 4 * N * N


def _zero_transfers(t):
    return (t.h2d_count, t.h2d_bytes, t.d2h_count, t.d2h_bytes, t.d2d_count, t.d2d_bytes,
            t.implicit_count) == (0,) * 7


def test_round_trip_counts_one_h2d_and_one_d2h(fresh_stats):
    a = np.ones((N, N), np.float32)
    with pygpu.track() as t:
        back = pygpu.tensor(a, device="sim:0").to("cpu")
    assert (t.h2d_count, t.h2d_bytes) == (1, NBYTES)
    assert (t.d2h_count, t.d2h_bytes) == (1, NBYTES)
    assert (t.d2d_count, t.d2d_bytes, t.implicit_count) == (0, 0, 0)
    np.testing.assert_array_equal(back.numpy(), a)


def test_to_device_and_back_with_to_counts_the_same(fresh_stats):
    x = pygpu.ones(N, N)
    with pygpu.track() as t:
        y = x.to("sim:1").cpu()
    assert (t.h2d_count, t.h2d_bytes, t.d2h_count, t.d2h_bytes) == (1, NBYTES, 1, NBYTES)
    assert t.implicit_count == 0
    del y


def test_device_to_device_copy_counts_as_d2d(fresh_stats):
    x = pygpu.ones(N, N, device="sim:0")
    pygpu.synchronize()
    with pygpu.track() as t:
        y = x.to("sim:1")
        y.wait()
    assert (t.d2d_count, t.d2d_bytes) == (1, NBYTES)
    assert (t.h2d_count, t.d2h_count) == (0, 0)


def test_cpu_only_work_counts_no_transfers(fresh_stats):
    with pygpu.track() as t:
        x = pygpu.tensor(np.arange(6.0).reshape(2, 3))
        y = (x @ x.T + 1).sum(axis=0)
        repr(y), y.tolist(), y[0].item(), float(y[1]), np.asarray(y), y.numpy(), x.to("cpu")
    assert _zero_transfers(t)


IMPLICIT = [
    ("repr", lambda t: repr(t)),
    ("repr", lambda t: str(t)),
    ("repr", lambda t: print(t)),
    ("item", lambda t: t[0].item()),
    ("item", lambda t: float(t[0])),
    ("item", lambda t: int(t[0])),
    ("item", lambda t: bool(t[0])),
    ("tolist", lambda t: t.tolist()),
    ("array", lambda t: np.asarray(t)),
]


@pytest.mark.parametrize("trigger,action", IMPLICIT,
                         ids=["repr", "str", "print", "item", "float", "int", "bool", "tolist", "asarray"])
def test_implicit_transfer_counted_with_its_trigger(trigger, action, fresh_stats, capsys):
    x = pygpu.ones(4, device="sim:0")
    pygpu.synchronize()
    with pygpu.track() as t:
        action(x)
    assert t.implicit_count == 1
    assert t.d2h_count == 1
    assert t.h2d_count == 0
    s = pygpu.stats()
    assert s.implicit.get(trigger) == 1, s.implicit
    assert sum(s.implicit.values()) == s.implicit_count == 1


def test_explicit_to_is_not_implicit(fresh_stats):
    x = pygpu.ones(4, device="sim:0")
    with pygpu.track() as t:
        x.to("cpu").numpy()
        x.cpu()
    assert t.implicit_count == 0
    assert t.d2h_count == 2


def test_counters_exact_under_eight_threads(fresh_stats):
    threads, rounds = 8, 25
    a = np.ones((N, N), np.float32)
    errors = []
    barrier = threading.Barrier(threads)

    def worker(k):
        try:
            barrier.wait()
            for _ in range(rounds):
                back = pygpu.tensor(a, device=f"sim:{k % 2}").to("cpu")
                if back.numpy()[0, 0] != 1.0:
                    errors.append("wrong value")
        except Exception as e:  # reported below, on the main thread
            errors.append(repr(e))

    with pygpu.track() as t:
        pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
    assert not errors, errors
    total = threads * rounds
    assert (t.h2d_count, t.h2d_bytes) == (total, total * NBYTES)
    assert (t.d2h_count, t.d2h_bytes) == (total, total * NBYTES)
    assert t.implicit_count == 0 and t.d2d_count == 0


def test_ops_counted_per_device(fresh_stats):
    x = pygpu.ones(8, device="sim:1")
    pygpu.synchronize()
    pygpu.reset_stats()
    with pygpu.track() as t:
        y = pygpu.exp(x * 2.0 + x)
        y.wait()
    s = pygpu.stats()
    assert t.ops == 3
    assert s.per_device["sim:1"]["ops"] == 3
    assert s.per_device["sim:0"]["ops"] == 0


def test_syncs_counted_with_their_time(fresh_stats):
    x = pygpu.rand(256, 256, device="sim:0")
    pygpu.synchronize()
    pygpu.reset_stats()
    for _ in range(5):
        y = x @ x
    y.wait()
    pygpu.synchronize("sim:0")
    s = pygpu.stats()
    assert s.syncs >= 2
    assert s.per_device["sim:0"]["syncs"] >= 2
    assert s.per_device["sim:0"]["sync_ns"] > 0


def test_reset_stats_zeroes_event_counters(fresh_stats):
    pygpu.tensor(np.ones((N, N), np.float32), device="sim:0").to("cpu")
    repr(pygpu.ones(2, device="sim:0"))
    assert pygpu.stats().h2d_count > 0 and pygpu.stats().implicit_count > 0
    pygpu.reset_stats()
    s = pygpu.stats()
    assert _zero_transfers(s)
    assert s.ops == 0 and s.syncs == 0
    assert sum(s.implicit.values()) == 0


def test_snapshot_does_not_change_after_it_is_taken(fresh_stats):
    s = pygpu.stats()
    pygpu.tensor(np.ones((N, N), np.float32), device="sim:0").to("cpu")
    assert s.h2d_count == 0 and s.d2h_count == 0
    assert pygpu.stats().h2d_count == 1 and pygpu.stats().d2h_count == 1


def test_track_counts_only_its_block(fresh_stats):
    a = np.ones((N, N), np.float32)
    pygpu.tensor(a, device="sim:0")
    with pygpu.track() as t:
        pygpu.tensor(a, device="sim:0")
    pygpu.tensor(a, device="sim:0")
    assert t.h2d_count == 1 and t.h2d_bytes == NBYTES
    assert pygpu.stats().h2d_count == 3


def test_as_dict_and_repr_table(fresh_stats):
    pygpu.tensor(np.ones((N, N), np.float32), device="sim:0").to("cpu")
    s = pygpu.stats()
    d = s.as_dict()
    for key in ("h2d_count", "h2d_bytes", "d2h_count", "d2h_bytes", "d2d_count", "d2d_bytes",
                "implicit_count", "syncs", "ops"):
        assert d[key] == getattr(s, key), key
    assert d["h2d_count"] == 1
    assert set(s.per_device) >= {"cpu", "sim:0", "sim:1"}
    for per in s.per_device.values():
        assert set(per) >= {"ops", "syncs", "sync_ns", "allocs", "mem_current", "mem_peak"}
    text = repr(s)
    assert "cpu" in text and "sim:0" in text and str(NBYTES) in text
    assert len(text.splitlines()) >= 3, "expected a table"


@pytest.fixture
def link_model():
    def on(**kw):
        pygpu.sim.configure(**kw)
        return link_model_profile(pygpu.sim.link())
    yield on
    pygpu.sim.configure()


# ---- transfer seconds = link-busy time ----------------------------------------------

@pytest.mark.timing  # measured seconds (the link's, not the wall's; still run in .ci/run stage 1)
def test_training_epoch_transfer_seconds_match_the_link_model(link_model):
    # A bandwidth the sim's memcpy keeps up with even on a loaded host: then the link,
    # not the host, sets the copy's time and the model's figure is the right answer.
    # Before the fix, the copies' waits behind compute were charged to the link
    # (20x the model at 16 GB/s in the issue; 170x on this loaded machine).
    prof = link_model(latency_us=10, h2d_gbps=1, d2h_gbps=1)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2048, 256)).astype(np.float32)
    y = rng.integers(0, 10, 2048)
    model = nn.MLP([256, 128, 10])
    trainer = pygpu.Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                            device="sim:0")
    trainer.fit(X, y, epochs=1, batch_size=256, progress=False)  # warm: allocator, threads
    with pygpu.track() as t:
        trainer.fit(X, y, epochs=1, batch_size=256, progress=False)
    p = predict(t, prof)
    assert t.h2d_count == 16 and t.d2h_count >= 1
    assert p.measured_transfer_seconds == pytest.approx(p.transfer_seconds, rel=0.25), str(p)


@pytest.mark.timing
def test_blocking_transfer_wait_is_counted_apart_from_the_link(link_model):
    prof = link_model(latency_us=10, h2d_gbps=1, d2h_gbps=1)
    a = pygpu.randn(512, 512, device="sim:0")
    pygpu.synchronize()
    big = a
    for _ in range(6):
        big = big @ a  # queued compute the read below must wait for
    with pygpu.track() as t:
        v = big.sum().item()
    assert np.isfinite(v) or np.isnan(v)
    assert t.d2h_count == 1
    model = prof.transfer_seconds("d2h", t.d2h_bytes)
    assert t.d2h_seconds == pytest.approx(model, rel=0.25, abs=50e-6)
    assert t.wait_seconds.get("item", 0) > t.d2h_seconds  # the matmuls, not the link
    assert "item" in repr(t.stats)
