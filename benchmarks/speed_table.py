# speed_table.py - issue 30's training speed rows 1-3, each side timed in alternating blocks.
#
# The MLP 784-512-512-10 (ReLU, cross-entropy, SGD lr 0.01 momentum 0.9) on synthetic
# MNIST-shaped data, one process, THREADS threads for every library (pygpu's cpu pool,
# sim:0's worker via PYGPU_SIM_THREADS, PyTorch, every BLAS through threadpoolctl).
# Eight configurations, each warmed up first; then ROUNDS rounds, and in each round every
# configuration trains one epoch of N samples (a block), after a pause that lets the other
# side's threads go to sleep; the order rotates from round to round so no configuration
# always follows the same one. Each row's ratio is taken within a round; the table gives
# the median and the range over the rounds. Each block's CPU-seconds (every thread of the
# process) are printed too: on a shared machine the wall clock measures the other jobs.
#   1. pygpu bf16-mixed / pygpu fp32, batch 64           (target >= 1.6x with AVX512_BF16)
#      (and bf16 with the pre-packed weight panels on: pygpu._C._bf16_panels(True))
#   2. pygpu bf16-mixed / torch bf16 autocast, batch 512  (target >= 1.0x)
#   3. pygpu fp32 cpu / torch fp32, batch 512             (target >= 1.1x), and
#      pygpu fp32 cpu / pygpu fp32 sim:0 on the same threads (target >= 1.0x)
# A script, not a pytest file (bench_training.py and bench_mixed_precision.py time their
# rows one after another, which a load swing between two rows moves):
#   PYTHONPATH=. python benchmarks/speed_table.py       # PYGPU_BENCH_SAMPLES, PYGPU_BENCH_ROUNDS
# PYGPU_BENCH_ONLY=pgbf16@64 (a key of `configs`) runs only that configuration, for a profile.
import os
import statistics
import sys
import time

THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
os.environ.setdefault("PYGPU_SIM_THREADS", str(THREADS))  # read when sim:0 first runs

import numpy as np  # noqa: E402
import threadpoolctl  # noqa: E402
import torch  # noqa: E402

import pygpu  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _torch_mlp import torch_mlp  # noqa: E402

N = int(os.environ.get("PYGPU_BENCH_SAMPLES", "15360"))
ROUNDS = int(os.environ.get("PYGPU_BENCH_ROUNDS", "7"))
PAUSE_S = 0.25  # longer than OpenBLAS's idle spin; pygpu's pools sleep sooner
SIZES = (784, 512, 512, 10)


def pygpu_epoch(X, y, batch, precision="32", device="cpu", panels=False):
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP(list(SIZES), activation="relu")
    opt = pygpu.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    trainer = pygpu.Trainer(model, opt, pygpu.nn.CrossEntropyLoss(), device=device,
                            precision=precision)

    def run(n=len(X)):
        if panels:  # the weights' pre-packed bf16 panels (off by default; off frees them)
            pygpu._C._bf16_panels(True)
        try:
            out = trainer.fit(X[:n], y[:n], epochs=1, batch_size=batch, progress=False,
                              shuffle=False)[-1]
            pygpu.synchronize()
        finally:
            pygpu._C._bf16_panels(False)
        return out["loss"]

    run(batch * 4)  # warm-up: caches, staging buffers, packed panels, pool threads
    return run


def torch_epoch(X, y, batch, bf16=False):
    torch.manual_seed(0)
    model = torch_mlp(torch, SIZES)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    tX, ty = torch.from_numpy(X), torch.from_numpy(y)

    def run(n=len(X)):
        total = 0.0
        for a in range(0, n, batch):
            xb, yb = tX[a:a + batch], ty[a:a + batch]
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.detach() * len(xb)
        return float(total) / n

    run(batch * 4)
    return run


