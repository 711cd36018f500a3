"""optim.Optimizer: parameter groups, per-parameter state, zero_grad, state_dict.

Subclasses implement _update(p, group, state): one fused in-place op per
parameter on the parameter's device (pygpu._ops._train.sgd_update_ / adam_update_), so
a step makes no transfer and no chain of Python-level tensor ops."""
from .. import _C
from .._dtype import bfloat16, float16, float32
from ..autograd import no_grad

Tensor = _C.Tensor


def _check_hyper(name, **values):
    """Each hyper-parameter a number >= 0, or a ValueError naming it (as PyTorch's checks)."""
    for k, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"{name}: invalid {k} {v!r}; it must be a number >= 0")


class _ParamState(dict):
    """optimizer.state: per-parameter state dicts, keyed by id(param); indexing it with the
    parameter itself (PyTorch's optimizer.state[p]) works too. Like PyTorch's (a
    defaultdict(dict)), reading a parameter's state that is not there yet makes it empty
    (shared optimizers fill it in their __init__: A3C's SharedAdam)."""

    def __missing__(self, key):
        value = {}
        super().__setitem__(key, value)
        return value

    @staticmethod
    def _key(k):
        return id(k) if isinstance(k, Tensor) else k

    def __getitem__(self, k):
        return super().__getitem__(self._key(k))

    def __setitem__(self, k, v):
        super().__setitem__(self._key(k), v)

    def __contains__(self, k):
        return super().__contains__(self._key(k))

    def get(self, k, default=None):
        return super().get(self._key(k), default)

    def setdefault(self, k, default=None):
        return super().setdefault(self._key(k), default)

    def pop(self, k, *default):
        return super().pop(self._key(k), *default)


class Optimizer:
    def __init__(self, params, defaults):
        if isinstance(params, Tensor):
            raise TypeError("params must be an iterable of tensors or of dicts, not a single "
                            "Tensor (use [t] or model.parameters())")
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = _ParamState()
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group):
        group = dict(group)
        ps = group["params"]
        group["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer params must be Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf tensor (use a Parameter or "
                                 "t.detach().requires_grad_())")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    def __repr__(self):
        out = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            out.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    out.append(f"    {k}: {g[k]}")
        out.append(")")
        return "\n".join(out)

    def zero_grad(self, set_to_none=True):
        from ..nn.module import _zero_grads
        _zero_grads((p for g in self.param_groups for p in g["params"]), set_to_none)

    @no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            from ..autograd import enable_grad
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.device != p.device:
                    raise _C.DeviceMismatchError(
                        f"optimizer: a parameter is on {p.device} but its grad is on "
                        f"{p.grad.device}")
                state = self.state.setdefault(id(p), {})
                if p.dtype is float16 or p.dtype is bfloat16:
                    self._update_half(p, group, state)
                else:
                    self._update(p, group, state)
        return loss

    def _update_half(self, p, group, state):
        """A float16/bfloat16 parameter: the update runs on a float32 master copy
        (state["master"], made from p on the first step; its optimizer state is float32 too)
        with the gradient widened, and p becomes the master rounded once. An update smaller
        than half a unit in p's last place accumulates in the master instead of vanishing."""
        master = state.get("master")
        if master is None:
            master = state["master"] = p.detach().astype(float32)
        master.grad = p.grad.astype(float32)
        self._update(master, group, state)
        master.grad = None
        p.copy_(master)

    def _update(self, p, group, state):
        raise NotImplementedError

    # ---- state_dict ---------------------------------------------------------------------

    def _params(self):
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self):
        """{"state": {index: {name: Tensor or number}}, "param_groups": [...]}, with
        parameters referred to by their index in param_groups order, as in PyTorch."""
        index = {id(p): i for i, p in enumerate(self._params())}
        state = {index[k]: dict(v) for k, v in self.state.items() if k in index}
        groups, i = [], 0
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = list(range(i, i + len(g["params"])))
            i += len(g["params"])
            groups.append(d)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError("optimizer load_state_dict: the saved parameter groups do not "
                             "match this optimizer's (different number of groups or params)")
        params = self._params()
        for saved, own in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    own[k] = v
        self.state = _ParamState()
        for i, st in state_dict["state"].items():
            p = params[int(i)]
            self.state[id(p)] = {k: (_own_copy(v, p) if isinstance(v, Tensor) else v)
                                 for k, v in st.items()}


def _own_copy(v, p):
    """State tensor v on p's device, never shared with the dict it came from (PyTorch
    deep-copies a loaded state_dict: two optimizers must not update one buffer)."""
    moved = v.to(p.device)
    return moved.clone() if moved is v else moved
