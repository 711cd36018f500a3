"""DistributedDataParallel: one process per device, gradients averaged across processes,
with PyTorch's options.

At construction every rank's parameter names, shapes and dtypes are compared (a mismatch
is an error naming the parameter and the ranks, never a hang), then rank 0's parameters
and buffers are broadcast to all (init_sync). During backward the Reducer (reducer.py)
averages the gradients in buckets, as PyTorch's reducer does: reverse order of
registration (rebuilt after the first iteration in the order the gradients arrived), at
most bucket_cap_mb each, each bucket all-reduced asynchronously as soon as its gradients
are ready, so communication overlaps the rest of backward; backward returns once every
bucket is averaged. The all-reduce is pygpu.distributed's: MPI for cpu and sim tensors
(sim staged through the host), NCCL on the device for cuda tensors.

Options, PyTorch's meaning:
  find_unused_parameters  parameters the forward's outputs do not reach are marked ready
                          at the start of backward (found by walking the graph each forward)
  static_graph            the graph is the same every iteration: the walk is done once
  gradient_as_bucket_view .grad is a view of the bucket buffer (no copies)
  broadcast_buffers       rank 0's buffers (BatchNorm's running statistics) are broadcast
                          at each forward
  no_sync()               skips the reduction (gradient accumulation); the next backward
                          outside it reduces the accumulated gradients
  process_group           the group to average over (default: the world)
Without find_unused_parameters, a parameter that gets no gradient makes backward raise
PyTorch's error naming it (PyTorch raises it one forward later)."""
import contextlib

from ... import distributed as dist
from ..._device import device as _device
from ...autograd import is_grad_enabled, no_grad
from ...autograd.engine import keep_alive
from ..module import Module
from .comm import ProcessGroupComm
from .reducer import FIRST_BUCKET_BYTES, Lease, Reducer, overlap


def _check_same_parameters(module, group):
    mine = [(n, tuple(p.shape), p.dtype.name) for n, p in module.named_parameters()]
    every = [None] * group.size()
    dist.all_gather_object(every, mine, group=group)
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
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        group = dist.groups.resolve(process_group)
        if group is None:
            raise ValueError("DistributedDataParallel: this rank is not in process_group")
        self.module = module
        self.process_group = group
        self.device_ids = _check_device_ids(module, device_ids, output_device)
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        params = [p for _, p in named]
        _check_same_parameters(module, group)
        if init_sync:  # rank 0's parameters (and buffers, with broadcast_buffers), as PyTorch
            self._broadcast(list(module.parameters())
                            + (list(module.buffers()) if broadcast_buffers else []))
        cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2**20)
        first = FIRST_BUCKET_BYTES if bucket_cap_mb is None else cap
        # PyTorch's initial buckets: one for everything when they will be rebuilt after the
        # first iteration (static_graph, or without find_unused_parameters)
        rebuild = static_graph or not find_unused_parameters
        initial = [1 << 62] if rebuild else [first, cap]
        comm = ProcessGroupComm(group, grad_as_view=gradient_as_bucket_view)
        reducer = Reducer(params, comm, initial, name="pygpu-ddp", ddp=True,
                          names={id(p): n for n, p in named}, find_unused=find_unused_parameters,
                          static_graph=static_graph, grad_as_view=gradient_as_bucket_view,
                          rebuild_caps=[first, cap] if rebuild else None,
                          order_source=self._rank0_order)
        object.__setattr__(self, "reducer", reducer)
        self._forward_sync = True
        object.__setattr__(self, "_lease", Lease(reducer))  # closes it once nothing holds it

    def _broadcast(self, tensors):
        """Rank 0's values of `tensors` on every rank: one asynchronous broadcast each, then
        one wait."""
        with no_grad():
            works = [dist.broadcast(t, src=self.process_group.ranks[0], group=self.process_group,
                                    async_op=True) for t in tensors]
            for w in works:
                if w is not None:
                    w.wait()

    def _rank0_order(self, order):
        """The order rank 0's gradients arrived in, as positions in the parameter list."""
        pos = {id(p): i for i, p in enumerate(self.reducer.params)}
        lst = [[pos[i] for i in order]]
        dist.broadcast_object_list(lst, src=self.process_group.ranks[0], group=self.process_group)
        params = self.reducer.params
        return [id(params[i]) for i in lst[0]]

    @property
    def bucket_sizes(self):
        """Bytes per bucket, in the order they are reduced."""
        return self.reducer.bucket_sizes

    def comm_overlap(self):
        """How the last synchronized backward's reductions overlapped it (reducer.overlap):
        seconds of communication, how much ran hidden behind backward's compute, and the
        seconds backward waited for it at the end."""
        return overlap(self.reducer.timeline)

    def forward(self, *args, **kwargs):
        # rank 0's buffers, unless the last forward was one whose gradients were not
        # synchronized (no_sync, or no grad): PyTorch's require_forward_param_sync
        if self.broadcast_buffers and self._forward_sync and self.process_group.size() > 1:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers)
        out = self.module(*args, **kwargs)
        self._forward_sync = is_grad_enabled() and self.reducer.enabled
        self.reducer.prepare_for_backward(out)
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

    def _set_static_graph(self):
        """PyTorch's way to turn static_graph on after construction."""
        self.static_graph = self.reducer.static_graph = True
