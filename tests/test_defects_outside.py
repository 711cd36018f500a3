"""Issue 20: defects found by trying pygpu from outside, one test (or a few) per item.

1. transfer seconds are link-busy time, waiting is its own figure;
2. an asynchronous error is delivered once, then cleared for that device;
3. the training peak is close to estimate_memory;
4. Trainer.fit(progress=True) draws on a real pseudo-terminal;
5. the main job reports a median with its spread (tests/test_main.py covers the output);
6. an int too big for int64 names the dtype and its range; calibration is robust to outliers."""
import os
import pty
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
