# test_cluster_cost.py - the cost model on a cluster (pygpu/cost/cluster.py) and its command
# (python -m pygpu.distributed.scaling): each collective's alpha-beta price is its algorithm's
# message count and bytes; the hierarchical all-reduce is the sum of its three phases; a fitted
# link recovers the alpha and bandwidth it was made from; a step's prediction has the strategy's
# shape (what hides behind backward, what does not); the command prints and plots the scaling.
# The bytes each rank moves per collective (pygpu.distributed.traffic) are checked against the
# ring's formulas. The per-call and per-step latencies (the alpha term) make a step with many
# small collectives cost more than its bytes say, and grow with the devices; the collectives a
# step makes per strategy are the ones dist.stats() counts in a real 2- and 4-rank run.
# (Its validation against runs on this machine: --validate, docs/parallel.md.)

import json
import subprocess
import sys

import pytest

from _mpi import launch

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
    inter = cl.LinkProfile("x", c.inter.alpha_s, c.inter.bandwidth_bps * 8)  # no call term
    call = c.intra.call_s
    want = call + 2 * (cl.shard_time(n, 8, c.intra) - call) + cl.all_reduce_time(n / 8, 4, inter)
    assert cl.cluster_all_reduce(n, 32, c) == pytest.approx(want)  # one call, paid once


def test_a_fitted_link_recovers_its_alpha_and_bandwidth():
    pts = [(p, n, cl.all_reduce_time(n, p, LINK, "ring")) for p in (2, 4) for n in (1e4, 1e6, 1e8)]
    link, err = cl.fit_link(pts)
    assert link.alpha_s == pytest.approx(10e-6, rel=1e-6)
    assert link.bandwidth_bps == pytest.approx(1e9, rel=1e-6) and err < 1e-6


def test_a_steps_prediction_has_each_strategys_shape():
    c = cl.Cluster("t", LINK, LINK, 8)
    m = cl.StepModel(compute_s=0.3, param_bytes=100e6, optimizer_s=0.03, batch_per_device=4,
                     bucket_bytes=25e6, units=4, tensors=4)
    one = m.predict(1, c, "ddp")
    assert one["step_s"] == pytest.approx(0.33) and one["comm_s"] == 0
    ddp = m.predict(8, c, "ddp")
    per = cl.all_reduce_time(25e6, 8, LINK)
    assert ddp["comm_s"] == pytest.approx(4 * per)
    assert ddp["exposed_s"] == pytest.approx(max(per, 4 * per - 0.2))  # backward hides the rest
    zero = m.predict(8, c, "zero")
    bcast = cl.broadcast_time(25e6, 8, LINK, "ring")  # one per parameter tensor, after the step
    assert zero["exposed_s"] == pytest.approx(ddp["exposed_s"] + 4 * bcast)
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


def test_the_latency_term_is_one_call_plus_the_algorithms_steps():
    link = cl.LinkProfile("t", alpha_s=2e-6, bandwidth_bps=1e9, call_s=5e-6)
    for p in (2, 4, 16, 1024):
        ring = cl.collective_time("all_reduce", 0, p, link, "ring")
        tree = cl.collective_time("all_reduce", 0, p, link, "tree")
        assert ring == pytest.approx(5e-6 + 2 * (p - 1) * 2e-6)              # 2 (N-1) steps
        assert tree == pytest.approx(5e-6 + 2 * (p.bit_length() - 1) * 2e-6)  # 2 log2 N steps
        assert cl.collective_time("all_gather_into_tensor", 0, p, link) == pytest.approx(
            5e-6 + (p - 1) * 2e-6)
    assert cl.collective_time("all_reduce", 1e6, 1, link) == 0.0  # alone: no collective


