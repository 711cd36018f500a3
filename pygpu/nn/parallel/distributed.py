"""DistributedDataParallel: one process per device, gradients averaged across processes.

At construction every rank's parameter names, shapes and dtypes are compared (a
mismatch is an error naming the parameter and the ranks, never a hang), then rank
0's parameters are broadcast to all. During backward, gradients are averaged in
buckets, as PyTorch's reducer and Horovod do: parameters are grouped, in reverse
order of registration (roughly the order backward produces their gradients),
into buckets of at most bucket_cap_mb; a hook on each parameter notes when its
gradient has been accumulated, and a full bucket is handed to a communication
thread at once, which stages it through a host buffer (device tensors: counted
d2h/h2d transfers, role "grad_reduce"), runs the ring all-reduce over MPI, and
writes the average back. So communication overlaps with the rest of backward;
backward returns only once every bucket is reduced, so optimizer.step() sees
averaged gradients.

no_sync() skips the reduction (gradient accumulation): the next backward outside it
reduces the accumulated gradients. Every parameter must receive a gradient in each
synchronized backward (there is no find_unused_parameters)."""
import contextlib
import queue
import threading

import numpy as np

from ... import _stats, distributed as dist
from ...autograd import no_grad, register_post_accumulate_grad_hook
from ..module import Module


class _Bucket:
    def __init__(self, index, params):
        self.index = index
        self.params = params
        self.sizes = [p.numel() for p in params]
        self.dtype = params[0].dtype
        self.host = np.empty(sum(self.sizes), dtype=self.dtype.numpy)
        self.ready = 0


def _check_same_parameters(module, group):
    mine = [(n, tuple(p.shape), p.dtype.name) for n, p in module.named_parameters()]
    every = dist.all_gather_object(mine)
    ref = every[0]
    for r, theirs in enumerate(every):
        if theirs == ref:
            continue
        names_ref, names_r = [x[0] for x in ref], [x[0] for x in theirs]
        for a, b in zip(ref, theirs):
            if a != b:
                raise dist.DistributedError(
                    f"DistributedDataParallel: parameter {a[0]!r} is {a[1]} {a[2]} on rank 0 but "
                    f"{b[0]!r} is {b[1]} {b[2]} on rank {r}: every rank must build the same model")
        missing = sorted(set(names_ref) ^ set(names_r))
        raise dist.DistributedError(
            f"DistributedDataParallel: rank 0 has {len(ref)} parameters and rank {r} has "
            f"{len(theirs)}; differing: {missing[:5]}: every rank must build the same model")


