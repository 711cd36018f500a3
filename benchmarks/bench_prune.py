# bench_prune.py - what prune.compact buys at inference: the MLP 784-512-512-10 at
# batch 512 (2 threads), dense against the same model after 50% ln_structured pruning
# (n=2, dim=0) of both hidden layers, masked (PyTorch's reparametrization: same GEMM sizes)
# and compacted (784-256-256-10, the same outputs). PyTorch's dense and pruned models run in
# the same blocks as the peer. Blocks alternate between the models with a short pause, and
# each model's figure is the median block; outputs are checked once before timing.
#
# --train times a training step instead (forward, cross-entropy, backward, SGD step), dense
# against masked: the masked weight is made again after every step (weight_orig changed),
# which is what folding the mask into the GEMM's pack of the weight would save.
#
# --fusion times a training step (forward, cross-entropy, backward, SGD step) of the MLP
# with 50% l1_unstructured pruning of all three layers, the mask fused into the GEMM's
# packing of the weight (pg_gemm.h b_mask) against the cached product weight_orig *
# weight_mask (made again after every step), with PyTorch's pruned MLP as the peer. --amp:
# under autocast bfloat16 (the AVX512_BF16 kernel packs the weight: fused where the CPU has
# it); without: float32, fused only where pygpu's own float32 kernel runs (PYGPU_ISA=avx2).
# It prints which path ran (the GEMM's counts of fused packs and masked copies per step).
#
#   PYTHONPATH=. python benchmarks/bench_prune.py [--rounds 15] [--iters 20] [--batch 512]
#       [--threads 2] [--no-torch] [--train | --fusion [--amp]]
import argparse
import statistics
import time

import numpy as np

import pygpu
from pygpu import nn
from pygpu.nn.utils import prune


def _pygpu_models(seed):
    pygpu.manual_seed(seed)
    dense = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    pruned = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                           nn.Linear(512, 10))
    pruned.load_state_dict(dense.state_dict())
    for i in (0, 2):
        prune.ln_structured(pruned[i], "weight", amount=0.5, n=2, dim=0)
    return dense.eval(), pruned.eval(), prune.compact(pruned).eval()


def _torch_models(dense, pruned):
    import torch
    import torch.nn.utils.prune as tprune

    def twin():
        return torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                   torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                   torch.nn.Linear(512, 10))

    td = twin()
    td.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                        for k, v in dense.state_dict().items()})
    tp = twin()
    for i in (0, 2):
        tprune.identity(tp[i], "weight")
    tp.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                        for k, v in pruned.state_dict().items()})
    return td.eval(), tp.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--fusion", action="store_true")
    ap.add_argument("--amp", action="store_true")
    args = ap.parse_args()
    if args.train:
        return train(args)
    if args.fusion:
        return fusion(args)

    pygpu.set_num_threads(args.threads)
    dense, pruned, small = _pygpu_models(0)
    x_np = np.random.default_rng(0).standard_normal((args.batch, 784)).astype(np.float32)
    x = pygpu.tensor(x_np)
    runs = {}
    with pygpu.no_grad():
        y_pruned = pruned(x).numpy()
        np.testing.assert_allclose(small(x).numpy(), y_pruned, rtol=1e-4, atol=1e-4)
        runs["pygpu dense"] = lambda: dense(x)
        runs["pygpu pruned (masked)"] = lambda: pruned(x)
        runs["pygpu compacted"] = lambda: small(x)
    if not args.no_torch:
        import torch
        torch.set_num_threads(args.threads)
        td, tp = _torch_models(dense, pruned)
        xt = torch.from_numpy(x_np)
        with torch.no_grad():
            np.testing.assert_allclose(tp(xt).numpy(), y_pruned, rtol=1e-4, atol=1e-4)
        runs["torch dense"] = lambda: td(xt)
        runs["torch pruned (masked)"] = lambda: tp(xt)

    times = {k: [] for k in runs}
    grad_off = [pygpu.no_grad()]
    if not args.no_torch:
        grad_off.append(torch.no_grad())
    for c in grad_off:
        c.__enter__()
    try:
        for fn in runs.values():  # warm up
            for _ in range(3):
                fn()
        for r in range(args.rounds):  # the order flips every round: no model always goes first
            for name, fn in (list(runs.items()) if r % 2 == 0 else list(runs.items())[::-1]):
                t0 = time.perf_counter()
                for _ in range(args.iters):
                    fn()
                times[name].append((time.perf_counter() - t0) / args.iters)
                time.sleep(0.05)
    finally:
        for c in reversed(grad_off):
            c.__exit__(None, None, None)

    med = {k: statistics.median(v) for k, v in times.items()}
    params = {"pygpu dense": dense, "pygpu pruned (masked)": dense, "pygpu compacted": small}
    print(f"MLP 784-512-512-10, batch {args.batch}, {args.threads} threads, inference "
          f"(no_grad); median of {args.rounds} alternating blocks of {args.iters} calls")
    print(f"compacted sizes: {[m.weight.shape for m in small if isinstance(m, nn.Linear)]}")
    base = med["pygpu dense"]
    for name, t in med.items():
        n = ""
        if name in params:
            n = f"  {sum(int(np.prod(p.shape)) for p in params[name].parameters()):>7} params"
        print(f"  {name:<24} {t * 1e3:8.3f} ms   {base / t:5.2f}x pygpu dense{n}")
    print(f"compacted vs pruned (masked): "
          f"{med['pygpu pruned (masked)'] / med['pygpu compacted']:.2f}x")
    if "torch pruned (masked)" in med:
        print(f"compacted vs torch pruned (masked): "
              f"{med['torch pruned (masked)'] / med['pygpu compacted']:.2f}x")


