# bench_parallel.py - DataParallel and DistributedDataParallel throughput, and their traffic.
#
# The model is the training issue's MLP 784-512-512-10 (ReLU, cross-entropy, SGD lr 0.01 momentum
# 0.9) at batch 512 on synthetic MNIST-shaped data. Groups:
#   dp-epoch   one "epoch" of N_SAMPLES samples on 1 sim device vs DataParallel over 2 sim devices
#   ddp-epoch  the same global batches: 1 process vs `mpirun -np 2` (each rank half of each batch),
#              cpu device, one thread per process; each run reports its own samples/s
# Each member records samples_per_s and the bytes per step by role in extra_info; the README's
# throughput and traffic tables come from these.
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
from pygpu import nn

N_SAMPLES = int(os.environ.get("PYGPU_BENCH_SAMPLES", 15360))  # 30 batches of 512
BATCH = 512
SIZES = [784, 512, 512, 10]


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N_SAMPLES, 784)).astype(np.float32)
    y = rng.integers(0, 10, N_SAMPLES)
    return x, y


def _epoch(net, params, x, y, device):
    opt = pygpu.optim.SGD(params, lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for i in range(0, len(x), BATCH):
        xb = pygpu.tensor(x[i:i + BATCH], device=device)
        yb = pygpu.tensor(y[i:i + BATCH], device=device)
        opt.zero_grad()
        loss_fn(net(xb), yb).backward()
        opt.step()
    pygpu.synchronize()


@pytest.mark.parametrize("ndev", [1, 2])
def test_dp_epoch(benchmark, ndev):
    if pygpu.sim.device_count() < ndev:
        pytest.skip("not enough sim devices")
    benchmark.group = "dp-epoch (MLP 784-512-512-10, batch 512)"
    x, y = _data()
    pygpu.manual_seed(0)
    model = nn.MLP(SIZES).to("sim:0")
    net = model if ndev == 1 else nn.DataParallel(model, device_ids=[f"sim:{i}" for i in range(ndev)])
    _epoch(net, model.parameters(), x[:BATCH * 2], y[:BATCH * 2], "sim:0")  # warm the caches
    with pygpu.track() as t:
        benchmark.pedantic(_epoch, args=(net, list(model.parameters()), x, y, "sim:0"), rounds=3,
                           iterations=1)
    steps = 3 * (len(x) // BATCH)
    benchmark.extra_info["samples_per_s"] = len(x) / benchmark.stats.stats.min
    benchmark.extra_info["bytes_per_step_by_role"] = {k: v["bytes"] / steps for k, v in t.by_role.items()}
    benchmark.extra_info["h2d_bytes_per_step"] = t.h2d_bytes / steps


DDP_SCRIPT = textwrap.dedent("""
    import json, os, sys, time, numpy as np, pygpu, pygpu.distributed as dist
    from pygpu import nn
    pygpu.set_num_threads(1) if hasattr(pygpu, "set_num_threads") else None
    dist.init_process_group()
    r, p = dist.get_rank(), dist.get_world_size()
    n, batch = int(sys.argv[1]), 512
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 784)).astype(np.float32); y = rng.integers(0, 10, n)
    pygpu.manual_seed(0)
    model = nn.MLP([784, 512, 512, 10])
    net = nn.parallel.DistributedDataParallel(model) if p > 1 else model
    opt = pygpu.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    local = batch // p
    def epoch():
        for i in range(0, n, batch):
            mine = slice(i + r * local, i + (r + 1) * local)
            opt.zero_grad()
            loss_fn(net(pygpu.tensor(x[mine])), pygpu.tensor(y[mine])).backward()
            opt.step()
    epoch()  # warm-up
    dist.barrier(); dist.reset_stats()
    t0 = time.perf_counter(); epoch(); dist.barrier(); dt = time.perf_counter() - t0
    st = dist.stats()
    if r == 0:
        print("JSON " + json.dumps({"samples_per_s": n / dt, "seconds": dt,
                                    "net_sent_per_step": st["net_sent"] / (n // batch)}))
""")


@pytest.mark.parametrize("nproc", [1, 2])
def test_ddp_epoch(benchmark, tmp_path, nproc):
    pytest.importorskip("mpi4py")
    benchmark.group = "ddp-epoch (MLP 784-512-512-10, global batch 512, cpu, 1 thread/process)"
    script = tmp_path / "ddp_bench.py"
    script.write_text(DDP_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))
    env = dict(os.environ, PYTHONPATH=root, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "pygpu.distributed.run", "--nproc_per_node", str(nproc), str(script),
           str(N_SAMPLES)]
    result = {}

    def run():
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        line = next(l for l in out.stdout.splitlines() if l.startswith("JSON "))
        result.update(json.loads(line[5:]))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)
