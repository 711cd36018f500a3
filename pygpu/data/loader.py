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

A prefetched batch lands in the device memory of an earlier batch that nothing
uses any more (the caller let go of it, no view of it lives, its ops have run),
kept among the last prefetch + 3 batches, or else in new memory. New memory from
the caching allocator is the block compute freed last, which queued compute may
still use, and a copy into it waits for that compute: 21 of 48 copies an epoch
did (issue 39); into an idle earlier batch, a copy waits for no compute.

prefetch=0 is the plain loader: each batch is copied when asked for, once the
device has finished the work queued before (as a copy on the compute stream
would), and the copy blocks: transfer and compute add up. Data already on a device (pygpu tensors there) is sliced, not
staged: a batch is a view (rows joined by cat when shuffled), or one
device-to-device copy to another device."""
import collections
import itertools
import numbers
import sys

import numpy as np

from .. import _C
from .._tensor.create import empty as _empty
from .._device import device as _device
from ._convert import host_array
from .sampler import RandomSampler, SequentialSampler, as_generator

# Earlier batches a prefetched copy may reuse the device memory of, once nothing uses them
# (_idle_batch): the prefetch + 1 whose slots still hold them, and two more that compute
# has most likely finished with.
_SPARE_EXTRA = 2


def _refcounts(items):
    """sys.getrefcount of each item as seen from here (what counts as "held by the list
    alone" depends on the interpreter, so it is measured, below, not assumed)."""
    return [sys.getrefcount(t) for t in items]


_HELD_BY_LIST_ALONE = _refcounts([object()])[0]


def _synchronize(dev):
    if dev.type != "cpu":
        _C._synchronize(*dev._code)


def _as_source(name, a):
    """(host ndarray or None, device tensor or None) for X or y."""
    if isinstance(a, _C.Tensor):
        if a.device.type == "cpu":
            return a.detach().numpy(), None  # zero-copy view of a cpu tensor (bfloat16: ml_dtypes')
        if a.ndim == 0:
            raise ValueError(f"DataLoader: {name} must have a leading sample axis, got a scalar")
        return None, a
    arr = np.asarray(a)
    if arr.ndim == 0:
        raise ValueError(f"DataLoader: {name} must have a leading sample axis, got a scalar")
    if name == "y" and arr.dtype.kind in "iu" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)  # class labels: cross-entropy takes int64
    arr = host_array(arr, f"DataLoader: {name}")  # a dtype pygpu lacks (uint16, ...): widened
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


# A sampler's epoch longer than this is drawn batch by batch (_LazyOrder), not all at once:
# RandomSampler(ds, replacement=True, num_samples=int(1e10)) must not allocate 75 GiB.
_EAGER_ORDER = 1 << 22


def _chunks_of(it, size=1 << 16):
    """An index iterator as NumPy arrays of up to `size` indices."""
    while True:
        chunk = np.fromiter((int(i) for i in itertools.islice(it, size)), dtype=np.int64)
        if not chunk.size:
            return
        yield chunk


class _LazyOrder:
    """An epoch's order drawn as its batches are asked for (a long or unsized sampler)."""

    def __init__(self, chunks, loader):
        self.chunks, self.loader = chunks, loader

    def batches(self, batch_size, drop_last):
        pending = np.zeros(0, np.int64)
        for chunk in self.chunks:
            pending = np.concatenate([pending, self.loader._checked(np.asarray(chunk, np.int64))])
            while pending.size >= batch_size:
                yield pending[:batch_size]
                pending = pending[batch_size:]
        if pending.size and not drop_last:
            yield pending


# Positional parameters after the first, in the two call styles DataLoader accepts.
_ARRAY_ARGS = ("y", "batch_size", "shuffle", "drop_last", "device", "prefetch", "seed",
               "pin_memory", "sampler")
_TORCH_ARGS = ("batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn",
               "pin_memory", "drop_last", "timeout", "worker_init_fn",
               "multiprocessing_context", "generator")
