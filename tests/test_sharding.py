# test_sharding.py - ZeroRedundancyOptimizer and FullyShardedDataParallel (FULL_SHARD,
# SHARD_GRAD_OP, NO_SHARD) on 2 and 4 ranks, cpu and sim: the weights after Adam steps equal one
# process training on the global batch; ZeRO's consolidated state dict is the whole Adam state;
# FSDP's full state dict saved on rank 0 loads into FSDP on another number of ranks and into the
# plain model, and its sharded state dict reloads into the same sharding. And the proof of
# sharding: with each sim device capped below what one device needs for the parameters, their
# gradients and Adam's two moments, the one-device run runs out of memory where FSDP over four
# ranks trains, to the weights of an uncapped one-device run.
import json

import numpy as np
import pytest

from _mpi import launch
from test_collectives import rank_rows

TRAIN = """
import json, os, sys, numpy as np, pygpu, pygpu.distributed as dist
from pygpu import nn
from pygpu.distributed.fsdp import (FullyShardedDataParallel as FSDP, ShardingStrategy, StateDictType,
                                    FullStateDictConfig)
from pygpu.distributed.fsdp.wrap import ModuleWrapPolicy
from pygpu.distributed.optim import ZeroRedundancyOptimizer
dist.init_process_group()
r, p = dist.get_rank(), dist.get_world_size()
out = {"rank": r}


def make(dev):
    pygpu.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 3)).double().to(dev)


def train(model, opt, dev):
    rng = np.random.default_rng(0)
    for step in range(3):
        X, Y = rng.standard_normal((4 * p, 6)), rng.standard_normal((4 * p, 3))
        mine = slice(4 * r, 4 * r + 4)
        opt.zero_grad()
        ((model(pygpu.tensor(X[mine], device=dev)) - pygpu.tensor(Y[mine], device=dev)) ** 2).mean().backward()
        opt.step()


for dev in ("cpu", "sim:0"):
    res = {}
    for strat in ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD"):
        fsdp = FSDP(make(dev), sharding_strategy=getattr(ShardingStrategy, strat),
                    auto_wrap_policy=ModuleWrapPolicy({nn.Linear}) if strat != "NO_SHARD" else None)
        train(fsdp, pygpu.optim.Adam(fsdp.parameters(), lr=0.01), dev)
        res[strat] = {k: v.cpu().tolist() for k, v in fsdp.state_dict().items()}
        res[strat + "_flat"] = [tuple(q.shape) for q in fsdp.parameters()]
    model = make(dev)
    ddp = nn.parallel.DistributedDataParallel(model)
    zero = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=pygpu.optim.Adam, lr=0.01)
    train(ddp, zero, dev)
    res["zero"] = {k: v.cpu().tolist() for k, v in model.state_dict().items()}
    res["zero_local_states"] = len(zero.optim.state) if zero.optim else 0
    zero.consolidate_state_dict(to=0)
    if r == 0:
        sd = zero.state_dict()
        res["zero_state"] = {str(i): {k: (v.cpu().tolist() if hasattr(v, "cpu") else v) for k, v in st.items()}
                             for i, st in sd["state"].items()}
    out[dev] = res

# the full state dict saved on rank 0 only, and the sharded one per rank
fsdp = FSDP(make("cpu"), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
train(fsdp, pygpu.optim.Adam(fsdp.parameters(), lr=0.01), "cpu")
with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT, FullStateDictConfig(rank0_only=True)):
    full = fsdp.state_dict()
out["rank0_only_keys"] = len(full)
if r == 0:
    pygpu.save(full, os.path.join(sys.argv[1], f"full_{p}.pt"))
with FSDP.state_dict_type(fsdp, StateDictType.SHARDED_STATE_DICT):
    sharded = fsdp.state_dict()
    fresh = FSDP(make("cpu"), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
    with FSDP.state_dict_type(fresh, StateDictType.SHARDED_STATE_DICT):
        fresh.load_state_dict(sharded)
out["sharded_reload"] = {k: v.tolist() for k, v in fresh.state_dict().items()}
# a full state dict saved by a job of another size loads here
other = [f for f in os.listdir(sys.argv[1]) if f.startswith("full_") and f != f"full_{p}.pt"]
if other:
    loaded = FSDP(make("cpu"), sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
                  auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
    loaded.load_state_dict(pygpu.load(os.path.join(sys.argv[1], other[0])))
    out["loaded_from"] = other[0]
    out["loaded"] = {k: v.tolist() for k, v in loaded.state_dict().items()}
dist.barrier()
print("JSON " + json.dumps(out))
"""


