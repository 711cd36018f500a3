"""A DataLoader worker process, as torch.utils.data's: get_worker_info, WorkerInfo,
ExceptionWrapper and the worker loop.

Each worker is a process (multiprocessing's default start method, or the loader's
multiprocessing_context). It seeds itself from the loader's base seed (random, NumPy's
global generator and pygpu's generators: base_seed + worker id), runs one compute thread
(torch.set_num_threads(1), as PyTorch's workers do), calls worker_init_fn(worker_id), then
answers the index lists the main process sends on its index queue with collated batches
on the shared result queue. The batch's cpu tensors cross through shared memory
(pygpu/multiprocessing/reductions.py: the storage's pages, passed by file descriptor), so
the main process copies nothing. A failure in the dataset, the collate function or
worker_init_fn is sent back as an ExceptionWrapper (the exception's type and its
traceback) and raised in the main process at the batch it belongs to; a worker whose main
process died leaves on its own."""
import os
import queue
import random
import sys
import traceback

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

# how often an idle worker checks that its main process is still there (seconds)
STATUS_CHECK_INTERVAL = 5.0

_worker_info = None


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed, dataset (this
    worker's copy). Its fields cannot be changed."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


def thread_safe_generator():
    """torch.thread_safe_generator: in a DataLoader worker that is a thread, that worker's own
    generator (WorkerInfo.rng.torch_generator); in the main process and in process workers
    (pygpu's DataLoader workers are processes) None, which makes a sampler draw from the
    default generator."""
    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread" \
            and getattr(info, "rng", None) is not None:
        return info.rng.torch_generator
    return None


def get_worker_info():
    """In a DataLoader worker: its WorkerInfo (id, num_workers, seed, dataset); in the main
    process: None. An IterableDataset's __iter__ uses it to give each worker its share."""
    return _worker_info


class ExceptionWrapper:
    """An exception with its traceback, to raise again in another process."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise it here: its own type, with "Caught X in DataLoader worker process N" and
        the original traceback as the message (a RuntimeError when the type cannot be made
        from a message), as PyTorch does."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            raise KeyError(_KeyErrorMessage(msg))
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    """KeyError repr()s its argument; this keeps the traceback readable."""

    def __repr__(self):
        return self


class IterableStop:
    """Sent by a worker whose IterableDataset iterator is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to a persistent worker at a new epoch: start the dataset's iterator again."""


def _seed_everything(seed):
    random.seed(seed)
    from .._random import manual_seed
    manual_seed(seed)
    if "numpy" in sys.modules:
        import numpy as np
        np.random.seed(np.random.SeedSequence([seed & (2 ** 63 - 1)]).generate_state(4))


class _Fetcher:
    """One batch from index lists (a map-style dataset) or from the worker's own iterator
    (an IterableDataset), collated."""

    def __init__(self, dataset, iterable, batch_size, drop_last, collate):
        self.dataset, self.iterable = dataset, iterable
        self.batch_size, self.drop_last, self.collate = batch_size, drop_last, collate
        self.it = iter(dataset) if iterable else None

    def fetch(self, index):
        if not self.iterable:
            if self.batch_size is None and not isinstance(index, list):
                return self.collate(self.dataset[index])
            return self.collate([self.dataset[i] for i in index])
        if self.batch_size is None:
            return self.collate(next(self.it))
        batch = []
        for _ in range(self.batch_size):
            try:
                batch.append(next(self.it))
            except StopIteration:
                break
        if not batch or (self.drop_last and len(batch) < self.batch_size):
            raise StopIteration
        return self.collate(batch)


def worker_loop(dataset, iterable, index_queue, data_queue, done_event, batch_size, drop_last,
                collate, base_seed, init_fn, worker_id, num_workers, parent_pid):
    """The worker process's body (the main process starts it with these arguments)."""
    global _worker_info
    try:
        seed = base_seed + worker_id
        _seed_everything(seed)
        from .._C import set_num_threads
        set_num_threads(1)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        failure = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _Fetcher(dataset, iterable, batch_size, drop_last, collate)
        except Exception:
            failure = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        exhausted = False
        while True:
            try:
                task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent_pid:  # the main process is gone
                    return
                continue
            if task is None:  # shutdown
                return
            if isinstance(task, ResumeIteration):
                data_queue.put((task, None))
                exhausted = False
                if failure is None:
                    try:
                        fetcher = _Fetcher(dataset, iterable, batch_size, drop_last, collate)
                    except Exception:
                        failure = ExceptionWrapper(
                            where=f"in DataLoader worker process {worker_id}")
                continue
            if done_event.is_set() or exhausted:
                continue  # the main process is stopping, or this stream ended: nothing to send
            idx, index = task
            if failure is not None:
                data, failure = failure, None  # reported once, at the first batch
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    data, exhausted = IterableStop(worker_id), True
                except Exception:
                    data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data
    except KeyboardInterrupt:
        pass
    finally:
        if done_event.is_set():  # the main process reads no more: do not wait to flush
            data_queue.cancel_join_thread()
            data_queue.close()