_DEFAULTS = dict(y=None, batch_size=1, shuffle=False, drop_last=False, device=None, prefetch=2,
                 seed=None, pin_memory=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, timeout=0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True)


def _is_array(a):
    return isinstance(a, (np.ndarray, np.generic, _C.Tensor))


def _tensor_source(dataset):
    """(tensors, index map or None) when `dataset` is a TensorDataset, or a Subset of one
    (random_split's output), so batches can be sliced from its tensors; else None."""
    from .dataset import Subset, TensorDataset
    index = None
    while isinstance(dataset, Subset):
        idx = np.asarray(dataset.indices, dtype=np.int64).reshape(-1)
        index = idx if index is None else idx[index]
        dataset = dataset.dataset
    if isinstance(dataset, TensorDataset):
        return dataset.tensors, index
    return None


class DataLoader:
    """Batches of a dataset, with PyTorch's interface and pygpu's fast path.

    Two ways to call it:
    - PyTorch's: DataLoader(dataset, batch_size=1, shuffle=False, sampler=None,
      batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=None, drop_last=False,
      timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None, ...).
      Any object with __getitem__ and __len__ is a dataset; samples are gathered one by one
      and joined by collate_fn (default_collate: tuples, dicts, numbers, arrays, tensors).
      A TensorDataset (or a Subset of one) takes the fast path below instead and yields
      [t0_batch, t1_batch, ...] as PyTorch's default_collate would.
    - pygpu's: DataLoader(X, y=None, batch_size=1, ...): X, y NumPy arrays or pygpu
      tensors with the samples along axis 0 (y may be None: the loader then yields X
      batches alone). Integer labels become int64.

    The fast path (arrays, TensorDataset): a batch is sliced (or gathered, shuffled) from
    the arrays in one op, put on `device` (pygpu's extra keyword; default cpu: batches
    are zero-copy views where the order allows) and the next `prefetch` batches are
    copied asynchronously through pinned staging buffers. pin_memory: stage through
    pinned host memory (default: yes for an accelerator).

    shuffle: a new permutation each epoch, from generator= (a torch.Generator, whose stream
    goes on from epoch to epoch; or an int seed or a NumPy Generator), else the default
    generator, or pygpu's seed= (one order per seed and epoch). sampler: any iterable of indices
    instead (e.g. a DistributedSampler); not with shuffle. batch_sampler: an iterable of
    index lists, instead of batch_size/shuffle/sampler/drop_last.

    num_workers > 0: a generic dataset's batches are fetched and collated by that many
    worker processes (multiprocessing_context, worker_init_fn, prefetch_factor (default 2)
    batches each ahead, persistent_workers, timeout, get_worker_info()), handed over through
    shared memory and yielded in order, as PyTorch's (workers.py); a worker's exception is
    raised here with its traceback. The fast path needs no workers and runs none.
    batch_size=None yields the samples one at a time, uncollated (default_convert).
    """

    def __init__(self, dataset=None, *args, X=None, **kwargs):
        if X is not None:
            if dataset is not None:
                raise TypeError("DataLoader: pass the data once (dataset or X=)")
            dataset = X
        if dataset is None:
            raise TypeError("DataLoader: missing the dataset (or the arrays X, y)")
        array_style = _is_array(dataset) and (not args or args[0] is None or _is_array(args[0])
                                              or isinstance(args[0], (list, tuple)))
        names = _ARRAY_ARGS if array_style else _TORCH_ARGS
        if len(args) > len(names):
            raise TypeError(f"DataLoader: takes at most {len(names) + 1} positional arguments")
        opts = dict(_DEFAULTS)
        for k, v in zip(names, args):
            opts[k] = v
        for k, v in kwargs.items():
            if k not in _DEFAULTS:
                raise TypeError(f"DataLoader: unexpected keyword argument {k!r}")
            if k in dict(zip(names, args)):
                raise TypeError(f"DataLoader: got multiple values for argument {k!r}")
            opts[k] = v
        if opts["y"] is not None and not _is_array(dataset):
            raise TypeError("DataLoader: y= goes with arrays X; a dataset carries its labels")
        self.dataset = dataset
        self.num_workers = opts["num_workers"]
        if isinstance(self.num_workers, bool) or not isinstance(self.num_workers, int) or \
                self.num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        self.collate_fn = opts["collate_fn"]
        self.generator = as_generator(opts["generator"])
        self.timeout, self.worker_init_fn = opts["timeout"], opts["worker_init_fn"]
        if self.timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.prefetch_factor = opts["prefetch_factor"]
        if self.num_workers == 0 and self.prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if self.prefetch_factor is not None and self.prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        self.persistent_workers = opts["persistent_workers"]
        if self.persistent_workers and self.num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.multiprocessing_context = opts["multiprocessing_context"]
        self._worker_pool = None  # persistent_workers: the processes, kept across epochs
        batch_size, shuffle, sampler = opts["batch_size"], opts["shuffle"], opts["sampler"]
        batch_sampler, drop_last = opts["batch_sampler"], opts["drop_last"]
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
        elif batch_size is not None and (isinstance(batch_size, bool) or
                                         not isinstance(batch_size, numbers.Integral) or
                                         batch_size < 1):
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        prefetch = opts["prefetch"]
        if isinstance(prefetch, bool) or not isinstance(prefetch, numbers.Integral) or prefetch < 0:
            raise ValueError(f"DataLoader: prefetch must be an int >= 0, got {prefetch!r}")
        if shuffle and sampler is not None:
            raise ValueError("DataLoader: pass shuffle=True or a sampler, not both "
                             "(a sampler decides the order itself)")
        seed = opts["seed"]
        self.batch_sampler = batch_sampler
        self.batch_size = None if batch_size is None else int(batch_size)
        self.drop_last = bool(drop_last)
        self.device = _device(opts["device"] if opts["device"] is not None else "cpu")
        self.prefetch = int(prefetch)
        self.shuffle = bool(shuffle)
        self.epoch = 0
        self._ring = None
        self._spare = collections.deque()  # earlier prefetched batches' device tensors
        # which path: "arrays" (pygpu's X, y), "tensors" (TensorDataset), "dataset" (generic)
        src = None if _is_array(dataset) or self.collate_fn is not None else \
            _tensor_source(dataset)
        self._index_map = None
        from .dataset import IterableDataset
        # PyTorch's own IterableDataset (a torch dataset fed to pygpu unchanged) counts too
        self._iterable = isinstance(dataset, IterableDataset) or any(
            c.__name__ == "IterableDataset" and c.__module__.startswith("torch.")
            for c in type(dataset).__mro__)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle, "
                             "sampler and batch_sampler options")
        if _is_array(dataset):
            self._mode = "arrays"
            sources = [_as_source("X", dataset)]
            if opts["y"] is not None:
                sources.append(_as_source("y", opts["y"]))
        elif src is not None and self.batch_size is not None or \
                src is not None and batch_sampler is not None:
            self._mode = "tensors"
            tensors, self._index_map = src
            sources = [_as_source(f"tensors[{k}]", t) for k, t in enumerate(tensors)]
        else:
            self._mode = "dataset"
            sources = []
        if sources:
            lengths = [(h if h is not None else d).shape[0] for h, d in sources]
            if len(set(lengths)) != 1:
                raise ValueError(f"DataLoader: X and y must hold the same number of samples, got "
                                 f"{lengths[0]} and {lengths[1]}")
            self.n = lengths[0] if self._index_map is None else int(self._index_map.size)
            if self._index_map is not None and self._index_map.size and \
                    (self._index_map.max() >= lengths[0] or self._index_map.min() < -lengths[0]):
                raise IndexError("DataLoader: a Subset index is out of range for its "
                                 f"TensorDataset of {lengths[0]} samples")
        else:
            self.n = None if self._iterable else len(dataset)
        self.has_y = opts["y"] is not None
        self.hosts = [h for h, _ in sources]
        self.resident = [d for _, d in sources]
        on_device = [d is not None for d in self.resident]
        if any(on_device) and not all(on_device):
            raise ValueError("DataLoader: X and y must both be host data (NumPy, cpu tensors) or "
                             "both be tensors on a device")
        self.on_device = bool(sources) and all(on_device)
        pin = opts["pin_memory"]
        self.pin_memory = (self.device.type != "cpu") if pin is None else bool(pin)
        if sampler is None and not self._iterable:
            sampler = RandomSampler(self.n, generator=self.generator, seed=seed) if shuffle \
                else SequentialSampler(self.n)
        self.sampler = sampler

    def set_epoch(self, epoch):
        """Tell the sampler which epoch comes next (its shuffle depends on it)."""
        self.epoch = int(epoch)

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        if self._iterable:
            n = len(self.dataset)  # a TypeError when the stream has no length, as PyTorch's
        else:
            n = len(self.sampler) if hasattr(self.sampler, "__len__") else self.n
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self):
        """The epoch's sample indices, or None for 0..n-1 in order (batches are then slices)."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(self.epoch)
        if isinstance(self.sampler, SequentialSampler) and self.sampler.n == self.n:
            return self._index_map
        size = len(self.sampler) if hasattr(self.sampler, "__len__") else None
        if size is None or size > _EAGER_ORDER:  # drawn as the batches are asked for
            chunks = self.sampler.chunks() if isinstance(self.sampler, RandomSampler) else \
                _chunks_of(iter(self.sampler))
            return _LazyOrder(chunks, self)
        if isinstance(self.sampler, RandomSampler):
            order = self.sampler.permutation()
        else:
            order = np.fromiter((int(i) for i in self.sampler), dtype=np.int64)
        return self._checked(order)

    def _checked(self, order):
        """A sampler's indices, range-checked, through a Subset's index map."""
        if order.size and (order.min() < -self.n or order.max() >= self.n):
            raise IndexError(f"DataLoader: the sampler gave index {int(order.max())}, but there are "
                             f"only {self.n} samples")
        return order if self._index_map is None else self._index_map[order]

    def _batches(self, order):
        """Per batch: a slice (in-order epoch) or an index array."""
        if self.batch_sampler is not None:
            for b in self.batch_sampler:
                sel = np.asarray(list(b), dtype=np.int64)
                if sel.size and (sel.min() < -self.n or sel.max() >= self.n):
                    raise IndexError(f"DataLoader: the batch_sampler gave index {int(sel.max())}, "
                                     f"but there are only {self.n} samples")
                yield sel if self._index_map is None else self._index_map[sel]
            return
        if isinstance(order, _LazyOrder):
            yield from order.batches(self.batch_size, self.drop_last)
            return
        n = self.n if order is None else order.size
        stop = n - n % self.batch_size if self.drop_last else n
        for a in range(0, stop, self.batch_size):
            b = min(a + self.batch_size, n)
            yield slice(a, b) if order is None else order[a:b]

    def __iter__(self):
        if self._mode == "dataset":
            from .fetch import iter_dataset
            order = None if self._iterable else self._order_list()
            self.epoch += 1
            yield from iter_dataset(self, order)
            return
        order = self._order() if self.batch_sampler is None else None
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
            if self._mode == "tensors":
                yield list(batch)  # as PyTorch's default_collate gives a TensorDataset's batch
            else:
                yield tuple(batch) if self.has_y else batch[0]

    def _order_list(self):
        """A generic dataset's epoch order (the sampler's indices, told the epoch first)."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(self.epoch)
        return self.sampler

    def _host_batch(self, sel):
        return [h[sel] if isinstance(sel, slice) else np.take(h, sel, axis=0) for h in self.hosts]

    def _iter_host(self, order):
        for sel in self._batches(order):
            yield [_C.from_numpy(a) for a in self._host_batch(sel)]

    def _iter_resident(self, order):
        """Data already on a device: a batch is a view (in-order epoch) or, shuffled, one
        gather (index_select) per tensor from the epoch's order, which goes to each data
        device once an epoch (one h2d copy of the int64 indices; a batch_sampler's indices
        go once a batch); the data itself never makes a host round trip."""
        on_device = {}  # the indices on each data device

        def rows(t, sel, at):
            key = str(t.device)
            if at is None:  # a batch_sampler's batch: its own indices
                if key not in on_device or on_device[key][0] is not sel:
                    idx = np.asarray(sel, dtype=np.int64) % t.shape[0]  # -1: the last row
                    on_device[key] = (sel, _C.from_numpy(idx).to(t.device))
                return t.index_select(0, on_device[key][1])
            if key not in on_device:
                idx = np.ascontiguousarray(order, dtype=np.int64)
                on_device[key] = (order, _C.from_numpy(idx).to(t.device))
            return t.index_select(0, on_device[key][1][at:at + len(sel)])

        for k, sel in enumerate(self._batches(order)):
            if isinstance(sel, slice):
                yield [t[sel].to(self.device) for t in self.resident]
            else:
                at = None if order is None or isinstance(order, _LazyOrder) else \
                    k * self.batch_size
                yield [rows(t, sel, at).to(self.device) for t in self.resident]

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
            rows = self.batch_size or 1  # a batch_sampler's batches grow the slots (_issue)
            self._ring = [_Slot(self.hosts, rows) for _ in range(count)]
        return self._ring[:count]

    def _issue(self, slot, sel, non_blocking):
        """Gather batch `sel` into `slot` and start its copies to the device (a prefetched
        batch into an idle earlier batch's device memory where there is one)."""
        slot.wait()  # never overwrite a staging buffer a copy is still reading
        rows = sel.stop - sel.start if isinstance(sel, slice) else sel.size
        if rows > slot.arrays[0].shape[0]:  # a batch_sampler's batch larger than any before
            slot.__init__(self.hosts, rows)
        reuse = self._idle_batch(rows) if non_blocking else None
        out = []
        for h, arr, t in zip(self.hosts, slot.arrays, slot.tensors):
            if isinstance(sel, slice):
                m = sel.stop - sel.start
                arr[:m] = h[sel]
            else:
                m = sel.size
                np.take(h, sel, axis=0, out=arr[:m])
            src = t if m == arr.shape[0] else t[:m]
            dst = reuse[len(out)] if reuse else _empty(*src.shape, dtype=src.dtype,
                                                        device=self.device)
            dst.copy_(src, non_blocking=non_blocking)
            out.append(dst)
        slot.in_flight = list(out)
        if non_blocking:
            self._spare.append(list(out))
            if len(self._spare) > self.prefetch + 1 + _SPARE_EXTRA:
                self._spare.popleft()
        return out

    def _idle_batch(self, rows):
        """Device memory for the next prefetched batch: the tensors of an earlier batch that
        nothing uses any more (the caller let go of them, no view of them lives, no queued
        work holds them), taken out of the spares; or None for new memory. New memory from
        the caching allocator is the block compute freed last, which queued compute may
        still use, so a copy into it is ordered after that compute (issue 39: the copy queue
        then waited for compute 6-23 ms an epoch); an idle earlier batch has no such work."""
        for k, batch in enumerate(self._spare):
            if all(c == _HELD_BY_LIST_ALONE for c in _refcounts(batch)) and \
                    all(t.shape[0] == rows and t._storage_users() == 1 and not t._storage_held()
                        for t in batch):
                del self._spare[k]
                # new tensor objects over the same memory: nothing the caller set on the old
                # ones (requires_grad, .grad, attributes) comes with the new batch
                return [t.detach() for t in batch]
        return None

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

