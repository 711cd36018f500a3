# bench_parallel.py - DataParallel and DistributedDataParallel throughput, side by side with PyTorch.
#
# The model is the training issue's MLP 784-512-512-10 (ReLU, cross-entropy, SGD lr 0.01 momentum
# 0.9) at global batch 512 on synthetic MNIST-shaped data. Every run is its own process, so each
# gets exactly the cores it is meant to have:
#   dp    1 sim device with one compute thread  vs  DataParallel over 2 sim devices, one thread each
#   ddp   1 process vs `mpirun -np 2` (each rank half of each global batch), cpu, one thread each
#         (OMP_NUM_THREADS=1, which init_process_group applies to pygpu's cpu pool; without it
#         the ranks split the cores: cores // ranks each); also 1 process on 2 threads, the
#         single-process alternative DDP on the same two cores must beat
#   torch PyTorch fp32, single process, no wrapper, on both cores (torch.set_num_threads(2)),
#         if torch is installed: the peer the two-device runs must beat
# Each member records samples_per_s (and bytes per step by role for DataParallel) in extra_info;
# the last member prints the table of the run, with the ratios taken within the same run (the
# figures in docs/parallel.md come from it):
#   python -m pytest benchmarks/bench_parallel.py --benchmark-only -s
import json
import os
import subprocess
import sys
import textwrap

import pytest

import pygpu

N_SAMPLES = int(os.environ.get("PYGPU_BENCH_SAMPLES", 15360))  # 30 batches of 512
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
_results = {}
_cpu = {}  # CPU-seconds per epoch, all threads of all processes of the run
_faults = {}  # DDP: rank 0's page faults per step

WORKER = textwrap.dedent("""
    import json, resource, sys, time, numpy as np
    mode, n = sys.argv[1], int(sys.argv[2])
    batch, sizes = 512, [784, 512, 512, 10]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 784)).astype(np.float32); y = rng.integers(0, 10, n)

    cpu = {}
    def timed(epoch):
        epoch()  # warm-up: caches, allocator, replicas
        best, c0 = float("inf"), time.process_time()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(2):
            t0 = time.perf_counter(); epoch(); best = min(best, time.perf_counter() - t0)
        cpu["epoch"] = (time.process_time() - c0) / 2  # CPU-seconds of every thread, per epoch
        # page faults per step (this process): memory handed back and faulted in again
        cpu["faults"] = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / (2 * n // batch)
        return best

    if mode == "torch":
        import torch
        torch.set_num_threads(2)
        torch.manual_seed(0)
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers[:-1])
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()
        xs = [torch.from_numpy(x[i:i + batch]) for i in range(0, n, batch)]
        ys = [torch.from_numpy(y[i:i + batch]) for i in range(0, n, batch)]
        def epoch():
            for xb, yb in zip(xs, ys):
                opt.zero_grad(); loss_fn(model(xb), yb).backward(); opt.step()
        print("JSON " + json.dumps({"samples_per_s": n / timed(epoch), "threads": torch.get_num_threads()}))
        sys.exit(0)

    import pygpu
    from pygpu import nn
    if mode.startswith("dp"):
        ndev = int(mode[2:])
        pygpu.manual_seed(0)
        model = nn.MLP(sizes).to("sim:0")
        net = model if ndev == 1 else nn.DataParallel(model, device_ids=list(range(ndev)))
        opt = pygpu.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        xs = [pygpu.tensor(x[i:i + batch], device="sim:0") for i in range(0, n, batch)]
        ys = [pygpu.tensor(y[i:i + batch], device="sim:0") for i in range(0, n, batch)]
        def epoch():
            for xb, yb in zip(xs, ys):
                opt.zero_grad(); loss_fn(net(xb), yb).backward(); opt.step()
            pygpu.synchronize()
        dt = timed(epoch)
        with pygpu.track() as t:
            epoch()
        steps = n // batch
        print("JSON " + json.dumps({"samples_per_s": n / dt, "threads_per_device": pygpu.sim.num_threads(),
                                    "cpu_s_per_epoch": cpu["epoch"],
                                    "bytes_per_step_by_role": {k: v["bytes"] / steps
                                                               for k, v in t.by_role.items()}}))
    else:  # ddp
        import pygpu.distributed as dist
        dist.init_process_group()
        r, p = dist.get_rank(), dist.get_world_size()
        pygpu.manual_seed(0)
        model = nn.MLP(sizes)
        net = nn.parallel.DistributedDataParallel(model) if p > 1 else model
        opt = pygpu.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        local = batch // p
        xs = [pygpu.tensor(x[i + r * local:i + (r + 1) * local]) for i in range(0, n, batch)]
        ys = [pygpu.tensor(y[i + r * local:i + (r + 1) * local]) for i in range(0, n, batch)]
        def epoch():
            for xb, yb in zip(xs, ys):
                opt.zero_grad(); loss_fn(net(xb), yb).backward(); opt.step()
            dist.barrier()
        dt = timed(epoch)
        every = [None] * p
        dist.all_gather_object(every, dt); dt = max(every)
        dist.all_gather_object(every, cpu["epoch"]); cpu_all = sum(every)
        dist.reset_stats(); epoch(); st = dist.stats()
        if r == 0:
            print("JSON " + json.dumps({"samples_per_s": n / dt, "processes": p,
                                        "threads_per_process": pygpu.get_num_threads(),
                                        "cpu_s_per_epoch": cpu_all,
                                        "faults_per_step_rank0": cpu["faults"],
                                        "net_sent_per_step": st["net_sent"] / (n // batch)}))
""")


