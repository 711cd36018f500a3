"""bench_optim.py - one optimizer step: pygpu's fused update against PyTorch's, same run.

Part 1, one parameter: pygpu's step is one fused C loop (csrc/backends/cpu/cpu_train.c).
Part 2, a real model's parameter list (benchmarks/_models.py: ResNet-18's 62 tensors with SGD
momentum + weight decay, the 6 x 384 GPT's with AdamW in two groups and clip_grad_norm_):
pygpu's single-tensor path (foreach=False: one node per parameter) and its multi-tensor path
(foreach=True: one MULTI node per group, cut over the threads by the total element count)
against torch's single-tensor, foreach and fused paths. Timed in alternating blocks with a
short pause between (the machine is shared), both libraries on the same thread count; prints
the median wall time per step, the process CPU time per step beside it (on a loaded machine
the wall time is not a figure), the load (`uptime`), and torch / pygpu (above 1: pygpu faster).

    python benchmarks/bench_optim.py [--threads 2] [--blocks 7] [--models-only]
"""
import argparse
import os
import statistics
import sys
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


def _block_cpu(step, reps):
    """(wall seconds, process CPU seconds) per call of step, over reps calls."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(reps):
        step()
    return (time.perf_counter() - t0) / reps, (time.process_time() - c0) / reps


def _model_steps(torch, name, rng):
    """{label: step function} for one model's parameter list with random gradients: pygpu's
    two paths and torch's three, each with its own copy of the parameters."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _models
    size = _models.FULL[name]
    builders = {"resnet18": _models.resnet18, "gpt": _models.gpt}
    steps = {}
    for lib, flags in ((pygpu, [("pygpu single", dict(foreach=False)),
                                ("pygpu multi", dict(foreach=True))]),
                       (torch, [("torch single", dict(foreach=False)),
                                ("torch foreach", dict(foreach=True)),
                                ("torch fused", dict(fused=True))])):
        for label, kw in flags:
            model = builders[name](lib, **size)
            params = list(model.parameters())
            for p in params:
                g = rng.standard_normal(tuple(p.shape)).astype(np.float32) * 1e-2
                p.grad = lib.tensor(g)
            opt = _models.optimizer(lib, name, model)
            for group in opt.param_groups:
                group.update(foreach=kw.get("foreach"), fused=kw.get("fused"))
            clip = _models.CLIP.get(name)
            foreach = kw.get("foreach", None)

            def step(lib=lib, opt=opt, params=params, clip=clip, foreach=foreach):
                if clip:
                    lib.nn.utils.clip_grad_norm_(params, clip, foreach=foreach)
                opt.step()
            step()  # the state, outside the timing
            steps[label] = step
    return steps


def models(torch, blocks):
    rng = np.random.default_rng(0)
    print(f"\nload: {os.getloadavg()[0]:.2f} (1-minute average, the machine's {os.cpu_count()} CPUs)")
    print(f"{'model step':38s} {'wall ms':>8s} {'cpu ms':>8s} {'torch fused/this':>17s}")
    for name, what in (("resnet18", "SGD momentum+wd"), ("gpt", "AdamW + clip_grad_norm_")):
        steps = _model_steps(torch, name, rng)
        wall, cpu = {k: [] for k in steps}, {k: [] for k in steps}
        for _ in range(blocks):
            for label, step in steps.items():
                w, c = _block_cpu(step, 3)
                wall[label].append(w)
                cpu[label].append(c)
                time.sleep(0.05)
        ref = statistics.median(wall["torch fused"])
        for label in steps:
            mw, mc = statistics.median(wall[label]), statistics.median(cpu[label])
            print(f"{name + ' ' + what + ': ' + label:38s} {mw * 1e3:8.2f} {mc * 1e3:8.2f} "
                  f"{ref / mw:16.2f}x")
    print(f"load after: {os.getloadavg()[0]:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--models-only", action="store_true", help="only part 2")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(args.threads)
    pygpu.set_num_threads(args.threads)
    if args.models_only:
        models(torch, args.blocks)
        return
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
    models(torch, args.blocks)


if __name__ == "__main__":
    main()