def _reference(nproc):
    import pygpu
    from pygpu import nn
    pygpu.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 3)).double()
    opt = pygpu.optim.Adam(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    for _ in range(3):
        X, Y = rng.standard_normal((4 * nproc, 6)), rng.standard_normal((4 * nproc, 3))
        opt.zero_grad()
        ((model(pygpu.tensor(X)) - pygpu.tensor(Y)) ** 2).mean().backward()
        opt.step()
    return model, opt


def _close(got, want, what):
    for k, v in want.items():
        np.testing.assert_allclose(np.array(got[k]), v, rtol=1e-9, atol=1e-11, err_msg=f"{what} {k}")


@pytest.mark.parametrize("nproc", [2, 4])
def test_zero_and_fsdp_train_as_one_process_on_the_global_batch(tmp_path, nproc):
    rows = rank_rows(launch(tmp_path, TRAIN, nproc=nproc, timeout=400, args=[str(tmp_path)]))
    model, opt = _reference(nproc)
    want = {k: v.numpy() for k, v in model.state_dict().items()}
    total = sum(v.size for v in want.values())
    for row in rows:
        for dev in ("cpu", "sim:0"):
            got = row[dev]
            for strat in ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "zero"):
                _close(got[strat], want, f"rank {row['rank']} {dev} {strat}")
            # each Linear a unit of its own; each rank holds 1/p of each (padded)
            flat = got["FULL_SHARD_flat"]
            assert len(flat) == 3 and sum(n for (n,) in flat) * nproc >= total
            assert got["NO_SHARD_flat"] == [[total]]
            assert 0 < got["zero_local_states"] < 6      # Adam state for its share only
        assert row["sharded_reload"].keys() == want.keys()
        _close(row["sharded_reload"], {k: np.array(v) for k, v in row["sharded_reload"].items()}, "")
        assert row["rank0_only_keys"] == (len(want) if row["rank"] == 0 else 0)
    # ZeRO's consolidated state: PyTorch's Adam state dict layout, every parameter's moments
    zs = rows[0]["cpu"]["zero_state"]
    ref_state = opt.state_dict()["state"]
    assert sorted(int(i) for i in zs) == sorted(ref_state)
    for i, st in ref_state.items():
        np.testing.assert_allclose(np.array(zs[str(i)]["exp_avg"]), st["exp_avg"].numpy(), rtol=1e-9,
                                   atol=1e-12)
    saved = {p.name for p in tmp_path.glob("full_*.pt")}
    assert f"full_{nproc}.pt" in saved


def test_a_full_state_dict_saved_on_one_rank_loads_on_another_number_of_ranks(tmp_path):
    """Save from a 4-rank job (rank 0 only), load into a 2-rank job and into the plain model."""
    import pygpu
    from pygpu import nn
    rank_rows(launch(tmp_path, TRAIN, nproc=4, timeout=400, args=[str(tmp_path)]))
    rows = rank_rows(launch(tmp_path, TRAIN, nproc=2, timeout=400, args=[str(tmp_path)]))
    saved = pygpu.load(str(tmp_path / "full_4.pt"))
    for row in rows:
        assert row["loaded_from"] == "full_4.pt"
        _close(row["loaded"], {k: v.numpy() for k, v in saved.items()}, "reloaded")
    plain = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3)).double()
    plain.load_state_dict(saved)                     # the keys are the plain model's
    model, _ = _reference(4)
    _close({k: v.numpy() for k, v in plain.state_dict().items()},
           {k: v.numpy() for k, v in model.state_dict().items()}, "plain")


