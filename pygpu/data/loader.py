"""DataLoader: (X, y) in, batches on the training device out, copies overlapped.

A batch on its way to an accelerator is a light request: only its bytes
travel. To hide even that, the loader keeps the next `prefetch` batches in
flight while the current one trains: each is gathered on the host into a
pinned (page-locked) staging buffer and copied with copy_(non_blocking=True),
which the device's copy engine runs beside its compute stream. The staging
buffers are a ring of prefetch + 1 slots allocated once and reused every
epoch; a slot is refilled only after waiting for the copy that last read it.
Every copy goes through Tensor.copy_, so pygpu.stats() counts each one
(h2d, pinned, async).

prefetch=0 is the plain loader: each batch is copied when asked for, once the
device has finished the work queued before (as a copy on the compute stream
would), and the copy blocks: transfer and compute add up. Data already on a device (pygpu tensors there) is sliced, not
staged: a batch is a view (rows joined by cat when shuffled), or one
device-to-device copy to another device."""
import collections
import numbers

import numpy as np

from .. import _C
from .._creation import empty as _empty
from .._device import device as _device
from .._dtype import to_dtype
from .sampler import RandomSampler, SequentialSampler


def _synchronize(dev):
    if dev.type != "cpu":
        _C._synchronize(*dev._code)


def _as_source(name, a):
    """(host ndarray or None, device tensor or None) for X or y."""
    if isinstance(a, _C.Tensor):
        if a.device.type == "cpu":
            return a.numpy(), None  # zero-copy view of a cpu tensor (bfloat16: ml_dtypes')
        if a.ndim == 0:
            raise ValueError(f"DataLoader: {name} must have a leading sample axis, got a scalar")
        return None, a
    arr = np.asarray(a)
    if arr.ndim == 0:
        raise ValueError(f"DataLoader: {name} must have a leading sample axis, got a scalar")
    if name == "y" and arr.dtype.kind in "iu" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)  # class labels: cross-entropy takes int64
    try:
        to_dtype(arr.dtype)
    except (TypeError, ValueError):
        raise TypeError(f"DataLoader: {name} has dtype {arr.dtype}, which pygpu tensors do not hold; "
                        f"convert it first, e.g. {name}.astype(np.float32)") from None
    return np.ascontiguousarray(arr), None


class _Slot:
    """One pinned staging buffer per array (X, y) and the copies that read it."""

    def __init__(self, hosts, batch_size):
        self.tensors, self.arrays = [], []
        for h in hosts:
            t = _C.from_numpy(np.empty((batch_size,) + h.shape[1:], h.dtype)).pin_memory()
            self.tensors.append(t)
            self.arrays.append(t.numpy())  # zero-copy view of the pinned memory
        self.in_flight = []

    def wait(self):
        """Block until the copies that read this slot are done (before overwriting it).
        A device's copies run in order on its copy stream (sim's copy engine, a
        CUDA stream), so waiting for the slot's last copy covers the others."""
        if self.in_flight:
            self.in_flight[-1].wait()
        self.in_flight = []


