# test_stream_waits.py - how a thread waits for a sim stream: it runs, itself, the queued
# tasks no thread has started (so synchronize() never waits for the worker to be scheduled),
# and it never yields its core while waiting (a yield hands the core to another process's
# thread until the next scheduler tick: the 4 ms stalls of 64x64 matmul + synchronize).
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import pygpu


def test_a_waiter_runs_the_tasks_no_thread_has_started():
    a = pygpu.rand(384, 384, device="sim:0")
    (a @ a).wait()
    results = [a @ a for _ in range(24)]  # ~1 ms each: the worker is far behind
    cpu0, t0 = time.thread_time(), time.perf_counter()
    pygpu.synchronize("sim:0")
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - t0
    # the waiting thread computed (a sleeping or spinning waiter spends ~0.2 ms of CPU at most)
    assert cpu > 0.2 * wall and cpu > 2e-3, f"waiter's CPU {cpu * 1e3:.2f} ms of {wall * 1e3:.2f} ms"
    ref = a.numpy() @ a.numpy()
    for r in results[::6]:  # in order, each once: every result is the product
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_a_chain_waited_from_several_threads_runs_each_task_once():
    import threading
    x = pygpu.ones(64, device="sim:0")
    ys = []
    for _ in range(200):
        x = x + 1.0
        ys.append(x)
    errors = []

    def wait(y):
        try:
            y.wait()
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=wait, args=(ys[i],)) for i in (50, 120, 199)]
    for t in threads:
        t.start()
    pygpu.synchronize("sim:0")
    for t in threads:
        t.join()
    assert not errors
    assert float(ys[-1].numpy()[0]) == 201.0 and float(ys[99].numpy()[0]) == 101.0


@pytest.mark.timing
def test_synchronize_does_not_wait_out_a_scheduler_tick():
    # 200 x (64x64 matmul + synchronize) on sim:0, beside one busy process (as a
    # shared host has): the old yielding waits made 1-5 calls (quiet) to ~90 calls (one busy
    # process) take a scheduler tick (2.5-4 ms or more); now none should.
    busy = subprocess.Popen([sys.executable, "-c",
                             "import time\nt = time.time()\nwhile time.time() - t < 30: pass"])
    try:
        a = pygpu.randn(64, 64, device="sim:0")
        pygpu.synchronize()
        times = []
        for _ in range(200):
            t0 = time.perf_counter()
            a @ a
            pygpu.synchronize("sim:0")
            times.append(time.perf_counter() - t0)
    finally:
        busy.kill()
        busy.wait()
    times = np.array(times) * 1e3
    slow = int((times > 1.0).sum())
    assert slow <= 2, (f"{slow} of 200 calls took over 1 ms (median {np.median(times):.3f} ms, "
                       f"max {times.max():.2f} ms) on {os.cpu_count()} cores")