def _check_device_ids(module, device_ids, output_device):
    """PyTorch's rule: device_ids is None or names the one device the module is on
    (an integer indexes the devices of the module's type, as set_device(local_rank) does);
    output_device, if given, is that device too. Returns the device list (or None)."""
    from ..._device import device as _device
    home = next((t.device for t in list(module.parameters()) + list(module.buffers())), None)
    if device_ids is None:
        if output_device is not None:
            raise ValueError("DistributedDataParallel: output_device needs device_ids too "
                             "(e.g. device_ids=[local_rank], output_device=local_rank)")
        return None
    device_ids = list(device_ids)
    if len(device_ids) != 1:
        raise ValueError(f"DistributedDataParallel: device_ids must name exactly one device (the "
                         f"one this process trains on, e.g. [local_rank]), got {device_ids}")
    if home is None or home.type == "cpu":
        raise ValueError(f"DistributedDataParallel: device_ids={device_ids} is for a module on a "
                         f"device, but the module is on the cpu: move it first (model.to(f'sim:"
                         "{local_rank}')), or leave device_ids=None for a cpu module")
    out = []
    for d in device_ids + ([output_device] if output_device is not None else []):
        if isinstance(d, int) and not isinstance(d, bool):
            if d < 0:
                raise ValueError(f"DistributedDataParallel: a device index is non-negative, got {d}")
            d = f"{home.type}:{d}"
        out.append(_device(d))
    for d in out:
        if str(d) != str(home):
            raise ValueError(f"DistributedDataParallel: the module is on {home} but device_ids/"
                             f"output_device name {d}: call module.to({str(d)!r}) first (and "
                             "set_device(local_rank) so both agree)")
    return out[:1]


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, bucket_cap_mb=25):
        super().__init__()
        group = dist._require()
        self.module = module
        params = [p for p in module.parameters() if p.requires_grad]
        self.device_ids = _check_device_ids(module, device_ids, output_device)
        _check_same_parameters(module, group)
        with no_grad():
            for p in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(p, src=0)
        # buckets: reverse registration order, at most bucket_cap_mb each, one dtype each
        cap = max(1, int(bucket_cap_mb * 2**20))
        object.__setattr__(self, "_buckets", [])
        current, size = [], 0
        for p in reversed(params):
            nbytes = p.nbytes
            if current and (size + nbytes > cap or p.dtype != current[0].dtype):
                self._buckets.append(_Bucket(len(self._buckets), current))
                current, size = [], 0
            current.append(p)
            size += nbytes
        if current:
            self._buckets.append(_Bucket(len(self._buckets), current))
        where = {}
        for b in self._buckets:
            for p in b.params:
                where[id(p)] = b
        object.__setattr__(self, "_where", where)
        object.__setattr__(self, "_sync", True)
        object.__setattr__(self, "_pending", 0)
        object.__setattr__(self, "_done", threading.Condition())
        object.__setattr__(self, "_queue", queue.Queue())
        object.__setattr__(self, "_handles", [register_post_accumulate_grad_hook(p, self._grad_ready)
                                              for p in params])
        object.__setattr__(self, "_nparams", len(params))
        object.__setattr__(self, "_ready_count", 0)
        self._thread = threading.Thread(target=self._comm_loop, name="pygpu-ddp-comm", daemon=True)
        self._thread.start()

    @property
    def bucket_sizes(self):
        """Bytes per bucket, in the order they are reduced."""
        return [b.host.nbytes for b in self._buckets]

    def forward(self, *args, **kwargs):
        if self._sync and self._ready_count not in (0, self._nparams):
            raise RuntimeError(
                f"DistributedDataParallel: the last backward gave gradients to {self._ready_count} of "
                f"{self._nparams} parameters; every parameter must take part in the loss")
        object.__setattr__(self, "_ready_count", 0)
        for b in self._buckets:
            b.ready = 0
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Accumulate gradients locally (no all-reduce) inside this block."""
        prev = self._sync
        object.__setattr__(self, "_sync", False)
        try:
            yield
        finally:
            object.__setattr__(self, "_sync", prev)

    # -- the reducer ----------------------------------------------------------------------------
    def _grad_ready(self, p):
        if not self._sync:
            return
        b = self._where[id(p)]
        b.ready += 1
        object.__setattr__(self, "_ready_count", self._ready_count + 1)
        if b.ready == len(b.params):
            with self._done:
                object.__setattr__(self, "_pending", self._pending + 1)
            self._queue.put(b)
        if self._ready_count == self._nparams:
            self._wait_all()

    def _wait_all(self):
        with self._done:
            while self._pending:
                self._done.wait()
        if getattr(self, "_error", None) is not None:
            raise RuntimeError("DistributedDataParallel: the gradient all-reduce failed") from self._error

    def _comm_loop(self):
        group = dist._require()
        while True:
            b = self._queue.get()
            if b is None:
                return
            try:
                self._reduce(group, b)
            except BaseException as e:  # surfaces in backward (and aborts via the thread hook)
                object.__setattr__(self, "_error", e)
                raise
            finally:
                with self._done:
                    object.__setattr__(self, "_pending", self._pending - 1)
                    self._done.notify_all()

    def _reduce(self, group, b):
        from ... import from_numpy
        with _stats.role("grad_reduce"), no_grad():
            start, d2h = 0, 0
            for p, n in zip(b.params, b.sizes):
                view = from_numpy(b.host[start:start + n].reshape(p.shape))
                view.copy_(p.grad)  # d2h for device tensors (counted), a copy on cpu
                d2h += p.grad.nbytes if p.device.type != "cpu" else 0
                start += n
            sent, got = group.ring_allreduce(b.host, "avg") or (0, 0)
            start, h2d = 0, 0
            for p, n in zip(b.params, b.sizes):
                p.grad.copy_(from_numpy(b.host[start:start + n].reshape(p.shape)))
                h2d += p.grad.nbytes if p.device.type != "cpu" else 0
                start += n
        group.stats.add("grad_all_reduce", sent=sent, recv=got, h2d=h2d, d2h=d2h)

    def __del__(self):
        try:
            for h in self._handles:
                h.remove()
            self._queue.put(None)
        except Exception:  # interpreter teardown: nothing left to release
            return