class DataLoader:
    """Batches of (X, y) on `device`, the next `prefetch` ones copied asynchronously.

    X, y: NumPy arrays or pygpu tensors with the samples along axis 0 (y may be
    None: the loader then yields X batches alone). Integer labels become int64.
    shuffle: a new permutation each epoch (reproducible with seed). sampler: any
    iterable of indices instead (e.g. a DistributedSampler); not with shuffle.
    device: where batches go (default cpu: batches are zero-copy views where
    the order allows). pin_memory: stage through pinned host memory (default:
    yes for an accelerator); without it copies are pageable and block.
    """

    def __init__(self, X, y=None, batch_size=1, shuffle=False, drop_last=False, device=None,
                 prefetch=2, seed=None, pin_memory=None, sampler=None):
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        if isinstance(prefetch, bool) or not isinstance(prefetch, numbers.Integral) or prefetch < 0:
            raise ValueError(f"DataLoader: prefetch must be an int >= 0, got {prefetch!r}")
        if shuffle and sampler is not None:
            raise ValueError("DataLoader: pass shuffle=True or a sampler, not both "
                             "(a sampler decides the order itself)")
        sources = [_as_source("X", X)] + ([_as_source("y", y)] if y is not None else [])
        lengths = [(h if h is not None else d).shape[0] for h, d in sources]
        if len(set(lengths)) != 1:
            raise ValueError(f"DataLoader: X and y must hold the same number of samples, got "
                             f"{lengths[0]} and {lengths[1]}")
        self.n = lengths[0]
        self.has_y = y is not None
        self.hosts = [h for h, _ in sources]
        self.resident = [d for _, d in sources]
        on_device = [d is not None for d in self.resident]
        if any(on_device) and not all(on_device):
            raise ValueError("DataLoader: X and y must both be host data (NumPy, cpu tensors) or "
                             "both be tensors on a device")
        self.on_device = all(on_device)
        self.batch_size = int(batch_size)
        self.drop_last = bool(drop_last)
        self.device = _device(device if device is not None else "cpu")
        self.prefetch = int(prefetch)
        self.pin_memory = (self.device.type != "cpu") if pin_memory is None else bool(pin_memory)
        if sampler is None:
            sampler = RandomSampler(self.n, seed) if shuffle else SequentialSampler(self.n)
        self.sampler = sampler
        self.shuffle = bool(shuffle)
        self.epoch = 0
        self._ring = None

    def set_epoch(self, epoch):
        """Tell the sampler which epoch comes next (its shuffle depends on it)."""
        self.epoch = int(epoch)

    def __len__(self):
        n = len(self.sampler) if hasattr(self.sampler, "__len__") else self.n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self):
        """The epoch's sample indices, or None for 0..n-1 in order (batches are then slices)."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(self.epoch)
        if isinstance(self.sampler, SequentialSampler) and self.sampler.n == self.n:
            return None
        if isinstance(self.sampler, RandomSampler):
            order = self.sampler.permutation()
        else:
            order = np.fromiter((int(i) for i in self.sampler), dtype=np.int64)
        if order.size and (order.min() < -self.n or order.max() >= self.n):
            raise IndexError(f"DataLoader: the sampler gave index {int(order.max())}, but there are "
                             f"only {self.n} samples")
        return order

    def _batches(self, order):
        """Per batch: a slice (in-order epoch) or an index array."""
        n = self.n if order is None else order.size
        stop = n - n % self.batch_size if self.drop_last else n
        for a in range(0, stop, self.batch_size):
            b = min(a + self.batch_size, n)
            yield slice(a, b) if order is None else order[a:b]

    def __iter__(self):
        order = self._order()
        self.epoch += 1  # the next pass shuffles differently unless set_epoch() says otherwise
        if self.on_device:
            gen = self._iter_resident(order)
        elif self.device.type == "cpu":
            gen = self._iter_host(order)
        elif self.pin_memory and self.prefetch > 0:
            gen = self._iter_prefetch(order)
        else:
            gen = self._iter_blocking(order)
        for batch in gen:
            yield tuple(batch) if self.has_y else batch[0]

    def _host_batch(self, sel):
        return [h[sel] if isinstance(sel, slice) else np.take(h, sel, axis=0) for h in self.hosts]

    def _iter_host(self, order):
        for sel in self._batches(order):
            yield [_C.from_numpy(a) for a in self._host_batch(sel)]

    def _iter_resident(self, order):
        """Data already on a device: a batch is a view (in-order epoch) or, shuffled, its rows
        joined on the device by one cat (pygpu has no gather op yet); no host round trip."""
        from .._train_ops import cat
        for sel in self._batches(order):
            if isinstance(sel, slice):
                yield [t[sel].to(self.device) for t in self.resident]
            else:
                yield [cat([t[i:i + 1] for i in sel.tolist()]).to(self.device) for t in self.resident]

    def _iter_blocking(self, order):
        """No prefetch: each batch is copied when asked for, after the work queued
        before it (as a copy on the compute stream is), and the copy blocks."""
        slot = self._slots(1)[0] if self.pin_memory else None
        for sel in self._batches(order):
            _synchronize(self.device)
            if slot is None:
                yield [_C.from_numpy(a).to(self.device) for a in self._host_batch(sel)]
            else:
                out = self._issue(slot, sel, non_blocking=False)
                slot.in_flight = []
                yield out

    def _slots(self, count):
        if self._ring is None or len(self._ring) < count:
            self._ring = [_Slot(self.hosts, self.batch_size) for _ in range(count)]
        return self._ring[:count]

    def _issue(self, slot, sel, non_blocking):
        """Gather batch `sel` into `slot` and start its copies to the device."""
        slot.wait()  # never overwrite a staging buffer a copy is still reading
        out = []
        for h, arr, t in zip(self.hosts, slot.arrays, slot.tensors):
            if isinstance(sel, slice):
                m = sel.stop - sel.start
                arr[:m] = h[sel]
            else:
                m = sel.size
                np.take(h, sel, axis=0, out=arr[:m])
            src = t if m == self.batch_size else t[:m]
            dst = _empty(*src.shape, dtype=src.dtype, device=self.device)
            dst.copy_(src, non_blocking=non_blocking)
            out.append(dst)
        slot.in_flight = list(out)
        return out

    def _iter_prefetch(self, order):
        """Keep `prefetch` batches in flight beyond the one being trained on."""
        ring = self._slots(self.prefetch + 1)
        pending = collections.deque()
        batches = iter(self._batches(order))
        k = 0
        for sel in batches:
            pending.append(self._issue(ring[k % len(ring)], sel, non_blocking=True))
            k += 1
            if k == self.prefetch:
                break
        for sel in batches:
            # batch k reuses the slot of the batch the caller has just finished with
            pending.append(self._issue(ring[k % len(ring)], sel, non_blocking=True))
            k += 1
            yield pending.popleft()
        while pending:
            yield pending.popleft()

