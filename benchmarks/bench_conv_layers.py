# bench_conv_layers.py - issue 45: per layer, pygpu's CPU time against PyTorch's for the
# convolution and batch-norm nodes of the CIFAR ResNet-18 and MobileNetV2 (batch 32), each
# way separately: forward, input gradient, weight gradient (batch norm: forward, backward).
#
# Both sides call their node directly (pygpu: _C._conv2d / _conv2d_input_backward /
# _conv2d_weight_backward / _batch_norm_train / _batch_norm_backward; torch:
# aten.convolution, aten.convolution_backward with one output mask, aten.native_batch_norm
# and its backward), so autograd and Python around them are not in the figure. Timing is
# process CPU time (time.process_time, all threads), which holds on a loaded machine: in each
# of ROUNDS rounds a block of REPS calls runs on each side, in alternating order; a row gives
# the least CPU ms per call of the rounds on each side and torch/pygpu (> 1: pygpu faster).
#   PYTHONPATH=. python benchmarks/bench_conv_layers.py [--threads 1] [--rounds 5] [--reps 3]
#       [--only SUBSTRING] [--kinds fwd,dgrad,wgrad,bn] [--paths own,dnnl]
# --paths measures pygpu's convolutions once per CPU path (pygpu.backends.mkldnn.set_conv_path:
# pygpu's own kernels, oneDNN's), the blocks of all sides alternating in each round; the
# table then has one column per path and own/dnnl (> 1: oneDNN faster), the figures behind
# cpu_conv_dnnl.c's choice table.
import argparse
import time

import numpy as np
import torch

import pygpu
from pygpu import _C

# (name, N, C, H, W, O, k, stride, pad, groups): the distinct conv layers of the two models
# at batch 32 (ResNet-18's stem is 3x3 at CIFAR shapes; the 7x7 stride-2 row is ImageNet's
# stem at a 64 x 64 input, for the table)
CONVS = [
    ("r18 stem 3x3 3->64 32x32", 32, 3, 32, 32, 64, 3, 1, 1, 1),
    ("r18 3x3 s1 64 32x32", 32, 64, 32, 32, 64, 3, 1, 1, 1),
    ("r18 3x3 s2 64->128 32x32", 32, 64, 32, 32, 128, 3, 2, 1, 1),
    ("r18 3x3 s1 128 16x16", 32, 128, 16, 16, 128, 3, 1, 1, 1),
    ("r18 3x3 s2 128->256 16x16", 32, 128, 16, 16, 256, 3, 2, 1, 1),
    ("r18 3x3 s1 256 8x8", 32, 256, 8, 8, 256, 3, 1, 1, 1),
    ("r18 3x3 s2 256->512 8x8", 32, 256, 8, 8, 512, 3, 2, 1, 1),
    ("r18 3x3 s1 512 4x4", 32, 512, 4, 4, 512, 3, 1, 1, 1),
    ("r18 1x1 s2 64->128 32x32", 32, 64, 32, 32, 128, 1, 2, 0, 1),
    ("r18 1x1 s2 256->512 8x8", 32, 256, 8, 8, 512, 1, 2, 0, 1),
    ("7x7 s2 stem 3->64 64x64", 32, 3, 64, 64, 64, 7, 2, 3, 1),
    ("mb 1x1 16->96 32x32", 32, 16, 32, 32, 96, 1, 1, 0, 1),
    ("mb 1x1 144->24 32x32", 32, 144, 32, 32, 24, 1, 1, 0, 1),
    ("mb 1x1 24->144 32x32", 32, 24, 32, 32, 144, 1, 1, 0, 1),
    ("mb 1x1 192->32 16x16", 32, 192, 16, 16, 32, 1, 1, 0, 1),
    ("mb 1x1 384->64 8x8", 32, 384, 8, 8, 64, 1, 1, 0, 1),
    ("mb 1x1 960->160 4x4", 32, 960, 4, 4, 160, 1, 1, 0, 1),
    ("mb dw 3x3 s1 144 32x32", 32, 144, 32, 32, 144, 3, 1, 1, 144),
    ("mb dw 3x3 s2 144 32x32", 32, 144, 32, 32, 144, 3, 2, 1, 144),
    ("mb dw 3x3 s1 192 16x16", 32, 192, 16, 16, 192, 3, 1, 1, 192),
    ("mb dw 3x3 s1 384 8x8", 32, 384, 8, 8, 384, 3, 1, 1, 384),
    ("mb dw 3x3 s1 960 4x4", 32, 960, 4, 4, 960, 3, 1, 1, 960),
]
# (name, N, C, H, W)
NORMS = [
    ("bn 64 32x32", 32, 64, 32, 32),
    ("bn 144 32x32", 32, 144, 32, 32),
    ("bn 256 8x8", 32, 256, 8, 8),
    ("bn 960 4x4", 32, 960, 4, 4),
]


