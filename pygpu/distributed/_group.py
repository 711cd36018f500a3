"""The process group: an MPI communicator, the ranks it holds, and how its ranks wait.

MPI (mpi4py over Open MPI) is the engine for cpu and sim tensors. Every collective is
one of MPI's own non-blocking calls (MPI_Iallreduce, MPI_Ireduce_scatter_block,
MPI_Ialltoallv, ...) posted on the group's communicator, except the all-reduce sizes for
which the ring below measured faster than Open MPI's own (collectives.py chooses by
size, docs/parallel.md has the figures). The ring is the algorithm of Baidu and Horovod
over MPI's point-to-point calls: a reduce-scatter of p-1 steps then an all-gather of
p-1 steps, each sending one of p chunks to the next rank, so each rank sends and
receives 2 (p-1)/p of the tensor. It runs on a duplicate of the group's communicator,
with a tag per call, so its messages never match a user's send/recv or another ring.

A ProcessGroup is what torch.distributed calls one: the world made by
init_process_group, or a subgroup from new_group (an MPI_Comm_split of the world).
group.rank() and group.size() are this process's rank in it and its size.

Waiting without burning a core: Open MPI's blocking calls spin in its progress loop
until the partner arrives, and a rank that reaches a collective first would spin for as
long as the other still computes, taking the core it needs (DDP with 2 processes on 2
cores measured slower than 1 process). So every wait here is wait_all(): a short spin,
then sleeps that grow from 20 us to 200 us, each followed by one MPI test (which also
drives the transfer). Past the group's timeout (init_process_group(timeout=...), 10
minutes by default as in PyTorch) a wait raises instead of hanging: a peer that died or
never called the collective ends the job with an error naming the call."""
import contextlib
import datetime
import os
import sys
import threading
import time

import numpy as np

from .. import _stats

DEFAULT_TIMEOUT = datetime.timedelta(minutes=10)  # torch.distributed's default_pg_timeout


class DistributedError(RuntimeError):
    """A collective was misused, or the ranks disagree (a clear error instead of a hang)."""


class DistTimeoutError(DistributedError):
    """A collective did not complete within the group's timeout (torch.distributed's
    DistBackendError for a timed-out collective)."""


