# bench_mlp_fp32.py - issue 39's MLP rows: 784-512-512-10 fp32 SGD (momentum 0.9) against PyTorch.
#
# pygpu (cpu device, Trainer.fit) and PyTorch (the same model, loss and batches), 2 threads
# each, at batch 64 (target 1.5x PyTorch) and 512 (target 1.1x). Every configuration runs one
# epoch per round, in alternating order, after a 0.25 s pause; the ratio is taken within each
# round (wall clock), and beside it the ratio of CPU-seconds per epoch (every thread of the
# process; steadier on a shared machine, but PyTorch's idle threads spin, which counts
# against it). PYGPU_ISA=avx2 runs pygpu's AVX2 path on any x86 machine.
#
#     PYTHONPATH=. python benchmarks/bench_mlp_fp32.py [--batches 64 512] [--rounds 5]
#     # a profile of pygpu's training alone (the window between START and END):
#     PYTHONPATH=. perf record -k CLOCK_MONOTONIC -e cpu-clock -F 999 -o mlp.data \
#         python benchmarks/bench_mlp_fp32.py --profile 64
#     perf report -i mlp.data --time START,END --no-children --sort dso,symbol
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speed_table as st  # noqa: E402  (pygpu_epoch, torch_epoch: the same runs as its rows)

import numpy as np  # noqa: E402
import pygpu  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, nargs="+", default=[64, 512])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=15360)
    ap.add_argument("--profile", type=int, default=0, help="only pygpu at this batch, 6 epochs")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.random((args.samples, 784), dtype=np.float32)
    y = rng.integers(0, 10, args.samples).astype(np.int64)
    torch.set_num_threads(2)
    pygpu.set_num_threads(2)
    if args.profile:
        run = st.pygpu_epoch(X, y, args.profile)
        run()
        print("START", time.clock_gettime(time.CLOCK_MONOTONIC), flush=True)
        t0 = time.perf_counter()
        for _ in range(6):
            run()
        print("END", time.clock_gettime(time.CLOCK_MONOTONIC))
        print(f"batch {args.profile}: {6 * args.samples / (time.perf_counter() - t0):,.0f} samples/s")
        return
    cfg = {}
    for b in args.batches:
        cfg[f"pygpu@{b}"] = st.pygpu_epoch(X, y, b)
        cfg[f"torch@{b}"] = st.torch_epoch(X, y, b)
    wall = {k: [] for k in cfg}
    cpu = {k: [] for k in cfg}
    for r in range(args.rounds):
        for k in (list(cfg) if r % 2 == 0 else list(cfg)[::-1]):
            time.sleep(0.25)
            c0, t0 = time.process_time(), time.perf_counter()
            cfg[k]()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    print(f"PYGPU_ISA={os.environ.get('PYGPU_ISA', '(unset)')}, pygpu CPU level {pygpu.cpu_isa()}; "
          f"loadavg {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for b in args.batches:
        p, t = f"pygpu@{b}", f"torch@{b}"
        w = [tt / pp for pp, tt in zip(wall[p], wall[t])]
        c = [tt / pp for pp, tt in zip(cpu[p], cpu[t])]
        print(f"batch {b}: pygpu {args.samples / min(wall[p]):,.0f} samples/s, torch "
              f"{args.samples / min(wall[t]):,.0f}; pygpu/torch speed, wall clock median "
              f"{statistics.median(w):.2f} ({min(w):.2f}-{max(w):.2f}), by CPU time median "
              f"{statistics.median(c):.2f} ({min(c):.2f}-{max(c):.2f}); CPU-s per epoch "
              f"{min(cpu[p]):.3f} / {min(cpu[t]):.3f}")


if __name__ == "__main__":
    main()
