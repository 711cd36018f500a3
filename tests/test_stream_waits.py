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


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc/self/task")
def test_a_copy_waiting_for_a_task_far_ahead_sleeps_until_it():
    # A copy to sim:1 of the last of 300 tasks queued on sim:0 (150 products, 150 scalings):
    # the copy engine waits for the compute stream's task 300 ahead. It used to wake at each
    # of the 299 tasks before it and spin 30 us each time (issue 47: 18 ms of CPU per DataParallel epoch);
    # it now sleeps until that task is done: one wake-up, well under a millisecond of CPU.
    # Its CPU is read from /proc (per thread), so a loaded host does not blur it.
    if pygpu.sim.device_count() < 2:
        pytest.skip("needs two sim devices")
    a = pygpu.rand(192, 192, device="sim:0")
    a.to("sim:1", non_blocking=True).wait()  # the copy engine's thread exists
    pygpu.synchronize()

    def copy_engines_cpu():
        total = 0
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    name = f.read().strip()
                if name.startswith("pygpu-sim") and name.endswith("-cp"):
                    with open(f"/proc/self/task/{tid}/schedstat") as f:
                        total += int(f.read().split()[0])
            except OSError:  # a thread that ended meanwhile
                continue
        return total / 1e9

    cpu0 = copy_engines_cpu()
    x = a
    for _ in range(150):
        x = (x @ a) * (1.0 / 192)
    y = x.to("sim:1", non_blocking=True)
    y.wait()
    spent = copy_engines_cpu() - cpu0
    np.testing.assert_allclose(y.numpy(), x.numpy())
    assert spent < 1.5e-3, (f"the copy engines spent {spent * 1e3:.2f} ms of CPU waiting for "
                            "one task 300 tasks ahead: they woke at every task before it")
