"""pygpu.Trainer: fit / evaluate / predict for a model, its optimizer and a loss.

Written the way the cost model says training should go: the model moves to
the device once at the start (one heavy request) and, if asked, comes back
once at the end (the other); in between only batches travel (light
requests, prefetched by pygpu.data.DataLoader), and every step's forward,
backward and update run where the data lives.

The trainer never waits for the device per step. The epoch's loss and number
of correct predictions are accumulated in device scalars; the host reads
them once at the end of the epoch and, for the progress bar, at most
`refresh_per_s` times a second. Each such read is an implicit transfer that
pygpu.stats() counts under its trigger ("item"), so the history shows them.

History: one dict per epoch with loss, accuracy (when classifying: integer
labels), samples_per_s, seconds, and from pygpu.track() the transfers each
way (h2d_count/bytes, d2h_count/bytes), the implicit reads by trigger and the
synchronizations; val_loss / val_accuracy when validation data is given.

precision: "32" (default), "bf16-mixed" or "16-mixed" (Lightning's names). The
mixed ones run each step's forward and loss under pygpu.autocast (matmuls and
linear layers in bfloat16 / float16, the loss in float32; the parameters and
the optimizer stay float32) and send float training inputs as 16-bit (half the
bytes of float32 per batch; bfloat16 host arrays need the ml_dtypes package,
else they travel as float32 and are cast on the device). "16-mixed" also
scales the loss with a pygpu.amp.GradScaler: a step whose gradients overflow
is skipped, and the history's "skipped_steps" and "scale" say how many and
where the scale ended; its inf/NaN check reads one device scalar per step."""
import contextlib
import math
import sys
import time

import numpy as np

from . import _C
from ._tensor.create import empty, zeros
from ._device import device as _device
from ._dtype import bfloat16, float16, int64
from ._stats import track
from .amp import GradScaler, autocast
from .autograd import no_grad
from .data import DataLoader


def _is_labels(y):
    dt = y.dtype if isinstance(y, _C.Tensor) else np.asarray(y).dtype
    return dt == int64 if isinstance(y, _C.Tensor) else np.dtype(dt).kind in "iu"


def _model_device(model):
    for p in model.parameters():
        return p.device
    return _device("cpu")


def _bar_size(stream):
    """{} when the terminal reports its size (tqdm follows it) or the stream is no
    terminal (tqdm then draws unbounded); else ncols and nrows to use.

    A pseudo-terminal nobody set a window size on (a CI runner, `script`, docker
    without a tty size, a pty opened by a test) reports 0 x 0, and tqdm then
    draws nothing at all (it takes the bar to be below the last row) but the
    final newline. Fall back to $COLUMNS / $LINES, else 80 x 24, as shutil does."""
    import os
    import shutil
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):  # not a terminal (a file, a StringIO)
        return {}
    if size.columns > 0 and size.lines > 0:
        return {}
    cols, lines = shutil.get_terminal_size((80, 24))
    return {"ncols": cols if cols > 0 else 80, "nrows": lines if lines > 0 else 24}


def _progress_bar(progress, total, desc):
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is a dependency; without it, train quietly
        return None
    # progress=True: a bar only on a terminal (tqdm's disable=None); "always": in any case.
    disable = None if progress is True else False
    if progress is True and not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
        return None
    return tqdm(total=total, desc=desc, unit="sample", unit_scale=True, leave=True, disable=disable,
                file=sys.stderr, **_bar_size(sys.stderr))


