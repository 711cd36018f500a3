"""The communicators a Reducer hands full gradient buckets to: one interface, three ways.

A communicator combines the gradients of one bucket (a list of leaf parameters, all of
one dtype on one device) and leaves the result in those parameters' .grad:

    MpiHostRing   DistributedDataParallel over MPI (cpu and sim tensors): cpu gradients
                  are ring all-reduced and averaged in their own memory (no copies: each
                  ring chunk goes out as one message per gradient it covers); device
                  (sim) gradients are staged into one host buffer (counted d2h/h2d
                  transfers, role "grad_reduce") and written back. Blocking (MPI waits),
                  so the Reducer calls it on its thread.
    NcclDevice    DistributedDataParallel over NCCL (cuda tensors): the bucket is packed
                  into one flat buffer on the device, all-reduced there by NCCL, and
                  unpacked; nothing goes through the host.
    InProcess     DataParallel: each replica's gradient is copied to the device of the
                  parameter it stands for (device to device, asynchronous, role
                  "grad_reduce") and added to that parameter's .grad. It only queues device
                  work, so the Reducer calls it inline, with no thread of its own.

A communicator writes .grad by assignment or by copy_ into the tensor that is there,
never assuming the engine replaces or accumulates in place: both work."""
import sys

import numpy as np

from ... import _stats
from ..._C import from_numpy
from ..._tensor_create import zeros
from ...distributed import ring_bytes
from ...autograd import no_grad
from ...autograd.engine import memory_exclusive


class Communicator:
    """Interface. blocking: reduce() waits for other processes (the Reducer then runs it
    on its communication thread, so backward goes on meanwhile)."""
    blocking = True

    def prepare(self, bucket):
        """Allocate what reduce() needs for this bucket (called once, at construction)."""

    def reduce(self, bucket):
        raise NotImplementedError


class MpiHostRing(Communicator):
    """Average a bucket across the process group's ranks through a host buffer and MPI."""

    def __init__(self, group):
        self.group = group

    def prepare(self, bucket):
        if bucket.device.type != "cpu":
            bucket.host = np.empty(sum(bucket.sizes), dtype=bucket.dtype.numpy)

    def reduce(self, bucket):
        if bucket.device.type == "cpu":
            return self._reduce_in_place(bucket)
        with _stats.role("grad_reduce"), no_grad():
            start, d2h = 0, 0
            for p, n in zip(bucket.params, bucket.sizes):
                view = from_numpy(bucket.host[start:start + n].reshape(p.shape))
                view.copy_(p.grad)  # d2h for device tensors (counted), a copy on cpu
                d2h += p.grad.nbytes if p.device.type != "cpu" else 0
                start += n
            sent, got = self.group.ring_allreduce(bucket.host, "avg") or (0, 0)
            start, h2d = 0, 0
            for p, n in zip(bucket.params, bucket.sizes):
                p.grad.copy_(from_numpy(bucket.host[start:start + n].reshape(p.shape)))
                h2d += p.grad.nbytes if p.device.type != "cpu" else 0
                start += n
        self.group.stats.add("grad_all_reduce", sent=sent, recv=got, h2d=h2d, d2h=d2h)

    def _reduce_in_place(self, bucket):
        """cpu gradients, reduced where they lie. A gradient whose memory someone else can
        see (a view, a tensor sharing its storage, a Python reference kept to it) is first
        replaced by a private copy, so no other tensor changes."""
        segments = []
        with no_grad():
            for p in bucket.params:
                g = p.grad
                # references: p's slot, g, getrefcount's argument
                if sys.getrefcount(g) > 3 or not g.is_contiguous() or not memory_exclusive(g):
                    g = p.grad = g.clone()
                segments.append(g.numpy().reshape(-1))
            sent, got = self.group.ring_allreduce_segments(segments, "avg") or (0, 0)
        self.group.stats.add("grad_all_reduce", sent=sent, recv=got)


class NcclDevice(Communicator):
    """Average a bucket across ranks on the device: pack into one flat device buffer,
    NCCL all-reduce it in place, unpack. nccl: an object with all_reduce(tensor, op) on
    that device (pygpu.distributed._nccl.NcclGroup; tests pass a stand-in)."""

    def __init__(self, group, nccl):
        self.group, self.nccl = group, nccl

    def prepare(self, bucket):
        bucket.flat = zeros(sum(bucket.sizes), dtype=bucket.dtype, device=bucket.device)

    def reduce(self, bucket):
        flat = bucket.flat
        with no_grad():
            start = 0
            for p, n in zip(bucket.params, bucket.sizes):
                flat[start:start + n].copy_(p.grad.reshape(n))
                start += n
            self.nccl.all_reduce(flat, "avg")
            start = 0
            for p, n in zip(bucket.params, bucket.sizes):
                p.grad.copy_(flat[start:start + n].reshape(p.shape))
                start += n
        nbytes = ring_bytes(flat.itemsize, flat.numel(), self.group.size)[self.group.rank]
        self.group.stats.add("grad_all_reduce", sent=nbytes, recv=nbytes)  # NCCL's ring, modelled


class InProcess(Communicator):
    """Sum replicas' gradients into the parameters they stand for, device to device.
    targets: id(replica parameter) -> the original parameter. on_reduced(original) is
    called for each original that received a gradient."""
    blocking = False

    def __init__(self, targets):
        self.targets = targets

    def reduce(self, bucket):
        with no_grad():
            for rp in bucket.params:
                g = rp.grad
                if g is None:
                    continue
                p = self.targets[id(rp)]
                with _stats.role("grad_reduce"):
                    # queued on the devices' copy engine (a cpu destination would need pinned memory)
                    moved = g.to(p.device, non_blocking=p.device.type != "cpu")
                p.grad = moved if p.grad is None else p.grad + moved
                rp.grad = None  # the replica starts the next backward empty
