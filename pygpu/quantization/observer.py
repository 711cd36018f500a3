"""Observers: what static quantization learns from calibration batches.

An observer watches the float tensors that flow through one point of a prepared model
(a layer's input or output) and gives the u8 scale and zero point for them
(calculate_qparams): the range [lo, hi] it settles on (always holding 0, so zero is exact)
mapped onto levels 0..quant_max (127: 7-bit activations, csrc/core/pg_gemm.h).

  MinMaxObserver              the running min and max over every batch (PyTorch's).
  MovingAverageMinMaxObserver an exponential moving average of each batch's min and max
                              (averaging_constant, PyTorch's default 0.01).
  HistogramObserver           a histogram of everything seen (bins, default 2048), then
                              method="entropy": TensorRT's INT8 entropy calibrator, the
                              clipping threshold whose quantized distribution is closest in
                              KL divergence to the observed one; or method="percentile":
                              clip at the given percentile of |x| (default 99.99).
Observers read each batch to the host (a counted transfer from a device): calibration runs
a handful of batches, once."""
import numpy as np

from .. import _C
from ..nn.module import Module


def qparams_of_range(lo, hi, quant_max=127):
    """(scale, zero_point) mapping [min(lo, 0), max(hi, 0)] onto 0..quant_max."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if not np.isfinite(lo) or not np.isfinite(hi):
        raise ValueError(f"observer: the observed range [{lo}, {hi}] is not finite (inf or NaN "
                         "in the calibration data)")
    if hi == lo:
        return 1.0, 0
    scale = (hi - lo) / quant_max
    zp = int(min(max(round(-lo / scale), 0), quant_max))
    return float(np.float32(scale)), zp


def _host(x):
    if isinstance(x, _C.Tensor):
        x = x.detach()
        return (x if str(x.device) == "cpu" else x.cpu()).numpy()
    return np.asarray(x)


class ObserverBase(Module):
    """forward(x) records x and returns it unchanged; calculate_qparams() -> (scale, zp)."""

    def __init__(self, quant_max=127):
        super().__init__()
        self.quant_max = int(quant_max)
        self.batches_seen = 0

    def forward(self, x):
        arr = _host(x)
        if arr.size:
            self._observe(np.asarray(arr, dtype=np.float32))
            self.batches_seen += 1
        return x

    def _observe(self, arr):
        raise NotImplementedError

    def _range(self):
        raise NotImplementedError

    def calculate_qparams(self):
        if self.batches_seen == 0:
            raise ValueError(f"{type(self).__name__}: no calibration batch has been seen; run "
                             "the prepared model on representative data before convert()")
        return qparams_of_range(*self._range(), self.quant_max)


class MinMaxObserver(ObserverBase):
    def __init__(self, quant_max=127):
        super().__init__(quant_max)
        self.min_val, self.max_val = np.inf, -np.inf

    def _observe(self, arr):
        self.min_val = min(self.min_val, float(arr.min()))
        self.max_val = max(self.max_val, float(arr.max()))

    def _range(self):
        return self.min_val, self.max_val


class MovingAverageMinMaxObserver(MinMaxObserver):
    def __init__(self, averaging_constant=0.01, quant_max=127):
        super().__init__(quant_max)
        if not 0 < averaging_constant <= 1:
            raise ValueError(f"MovingAverageMinMaxObserver: averaging_constant must be in (0, 1], "
                             f"got {averaging_constant}")
        self.averaging_constant = float(averaging_constant)

    def _observe(self, arr):
        lo, hi = float(arr.min()), float(arr.max())
        if self.batches_seen == 0:
            self.min_val, self.max_val = lo, hi
        else:
            c = self.averaging_constant
            self.min_val += c * (lo - self.min_val)
            self.max_val += c * (hi - self.max_val)


class HistogramObserver(ObserverBase):
    """A histogram of |x| over [0, amax] (re-binned when a batch widens it), plus the signed
    min and max; the threshold T it chooses clips the range to [max(min, -T), min(max, T)]."""

    def __init__(self, bins=2048, method="entropy", percentile=99.99, quant_max=127):
        super().__init__(quant_max)
        if method not in ("entropy", "percentile"):
            raise ValueError(f"HistogramObserver: method must be 'entropy' or 'percentile', got "
                             f"{method!r}")
        if not 0 < percentile <= 100:
            raise ValueError(f"HistogramObserver: percentile must be in (0, 100], got {percentile}")
        if int(bins) < 2 * (quant_max + 1):
            raise ValueError(f"HistogramObserver: bins must be >= {2 * (quant_max + 1)}, got {bins}")
        self.bins, self.method, self.percentile = int(bins), method, float(percentile)
        self.hist = np.zeros(self.bins, np.float64)
        self.amax = 0.0
        self.min_val, self.max_val = np.inf, -np.inf

    def _observe(self, arr):
        a = np.abs(arr.ravel()).astype(np.float64)
        self.min_val = min(self.min_val, float(arr.min()))
        self.max_val = max(self.max_val, float(arr.max()))
        top = float(a.max())
        if not np.isfinite(top):
            raise ValueError("HistogramObserver: the calibration batch holds inf or NaN")
        if top > self.amax:
            if self.amax > 0 and self.hist.sum() > 0:  # re-bin what was seen onto the new range
                old_edges = np.linspace(0.0, self.amax, self.bins + 1)
                new_edges = np.linspace(0.0, top, self.bins + 1)
                cdf = np.concatenate([[0.0], np.cumsum(self.hist)])
                self.hist = np.diff(np.interp(new_edges, old_edges, cdf))
            self.amax = top
        if self.amax > 0:
            h, _ = np.histogram(a, bins=self.bins, range=(0.0, self.amax))
            self.hist += h
        else:
            self.hist[0] += a.size

    def _threshold(self):
        if self.amax == 0:
            return 0.0
        width = self.amax / self.bins
        if self.method == "percentile":
            cdf = np.cumsum(self.hist) / self.hist.sum()
            i = int(np.searchsorted(cdf, self.percentile / 100.0)) + 1
            return min(i, self.bins) * width
        return self._entropy_bins() * width

    def _entropy_bins(self):
        """TensorRT's entropy calibration: the number of bins i (from quant_max + 1 up) whose
        clipped distribution P (outliers folded into bin i-1), quantized to quant_max + 1
        levels and expanded back as Q, has the least KL(P || Q)."""
        hist, levels = self.hist, self.quant_max + 1
        total = hist.sum()
        best_i, best_kl = self.bins, np.inf
        step = max(1, (self.bins - levels) // 256)
        for i in list(range(levels, self.bins, step)) + [self.bins]:
            p = hist[:i].copy()
            p[i - 1] += hist[i:].sum()
            nonzero = p > 0
            # merge the i bins into `levels` groups, spread each group's mass over its nonzero bins
            group = (np.arange(i) * levels) // i
            mass = np.bincount(group, weights=hist[:i], minlength=levels)
            count = np.bincount(group, weights=nonzero.astype(np.float64), minlength=levels)
            q = np.where(nonzero, mass[group] / np.maximum(count[group], 1), 0.0)
            ps, qs = p / total, q / max(q.sum(), 1e-300)
            m = nonzero & (qs > 0)
            if np.any(nonzero & (qs == 0)):
                kl = np.inf
            else:
                kl = float(np.sum(ps[m] * np.log(ps[m] / qs[m])))
            if kl < best_kl:
                best_kl, best_i = kl, i
        return best_i

    def _range(self):
        t = self._threshold()
        return max(self.min_val, -t), min(self.max_val, t)
