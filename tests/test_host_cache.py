# The host caching allocator (csrc/core/pg_allocator.c for the cpu device, pygpu.cpu):
# large host tensors reuse freed blocks of their size instead of fresh pages, the
# counters stay exact (allocated = live blocks, reserved = allocated + cached), the cap
# gives back the blocks freed longest ago, empty_cache gives back everything, a block
# queued work still reads is not handed out, and threads allocating at once agree.
import gc
import threading

import numpy as np
import pytest

import pygpu

BIG = 1 << 16  # float32 elements: 256 KiB, above the 64 KiB threshold
KIB = 1024


def _ptr(t):
    return np.asarray(t).ctypes.data


@pytest.fixture(autouse=True)
def fresh_cache():
    gc.collect()
    limit = pygpu.cpu.cache_limit()
    pygpu.cpu.empty_cache()
    yield
    gc.collect()
    pygpu.cpu.set_cache_limit(limit)
    pygpu.cpu.empty_cache()


def _round(nbytes):
    if nbytes <= 1 << 20:
        return -(-nbytes // 512) * 512
    return -(-nbytes // (64 * KIB)) * (64 * KIB)


def test_freed_block_is_reused_by_same_size_and_zeros_are_zeros():
    x = pygpu.ones(BIG)
    p = _ptr(x)
    hits = pygpu.cpu.memory_stats()["cache_hits"]
    del x
    assert pygpu.cpu.memory_stats()["cached"] == BIG * 4
    y = pygpu.zeros(BIG)
    assert _ptr(y) == p
    assert pygpu.cpu.memory_stats()["cache_hits"] == hits + 1
    assert pygpu.cpu.memory_stats()["cached"] == 0
    np.testing.assert_array_equal(y.numpy(), np.zeros(BIG, np.float32))


def test_counters_exact_through_alloc_free_and_empty_cache():
    base = pygpu.cpu.memory_stats()
    sizes = [100_000, 300_004, 1_500_000, 5 << 20]  # bytes, some not multiples of the classes
    ts = [pygpu.empty(n // 4) for n in sizes]
    small = pygpu.ones(100)  # below the threshold: one malloc, its exact bytes
    s = pygpu.cpu.memory_stats()
    blocks = sum(_round(n) for n in sizes)
    assert s["allocated"] == base["allocated"] + blocks + 400
    assert s["reserved"] == s["allocated"] + s["cached"]
    assert s["peak"] >= s["allocated"]
    del ts
    s = pygpu.cpu.memory_stats()
    assert s["allocated"] == base["allocated"] + 400
    assert s["cached"] == blocks
    assert s["reserved"] == s["allocated"] + s["cached"]
    pygpu.cpu.empty_cache()
    s = pygpu.cpu.memory_stats()
    assert s["cached"] == 0 and s["reserved"] == s["allocated"] == base["allocated"] + 400
    del small
    assert pygpu.cpu.memory_allocated() == base["allocated"]
    assert pygpu.cpu.memory_reserved() == base["reserved"]
    assert pygpu.cpu.max_memory_allocated() >= base["allocated"] + blocks


def test_cap_gives_back_least_recently_freed_first():
    pygpu.cpu.set_cache_limit(3 * BIG * 4)
    a, b, c, d = (pygpu.full((BIG,), float(i)) for i in range(4))
    pa, pb, pc, pd = map(_ptr, (a, b, c, d))
    del a, b, c  # cached: a, b, c (exactly at the cap)
    assert pygpu.cpu.memory_stats()["cached"] == 3 * BIG * 4
    del d  # over the cap: a, freed first, goes
    assert pygpu.cpu.memory_stats()["cached"] == 3 * BIG * 4
    again = [pygpu.empty(BIG) for _ in range(3)]
    assert {_ptr(t) for t in again} == {pb, pc, pd}
    assert pygpu.cpu.memory_stats()["cached"] == 0
    del again
    # lowering the cap gives back blocks at once; a block larger than the cap is not kept
    pygpu.cpu.set_cache_limit(None)
    ts = [pygpu.empty(BIG) for _ in range(4)]
    del ts
    pygpu.cpu.set_cache_limit(BIG * 4)
    assert pygpu.cpu.memory_stats()["cached"] == BIG * 4
    x = pygpu.empty(4 * BIG)
    del x
    assert pygpu.cpu.memory_stats()["cached"] == BIG * 4
    s = pygpu.cpu.memory_stats()
    assert s["reserved"] == s["allocated"] + s["cached"]
    pygpu.cpu.set_cache_limit(0)
    assert pygpu.cpu.memory_stats()["cached"] == 0
    assert pygpu.cpu.cache_limit() == 0
    with pytest.raises(ValueError):
        pygpu.cpu.set_cache_limit(-1)


def test_block_read_by_queued_copy_is_not_handed_out():
    a = np.arange(4 * BIG, dtype=np.float32)
    for _ in range(20):
        x = pygpu.tensor(a)
        y = x.to("sim:0", non_blocking=True)
        del x  # the queued copy still holds the block
        z = pygpu.full((4 * BIG,), -1.0)  # may reuse a block, never the one still read
        np.testing.assert_array_equal(y.cpu().numpy(), a)
        np.testing.assert_array_equal(z.numpy(), np.full(4 * BIG, -1.0, np.float32))


def test_training_step_reuses_blocks():
    model = pygpu.nn.Sequential(pygpu.nn.Linear(784, 512), pygpu.nn.ReLU(), pygpu.nn.Linear(512, 10))
    opt = pygpu.optim.SGD(model.parameters(), lr=0.01)
    x = pygpu.randn(64, 784)
    y = pygpu.tensor(np.arange(64) % 10)

    def step():
        opt.zero_grad()
        loss = pygpu.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    step()
    step()
    gc.collect()
    before = pygpu.cpu.memory_stats()
    for _ in range(3):
        step()
    gc.collect()
    after = pygpu.cpu.memory_stats()
    assert after["reserved"] == before["reserved"]  # no new blocks after warm-up
    big_allocs = after["cache_hits"] - before["cache_hits"]
    assert big_allocs > 0


def test_threads_allocating_at_once_keep_counters_exact():
    base = pygpu.cpu.memory_stats()
    errors = []

    def work(k):
        try:
            rng = np.random.default_rng(k)
            for _ in range(200):
                n = int(rng.integers(BIG // 4, 4 * BIG))
                t = pygpu.full((n,), float(k))
                u = t * 2.0  # the pool's threads run the op
                if float(u[n - 1]) != 2.0 * k:
                    errors.append((k, n))
        except Exception as e:  # reported below: a failing thread must fail the test
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    gc.collect()
    s = pygpu.cpu.memory_stats()
    assert s["allocated"] == base["allocated"]
    assert s["reserved"] == s["allocated"] + s["cached"]
    pygpu.cpu.empty_cache()
    assert pygpu.cpu.memory_reserved() == base["reserved"]


def test_cpu_namespace_refuses_other_devices():
    with pytest.raises(ValueError):
        pygpu.cpu.memory_allocated("sim:0")
    assert pygpu.cpu.device_count() == 1 and pygpu.cpu.is_available()
