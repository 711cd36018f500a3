"""Work: a collective in flight (torch.distributed's Work and Future), and the thread that
drives the ones nobody is waiting for yet.

A collective over MPI is a generator. Up to its first yield it stages its tensors (a sim
tensor's copy to the host) and posts MPI requests; each yield hands over the requests of
one step (or a function that tests them, where the test must read an MPI status: a
receive from any source); once they complete, the generator goes on: the next step, or,
after the last, the copy back to a sim tensor, AVG's division and the counters. MPI's own
collectives are one step (one MPI_Iallreduce, MPI_Ialltoallv, ...); the ring all-reduce
is 2 (p-1).

- async_op=False: the calling thread runs it and waits between steps (asleep, wait_all).
- async_op=True on host tensors: the first step is posted at the call and the Work is
  handed to the progress thread. Open MPI's non-blocking collectives advance only inside
  MPI calls, so that thread tests the in-flight requests, runs the later steps, and
  sleeps (20 to 200 us) while nothing completes; work.wait() waits for it. The caller
  computes meanwhile: this is how DDP overlaps its all-reduces with backward.
- async_op=True on sim tensors: the staging copies would make the caller wait for the
  device, so the whole collective runs on the group's staging thread instead.

Only one thread ever tests a given request. Every collective takes its place in the
group's posting order at the call (ProcessGroup.reserve) and posts in its turn, so the
order in which a rank posts its collectives (which MPI matches across ranks) is the
order of the calls, whichever thread posts.

NCCL collectives (cuda tensors) queue on the device and are waited for by the CUDA
plugin; their Work is a thread's (ThreadWork: the group's NCCL queue, in call order)."""
import concurrent.futures
import threading
import time

from ._group import SLEEP_MAX_S, SLEEP_MIN_S, SPIN_S, DistTimeoutError


class Future:
    """torch.futures.Future's core: wait(), value(), done(), then(), add_done_callback()."""

    def __init__(self):
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._value = None
        self._exc = None
        self._callbacks = []

    def done(self):
        return self._event.is_set()

    def wait(self):
        self._event.wait()
        if self._exc is not None:
            raise self._exc
        return self._value

    def value(self):
        if not self.done():
            raise RuntimeError("Future.value(): the future is not done yet; call wait()")
        return self.wait()

    def set_result(self, value):
        self._settle(value, None)

    def set_exception(self, exc):
        self._settle(None, exc)

    def _settle(self, value, exc):
        with self._lock:
            if self._event.is_set():
                raise RuntimeError("Future can only be marked completed once")
            self._value, self._exc = value, exc
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, callback):
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback):
        """A Future of callback(self), run once this one is done."""
        out = Future()

        def chain(fut):
            try:
                out.set_result(callback(fut))
            except BaseException as e:  # the chained future carries it, as PyTorch's does
                out.set_exception(e)
        self.add_done_callback(chain)
        return out


class Work:
    """torch.distributed's Work: wait(), is_completed(), is_success(), exception(),
    result(), source_rank(), get_future()."""

    def __init__(self, name, steps=None, group=None, result=()):
        self.name = name
        self._steps = steps
        self._group = group
        self._result = list(result)
        self.t_start = self.t_end = None  # perf_counter() at the post and at completion
        self._requests = None
        self._future = Future()
        self._source = -1
        self._deadline = group.deadline() if group is not None else None

    def __repr__(self):
        return f"<pygpu.distributed.Work {self.name} {'done' if self.is_completed() else 'in flight'}>"

    # -- driving the steps ------------------------------------------------------------------
    def _advance(self):
        """Run the generator to its next step: True when it has finished (and finish ran)."""
        try:
            self._requests = next(self._steps)
            return False
        except StopIteration:
            self._requests = None
        self.t_end = time.perf_counter()
        self._future.set_result(self._result)
        return True

    def _start(self):
        """Stage and post the first step (in the collective's turn)."""
        self.t_start = time.perf_counter()
        if self._steps is None:
            self.t_end = self.t_start
            self._future.set_result(self._result)
        else:
            self._advance()

    def _poll(self, test_all):
        """One test of the current step's requests (the progress thread): True when done."""
        while (self._requests() if callable(self._requests) else test_all(self._requests)):
            if self._advance():
                return True
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise DistTimeoutError(f"{self.name} (async_op=True) did not complete within its "
                                   "timeout: a peer is gone, or did not make the same collective "
                                   "calls in the same order")
        return False

    def _run_here(self):
        """async_op=False: wait for each step in this thread, then finish."""
        try:
            while not self._future.done():
                self._group.wait(self._requests, self.name, self._deadline)
                self._advance()
        except BaseException as e:
            if not self._future.done():
                self._future.set_exception(e)
            raise

    def _fail(self, exc):
        if not self._future.done():
            self._future.set_exception(exc)

    # -- torch's surface --------------------------------------------------------------------
    def wait(self, timeout=None):
        """Block until the collective is done; raise its error. True, as PyTorch returns."""
        if timeout is not None and not self._future._event.wait(
                timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)):
            raise DistTimeoutError(f"Work.wait(): {self.name} did not complete within {timeout}")
        self._future.wait()
        return True

    def is_completed(self):
        return self._future.done()

    def is_success(self):
        return self._future.done() and self._future._exc is None

    def exception(self):
        return self._future._exc

    def result(self):
        """The output tensors; call wait() first, as in PyTorch."""
        if not self.is_completed():
            raise RuntimeError("Work needs to be completed before calling result(). Should call "
                               "wait() before result().")
        self.wait()
        return self._result

    def source_rank(self):
        """The sender's global rank, for a recv from any source (after wait())."""
        self.wait()
        return self._source

    def synchronize(self):
        self.wait()

    def get_future(self):
        """A Future whose value is the list of output tensors."""
        return self._future


