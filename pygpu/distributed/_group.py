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
from MPI."""
import os
import sys
import threading

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


class ProcessGroup:
    def __init__(self, comm, backend):
        self.comm = comm
        self.backend = backend
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.stats = CollectiveStats()
        self.nccl = None  # an NcclGroup for cuda tensors when the backend is nccl

    # -- host-side algorithms ------------------------------------------------------------
    def ring_allreduce(self, buf, op):
        """In-place ring all-reduce of a contiguous 1-D NumPy array."""
        p, r = self.size, self.rank
        if p == 1:
            return
        combine = np.add if op in ("sum", "avg") else np.maximum
        bounds = ring_chunks(buf.size, p)
        right, left = (r + 1) % p, (r - 1) % p
        recv = np.empty(max(b - a for a, b in bounds), dtype=buf.dtype)
        sent = got = 0
        for i in range(p - 1):  # reduce-scatter: after it, rank r owns chunk (r+1) % p
            sa, sb = bounds[(r - i) % p]
            ra, rb = bounds[(r - i - 1) % p]
            self.comm.Sendrecv(buf[sa:sb], dest=right, recvbuf=recv[:rb - ra], source=left)
            combine(buf[ra:rb], recv[:rb - ra], out=buf[ra:rb])
            sent += (sb - sa) * buf.itemsize
            got += (rb - ra) * buf.itemsize
        for i in range(p - 1):  # all-gather of the owned chunks
            sa, sb = bounds[(r + 1 - i) % p]
            ra, rb = bounds[(r - i) % p]
            self.comm.Sendrecv(buf[sa:sb], dest=right, recvbuf=buf[ra:rb], source=left)
            sent += (sb - sa) * buf.itemsize
            got += (rb - ra) * buf.itemsize
        if op == "avg":
            buf /= p
        return sent, got


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
