# bench_model_shapes.py - the GPT's and ViT-tiny's linear layers and attention, op by op:
# pygpu against PyTorch in one process, at the shapes of bench_models.py's gpt@8 and vit@32
# rows (and their batch-1 forms), so a whole step's gap can be put on the products it is made of.
#
#   PYTHONPATH=. python benchmarks/bench_model_shapes.py [--threads 1] [--only linear|sdpa]
#   ... --tiny --rounds 1      # smoke (tests/test_bench_models.py): small shapes, no figures
#
# linear   F.linear(x, W, b), x (M, K), W (N, K): the forward alone, and forward + backward
#          (dx, dW, db); GFLOP/s counts 2MNK a forward, 6MNK forward + backward
# sdpa     F.scaled_dot_product_attention(q, k, v) on (B, heads, T, 64) contiguous float32,
#          causal for the GPT's rows: the forward alone, and forward + backward
# Each forward's output is checked against torch's once, before anything is timed.
# Each figure is the least process CPU time per call (time.process_time, every thread) over
# --rounds blocks, pygpu and torch alternating block by block: on a shared machine CPU time is
# the figure its load disturbs least (state the load, printed first). > 1 in torch/pygpu:
# pygpu faster.
import argparse
import os
import time

# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which some environments set (this project's machine sets
# OPENBLAS_CORETYPE=Haswell), pin pygpu's OpenBLAS to a kernel that may not be this CPU's: on
# the AVX-512 EPYC it halved pygpu's float32 GEMM speed (AVX2 kernels) while torch (MKL) was
# unaffected. Unset before numpy and pygpu load, as bench_numpy_interleave.py does for its
# children (benchmarks/README.md); the children started from here inherit it. Run as a script
# only: a test that imports this file leaves its process's environment alone.
if __name__ == "__main__":
    for _k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(_k, None)
import numpy as np  # noqa: E402

import pygpu  # noqa: E402
import pygpu.nn.functional as PF  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

# (M = batch * tokens, K = in features, N = out features): qkv, proj, fc, fc2, lm_head of the
# GPT 6 x 384 at block 256 (batch 8 and 1); qkv, proj, fc, fc2 of ViT-tiny (batch 32: 65 tokens)
LINEAR = [(2048, 384, 1152), (2048, 384, 384), (2048, 384, 1536), (2048, 1536, 384),
          (2048, 384, 65), (2080, 192, 576), (2080, 192, 192), (2080, 192, 768), (2080, 768, 192),
          (256, 384, 1152), (256, 1536, 384), (65, 192, 576)]
# (batch, heads, tokens, head dim, causal)
SDPA = [(8, 6, 256, 64, True), (1, 6, 256, 64, True), (32, 3, 65, 64, False),
        (1, 3, 65, 64, False)]
TINY = False  # --tiny: two calls a block
TINY_LINEAR = [(64, 32, 96), (5, 16, 48)]
TINY_SDPA = [(1, 2, 70, 16, True), (2, 2, 9, 16, False)]


def check(p, t):
    """pygpu's output against torch's, once, before timing (a fast wrong kernel cannot win)."""
    np.testing.assert_allclose(p.numpy(), t.numpy(), rtol=1e-4, atol=1e-3)


def least_cpu(fn, reps, rounds, other):
    """Least process CPU seconds per call of fn over rounds blocks of reps calls, each block
    after one of `other`'s (so the sides alternate)."""
    best = float("inf")
    fn()
    for _ in range(rounds):
        other()
        t = time.process_time()
        for _ in range(reps):
            fn()
        best = min(best, (time.process_time() - t) / reps)
    return best


def pair(fp, ft, reps, rounds):
    """(pygpu s, torch s), alternating."""
    tp = least_cpu(fp, reps, rounds, ft)
    tt = least_cpu(ft, reps, rounds, fp)
    return tp, tt


def row(name, flops, tp, tt):
    print(f"| {name} | {tp * 1e3:.3f} / {tt * 1e3:.3f} | {flops / tp / 1e9:.0f} / "
          f"{flops / tt / 1e9:.0f} | {tt / tp:.2f}x |", flush=True)


