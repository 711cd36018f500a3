# test_cuda_emulated_nccl.py - torch.distributed's collectives on cuda tensors, over NCCL's calls,
# on the emulated device (tests/cuda_emu: the real CUDA plugin's host code, cuda_nccl.c, over the
# NCCL stand-in emu_nccl.cpp). Every rank runs test_collectives.py's script on its own GPU and on
# the cpu in one job: the cuda results (NCCL: ncclAllReduce, ncclReduce, ncclAllGather,
# ncclReduceScatter, grouped ncclSend/ncclRecv for all_to_all, gather and scatter) must equal the
# cpu ones (MPI, which test_collectives.py checks against PyTorch). 2 and 4 ranks.
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu"))
import harness  # noqa: E402
from _mpi import launch  # noqa: E402
from test_collectives import SCRIPT, _same, rank_rows  # noqa: E402

pytestmark = pytest.mark.skipif(harness.skip_reason() is not None,
                                reason=str(harness.skip_reason()))


@pytest.fixture(scope="module")
def plugin():
    return harness.build("current")


def _env(plugin, ndev):
    return {"PYGPU_CUDA_BACKEND_SO": plugin, "PYGPU_NCCL_LIBRARY": plugin,
            "PYGPU_CUDA_EMU_DEVICES": str(ndev)}


@pytest.mark.parametrize("nproc", [2, 4])
def test_every_collective_on_nccl_matches_mpi(tmp_path, plugin, nproc):
    script = ("import os, pygpu\npygpu.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
              + SCRIPT.replace("LIB", "pygpu").replace("BACKEND", "init_method='env://'")
              .replace("DEVICES", "['cpu', f\"cuda:{os.environ['LOCAL_RANK']}\"]")
              .replace('print("JSON "', 'out["backend"] = dist.get_backend()\nprint("JSON "'))
    rows = rank_rows(launch(tmp_path, script, nproc=nproc, timeout=400, env=_env(plugin, nproc)))
    assert len(rows) == nproc
    for row in rows:
        assert row["backend"] == "cpu:mpi,sim:mpi,cuda:nccl"
        gpu = [k for k in row if k.startswith("cuda:")]
        assert gpu == [f"cuda:{row['rank']}"]
        _same(row[gpu[0]], row["cpu"], f"rank {row['rank']} nccl vs mpi")


def test_nccl_subgroups_p2p_and_async(tmp_path, plugin):
    """A subgroup gets its own NCCL communicator; send/recv and batch_isend_irecv on cuda tensors
    are ncclSend/ncclRecv (the batch in one group, so two ranks sending to each other first
    complete); async_op=True returns at once with a Work."""
    proc = launch(tmp_path, """
        import json, os, numpy as np, pygpu, pygpu.distributed as dist
        r = int(os.environ["LOCAL_RANK"]); pygpu.cuda.set_device(r)
        dist.init_process_group("nccl")
        dev = f"cuda:{r}"
        out = {"rank": r}
        odd = dist.new_group([1, 3])
        t = pygpu.full((4,), float(r), device=dev)
        dist.all_reduce(t, group=odd)
        out["odd"] = t.tolist()
        peer = r ^ 1
        mine = pygpu.full((3,), float(r), device=dev)
        got = pygpu.zeros(3, device=dev)
        ws = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer), dist.P2POp(dist.irecv, got, peer)])
        for w in ws:
            w.wait()
        out["batch"] = got.tolist()
        if r % 2 == 0:
            dist.send(pygpu.full((2,), 7.0 + r, device=dev), dst=peer)
        else:
            buf = pygpu.zeros(2, device=dev); dist.recv(buf, src=peer); out["recv"] = buf.tolist()
        w = dist.all_reduce(pygpu.ones(1 << 16, device=dev), op=dist.ReduceOp.AVG, async_op=True)
        out["async"] = w is not None
        w.wait()
        out["avg"] = w.result()[0][:2].tolist()
        try:
            dist.all_reduce(pygpu.ones(2, device=dev), op=dist.ReduceOp.BAND)
        except ValueError as e:
            out["band"] = str(e)
        print("JSON " + json.dumps(out))
        dist.destroy_process_group()
    """, nproc=4, timeout=300, env=_env(plugin, 4))
    rows = rank_rows(proc)
    for row in rows:
        r = row["rank"]
        assert row["odd"] == ([4.0] * 4 if r % 2 else [float(r)] * 4)
        assert row["batch"] == [float(r ^ 1)] * 3
        if r % 2:
            assert row["recv"] == [7.0 + (r ^ 1)] * 2
        assert row["async"] and row["avg"] == [1.0, 1.0]
        assert row["band"] == "Cannot use ReduceOp.BAND with NCCL"


def test_fsdp_and_zero_on_nccl(tmp_path, plugin):
    """FSDP's gathers and reduce-scatters and ZeRO's broadcasts as NCCL calls on two emulated
    GPUs: the weights equal one process on the global batch (test_sharding.py's reference)."""
    import numpy as np
    from test_sharding import _reference
    proc = launch(tmp_path, """
        import json, os, numpy as np, pygpu, pygpu.distributed as dist
        from pygpu import nn
        from pygpu.distributed.fsdp import FullyShardedDataParallel as FSDP
        from pygpu.distributed.fsdp.wrap import ModuleWrapPolicy
        from pygpu.distributed.optim import ZeroRedundancyOptimizer
        r = int(os.environ["LOCAL_RANK"]); pygpu.cuda.set_device(r)
        dist.init_process_group("nccl")
        p, dev = dist.get_world_size(), f"cuda:{r}"
        def make():
            pygpu.manual_seed(0)
            return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                                 nn.Linear(16, 3)).double()
        out = {"rank": r}
        for kind in ("fsdp", "zero"):
            if kind == "fsdp":
                model = FSDP(make(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}), device_id=dev)
                opt = pygpu.optim.Adam(model.parameters(), lr=0.01)
            else:
                plain = make().to(dev)
                model = nn.parallel.DistributedDataParallel(plain, device_ids=[r])
                opt = ZeroRedundancyOptimizer(plain.parameters(), pygpu.optim.Adam, lr=0.01)
            rng = np.random.default_rng(0)
            for step in range(3):
                X, Y = rng.standard_normal((4 * p, 6)), rng.standard_normal((4 * p, 3))
                mine = slice(4 * r, 4 * r + 4)
                opt.zero_grad()
                ((model(pygpu.tensor(X[mine], device=dev)) - pygpu.tensor(Y[mine], device=dev)) ** 2).mean().backward()
                opt.step()
            sd = model.state_dict() if kind == "fsdp" else plain.state_dict()
            out[kind] = {k: v.cpu().tolist() for k, v in sd.items()}
        print("JSON " + json.dumps(out))
    """, nproc=2, timeout=300, env=_env(plugin, 2))
    model, _ = _reference(2)
    for row in rank_rows(proc):
        for kind in ("fsdp", "zero"):
            for k, v in model.state_dict().items():
                np.testing.assert_allclose(np.array(row[kind][k]), v.numpy(), rtol=1e-9, atol=1e-11,
                                           err_msg=f"{kind} {k}")