def train(args):
    """Training steps, dense against masked (50% ln_structured on both hidden layers)."""
    from pygpu import optim
    from pygpu.nn import functional as F
    pygpu.set_num_threads(args.threads)
    dense, pruned, _ = _pygpu_models(0)
    dense.train()
    pruned.train()
    rng = np.random.default_rng(0)
    x = pygpu.tensor(rng.standard_normal((args.batch, 784)).astype(np.float32))
    labels = pygpu.tensor(rng.integers(0, 10, args.batch).astype(np.int64))
    steps = {}
    for name, model in (("dense", dense), ("pruned (masked)", pruned)):
        opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step(model=model, opt=opt):
            opt.zero_grad()
            F.cross_entropy(model(x), labels).backward()
            opt.step()
        steps[name] = step
    times = {k: [] for k in steps}
    for fn in steps.values():
        for _ in range(3):
            fn()
    for r in range(args.rounds):
        for name, fn in (list(steps.items()) if r % 2 == 0 else list(steps.items())[::-1]):
            t0 = time.perf_counter()
            for _ in range(args.iters):
                fn()
            times[name].append((time.perf_counter() - t0) / args.iters)
            time.sleep(0.05)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"MLP 784-512-512-10 training step (SGD), batch {args.batch}, {args.threads} threads; "
          f"median of {args.rounds} alternating blocks of {args.iters} steps")
    for name, t in med.items():
        print(f"  {name:<16} {t * 1e3:8.3f} ms   {t / med['dense']:5.3f}x dense's time")


def fusion(args):
    """Training steps of the pruned MLP: mask fused into the GEMM's pack, or cached product."""
    from pygpu import _C, optim
    from pygpu.nn import functional as F
    pygpu.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((args.batch, 784)).astype(np.float32)
    l_np = rng.integers(0, 10, args.batch).astype(np.int64)
    x, labels = pygpu.tensor(x_np), pygpu.tensor(l_np)
    steps, counts = {}, {}
    for name, fuse in (("pygpu fused", True), ("pygpu cached product", False)):
        pygpu.manual_seed(0)
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
        for i in (0, 2, 4):
            prune.l1_unstructured(model[i], "weight", amount=0.5)
        opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step(model=model, opt=opt, fuse=fuse):
            old = prune._set_mask_fusion(fuse)
            try:
                opt.zero_grad()
                if args.amp:
                    with pygpu.autocast("cpu", dtype=pygpu.bfloat16):
                        loss = F.cross_entropy(model(x), labels)
                else:
                    loss = F.cross_entropy(model(x), labels)
                loss.backward()
                opt.step()
            finally:
                prune._set_mask_fusion(old)
        c0 = _C._gemm_mask_counts()
        step()
        c1 = _C._gemm_mask_counts()
        counts[name] = (c1[0] - c0[0], c1[1] - c0[1])
        steps[name] = step
    if not args.no_torch:
        import torch
        import torch.nn.utils.prune as tprune
        torch.set_num_threads(args.threads)
        torch.manual_seed(0)
        tm = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                 torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                 torch.nn.Linear(512, 10))
        for i in (0, 2, 4):
            tprune.l1_unstructured(tm[i], "weight", amount=0.5)
        topt = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)
        xt, lt = torch.from_numpy(x_np), torch.from_numpy(l_np)

        def tstep():
            topt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.amp):
                loss = torch.nn.functional.cross_entropy(tm(xt), lt)
            loss.backward()
            topt.step()
        steps["torch pruned"] = tstep
    times = {k: [] for k in steps}
    for fn in steps.values():
        for _ in range(3):
            fn()
    for r in range(args.rounds):
        for name, fn in (list(steps.items()) if r % 2 == 0 else list(steps.items())[::-1]):
            t0 = time.perf_counter()
            for _ in range(args.iters):
                fn()
            times[name].append((time.perf_counter() - t0) / args.iters)
            time.sleep(0.05)
    med = {k: statistics.median(v) for k, v in times.items()}
    mode = "autocast bfloat16" if args.amp else "float32"
    print(f"pruned MLP 784-512-512-10 (50% l1_unstructured) training step (SGD), {mode}, "
          f"batch {args.batch}, {args.threads} threads; median of {args.rounds} alternating "
          f"blocks of {args.iters} steps")
    for name, t in med.items():
        c = counts.get(name)
        c = f"   GEMM calls fused {c[0]}, masked copies {c[1]} per step" if c else ""
        print(f"  {name:<22} {t * 1e3:8.3f} ms   {t / med['pygpu cached product']:5.3f}x "
              f"cached's time{c}")


if __name__ == "__main__":
    main()