class Trainer:
    """Train `model` with `optimizer` and `loss_fn` on `device` (default: where
    the model already is). The model is moved there once, here, in place."""

    _PRECISIONS = {"32": None, "32-true": None, "bf16-mixed": bfloat16, "16-mixed": float16}

    def __init__(self, model, optimizer, loss_fn, device=None, precision="32"):
        if precision not in self._PRECISIONS:
            raise ValueError(f"Trainer: precision must be one of "
                             f"{', '.join(repr(k) for k in self._PRECISIONS)}, got {precision!r}")
        self.precision = precision
        self._low = self._PRECISIONS[precision]
        self.scaler = GradScaler() if precision == "16-mixed" else None
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.device = _device(device) if device is not None else _model_device(model)
        if str(_model_device(model)) != str(self.device):
            model.to(self.device)  # the first heavy request: every weight goes in, once
        self.history = []

    # ---- helpers -------------------------------------------------------------------------

    def _loader(self, X, y, batch_size, shuffle, seed=None, prefetch=2, device=None, sampler=None):
        return DataLoader(X, y, batch_size=batch_size, shuffle=shuffle and sampler is None,
                          device=device or self.device, prefetch=prefetch, seed=seed, sampler=sampler)

    def _autocast(self, dev=None):
        if self._low is None:
            return contextlib.nullcontext()
        return autocast((dev or self.device).type, dtype=self._low)

    def _inputs(self, X):
        """Float training inputs as the low dtype on the host (half the bytes per batch)."""
        if self._low is None:
            return X
        if isinstance(X, _C.Tensor):
            if X.device.type == "cpu" and X.dtype.name in ("float32", "float64"):
                if self._low is float16 or self._has_ml_dtypes():
                    return X.astype(self._low)
            return X
        arr = np.asarray(X)
        if arr.dtype.kind != "f" or arr.dtype.itemsize <= 2:
            return X
        if self._low is float16:
            return arr.astype(np.float16)
        if self._has_ml_dtypes():
            import ml_dtypes
            return arr.astype(ml_dtypes.bfloat16)
        return X

    @staticmethod
    def _has_ml_dtypes():
        try:
            import ml_dtypes  # noqa: F401
            return True
        except ImportError:
            return False

    def _zero(self, dtype=None, device=None):
        return zeros((), dtype=dtype, device=device or self.device)

    # ---- training ------------------------------------------------------------------------

    def fit(self, X, y, epochs=1, batch_size=32, validation=None, progress=True, shuffle=True,
            seed=None, prefetch=2, refresh_per_s=4.0, bring_back=False, sampler=None):
        """Train for `epochs` passes over (X, y); returns the history (a list of
        dicts, one per epoch; also kept in self.history).

        validation: (X_val, y_val), evaluated after each epoch. progress: True
        shows a tqdm bar when stderr is a terminal, "always" shows it anyway,
        False never. refresh_per_s: how often at most the bar reads the loss
        from the device. bring_back: move the model to the cpu at the end (the
        second heavy request; the last gradients are dropped, not copied).
        sampler: the order of the samples per epoch instead of shuffle (e.g. a
        DistributedSampler; it is told the epoch with set_epoch)."""
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
            raise ValueError(f"Trainer.fit: epochs must be an int >= 0, got {epochs!r}")
        if progress not in (True, False, "always"):
            raise ValueError(f"Trainer.fit: progress must be True, False or 'always', got {progress!r}")
        if validation is not None and (not isinstance(validation, (tuple, list)) or len(validation) != 2):
            raise ValueError("Trainer.fit: validation must be a pair (X_val, y_val)")
        if str(_model_device(self.model)) != str(self.device):
            self.model.to(self.device)  # brought back by an earlier fit: in again, once
        loader = self._loader(self._inputs(X), y, batch_size, shuffle, seed, prefetch, sampler=sampler)
        classify = _is_labels(y)
        n = len(loader.sampler) if hasattr(loader.sampler, "__len__") else loader.n  # bar total
        history = []
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            history.append(self._fit_epoch(loader, n, classify, epoch, epochs, progress,
                                           refresh_per_s, validation, batch_size))
        if bring_back:
            self.model.zero_grad(set_to_none=True)  # last step's gradients need not travel
            self.model.to("cpu")  # the second heavy request: every weight comes back, once
        self.history += history
        return history

    def _fit_epoch(self, loader, n, classify, epoch, epochs, progress, refresh_per_s, validation,
                   batch_size):
        model, opt, loss_fn = self.model, self.optimizer, self.loss_fn
        model.train()
        bar = _progress_bar(progress, n, f"epoch {epoch + 1}/{epochs}")
        min_gap = 1.0 / refresh_per_s if refresh_per_s and refresh_per_s > 0 else math.inf
        with track() as t:
            t0 = time.perf_counter()
            last_read = t0
            total_loss = self._zero()  # sum over batches of mean loss x batch size, on the device
            correct = self._zero(int64) if classify else None
            seen = shown = steps = skipped = 0
            for xb, yb in loader:
                opt.zero_grad()
                with self._autocast():
                    out = model(xb)
                    loss = loss_fn(out, yb)
                if self.scaler is not None:  # "16-mixed"
                    self.scaler.scale(loss).backward()
                    self.scaler.step(opt)
                    self.scaler.update()
                    skipped += self.scaler.last_step_skipped
                else:
                    loss.backward()
                    opt.step()
                m = xb.shape[0]
                seen += m
                steps += 1
                total_loss = total_loss + loss.detach() * m
                if classify:
                    correct = correct + (out.detach().argmax(axis=1) == yb).sum()
                if bar is not None:
                    now = time.perf_counter()
                    if now - last_read >= min_gap:
                        # a counted implicit read ("item"): waits for the steps queued so far
                        bar.set_postfix(loss=f"{float(total_loss) / seen:.4f}",
                                        samples_per_s=f"{seen / (now - t0):,.0f}", refresh=False)
                        bar.update(seen - shown)
                        shown, last_read = seen, now
            epoch_loss = float(total_loss) / max(seen, 1)  # the one read the epoch needs
            epoch_correct = int(correct) if classify else None
            seconds = time.perf_counter() - t0
        record = {"epoch": epoch + 1, "loss": epoch_loss, "samples": seen, "seconds": seconds,
                  "samples_per_s": seen / seconds if seconds > 0 else math.inf}
        if classify:
            record["accuracy"] = epoch_correct / max(seen, 1)
        if self._low is not None:
            record["precision"] = self.precision
        if self.scaler is not None:
            record.update(skipped_steps=skipped, scale=self.scaler.get_scale())
        s = t.stats
        record.update(h2d_count=s.h2d_count, h2d_bytes=s.h2d_bytes, d2h_count=s.d2h_count,
                      d2h_bytes=s.d2h_bytes, implicit=dict(s.implicit), syncs=s.syncs)
        if s.by_role:  # DataParallel / collectives: bytes per step by role (see pygpu.role)
            record["bytes_per_step_by_role"] = {k: v["bytes"] / max(steps, 1)
                                                for k, v in s.by_role.items()}
        if bar is not None:
            bar.set_postfix(loss=f"{epoch_loss:.4f}", samples_per_s=f"{record['samples_per_s']:,.0f}",
                            refresh=False)
            bar.update(seen - shown)
            bar.close()
        if validation is not None:
            val = self.evaluate(validation[0], validation[1], batch_size=max(batch_size, 256))
            record.update({f"val_{k}": v for k, v in val.items()})
        return record

    # ---- inference -----------------------------------------------------------------------

    def evaluate(self, X, y, batch_size=256):
        """{"loss": mean loss, "accuracy": fraction correct (when classifying)}; no gradients."""
        classify = _is_labels(y)
        dev = _model_device(self.model)  # where the model is now (the cpu after bring_back)
        self.model.eval()
        total_loss, seen = self._zero(device=dev), 0
        correct = self._zero(int64, dev) if classify else None
        with no_grad(), self._autocast(dev):
            for xb, yb in self._loader(X, y, batch_size, shuffle=False, device=dev):
                out = self.model(xb)
                m = xb.shape[0]
                seen += m
                total_loss = total_loss + self.loss_fn(out, yb) * m
                if classify:
                    correct = correct + (out.argmax(axis=1) == yb).sum()
        self.model.train()
        res = {"loss": float(total_loss) / max(seen, 1)}
        if classify:
            res["accuracy"] = int(correct) / max(seen, 1)
        return res

    def predict(self, X, batch_size=256):
        """The model's outputs for X, as one tensor on the model's device (no transfer back)."""
        dev = _model_device(self.model)
        self.model.eval()
        out = None
        with no_grad():
            a = 0
            for xb in self._loader(X, None, batch_size, shuffle=False, device=dev):
                ob = self.model(xb)
                if out is None:
                    n = len(X)
                    out = empty(n, *ob.shape[1:], dtype=ob.dtype, device=dev)
                out[a:a + ob.shape[0]] = ob
                a += ob.shape[0]
        self.model.train()
        return out
