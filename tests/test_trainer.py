# test_trainer.py - pygpu.Trainer on real data, its history and counters, its
# progress bar, evaluate/predict, checkpoints of a trained model, and
# nn.estimate_memory against the peak measured on sim.
#
# The real data is sklearn's digits (1,797 8x8 images, shipped inside
# scikit-learn: no download); an MLP must reach >= 95% on a held-out quarter
# on every device. The counters must show the cost model's shape: the
# weights go in once, batches are light pinned async copies, and the host
# reads the loss only at the end of the epoch (and a few times a second for
# the progress bar), each read counted as an implicit "item" transfer.
import gc
import io
import os
import pty
import re
import select
import subprocess
import sys
import time

import numpy as np
import pytest

import pygpu


@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)  # (1797, 64) in [0, 1]
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order].astype(np.int64)
    n = len(X) * 3 // 4
    return X[:n], y[:n], X[n:], y[n:]


def _trainer(device, sizes=(64, 64, 10), lr=0.1, momentum=0.9, loss=None):
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP(list(sizes))
    opt = pygpu.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    return pygpu.Trainer(model, opt, loss or pygpu.nn.CrossEntropyLoss(), device=device)


def test_mlp_reaches_95_percent_on_held_out_digits(device, digits):
    Xtr, ytr, Xte, yte = digits
    trainer = _trainer(device)
    history = trainer.fit(Xtr, ytr, epochs=12, batch_size=32, progress=False, seed=0,
                          validation=(Xte, yte))
    assert len(history) == 12
    assert history[-1]["loss"] < history[0]["loss"]
    result = trainer.evaluate(Xte, yte)
    assert result["accuracy"] >= 0.95, f"held-out accuracy {result['accuracy']:.3f} on {device}"
    assert history[-1]["val_accuracy"] == pytest.approx(result["accuracy"])
    pred = trainer.predict(Xte)
    assert str(pred.device) == str(pygpu.device(device)) and pred.shape == (len(Xte), 10)
    assert (pred.numpy().argmax(axis=1) == yte).mean() == pytest.approx(result["accuracy"])


def test_history_records_loss_accuracy_speed_and_transfers(digits, fresh_stats):
    Xtr, ytr, _, _ = digits
    Xtr, ytr = Xtr[:320], ytr[:320]
    trainer = _trainer("sim:0")
    h = trainer.fit(Xtr, ytr, epochs=2, batch_size=64, progress=False, shuffle=False)
    for rec in h:
        assert {"epoch", "loss", "accuracy", "samples_per_s", "seconds", "h2d_count", "h2d_bytes",
                "d2h_count", "d2h_bytes", "implicit", "syncs"} <= set(rec)
        assert rec["samples"] == 320 and rec["samples_per_s"] > 0 and 0 <= rec["accuracy"] <= 1
        assert rec["h2d_count"] == 5 * 2  # five batches, X and y each: light requests only
        assert rec["h2d_bytes"] == Xtr.nbytes + ytr.nbytes
        assert rec["implicit"] == {"item": 2}  # the epoch's loss and accuracy, read once each
        assert rec["d2h_count"] == 2
    assert trainer.history == h


