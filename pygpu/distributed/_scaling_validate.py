"""The cluster cost model checked against runs on this machine (python -m
pygpu.distributed.scaling --validate).

The workload is bench_parallel's MLP (784-512-512-10, Adam) at 128 samples per rank on sim
devices (one compute thread each) whose host link follows a link model (pygpu.sim.configure:
20 us + 2 GB/s each way), so every reduced byte also pays the staging the model charges.

  1. this machine's link between processes, fitted to call + steps alpha + bytes beta
     (cost.cluster.fit_link, transport "open_mpi": each call priced by the algorithm Open MPI's
     libnbc runs for it, cost.cluster.OPEN_MPI) for each kind the strategies make on their
     path (sim tensors), all-reduce, all-gather, reduce-scatter and broadcast, 16 B to 1 MiB
     per rank at 2 and 4 ranks, less the sim link model's staging (charged on its own): one
     fit per kind (the call: MPI's latency, pygpu's Python and the waits; the bandwidth of the
     kind's algorithm) beside one fit of all kinds together; and the CPU time of each call
     (cost.cluster.fit_call_cpu: per call and per staged byte);
  2. one process: forward + backward, and the optimizer step, timed on their own, and its
     CPU time per step (the compute thread, the main thread, the copy threads); and each
     strategy on one rank (a process group of one): its CPU per step less its collectives'
     (the CPU of the thread its asynchronous collectives of sim tensors run on; the model
     charges them per call at every size), so the wrapper's own work (DDP's hooks and
     buckets, FSDP's flat parameters and views, ZeroRedundancyOptimizer's Python) is in the
     host's share;
  3. DDP, ZeRO and FSDP steps with 2 and 4 processes, timed (the slowest rank's best step:
     the minimum is what is least disturbed by other work on the machine, in every run alike),
     with what each step's collectives are (DDP's buckets, the parameters ZeRO broadcasts and
     the share of them a rank updates, FSDP's units);
  4. the model's prediction for each from 1 and 2 alone, beside the measured time: the sum of
     the step's lock-step phases (forward+backward with the collectives it hides, each exposed
     collective, the optimizer), each the longer of its links' time and the ranks' CPU in it
     on the cores there are (cost.cluster.HostShare: one process's CPU plus each collective's;
     the sim devices are threads of the host, so ranks that together need more cores than
     there are wait for them).

Near idle this takes about a minute; under load, several.

`--validate --reprice FILE` prices again what a `--json FILE` run measured (a model change
checked without measuring again). Internal: `python -m pygpu.distributed._scaling_validate
link|work ...` are the measured runs."""
import json
import os
import subprocess
import sys
import time

