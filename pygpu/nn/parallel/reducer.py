"""The Reducer: gradients bucketed, reduced as soon as a bucket is full, under both wrappers.

As PyTorch's reducer (torch/csrc/distributed/c10d/reducer.cpp) and Horovod do it:
parameters are grouped, in reverse order of registration (roughly the order backward
produces their gradients), into buckets of at most bucket_cap bytes, one dtype and one
device each. A post-accumulate hook on each parameter counts the gradients that have
arrived; when a bucket is full it is handed to a communicator (comm.py):

  - a blocking one (MPI between processes, NCCL) runs on the Reducer's communication
    thread, so communication overlaps the rest of backward; backward returns only once
    every bucket of a complete backward is reduced, so optimizer.step() sees the result;
  - a non-blocking one (DataParallel's in-process copies, which only queue device work)
    runs inline in the hook, with no thread competing with the device workers.

DistributedDataParallel uses it over its process's parameters (every parameter must
receive a gradient in each synchronized backward: require_all); DataParallel over its
replicas' parameters, one parameter per bucket (bucket_cap 0), each reduced the moment
its gradient exists."""
import queue
import threading

from ...autograd import register_post_accumulate_grad_hook


class Bucket:
    """Parameters reduced together: one dtype, one device, in the order backward fills them."""

    def __init__(self, index, params):
        self.index = index
        self.params = params
        self.sizes = [p.numel() for p in params]
        self.dtype = params[0].dtype
        self.device = params[0].device
        self.nbytes = sum(p.nbytes for p in params)
        self.ready = 0


def make_buckets(params, cap_bytes):
    """Buckets over `params` in reverse order, closed at cap_bytes or a dtype/device change."""
    buckets, current, size = [], [], 0
    for p in reversed(params):
        if current and (size + p.nbytes > cap_bytes or p.dtype != current[0].dtype
                        or p.device != current[0].device):
            buckets.append(Bucket(len(buckets), current))
            current, size = [], 0
        current.append(p)
        size += p.nbytes
    if current:
        buckets.append(Bucket(len(buckets), current))
    return buckets


class Reducer:
    def __init__(self, params, comm, bucket_cap_bytes, require_all=False, name="pygpu-reducer"):
        self.comm = comm
        self.buckets = make_buckets(list(params), max(0, int(bucket_cap_bytes)))
        for b in self.buckets:
            comm.prepare(b)
        self._where = {id(p): b for b in self.buckets for p in b.params}
        self.nparams = len(self._where)
        self.require_all = require_all
        self.enabled = True  # False inside no_sync(): gradients accumulate locally
        self.ready_count = 0
        self._pending = 0
        self._error = None
        self._done = threading.Condition()
        self._handles = [register_post_accumulate_grad_hook(p, self._grad_ready)
                         for b in self.buckets for p in b.params]
        self._queue = self._thread = None
        if comm.blocking:
            self._queue = queue.Queue()
            self._thread = threading.Thread(target=self._comm_loop, name=f"{name}-comm", daemon=True)
            self._thread.start()

    @property
    def bucket_sizes(self):
        """Bytes per bucket, in the order they are reduced."""
        return [b.nbytes for b in self.buckets]

    def prepare_for_backward(self):
        """Called at each forward: with require_all, the last synchronized backward must have
        given every parameter a gradient (otherwise some bucket was never reduced)."""
        if self.require_all and self.enabled and self.ready_count not in (0, self.nparams):
            raise RuntimeError(
                f"DistributedDataParallel: the last backward gave gradients to {self.ready_count} "
                f"of {self.nparams} parameters; every parameter must take part in the loss")
        self.ready_count = 0
        for b in self.buckets:
            b.ready = 0

    def _grad_ready(self, p):
        if not self.enabled:
            return
        b = self._where[id(p)]
        b.ready += 1
        self.ready_count += 1
        if b.ready == len(b.params):
            b.ready = 0
            if self._queue is None:
                self.comm.reduce(b)
            else:
                with self._done:
                    self._pending += 1
                self._queue.put(b)
        if self.ready_count == self.nparams:
            if self.require_all:
                self.wait()
            else:
                self.ready_count = 0

    def wait(self):
        """Block until every bucket handed to the thread is reduced; raise its failure."""
        with self._done:
            while self._pending:
                self._done.wait()
        if self._error is not None:
            raise RuntimeError("the gradient reduction failed") from self._error

    def _comm_loop(self):
        while True:
            b = self._queue.get()
            if b is None:
                return
            try:
                self.comm.reduce(b)
            except BaseException as e:  # surfaces in backward (and aborts via the thread hook)
                self._error = e
                raise
            finally:
                with self._done:
                    self._pending -= 1
                    self._done.notify_all()

    def close(self):
        for h in self._handles:
            h.remove()
        self._handles = []
        if self._queue is not None:
            self._queue.put(None)
            self._queue = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter teardown: nothing left to release
            return


class Lease:
    """Keeps a Reducer open while anyone holds the lease: its wrapper, and each graph a
    forward built (autograd.engine.keep_alive, until that graph's backward returns); closes
    it when collected. The Reducer itself cannot tell: its hooks and thread hold it. The
    lease holds only the Reducer, never the module, so an output a module keeps (self.last
    = out) makes no cycle through the graph."""

    def __init__(self, reducer):
        self.reducer = reducer

    def __del__(self):
        try:
            self.reducer.close()
        except Exception:  # interpreter teardown: nothing left to release
            return
