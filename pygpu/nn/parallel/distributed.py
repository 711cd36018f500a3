"""DistributedDataParallel: one process per device, gradients averaged across processes.

At construction every rank's parameter names, shapes and dtypes are compared (a
mismatch is an error naming the parameter and the ranks, never a hang), then rank
0's parameters are broadcast to all. During backward the Reducer (reducer.py)
averages gradients in buckets, as PyTorch's reducer and Horovod do: reverse order of
registration, at most bucket_cap_mb each, each bucket reduced on a communication
thread as soon as its gradients are ready, so communication overlaps the rest of
backward; backward returns only once every bucket is reduced, so optimizer.step()
sees averaged gradients. The communicator (comm.py) follows the tensors' device:
cuda tensors in a group with NCCL are reduced on the device by NCCL (no host
staging); cpu and sim tensors go through a host buffer and the MPI ring (device
tensors: counted d2h/h2d transfers, role "grad_reduce").

no_sync() skips the reduction (gradient accumulation): the next backward outside it
reduces the accumulated gradients. Every parameter must receive a gradient in each
synchronized backward (there is no find_unused_parameters)."""
import contextlib

from ... import distributed as dist
from ..._device import device as _device
from ...autograd import no_grad
from ...autograd.engine import keep_alive
from ..module import Module
from .comm import MpiHostRing, NcclDevice
from .reducer import Lease, Reducer


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
        if params and params[0].device.type == "cuda" and "nccl" in group.backend:
            comm = NcclDevice(group, dist._nccl_for(group))
        else:
            comm = MpiHostRing(group)
        reducer = Reducer(params, comm, bucket_cap_mb * 2**20, require_all=True, name="pygpu-ddp")
        object.__setattr__(self, "reducer", reducer)
        object.__setattr__(self, "_lease", Lease(reducer))  # closes it once nothing holds it

    @property
    def bucket_sizes(self):
        """Bytes per bucket, in the order they are reduced."""
        return self.reducer.bucket_sizes

    def forward(self, *args, **kwargs):
        self.reducer.prepare_for_backward()
        out = self.module(*args, **kwargs)
        # the graph holds the Reducer open until its backward has returned:
        # `loss_fn(DistributedDataParallel(m)(x), y).backward()` still averages
        keep_alive(out, self._lease)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Accumulate gradients locally (no all-reduce) inside this block."""
        prev = self.reducer.enabled
        self.reducer.enabled = False
        try:
            yield
        finally:
            self.reducer.enabled = prev