def test_accuracy_and_loss_match_a_recomputation(digits):
    Xtr, ytr, _, _ = digits
    trainer = _trainer("cpu", lr=0.0, momentum=0.0)  # lr 0: the model is the same in every step
    rec = trainer.fit(Xtr[:200], ytr[:200], epochs=1, batch_size=50, progress=False, shuffle=False)[0]
    logits = trainer.predict(Xtr[:200]).numpy().astype(np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    assert rec["loss"] == pytest.approx(-logp[np.arange(200), ytr[:200]].mean(), rel=1e-5)
    assert rec["accuracy"] == pytest.approx((logits.argmax(axis=1) == ytr[:200]).mean())


def test_weights_go_in_once_and_come_back_once(digits, fresh_stats):
    Xtr, ytr, _, _ = digits
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP([64, 32, 10])
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    nparams = len(list(model.parameters()))
    pbytes = sum(p.nbytes for p in model.parameters())
    with pygpu.track() as t:
        trainer = pygpu.Trainer(model, opt, pygpu.nn.CrossEntropyLoss(), device="sim")
    assert t.h2d_count == nparams and t.h2d_bytes == pbytes  # the first heavy request
    with pygpu.track() as t:
        trainer.fit(Xtr[:256], ytr[:256], epochs=3, batch_size=64, progress=False, bring_back=True)
    assert t.h2d_count == 3 * 4 * 2 and t.h2d_bytes == 3 * (Xtr[:256].nbytes + ytr[:256].nbytes)
    assert t.d2h_count == nparams + 3 * 2  # weights out once + two counted reads per epoch
    assert t.d2h_bytes >= pbytes
    assert all(str(p.device) == "cpu" for p in model.parameters())


def test_a_step_makes_no_transfer_beyond_its_batch(fresh_stats):
    X = np.random.default_rng(0).random((640, 16), dtype=np.float32)
    y = (X.sum(axis=1) > 8).astype(np.int64)
    trainer = _trainer("sim", sizes=(16, 16, 2))
    with pygpu.track() as t:
        trainer.fit(X, y, epochs=1, batch_size=32, progress=False)
    assert t.h2d_count == 20 * 2 and t.d2h_count == 2 and t.d2d_count == 0


def test_fit_takes_a_sampler_and_tells_it_the_epoch(digits):
    Xtr, ytr, _, _ = digits

    class EvenThenOdd:  # a stand-in for a DistributedSampler: this "rank" sees half the data
        def __init__(self):
            self.epochs = []

        def set_epoch(self, e):
            self.epochs.append(e)

        def __iter__(self):
            return iter(range(self.epochs[-1] % 2, 200, 2))

        def __len__(self):
            return 100

    sampler = EvenThenOdd()
    with pygpu.track() as t:
        h = _trainer("sim").fit(Xtr[:200], ytr[:200], epochs=2, batch_size=25, progress=False,
                                sampler=sampler)
    assert sampler.epochs == [0, 1] and [r["samples"] for r in h] == [100, 100]
    assert t.h2d_bytes - sum(p.nbytes for p in pygpu.nn.MLP([64, 64, 10]).parameters()) == \
        Xtr[:200].nbytes + ytr[:200].nbytes  # each epoch moved its own half


def test_regression_with_mse_has_no_accuracy():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((256, 4)).astype(np.float32)
    y = (X @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32))  # (256, 1)
    trainer = _trainer("sim", sizes=(4, 1), lr=0.05, momentum=0.0, loss=pygpu.nn.MSELoss())
    h = trainer.fit(X, y, epochs=15, batch_size=32, progress=False, seed=1)
    assert "accuracy" not in h[0] and h[-1]["loss"] < 0.05 * h[0]["loss"]
    assert "accuracy" not in trainer.evaluate(X, y)


def test_progress_bar_shows_loss_and_speed_when_asked(digits, monkeypatch):
    Xtr, ytr, _, _ = digits
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    _trainer("sim").fit(Xtr[:256], ytr[:256], epochs=2, batch_size=64, progress="always")
    out = err.getvalue()
    assert "epoch 2/2" in out and "loss=" in out and "samples_per_s=" in out


def test_progress_true_is_quiet_off_a_terminal(digits, monkeypatch):
    Xtr, ytr, _, _ = digits
    err = io.StringIO()  # not a terminal
    monkeypatch.setattr("sys.stderr", err)
    _trainer("sim").fit(Xtr[:256], ytr[:256], epochs=1, batch_size=64, progress=True)
    assert err.getvalue() == ""


@pytest.mark.timing
def test_the_bar_reads_the_loss_a_few_times_a_second_at_most(monkeypatch):
    # Steps slowed to ~5 ms each: ~1 s of training. A bar reading the loss every step
    # would make ~200 reads; at refresh_per_s=4 it may make about 4 a second.
    X = np.random.default_rng(0).random((200 * 8, 8), dtype=np.float32)
    y = np.zeros(len(X), np.int64)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    trainer = _trainer("sim", sizes=(8, 2))
    forward = trainer.model.forward

    def slow_forward(x):
        time.sleep(0.005)
        return forward(x)

    trainer.model.forward = slow_forward
    t0 = time.perf_counter()
    with pygpu.track() as t:
        trainer.fit(X, y, epochs=1, batch_size=8, progress="always", refresh_per_s=4)
    seconds = time.perf_counter() - t0
    reads = t.implicit.get("item", 0)
    assert 2 < reads <= 2 + 4 * seconds + 1, f"{reads} reads in {seconds:.2f} s"
    assert t.d2h_count == reads  # every read is a counted transfer, with its trigger