def linear_rows(rng, rounds, shapes):
    print("\n| linear M x K x N | ms pygpu / torch | GFLOP/s pygpu / torch | torch/pygpu |")
    print("|---|---|---|---|")
    for M, K, N in shapes:
        arrs = [rng.standard_normal(s).astype(np.float32) for s in ((M, K), (N, K), (N,), (M, N))]
        p = [pygpu.tensor(a) for a in arrs]
        t = [torch.tensor(a) for a in arrs]
        reps = 2 if TINY else max(3, int(2e9 / (2 * M * K * N)))
        with pygpu.no_grad(), torch.no_grad():
            check(PF.linear(p[0], p[1], p[2]), TF.linear(t[0], t[1], t[2]))
            tp, tt = pair(lambda: PF.linear(p[0], p[1], p[2]),
                          lambda: TF.linear(t[0], t[1], t[2]), reps, rounds)
        row(f"{M} x {K} x {N} forward", 2 * M * K * N, tp, tt)
        for x in p[:3] + t[:3]:
            x.requires_grad_(True)

        def fb(F, xs):
            def go():
                F.linear(xs[0], xs[1], xs[2]).backward(xs[3])
                for x in xs[:3]:
                    x.grad = None
            return go
        tp, tt = pair(fb(PF, p), fb(TF, t), max(1, reps // 3), rounds)
        row(f"{M} x {K} x {N} forward + backward", 6 * M * K * N, tp, tt)


def sdpa_rows(rng, rounds, shapes):
    print("\n| attention B, heads, T, E | ms pygpu / torch | GFLOP/s pygpu / torch | "
          "torch/pygpu |")
    print("|---|---|---|---|")
    for B, H, T, E, causal in shapes:
        arrs = [rng.standard_normal((B, H, T, E)).astype(np.float32) for _ in range(4)]
        p = [pygpu.tensor(a) for a in arrs]
        t = [torch.tensor(a) for a in arrs]
        # the products' FLOPs (Q K^T and P V), halved for the causal half a row sees
        flops = 4 * B * H * T * T * E / (2 if causal else 1)
        reps = 2 if TINY else max(3, int(1e9 / flops))
        name = f"{B}, {H}, {T}, {E}{' causal' if causal else ''}"
        with pygpu.no_grad(), torch.no_grad():
            check(PF.scaled_dot_product_attention(*p[:3], is_causal=causal),
                  TF.scaled_dot_product_attention(*t[:3], is_causal=causal))
            tp, tt = pair(lambda: PF.scaled_dot_product_attention(*p[:3], is_causal=causal),
                          lambda: TF.scaled_dot_product_attention(*t[:3], is_causal=causal),
                          reps, rounds)
        row(name + " forward", flops, tp, tt)
        for x in p[:3] + t[:3]:
            x.requires_grad_(True)

        def fb(F, xs):
            def go():
                F.scaled_dot_product_attention(*xs[:3], is_causal=causal).backward(xs[3])
                for x in xs[:3]:
                    x.grad = None
            return go
        # the backward's five products (two recomputed) against the forward's two
        tp, tt = pair(fb(PF, p), fb(TF, t), max(1, reps // 3), rounds)
        row(name + " forward + backward", flops * 3.5, tp, tt)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=("linear", "sdpa"))
    ap.add_argument("--tiny", action="store_true", help="small shapes: a smoke run")
    args = ap.parse_args(argv)
    global TINY
    TINY = args.tiny
    pygpu.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    print(f"threads {args.threads}, load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs, pygpu ISA {pygpu.cpu_isa()}, torch {torch.__version__}")
    rng = np.random.default_rng(0)
    if args.only in (None, "linear"):
        linear_rows(rng, args.rounds, TINY_LINEAR if args.tiny else LINEAR)
    if args.only in (None, "sdpa"):
        sdpa_rows(rng, args.rounds, TINY_SDPA if args.tiny else SDPA)


if __name__ == "__main__":
    main()
