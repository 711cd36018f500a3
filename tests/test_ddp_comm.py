# test_ddp_comm.py - the communication path's speed measures, checked for what they must not
# change: the ring over MPI's point-to-point calls gives MPI_Allreduce's results (the same bits
# on two ranks); waits sleep instead of spinning; ranks on one machine split its cores between
# their cpu thread pools.
import json
import os
import sys

import numpy as np
import pytest

from pygpu.distributed._group import wait_all

from _mpi import launch

RING = """
import json, os, numpy as np, pygpu, pygpu.distributed as dist
dist.init_process_group()
r, p = dist.get_rank(), dist.get_world_size()
# the cores this rank may run on (mpirun binds a rank to one core when the machine has one
# per rank) and the ranks on this machine, as share_cpu_threads reads them
out = {"rank": r, "threads": pygpu.get_num_threads(), "same": [], "close": [],
       "cores": len(os.sched_getaffinity(0)), "local": int(os.environ.get("LOCAL_WORLD_SIZE", "1"))}
for op in ("SUM", "AVG", "MAX"):
    got = {}
    for how in ("ring", "mpi"):
        os.environ["PYGPU_ALLREDUCE"] = how
        t = pygpu.tensor(np.random.default_rng(r).standard_normal(5983))
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        got[how] = t.numpy().copy()
    want = [np.random.default_rng(k).standard_normal(5983) for k in range(p)]
    want = {"SUM": sum(want), "AVG": sum(want) / p, "MAX": np.max(want, axis=0)}[op]
    out["same"].append(bool(np.array_equal(got["ring"], got["mpi"])))
    out["close"].append(bool(np.allclose(got["ring"], want, rtol=1e-12, atol=1e-12)
                             and np.allclose(got["mpi"], want, rtol=1e-12, atol=1e-12)))
print("JSON " + json.dumps(out))
"""


@pytest.mark.parametrize("nproc", [2, 3])
def test_the_ring_and_mpis_all_reduce_agree(tmp_path, nproc):
    proc = launch(tmp_path, RING, nproc=nproc, env={"OMP_NUM_THREADS": ""})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(l[5:]) for l in proc.stdout.splitlines() if l.startswith("JSON ")]
    assert len(rows) == nproc
    cores = len(os.sched_getaffinity(0))
    for row in rows:
        assert row["close"] == [True, True, True]
        if nproc == 2:  # one addition each way: the same bits
            assert row["same"] == [True, True, True]
        # the launcher's ranks share the cores: no rank runs a pool sized for the whole machine.
        # A rank sees the cores it may run on (all of them, or the one core mpirun bound it to,
        # as on the first 16-core H200 host) and splits them with the ranks of this machine.
        assert row["local"] == nproc
        assert row["threads"] == max(1, row["cores"] // nproc)
        assert row["threads"] <= max(1, cores // nproc)


def test_wait_sleeps_while_the_partner_is_late(monkeypatch):
    group_module = sys.modules[wait_all.__module__]  # (pygpu.distributed._group is the group)
    monkeypatch.setattr(group_module, "SPIN_S", 0.0)  # past the spin at once
    calls = []

    def test_all(reqs):  # done at the 10th test: a partner that arrives late
        calls.append(1)
        return len(calls) >= 10

    slept = group_module.wait_all([object()], test_all)
    assert slept > 0  # it slept between tests rather than spinning
    assert len(calls) == 10
    assert wait_all([object()], lambda reqs: True) == 0.0


def test_ranks_share_the_cores(monkeypatch):
    import pygpu
    import pygpu.distributed as dist
    cores = len(os.sched_getaffinity(0))
    before = pygpu.get_num_threads()
    try:
        if before != cores:
            pygpu.set_num_threads(cores)
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        monkeypatch.setenv("LOCAL_WORLD_SIZE", str(cores))
        assert dist.share_cpu_threads() == 1 and pygpu.get_num_threads() == 1
        pygpu.set_num_threads(cores)
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
        assert dist.share_cpu_threads() == 1  # OMP_NUM_THREADS, as torchrun sets it, wins
        # a pool the user sized already is left alone
        if cores > 1:
            pygpu.set_num_threads(cores - 1)
            monkeypatch.setenv("LOCAL_WORLD_SIZE", str(cores))
            assert dist.share_cpu_threads() == cores - 1
    finally:
        pygpu.set_num_threads(before)
