# bench_tensor_surface.py - issue 27's tensor surface against PyTorch and NumPy, same run.
#
#   python benchmarks/bench_tensor_surface.py [--repeat 5]
#
# Ops: a view chain (view, permute, unsqueeze, expand, narrow: no data moves), gather
# along dim 1, topk(k=5, dim=1), a dim=1 sum with keepdim, argmax(dim=1, keepdim=True),
# cumsum(dim=1), index_select(0, ...), masked_fill. Shapes 64x512 and 2048x2048 (4M
# elements), float32, pygpu on cpu. Each contender is timed in alternating blocks with a
# short pause between (best block of `--repeat`), 2 threads for all (torch.set_num_threads,
# pygpu.set_num_threads). Prints the time per call and pygpu's ratio to PyTorch (< 1 is
# faster). A script, not a test: nothing here runs in the default suite.
import argparse
import time

import numpy as np

import pygpu

SHAPES = [(64, 512), (2048, 2048)]


def _time(fn, n):
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def cases(mod, x, idx, rows, mask):
    """name -> zero-argument callable, spelled the same for torch and pygpu."""
    return {
        "view chain": lambda: x.view(-1).view(x.shape[0], -1).permute(1, 0).unsqueeze(0)
        .expand(3, -1, -1).narrow(1, 1, 4),
        "gather dim=1": lambda: x.gather(1, idx),
        "topk k=5 dim=1": lambda: x.topk(5, dim=1),
        "sum dim=1 keepdim": lambda: x.sum(dim=1, keepdim=True),
        "argmax dim=1 keepdim": lambda: x.argmax(dim=1, keepdim=True),
        "cumsum dim=1": lambda: x.cumsum(1),
        "index_select 0": lambda: x.index_select(0, rows),
        "masked_fill": lambda: x.masked_fill(mask, 0.0),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import torch
    torch.set_num_threads(2)
    pygpu.set_num_threads(2)
    rng = np.random.default_rng(0)
    print(f"{'op':24s} {'shape':>11s} {'pygpu us':>10s} {'torch us':>10s} {'ratio':>6s}")
    for shape in SHAPES:
        a = rng.standard_normal(shape).astype(np.float32)
        i = rng.integers(0, shape[1], (shape[0], 8))
        r = rng.integers(0, shape[0], shape[0] // 2)
        m = a > 0.5
        ours = cases(pygpu, pygpu.from_numpy(a), pygpu.tensor(i), pygpu.tensor(r),
                     pygpu.tensor(m))
        theirs = cases(torch, torch.from_numpy(a), torch.from_numpy(i), torch.from_numpy(r),
                       torch.from_numpy(m))
        n = max(3, int(2e6 / a.size))
        for name in ours:
            best = {"pygpu": float("inf"), "torch": float("inf")}
            for _ in range(args.repeat):  # alternating blocks
                best["pygpu"] = min(best["pygpu"], _time(ours[name], n))
                time.sleep(0.05)
                best["torch"] = min(best["torch"], _time(theirs[name], n))
                time.sleep(0.05)
            print(f"{name:24s} {'x'.join(map(str, shape)):>11s} {best['pygpu'] * 1e6:10.1f} "
                  f"{best['torch'] * 1e6:10.1f} {best['pygpu'] / best['torch']:6.2f}")


if __name__ == "__main__":
    main()
