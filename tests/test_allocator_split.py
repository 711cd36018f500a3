# The caching allocator's large blocks (csrc/core/pg_allocator.c, above 1 MiB): a request is
# served best fit from a larger idle block, which splits when the rest is large (> 1 MiB);
# freed neighbours merge again; the host gives idle whole segments back before its segments'
# peak would grow (release on pressure); the counters stay exact (allocated = handed-out
# blocks, reserved = allocated + cached) through all of it, from several threads at once,
# and on sim, where a block queued work still reads carries that work to whoever gets it.
import gc
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import pygpu

MIB = 1 << 20
F32 = 4


def _ptr(t):
    return np.asarray(t).ctypes.data


def _mib(n):
    """an empty float32 host tensor of n MiB (n may be fractional)"""
    return pygpu.empty(int(n * MIB) // F32)


def _exact(s):
    assert s["reserved"] == s["allocated"] + s["cached"]


@pytest.fixture(autouse=True)
def fresh_cache():
    gc.collect()
    limit = pygpu.cpu.cache_limit()
    pygpu.cpu.set_cache_limit(None)
    pygpu.cpu.empty_cache()
    yield
    gc.collect()
    pygpu.cpu.set_cache_limit(limit)
    pygpu.cpu.empty_cache()


def test_larger_idle_block_splits_serves_and_merges_back():
    base = pygpu.cpu.memory_stats()
    a = _mib(8)
    p = _ptr(a)
    del a
    s = pygpu.cpu.memory_stats()
    assert s["cached"] == 8 * MIB and s["reserved"] == base["reserved"] + 8 * MIB
    hits = s["cache_hits"]
    b = _mib(3)  # best fit: the 8 MiB block, split into 3 + 5
    assert _ptr(b) == p
    s = pygpu.cpu.memory_stats()
    assert s["cache_hits"] == hits + 1
    assert s["allocated"] == base["allocated"] + 3 * MIB and s["cached"] == 5 * MIB
    _exact(s)
    c = _mib(4)  # the rest of 5: split again (4 + 1 would leave 1 MiB: not split, 5 given)
    assert _ptr(c) == p + 3 * MIB
    s = pygpu.cpu.memory_stats()
    assert s["allocated"] == base["allocated"] + 8 * MIB and s["cached"] == 0
    assert s["reserved"] == base["reserved"] + 8 * MIB  # no new memory
    b.fill_(1.0)
    c.fill_(2.0)
    assert float(b.sum()) == 3 * MIB // F32 and float(c.sum()) == 2 * 4 * MIB // F32
    del b  # 3 MiB idle, c still holds the rest of the segment
    assert pygpu.cpu.memory_stats()["cached"] == 3 * MIB
    pygpu.cpu.empty_cache()  # a part of a segment in use cannot go back
    assert pygpu.cpu.memory_stats()["cached"] == 3 * MIB
    del c  # merges with its free neighbour: one 8 MiB block again
    s = pygpu.cpu.memory_stats()
    assert s["cached"] == 8 * MIB and s["allocated"] == base["allocated"]
    d = _mib(8)
    assert _ptr(d) == p
    del d
    pygpu.cpu.empty_cache()
    s = pygpu.cpu.memory_stats()
    assert s["cached"] == 0 and s["reserved"] == base["reserved"]


def test_small_rest_stays_with_the_block_and_counts():
    base = pygpu.cpu.memory_stats()
    a = _mib(4)
    p = _ptr(a)
    del a
    b = _mib(3.5)  # the rest would be 0.5 MiB: the whole 4 MiB block is handed out
    assert _ptr(b) == p
    s = pygpu.cpu.memory_stats()
    assert s["allocated"] == base["allocated"] + 4 * MIB and s["cached"] == 0
    _exact(s)
    del b
    s = pygpu.cpu.memory_stats()
    assert s["allocated"] == base["allocated"] and s["cached"] == 4 * MIB


def test_best_fit_takes_the_smallest_block_that_fits():
    blocks = [_mib(n) for n in (16, 4, 8)]
    ptrs = [_ptr(t) for t in blocks]
    del blocks
    x = _mib(5)  # from the 8: rest 3
    assert _ptr(x) == ptrs[2]
    y = _mib(3)  # the 3-MiB rest fits exactly: taken before the 4
    assert _ptr(y) == ptrs[2] + 5 * MIB
    z = _mib(4)
    assert _ptr(z) == ptrs[1]
    w = _mib(10)  # only the 16 is left: split 10 + 6
    assert _ptr(w) == ptrs[0]
    s = pygpu.cpu.memory_stats()
    assert s["cached"] == 6 * MIB
    _exact(s)


def test_cap_gives_back_only_whole_segments():
    a = _mib(8)
    p = _ptr(a)
    del a
    b = _mib(3)
    assert _ptr(b) == p
    pygpu.cpu.set_cache_limit(0)  # the 5-MiB rest is a part of b's segment: it stays
    assert pygpu.cpu.memory_stats()["cached"] == 5 * MIB
    del b  # the segment is whole again and over the cap: back to the system
    s = pygpu.cpu.memory_stats()
    assert s["cached"] == 0
    _exact(s)


# In a fresh process: the segments' peak starts at zero there.
_PRESSURE = textwrap.dedent("""
    import gc, pygpu
    MIB = 1 << 20
    def mib(n): return pygpu.empty(n * MIB // 4)
    def cached(): return pygpu.cpu.memory_stats()["cached"]
    a, b = mib(8), mib(8)          # the segments' peak: 16 MiB
    del a, b
    pygpu.cpu.empty_cache()         # 0 held, peak still 16
    c = mib(4); del c               # 4 idle
    d = mib(6)                      # a miss: 4 + 6 <= 16, so the idle 4 stays
    assert cached() == 4 * MIB, cached()
    e = mib(10)                     # a miss past the peak (4 + 6 + 10 > 16): the idle 4 goes
    assert cached() == 0, cached()
    s = pygpu.cpu.memory_stats()
    assert s["reserved"] == s["allocated"] + s["cached"]
    del d, e
    f = mib(12)                     # idle 6 and 10, neither fits: a miss past the peak
    assert cached() == 0, cached()  # (16 + 12 > 16): both go back, oldest first
    print("ok")
""")


def test_release_on_pressure_keeps_the_segments_peak():
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env.pop("PYGPU_HOST_CACHE_MB", None)
    out = subprocess.run([sys.executable, "-c", _PRESSURE], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_threads_splitting_and_merging_keep_contents_and_counters():
    base = pygpu.cpu.memory_stats()
    errors = []

    def work(k):
        try:
            rng = np.random.default_rng(k)
            held = []
            for i in range(60):
                n = int(rng.integers(MIB // F32 + 1, 6 * MIB // F32))
                t = pygpu.full((n,), float(k * 1000 + i))
                u = t * 2.0  # the pool's threads run the op
                held.append((t, u, float(k * 1000 + i)))
                if len(held) > 3 or rng.random() < 0.3:
                    t0, u0, v = held.pop(int(rng.integers(len(held))))
                    # no other thread's block overlapped ours while we held it
                    if float(t0.min()) != v or float(t0.max()) != v or float(u0.max()) != 2 * v:
                        errors.append((k, i))
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
    _exact(s)
    pygpu.cpu.empty_cache()  # every segment is whole again: all of it goes back
    s = pygpu.cpu.memory_stats()
    assert s["cached"] == 0 and s["reserved"] == base["reserved"]


def test_sim_blocks_split_and_merge_under_queued_work():
    n = 3 * MIB // F32
    src = np.arange(n, dtype=np.float32)
    for _ in range(10):
        big = pygpu.zeros(4 * n, device="sim:0")  # 12 MiB
        x = pygpu.tensor(src).to("sim:0", non_blocking=True)
        y = (x + 1.0) * big[:n]  # queued work reads big
        del big  # back at once, with that work's events
        z = pygpu.full((n,), 5.0, device="sim:0")  # may be a split of big's block
        w = pygpu.full((2 * n,), 7.0, device="sim:0")
        np.testing.assert_array_equal(y.cpu().numpy(), np.zeros(n, np.float32))
        np.testing.assert_array_equal(z.cpu().numpy(), np.full(n, 5.0, np.float32))
        np.testing.assert_array_equal(w.cpu().numpy(), np.full(2 * n, 7.0, np.float32))
        del x, y, z, w
    pygpu.sim.synchronize()
    gc.collect()
    s = pygpu.sim.memory_stats()
    assert s["reserved"] == s["allocated"] + s["cached"]
    pygpu.sim.empty_cache()
    assert pygpu.sim.memory_stats()["cached"] == 0
