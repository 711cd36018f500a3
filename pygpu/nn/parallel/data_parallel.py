"""DataParallel: one process, several devices, PyTorch's semantics, every byte by role.

Each forward scatters the inputs along `dim` (PyTorch's chunk sizes: ceil(n/k) rows
each, fewer chunks when there are fewer rows than devices), runs the module on
device_ids[0] and a resident replica on each other device, and gathers the outputs on
`output_device`. Backward flows back through the same steps: the gather's backward
sends each replica its slice of the gradient, and each replica's parameter gradients
are summed into the original parameters by the Reducer (reducer.py, with comm.py's
InProcess communicator): device to device, as soon as each gradient exists, so the
reduction overlaps the rest of backward. Each forward's outputs hold the Reducer (its
Lease) until their backward has returned, so the wrapper may be a temporary:
`loss_fn(DataParallel(model)(x), y).backward()` reduces every replica's gradient.

Made for speed, with PyTorch's results:
  - the replicas stay resident across steps; each forward refreshes them in place from
    the originals (asynchronous device-to-device copies, no allocation, no autograd
    nodes), and only the tensors that changed. They are rebuilt only when the module's
    parameters change identity, dtype, shape or device. What changed is told by each
    tensor's write stamp (Tensor._write_stamp, a per-memory write
    counter): every op and copy that writes a tensor's memory gives it a new stamp, so
    a parameter the optimizer stepped, load_state_dict or an in-place edit wrote, or a
    `p.data = ...` swapped, is copied again, and a frozen parameter or an untouched
    buffer is not. A replica tensor written on its own device (a buffer its forward
    updates) is refreshed too. The stamp, not the optimizer's step count, because the
    optimizer is one writer among several: counting its steps would leave a replica
    stale after load_state_dict or a manual edit, silently. PyTorch re-sends every
    parameter each forward; a step that updates every parameter (as in the benchmark)
    refreshes them all here too;
  - one Python thread drives every device: sim and cuda ops are queued and run on each
    device's own workers, so the replicas compute side by side while no extra Python
    thread competes with those workers for the cores;
  - the copies between devices are non-blocking (the devices' copy engines run them).

The transfers of each step are attributed to a role in pygpu.stats().by_role:
    scatter      the input chunks going to their devices (and their gradients back)
    replicate    the weights copied to devices[1:]  = bytes of the parameters that changed
                 since the last forward (all of them after an optimizer step) x (k - 1)
    gather       the outputs going to output_device, and their gradients going back
    grad_reduce  the replicas' weight gradients going to the original's device
This is the traffic that makes DistributedDataParallel the better choice: DataParallel
re-sends the weights every step and funnels everything through one device."""
import copy
from collections import OrderedDict

from ... import _accel, _stats
from ..._C import Tensor
from ..._tensor.create import zeros
from ..._device import device as _device
from ..._tensor.join import cat
from ...autograd import Function, no_grad
from ...autograd.engine import keep_alive
from ..module import Module
from ..parameter import Parameter
from .comm import InProcess
from .reducer import Lease, Reducer


