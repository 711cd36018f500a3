"""The main process's side of DataLoader(num_workers > 0): worker processes, as
torch.utils.data's _MultiProcessingDataLoaderIter.

A WorkerPool starts num_workers processes (pygpu/data/worker.py's worker_loop) with one
index queue each and one shared result queue. An epoch (iter_epoch) keeps
prefetch_factor * num_workers index lists in flight, handed to the workers in turn, and
yields the batches in the sampler's order, whatever order they arrive in. A batch's cpu
tensors arrive as shared memory (the worker's pages, by file descriptor: no copy).

- A worker's exception is raised here, at its batch, with the worker's traceback
  (ExceptionWrapper.reraise); a worker that died is a RuntimeError naming its pid.
- timeout > 0: waiting longer than that for a batch is RuntimeError('DataLoader timed out
  after N seconds').
- An IterableDataset: each worker iterates its own copy (get_worker_info() tells it which
  share is its own); a worker whose iterator ends stops getting requests, and the epoch
  ends when all have ended.
- persistent_workers=True keeps the processes across epochs (each new epoch tells them to
  start their iterators again, and waits for each to say so, dropping what an unfinished
  epoch left in the queue); otherwise they end with the epoch, or when the loop stops
  early."""
import itertools
import multiprocessing
import os
import queue
import time

from .worker import (STATUS_CHECK_INTERVAL, ExceptionWrapper, IterableStop, ResumeIteration,
                     worker_loop)


def _context(spec):
    if spec is None:
        return multiprocessing.get_context()
    if isinstance(spec, str):
        return multiprocessing.get_context(spec)
    if hasattr(spec, "Process") and hasattr(spec, "Queue"):
        return spec
    raise TypeError(f"multiprocessing_context option should specify a valid start method in "
                    f"{multiprocessing.get_all_start_methods()!r}, or be a multiprocessing "
                    f"context object, but got multiprocessing_context={spec!r}")


def _base_seed(generator):
    """A seed for the workers, from the loader's generator (or the default one), as
    PyTorch draws its base seed: manual_seed fixes what the workers draw too."""
    from .._dtype import int64
    from .._tensor.create import empty
    return int(empty((), dtype=int64).random_(generator=generator).item())


class WorkerPool:
    def __init__(self, loader, collate, auto_batch):
        ctx = _context(loader.multiprocessing_context)
        n = loader.num_workers
        self.timeout = loader.timeout
        self.data_queue = ctx.Queue()
        self.done_event = ctx.Event()
        self.index_queues, self.workers = [], []
        seed = _base_seed(loader.generator)
        for i in range(n):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()  # a worker that died must not hang our exit
            w = ctx.Process(target=worker_loop,
                            args=(loader.dataset, loader._iterable, index_queue,
                                  self.data_queue, self.done_event,
                                  loader.batch_size if auto_batch else None,
                                  loader.drop_last, collate, seed, loader.worker_init_fn, i, n,
                                  os.getpid()),
                            daemon=True)
            w.start()
            self.index_queues.append(index_queue)
            self.workers.append(w)
        self.active = [True] * n
        self.epochs = 0
        self.closed = False

    # -- receiving ---------------------------------------------------------------------
    def get(self):
        """The next (idx, data) from any worker; RuntimeError if a worker died or, with a
        timeout, if none came in time."""
        start = time.monotonic()
        while True:
            wait = STATUS_CHECK_INTERVAL
            if self.timeout > 0:
                left = self.timeout - (time.monotonic() - start)
                if left <= 0:
                    raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds")
                wait = min(wait, left)
            try:
                return self.data_queue.get(timeout=wait)
            except queue.Empty:
                dead = [w for k, w in enumerate(self.workers)
                        if self.active[k] and not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                                       f"unexpectedly") from None

    # -- a new epoch on persistent workers ---------------------------------------------
    def resume(self):
        """Tell every worker to start again and wait until each has (what an unfinished
        epoch left in the result queue is dropped meanwhile)."""
        for k, q in enumerate(self.index_queues):
            q.put(ResumeIteration())
            self.active[k] = True
        waiting = len(self.workers)
        while waiting:
            _, data = self.get_tagged()
            if isinstance(data, ResumeIteration):
                waiting -= 1

    def get_tagged(self):
        idx, data = self.get()
        if isinstance(idx, ResumeIteration):
            return None, idx
        return idx, data

    def shutdown(self):
        if self.closed:
            return
        self.closed = True
        self.done_event.set()
        for q in self.index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self.workers:
            w.join(timeout=STATUS_CHECK_INTERVAL)
        for w in self.workers:
            if w.is_alive():
                w.terminate()
                w.join()
        for q in self.index_queues:
            q.close()
        self.data_queue.cancel_join_thread()
        self.data_queue.close()

    def __del__(self):
        try:
            self.shutdown()
        except Exception:
            pass


def iter_epoch(loader, jobs, collate, auto_batch, finish):
    """One epoch's batches from the loader's workers, in order. `jobs` yields each batch's
    index list (map-style) and is None for an IterableDataset; `finish` is applied to each
    batch (the move to the loader's device)."""
    persistent = loader.persistent_workers
    pool = loader._worker_pool if persistent else None
    if pool is None or pool.closed:
        pool = WorkerPool(loader, collate, auto_batch)
        if persistent:
            loader._worker_pool = pool
    elif pool.epochs:
        pool.resume()
    pool.epochs += 1
    n = len(pool.workers)
    depth = (loader.prefetch_factor or 2) * n
    turn = itertools.cycle(range(n))
    owner, results = {}, {}  # idx -> the worker asked; idx -> what came back
    send_idx = rcvd_idx = 0
    jobs_left = True

    def put_next():
        nonlocal send_idx, jobs_left
        if not jobs_left:
            return False
        for _ in range(n):
            wid = next(turn)
            if pool.active[wid]:
                break
        else:
            return False
        if jobs is None:
            index = None
        else:
            index = next(jobs, None)
            if index is None:
                jobs_left = False
                return False
        pool.index_queues[wid].put((send_idx, index))
        owner[send_idx] = wid
        send_idx += 1
        return True

    try:
        while send_idx - rcvd_idx < depth and put_next():
            pass
        while True:
            # skip the requests of an IterableDataset's workers that have ended
            while rcvd_idx < send_idx and rcvd_idx not in results and \
                    not pool.active[owner[rcvd_idx]]:
                del owner[rcvd_idx]
                rcvd_idx += 1
            if rcvd_idx == send_idx and not (jobs_left and any(pool.active)):
                return
            if rcvd_idx in results:
                data = results.pop(rcvd_idx)
                del owner[rcvd_idx]
                rcvd_idx += 1
                while send_idx - rcvd_idx < depth and put_next():
                    pass
                if isinstance(data, ExceptionWrapper):
                    data.reraise()
                yield finish(data)
                continue
            if rcvd_idx == send_idx:  # nothing in flight yet: ask again
                if not put_next():
                    return
                continue
            idx, data = pool.get_tagged()
            if idx is None:
                continue  # a late acknowledgement of a resume
            if isinstance(data, IterableStop):
                pool.active[data.worker_id] = False
                if not persistent:
                    pool.index_queues[data.worker_id].put(None)
                continue
            results[idx] = data
    finally:
        if not persistent:
            pool.shutdown()
