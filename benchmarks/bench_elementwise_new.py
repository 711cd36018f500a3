# bench_elementwise_new.py - the op table's newer elementwise ops against NumPy and PyTorch
# CPU: clamp_ (in place), where, rsqrt, pow(x, 2), add_ (in place) and isnan, float32, at
# 64x512 (a training activation, in cache) and 4M elements (memory-bound).
#
# A script, not a timed test: PYTHONPATH=. python benchmarks/bench_elementwise_new.py. pygpu and torch
# run at the same thread count (pygpu.get_num_threads(); torch.set_num_threads); NumPy's
# elementwise ops are single-threaded. Each (op, size) times the three libraries in
# alternating blocks with a short pause between, best block of each, and prints the ratios
# (> 1: pygpu faster). Results are checked against NumPy once before timing.
import time

import numpy as np

import pygpu

try:
    import torch
except ImportError:  # torch is never a dependency
    torch = None

THREADS = pygpu.get_num_threads()
if torch is not None:
    torch.set_num_threads(THREADS)


def _ops():
    """name -> (numpy fn, pygpu fn, torch fn); each takes (x, c) in its library: x float32,
    c a bool mask. In-place ops write a scratch copy made once (their values saturate)."""
    return {
        "clamp_": (lambda x, c: np.clip(x, -0.5, 0.5, out=x), lambda x, c: x.clamp_(-0.5, 0.5),
                   lambda x, c: x.clamp_(-0.5, 0.5)),
        "add_": (lambda x, c: np.add(x, 1.0, out=x), lambda x, c: x.add_(1.0),
                 lambda x, c: x.add_(1.0)),
        "where": (lambda x, c: np.where(c, x, 0.0).astype(np.float32, copy=False),
                  lambda x, c: pygpu.where(c, x, 0.0), lambda x, c: torch.where(c, x, 0.0)),
        "rsqrt": (lambda x, c: 1 / np.sqrt(x), lambda x, c: pygpu.rsqrt(x), lambda x, c: torch.rsqrt(x)),
        "pow2": (lambda x, c: x ** 2, lambda x, c: x ** 2, lambda x, c: x ** 2),
        "isnan": (lambda x, c: np.isnan(x), lambda x, c: pygpu.isnan(x), lambda x, c: torch.isnan(x)),
    }


def _best(fn, args, iters, blocks):
    best = float("inf")
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*args)
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def main():
    rng = np.random.default_rng(0)
    print(f"pygpu {pygpu.cpu_isa()} at {THREADS} threads; torch "
          f"{torch.__version__ if torch else 'absent'}; times: best block, microseconds")
    print(f"{'op':<8}{'size':>8}{'numpy':>10}{'pygpu':>10}{'torch':>10}{'vs np':>8}{'vs torch':>10}")
    for label, shape, iters in (("64x512", (64, 512), 200), ("4M", (4 << 20,), 5)):
        x = np.abs(rng.standard_normal(shape)).astype(np.float32) + 0.5
        c = rng.random(shape) < 0.5
        inputs = {"numpy": (x.copy(), c), "pygpu": (pygpu.tensor(x), pygpu.tensor(c))}
        if torch is not None:
            inputs["torch"] = (torch.from_numpy(x.copy()), torch.from_numpy(c))
        for name, (fn_np, fn_pg, fn_t) in _ops().items():
            if not name.endswith("_"):  # values checked once (in-place ones drift by design)
                ref = fn_np(x, c)  # on fresh inputs: the in-place rows have written theirs
                got = fn_pg(pygpu.tensor(x), pygpu.tensor(c)).numpy()
                np.testing.assert_allclose(got.astype(ref.dtype), ref, rtol=1e-6)
            fns = {"numpy": fn_np, "pygpu": fn_pg, "torch": fn_t}
            best = {k: float("inf") for k in inputs}
            for _ in range(5):  # alternating blocks
                for k in inputs:
                    best[k] = min(best[k], _best(fns[k], inputs[k], iters, 1))
                    time.sleep(0.01)
            t = best.get("torch", float("nan"))
            print(f"{name:<8}{label:>8}{best['numpy'] * 1e6:>10.1f}{best['pygpu'] * 1e6:>10.1f}"
                  f"{t * 1e6:>10.1f}{best['numpy'] / best['pygpu']:>8.2f}{t / best['pygpu']:>10.2f}")


if __name__ == "__main__":
    main()
