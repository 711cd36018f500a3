"""FlatParamHandle: one FSDP unit's parameters as one flat, sharded parameter, and the gather,
free, refill and reduce-scatter around each forward and backward (PyTorch's
torch/distributed/fsdp/_flat_param.py, in its shape).

At construction the unit's own parameters (those of its module not inside a nested unit) are
laid end to end, padded to a multiple of the group's size p, and each rank keeps its 1/p slice
as `flat_param`, an nn.Parameter: what the optimizer updates and what module.parameters()
yields. The original parameters leave their modules; in their place each module gets a
stable tensor (`view`), a leaf that requires grad when the parameter did:

    gather()   all_gather_into_tensor of the shards into one full flat tensor; each view's
               memory becomes its slice of it (Tensor.data: the same Python objects, so the
               autograd graph that saved them sees the gathered values)
    free()     each view's memory is swapped for an empty tensor, so the full tensor is freed
               (FULL_SHARD, after the forward and after the backward)
    refill()   gather() again before the unit's backward, telling autograd's version check that
               the new memory holds the values it saved (autograd.versions.refilled)
    reduce()   once backward has given every view its gradient: the gradients laid end to end
               (zeros for a view without one), reduce_scatter_tensor with ReduceOp.AVG into
               this rank's slice, added to flat_param.grad; asynchronous, waited for at the end
               of backward

NO_SHARD keeps the whole flat parameter on every rank (views of it: no gather) and all-reduces
its gradient, as DistributedDataParallel does."""
from ... import distributed as dist
from ..._tensor.create import empty, zeros
from ..._tensor.join import cat
from ...autograd import no_grad, register_post_accumulate_grad_hook, versions
from ...nn.parameter import Parameter


