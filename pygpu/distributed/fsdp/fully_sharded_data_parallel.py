"""FullyShardedDataParallel: PyTorch's FSDP (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD) over
pygpu.distributed's collectives.

FSDP(module, auto_wrap_policy=...) first wraps the submodules the policy picks (bottom up),
each an FSDP unit of its own, then makes the rest of `module`'s parameters the root unit. Each
unit's parameters live as one flat parameter, sharded over the group (_flat_param.py):

  forward    all-gather the unit's shards into its full parameters, run the module, and
             (FULL_SHARD) free them again; a hook on the outputs' gradient nodes re-gathers
             them when backward reaches the unit (PyTorch's pre-backward hook);
  backward   once every parameter of the unit has its gradient, reduce-scatter (ReduceOp.AVG)
             the gradients into this rank's slice, asynchronously, and free the parameters;
             the end of backward (autograd's queue_callback) waits for the reductions and adds
             them to each flat parameter's .grad.

So a rank holds its shard of every parameter, gradient and optimizer state, plus the full
parameters of the unit that is running. SHARD_GRAD_OP keeps the full parameters from the
forward to the backward (no second gather); NO_SHARD keeps them always and all-reduces the
gradients (DDP). module.parameters() yields the flat shards, which is what the optimizer
takes, as in PyTorch (use_orig_params=False).

State dicts, with PyTorch's names and keys (no FSDP prefixes):
  FULL_STATE_DICT (the default)  every parameter whole (gathered), on every rank, or on rank 0
                                 only (FullStateDictConfig(rank0_only=True)): saved on one rank,
                                 it loads into FSDP on any number of ranks, or into the plain
                                 model, and a plain model's state dict loads into FSDP;
  SHARDED_STATE_DICT             each parameter's slice this rank owns, as a ShardedTensor with
                                 its offset in the flattened parameter;
  LOCAL_STATE_DICT               the flat shards themselves."""
import contextlib
import enum

from ... import distributed as dist
from ...autograd import is_grad_enabled
from ...autograd.engine import queue_callback
from ...nn.module import Module
from ._flat_param import FlatParamHandle


class ShardingStrategy(enum.Enum):
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class BackwardPrefetch(enum.Enum):
    BACKWARD_PRE = 1
    BACKWARD_POST = 2


class StateDictType(enum.Enum):
    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


class FullStateDictConfig:
    def __init__(self, offload_to_cpu=False, rank0_only=False):
        self.offload_to_cpu, self.rank0_only = offload_to_cpu, rank0_only


class ShardedStateDictConfig:
    def __init__(self, offload_to_cpu=False):
        self.offload_to_cpu = offload_to_cpu


LocalStateDictConfig = ShardedStateDictConfig


class CPUOffload:
    def __init__(self, offload_params=False):
        self.offload_params = offload_params


class ShardedTensor:
    """One rank's slice of a parameter in a SHARDED_STATE_DICT: the elements [offset, offset
    + local.numel()) of the flattened parameter, of global shape `size`."""

    def __init__(self, local, offset, size):
        self.local, self.offset, self.size = local, int(offset), tuple(size)

    def local_tensor(self):
        return self.local

    def __repr__(self):
        return f"ShardedTensor(size={self.size}, offset={self.offset}, local={self.local.numel()})"


_WRAPPED = "_fsdp_wrapped_module."