def chunk_sizes(n, k):
    """Rows per device for n rows on k devices, as torch.chunk: ceil(n/k) each, last smaller."""
    if n <= 0:
        return []
    size = -(-n // k)
    sizes = [size] * (n // size)
    if n % size:
        sizes.append(n % size)
    return sizes


def _slice(t, dim, a, b):
    return t[(slice(None),) * dim + (slice(a, b),)]


def _move(t, dev):
    """t on `dev`; between devices without blocking the host (the devices' copy engines run
    it in order with their work). A copy to the cpu blocks: it would need pinned memory."""
    return t.to(dev, non_blocking=_device(dev).type != "cpu")


class _Replicate(Function):
    """A parameter on another device; its gradient returns to the original (grad_reduce)."""

    @staticmethod
    def forward(ctx, p, dev):
        ctx.src = p.device
        with _stats.role("replicate"):
            return p.to(dev)

    @staticmethod
    def backward(ctx, g):
        with _stats.role("grad_reduce"):
            return g.to(ctx.src), None


class _Scatter(Function):
    """One chunk of the input on its device; its gradient returns to the input's device."""

    @staticmethod
    def forward(ctx, x, dim, a, b, dev):
        ctx.src = x.device
        ctx.meta = (x.shape, dim, a, b)
        with _stats.role("scatter"):
            return _move(_slice(x, dim, a, b), dev)

    @staticmethod
    def backward(ctx, g):
        shape, dim, a, b = ctx.meta
        full = zeros(*shape, dtype=g.dtype, device=ctx.src)
        with _stats.role("scatter"):
            _slice(full, dim, a, b).copy_(g, non_blocking=full.device.type != "cpu")
        return full, None, None, None, None


class _Gather(Function):
    """The replicas' outputs concatenated on one device; the gradient is split back."""

    @staticmethod
    def forward(ctx, out_dev, dim, *outputs):
        ctx.devices = [o.device for o in outputs]
        ctx.sizes = [o.shape[dim] for o in outputs]
        ctx.dim = dim
        with _stats.role("gather"):
            moved = [_move(o, out_dev) for o in outputs]
        return cat(moved, dim=dim) if len(moved) > 1 else moved[0].clone()

    @staticmethod
    def backward(ctx, g):
        pieces, start = [], 0
        with _stats.role("gather"):
            for dev, n in zip(ctx.devices, ctx.sizes):
                pieces.append(_move(_slice(g, ctx.dim, start, start + n).contiguous(), dev))
                start += n
        return (None, None, *pieces)


def replicate(module, devices, grad_enabled=True):
    """Copies of `module` on devices[1:] (devices[0] runs `module` itself). Each copy's
    parameters are differentiable images of the originals, so backward sums every
    replica's gradient into the original parameters."""
    params = list(module.parameters())
    out = [module]
    for dev in devices[1:]:
        if grad_enabled:
            images = {id(p): _Replicate.apply(p, dev) for p in params}
        else:
            with _stats.role("replicate"):
                images = {id(p): p.to(dev) for p in params}
        out.append(_clone(module, images, dev, {}))
    return out


class _Replicas:
    """The module's resident copies on devices[1:], the tensors to refresh, and the Reducer
    that sums the copies' gradients into the module's parameters."""

    def __init__(self, module, devices):
        self.devices = devices
        self.key = _replica_key(module, devices)
        params = list(module.parameters())
        self.modules = []  # per copy: [(original submodule, its copy)]
        self.tensors = []  # per copy: [(original tensor, its copy)], parameters and buffers
        self.stamps = []   # per copy: [(original's, copy's _write_stamp)] at the last copy
        targets, trainable = {}, []
        self.copies = []
        with no_grad(), _stats.role("replicate"):
            for dev in devices[1:]:
                images, tensors, mods = {}, [], []
                for p in params:
                    rp = Parameter(_move(p, dev), requires_grad=p.requires_grad)
                    images[id(p)] = rp
                    tensors.append((p, rp))
                    if p.requires_grad:
                        targets[id(rp)] = p
                        trainable.append(rp)
                self.copies.append(_clone(module, images, dev, {}, mods, tensors))
                self.modules.append(mods)
                self.tensors.append(tensors)
                self.stamps.append([(src._write_stamp, dst._write_stamp) for src, dst in tensors])
        self.copied = 0  # tensors the last refresh copied
        # one parameter per bucket: each replica gradient is reduced the moment it exists
        self.reducer = Reducer(trainable, InProcess(targets), 0, name="pygpu-dp")
        # closes the Reducer once neither these copies nor a graph built through them (each
        # forward's outputs hold it until their backward has returned) holds it. Closing it
        # with the wrapper instead left a temporary wrapper's replica gradients unreduced.
        self.lease = Lease(self.reducer)

    def refresh(self, ncopies):
        """Bring the first ncopies copies up to date with the module: each tensor whose
        original or copy was written since the last refresh (its _write_stamp changed) is
        copied in place (async, device to device); each submodule's plain attributes
        (training, ...) are shared."""
        copied = 0
        with no_grad(), _stats.role("replicate"):
            for tensors, stamps in zip(self.tensors[:ncopies], self.stamps):
                for i, (src, dst) in enumerate(tensors):
                    if (src._write_stamp, dst._write_stamp) != stamps[i]:
                        dst.copy_(src, non_blocking=dst.device.type != "cpu")
                        stamps[i] = (src._write_stamp, dst._write_stamp)
                        copied += 1
        self.copied = copied
        for mods in self.modules[:ncopies]:
            for m, r in mods:
                d = r.__dict__
                for k, v in m.__dict__.items():
                    if k not in _TABLES:
                        d[k] = v

_TABLES = ("_parameters", "_buffers", "_modules")


def _replica_key(module, devices, params=None, buffers=None):
    """What the copies were built for; a change means rebuilding them. Devices as (type,
    index) pairs: comparing Device objects or their names costs a Python call each, and
    this runs every forward."""
    if params is None:
        params, buffers = list(module.parameters()), list(module.buffers())
    return (tuple((d.type, d.index) for d in devices),
            tuple((id(p), p.device.type, p.device.index, p.dtype, p.shape, p.requires_grad)
                  for p in params),
            tuple((id(b), b.device.type, b.device.index, b.dtype, b.shape) for b in buffers))


def _clone(m, images, dev, memo, modules=None, tensors=None):
    """A copy of module tree `m` whose parameters are `images` (id -> tensor) and whose
    buffers are copied to `dev`. modules/tensors, if given, collect (original, copy) pairs."""
    if id(m) in memo:
        return memo[id(m)]
    r = copy.copy(m)  # a new __dict__ holding the same values: replace the three tables
    memo[id(m)] = r
    if modules is not None:
        modules.append((m, r))
    d = r.__dict__
    d["_parameters"] = OrderedDict((k, None if p is None else images[id(p)])
                                   for k, p in m._parameters.items())
    bufs = OrderedDict()
    with _stats.role("replicate"):
        for k, b in m._buffers.items():
            bufs[k] = None if b is None else b.to(dev)
            if b is not None and tensors is not None:
                tensors.append((b, bufs[k]))
    d["_buffers"] = bufs
    d["_modules"] = OrderedDict((k, None if c is None else _clone(c, images, dev, memo, modules, tensors))
                                for k, c in m._modules.items())
    return r


def _module_device(module):
    for p in module.parameters():
        return p.device
    for b in module.buffers():
        return b.device
    return _device("cpu")


def _is_index(d):
    return isinstance(d, int) and not isinstance(d, bool)


def _check_device_spec(d):
    """A device name, a Device, or a non-negative index; anything else is a clear error now."""
    if _is_index(d):
        if d < 0:
            raise ValueError(f"DataParallel: a device index is a non-negative integer, got {d}")
        return
    _device(d)  # raises TypeError/ValueError naming the spelling


def _resolve_devices(spec, home):
    """device_ids as Devices: integers index the devices of the module's type `home.type`."""
    if spec is None:
        if home.type == "cpu":
            return [home]
        n = _accel.module_for(home.type).device_count()
        return [_device(f"{home.type}:{i}") for i in range(n)]
    out = []
    for d in spec:
        if _is_index(d):
            if home.type == "cpu":
                raise RuntimeError(
                    f"DataParallel: device_ids={spec} are indices of the devices of the module's "
                    "type, but the module is on the cpu: move it first (net.to('sim') or "
                    "net.to('cuda')), or pass device names like 'sim:0'")
            n = _accel.module_for(home.type).device_count()
            if d >= n:
                raise ValueError(f"DataParallel: device_ids has {d}, but there are {n} {home.type} "
                                 f"devices ({home.type}:0 to {home.type}:{n - 1})")
            d = f"{home.type}:{d}"
        out.append(_device(d))
    return out


class DataParallel(Module):
    """DataParallel(module, device_ids=None, output_device=None, dim=0).

    As in PyTorch, the wrapper may be built around a module that is still on the
    cpu and moved afterwards (`net = nn.DataParallel(net); net.to(device)`): the
    devices are resolved, and the module's place checked, at each forward.
    device_ids: device names ("sim:1"), or integers, which index the devices of the
    module's type (sim or cuda); None means every device of that type (a module on
    the cpu then runs as it is). The module must live on device_ids[0] when it runs.
    output_device (a name or an index) defaults to device_ids[0]. state_dict() keys
    carry the "module." prefix, which a bare model's load_state_dict accepts."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be an nn.Module, got {type(module).__name__}")
        if device_ids is not None:
            device_ids = list(device_ids)
            if not device_ids:
                raise ValueError("DataParallel: device_ids is empty: pass None for every device "
                                 "of the module's type, or list the devices")
            for d in device_ids + ([output_device] if output_device is not None else []):
                _check_device_spec(d)
            keys = [d if _is_index(d) else str(_device(d)) for d in device_ids]
            if len(set(keys)) != len(keys):
                raise ValueError(f"DataParallel: device_ids repeats a device: {device_ids}")
        elif output_device is not None:
            _check_device_spec(output_device)
        self.module = module
        object.__setattr__(self, "_replicas", None)
        # (home device's type, index) -> device_ids resolved for a module there: each
        # forward resolves them again (the module may have moved), mostly to the same list
        object.__setattr__(self, "_resolved", {})
        self._device_spec = device_ids
        self._output_spec = output_device
        self.dim = dim

    @property
    def device_ids(self):
        """The devices the replicas run on, resolved against where the module is now."""
        return _resolve_devices(self._device_spec, _module_device(self.module))

    @property
    def output_device(self):
        return self._output_for(self.device_ids)

    def _devices_checked(self, params=None, buffers=None):
        """device_ids, after checking that the module is on device_ids[0] (PyTorch checks
        this at forward time too, so the wrapper may be built before the module is moved).
        params/buffers: the module's, when the caller has listed them already."""
        if params is None:
            params, buffers = list(self.module.parameters()), list(self.module.buffers())
        first = params[0] if params else buffers[0] if buffers else None
        home = first.device if first is not None else _device("cpu")
        where = (home.type, home.index)
        devices = self._resolved.get(where)
        if devices is None:
            devices = _resolve_devices(self._device_spec, home)
            self._resolved[where] = devices
        d0 = devices[0]
        t0, i0 = d0.type, d0.index
        for t in params + buffers:
            d = t.device
            if d.type != t0 or d.index != i0:
                raise RuntimeError(
                    f"DataParallel: the module must have its parameters and buffers on "
                    f"{d0} (device_ids[0]) but found one on {d}: move it with "
                    f"net.to({str(d0)!r}) (on the wrapper or the module) before the forward")
        return devices

    def _output_for(self, devices):
        spec = self._output_spec
        if spec is None:
            return devices[0]
        return _device(f"{devices[0].type}:{spec}") if _is_index(spec) else _device(spec)

    def forward(self, *inputs, **kwargs):
        # the module's tensors listed once per forward, for the device check and the
        # replicas' key (each listing walks the module tree in Python)
        params, buffers = list(self.module.parameters()), list(self.module.buffers())
        devices = self._devices_checked(params, buffers)
        if len(devices) == 1:
            return self.module(*inputs, **kwargs)
        scattered = self.scatter(inputs, kwargs, devices)
        replicas = self._replicate(devices, len(scattered), params, buffers)
        outputs = self.parallel_apply(replicas, scattered, devices)
        result = self.gather(outputs, self._output_for(devices))
        keep_alive(result, self._replicas.lease)  # the wrapper may be a temporary
        return result

    def replicate(self, devices, k):
        """[module, copy on devices[1], ...] for the first k devices: the resident copies,
        refreshed (built the first time, and again when the module's parameters or the
        devices change)."""
        return self._replicate(devices, k)

    def _replicate(self, devices, k, params=None, buffers=None):
        reps = self._replicas
        if reps is not None and reps.key == _replica_key(self.module, devices, params, buffers):
            reps.refresh(k - 1)
        else:
            # the old copies' Reducer closes with its lease: a graph built through them
            # may still need it in its backward
            reps = _Replicas(self.module, devices)  # a copy on every device, used or not
            object.__setattr__(self, "_replicas", reps)
        return [self.module] + reps.copies[:k - 1]

    def scatter(self, inputs, kwargs, devices):
        """[(args, kwargs)] per device: tensors chunked along dim, everything else shared."""
        n = next((a.shape[self.dim] for a in list(inputs) + list(kwargs.values())
                  if isinstance(a, Tensor)), None)
        if n is None:
            raise ValueError("DataParallel: no tensor among the inputs to scatter")
        sizes = chunk_sizes(n, len(devices))
        bounds, start = [], 0
        for s in sizes:
            bounds.append((start, start + s))
            start += s

        def part(x, i):
            if isinstance(x, Tensor):
                if x.shape[self.dim] != n:
                    raise ValueError(f"DataParallel: inputs disagree along dim {self.dim}: "
                                     f"{n} and {x.shape[self.dim]}")
                a, b = bounds[i]
                return _Scatter.apply(x, self.dim, a, b, devices[i])
            return x

        return [(tuple(part(x, i) for x in inputs), {k: part(v, i) for k, v in kwargs.items()})
                for i in range(len(sizes))]

    def parallel_apply(self, replicas, scattered, devices):
        """Run each replica on its chunk. One Python thread queues the work of every device
        (their ops run asynchronously on each device's own workers), so the replicas compute
        side by side without a Python thread per device."""
        outputs = []
        for i, (rep, (args, kw)) in enumerate(zip(replicas, scattered)):
            try:
                outputs.append(rep(*args, **kw))
            except Exception as e:
                raise RuntimeError(f"DataParallel: the replica on {devices[i]} raised "
                                   f"{type(e).__name__}: {e}") from e
        return outputs

    def gather(self, outputs, output_device):
        first = outputs[0]
        if isinstance(first, Tensor):
            return _Gather.apply(output_device, self.dim, *outputs)
        if isinstance(first, (tuple, list)):
            return type(first)(self.gather([o[j] for o in outputs], output_device)
                               for j in range(len(first)))
        if isinstance(first, dict):
            return {k: self.gather([o[k] for o in outputs], output_device) for k in first}
        raise TypeError(f"DataParallel: cannot gather outputs of type {type(first).__name__}")

    def extra_repr(self):
        return f"device_ids={[str(d) for d in self.device_ids]}, output_device={self.output_device}"
