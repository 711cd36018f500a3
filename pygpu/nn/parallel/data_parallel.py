"""DataParallel: one process, several devices, PyTorch's semantics, every byte by role.

Each forward: scatter the inputs along `dim` (PyTorch's chunk sizes: ceil(n/k) rows
each, fewer chunks when there are fewer rows than devices), replicate the module onto
every device, run the replicas in parallel (one thread per device; C ops release the
GIL, and sim/cuda ops are asynchronous), and gather the outputs on `output_device`.
Backward flows back through the same steps: the gather's backward sends each
replica its slice of the gradient, and each replicated parameter's backward sends
its gradient to the original parameter, where the gradients of all replicas sum.

The transfers of each step are attributed to a role in pygpu.stats().by_role:
    scatter      the input chunks going to their devices (and their gradients back)
    replicate    the weights copied to devices[1:]  = parameter bytes x (k - 1) per forward
    gather       the outputs going to output_device, and their gradients going back
    grad_reduce  the replicas' weight gradients going to the original's device
This is the traffic that makes DistributedDataParallel the better choice: DataParallel
re-sends the weights every step and funnels everything through one device."""
import copy
import threading
from collections import OrderedDict

from ... import _stats
from ..._device import device as _device
from ...autograd import Function, is_grad_enabled, set_grad_enabled
from ..module import Module


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
            return _slice(x, dim, a, b).to(dev)

    @staticmethod
    def backward(ctx, g):
        from ... import zeros
        shape, dim, a, b = ctx.meta
        full = zeros(*shape, dtype=g.dtype, device=ctx.src)
        with _stats.role("scatter"):
            _slice(full, dim, a, b).copy_(g)
        return full, None, None, None, None


class _Gather(Function):
    """The replicas' outputs concatenated on one device; the gradient is split back."""

    @staticmethod
    def forward(ctx, out_dev, dim, *outputs):
        from ... import cat
        ctx.devices = [o.device for o in outputs]
        ctx.sizes = [o.shape[dim] for o in outputs]
        ctx.dim = dim
        with _stats.role("gather"):
            moved = [o.to(out_dev) for o in outputs]
        return cat(moved, dim=dim) if len(moved) > 1 else moved[0].clone()

    @staticmethod
    def backward(ctx, g):
        pieces, start = [], 0
        with _stats.role("gather"):
            for dev, n in zip(ctx.devices, ctx.sizes):
                pieces.append(_slice(g, ctx.dim, start, start + n).contiguous().to(dev))
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


def _clone(m, images, dev, memo):
    if id(m) in memo:
        return memo[id(m)]
    r = copy.copy(m)  # a new __dict__ holding the same values: replace the three tables
    memo[id(m)] = r
    d = r.__dict__
    d["_parameters"] = OrderedDict((k, None if p is None else images[id(p)])
                                   for k, p in m._parameters.items())
    with _stats.role("replicate"):
        d["_buffers"] = OrderedDict((k, None if b is None else b.to(dev))
                                    for k, b in m._buffers.items())
    d["_modules"] = OrderedDict((k, None if c is None else _clone(c, images, dev, memo))
                                for k, c in m._modules.items())
    return r


def _module_device(module):
    for p in module.parameters():
        return p.device
    return _device("cpu")


class DataParallel(Module):
    """DataParallel(module, device_ids=None, output_device=None, dim=0).

    device_ids: devices (or indices of the module's device type); None means every
    device of the module's type. The module must live on device_ids[0], as in PyTorch.
    output_device defaults to device_ids[0]. state_dict() keys carry the "module."
    prefix, which a bare model's load_state_dict accepts."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        from ... import _device as _devices
        home = _module_device(module)
        if device_ids is None:
            acc = _devices._ACCELERATORS.get(home.type)
            device_ids = [home] if acc is None else [f"{home.type}:{i}" for i in range(acc.device_count())]
        devices = []
        for d in device_ids:
            if isinstance(d, int):
                if home.type == "cpu":
                    raise ValueError("DataParallel: integer device_ids name devices of the module's "
                                     "type, but the module is on cpu: move it first, e.g. "
                                     "model.to('sim:0'), or pass device names like 'sim:0'")
                d = f"{home.type}:{d}"
            devices.append(_device(d))
        if not devices:
            raise ValueError("DataParallel: device_ids is empty")
        if len({str(d) for d in devices}) != len(devices):
            raise ValueError(f"DataParallel: device_ids repeats a device: {[str(d) for d in devices]}")
        if str(home) != str(devices[0]):
            raise ValueError(f"DataParallel: the module's parameters are on {home} but device_ids[0] "
                             f"is {devices[0]}: call module.to({str(devices[0])!r}) first")
        self.module = module
        self.device_ids = devices
        self.output_device = _device(output_device) if output_device is not None else devices[0]
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        devices = self.device_ids
        if len(devices) == 1:
            return self.module(*inputs, **kwargs)
        grad = is_grad_enabled()
        scattered = self.scatter(inputs, kwargs, devices)
        k = len(scattered)
        replicas = replicate(self.module, devices[:k], grad)
        outputs = self.parallel_apply(replicas, scattered, grad)
        return self.gather(outputs, self.output_device)

    def scatter(self, inputs, kwargs, devices):
        """[(args, kwargs)] per device: tensors chunked along dim, everything else shared."""
        from ..._C import Tensor
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

    def parallel_apply(self, replicas, scattered, grad):
        """Run each replica on its chunk, one thread per device."""
        results, errors = [None] * len(replicas), [None] * len(replicas)

        def work(i):
            try:
                with set_grad_enabled(grad):
                    args, kw = scattered[i]
                    results[i] = replicas[i](*args, **kw)
            except BaseException as e:  # re-raised below, naming the device
                errors[i] = e

        threads = [threading.Thread(target=work, args=(i,), name=f"pygpu-dp-{self.device_ids[i]}")
                   for i in range(1, len(replicas))]
        for t in threads:
            t.start()
        work(0)
        for t in threads:
            t.join()
        for i, e in enumerate(errors):
            if e is not None:
                raise RuntimeError(f"DataParallel: the replica on {self.device_ids[i]} raised "
                                   f"{type(e).__name__}: {e}") from e
        return results

    def gather(self, outputs, output_device):
        from ..._C import Tensor
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
