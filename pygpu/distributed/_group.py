"""The process group: one MPI communicator, and the collectives pygpu runs over it.

MPI (mpi4py over Open MPI) is the engine for cpu and sim tensors: a device
tensor is staged through a host buffer (two counted transfers, attributed to
the "collective"/"broadcast" roles in pygpu.stats().by_role), the host buffers
cross the network through MPI, and the result is copied back.

all_reduce is the ring algorithm of Baidu and Horovod written over MPI's
point-to-point Sendrecv (the transport stays MPI's): a reduce-scatter of p-1
steps then an all-gather of p-1 steps, each step sending one of p chunks to the
next rank. Each rank therefore sends and receives exactly 2 (p-1)/p of the
tensor's bytes, and the counters below record what was handed to MPI, so the
figure is measured, not modelled. broadcast and all_gather use MPI's own
collectives; their counters record the payload each rank handed to or got
from MPI.

Waiting without burning a core: Open MPI's blocking calls spin in its progress
loop until the partner arrives. A rank that reaches the all-reduce first would
then spin for as long as the other still computes its backward, and on a
machine with as many cores as ranks (or one shared with other work) that spin
takes the CPU the late rank needs: DDP with 2 processes on 2 cores measured
slower than 1 process. So the ring posts non-blocking sends and receives and
waits in wait_all(): a short spin (the partner is usually there already), then
sleeps that grow from 20 us to 200 us, each followed by one MPI test (which
drives the transfer); a late partner costs at most 200 us of extra latency."""
import os
import sys
import threading
import time

import numpy as np

from .. import _stats

_OPS = ("sum", "avg", "max")


class CollectiveStats:
    """Bytes one rank moved in collectives: over the network (what it handed to and
    got from MPI) and across its own host<->device link (staging)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self):
        with getattr(self, "_lock", threading.Lock()):
            self.calls = {}
            self.net_sent = 0
            self.net_recv = 0
            self.h2d_bytes = 0
            self.d2h_bytes = 0

    def add(self, name, sent=0, recv=0, h2d=0, d2h=0):
        with self._lock:
            self.calls[name] = self.calls.get(name, 0) + 1
            self.net_sent += sent
            self.net_recv += recv
            self.h2d_bytes += h2d
            self.d2h_bytes += d2h

    def as_dict(self):
        with self._lock:
            return {"calls": dict(self.calls), "net_sent": self.net_sent,
                    "net_recv": self.net_recv, "h2d_bytes": self.h2d_bytes,
                    "d2h_bytes": self.d2h_bytes}


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
    sum of the chunks it forwards in 2 (p-1) steps, as ring_allreduce does."""
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


SPIN_S = 50e-6  # how long wait_all polls before it starts to sleep
SLEEP_MIN_S, SLEEP_MAX_S = 20e-6, 200e-6


def wait_all(requests, test_all):
    """Wait for MPI `requests` with test_all(requests) -> bool (MPI.Request.Testall):
    poll for SPIN_S, then sleep between tests (20 us doubling up to 200 us), so a rank
    waiting for a slower one leaves the cores to it. Returns the seconds spent asleep."""
    if test_all(requests):
        return 0.0
    t_end = time.perf_counter() + SPIN_S
    while time.perf_counter() < t_end:
        if test_all(requests):
            return 0.0
    slept, delay = 0.0, SLEEP_MIN_S
    while not test_all(requests):
        time.sleep(delay)
        slept += delay
        delay = min(delay * 2, SLEEP_MAX_S)
    return slept


