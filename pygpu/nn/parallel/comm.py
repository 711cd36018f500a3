"""The communicators a Reducer hands full gradient buckets to: one interface, two ways.

    ProcessGroupComm  DistributedDataParallel: a bucket's gradients are packed into one flat
                      buffer on their device (unless they are views of it already:
                      gradient_as_bucket_view) and averaged across the ranks by one
                      asynchronous all_reduce (ReduceOp.AVG) of pygpu.distributed: MPI's for
                      cpu and sim tensors (sim: staged through the host on the group's
                      staging thread), NCCL's on the device for cuda tensors. complete()
                      waits for it and writes the averages back into .grad.
    InProcess         DataParallel: each replica's gradient is copied to the device of the
                      parameter it stands for (device to device, asynchronous, role
                      "grad_reduce") and added to that parameter's .grad. It only queues
                      device work, inline, with nothing to wait for.

A communicator writes .grad by assignment or by copy_ into the tensor that is there,
never assuming the engine replaces or accumulates in place: both work."""
from ... import _stats
from ..._tensor.create import zeros
from ...autograd import no_grad
from ...autograd.engine import add_into, keep_grad_view


class Communicator:
    """Interface: prepare(bucket) once per bucket; launch(bucket) when it is full (returns
    what complete() waits for, or None); complete(bucket) at the end of backward."""

    def prepare(self, bucket):
        """Allocate what launch() needs for this bucket."""

    def launch(self, bucket):
        raise NotImplementedError

    def complete(self, bucket):
        """Wait for the bucket's reduction and put the result in .grad."""

    def settle_unused(self, params, unused):
        """find_unused_parameters: agree on the parameters no rank used."""

    def adopt(self, bucket, p):
        """gradient_as_bucket_view after a rebuild: p's gradient moves into the bucket."""

    def rank(self):
        return 0


def _views(bucket):
    flat = bucket.flat
    return [flat[o:o + n].reshape(p.shape)
            for p, o, n in zip(bucket.params, bucket.offsets, bucket.sizes)]


class ProcessGroupComm(Communicator):
    """Average a bucket across the ranks of a process group with one asynchronous
    all_reduce. all_reduce/reduce_op: pygpu.distributed's (a test may pass a stand-in)."""

    def __init__(self, group, grad_as_view=False, all_reduce=None):
        from ... import distributed as dist
        self.group = group
        self.grad_as_view = grad_as_view
        self._all_reduce = all_reduce or dist.all_reduce
        self._avg = dist.ReduceOp.AVG
        self._dist = dist

    def rank(self):
        return self.group.rank()

    def prepare(self, bucket):
        bucket.flat = zeros(sum(bucket.sizes), dtype=bucket.dtype, device=bucket.device)
        bucket.views = _views(bucket)

    def launch(self, bucket):
        with no_grad():
            for p, view in zip(bucket.params, bucket.views):
                g = p.grad
                if g is None:
                    view.zero_()  # an unused parameter: it adds nothing
                elif g is not view:
                    view.copy_(g)
        with _stats.role("grad_reduce"):  # the staging of sim tensors counts as grad_reduce
            return self._all_reduce(bucket.flat, self._avg, group=self.group, async_op=True)

    def complete(self, bucket):
        work = bucket.work
        if work is not None:
            work.wait()
        with no_grad():
            for p, view in zip(bucket.params, bucket.views):
                if p.grad is view:
                    continue
                if self.grad_as_view:
                    p.grad = view
                    keep_grad_view(p)
                elif p.grad is None:
                    p.grad = view.clone()  # used on another rank: its share of the average
                else:
                    p.grad.copy_(view)

    def adopt(self, bucket, p):
        view = bucket.views[next(i for i, q in enumerate(bucket.params) if q is p)]
        with no_grad():
            view.copy_(p.grad)
        p.grad = view
        keep_grad_view(p)

    def settle_unused(self, params, unused):
        """Parameters no rank used keep .grad None (when they had none), as in PyTorch."""
        import numpy as np
        from ..._C import from_numpy
        mine = {id(p) for p in unused}
        used = from_numpy(np.array([0 if id(p) in mine else 1 for p in params], dtype=np.int64))
        self._all_reduce(used, self._dist.ReduceOp.MAX, group=self.group)
        for p, u in zip(params, used.tolist()):
            if not u and id(p) in mine:
                keep_grad_view(p, False)
                p.grad = None


class InProcess(Communicator):
    """Sum replicas' gradients into the parameters they stand for, device to device.
    targets: id(replica parameter) -> the original parameter."""

    def __init__(self, targets):
        self.targets = targets

    def launch(self, bucket):
        with no_grad():
            for rp in bucket.params:
                g = rp.grad
                if g is None:
                    continue
                p = self.targets[id(rp)]
                with _stats.role("grad_reduce"):
                    # queued on the devices' copy engine (a cpu destination would need pinned memory)
                    moved = g.to(p.device, non_blocking=p.device.type != "cpu")
                acc = p.grad
                if acc is None:
                    p.grad = moved
                elif not add_into(acc, moved):  # in place when .grad's memory is its own,
                    p.grad = acc + moved        # as the engine accumulates (AccumulateGrad)
                del acc
                rp.grad = None  # the replica starts the next backward empty
        return None
