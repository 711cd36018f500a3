"""The optimizers' step as PyTorch's `foreach=` / `fused=` arguments choose it: one fused op per
parameter (the single-tensor path), or a few MULTI nodes per parameter group, device and dtype
(the multi-tensor path: `_C._optim_multi`, the op table's MULTI row; a node starts at each
large parameter, NODE_START_BYTES below), each updating every parameter of its list in one
call from C: on cpu and sim cut over the device's threads by the total element count, with
the GIL released on cpu; on cuda in a few launches of PyTorch's multi_tensor_apply layout (a
chunk table by value, one block per chunk). Both run the same per-element update, so they
agree bit for bit; the choice changes the time only.

An optimizer opts in by defining `_plan(p, group, state) -> Plan`: what its update of p is
(the update kind, its state tensors, hyper-parameters, step and flags), made once and run by
either path. The flags are checked as PyTorch's optimizers check them (`fused` and `foreach`
together, `fused` with `differentiable`, `fused` on a parameter that is not floating point or
on a device without fused kernels raise PyTorch's RuntimeError, in its words)."""
from collections import namedtuple

from .. import _C
from .._dtype import bfloat16, float16, float32

# kind: "sgd" or a PG_OPTIM row's name; states: three tensors or None (the node's slots);
# hyper: five floats; step: the step number the kind's scalars use; flag0, flag1: its flags
Plan = namedtuple("Plan", "kind states hyper step flag0 flag1")

# On a device that queues its work, a multi-tensor node starts at each parameter of at least
# this many bytes; smaller ones ride in the node before them (a layer's bias with its
# weight). The step of a large weight is then a node of its own, so whatever reads that
# weight next (DataParallel's refresh copy to the other devices, the next forward's first
# GEMM) waits for its own update only, not for every parameter's: the first layer's weights
# leave for the replicas while the later layers' are still being stepped. Small parameters
# still share one node, so a model of many small tensors keeps one call per group, as
# PyTorch's foreach path.
NODE_START_BYTES = 256 << 10

# the device types whose backends give pygpu.optim its fused step (a MULTI node where the
# backend runs one of the kind, else one fused op per parameter)
FUSED_DEVICES = ["cpu", "sim", "cuda"]


def check_flags(foreach, fused, differentiable):
    """PyTorch's constructor checks of the three flags, in its order and words."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: pygpu's optimizer step "
                                  "is not recorded by autograd (it runs under no_grad)")


def check_fused_param(p):
    """fused=True on a parameter that is not floating point, or on a device without fused
    kernels: PyTorch's RuntimeError (torch.optim.optimizer._device_dtype_check_for_fused)."""
    if not (p.device.type in FUSED_DEVICES and p.dtype.is_floating_point):
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of "
                           f"supported devices: {FUSED_DEVICES} but {p.dtype} and {p.device.type}")


def wants_multi(group):
    """Whether the group steps as one multi-tensor node per device and dtype: foreach=True or
    fused=True, or both left None (PyTorch then picks by device; pygpu's cpu, sim and cuda
    run the MULTI node, and a backend without the list kernel of a kind steps per parameter
    below)."""
    foreach, fused = group.get("foreach"), group.get("fused")
    if group.get("differentiable"):
        return False
    return bool(foreach) or bool(fused) or (foreach is None and fused is None)


def apply_one(p, grad, plan):
    """The single-tensor path: one fused op on p's device."""
    if plan.kind == "sgd":
        lr, momentum, dampening, weight_decay, _ = plan.hyper
        _C._sgd_update(p, grad, plan.states[0], lr, momentum, dampening, weight_decay,
                       plan.flag0, plan.flag1)
    else:
        _C._optim_update(plan.kind, p, grad, *plan.states, plan.hyper, plan.step, plan.flag0,
                         plan.flag1)


def step_group(opt, group):
    """One step of `group`'s parameters that have a grad, by `opt._plan`. A float16/bfloat16
    parameter steps its float32 master copy (state["master"]) with the grad widened, then
    takes the master rounded once, as Optimizer._update_half does; a complex parameter steps
    its real pairs (view_as_real, PyTorch's treatment: its state is kept as pairs too);
    maximize steps along -grad (PyTorch's `grad = -grad`)."""
    multi = wants_multi(group)
    fused, maximize = bool(group.get("fused")), bool(group.get("maximize"))
    buckets = {}
    for p in group["params"]:
        if p.grad is None:
            continue
        if p.grad.device != p.device:
            raise _C.DeviceMismatchError(f"optimizer: a parameter is on {p.device} but its grad "
                                         f"is on {p.grad.device}")
        if fused:
            check_fused_param(p)
        state = opt.state.setdefault(id(p), {})
        grad = -p.grad if maximize else p.grad
        target, half = p, p.dtype is float16 or p.dtype is bfloat16
        if p.dtype.is_complex:  # stepped as its real pairs, as PyTorch's optimizers do
            target, grad = _C._view_as_real(p), _C._view_as_real(grad)
        if half:
            target = state.get("master")
            if target is None:
                target = state["master"] = p.detach().astype(float32)
            grad = grad.astype(float32)
        plan = opt._plan(target, group, state)
        if not multi:
            apply_one(target, grad, plan)
            if half:
                p.copy_(target)
            continue
        key = (target.device, target.dtype, plan.kind, plan.step, plan.flag0, plan.flag1,
               tuple(s is None for s in plan.states))
        buckets.setdefault(key, []).append((target, grad, plan, p if half else None))
    for items in buckets.values():
        first = items[0][2]
        if _C._has_node("MULTI", items[0][0], first.kind.upper()):
            for part in node_parts(items):
                states = [None if first.states[k] is None else [it[2].states[k] for it in part]
                          for k in range(3)]
                _C._optim_multi(first.kind, [it[0] for it in part], [it[1] for it in part],
                                *states, tuple(float(h) for h in first.hyper), int(first.step),
                                bool(first.flag0), bool(first.flag1))
        else:  # the device's backend has no MULTI node of this kind: one fused op per parameter
            for target, grad, plan, _ in items:
                apply_one(target, grad, plan)
        for target, _, _, p in items:
            if p is not None:
                p.copy_(target)


def node_parts(items):
    """items (target, grad, plan, p) of one device, in the group's order, cut into the
    multi-tensor nodes to queue: a new node at each target of at least NODE_START_BYTES on a
    device that queues its work (sim, cuda). The cpu runs a node before the call returns, so
    nothing could start earlier there: one node."""
    if items[0][0].device.type == "cpu":
        return [items]
    parts = []
    for it in items:
        if not parts or it[0].nbytes >= NODE_START_BYTES:
            parts.append([])
        parts[-1].append(it)
    return parts