class CollectiveStats:
    """Bytes one rank moved in collectives: over the network (what it handed to and got
    from MPI or NCCL; for the reductions whose algorithm MPI or NCCL chooses, the ring's
    bytes: traffic.py) and across its own host<->device link (staging)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self):
        with self._lock:
            self.calls = {}
            self.by_call = {}  # name -> [bytes sent, bytes received]
            self.net_sent = 0
            self.net_recv = 0
            self.h2d_bytes = 0
            self.d2h_bytes = 0

    def add(self, name, sent=0, recv=0, h2d=0, d2h=0):
        with self._lock:
            self.calls[name] = self.calls.get(name, 0) + 1
            row = self.by_call.setdefault(name, [0, 0])
            row[0] += sent
            row[1] += recv
            self.net_sent += sent
            self.net_recv += recv
            self.h2d_bytes += h2d
            self.d2h_bytes += d2h

    def as_dict(self):
        with self._lock:
            return {"calls": dict(self.calls),
                    "by_call": {k: {"sent": v[0], "recv": v[1]} for k, v in self.by_call.items()},
                    "net_sent": self.net_sent,
                    "net_recv": self.net_recv, "h2d_bytes": self.h2d_bytes,
                    "d2h_bytes": self.d2h_bytes}


STATS = CollectiveStats()  # one per process: every group's traffic


def _spin_s():
    try:
        return float(os.environ.get("PYGPU_DIST_SPIN_US", "50")) * 1e-6
    except ValueError:
        return 50e-6


SPIN_S = _spin_s()  # how long wait_all polls before it starts to sleep
SLEEP_MIN_S, SLEEP_MAX_S = 20e-6, 200e-6


def wait_all(requests, test_all, deadline=None, what="a collective"):
    """Wait for MPI `requests` with test_all(requests) -> bool (MPI.Request.Testall):
    poll for SPIN_S, then sleep between tests (20 us doubling up to 200 us), so a rank
    waiting for a slower one leaves the cores to it. Past `deadline` (time.monotonic())
    raise DistTimeoutError. Returns the seconds spent asleep."""
    if test_all(requests):
        return 0.0
    t_end = time.perf_counter() + SPIN_S
    while time.perf_counter() < t_end:
        if test_all(requests):
            return 0.0
    slept, delay = 0.0, SLEEP_MIN_S
    while not test_all(requests):
        if deadline is not None and time.monotonic() > deadline:
            raise DistTimeoutError(
                f"{what} did not complete within its timeout: a peer is gone, or did not make "
                "the same collective calls in the same order (init_process_group(timeout=...) "
                "sets the limit)")
        time.sleep(delay)
        slept += delay
        delay = min(delay * 2, SLEEP_MAX_S)
    return slept


def as_seconds(timeout):
    """A timedelta or a number of seconds (None: the default) as seconds."""
    if timeout is None:
        return DEFAULT_TIMEOUT.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


class ProcessGroup:
    """torch.distributed's ProcessGroup over an MPI communicator. ranks: the global ranks
    of its members, in group-rank order."""

    def __init__(self, comm, backend, ranks, timeout=None, name=""):
        from mpi4py import MPI
        self.comm = comm
        self.ring_comm = comm.Dup()  # the ring's messages, apart from everything else
        self.backend = backend
        self.ranks = list(ranks)
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self.timeout_s = as_seconds(timeout)
        self.group_name = name
        self.stats = STATS
        self.nccl = None  # an NcclGroup for cuda tensors, made on the first cuda collective
        self.nccl_queue = None  # the thread its NCCL calls run on, in call order
        # posting order is matching order: each collective takes a place in this rank's order
        # when it is called (reserve) and posts in its turn (turn), even when a worker thread
        # stages its sim tensors first
        self._order = threading.Condition()
        self._issued = self._serving = 0
        self.stage_queue = None  # the thread async collectives of device tensors stage on
        self._tag = 0
        self._testall = MPI.Request.Testall

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def name(self):
        return self.backend

    def __repr__(self):
        return f"<pygpu.distributed.ProcessGroup ranks={self.ranks} backend={self.backend!r}>"

    def deadline(self):
        return time.monotonic() + self.timeout_s

    def wait(self, requests, what="a collective", deadline=None):
        """Wait for MPI requests (or for test() -> True, given a function), asleep while
        peers are late, until `deadline` (time.monotonic(); default: the group's timeout)."""
        test = (lambda f: f()) if callable(requests) else self._testall
        wait_all(requests, test, self.deadline() if deadline is None else deadline, what)

    def reserve(self):
        """This rank's next place in the group's posting order."""
        with self._order:
            ticket = self._issued
            self._issued += 1
            return ticket

    @contextlib.contextmanager
    def turn(self, ticket):
        """Wait until every collective reserved before `ticket` has posted, then post (in the
        with block); the next one may post after it, whatever the block raised."""
        deadline = self.deadline()
        with self._order:
            while self._serving != ticket:
                if not self._order.wait(timeout=max(0.0, deadline - time.monotonic())):
                    raise DistTimeoutError("a collective waited past its timeout for an earlier one "
                                           "of this rank to be posted")
        try:
            yield
        finally:
            with self._order:
                self._serving += 1
                self._order.notify_all()

    def next_tag(self):
        """A tag for the next ring on ring_comm (taken in the ring's turn: the same on every rank)."""
        self._tag = (self._tag + 1) % 32000
        return self._tag

    def group_rank(self, global_rank):
        try:
            return self.ranks.index(int(global_rank))
        except ValueError:
            raise ValueError(f"Global rank {global_rank} is not part of group {self}") from None

    def global_rank(self, group_rank):
        if not 0 <= int(group_rank) < self._size:
            raise ValueError(f"Group rank {group_rank} is not part of group {self}")
        return self.ranks[int(group_rank)]

    def close(self):
        for name in ("nccl_queue", "stage_queue"):
            queue = getattr(self, name)
            setattr(self, name, None)
            if queue is not None:
                queue.close()
        nccl, self.nccl = self.nccl, None
        if nccl is not None:
            nccl.close()
        for c in (self.ring_comm,):
            try:
                c.Free()
            except Exception:  # MPI already finalized at interpreter exit
                pass

    # -- the ring all-reduce, as steps -----------------------------------------------------
    def ring_steps(self, segments, combine, tag, scale=None):
        """A generator: the in-place ring all-reduce of the concatenation of `segments`
        (1-D NumPy arrays of one dtype, laid out alike on every rank), without concatenating
        them (each chunk goes out as one message per segment piece it covers). Each next()
        posts one step's requests and yields them; the caller waits for them before the
        next. scale (AVG's 1/p): each rank multiplies the chunk it owns after the
        reduce-scatter, 1/p of the work of scaling the result. Returns (bytes sent, bytes
        received)."""
        p, r = self._size, self._rank
        comm = self.ring_comm
        bounds = ring_chunks(sum(s.size for s in segments), p)
        pieces = [_pieces(segments, a, b) for a, b in bounds]
        right, left = (r + 1) % p, (r - 1) % p
        itemsize = segments[0].itemsize
        recv = np.empty(max(b - a for a, b in bounds), dtype=segments[0].dtype)
        sent = got = 0
        for i in range(p - 1):  # reduce-scatter: after it, rank r owns chunk (r+1) % p
            s_chunk, r_chunk = (r - i) % p, (r - i - 1) % p
            reqs, off = [], 0
            for piece in pieces[r_chunk]:
                reqs.append(comm.Irecv(recv[off:off + piece.size], source=left, tag=tag))
                off += piece.size
            reqs += [comm.Isend(piece, dest=right, tag=tag) for piece in pieces[s_chunk]]
            yield reqs
            off = 0
            for piece in pieces[r_chunk]:
                combine(piece, recv[off:off + piece.size], out=piece)
                off += piece.size
            sent += (bounds[s_chunk][1] - bounds[s_chunk][0]) * itemsize
            got += (bounds[r_chunk][1] - bounds[r_chunk][0]) * itemsize
        if scale is not None:
            for piece in pieces[(r + 1) % p]:
                scale(piece)
        for i in range(p - 1):  # all-gather of the owned chunks, received in place
            s_chunk, r_chunk = (r + 1 - i) % p, (r - i) % p
            reqs = [comm.Irecv(piece, source=left, tag=tag) for piece in pieces[r_chunk]]
            reqs += [comm.Isend(piece, dest=right, tag=tag) for piece in pieces[s_chunk]]
            yield reqs
            sent += (bounds[s_chunk][1] - bounds[s_chunk][0]) * itemsize
            got += (bounds[r_chunk][1] - bounds[r_chunk][0]) * itemsize
        return sent, got


def ring_chunks(n, p):
    """Bounds of the p chunks a ring all-reduce splits n elements into (np.array_split's)."""
    q, r = divmod(n, p)
    bounds, start = [], 0
    for i in range(p):
        stop = start + q + (1 if i < r else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def ring_bytes(nbytes_per_elem, n, p):
    """Bytes each rank sends (and receives) in a ring all-reduce of n elements: the
    sum of the chunks it forwards in 2 (p-1) steps, as ring_steps does."""
    if p == 1:
        return [0]
    bounds = ring_chunks(n, p)
    size = [b - a for a, b in bounds]
    out = []
    for r in range(p):
        sent = sum(size[(r - i) % p] for i in range(p - 1))       # reduce-scatter
        sent += sum(size[(r + 1 - i) % p] for i in range(p - 1))  # all-gather
        out.append(sent * nbytes_per_elem)
    return out


def _pieces(segments, a, b):
    """Views of `segments` covering elements [a, b) of their concatenation, in order."""
    out, start = [], 0
    for seg in segments:
        stop = start + seg.size
        lo, hi = max(a, start), min(b, stop)
        if lo < hi:
            out.append(seg[lo - start:hi - start])
        start = stop
    return out


def install_abort_hooks(group):
    """A rank that raises takes the whole job down at once, naming itself, instead
    of leaving the other ranks blocked in a collective forever."""
    def abort(kind, exc_type, exc, tb):
        import traceback
        sys.stderr.write(f"\npygpu.distributed: rank {group.rank()} of {group.size()} "
                         f"(pid {os.getpid()}) raised {exc_type.__name__}: {exc} in {kind}; "
                         "aborting the job\n")
        traceback.print_exception(exc_type, exc, tb)
        sys.stderr.flush()
        group.comm.Abort(1)

    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            return previous(exc_type, exc, tb)
        abort("the main thread", exc_type, exc, tb)

    def thread_excepthook(args):
        abort(f"thread {args.thread.name if args.thread else '?'}", args.exc_type,
              args.exc_value, args.exc_traceback)

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook


def role(name):
    return _stats.role(name)
