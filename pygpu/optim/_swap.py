"""torch.optim.swap_in_optimizer_params_and_state: a context in which an optimizer's
parameters, per-group settings and state are others (a state_dict-shaped dict and the
tensors to step), restored on exit; with PyTorch's checks and messages
(torch/optim/_stateless.py). optimizer.step() inside it updates the swapped-in tensors and
the swapped-in state's tensors in place; other changes to the state stay inside."""
import contextlib

from .. import _C
from .optimizer import _ParamState

Tensor = _C.Tensor
_WHO = "swap_in_optimizer_params_and_state"


def _state_field(state):
    if not isinstance(state, dict):
        raise RuntimeError(f"{_WHO} requires swapin_optim_state['state'] to be a dict mapping "
                           f"packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_WHO} requires optimizer.state_dict()-style state keyed by packed "
                           f"parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_WHO} requires per-parameter optimizer state entries to be "
                           f"dictionaries.")
    return state


def _group_ids(idx, group, swapin_group):
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_WHO} requires each optimizer param group to be a dictionary.")
    ids = swapin_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_WHO} requires optimizer.state_dict()-style "
                           f"param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(group["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of "
                           f"params than the live optimizer param group.")
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise RuntimeError(f"{_WHO} requires optimizer.state_dict()-style param group keys to "
                           f"exactly match the live optimizer group keys for group {idx}. Keys "
                           f"only in swap-in: {swapin_only}. Keys only in live: {live_only}.")
    return ids


def _prepare(optimizer, swapin_parameters, swapin_optim_state):
    """(state by packed id, [(live group, swap-in group, its tensors)])."""
    if not optimizer.state:
        raise RuntimeError(f"{_WHO} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_WHO} requires a DCP-style optimizer state_dict.")
    state = _state_field(swapin_optim_state.get("state"))
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_WHO} requires swapin_optim_state['param_groups'] to be a list of "
                           f"param-group dicts, got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than "
                           "the live optimizer.")
    flat = list(swapin_parameters.values())
    at, seen, infos = 0, set(), []
    for idx, (group, swapin_group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _group_ids(idx, group, swapin_group)
        seen.update(ids)
        if at + len(ids) > len(flat):
            raise RuntimeError(f"{_WHO} requires the explicit parameter state to match "
                               f"optimizer.param_groups ordering.")
        infos.append((group, swapin_group, flat[at:at + len(ids)], ids))
        at += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_WHO} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Within the context, `optimizer` steps the tensors of swapin_parameters (in
    param_groups order) with the groups' settings and the per-parameter state of
    swapin_optim_state (an optimizer.state_dict()-shaped dict); its own are back on exit."""
    state, infos = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = _ParamState()
        for group, swapin_group, params, ids in infos:
            group["params"] = params
            for key, value in swapin_group.items():
                if key != "params":
                    group[key] = value
            for p, pid in zip(params, ids):
                swapped[p] = dict(state.get(pid, {}))  # in-place tensor updates reach the caller
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