@pytest.mark.parametrize("name", sorted(cl.LINKS))
def test_for_fixed_bytes_the_prediction_grows_with_the_devices(name):
    link = cl.LINKS[name]
    assert link.source and link.alpha_s > 0 and link.call_s > 0 and link.bandwidth_bps > 0
    times = [cl.all_reduce_time(4096, p, link, "ring") for p in (2, 4, 8, 64, 1024)]
    assert times == sorted(times) and len(set(times)) == len(times)
    # a step of many small collectives: every extra device adds latency, not bytes
    c = cl.Cluster(name, link, link, 1)
    m = cl.StepModel(compute_s=1e-3, param_bytes=1e6, units=50, tensors=100)
    for strategy in ("ddp", "zero", "fsdp"):
        steps = [m.predict(n, c, strategy)["step_s"] for n in (2, 8, 64, 1024)]
        assert steps == sorted(steps) and steps[-1] > steps[0], (strategy, steps)
    # the same bytes in more calls cost more: the per-call term
    few = cl.StepModel(compute_s=1e-3, param_bytes=1e6, units=2).predict(8, c, "fsdp")
    many = cl.StepModel(compute_s=1e-3, param_bytes=1e6, units=64).predict(8, c, "fsdp")
    assert many["comm_s"] - few["comm_s"] == pytest.approx(
        (64 - 2) * 3 * (link.call_s + 7 * link.alpha_s), rel=1e-6)


def test_ranks_that_share_a_hosts_cores_wait_for_its_cpu():
    c = cl.Cluster("t", LINK, LINK, 8)
    host = cl.HostShare(cpu_s=0.012, cores_per_rank=2 / 4, call_cpu_s=200e-6, byte_cpu_s=1e-9)
    m = cl.StepModel(compute_s=0.010, param_bytes=1e6, optimizer_s=0.002, units=3, host=host,
                     staging=cl.LinkProfile("s", 20e-6, 2e9))
    for strategy in ("ddp", "zero", "fsdp"):
        got = m.predict(4, c, strategy)
        calls = m.collectives(strategy)
        cpu = (0.012 - 0.002 + got["optimizer_s"] + len(calls) * 200e-6
               + sum(1e-9 * m.staged_bytes(name, b, 4) for name, b, _ in calls))
        assert got["host_s"] == pytest.approx(cpu / 0.5)          # 4 ranks on 2 cores
        links = got["compute_s"] + got["exposed_s"] + got["optimizer_s"]
        assert got["links_s"] == pytest.approx(links)
        assert got["step_s"] >= max(got["host_s"], links) * (1 - 1e-12)  # its phases add up
        assert got["bound"] == "host"
    assert m.staged_bytes("all_gather_into_tensor", 4e6, 4) == 5e6  # the shard out, the whole back
    assert m.staged_bytes("reduce_scatter_tensor", 4e6, 4) == 5e6
    assert m.staged_bytes("all_reduce", 4e6, 4) == 8e6
    # no host share (a device each): only the links' path
    assert cl.StepModel(compute_s=0.01, param_bytes=1e6).predict(4, c)["host_s"] == 0.0
    assert cl.fit_call_cpu([(0, 2e-4), (1e6, 2e-4 + 1e-3), (4e6, 2e-4 + 4e-3)]) == pytest.approx(
        (2e-4, 1e-9))


def test_a_fitted_link_recovers_call_alpha_and_bandwidth_from_several_collectives():
    link = cl.LinkProfile("t", alpha_s=7e-6, bandwidth_bps=3e9, call_s=40e-6)
    pts = [(k, a, p, n, cl.collective_time(k, n, p, link, a))
           for k, a in (("all_reduce", "ring"), ("all_gather", "ring"), ("broadcast", "tree"))
           for p in (2, 4) for n in (16, 1e5, 4e6)]
    fit, err = cl.fit_link(pts)
    assert fit.call_s == pytest.approx(40e-6, rel=1e-6) and fit.alpha_s == pytest.approx(7e-6, rel=1e-6)
    assert fit.bandwidth_bps == pytest.approx(3e9, rel=1e-6) and err < 1e-6


MPI_LINK = cl.LinkProfile("mpi", alpha_s=10e-6, bandwidth_bps=1e9, call_s=50e-6, transport="open_mpi")