def completed(name, result=()):
    """A Work that is already done (a collective of one rank, a synchronous NCCL call)."""
    w = Work(name, result=result)
    w._future.set_result(w._result)
    return w


class ThreadWork(Work):
    """A Work run by a thread pool's future (an NCCL collective on the group's queue)."""

    def __init__(self, name, cf_future, result=()):
        super().__init__(name, result=result)

        def settle(f):
            exc = f.exception()
            if exc is not None:
                self._fail(exc)
            else:
                self._future.set_result(self._result)
        cf_future.add_done_callback(settle)


class SerialQueue:
    """One thread running submitted calls in order (a group's NCCL calls: posted in call
    order on every rank, as NCCL needs, whether their caller waits or not)."""

    def __init__(self, name):
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def submit(self, fn, *args):
        return self._pool.submit(fn, *args)

    def run(self, fn, *args):
        return self._pool.submit(fn, *args).result()

    def close(self):
        self._pool.shutdown(wait=True)


class _Progress:
    """The progress thread: tests every in-flight Work's requests, oldest first."""

    def __init__(self):
        self._cv = threading.Condition()
        self._works = []
        self._thread = None
        self._testall = None

    def add(self, work):
        with self._cv:
            if self._testall is None:
                from mpi4py import MPI
                self._testall = MPI.Request.Testall
            self._works.append(work)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="pygpu-dist-progress",
                                                daemon=True)
                self._thread.start()
            self._cv.notify()

    def pending(self):
        with self._cv:
            return len(self._works)

    def _loop(self):
        delay, idle_since = 0.0, None
        while True:
            with self._cv:
                while not self._works:
                    self._cv.wait()
                    delay, idle_since = 0.0, None
                batch = list(self._works)
            finished = []
            for w in batch:
                try:
                    if w._poll(self._testall):
                        finished.append(w)
                except BaseException as e:  # the Work carries it to its wait()
                    w._fail(e)
                    finished.append(w)
            if finished:
                with self._cv:
                    self._works = [w for w in self._works if not any(w is f for f in finished)]
                delay, idle_since = 0.0, None
                continue
            now = time.perf_counter()
            if idle_since is None:
                idle_since = now
            if now - idle_since < SPIN_S:
                continue
            delay = SLEEP_MIN_S if delay == 0.0 else min(delay * 2, SLEEP_MAX_S)
            time.sleep(delay)


PROGRESS = _Progress()


def launch(work, async_op, staging=False):
    """Run `work`: post its first step in its turn, then wait for it here (async_op=False:
    returns None, as PyTorch's blocking calls do) or hand it to the progress thread (returns
    it). staging (sim tensors) with async_op: all of it runs on the group's staging thread."""
    group = work._group
    ticket = group.reserve()
    if async_op and staging:
        if group.stage_queue is None:
            group.stage_queue = SerialQueue(f"pygpu-dist-stage-{id(group):x}")

        def job():
            try:
                with group.turn(ticket):
                    work._start()
                if not work.is_completed():
                    work._run_here()
            except BaseException as e:  # the Work carries it to its wait()
                work._fail(e)
        group.stage_queue.submit(job)
        return work
    try:
        with group.turn(ticket):
            work._start()
    except BaseException as e:
        work._fail(e)
        raise
    if work.is_completed():
        return work if async_op else None
    if async_op:
        PROGRESS.add(work)
        return work
    work._run_here()
    return None
