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
    # The worker is asleep (idle for 50 ms) when one long product is queued: waking it
    # takes tens of microseconds, so the thread that waits claims the task first and
    # computes it (~9 ms of CPU); a waiter that only spun and slept spent <= 0.3 ms.
    # A few attempts: on a loaded host the waiter may itself be descheduled at the start.
    a = pygpu.rand(768, 768, device="sim:0")
    ref = None
    for _ in range(5):
        (a @ a).wait()
        time.sleep(0.05)
        cpu0 = time.thread_time()
        r = a @ a
        r.wait()
        cpu = time.thread_time() - cpu0
        if ref is None:
            ref = a.numpy() @ a.numpy()
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-4, atol=1e-3)
        if cpu > 2e-3:
            break
    assert cpu > 2e-3, f"the waiting thread spent {cpu * 1e3:.2f} ms of CPU: it did not compute"


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