@pytest.mark.parametrize("p", [2, 4, 8])
def test_open_mpi_runs_libnbcs_schedules_not_the_cheapest(p):
    n, log = 4e6, p.bit_length() - 1
    t = lambda kind: cl.collective_time(kind, n, p, MPI_LINK) - 50e-6
    # MPI_Ireduce_scatter_block: a binomial reduce of the whole tensor to rank 0, then a linear
    # scatter: log2(p) + (p-1)/p of n on the critical path, not the ring's (p-1)/p
    assert cl.best_algorithm("reduce_scatter_tensor", n, p, MPI_LINK) == "reduce+scatter"
    assert t("reduce_scatter_tensor") == pytest.approx((log + p - 1) * 10e-6 + (log + (p - 1) / p) * n / 1e9)
    assert t("reduce_scatter_tensor") > 2.9 * cl.collective_time("reduce_scatter", n, p, LINK, "ring")
    # MPI_Ibcast: the root sends to each rank in turn up to 4 ranks, a binomial tree above
    bcast = (p - 1) * (10e-6 + n / 1e9) if p <= 4 else log * (10e-6 + n / 1e9)
    assert t("broadcast") == pytest.approx(bcast)
    assert cl.best_algorithm("broadcast", n, p, MPI_LINK) == ("linear" if p <= 4 else "tree")
    # MPI_Iallgather: linear, the ring's bytes; all-reduce: pygpu's ring from 256 KiB, MPI's
    # in-place binomial tree below it
    assert t("all_gather_into_tensor") == pytest.approx((p - 1) * 10e-6 + (p - 1) / p * n / 1e9)
    assert cl.best_algorithm("all_reduce", n, p, MPI_LINK) == "ring"
    assert cl.best_algorithm("all_reduce", 64 << 10, p, MPI_LINK) == "tree"
    # NCCL (the datasheet links) takes the cheapest
    assert cl.collective_time("reduce_scatter", n, p, LINK) == cl.collective_time(
        "reduce_scatter", n, p, LINK, "ring")


def test_the_ring_threshold_is_the_one_collectives_use():
    from pygpu.distributed.collectives import RING_SIZES
    assert RING_SIZES == ((cl.RING_FROM_BYTES, float("inf")),)


def test_a_per_kind_fit_recovers_each_kinds_terms_where_one_shared_fit_cannot():
    truth = cl.LinkProfile("t", 5e-6, 4e9, call_s=30e-6, transport="open_mpi",
                           kinds={"broadcast": [90e-6, 5e-6, 1.5e9], "reduce_scatter": [200e-6, 20e-6, 3e9]})
    pts = [(name, "best", p, n, cl.collective_time(name, n, p, truth))
           for name in ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast")
           for p in (2, 4) for n in (64, 1 << 17, 1 << 20, 4 << 20)]
    shared, shared_err = cl.fit_link(pts, transport="open_mpi")
    fit, err = cl.fit_link(pts, transport="open_mpi", per_kind=True)
    assert shared_err > 0.2 and err < 1e-6
    for kind in ("broadcast", "reduce_scatter"):
        assert fit.kinds[kind] == pytest.approx(truth.kinds[kind], rel=1e-6)
    for kind in ("all_reduce", "all_gather"):
        assert fit.kinds[kind] == pytest.approx([30e-6, 5e-6, 4e9], rel=1e-6)
    assert fit.transport == "open_mpi"
    for name, _, p, n, t in pts:
        assert cl.collective_time(name, n, p, fit) == pytest.approx(t, rel=1e-6)
    # one size of a kind: its terms are not determined apart, it keeps the shared ones
    one, _ = cl.fit_link([pt for pt in pts if pt[0] != "broadcast" or pt[3] == 64],
                         transport="open_mpi", per_kind=True)
    assert "broadcast" not in one.kinds