def main():
    rng = np.random.default_rng(0)
    X = rng.random((N, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], N).astype(np.int64)
    torch.set_num_threads(THREADS)
    pygpu.set_num_threads(THREADS)
    configs = {
        "pg32@64": lambda: pygpu_epoch(X, y, 64),
        "pgbf16@64": lambda: pygpu_epoch(X, y, 64, "bf16-mixed"),
        "pgbf16pp@64": lambda: pygpu_epoch(X, y, 64, "bf16-mixed", panels=True),
        "pgbf16@512": lambda: pygpu_epoch(X, y, 512, "bf16-mixed"),
        "tbf16@512": lambda: torch_epoch(X, y, 512, bf16=True),
        "pg32@512": lambda: pygpu_epoch(X, y, 512),
        "t32@512": lambda: torch_epoch(X, y, 512),
        "sim32@512": lambda: pygpu_epoch(X, y, 512, device="sim:0"),
    }
    rows = [("1. bf16-mixed / pygpu fp32, batch 64", "pgbf16@64", "pg32@64", 1.6),
            ("1. (with the pre-packed weight panels)", "pgbf16pp@64", "pg32@64", 1.6),
            ("   pre-packed panels on / off, bf16 batch 64", "pgbf16pp@64", "pgbf16@64", 1.0),
            ("2. bf16-mixed / torch bf16 autocast, batch 512", "pgbf16@512", "tbf16@512", 1.0),
            ("3. fp32 cpu / torch fp32, batch 512", "pg32@512", "t32@512", 1.1),
            ("3. fp32 cpu / sim:0, batch 512, same threads", "pg32@512", "sim32@512", 1.0)]
    only = os.environ.get("PYGPU_BENCH_ONLY")  # one configuration, e.g. under perf record
    if only:
        configs = {only: configs[only]}
    with threadpoolctl.threadpool_limits(THREADS):
        runs = {k: make() for k, make in configs.items()}
        names = list(runs)
        sps = {k: [] for k in names}
        cpu_s = {k: [] for k in names}  # CPU-seconds of the process per epoch
        for r in range(ROUNDS):
            order = names[r % len(names):] + names[:r % len(names)]
            for k in order:
                time.sleep(PAUSE_S)
                c0, t0 = time.process_time(), time.perf_counter()
                loss = runs[k]()
                dt, dc = time.perf_counter() - t0, time.process_time() - c0
                assert np.isfinite(loss) and loss < 2.5, f"{k}: loss {loss}"
                sps[k].append(N / dt)
                cpu_s[k].append(dc)
            print(f"round {r + 1}: " + ", ".join(f"{k} {sps[k][-1]:,.0f}" for k in names), flush=True)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {THREADS} threads "
          f"(sim:0: {pygpu.sim.num_threads(0)}), ISA {pygpu.cpu_isa()}, bf16 kernel "
          f"{pygpu._C._half_gemm_kernel(pygpu.bfloat16)}, torch {torch.__version__}, "
          f"{ROUNDS} rounds of one {N}-sample epoch per configuration, load average "
          f"{os.getloadavg()[0]:.1f}")
    print("samples/s, median (min-max); CPU-seconds per epoch, median (all threads: a pool's "
          "spin-waits count, so a loaded machine shows up as wall time, not as CPU time):")
    for k in names:
        v = sps[k]
        print(f"  {k:<11} {statistics.median(v):>8,.0f} ({min(v):,.0f}-{max(v):,.0f})"
              f"   {statistics.median(cpu_s[k]):.2f} CPU-s")
    if only:
        return
    print(f"| row | median | range over {ROUNDS} rounds | target | met |\n|---|---|---|---|---|")
    for label, a, b, target in rows:
        ratios = [p / q for p, q in zip(sps[a], sps[b])]
        med = statistics.median(ratios)
        print(f"| {label} | {med:.2f}x | {min(ratios):.2f}-{max(ratios):.2f}x | >= {target}x | "
              f"{'yes' if med >= target else 'no'} |")


if __name__ == "__main__":
    main()