class FullyShardedDataParallel(Module):
    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision=None, ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states=False, forward_prefetch=False, limit_all_gathers=True,
                 use_orig_params=False, ignored_states=None, device_mesh=None):
        super().__init__()
        group = dist.groups.resolve(process_group)
        if group is None:
            raise ValueError("FullyShardedDataParallel: this rank is not in process_group")
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        if strategy in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2):
            raise NotImplementedError(f"{strategy}: pygpu's FSDP shards over one group; use "
                                      "FULL_SHARD, SHARD_GRAD_OP or NO_SHARD")
        if cpu_offload is not None and cpu_offload.offload_params:
            raise NotImplementedError("CPUOffload(offload_params=True) is not supported")
        if mixed_precision is not None:
            raise NotImplementedError("FSDP mixed_precision: use pygpu.autocast around the step")
        self.process_group = group
        self.sharding_strategy = strategy
        if auto_wrap_policy is not None:
            _wrap_children(module, auto_wrap_policy, dict(
                process_group=process_group, sharding_strategy=strategy,
                sync_module_states=sync_module_states, device_id=device_id))
        self._fsdp_wrapped_module = module
        own = _own_params(module)
        if sync_module_states:
            with _no_grad():
                for _, _, _, p in own:
                    dist.broadcast(p.data, src=group.ranks[0], group=group)
                for b in module.buffers():
                    dist.broadcast(b, src=group.ranks[0], group=group)
        # device_id: the module is sharded where it is (the cpu) and only the shards move
        self._handle = (FlatParamHandle(own, group, strategy != ShardingStrategy.NO_SHARD,
                                        device_id) if own else None)
        if device_id is not None:
            module.to(device_id)  # what is left: buffers
        if self._handle is not None:
            self._flat_param = self._handle.flat_param  # registered: what parameters() yields
            self._handle.on_reduced = self._after_reduce
        self._hook_handles = []
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config = FullStateDictConfig()

    @property
    def module(self):
        return self._fsdp_wrapped_module

    # -- forward and backward --------------------------------------------------------------
    def forward(self, *args, **kwargs):
        h = self._handle
        if h is None:
            return self._fsdp_wrapped_module(*args, **kwargs)
        h.gather()
        out = self._fsdp_wrapped_module(*args, **kwargs)
        for handle in self._hook_handles:  # an earlier forward's, never reached by a backward
            handle.remove()
        self._hook_handles = []
        if is_grad_enabled() and h.flat_param.requires_grad:
            h.expect_grads()
            _on_backward(out, self._before_backward, self._hook_handles)
            if self.sharding_strategy == ShardingStrategy.FULL_SHARD:
                h.free()
        else:
            h.free()
        return out

    def _before_backward(self, grad):
        h = self._handle
        for handle in self._hook_handles:  # once per backward (their nodes may go)
            handle.remove()
        self._hook_handles = []
        if not getattr(self, "_queued", False):
            self._queued = True
            queue_callback(self._end_of_backward)
        h.refill()
        return None

    def _after_reduce(self, h):
        h.free()

    def _end_of_backward(self):
        self._queued = False
        h = self._handle
        if h._pending and h.full is not None and h._work is None:
            h.reduce()  # a parameter without a gradient: zeros in its place
        h.finish()
        if self.sharding_strategy != ShardingStrategy.NO_SHARD:
            h.free()

    # -- state dicts -----------------------------------------------------------------------
    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None, optim_state_dict_config=None):
        """Within the block, state_dict() and load_state_dict() of `module` (and its units) are
        of `state_dict_type`."""
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        saved = [(u._state_dict_type, u._state_dict_config) for u in units]
        default = (FullStateDictConfig() if state_dict_type == StateDictType.FULL_STATE_DICT
                   else ShardedStateDictConfig())
        for u in units:
            u._state_dict_type, u._state_dict_config = state_dict_type, state_dict_config or default
        try:
            yield
        finally:
            for u, (t, c) in zip(units, saved):
                u._state_dict_type, u._state_dict_config = t, c

    def _units(self):
        return [m for m in self.modules() if isinstance(m, FullyShardedDataParallel)]

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        kind, cfg = self._state_dict_type, self._state_dict_config
        handles = [(u, u._handle) for u in self._units() if u._handle is not None]
        out = {}
        if kind == StateDictType.LOCAL_STATE_DICT:
            for u, h in handles:
                out[_clean(_path(self, u) + "_flat_param")] = h.flat_param.detach()
            out.update(_buffers(self))
            return out
        if kind == StateDictType.SHARDED_STATE_DICT:
            for u, h in handles:
                base = _path(self, u)
                r = h.group.rank() if h.shard else 0
                lo = r * h.shard_numel
                for _, _, fqn, shape, o, n in h.entries:
                    a, b = max(o, lo), min(o + n, lo + h.shard_numel)
                    local = h.flat_param.detach()[a - lo:b - lo] if a < b else h.flat_param.detach()[:0]
                    out[_clean(base + fqn)] = ShardedTensor(local.clone(), max(a - o, 0), shape)
            out.update(_buffers(self))
            return out
        full = {}
        for u, h in handles:
            base = _path(self, u)
            for fqn, t in h.full_tensors(cfg.offload_to_cpu).items():  # every rank gathers
                full[_clean(base + fqn)] = t
        full.update({k: (b.cpu() if cfg.offload_to_cpu else b) for k, b in _buffers(self).items()})
        if cfg.rank0_only and self.process_group.rank() != 0:
            return {}
        return {prefix + k: v for k, v in _in_module_order(self, full).items()}

    def load_state_dict(self, state_dict, strict=True, assign=False):
        kind = self._state_dict_type
        handles = [(u, u._handle) for u in self._units() if u._handle is not None]
        buffers = _buffer_refs(self)
        expected = set(buffers)
        if kind == StateDictType.LOCAL_STATE_DICT:
            for u, h in handles:
                key = _clean(_path(self, u) + "_flat_param")
                expected.add(key)
                with _no_grad():
                    h.flat_param.copy_(state_dict[key])
        elif kind == StateDictType.SHARDED_STATE_DICT:
            for u, h in handles:
                base = _path(self, u)
                lo = (h.group.rank() if h.shard else 0) * h.shard_numel
                with _no_grad():
                    for _, _, fqn, shape, o, n in h.entries:
                        key = _clean(base + fqn)
                        expected.add(key)
                        st = state_dict[key]
                        a = o + st.offset
                        k = st.local.numel()
                        if k:
                            h.flat_param[a - lo:a - lo + k].copy_(st.local.reshape(k))
        else:
            for u, h in handles:
                base = _path(self, u)
                names = {fqn: _clean(base + fqn) for _, _, fqn, _, _, _ in h.entries}
                expected.update(names.values())
                missing = [k for k in names.values() if k not in state_dict]
                if missing and strict:
                    raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}: "
                                       f"Missing key(s) in state_dict: {missing}")
                h.load_full({fqn: state_dict[k] for fqn, k in names.items() if k in state_dict})
        with _no_grad():
            for k, b in buffers.items():
                if k in state_dict:
                    b.copy_(state_dict[k].to(b.device))
        unexpected = sorted(set(state_dict) - expected)
        if strict and unexpected:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}: "
                               f"Unexpected key(s) in state_dict: {unexpected}")
        return _IncompatibleKeys([], unexpected)

    def extra_repr(self):
        n = self._handle.numel if self._handle else 0
        return f"sharding_strategy={self.sharding_strategy.name}, params={n}"


