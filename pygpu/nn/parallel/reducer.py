"""The Reducer: gradients bucketed, each bucket reduced as soon as it is full, under both
wrappers; what PyTorch's reducer (torch/csrc/distributed/c10d/reducer.cpp) does.

Parameters are grouped into buckets, in reverse order of registration (roughly the order
backward produces their gradients), of at most a cap of bytes each (PyTorch's caps: the
first bucket 1 MiB, the others bucket_cap_mb), one dtype and one device each. A
post-accumulate hook on each parameter marks it ready; a bucket whose parameters are all
ready goes to the communicator (comm.py), and buckets go in index order, so every rank
posts its reductions in the same order whatever order its gradients arrive in.

DistributedDataParallel's reductions are asynchronous collectives (all_reduce with
async_op=True): the rest of backward runs while they travel (MPI's progress thread, or
NCCL's queue). The first hook of a backward queues the Reducer's finish at the end of
that backward (autograd.engine.queue_callback): it waits for every bucket, writes the
averages back into .grad, and raises PyTorch's error naming the parameters that got no
gradient when some bucket never filled (without find_unused_parameters) - in the same
backward, not at the next forward.

- find_unused_parameters: each forward walks the graph from its outputs; parameters it
  does not reach are marked ready at the start of backward (their bucket slots hold
  zeros). At the finish the ranks agree on which parameters no rank used (an all-reduce
  of the used map): those keep .grad None; one used elsewhere gets the average.
- static_graph: the walk is done once, in the first iteration, and reused.
- gradient_as_bucket_view: each .grad becomes a view of its bucket's buffer (no copy in or
  out of the bucket; backward adds into it in place).
- After the first iteration the buckets are rebuilt in the order the gradients arrived
  (rank 0's order, broadcast), as PyTorch does; until then (static_graph, or without
  find_unused_parameters) everything is one bucket, as in PyTorch.

DataParallel uses it over its replicas' parameters with one parameter per bucket and an
in-process communicator that only queues device copies: each bucket is reduced inline,
the moment its gradient exists, with nothing to wait for at the end."""
import time

from ...autograd import register_post_accumulate_grad_hook
from ...autograd.engine import keep_grad_view, queue_callback, reachable_leaves

FIRST_BUCKET_BYTES = 1 << 20  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


class Bucket:
    """Parameters reduced together: one dtype, one device, in the order backward fills them."""

    def __init__(self, index, params):
        self.index = index
        self.params = params
        self.sizes = [p.numel() for p in params]
        self.offsets = [sum(self.sizes[:i]) for i in range(len(params))]
        self.dtype = params[0].dtype
        self.device = params[0].device
        self.nbytes = sum(p.nbytes for p in params)
        self.ready = set()   # id(p) of the parameters marked ready in this backward
        self.work = None     # the reduction in flight
        self.flat = None     # the communicator's buffer (comm.prepare)


def make_buckets(params, caps):
    """Buckets over `params` in the given order, closed at a dtype/device change or when the
    next parameter would pass the cap: caps[i] for bucket i, the last cap for the rest (an
    int is one cap for all)."""
    caps = [caps] if isinstance(caps, int) else list(caps)
    buckets, current, size = [], [], 0

    def cap():
        return max(0, int(caps[min(len(buckets), len(caps) - 1)]))
    for p in params:
        if current and (size + p.nbytes > cap() or p.dtype != current[0].dtype
                        or p.device != current[0].device):
            buckets.append(Bucket(len(buckets), current))
            current, size = [], 0
        current.append(p)
        size += p.nbytes
    if current:
        buckets.append(Bucket(len(buckets), current))
    return buckets