class ProcessGroup:
    def __init__(self, comm, backend):
        self.comm = comm
        self.backend = backend
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.stats = CollectiveStats()
        self.nccl = None  # an NcclGroup for cuda tensors when the backend is nccl
        from mpi4py import MPI
        self._testall = MPI.Request.Testall
        self._scratch = threading.local()  # the ring's receive buffers, per thread

    def _recv_buffer(self, n, dtype):
        """n elements to receive a ring chunk into, kept across calls (per thread and dtype):
        a new array per all-reduce was new memory each step, its pages faulted in by MPI's
        copy and unmapped again at the end (docs/parallel.md, the DDP profile)."""
        bufs = getattr(self._scratch, "bufs", None)
        if bufs is None:
            bufs = self._scratch.bufs = {}
        buf = bufs.get(dtype.str)
        if buf is None or buf.size < n:
            buf = bufs[dtype.str] = np.empty(n, dtype=dtype)
        return buf[:n]

    def sendrecv(self, sendbuf, dest, recvbuf, source):
        """comm.Sendrecv, waiting as wait_all does (asleep while the partner is late)."""
        self.wait([self.comm.Irecv(recvbuf, source=source), self.comm.Isend(sendbuf, dest=dest)])

    def wait(self, requests):
        """Wait for MPI requests without spinning for long (wait_all)."""
        wait_all(requests, self._testall)

    # -- host-side algorithms ------------------------------------------------------------
    def ring_allreduce(self, buf, op):
        """In-place ring all-reduce of a contiguous 1-D NumPy array."""
        return self.ring_allreduce_segments([buf], op)

    def ring_allreduce_segments(self, segments, op):
        """In-place ring all-reduce of the concatenation of `segments` (1-D NumPy arrays of
        one dtype, laid out alike on every rank), without concatenating them: each chunk
        of the ring goes out as one message per segment piece it covers. DDP reduces a
        bucket of cpu gradients this way straight in their own memory, with no staging
        copies. Returns (bytes sent, bytes received), or None when alone."""
        p, r = self.size, self.rank
        if p == 1:
            return None
        combine = np.add if op in ("sum", "avg") else np.maximum
        bounds = ring_chunks(sum(s.size for s in segments), p)
        pieces = [_pieces(segments, a, b) for a, b in bounds]
        right, left = (r + 1) % p, (r - 1) % p
        itemsize = segments[0].itemsize
        recv = self._recv_buffer(max(b - a for a, b in bounds), segments[0].dtype)
        sent = got = 0
        for i in range(p - 1):  # reduce-scatter: after it, rank r owns chunk (r+1) % p
            s_chunk, r_chunk = (r - i) % p, (r - i - 1) % p
            reqs, off = [], 0
            for piece in pieces[r_chunk]:
                reqs.append(self.comm.Irecv(recv[off:off + piece.size], source=left))
                off += piece.size
            reqs += [self.comm.Isend(piece, dest=right) for piece in pieces[s_chunk]]
            self.wait(reqs)
            off = 0
            for piece in pieces[r_chunk]:
                combine(piece, recv[off:off + piece.size], out=piece)
                off += piece.size
            sent += (bounds[s_chunk][1] - bounds[s_chunk][0]) * itemsize
            got += (bounds[r_chunk][1] - bounds[r_chunk][0]) * itemsize
        if op == "avg":  # scale the chunk this rank owns before it is shared: 1/p of the work
            for piece in pieces[(r + 1) % p]:
                if p & (p - 1) == 0:
                    np.multiply(piece, 1.0 / p, out=piece)  # exact: a power of two
                else:
                    np.divide(piece, p, out=piece)
        for i in range(p - 1):  # all-gather of the owned chunks, received in place
            s_chunk, r_chunk = (r + 1 - i) % p, (r - i) % p
            reqs = [self.comm.Irecv(piece, source=left) for piece in pieces[r_chunk]]
            reqs += [self.comm.Isend(piece, dest=right) for piece in pieces[s_chunk]]
            self.wait(reqs)
            sent += (bounds[s_chunk][1] - bounds[s_chunk][0]) * itemsize
            got += (bounds[r_chunk][1] - bounds[r_chunk][0]) * itemsize
        return sent, got


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
        sys.stderr.write(f"\npygpu.distributed: rank {group.rank} of {group.size} "
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