def conv_sides(case, rng):
    name, N, C, H, W, O, k, s, p, G = case
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = (rng.standard_normal((O, C // G, k, k)) * 0.1).astype(np.float32)
    OH = (H + 2 * p - k) // s + 1
    gy = rng.standard_normal((N, O, OH, OH)).astype(np.float32)
    px, pw, pg = (pygpu.tensor(a) for a in (x, w, gy))
    tx, tw, tg = (torch.from_numpy(a) for a in (x, w, gy))
    geom = (s, s, 1, 1, p, p, p, p, G)
    conv_bwd = torch.ops.aten.convolution_backward
    args = ([0], [s, s], [p, p], [1, 1], False, [0, 0], G)
    return {
        "fwd": (lambda: _C._conv2d(px, pw, None, geom),
                lambda: torch.ops.aten.convolution(tx, tw, None, [s, s], [p, p], [1, 1], False,
                                                   [0, 0], G)),
        "dgrad": (lambda: _C._conv2d_input_backward(pg, pw, None, (N, C, H, W), geom),
                  lambda: conv_bwd(tg, tx, tw, *args, [True, False, False])),
        "wgrad": (lambda: _C._conv2d_weight_backward(pg, px, tuple(w.shape), geom, False),
                  lambda: conv_bwd(tg, tx, tw, *args, [False, True, False])),
    }


def norm_sides(case, rng):
    name, N, C, H, W = case
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    gy = rng.standard_normal((N, C, H, W)).astype(np.float32)
    px, pg = pygpu.tensor(x), pygpu.tensor(gy)
    pw, pb = pygpu.ones(C), pygpu.zeros(C)
    prm, prv = pygpu.zeros(C), pygpu.ones(C)
    tx, tg = torch.from_numpy(x), torch.from_numpy(gy)
    tw, tb, trm, trv = torch.ones(C), torch.zeros(C), torch.zeros(C), torch.ones(C)
    _, psave = _C._batch_norm_train(px, pw, pb, prm, prv, 0.1, 1e-5, False)
    _, tmean, tinv = torch.ops.aten.native_batch_norm(tx, tw, tb, trm, trv, True, 0.1, 1e-5)
    return {
        "bn fwd": (lambda: _C._batch_norm_train(px, pw, pb, prm, prv, 0.1, 1e-5, False),
                   lambda: torch.ops.aten.native_batch_norm(tx, tw, tb, trm, trv, True, 0.1,
                                                            1e-5)),
        "bn bwd": (lambda: _C._batch_norm_backward(pg, px, pw, psave, True, True, None),
                   lambda: torch.ops.aten.native_batch_norm_backward(
                       tg, tx, tw, trm, trv, tmean, tinv, True, 1e-5, [True, True, True])),
    }


def cpu_ms(fn, reps):
    t0 = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - t0) * 1e3 / reps


def measure(fns, rounds, reps):
    """The least CPU ms per call of each of fns, their blocks in rotating order per round."""
    for fn in fns:
        fn()  # warm up (and, on the oneDNN path, make the shape's primitive)
    best = [float("inf")] * len(fns)
    for r in range(rounds):
        for i in range(len(fns)):
            k = (i + r) % len(fns)
            best[k] = min(best[k], cpu_ms(fns[k], reps))
    return best


def on_path(fn, path):
    """fn with pygpu's CPU convolutions on `path` ("own" or "dnnl") while it runs."""
    from pygpu.backends import mkldnn

    def run():
        before = mkldnn.set_conv_path(path)
        try:
            return fn()
        finally:
            mkldnn.set_conv_path(before)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--kinds", default="fwd,dgrad,wgrad,bn fwd,bn bwd")
    ap.add_argument("--paths", default="", help="e.g. own,dnnl: pygpu once per conv path")
    a = ap.parse_args()
    if a.paths:
        return main_paths(a)
    torch.set_num_threads(a.threads)
    pygpu.set_num_threads(a.threads)
    kinds = a.kinds.split(",")
    rng = np.random.default_rng(0)
    print(f"threads {a.threads}, rounds {a.rounds}, {a.reps} calls a block, least process CPU "
          f"ms per call; pygpu {pygpu.__version__} isa {pygpu.cpu_isa()}, torch "
          f"{torch.__version__}")
    print("| layer | node | pygpu ms | torch ms | torch/pygpu |")
    print("|---|---|---|---|---|")
    tot_pg = tot_th = 0.0
    cases = [(c, conv_sides) for c in CONVS] + [(c, norm_sides) for c in NORMS]
    for case, sides_of in cases:
        if a.only and a.only not in case[0]:
            continue
        sides = sides_of(case, rng)
        for kind, pair in sides.items():
            if kind not in kinds:
                continue
            p, t = measure(list(pair), a.rounds, a.reps)
            tot_pg += p
            tot_th += t
            print(f"| {case[0]} | {kind} | {p:.2f} | {t:.2f} | {t / p:.2f}x |", flush=True)
    print(f"| all rows | | {tot_pg:.1f} | {tot_th:.1f} | {tot_th / tot_pg:.2f}x |")


def main_paths(a):
    from pygpu.backends import mkldnn
    paths = a.paths.split(",")
    torch.set_num_threads(a.threads)
    pygpu.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    print(f"threads {a.threads}, rounds {a.rounds}, {a.reps} calls a block, least process CPU "
          f"ms per call; pygpu {pygpu.__version__} isa {pygpu.cpu_isa()}, oneDNN "
          f"{mkldnn.version()}, torch {torch.__version__}")
    print("| layer | node | " + " | ".join(f"pygpu {p} ms" for p in paths) + " | torch ms | "
          + " | ".join(f"torch/{p}" for p in paths) + " | auto takes |")
    print("|---|---|" + "---|" * (2 * len(paths) + 2))
    which = {"fwd": "forward", "dgrad": "input", "wgrad": "weight"}
    tot = [0.0] * (len(paths) + 1)
    for case in CONVS:
        if a.only and a.only not in case[0]:
            continue
        name, N, C, H, W, O, k, s, p, G = case
        for kind, (pg_fn, th_fn) in conv_sides(case, rng).items():
            if kind not in a.kinds.split(","):
                continue
            ms = measure([on_path(pg_fn, q) for q in paths] + [th_fn], a.rounds, a.reps)
            tot = [t + m for t, m in zip(tot, ms)]
            auto = mkldnn.conv_path((N, C, H, W), (O, C // G, k, k), s, p, 1, G, which[kind])[0]
            print(f"| {name} | {kind} | " + " | ".join(f"{m:.2f}" for m in ms) + " | "
                  + " | ".join(f"{ms[-1] / m:.2f}x" for m in ms[:-1]) + f" | {auto} |",
                  flush=True)
    print("| all rows | | " + " | ".join(f"{m:.1f}" for m in tot) + " | "
          + " | ".join(f"{tot[-1] / m:.2f}x" for m in tot[:-1]) + " | |")


if __name__ == "__main__":
    main()
