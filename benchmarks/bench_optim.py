"""bench_optim.py - one optimizer step: pygpu's fused update against PyTorch's, same run.

Each pygpu step is one fused C loop per parameter (csrc/backends/cpu/cpu_train.c);
PyTorch's default (foreach) step is a handful of multi-tensor ops. Timed in alternating
blocks with a short pause between (the machine is shared), both libraries on the same
thread count; prints the median time per step and the ratio (torch / pygpu: above 1 means
pygpu is faster).

    python benchmarks/bench_optim.py [--threads 2] [--blocks 7]
"""
import argparse
import statistics
import time

import numpy as np

import pygpu

SHAPES = {"64x512": (64, 512), "4M": (2048, 2048)}
CASES = [("SGD", dict(lr=0.01, momentum=0.9)), ("Adam", dict(lr=1e-3)),
         ("AdamW", dict(lr=1e-3)), ("Adam-amsgrad", dict(lr=1e-3, amsgrad=True)),
         ("RMSprop", dict(lr=1e-3, momentum=0.9)), ("Adagrad", dict(lr=1e-2)),
         ("Adadelta", dict(lr=1.0))]


def _block(step, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        step()
    return (time.perf_counter() - t0) / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--blocks", type=int, default=7)
    args = ap.parse_args()
    import torch
    torch.set_num_threads(args.threads)
    pygpu.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    print(f"{'optimizer':14s} {'shape':7s} {'pygpu ms':>9s} {'torch ms':>9s} {'torch/pygpu':>11s}")
    for name, kw in CASES:
        cls = name.split("-")[0]
        for label, shape in SHAPES.items():
            a = rng.standard_normal(shape).astype(np.float32)
            g = rng.standard_normal(shape).astype(np.float32)
            p = pygpu.tensor(a).requires_grad_()
            p.grad = pygpu.tensor(g)
            t = torch.tensor(a).requires_grad_()
            t.grad = torch.tensor(g)
            ours, ref = getattr(pygpu.optim, cls)([p], **kw), getattr(torch.optim, cls)([t], **kw)
            reps = 200 if label == "64x512" else 10
            ours.step()
            ref.step()  # state allocated outside the timing
            tp, tt = [], []
            for _ in range(args.blocks):
                tp.append(_block(ours.step, reps))
                time.sleep(0.05)
                tt.append(_block(ref.step, reps))
                time.sleep(0.05)
            mp, mt = statistics.median(tp) * 1e3, statistics.median(tt) * 1e3
            print(f"{name:14s} {label:7s} {mp:9.4f} {mt:9.4f} {mt / mp:10.2f}x")


if __name__ == "__main__":
    main()