class Reducer:
    """params: the parameters to reduce (registration order); comm: a Communicator;
    bucket_caps: bytes (an int, or per-bucket caps); names: id(p) -> name, for errors.
    ddp: finish at the end of each backward (wait, write back, check every bucket filled);
    otherwise each bucket is reduced inline and nothing waits (DataParallel)."""

    def __init__(self, params, comm, bucket_caps, name="pygpu-reducer", ddp=False, names=None,
                 find_unused=False, static_graph=False, grad_as_view=False, rebuild_caps=None,
                 order_source=None):
        self.comm = comm
        self.params = list(params)
        self.names = names or {}
        self.ddp = ddp
        self.find_unused = find_unused
        self.static_graph = static_graph
        self.grad_as_view = grad_as_view
        self.rebuild_caps = rebuild_caps  # caps for the rebuild after iteration 1 (None: never)
        self.order_source = order_source  # agree(order) -> rank 0's order (a collective)
        self.enabled = True  # False inside no_sync(): gradients accumulate locally
        self.iteration = 0
        self._arrival = []   # id(p) in the order the first synchronized backward gave them
        self._unused = None  # static_graph: the unused parameters found in iteration 1
        self._to_mark = []   # parameters to mark ready at the start of this backward
        self._in_backward = False
        self.timeline = {}
        self._set_buckets(make_buckets(list(reversed(self.params)), bucket_caps))
        self._handles = [register_post_accumulate_grad_hook(p, self._grad_ready)
                         for p in self.params]

    def _set_buckets(self, buckets):
        self.buckets = buckets
        for b in buckets:
            self.comm.prepare(b)
        self._where = {id(p): b for b in buckets for p in b.params}
        self._next = 0

    @property
    def bucket_sizes(self):
        """Bytes per bucket, in the order they are reduced."""
        return [b.nbytes for b in self.buckets]

    # -- each forward -----------------------------------------------------------------------
    def prepare_for_backward(self, outputs=None):
        """Called by each DistributedDataParallel forward (with its outputs)."""
        if not self.enabled:
            return
        if self.iteration == 1 and self.rebuild_caps is not None and self._arrival:
            self._rebuild()
        self._to_mark = []
        if self.find_unused or (self.static_graph and self._unused is None):
            if self.static_graph and self._unused is not None:
                unused = self._unused
            else:
                used = {id(t) for t in reachable_leaves(outputs)} if outputs is not None else set()
                unused = [p for p in self.params if id(p) not in used]
                if self.static_graph:
                    self._unused = unused
            self._to_mark = unused
        elif self.static_graph:
            self._to_mark = self._unused

    def _rebuild(self):
        """Buckets in the order the gradients arrived in the first iteration (rank 0's)."""
        order = self.order_source(self._arrival) if self.order_source else self._arrival
        by_id = {id(p): p for p in self.params}
        if sorted(order) != sorted(by_id):  # a rank saw other parameters: keep the buckets
            order = [id(p) for p in reversed(self.params)]
        # gradient_as_bucket_view: the new buckets' buffers start with the gradients
        old = {id(p): p.grad for p in self.params}
        self._set_buckets(make_buckets([by_id[i] for i in order], self.rebuild_caps))
        if self.grad_as_view:
            for p in self.params:
                if old[id(p)] is not None:
                    self.comm.adopt(self._where[id(p)], p)
        self.rebuild_caps = None

    # -- during backward --------------------------------------------------------------------
    def _grad_ready(self, p):
        if not self.enabled:
            return
        if self.ddp and not self._in_backward:
            self._start_backward()
        self._mark(p)

    def _start_backward(self):
        self._in_backward = True
        self.timeline = {"backward_start": time.perf_counter(), "buckets": []}
        queue_callback(self._finish)
        for b in self.buckets:
            b.ready.clear()
            b.work = None
        self._next = 0
        for q in self._to_mark:
            self._mark(q)

    def _mark(self, p):
        b = self._where[id(p)]
        if id(p) in b.ready:
            if self.ddp:
                raise RuntimeError(
                    f"Expected to mark a variable ready only once. Parameter "
                    f"{self.names.get(id(p), '?')!r} got a gradient twice in one backward (it is "
                    "used in two graphs, or marked unused and used); DistributedDataParallel "
                    "reduces each gradient once per backward")
            return
        b.ready.add(id(p))
        if self.ddp and self.iteration == 0:
            self._arrival.append(id(p))
        if not self.ddp:  # DataParallel: inline, at once
            if len(b.ready) == len(b.params):
                b.ready.clear()
                self.comm.launch(b)
            return
        self.timeline["last_ready"] = time.perf_counter()
        while self._next < len(self.buckets):
            nb = self.buckets[self._next]
            if len(nb.ready) != len(nb.params):
                break
            nb.work = self.comm.launch(nb)
            self.timeline["buckets"].append({"index": nb.index, "bytes": nb.nbytes,
                                             "launched": time.perf_counter(), "work": nb.work})
            self._next += 1

    def _finish(self):
        """End of backward: every bucket reduced and written back, or an error."""
        self._in_backward = False
        t0 = time.perf_counter()
        missing = [q for b in self.buckets for q in b.params if id(q) not in b.ready]
        try:
            if missing:
                names = [self.names.get(id(q), f"parameter {i}") for i, q in enumerate(self.params)
                         if any(q is m for m in missing)]
                raise RuntimeError(
                    "Expected to have finished reduction in the prior iteration before starting a "
                    "new one. This error indicates that your module has parameters that were not "
                    "used in producing loss. You can enable unused parameter detection by passing "
                    "the keyword argument `find_unused_parameters=True` to "
                    "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                    "function outputs participate in calculating loss. Parameters which did not "
                    f"receive grad for rank {self.comm.rank()}: {', '.join(names)}")
            for b in self.buckets:
                self.comm.complete(b)
            if self.find_unused or self.static_graph:
                self.comm.settle_unused(self.params, self._to_mark)
        finally:
            self.iteration += 1
        t1 = time.perf_counter()
        tl = self.timeline
        tl["finish_start"], tl["finish_end"] = t0, t1
        for row in tl.get("buckets", ()):
            w = row.pop("work", None)
            row["started"] = getattr(w, "t_start", None) or row["launched"]
            row["done"] = getattr(w, "t_end", None) or t1

    def close(self):
        for h in self._handles:
            h.remove()
        self._handles = []
        for p in self.params:
            keep_grad_view(p, False)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter teardown: nothing left to release
            return