@pytest.mark.parametrize("kwargs, words", [
    (dict(epochs=-1), "epochs must be an int >= 0"),
    (dict(epochs=1.5), "epochs"),
    (dict(progress="yes"), "progress must be True, False or 'always'"),
    (dict(validation=np.zeros(3)), "validation must be a pair"),
])
def test_bad_fit_arguments_say_what_is_wrong(kwargs, words):
    X, y = np.zeros((4, 64), np.float32), np.zeros(4, np.int64)
    args = dict(epochs=1, batch_size=2, progress=False)
    args.update(kwargs)
    with pytest.raises(ValueError, match=words):
        _trainer("cpu").fit(X, y, **args)


def test_a_trained_model_survives_a_checkpoint(digits, tmp_path):
    Xtr, ytr, Xte, yte = digits
    trainer = _trainer("sim")
    trainer.fit(Xtr[:400], ytr[:400], epochs=2, batch_size=32, progress=False)
    pygpu.save(trainer.model.state_dict(), tmp_path / "mlp.safetensors")
    model = pygpu.nn.MLP([64, 64, 10])
    sd = pygpu.load(tmp_path / "mlp.safetensors", map_location="cpu")
    model.load_state_dict(sd)
    again = pygpu.Trainer(model, pygpu.optim.SGD(model.parameters(), lr=0.1),
                          pygpu.nn.CrossEntropyLoss(), device="cpu")
    np.testing.assert_allclose(again.predict(Xte).numpy(), trainer.predict(Xte).numpy(),
                               rtol=1e-5, atol=1e-5)


_PEAK_CASES = [(sizes, batch, opt)
               for sizes, batch in [((784, 512, 512, 10), 64), ((784, 512, 512, 10), 512),
                                    ((256, 1024, 1024, 10), 128)]
               for opt in ["sgd", "momentum", "adam"]]
# two small-model cases (every tensor <= 1 MiB, below the allocator's 2 MiB rounding):
# measured at 14.75 MB and 28.64 MB for estimates of 7.58 MB and 9.56 MB before
_PEAK_CASES += [((256, 512, 512, 10), 128, "adam"), ((256, 512, 512, 10), 512, "momentum")]


@pytest.mark.parametrize("sizes, batch, optimizer", _PEAK_CASES)
def test_estimate_memory_agrees_with_the_peak_measured_on_sim(sizes, batch, optimizer):
    gc.collect()
    pygpu.synchronize()
    base = pygpu.sim.memory_allocated(1)  # what earlier tests left (should be nothing)
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP(list(sizes)).to("sim:1")
    params = model.parameters()
    opt = {"sgd": lambda: pygpu.optim.SGD(params, lr=0.01),
           "momentum": lambda: pygpu.optim.SGD(params, lr=0.01, momentum=0.9),
           "adam": lambda: pygpu.optim.Adam(params)}[optimizer]()
    est = pygpu.nn.estimate_memory(model, batch, opt)
    loss_fn = pygpu.nn.CrossEntropyLoss()
    x = pygpu.randn(batch, sizes[0], device="sim:1")
    y = pygpu.tensor(np.arange(batch) % sizes[-1], device="sim:1")
    pygpu.synchronize()
    start = pygpu.sim.memory_allocated(1) - base
    assert start == est.parameters + est.inputs  # what exists before the step: weights, batch
    pygpu.sim.reset_peak_memory_stats(1)
    for _ in range(3):  # as a training loop runs: ahead of the device, never waiting for it
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()  # the first step makes the optimizer's state
    pygpu.synchronize()
    peak = pygpu.sim.max_memory_allocated(1) - base
    assert abs(est.total - peak) <= 0.15 * peak, f"estimate {est} vs measured peak {peak / 2**20:.2f} MiB"


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- Trainer.fit(progress=True) on a terminal -----------------------------------------

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