class _IncompatibleKeys(tuple):
    def __new__(cls, missing, unexpected):
        t = tuple.__new__(cls, (missing, unexpected))
        t.missing_keys, t.unexpected_keys = missing, unexpected
        return t


def _no_grad():
    from ...autograd import no_grad
    return no_grad()


def _clean(key):
    return key.replace(_WRAPPED, "")


def _path(root, unit):
    """unit's prefix inside root ("" for root itself), FSDP levels included."""
    if unit is root:
        return _WRAPPED
    for name, m in root.named_modules():
        if m is unit:
            return name + "." + _WRAPPED
    raise KeyError("unit not in root")


def _buffers(root):
    return {k: v.detach() for k, v in _buffer_refs(root).items()}


def _buffer_refs(root):
    return {_clean(name): b for name, b in root.named_buffers()}


def _in_module_order(root, flat):
    """The keys in the order the unwrapped model's state_dict has them (parameters and buffers
    of each module, modules depth first)."""
    order = []
    for name, m in root.named_modules():
        if isinstance(m, FullyShardedDataParallel):
            continue
        base = _clean(name + ".") if name else ""
        for attr in list(getattr(m, "_fsdp_param_names", ())) + list(m._parameters) + list(m._buffers):
            key = base + attr
            if key in flat and key not in order:
                order.append(key)
    order += [k for k in flat if k not in order]
    return {k: flat[k] for k in order}


def _own_params(module):
    """[(module, name, fqn, parameter)] of `module` outside nested FSDP units, each once."""
    out, seen = [], set()

    def walk(m, prefix):
        for name, p in list(m._parameters.items()):
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append((m, name, prefix + name, p))
        names = getattr(m, "_fsdp_param_names", [])
        m._fsdp_param_names = names + [name for name, p in m._parameters.items() if p is not None]
        for cname, child in m._modules.items():
            if child is not None and not isinstance(child, FullyShardedDataParallel):
                walk(child, prefix + cname + ".")
    walk(module, "")
    return out


def _wrap_children(module, policy, kwargs):
    """Wrap, bottom up, the submodules `policy` picks (PyTorch's auto_wrap)."""
    for name, child in list(module._modules.items()):
        if child is None or isinstance(child, FullyShardedDataParallel):
            continue
        _wrap_children(child, policy, kwargs)
        numel = sum(p.numel() for p in child.parameters()
                    if not isinstance(p, type(None)))
        own = sum(p.numel() for _, _, _, p in _own_params_peek(child))
        if own and policy(module=child, recurse=False, nonwrapped_numel=own if own else numel):
            module._modules[name] = FullyShardedDataParallel(child, **kwargs)


def _own_params_peek(module):
    """_own_params without marking the modules (for the wrap policy's count)."""
    out, seen = [], set()

    def walk(m, prefix):
        for name, p in m._parameters.items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append((m, name, prefix + name, p))
        for cname, child in m._modules.items():
            if child is not None and not isinstance(child, FullyShardedDataParallel):
                walk(child, prefix + cname + ".")
    walk(module, "")
    return out


def _on_backward(out, fn, handles):
    """fn(grad) when backward reaches any tensor of `out` (a hook on its gradient node; the
    handles go into `handles`)."""
    if isinstance(out, (tuple, list)):
        for x in out:
            _on_backward(x, fn, handles)
    elif isinstance(out, dict):
        for x in out.values():
            _on_backward(x, fn, handles)
    elif hasattr(out, "register_hook") and getattr(out, "requires_grad", False) and out.grad_fn is not None:
        handles.append(out.register_hook(fn))
