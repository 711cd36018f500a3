# test_ddp_comm.py - the DDP communication path's speed measures, checked for what they must not
# change: the ring over a bucket's gradients in their own memory gives the bits of the ring over
# one staged buffer; a gradient that shares its memory is copied before it is reduced, never
# written where another tensor sees it; waits sleep instead of spinning; ranks on one machine
# split its cores between their cpu thread pools.
import json
import os
import sys

import numpy as np
import pytest

from pygpu.distributed._group import wait_all

from _mpi import launch

SEGMENTS = """
import json, numpy as np, pygpu, pygpu.distributed as dist
from pygpu import nn
dist.init_process_group()
g = dist._require()
r, p = g.rank, g.size
import os
# the cores this rank may run on (mpirun binds a rank to one core when the machine has one
# per rank) and the ranks on this machine, as share_cpu_threads reads them
out = {"rank": r, "threads": pygpu.get_num_threads(), "same": [],
       "cores": len(os.sched_getaffinity(0)), "local": int(os.environ.get("LOCAL_WORLD_SIZE", "1"))}
sizes = (10, 5120, 512, 7, 1, 333)
for op in ("sum", "avg", "max"):
    rng = np.random.default_rng(r)
    segs = [rng.standard_normal(n) for n in sizes]
    flat = np.concatenate(segs)
    g.ring_allreduce(flat, op)
    g.ring_allreduce_segments(segs, op)
    out["same"].append(bool(np.array_equal(np.concatenate(segs), flat)))

# a gradient shared with another tensor (a second reference, or a view of a larger tensor):
# the reduction averages a private copy and leaves the other tensor as it was
from pygpu.nn.parallel.comm import MpiHostRing
from pygpu.nn.parallel.reducer import make_buckets
out["unchanged"], out["grads"] = [], []
for how in ("reference", "view"):
    w = nn.Parameter(pygpu.tensor(np.arange(4.0)))
    (bucket,) = make_buckets([w], 1 << 20)
    base = pygpu.tensor(np.full(8, float(r + 1)))
    other = base if how == "view" else pygpu.tensor(np.full(4, float(r + 1)))
    w.grad = base[2:6] if how == "view" else other
    before = other.numpy().copy()
    MpiHostRing(g).reduce(bucket)
    out["unchanged"].append(bool(np.array_equal(other.numpy(), before)))
    out["grads"].append(w.grad.numpy().tolist())
print("JSON " + json.dumps(out))
"""


@pytest.mark.parametrize("nproc", [2, 3])
def test_ring_over_segments_in_place_matches_the_staged_ring(tmp_path, nproc):
    proc = launch(tmp_path, SEGMENTS, nproc=nproc, env={"OMP_NUM_THREADS": ""})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(l[5:]) for l in proc.stdout.splitlines() if l.startswith("JSON ")]
    assert len(rows) == nproc
    cores = len(os.sched_getaffinity(0))
    for row in rows:
        assert row["same"] == [True, True, True]
        assert row["unchanged"] == [True, True]
        assert row["grads"] == [[(nproc + 1) / 2] * 4] * 2  # the mean of 1..nproc
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
