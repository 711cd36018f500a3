# test_cluster_cost.py - the cost model on a cluster (pygpu/cost/cluster.py) and its command
# (python -m pygpu.distributed.scaling): each collective's alpha-beta price is its algorithm's
# message count and bytes; the hierarchical all-reduce is the sum of its three phases; a fitted
# link recovers the alpha and bandwidth it was made from; a step's prediction has the strategy's
# shape (what hides behind backward, what does not); the command prints and plots the scaling.
# The bytes each rank moves per collective (pygpu.distributed.traffic) are checked against the
# ring's formulas. (Its validation against runs on this machine: --validate, docs/parallel.md.)

import subprocess
import sys

import pytest

from pygpu.cost import cluster as cl
from pygpu.distributed import traffic

LINK = cl.LinkProfile("test", alpha_s=10e-6, bandwidth_bps=1e9)


def test_each_algorithm_is_its_message_count_and_bytes():
    n, p = 8e6, 8
    assert cl.all_reduce_time(n, p, LINK, "ring") == pytest.approx(2 * 7 * 10e-6 + 2 * 7 / 8 * n / 1e9)
    assert cl.all_reduce_time(n, p, LINK, "tree") == pytest.approx(2 * 3 * (10e-6 + n / 1e9))
    assert cl.all_reduce_time(n, p, LINK, "rhd") == pytest.approx(2 * 3 * 10e-6 + 2 * 7 / 8 * n / 1e9)
    assert cl.all_reduce_time(n, p, LINK) == min(cl.all_reduce_time(n, p, LINK, a)
                                                 for a in ("ring", "tree", "rhd"))
    # a small message on many ranks: log2(p) latencies, not the ring's 2 (p-1)
    assert cl.all_reduce_time(64, 1024, LINK) < cl.all_reduce_time(64, 1024, LINK, "ring") / 50
    assert cl.shard_time(n, p, LINK) == pytest.approx(7 * 10e-6 + 7 / 8 * n / 1e9)
    assert cl.broadcast_time(n, p, LINK) == pytest.approx(3 * (10e-6 + n / 1e9))
    assert cl.all_reduce_time(n, 1, LINK) == cl.shard_time(n, 1, LINK) == 0.0


def test_the_cluster_all_reduce_is_reduce_scatter_inside_all_reduce_between_all_gather_inside():
    c = cl.Cluster("t", cl.LINKS["nvlink"], cl.LINKS["infiniband"], 8)
    n = 100e6
    assert cl.cluster_all_reduce(n, 8, c) == cl.all_reduce_time(n, 8, c.intra)  # one node
    inter = cl.LinkProfile("x", c.inter.alpha_s, c.inter.bandwidth_bps * 8)
    want = 2 * cl.shard_time(n, 8, c.intra) + cl.all_reduce_time(n / 8, 4, inter)
    assert cl.cluster_all_reduce(n, 32, c) == pytest.approx(want)


def test_a_fitted_link_recovers_its_alpha_and_bandwidth():
    pts = [(p, n, cl.all_reduce_time(n, p, LINK, "ring")) for p in (2, 4) for n in (1e4, 1e6, 1e8)]
    link, err = cl.fit_link(pts)
    assert link.alpha_s == pytest.approx(10e-6, rel=1e-6)
    assert link.bandwidth_bps == pytest.approx(1e9, rel=1e-6) and err < 1e-6


def test_a_steps_prediction_has_each_strategys_shape():
    c = cl.Cluster("t", LINK, LINK, 8)
    m = cl.StepModel(compute_s=0.3, param_bytes=100e6, optimizer_s=0.03, batch_per_device=4,
                     bucket_bytes=25e6, units=4)
    one = m.predict(1, c, "ddp")
    assert one["step_s"] == pytest.approx(0.33) and one["comm_s"] == 0
    ddp = m.predict(8, c, "ddp")
    per = cl.all_reduce_time(25e6, 8, LINK)
    assert ddp["comm_s"] == pytest.approx(4 * per)
    assert ddp["exposed_s"] == pytest.approx(max(per, 4 * per - 0.2))  # backward hides the rest
    zero = m.predict(8, c, "zero")
    gather = cl.shard_time(100e6, 8, LINK)
    assert zero["exposed_s"] == pytest.approx(ddp["exposed_s"] + gather)
    assert zero["optimizer_s"] == pytest.approx(0.03 / 8)
    fsdp = m.predict(8, c, "fsdp")
    unit = cl.shard_time(25e6, 8, LINK)
    assert fsdp["comm_s"] == pytest.approx(12 * unit)                  # 1.5x DDP's bytes
    assert fsdp["exposed_s"] == pytest.approx(8 * unit + max(unit, 4 * unit - 0.2))
    acc = m.predict(8, c, "ddp", accumulate=4)
    assert acc["throughput"] > ddp["throughput"]                      # one reduction per 4
    # memory per device: DDP holds everything, ZeRO shards Adam, FSDP all but one unit
    assert m.memory_bytes(8, "ddp") == 4 * 100e6
    assert m.memory_bytes(8, "zero") == 2 * 100e6 + 2 * 100e6 / 8
    assert m.memory_bytes(8, "fsdp") == 4 * 100e6 / 8 + 2 * 25e6
    rows = m.scaling(c, "ddp")
    assert rows[0]["devices"] == 1 and rows[0]["efficiency"] == pytest.approx(1.0)
    assert rows[-1]["devices"] == 1024


def test_communication_dominates_where_the_exposed_time_passes_compute():
    slow = cl.Cluster("slow", cl.LINKS["ethernet"], cl.LINKS["ethernet"], 1)
    m = cl.StepModel(compute_s=0.01, param_bytes=500e6, batch_per_device=1)
    rows = m.scaling(slow, "fsdp")
    n = cl.communication_dominates(rows)
    assert n is not None and all(r["exposed_s"] <= r["compute_s"] for r in rows if r["devices"] < n)


@pytest.mark.parametrize("kind,nbytes,p,want", [
    ("all_reduce", 4000, 4, (2 * 3 * 1000, 2 * 3 * 1000)),
    ("reduce_scatter", 4000, 4, (3000, 3000)), ("all_gather", 4000, 4, (3000, 3000)),
    ("all_to_all", 4000, 4, (3000, 3000)), ("broadcast", 4000, 4, (4000, 0)),
    ("reduce", 4000, 4, (0, 12000)), ("gather", 4000, 4, (0, 3000)), ("scatter", 4000, 4, (3000, 0)),
])
def test_the_bytes_counted_per_collective_are_the_rings(kind, nbytes, p, want):
    assert traffic.per_rank(kind, nbytes, p, rank=0, root=0, itemsize=4) == want
    assert traffic.per_rank(kind, nbytes, 1) == (0, 0)


def test_the_scaling_command_prints_and_plots(tmp_path):
    png = tmp_path / "scaling.png"
    out = subprocess.run([sys.executable, "-m", "pygpu.distributed.scaling", "--links", "nvlink,ethernet",
                          "--strategies", "ddp,fsdp", "--max-devices", "64", "--plot", str(png)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "DDP over 8 GPUs per node over NVLink" in text and "FSDP over 1 GPU per node, nodes over 100 GbE" in text
    assert text.count("communication exceeds compute from") == 4
    assert "with 4 micro-batches accumulated per reduction" in text
    rows = [l.split() for l in text.splitlines() if l.strip() and l.split()[0] == "64"]
    assert len(rows) == 4
    assert png.exists() and png.stat().st_size > 10_000
