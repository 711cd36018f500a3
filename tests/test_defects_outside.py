"""Issue 20: defects found by trying pygpu from outside, one test (or a few) per item.

1. transfer seconds are link-busy time, waiting is its own figure;
2. an asynchronous error is delivered once, then cleared for that device;
3. the training peak is close to estimate_memory;
4. Trainer.fit(progress=True) draws on a real pseudo-terminal;
5. the main job reports a median with its spread (tests/test_main.py covers the output);
6. an int too big for int64 names the dtype and its range; calibration is robust to outliers."""
import os
import pty
import re
import select
import subprocess
import sys

import numpy as np
import pytest

import pygpu
from pygpu import nn, optim
from pygpu.cost import link_model_profile, predict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def link_model():
    def on(**kw):
        pygpu.sim.configure(**kw)
        return link_model_profile(pygpu.sim.link())
    yield on
    pygpu.sim.configure()


# ---- 1. transfer seconds = link-busy time ----------------------------------------------

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


# ---- 2. an asynchronous error is delivered once ------------------------------------------

def _device_works(dev="sim:0"):
    assert (pygpu.ones(3, device=dev) * 2).tolist() == [2.0, 2.0, 2.0]


def test_cross_entropy_label_error_is_raised_once_then_cleared():
    pygpu.synchronize()
    logits = pygpu.randn(4, 3, device="sim:0")
    labels = pygpu.tensor(np.array([0, 1, 7, 2])).to("sim:0")
    loss = nn.CrossEntropyLoss()(logits, labels)
    with pytest.raises(pygpu.AsyncOpError, match="label 7"):
        loss.item()
    pygpu.synchronize()  # clean: the error was delivered to .item()
    pygpu.synchronize("sim:0")
    _device_works()
    with pytest.raises(pygpu.AsyncOpError, match="label 7"):
        loss.item()  # the failed tensor's bytes are still bad: reading it says so again
    pygpu.synchronize()


@pytest.mark.parametrize("observe", ["wait", "item", "synchronize"])
def test_injected_fault_is_raised_once_then_cleared(observe):
    pygpu.synchronize()
    pygpu.sim.inject_fault("add", device=0)
    t = pygpu.ones(8, device="sim:0") + 1
    with pytest.raises(pygpu.AsyncOpError, match="simulated device fault"):
        if observe == "wait":
            t.wait()
        elif observe == "item":
            t.sum().item()
        else:
            pygpu.synchronize()
    pygpu.synchronize()
    _device_works()


def test_an_unobserved_failure_still_reaches_synchronize():
    pygpu.synchronize()
    pygpu.sim.inject_fault("multiply", device=0)
    pygpu.ones(8, device="sim:0") * 3  # nobody reads it
    with pytest.raises(pygpu.AsyncOpError, match="simulated device fault"):
        pygpu.synchronize()
    pygpu.synchronize()
    _device_works()


# ---- 4. Trainer.fit(progress=True) on a terminal -----------------------------------------

_FIT = r'''
import sys
import numpy as np
import pygpu
from pygpu import nn, optim
n = int(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.standard_normal((n, 16)).astype(np.float32)
y = rng.integers(0, 2, n)
m = nn.MLP([16, 32, 2])
pygpu.Trainer(m, optim.SGD(m.parameters(), lr=0.1), nn.CrossEntropyLoss(), device="sim:0").fit(
    X, y, epochs=2, batch_size=16, progress=True)
'''


def _run_on_pty(code, *args):
    """Run `python -c code args` with stdin, stdout and stderr on a fresh pseudo-terminal
    (no window size set, as a CI runner's); what the terminal received."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="120", TERM="xterm", PYTHONPATH=ROOT)
    p = subprocess.Popen([sys.executable, "-c", code, *args], stdin=slave, stdout=slave,
                         stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif p.poll() is not None:
                break
    finally:
        os.close(master)
        rc = p.wait(timeout=300)
    assert rc == 0, out.decode(errors="replace")
    return out.decode(errors="replace")


@pytest.mark.parametrize("n", [2000, 100000])  # 0.1 s and 1.1 s on the idle machine
def test_fit_progress_draws_on_a_pseudo_terminal(n):
    out = _run_on_pty(_FIT, str(n))
    lines = [ln for ln in out.split("\r\n") if ln.strip()]
    assert len(lines) == 2, repr(out[-2000:])  # one bar per epoch, each left on screen
    for epoch, line in enumerate(lines, 1):
        frames = [f for f in line.split("\r") if f.strip()]
        final = frames[-1]
        assert final.startswith(f"epoch {epoch}/2: 100%"), repr(final)
        assert "loss=" in final and "samples_per_s=" in final, repr(final)
        assert re.search(r"\| (\S+)/\1 \[", final), repr(final)  # every sample counted
    if n >= 100000:  # a long fit: the bar moves, with the loss on it, before the end
        moving = [f for f in lines[0].split("\r") if "loss=" in f and "100%" not in f]
        assert moving, repr(lines[0][-2000:])


# ---- 6. smaller ones ------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["cpu", "sim:0"])
@pytest.mark.parametrize("value", [2**70, -2**70, 2**63])
def test_an_int_too_big_for_int64_names_the_dtype_and_its_range(where, value):
    t = pygpu.zeros(3, dtype=pygpu.int64, device=where)
    msg = rf"Python integer {value} out of bounds for int64.*-2\*\*63 to 2\*\*63 - 1"
    with pytest.raises(OverflowError, match=msg):
        t[0] = value
    with pytest.raises(OverflowError, match=msg):
        t + value
    t[0] = 2**63 - 1  # the edges still fit
    t[1] = -2**63
    assert t.tolist() == [2**63 - 1, -2**63, 0]


def test_a_big_int_beside_a_float_tensor_is_a_float_as_in_numpy():
    f = pygpu.zeros(2, dtype=pygpu.float64)
    f[0] = 2**70
    assert (f + 2**70).tolist() == [2.0**71, 2.0**70]


def test_calibration_takes_the_median_of_repeats_and_rejects_outliers():
    from pygpu.cost.calibrate import robust_median
    # one repeat descheduled for 5 ms among 20 us copies: the median is the copies'
    assert robust_median([20e-6, 21e-6, 19e-6, 5e-3, 20e-6, 20.5e-6, 19.5e-6]) == pytest.approx(20e-6, rel=0.03)
    # a whole size measured while the machine was busy (the loaded calibration
    # came out 14% low): the fit through the other sizes still recovers 10 us + 16 GB/s
    sizes = [4 ** k for k in range(1, 13)]
    pts = [(b, 10e-6 + b / 16e9) for b in sizes]
    pts[8] = (pts[8][0], pts[8][1] * 1.6)
    pts[10] = (pts[10][0], pts[10][1] * 1.4)
    ln = pygpu.cost.fit_link(pts)
    assert ln.latency_s == pytest.approx(10e-6, rel=0.02) and ln.bandwidth_bps == pytest.approx(16e9, rel=0.02)
    assert ln.fit_error < 0.01