def test_a_broadcasts_staging_is_two_transfers_in_sequence_but_one_per_rank():
    sim = cl.LinkProfile("s", 20e-6, 2e9)
    m = cl.StepModel(compute_s=0.0, param_bytes=0.0, staging=sim)
    n = 2e6
    # the root reads it out, then (after the wire) every other rank writes it in
    assert m._stage("broadcast", n, 2) == pytest.approx(2 * 20e-6 + 2 * n / 2e9)
    assert m.staged_bytes("broadcast", n, 2) == n  # the CPU: each rank copies it once
    assert m._stage("all_reduce", n, 4) == pytest.approx(2 * 20e-6 + 2 * n / 2e9)
    assert m._stage("all_gather_into_tensor", n, 4) == pytest.approx(2 * 20e-6 + 1.25 * n / 2e9)
    assert m._stage_out("reduce_scatter_tensor", n, 4) == pytest.approx(20e-6 + n / 2e9)
    assert m._stage_out("all_gather_into_tensor", n, 4) == pytest.approx(20e-6 + n / 4 / 2e9)


def test_fsdps_next_gather_waits_for_the_reduce_scatters_read_out():
    sim = cl.LinkProfile("s", 20e-6, 2e9)
    c = cl.Cluster("t", LINK, LINK, 8)
    units = [4e6, 2e6, 1e6]
    m = cl.StepModel(compute_s=1.0, param_bytes=sum(units), unit_bytes=units, staging=sim)
    plain = cl.StepModel(compute_s=1.0, param_bytes=sum(units), unit_bytes=units)
    got, bare = m.predict(2, c, "fsdp"), plain.predict(2, c, "fsdp")
    # backward: gather u2, reduce-scatter u2, gather u1 (waits for u2's read out), ... ,
    # reduce-scatter u0 (the last: all of it waits, the tail)
    held = sum(m._stage_out("reduce_scatter_tensor", b, 2) for b in (1e6, 2e6))
    gathers = 2 * sum(m.collective_seconds("all_gather_into_tensor", b, 2, c) for b in units)
    tail = m.collective_seconds("reduce_scatter_tensor", 4e6, 2, c)
    assert got["exposed_s"] == pytest.approx(gathers + tail + held)
    assert bare["exposed_s"] == pytest.approx(2 * sum(cl.shard_time(b, 2, LINK) for b in units)
                                              + cl.shard_time(4e6, 2, LINK))  # nothing held
    # DDP's all-reduces are followed by none that blocks in backward: nothing held (ZeRO's
    # broadcasts come after backward, which ends waiting for the last all-reduce in full)
    d = m.predict(2, c, "ddp")
    assert d["exposed_s"] == pytest.approx(m.collective_seconds("all_reduce", sum(units), 2, c))
    z = m.predict(2, c, "zero")
    assert z["exposed_s"] == pytest.approx(d["exposed_s"] + sum(
        m.collective_seconds("broadcast", b, 2, c) for b in m._params()))


def test_lock_step_phases_on_shared_cores_add_each_phases_longer_side():
    # compute is CPU-bound on the shared cores, the exposed collectives link-bound: the
    # phases add (a collective's idle cores cannot run another phase's compute), more than
    # the larger of the two sums
    sim = cl.LinkProfile("s", 20e-6, 2e9)
    c = cl.Cluster("t", LINK, LINK, 8)
    host = cl.HostShare(cpu_s=0.010, cores_per_rank=0.5, call_cpu_s=100e-6, byte_cpu_s=0.0)
    m = cl.StepModel(compute_s=0.004, param_bytes=4e6, optimizer_s=0.001, units=2, host=host,
                     staging=sim)
    got = m.predict(4, c, "fsdp")
    cost = [(when, m.collective_seconds(name, b, 4, c)) for name, b, when in m.collectives("fsdp")]
    rs = [t for when, t in cost if when == "backward"]
    tail = max(rs[-1], sum(rs) - 0.004 * 2 / 3)  # what backward does not hide
    held = m._stage_out("reduce_scatter_tensor", 2e6, 4)  # the first unit's gather waits for it
    fb_cpu = 0.010 - 0.001 + 100e-6 * (len(rs) - 1)         # all but the last reduce-scatter
    want = (max(0.004, fb_cpu / 0.5) + held  # the held read out: a wait of its own
            + max(tail, 100e-6 / 0.5)
            + sum(max(t, 100e-6 / 0.5) for w, t in cost if w != "backward")
            + max(got["optimizer_s"], got["optimizer_s"] / 0.5))
    assert got["step_s"] == pytest.approx(want)
    assert got["step_s"] > max(got["host_s"], got["links_s"]) * 1.05
    assert got["bound"] == "host"
    # with a core each and the compute link-bound, it is the links' path
    roomy = cl.HostShare(cpu_s=0.001, cores_per_rank=4.0)
    m.host = roomy
    got = m.predict(4, c, "fsdp")
    assert got["step_s"] == pytest.approx(got["links_s"]) and got["bound"] == "links"