class FlatParamHandle:
    def __init__(self, params, group, shard, device=None):
        """params: [(module, attribute name, fully qualified name, parameter)], one unit's;
        device: where the shard lives (default: the parameters' device). A model built on the
        cpu is flattened and sharded there, and only this rank's shard moves to the device:
        the whole model never has to fit on it."""
        self.group = group
        self.shard = shard                      # False: NO_SHARD
        self.entries = []                       # (module, name, fqn, shape, offset, numel)
        p0 = params[0][3]
        self.dtype, self.device = p0.dtype, p0.device
        off = 0
        for module, name, fqn, p in params:
            if p.dtype != self.dtype or p.device != self.device:
                raise ValueError(f"FSDP: the parameters of one unit must share a dtype and device; "
                                 f"{fqn} is {p.dtype} on {p.device}, the unit's first {self.dtype} "
                                 f"on {self.device}")
            self.entries.append((module, name, fqn, tuple(p.shape), off, p.numel()))
            off += p.numel()
        self.numel = off
        world = group.size() if shard else 1
        self.padded = -(-off // world) * world
        self.shard_numel = self.padded // world
        with no_grad():
            flat = zeros(self.padded, dtype=self.dtype, device=self.device)
            for (_, _, _, _, o, n), (_, _, _, p) in zip(self.entries, params):
                flat[o:o + n].copy_(p.detach().reshape(n))
            r = group.rank() if shard else 0
            mine = flat[r * self.shard_numel:(r + 1) * self.shard_numel].clone()
            del flat
            if device is not None:
                from ..._device import device as as_device
                self.device = as_device(device)
                mine = mine.to(self.device)
        self.flat_param = Parameter(mine, requires_grad=any(p.requires_grad for *_, p in params))
        self._empty = empty(0, dtype=self.dtype, device=self.device)
        self.views = []
        for (module, name, _, shape, _, _), (_, _, _, p) in zip(self.entries, params):
            v = self._empty.detach().requires_grad_(p.requires_grad)
            del module._parameters[name]
            object.__setattr__(module, name, v)
            self.views.append(v)
        self.full = None
        self._stamp = None
        self._pending = set()   # id(view) of the views still owed a gradient in this backward
        self._work = None       # the reduce-scatter in flight
        self._grad_out = None
        self._hooks = [register_post_accumulate_grad_hook(v, self._grad_ready)
                       for v in self.views if v.requires_grad]
        self.on_reduced = None  # set by the unit: what to do once its gradients are reduced

    # -- parameters ------------------------------------------------------------------------
    @no_grad()
    def gather(self):
        """The full parameters into the views (the unit's forward, or its backward)."""
        if self.full is not None:
            return False
        if self.shard and self.group.size() > 1:
            full = empty(self.padded, dtype=self.dtype, device=self.device)
            dist.all_gather_into_tensor(full, self.flat_param.detach(), group=self.group)
        else:
            full = self.flat_param.detach()
        for v, (_, _, _, shape, o, n) in zip(self.views, self.entries):
            v.data = full[o:o + n].reshape(shape)
        self.full = full
        return True

    @no_grad()
    def free(self):
        """Let the full parameters go: each view's memory swapped for an empty tensor."""
        if self.full is None or not self.shard:
            return
        self._stamp = self.views[0]._write_stamp if self.views else None
        for v in self.views:
            v.data = self._empty
        self.full = None

    def refill(self):
        """gather() again before backward: the same values the forward saved."""
        stamp = self._stamp
        if self.gather() and stamp is not None:
            for v in self.views:
                versions.refilled(v, stamp)

    # -- gradients -------------------------------------------------------------------------
    def expect_grads(self):
        """A backward is coming: every view that requires grad owes one."""
        self._pending = {id(v) for v in self.views if v.requires_grad}

    def _grad_ready(self, v):
        self._pending.discard(id(v))
        if not self._pending and self._work is None and self.full is not None:
            self.reduce()

    @no_grad()
    def reduce(self):
        """Average the views' gradients across the group into this rank's slice (async)."""
        parts = []
        for v, (_, _, _, _, _, n) in zip(self.views, self.entries):
            g = v.grad
            parts.append(g.reshape(n) if g is not None else zeros(n, dtype=self.dtype,
                                                                    device=self.device))
            v.grad = None
        if self.padded > self.numel:
            parts.append(zeros(self.padded - self.numel, dtype=self.dtype, device=self.device))
        flat_grad = cat(parts)
        if not self.shard:
            out = flat_grad
            self._work = dist.all_reduce(out, dist.ReduceOp.AVG, group=self.group, async_op=True)
        else:
            out = empty(self.shard_numel, dtype=self.dtype, device=self.device)
            self._work = dist.reduce_scatter_tensor(out, flat_grad, dist.ReduceOp.AVG,
                                                    group=self.group, async_op=True)
        self._grad_out = out
        for v in self.views:
            versions.forget(v)
        if self.on_reduced is not None:
            self.on_reduced(self)

    @no_grad()
    def finish(self):
        """End of backward: wait for the reduction, add it to flat_param.grad."""
        if self._work is None:
            return
        self._work.wait()
        g = self._grad_out
        self._work = self._grad_out = None
        fp = self.flat_param
        if fp.grad is None:
            fp.grad = g
        else:
            fp.grad.add_(g)

    # -- the full values (state dicts) -----------------------------------------------------
    @no_grad()
    def full_tensors(self, to_cpu=False):
        """{fqn: the full parameter} (a collective: every rank of the group calls it); to_cpu:
        copied straight to the host (no second copy on the device)."""
        was_free = self.full is None
        self.gather()
        out = {fqn: (self.full[o:o + n].reshape(shape).cpu() if to_cpu
                     else self.full[o:o + n].reshape(shape).clone())
               for _, _, fqn, shape, o, n in self.entries}
        if was_free:
            self.free()
        return out

    @no_grad()
    def load_full(self, tensors):
        """This rank's slice from {fqn: full parameter} (from any number of ranks)."""
        flat = zeros(self.padded, dtype=self.dtype, device=self.device)
        for _, _, fqn, shape, o, n in self.entries:
            t = tensors[fqn]
            if tuple(t.shape) != shape:
                raise RuntimeError(f"Error(s) in loading state_dict: size mismatch for {fqn}: "
                                   f"copying a param with shape {tuple(t.shape)}, the shape in "
                                   f"the current model is {shape}")
            flat[o:o + n].copy_(t.reshape(n).to(self.device))
        r = self.group.rank() if self.shard else 0
        self.flat_param.copy_(flat[r * self.shard_numel:(r + 1) * self.shard_numel])
        if self.full is not None:
            self.full = None
            self.gather()

    def close(self):
        for h in self._hooks:
            h.remove()
        self._hooks = []