def _run(tmp_path, cmd_prefix, mode, env_extra):
    script = tmp_path / "parallel_worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=ROOT, **env_extra)
    env.pop("OPENBLAS_CORETYPE", None)
    out = subprocess.run([*cmd_prefix, str(script), mode, str(N_SAMPLES)], capture_output=True,
                         text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    line = next(l for l in out.stdout.splitlines() if l.startswith("JSON "))
    return json.loads(line[5:])


def _record(benchmark, key, group, fn):
    benchmark.group = group
    result = {}
    benchmark.pedantic(lambda: result.update(fn()), rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    _results[key] = result["samples_per_s"]
    if "cpu_s_per_epoch" in result:
        _cpu[key] = result["cpu_s_per_epoch"]
    if "faults_per_step_rank0" in result:
        _faults[key] = result["faults_per_step_rank0"]


@pytest.mark.parametrize("ndev", [1, 2])
def test_dp(benchmark, tmp_path, ndev):
    # one compute thread per sim device: 1 device = 1 core, 2 devices = 2 cores
    env = dict(ONE_THREAD, PYGPU_SIM_DEVICES="2", PYGPU_SIM_THREADS="1")
    _record(benchmark, f"dp{ndev}", "dp (MLP 784-512-512-10, batch 512, sim, 1 core per device)",
            lambda: _run(tmp_path, [sys.executable], f"dp{ndev}", env))


@pytest.mark.parametrize("nproc", [1, 2])
def test_ddp(benchmark, tmp_path, nproc):
    pytest.importorskip("mpi4py")
    from pygpu.distributed.run import find_mpirun, mpirun_command
    prefix = mpirun_command(nproc, [], mpirun=find_mpirun())
    prefix = prefix[:prefix.index("-m")]  # mpirun ... python: the worker script follows
    env = dict(ONE_THREAD, OMPI_MCA_rmaps_base_oversubscribe="1")
    _record(benchmark, f"ddp{nproc}", "ddp (MLP 784-512-512-10, global batch 512, cpu, 1 thread/process)",
            lambda: _run(tmp_path, prefix, "ddp", env))


def test_ddp_one_process_two_threads(benchmark, tmp_path):
    pytest.importorskip("mpi4py")
    from pygpu.distributed.run import find_mpirun, mpirun_command
    prefix = mpirun_command(1, [], mpirun=find_mpirun())
    prefix = prefix[:prefix.index("-m")]
    env = dict(ONE_THREAD, OMP_NUM_THREADS="2")
    _record(benchmark, "cpu2t", "pygpu cpu, 1 process, 2 threads (no wrapper)",
            lambda: _run(tmp_path, prefix, "ddp", env))


def test_torch_peer(benchmark, tmp_path):
    pytest.importorskip("torch")
    _record(benchmark, "torch", "torch fp32, one process, two threads (the peer)",
            lambda: _run(tmp_path, [sys.executable], "torch", {}))


def test_table(benchmark):
    """The run's table: samples/s and the same-run ratios (printed; run with -s to see it)."""
    benchmark.group = "summary"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    torch_rate = _results.get("torch")
    rows = [("DataParallel, sim", "dp1", "dp2"), ("DDP, cpu", "ddp1", "ddp2")]
    lines = ["| run | 1 device / process | 2 devices / processes | speedup | speedup by CPU time "
             "| 2 vs PyTorch (2 threads) |", "|---|---|---|---|---|---|"]
    for name, one, two in rows:
        if one in _results and two in _results:
            vs = f"{_results[two] / torch_rate:.2f}x" if torch_rate else "n/a"
            # the speedup if each device/process had a core of its own and never waited: twice
            # the 1-device run's CPU per epoch over the 2-device run's (all threads, all ranks).
            # On a shared machine whose scheduler gives each session a share of the cores
            # (autogroup), wall-clock speedups measure the other sessions; this does not.
            by_cpu = f"{2 * _cpu[one] / _cpu[two]:.2f}x" if one in _cpu and two in _cpu else "n/a"
            lines.append(f"| {name} | {_results[one]:,.0f} | {_results[two]:,.0f} | "
                         f"{_results[two] / _results[one]:.2f}x | {by_cpu} | {vs} |")
            benchmark.extra_info[f"{name} speedup"] = _results[two] / _results[one]
    if "cpu2t" in _results:
        vs = f"{_results['cpu2t'] / torch_rate:.2f}x" if torch_rate else "n/a"
        lines.append(f"| pygpu cpu, 1 process, 2 threads | | {_results['cpu2t']:,.0f} | | | {vs} |")
    if torch_rate:
        lines.append(f"| PyTorch fp32, 1 process, 2 threads | | {torch_rate:,.0f} | | | 1.00x |")
    if _faults:
        lines.append("\npage faults per step, rank 0: " + ", ".join(
            f"{k} {v:,.1f}" for k, v in sorted(_faults.items())))
    print("\n" + "\n".join(lines))