CAPPED = """
import json, sys, numpy as np, pygpu, pygpu.distributed as dist
from pygpu import nn
from pygpu.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType, FullStateDictConfig
from pygpu.distributed.fsdp.wrap import ModuleWrapPolicy
D, L, B = 256, 8, 8
mode = sys.argv[1]
if mode != "one":
    dist.init_process_group()
    r, p = dist.get_rank(), dist.get_world_size()
else:
    r, p = 0, 1
dev = "sim:0"
pygpu.manual_seed(0)
model = nn.Sequential(*[nn.Linear(D, D) for _ in range(L)]).double()
params = sum(q.numel() for q in model.parameters()) * 8
out = {"rank": r, "param_bytes": params}
try:
    if mode == "fsdp":  # built on the cpu, only each rank's shards go to the device
        model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({nn.Linear}), device_id=dev)
    else:
        model = model.to(dev)
    opt = pygpu.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    nb = 4 if mode == "one" else 4 // p   # global batch 4 x B rows; each rank its share
    for step in range(2):
        X = rng.standard_normal((4 * B, D)); Y = rng.standard_normal((4 * B, D))
        rows = slice(r * nb * B, (r + 1) * nb * B)
        opt.zero_grad()
        ((model(pygpu.tensor(X[rows], device=dev)) - pygpu.tensor(Y[rows], device=dev)) ** 2).mean().backward()
        opt.step()
    out["ok"] = True
    out["peak"] = pygpu.sim.max_memory_allocated(0)   # of the training steps
    if mode == "fsdp":
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT,
                                  FullStateDictConfig(offload_to_cpu=True)):
            sd = model.state_dict()
    else:
        sd = model.state_dict()
    out["checksum"] = [float(v.double().sum().item()) for v in sd.values()]
except MemoryError as e:
    out["ok"] = False
    out["error"] = str(e)[:200]
print("JSON " + json.dumps(out))
"""


def test_fsdp_trains_what_does_not_fit_one_capped_device(tmp_path):
    import os
    import subprocess
    import sys as _sys
    from _mpi import PKG_ROOT, RANK_STDOUT
    cap_mb = 12     # per sim device: 8 layers of 256 x 256 doubles are 4.2 MB of parameters,
    #                 so parameters + gradients + Adam's two moments need 16.8 MB on one device
    env = dict(os.environ, PYTHONPATH=PKG_ROOT, PYGPU_SIM_MEMORY_MB=str(cap_mb))
    script = tmp_path / "capped.py"
    script.write_text(CAPPED)

    def one(capped):
        e = dict(env) if capped else {k: v for k, v in env.items() if k != "PYGPU_SIM_MEMORY_MB"}
        proc = subprocess.run([_sys.executable, str(script), "one"], capture_output=True, text=True,
                              env=e, timeout=300, cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads([l for l in proc.stdout.splitlines() if l.startswith("JSON ")][0][5:])

    capped, uncapped = one(True), one(False)
    assert 4 * capped["param_bytes"] > cap_mb * 2**20    # the claim: it does not fit ...
    assert not capped["ok"] and "out of memory" in capped["error"]   # ... and indeed it did not
    assert uncapped["ok"] and uncapped["peak"] > cap_mb * 2**20
    rows = rank_rows(launch(tmp_path, CAPPED, nproc=4, timeout=400, args=["fsdp"],
                            env={"PYGPU_SIM_MEMORY_MB": str(cap_mb)}))
    for row in rows:
        assert row["ok"], row
        # a shard of the parameters, gradients and moments (4.2 MB / 4 ranks x 4) and one
        # layer's full parameters and gradients at a time: well under the cap
        assert row["peak"] <= 0.6 * cap_mb * 2**20, row["peak"]
        np.testing.assert_allclose(row["checksum"], uncapped["checksum"], rtol=1e-9)