def test_a_strategys_own_cpu_is_its_one_rank_run_less_its_collectives():
    # 12 ms of CPU per step on one rank, 3.6 of them its collectives' (their thread's)
    assert cl.own_cpu(12e-3, 3.6e-3) == pytest.approx(8.4e-3)
    # never below the plain model's: a wrapper only adds work
    assert cl.own_cpu(7e-3, 1e-3, floor=6.5e-3) == 6.5e-3
    # and it is what the host's phases charge: more of it, a longer step where the cores bind
    c = cl.Cluster("t", LINK, LINK, 8)
    step = lambda cpu: cl.StepModel(compute_s=0.004, param_bytes=1e6, optimizer_s=0.001,
                                    host=cl.HostShare(cpu, 0.5)).predict(4, c, "ddp")["step_s"]
    assert step(0.012) - step(0.010) == pytest.approx(0.002 / 0.5)


def test_the_validation_prices_what_it_measured_and_reprices_a_saved_run(tmp_path, capsys):
    # a measured run made up from a known link: the calibration calls are that link's prices
    # (plus the sim link model's staging), so the fit finds it, and each "measured" step is
    # the model's own: every row comes out at 0% and the command passes; a step 1.5x slower
    # fails it. No process is launched: this is the pricing half of --validate.
    from pygpu.distributed import _scaling_validate as v
    truth = cl.LinkProfile("t", 8e-6, 3e9, call_s=60e-6, transport="open_mpi",
                           kinds={"reduce_scatter": [150e-6, 10e-6, 1.2e9]})
    stager = cl.StepModel(compute_s=0.0, param_bytes=0.0, staging=cl.LinkProfile(
        "s", v.LINK["latency_us"] * 1e-6, v.LINK["h2d_gbps"] * 1e9))
    points = [[name, "best", p, 4 * numel * p,
               cl.collective_time(name, 4 * numel * p, p, truth) + stager._stage(name, 4 * numel * p, p),
               1e-4 + 1e-9 * stager.staged_bytes(name, 4 * numel * p, p), 1]
              for p in (2, 4) for numel in v.CALIBRATION_NUMEL
              for name in ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast")]
    one = {"fb_s": 4e-3, "opt_s": 0.8e-3, "cpu_s": 6e-3, "param_bytes": 2.6e6, "step_s": 5e-3}
    alone = {s: {"cpu_s": 7e-3, "collective_cpu_s": 0.5e-3} for s in ("ddp", "zero", "fsdp")}
    got = {"ddp": {"buckets": [2e4, 2.6e6]}, "zero": {"buckets": [2e4, 2.6e6], "optimizer_share": 0.6,
                                                       "param_sizes": [1.6e6, 2e3, 1e6]},
           "fsdp": {"units": 3, "unit_bytes": [1.6e6, 1e6, 2e4]}}
    m = {"cores": 2, "load": [0.5, 0.5, 0.5], "points": points, "one": one, "alone_runs": alone,
         "runs": [{"ranks": p, "strategy": s, "got": dict(got[s], step_s=1.0)}
                  for p in (2, 4) for s in ("ddp", "zero", "fsdp")]}
    first = v.price(m)
    assert first["link_kinds"]["reduce_scatter"] == pytest.approx([150e-6, 10e-6, 1.2e9], rel=1e-4)
    assert first["alone_cpu_s"]["ddp"] == pytest.approx(6.5e-3)
    for run, row in zip(m["runs"], first["rows"]):
        run["got"]["step_s"] = row["predicted_ms"] / 1e3
    path = tmp_path / "validate.json"
    path.write_text(json.dumps(m))
    out = tmp_path / "again.json"
    assert v.main(json_path=str(out), reprice=str(path)) == 0
    again = json.loads(out.read_text())
    assert all(abs(r["error"]) < 1e-9 for r in again["rows"]) and len(again["rows"]) == 6
    assert "all within +-25%" in capsys.readouterr().out
    m["runs"][5]["got"]["step_s"] *= 1.5  # 4-rank FSDP measured slower than predicted
    path.write_text(json.dumps(m))
    assert v.main(reprice=str(path)) == 1


# Each rank runs a few steps of each strategy on a small MLP and prints what dist.stats() counted
# per step, with what the StepModel needs to list the same step's collectives.
_COUNT_JOB = """
import json
import pygpu
import pygpu.distributed as dist
from pygpu import nn
from pygpu.distributed.fsdp import FullyShardedDataParallel as FSDP
from pygpu.distributed.fsdp.wrap import ModuleWrapPolicy
from pygpu.distributed.optim import ZeroRedundancyOptimizer
dist.init_process_group()
r = dist.get_rank()
dev = "sim:0" if pygpu.sim.is_available() else "cpu"
out = {}
for strategy in ("ddp", "zero", "fsdp"):
    pygpu.manual_seed(0)
    model = nn.MLP([48, 40, 24, 6]).to(dev)
    info = {"param_sizes": [q.nbytes for q in model.parameters()]}
    if strategy == "fsdp":
        net = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
        opt = pygpu.optim.Adam(net.parameters(), lr=1e-3)
        info["unit_bytes"] = [m._handle.padded * 4 for m in net.modules()
                              if isinstance(m, FSDP) and m._handle is not None]
    else:
        net = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.004)
        opt = (ZeroRedundancyOptimizer(model.parameters(), pygpu.optim.Adam, lr=1e-3)
               if strategy == "zero" else pygpu.optim.Adam(model.parameters(), lr=1e-3))
    x = pygpu.randn(8, 48, device=dev)
    y = pygpu.randint(0, 6, (8,), device=dev)
    def step():
        opt.zero_grad()
        nn.CrossEntropyLoss()(net(x), y).backward()
        opt.step()
    step()
    step()
    pygpu.synchronize()
    dist.reset_stats()
    for _ in range(3):
        step()
    pygpu.synchronize()
    s = dist.stats()
    if strategy != "fsdp":
        info["buckets"] = net.bucket_sizes
    info["calls"] = s["calls"]
    info["sent"] = {k: v["sent"] for k, v in s["by_call"].items()}
    out[strategy] = info
print("JSON " + json.dumps({"rank": r, "p": dist.get_world_size(), "out": out}))
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.parametrize("nproc", [2, 4])
def test_the_models_collectives_per_step_are_what_the_counters_saw(tmp_path, nproc):
    proc = launch(tmp_path, _COUNT_JOB, nproc=nproc, timeout=240,
                  env={"PYGPU_SIM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads(l[5:]) for l in proc.stdout.splitlines() if l.startswith("JSON ")]
    assert len(ranks) == nproc
    for rank in ranks:
        p = rank["p"]
        for strategy, info in rank["out"].items():
            m = cl.StepModel(compute_s=1e-3, param_bytes=sum(info["param_sizes"]),
                             buckets=info.get("buckets"), unit_bytes=info.get("unit_bytes"),
                             param_sizes=info["param_sizes"])
            want = m.collective_counts(strategy)
            assert {k: v / 3 for k, v in info["calls"].items()} == want, (strategy, info)
            if strategy == "ddp":
                assert want["all_reduce"] >= 2  # the small cap made several buckets
            # the bytes the counters charged these calls are the model's calls' bytes
            sent = {}
            for name, nbytes, _ in m.collectives(strategy):
                kind = cl.KIND[name]
                if kind == "broadcast":
                    continue  # the root sends, the others receive: checked by its count
                sent[name] = sent.get(name, 0) + traffic.per_rank(kind, nbytes, p, rank["rank"],
                                                                   itemsize=4)[0]
            for name, b in sent.items():
                assert info["sent"][name] / 3 == b, (strategy, name)