def overlap(timeline):
    """From a Reducer's timeline of one backward: seconds of communication (each bucket's
    reduction, launch to completion, merged), how much of it ran before backward's last
    gradient arrived (hidden behind compute), and the seconds backward waited at its end."""
    rows = timeline.get("buckets") or []
    if not rows:
        return {"comm_s": 0.0, "hidden_s": 0.0, "exposed_s": 0.0, "overlap": 0.0}
    spans = sorted((r["launched"], r["done"]) for r in rows)
    merged = [list(spans[0])]
    for a, b in spans[1:]:
        if a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    comm = sum(b - a for a, b in merged)
    end_compute = timeline.get("last_ready", timeline["finish_start"])
    hidden = sum(max(0.0, min(b, end_compute) - a) for a, b in merged)
    exposed = timeline["finish_end"] - max(end_compute, timeline["finish_start"])
    return {"comm_s": comm, "hidden_s": hidden, "exposed_s": exposed,
            "overlap": hidden / comm if comm else 0.0}


class Lease:
    """Keeps a Reducer open while anyone holds the lease: its wrapper, and each graph a
    forward built (autograd.engine.keep_alive, until that graph's backward returns); closes
    it when collected. The Reducer itself cannot tell: its hooks hold it. The lease holds
    only the Reducer, never the module, so an output a module keeps (self.last = out) makes
    no cycle through the graph."""

    def __init__(self, reducer):
        self.reducer = reducer

    def __del__(self):
        try:
            self.reducer.close()
        except Exception:  # interpreter teardown: nothing left to release
            return
