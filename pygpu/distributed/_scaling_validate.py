"""The cluster cost model checked against runs on this machine (python -m
pygpu.distributed.scaling --validate).

The workload is bench_parallel's MLP (784-512-512-10, Adam) at 128 samples per rank on sim
devices (one compute thread each) whose host link follows a link model (pygpu.sim.configure:
20 us + 2 GB/s each way), so every reduced byte also pays the staging the model charges.

  1. the MPI link between processes: ring all-reduce times at 2 and 4 ranks, 64 KiB to 4 MiB,
     fitted to alpha + bytes/bandwidth (cost.cluster.fit_link);
  2. one process: forward + backward, and the optimizer step, timed on their own;
  3. DDP, ZeRO and FSDP steps with 2 and 4 processes, timed (the slowest rank's best step:
     the minimum is what is least disturbed by other work on the machine, in every run alike);
  4. the model's prediction for each from 1 and 2 alone (the compute of a rank that shares
     its cores with others is stretched by ranks / cores), beside the measured time.

Internal: `python -m pygpu.distributed._scaling_validate link|work ...` are the measured runs."""
import json
import os
import subprocess
import sys
import time

LINK = {"latency_us": 20.0, "h2d_gbps": 2.0, "d2h_gbps": 2.0}
SIZES, BATCH, STEPS = [784, 512, 512, 10], 128, 20
ENV = {"PYGPU_SIM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def _launch(nproc, *args):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, **ENV, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if nproc == 1:
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
    dist.init_process_group()
    os.environ["PYGPU_ALLREDUCE"] = "ring"
    out = []
    for nbytes in (64 << 10, 256 << 10, 1 << 20, 4 << 20):
        t = pygpu.ones(nbytes // 4)
        dist.all_reduce(t)
        times = []
        for _ in range(12):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - t0)
        every = [None] * dist.get_world_size()
        dist.all_gather_object(every, _best(times))
        out.append([dist.get_world_size(), nbytes, max(every)])
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
        extra["units"] = sum(1 for m in net.modules() if isinstance(m, FSDP) and m._handle)
    else:
        net, opt = model, pygpu.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(r)
    x = pygpu.tensor(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32), device=dev)
    y = pygpu.tensor(rng.integers(0, SIZES[-1], BATCH), device=dev)
    loss_fn = nn.CrossEntropyLoss()
    step_t, fb_t, opt_t = [], [], []
    for k in range(STEPS + 3):
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
           "param_bytes": sum(q.nbytes for q in model.parameters()) if strategy != "fsdp"
           else None, **extra}
    if strategy in ("ddp", "zero"):
        res["buckets"] = net.bucket_sizes
    if not single:
        every = [None] * p
        dist.all_gather_object(every, res["step_s"])
        res["step_s"] = max(every)
        if r != 0:
            return
    print("JSON " + json.dumps(res))


def main(json_path=None):
    from ..cost import cluster as cl
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()
    print(f"validating on this machine: {cores} cores, load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}")
    points = []
    for p in (2, 4):
        points += _launch(p, "link")["points"]
    link, err = cl.fit_link(points, "this machine's MPI (shared memory)")
    print(f"MPI link fitted: {link.alpha_s * 1e6:.1f} us + bytes / {link.bandwidth_bps / 1e9:.2f} GB/s "
          f"(largest residual {err:.0%})")
    one = _launch(1, "work", "one")
    staging = cl.LinkProfile("sim link model", LINK["latency_us"] * 1e-6, LINK["h2d_gbps"] * 1e9)
    rows = []
    for p in (2, 4):
        cluster = cl.Cluster("this machine", link, link, devices_per_node=p)
        stretch = max(1.0, p / cores)  # ranks sharing cores compute slower
        for strategy in ("ddp", "zero", "fsdp"):
            got = _launch(p, "work", strategy)
            model = cl.StepModel(compute_s=one["fb_s"] * stretch, optimizer_s=one["opt_s"] * stretch,
                                 param_bytes=one["param_bytes"], batch_per_device=BATCH,
                                 units=got.get("units", 1), staging=staging,
                                 buckets=got.get("buckets"))
            pred = model.predict(p, cluster, strategy)
            rows.append({"ranks": p, "strategy": strategy, "measured_ms": got["step_s"] * 1e3,
                         "predicted_ms": pred["step_s"] * 1e3,
                         "error": pred["step_s"] / got["step_s"] - 1})
    print(f"one process: forward+backward {one['fb_s'] * 1e3:.2f} ms, Adam step "
          f"{one['opt_s'] * 1e3:.2f} ms, {one['param_bytes'] / 2**20:.2f} MiB of parameters")
    print(f"{'ranks':>5} {'strategy':>8} {'measured ms':>12} {'predicted ms':>13} {'error':>7}")
    for r in rows:
        print(f"{r['ranks']:>5} {r['strategy']:>8} {r['measured_ms']:12.2f} {r['predicted_ms']:13.2f} "
              f"{r['error']:+7.0%}")
    ok = all(abs(r["error"]) <= 0.25 for r in rows)
    print("all within +-25%" if ok else "NOT all within +-25%")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"cores": cores, "load": load, "link": [link.alpha_s, link.bandwidth_bps],
                       "one": one, "rows": rows}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "link":
        _link_run()
    elif sys.argv[1] == "work":
        _work_run(sys.argv[2])
    else:
        sys.exit(main())
