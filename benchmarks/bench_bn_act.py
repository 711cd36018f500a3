# bench_bn_act.py - issue 45: the CNNs' per-channel and activation nodes in inference and
# training, pygpu against PyTorch at MobileNetV2's batch-64 shapes (CIFAR): batch norm in eval
# under no_grad (pygpu: one BATCH_NORM EVAL_FWD node, the ReLU or ReLU6 fused; torch:
# batch_norm then the activation), hardtanh(0, 6) = relu6 forward and backward (pygpu: one
# CLAMP node each way; torch: hardtanh and hardtanh_backward), and nn.Sequential(Conv2d,
# BatchNorm2d, ReLU6) in inference (pygpu: one folded convolution and the ReLU6 in place;
# torch: the three modules).
#
# Timing is process CPU time (time.process_time, all threads), which holds on a loaded machine
# better than wall time: in each of ROUNDS rounds a block of REPS calls runs on each side, in
# alternating order; a row gives the least CPU ms per call over the rounds on each side and
# torch/pygpu (> 1: pygpu faster). Inputs rotate among 3 tensors so that no side reads from
# the cache what the other cannot.
#   PYTHONPATH=. python benchmarks/bench_bn_act.py [--threads 2] [--rounds 5] [--reps 5]
#       [--batch 64] [--only SUBSTRING]
import argparse
import time

import numpy as np
import torch

import pygpu

# (C, H, W) of MobileNetV2's (CIFAR) activations after its expansion and depthwise layers
SHAPES = [(144, 32, 32), (96, 32, 32), (192, 16, 16), (384, 8, 8), (960, 4, 4)]


def _least(fn, sync, rounds_out, reps):
    t0 = time.process_time()
    for i in range(reps):
        r = fn(i % 3)
    sync(r)
    rounds_out.append((time.process_time() - t0) / reps * 1e3)


def _row(name, ours, theirs, rounds, reps):
    """ours/theirs: (fn(i), sync(result)) pairs; alternating blocks, least of the rounds."""
    a, b = [], []
    for fn, sync in (ours, theirs):  # warm-up
        sync(fn(0))
    for r in range(rounds):
        pair = [(ours, a), (theirs, b)]
        for (fn, sync), out in (pair if r % 2 == 0 else pair[::-1]):
            _least(fn, sync, out, reps)
    pa, tb = min(a), min(b)
    print(f"| {name} | {pa:.2f} | {tb:.2f} | {tb / pa:.2f}x |")


def _sync_pg(t):
    return float(t.reshape(-1)[0].item())


def _sync_torch(t):
    return float(t.reshape(-1)[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    pygpu.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    N = a.batch
    import os
    print(f"CPU ms per call, {a.threads} thread(s), batch {N}, pygpu ISA "
          f"{pygpu.backends.cpu.get_cpu_capability()}, load average {os.getloadavg()[0]:.1f}, "
          f"least of {a.rounds} rounds of {a.reps} calls\n")
    print("| op (shape) | pygpu ms | torch ms | torch/pygpu |\n|---|---|---|---|")
    for C, H, W in SHAPES:
        xs = [rng.standard_normal((N, C, H, W), dtype=np.float32) * 3 for _ in range(3)]
        px, tx = [pygpu.tensor(x) for x in xs], [torch.from_numpy(x) for x in xs]
        pbn, tbn = pygpu.nn.BatchNorm2d(C).eval(), torch.nn.BatchNorm2d(C).eval()
        shape = f"{N}x{C}x{H}x{W}"
        rows = {
            f"batch norm eval + ReLU6 ({shape})": (
                (lambda i: pygpu.nn.functional.batch_norm(
                    px[i], pbn.running_mean, pbn.running_var, pbn.weight, pbn.bias, False,
                    0.1, 1e-5, _relu="relu6"), _sync_pg),
                (lambda i: torch.nn.functional.relu6(tbn(tx[i])), _sync_torch)),
            f"batch norm eval ({shape})": ((lambda i: pbn(px[i]), _sync_pg),
                                           (lambda i: tbn(tx[i]), _sync_torch)),
            f"relu6 forward ({shape})": (
                (lambda i: pygpu.nn.functional.relu6(px[i]), _sync_pg),
                (lambda i: torch.nn.functional.relu6(tx[i]), _sync_torch)),
            f"relu6 backward ({shape})": (
                (lambda i: pygpu._C._hardtanh_backward(px[(i + 1) % 3], px[i], 0.0, 6.0),
                 _sync_pg),
                (lambda i: torch.ops.aten.hardtanh_backward(tx[(i + 1) % 3], tx[i], 0.0, 6.0),
                 _sync_torch)),
        }
        with pygpu.no_grad(), torch.no_grad():
            for name, (ours, theirs) in rows.items():
                if a.only in name:
                    _row(name, ours, theirs, a.rounds, a.reps)
    # a MobileNetV2 expansion layer in inference: 1x1 conv 24 -> 144 at 32x32, BN, ReLU6
    pm = pygpu.nn.Sequential(pygpu.nn.Conv2d(24, 144, 1, bias=False), pygpu.nn.BatchNorm2d(144),
                             pygpu.nn.ReLU6()).eval()
    tm = torch.nn.Sequential(torch.nn.Conv2d(24, 144, 1, bias=False), torch.nn.BatchNorm2d(144),
                             torch.nn.ReLU6()).eval()
    xs = [rng.standard_normal((N, 24, 32, 32), dtype=np.float32) for _ in range(3)]
    px, tx = [pygpu.tensor(x) for x in xs], [torch.from_numpy(x) for x in xs]
    name = f"Sequential(conv 1x1 24->144, BN, ReLU6) ({N}x24x32x32)"
    if a.only in name:
        with pygpu.no_grad(), torch.no_grad():
            _row(name, (lambda i: pm(px[i]), _sync_pg), (lambda i: tm(tx[i]), _sync_torch),
                 a.rounds, a.reps)


if __name__ == "__main__":
    main()
