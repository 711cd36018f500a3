# test_ddp_options.py - DistributedDataParallel as PyTorch users configure it, checked against
# PyTorch's own DDP: one script runs under torch.distributed (gloo, torchrun) and under
# pygpu.distributed.run, and every rank's gradients (or None), weights and BatchNorm buffers
# must agree, for find_unused_parameters (a layer rank 1 does not use, one nobody uses),
# static_graph, gradient_as_bucket_view, no_sync() accumulation and broadcast_buffers on/off.
# Then what PyTorch does differently or not at all: a parameter without a gradient (and without
# find_unused_parameters) is an error in that same backward, naming it; gradient_as_bucket_view
# leaves .grad a view of the bucket; buckets are rebuilt in the order the gradients arrived; the
# all-reduces overlap backward (DistributedDataParallel.comm_overlap()).
from _mpi import launch
from test_collectives import _same, rank_rows, torch_rows

SCRIPT = """
import json, numpy as np
import LIB as T
import LIB.distributed as dist
from LIB import nn
from LIB.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group(BACKEND)
r = dist.get_rank()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 8)
        self.bn = nn.BatchNorm1d(8)
        self.b = nn.Linear(8, 3)
        self.side = nn.Linear(8, 3)    # used where use_side
        self.never = nn.Linear(8, 3)   # used by no rank

    def forward(self, x, use_side):
        h = T.relu(self.bn(self.a(x)))
        y = self.b(h)
        return y + self.side(h) if use_side else y


def L(t):
    return None if t is None else t.detach().cpu().tolist()


CONFIGS = {
    "find_unused": dict(find_unused_parameters=True),
    "static_graph": dict(static_graph=True),
    "bucket_view": dict(find_unused_parameters=True, gradient_as_bucket_view=True),
    "no_sync": dict(find_unused_parameters=True),
    "no_buffers": dict(find_unused_parameters=True, broadcast_buffers=False),
}
out = {"rank": r}
for name, opts in CONFIGS.items():
    model = Net().double()
    rng = np.random.default_rng(10 + r)   # ranks differ: DDP starts them from rank 0's
    with T.no_grad():
        for p in model.parameters():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape)) * 0.3))
        model.bn.running_mean.copy_(T.tensor(rng.standard_normal(8)))
    ddp = DDP(model, **opts)
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    data = np.random.default_rng(r)
    use_side = (r == 0) if name != "static_graph" else True
    res = {"grads": []}
    for step in range(3):
        opt.zero_grad()
        if name == "no_sync":
            with ddp.no_sync():
                x = T.tensor(data.standard_normal((4, 6)))
                ddp(x, use_side).pow(2).mean().backward()
        x = T.tensor(data.standard_normal((4, 6)))
        ddp(x, use_side).pow(2).mean().backward()
        res["grads"].append({n: L(p.grad) for n, p in model.named_parameters()})
        opt.step()
    res["params"] = {n: L(p) for n, p in model.named_parameters()}
    res["running_mean"] = L(model.bn.running_mean)
    out[name] = res
    dist.barrier()
print("JSON " + json.dumps(out))
"""


def _script(lib):
    return SCRIPT.replace("LIB", lib).replace("BACKEND", '"gloo"' if lib == "torch" else "")


def test_ddp_options_match_pytorchs_ddp(tmp_path):
    ours = rank_rows(launch(tmp_path, _script("pygpu"), nproc=2, timeout=300))
    theirs = torch_rows(tmp_path, _script("torch"), 2)
    for mine, ref in zip(ours, theirs):
        for cfg in ref:
            _same(mine[cfg], ref[cfg], f"rank {mine['rank']} {cfg}")
    # the checks have teeth: the layer nobody uses keeps grad None, the one rank 1 skips gets
    # rank 0's gradient averaged over both ranks there, and the two ranks' buffers differ
    # without broadcast_buffers
    g1 = ours[1]["find_unused"]["grads"][0]
    assert g1["never.weight"] is None and g1["side.weight"] is not None
    assert ours[0]["no_buffers"]["running_mean"] != ours[1]["no_buffers"]["running_mean"]


EXTRAS = """
import json, os, pygpu, pygpu.distributed as dist
from pygpu import nn
from pygpu.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group()
r = dist.get_rank()
out = {"rank": r}

# a parameter without a gradient, no find_unused_parameters: an error in the same backward
class WithUnused(nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = nn.Linear(4, 2), nn.Linear(4, 2)

    def forward(self, x):
        return self.used(x)
ddp = DDP(WithUnused())
try:
    ddp(pygpu.ones(3, 4)).sum().backward()
    out["error"] = None
except RuntimeError as e:
    out["error"] = str(e)

# gradient_as_bucket_view: .grad is a view of the bucket buffer, and stays one
m = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
ddp = DDP(m, gradient_as_bucket_view=True)
opt = pygpu.optim.SGD(m.parameters(), lr=0.1)
views = []
for step in range(3):
    opt.zero_grad(set_to_none=False)
    ddp(pygpu.ones(3, 4) * (r + 1)).sum().backward()
    opt.step()
    spans = [(b.flat.data_ptr(), b.flat.data_ptr() + b.flat.nbytes) for b in ddp.reducer.buckets]
    views.append(all(any(lo <= p.grad.data_ptr() < hi for lo, hi in spans) for p in m.parameters()))
out["views"] = views

# buckets rebuilt in arrival order after the first iteration (PyTorch's), and the overlap
m = nn.Sequential(*[nn.Linear(256, 256) for _ in range(6)])
ddp = DDP(m, bucket_cap_mb=0.3)
sizes = []
for step in range(3):
    ddp(pygpu.ones(64, 256)).sum().backward()
    sizes.append(ddp.bucket_sizes)
out["sizes"] = sizes
out["overlap"] = ddp.comm_overlap()
print("JSON " + json.dumps(out))
"""


def test_what_pygpus_ddp_adds(tmp_path):
    rows = rank_rows(launch(tmp_path, EXTRAS, nproc=2, timeout=200))
    for row in rows:
        assert "Expected to have finished reduction" in row["error"]
        assert "find_unused_parameters=True" in row["error"] and "unused.weight" in row["error"]
        assert row["views"] == [True, True, True]
        first, later = row["sizes"][0], row["sizes"][1:]
        assert len(first) == 1                       # one bucket until the first backward
        assert all(len(s) > 1 for s in later)        # then split at the cap, arrival order
        assert sum(first) == sum(later[0]) == 6 * (256 * 256 + 256) * 4
        ov = row["overlap"]
        assert ov["comm_s"] > 0 and 0.0 <= ov["overlap"] <= 1.0 and ov["exposed_s"] >= 0
