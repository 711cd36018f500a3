"""ZeroRedundancyOptimizer: each rank keeps the optimizer state of its share of the
parameters only (ZeRO stage 1), as PyTorch's (torch/distributed/optim/
zero_redundancy_optimizer.py).

The parameters are partitioned among the ranks of the group as PyTorch partitions them: each
parameter group's parameters sorted by size, largest first, each given to the rank that holds
the fewest elements so far. Each rank runs a local optimizer (optimizer_class, with the
defaults and the groups' own options) over its share: step() updates that share, then every
parameter is broadcast from the rank that owns it, so all ranks end the step with the same
weights. The gradients are the ones every rank already has (DistributedDataParallel's
averages). So a rank holds 1/world_size of Adam's two moments: the memory this saves.

state_dict() needs consolidate_state_dict(to=rank) first, on every rank (it gathers the
shares' states on `to`); it then returns the whole state in the local optimizer's own format,
which load_state_dict takes back on any number of ranks (each keeps its share)."""
from ... import distributed as dist
from ...autograd import no_grad
from ...optim.optimizer import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer(overlap_with_ddp=True) needs DDP's "
                                      "communication hook; step after backward instead")
        self.process_group = dist.groups.resolve(process_group)
        if self.process_group is None:
            raise ValueError("ZeroRedundancyOptimizer: this rank is not in process_group")
        self.world_size = self.process_group.size()
        self.rank = self.process_group.rank()
        self.global_rank = self.process_group.ranks[self.rank]
        self._optim_constructor = optimizer_class
        self._optim_defaults = defaults
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._partition = None
        self._all_state_dicts = None
        self._built = False
        super().__init__(params, defaults)  # param_groups: every parameter, as PyTorch's
        self._build_local_optimizer()
        self._built = True

    # -- partition -------------------------------------------------------------------------
    def _partition_parameters(self):
        """[rank] -> list of param groups (dicts with the share's "params"), PyTorch's greedy
        partition: largest first, to the rank with the fewest elements so far."""
        if self._partition is None:
            sizes = [0] * self.world_size
            out = [[] for _ in range(self.world_size)]
            for group in self.param_groups:
                per_rank = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    r = sizes.index(min(sizes))
                    per_rank[r].append(p)
                    sizes[r] += p.numel()
                for r in range(self.world_size):
                    g = {k: v for k, v in group.items() if k != "params"}
                    g["params"] = per_rank[r]
                    out[r].append(g)
            self._partition = out
        return self._partition

    def _owner(self):
        """id(param) -> the group rank that updates it."""
        return {id(p): r for r, groups in enumerate(self._partition_parameters())
                for g in groups for p in g["params"]}

    def _build_local_optimizer(self):
        mine = [g for g in self._partition_parameters()[self.rank] if g["params"]]
        if not mine:  # a rank with no share still needs an optimizer object (an empty step)
            self.optim = None
            return
        self.optim = self._optim_constructor(mine, **self._optim_defaults)

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        if getattr(self, "_built", False):
            self._partition = None
            old = self.optim
            self._build_local_optimizer()
            if old is not None and self.optim is not None:
                for k, v in old.state.items():
                    self.optim.state[k] = v

    # -- step ------------------------------------------------------------------------------
    def step(self, closure=None):
        """Update this rank's share, then broadcast every parameter from its owner."""
        loss = None
        if closure is not None:
            from ...autograd import enable_grad
            with enable_grad():
                loss = closure()
        if self.optim is not None:
            for local, full in zip(self.optim.param_groups, self._my_groups()):
                for k, v in full.items():  # options changed on the global groups (lr schedules)
                    if k != "params":
                        local[k] = v
            self.optim.step()
        self._sync_params()
        return loss

    def _my_groups(self):
        return [g for g in self.param_groups
                if any(self._owner()[id(p)] == self.rank for p in g["params"])]

    @no_grad()
    def _sync_params(self):
        owner = self._owner()
        works = []
        for g in self.param_groups:
            for p in g["params"]:
                works.append(dist.broadcast(p.data, src=self.process_group.ranks[owner[id(p)]],
                                            group=self.process_group, async_op=True))
        for w in works:
            if w is not None:
                w.wait()

    # -- state -----------------------------------------------------------------------------
    def _global_index(self):
        return {id(p): i for i, p in enumerate(self._params())}

    def consolidate_state_dict(self, to=0):
        """Gather every share's optimizer state on global rank `to` (call on every rank)."""
        index = self._global_index()
        local = {"state": {}, "groups": []}
        if self.optim is not None:
            for p_id, st in self.optim.state.items():
                local["state"][index[p_id]] = {k: (v.cpu() if hasattr(v, "cpu") else v)
                                               for k, v in st.items()}
        gathered = [None] * self.world_size if self.global_rank == to else None
        dist.gather_object(local, gathered, dst=to, group=self.process_group)
        self._all_state_dicts = gathered

    def state_dict(self):
        """The whole optimizer state (after consolidate_state_dict(to=this rank))."""
        if self._all_state_dicts is None:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please "
                               "call `consolidate_state_dict(to=...)` on all ranks beforehand if "
                               "you meant to save the global state.")
        state = {}
        for part in self._all_state_dicts:
            state.update(part["state"])
        groups, i = [], 0
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = list(range(i, i + len(g["params"])))
            i += len(g["params"])
            groups.append(d)
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a whole state (from state_dict(), saved by any number of ranks): each rank
        keeps its share."""
        super().load_state_dict(state_dict)  # the global groups' options, every state
        owner = self._owner()
        self._build_local_optimizer()
        if self.optim is not None:
            for p in self.optim._params():
                if id(p) in self.state:
                    self.optim.state[id(p)] = self.state[id(p)]
        self.state = type(self.state)({k: v for k, v in self.state.items()
                                       if owner.get(k) == self.rank})