LINK = {"latency_us": 20.0, "h2d_gbps": 2.0, "d2h_gbps": 2.0}
SIZES, BATCH, STEPS = [784, 512, 512, 10], 128, 20
CALIBRATION_NUMEL = (4, 1 << 14, 1 << 16, 1 << 18)  # float32 elements per rank: 16 B to 1 MiB
ENV = {"PYGPU_SIM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def _launch(nproc, *args):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, **ENV, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if args[-1] == "one":  # no process group
        cmd = [sys.executable, "-m", "pygpu.distributed._scaling_validate", *args]
    else:
        cmd = [sys.executable, "-m", "pygpu.distributed.run", "--nproc_per_node", str(nproc),
               "-m", "pygpu.distributed._scaling_validate", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    rows = [json.loads(l[5:]) for l in out.stdout.splitlines() if l.startswith("JSON ")]
    return rows[0]


def _best(xs):
    return min(xs)


def _link_run():
    import pygpu
    import pygpu.distributed as dist
    pygpu.sim.configure(**LINK)
    dist.init_process_group()
    p = dist.get_world_size()

    def best_of(fn, reps=12):
        """(the slowest rank's best wall time, the ranks' mean CPU time) of one call."""
        fn()
        times, cpu = [], 0.0
        for _ in range(reps):
            dist.barrier()
            pygpu.synchronize()
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            pygpu.synchronize()
            times.append(time.perf_counter() - t0)
            cpu += time.process_time() - c0
        every = [None] * p
        dist.all_gather_object(every, (_best(times), cpu / reps))
        return max(w for w, _ in every), sum(c for _, c in every) / p
    out = []
    # each kind the strategies make, on their path (sim tensors), tiny to 1 MiB per rank: the
    # call, the algorithm's steps and bytes (fitted per kind), and the CPU a call and its
    # staged bytes cost
    for numel in CALIBRATION_NUMEL:
        whole, shard = pygpu.ones(numel * p, device="sim:0"), pygpu.ones(numel, device="sim:0")
        calls = {"all_reduce": lambda: dist.all_reduce(whole, dist.ReduceOp.AVG),
                 "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(whole, shard),
                 "reduce_scatter_tensor": lambda: dist.reduce_scatter_tensor(shard, whole,
                                                                             dist.ReduceOp.AVG),
                 "broadcast": lambda: dist.broadcast(whole, 0)}
        for name, fn in calls.items():
            out.append([name, "best", p, whole.nbytes, *best_of(fn, 12 if numel < 1 << 16 else 6), 1])
    if dist.get_rank() == 0:
        print("JSON " + json.dumps({"points": out}))


def _work_run(strategy):
    import numpy as np
    import pygpu
    from pygpu import nn
    pygpu.sim.configure(**LINK)
    single = strategy == "one"
    if not single:
        import pygpu.distributed as dist
        dist.init_process_group()
        r, p = dist.get_rank(), dist.get_world_size()
    else:
        r, p = 0, 1
    dev = "sim:0"
    pygpu.manual_seed(0)
    model = nn.MLP(SIZES).to(dev)
    extra = {}
    if strategy == "ddp":
        net = nn.parallel.DistributedDataParallel(model)
        opt = pygpu.optim.Adam(model.parameters(), lr=1e-3)
    elif strategy == "zero":
        net = nn.parallel.DistributedDataParallel(model)
        from pygpu.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(model.parameters(), pygpu.optim.Adam, lr=1e-3)
    elif strategy == "fsdp":
        from pygpu.distributed.fsdp import FullyShardedDataParallel as FSDP
        from pygpu.distributed.fsdp.wrap import ModuleWrapPolicy
        net = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
        opt = pygpu.optim.Adam(net.parameters(), lr=1e-3)
        handles = [m._handle for m in net.modules() if isinstance(m, FSDP) and m._handle]
        extra["units"] = len(handles)
        extra["unit_bytes"] = [h.padded * h.flat_param.element_size() for h in handles]
    else:
        net, opt = model, pygpu.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(r)
    x = pygpu.tensor(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32), device=dev)
    y = pygpu.tensor(rng.integers(0, SIZES[-1], BATCH), device=dev)
    loss_fn = nn.CrossEntropyLoss()
    step_t, fb_t, opt_t = [], [], []
    cpu0 = None
    def stage_cpu():
        """CPU seconds of the thread the group's asynchronous collectives of sim tensors run
        on (staging, MPI, their Python): DDP's all-reduces, ZeRO's broadcasts, FSDP's
        reduce-scatters."""
        queue = None if single else dist.groups.resolve(None).stage_queue
        return queue.run(time.thread_time) if queue is not None else 0.0
    for k in range(STEPS + 3):
        if k == 3:
            cpu0, stage0 = time.process_time(), stage_cpu()
            if not single:
                dist.reset_stats()
        pygpu.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        pygpu.synchronize()
        t1 = time.perf_counter()
        opt.step()
        pygpu.synchronize()
        t2 = time.perf_counter()
        if k >= 3:  # warm-up: DDP's first iteration and its bucket rebuild
            step_t.append(t2 - t0)
            fb_t.append(t1 - t0)
            opt_t.append(t2 - t1)
    res = {"step_s": _best(step_t), "fb_s": _best(fb_t), "opt_s": _best(opt_t),
           "cpu_s": (time.process_time() - cpu0) / STEPS,
           "collective_cpu_s": (stage_cpu() - stage0) / STEPS,
           "param_bytes": sum(q.nbytes for q in model.parameters()) if strategy != "fsdp"
           else None, **extra}
    if strategy in ("ddp", "zero"):
        res["buckets"] = net.bucket_sizes
        res["param_sizes"] = [q.nbytes for q in model.parameters()]
    if not single:  # its collectives per step, and the bytes they staged (device<->host)
        s = dist.stats()
        res["calls_per_step"] = sum(s["calls"].values()) / STEPS
        res["staged_per_step"] = (s["h2d_bytes"] + s["d2h_bytes"]) / STEPS
    if strategy == "zero":  # the largest share of the parameters one rank updates
        owned = [sum(q.numel() for g in groups for q in g["params"])
                 for groups in opt._partition_parameters()]
        res["optimizer_share"] = max(owned) / sum(owned)
    if not single:
        every = [None] * p
        dist.all_gather_object(every, res["step_s"])
        res["step_s"] = max(every)
        if r != 0:
            return
    print("JSON " + json.dumps(res))


def measure():
    """Every measured input and every measured step: {cores, load, points, one, alone_runs,
    runs: [{ranks, strategy, got}]}."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()
    print(f"validating on this machine: {cores} cores, load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}")
    points = []
    for p in (2, 4):
        points += _launch(p, "link")["points"]
    one = _launch(1, "work", "one")
    alone_runs = {strategy: _launch(1, "work", strategy) for strategy in ("ddp", "zero", "fsdp")}
    runs = [{"ranks": p, "strategy": strategy, "got": _launch(p, "work", strategy)}
            for p in (2, 4) for strategy in ("ddp", "zero", "fsdp")]
    return {"cores": cores, "load": load, "points": points, "one": one,
            "alone_runs": alone_runs, "runs": runs}


def price(m):
    """The model's prediction of each measured step from the measured inputs alone (printed);
    returns what --json keeps."""
    from ..cost import cluster as cl
    cores, points, one = m["cores"], m["points"], m["one"]
    staging = cl.LinkProfile("sim link model", LINK["latency_us"] * 1e-6, LINK["h2d_gbps"] * 1e9)
    stager = cl.StepModel(compute_s=0.0, param_bytes=0.0, staging=staging)
    # each measured call less the sim link model's staging (which the model charges on its
    # own), priced by the algorithm Open MPI runs for it; per kind where it has several sizes
    fit = [(name, alg, p, n, t - stager._stage(name, n, p))
           for name, alg, p, n, t, _, staged in points]
    shared, shared_err = cl.fit_link(fit, "this machine's MPI", transport="open_mpi")
    link, err = cl.fit_link(fit, "this machine's MPI (shared memory) and pygpu's calls",
                            transport="open_mpi", per_kind=True)
    print(f"link fitted, all kinds together: {shared.call_s * 1e6:.1f} us per call + "
          f"{shared.alpha_s * 1e6:.1f} us per step + bytes / {shared.bandwidth_bps / 1e9:.2f} GB/s "
          f"(largest residual {shared_err:.0%}); each kind alone (largest residual {err:.0%}):")
    for kind, (c, a, bw) in sorted(link.kinds.items()):
        print(f"  {kind:>14}: {c * 1e6:6.1f} us per call + {a * 1e6:5.1f} us per step + bytes / "
              f"{bw / 1e9:.2f} GB/s")
    call_cpu, byte_cpu = cl.fit_call_cpu([(stager.staged_bytes(name, n, p), c)
                                          for name, _, p, n, _, c, staged in points if staged])
    print(f"CPU per collective of sim tensors: {call_cpu * 1e6:.0f} us + "
          f"{byte_cpu * 1e9:.2f} ns per staged byte")
    for name, alg, p, n, t, c, staged in points:
        model = lambda lk: (cl.collective_time(name, n, p, lk) + stager._stage(name, n, p)) * 1e6
        print(f"  {name} of {n} bytes on {p} sim ranks ({cl.best_algorithm(name, n, p, link)}): "
              f"{t * 1e6:.0f} us measured ({c * 1e6:.0f} us CPU), {model(link):.0f} us modelled "
              f"({model(shared):.0f} with the shared fit)")
    # each strategy on one rank: its wrapper's own CPU per step (hooks, buckets, flat
    # parameters, the sharded optimizer's Python), less what its collectives cost there (the
    # CPU of the thread they run on; the model charges them per call at every size), no
    # less than the plain model's
    alone = {strategy: cl.own_cpu(got["cpu_s"], got["collective_cpu_s"], floor=one["cpu_s"])
             for strategy, got in m["alone_runs"].items()}
    rows = []
    for run in m["runs"]:
        p, strategy, got = run["ranks"], run["strategy"], run["got"]
        cluster = cl.Cluster("this machine", link, link, devices_per_node=p)
        host = cl.HostShare(cpu_s=alone[strategy], cores_per_rank=cores / p,
                            call_cpu_s=call_cpu, byte_cpu_s=byte_cpu)
        model = cl.StepModel(compute_s=one["fb_s"], optimizer_s=one["opt_s"], host=host,
                             param_bytes=one["param_bytes"], batch_per_device=BATCH,
                             units=got.get("units", 1), unit_bytes=got.get("unit_bytes"),
                             param_sizes=got.get("param_sizes"), staging=staging,
                             buckets=got.get("buckets"),
                             optimizer_share=got.get("optimizer_share"))
        pred = model.predict(p, cluster, strategy)
        rows.append({"ranks": p, "strategy": strategy, "measured_ms": got["step_s"] * 1e3,
                     "predicted_ms": pred["step_s"] * 1e3, "bound": pred["bound"],
                     "host_ms": pred["host_s"] * 1e3, "links_ms": pred["links_s"] * 1e3,
                     "calls": pred["calls"], "exposed_ms": pred["exposed_s"] * 1e3,
                     "error": pred["step_s"] / got["step_s"] - 1})
    print(f"one process: forward+backward {one['fb_s'] * 1e3:.2f} ms, Adam step "
          f"{one['opt_s'] * 1e3:.2f} ms, {one['param_bytes'] / 2**20:.2f} MiB of parameters, "
          f"{one['cpu_s'] * 1e3:.2f} ms of CPU per step; on one rank, less its collectives, "
          + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in alone.items()) + " ms of CPU per step")
    print("predicted = the lock-step phases (forward+backward, each exposed collective, the "
          "optimizer), each the longer of its links' time and the ranks' CPU in it on the cores; "
          "links = the phases' links times alone, host = the whole step's CPU on the cores")
    print(f"{'ranks':>5} {'strategy':>8} {'calls':>5} {'measured ms':>12} {'predicted ms':>13} "
          f"{'links ms':>9} {'host ms':>8} {'error':>7}")
    for r in rows:
        print(f"{r['ranks']:>5} {r['strategy']:>8} {r['calls']:>5} {r['measured_ms']:12.2f} "
              f"{r['predicted_ms']:13.2f} {r['links_ms']:9.2f} {r['host_ms']:8.2f} {r['error']:+7.0%}")
    ok = all(abs(r["error"]) <= 0.25 for r in rows)
    print("all within +-25%" if ok else "NOT all within +-25%")
    return {**m, "link": [link.call_s, link.alpha_s, link.bandwidth_bps], "link_kinds": link.kinds,
            "alone_cpu_s": alone, "rows": rows, "ok": ok}


def main(json_path=None, reprice=None):
    """Measure and price (or, with reprice, price again what a --json file measured: the
    model's changes, without measuring again). Exits 1 if any row misses +-25%."""
    if reprice:
        with open(reprice) as f:
            m = json.load(f)
        print(f"re-pricing {reprice} (measured on {m['cores']} cores at load average "
              f"{m['load'][0]:.1f})")
    else:
        m = measure()
    out = price(m)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    if sys.argv[1] == "link":
        _link_run()
    elif sys.argv[1] == "work":
        _work_run(sys.argv[2])
    elif sys.argv[1] == "reprice":
        sys.exit(main(reprice=sys.argv[2]))
    else:
        sys.exit(main())
