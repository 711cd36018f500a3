# bench_sum_rows.py - x.sum(1) of a 64x512 float32 C-contiguous array, as issue 39 timed it.
#
# pygpu's three spellings (sum(1), sum(dim=1), sum(axis=1)) and pygpu.sum(x, 1), PyTorch's
# sum(1) and sum(dim=1) and NumPy's sum(1), in blocks of 300 calls, the libraries in turn,
# best and median of 9 blocks, microseconds per call. Each CPU level pygpu can run is timed
# in a fresh interpreter (PYGPU_ISA=avx2, and the machine's own level), beside the same
# PyTorch and NumPy, so the ratio to PyTorch is taken in one run. PyTorch runs on 2 threads.
#
#     PYTHONPATH=. python benchmarks/bench_sum_rows.py [--isa avx2 native]
#
# The AVX2 variant of the float32 row sum took 10 us here against 1.2 us for the AVX-512 one
# (issue 39): its 64-byte GCC vectors went through the stack; docs/benchmarks.md has the run.
import argparse
import os
import subprocess
import sys

CHILD = r"""
import time
import numpy as np
import torch
import pygpu

torch.set_num_threads(2)
a = np.random.default_rng(0).standard_normal((64, 512)).astype(np.float32)  # (64, 512)
x, tx = pygpu.tensor(a), torch.from_numpy(a.copy())
np.testing.assert_allclose(x.sum(1).numpy(), a.sum(1), rtol=1e-5, atol=1e-4)
cases = {
    "pygpu x.sum(1)": lambda: x.sum(1), "pygpu x.sum(dim=1)": lambda: x.sum(dim=1),
    "pygpu x.sum(axis=1)": lambda: x.sum(axis=1), "pygpu.sum(x, 1)": lambda: pygpu.sum(x, 1),
    "torch x.sum(1)": lambda: tx.sum(1), "torch x.sum(dim=1)": lambda: tx.sum(dim=1),
    "numpy a.sum(1)": lambda: a.sum(1),
}


def block(f, n=300):
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n * 1e6


res = {k: [] for k in cases}
for _ in range(9):
    for k, f in cases.items():
        f()
        res[k].append(block(f))
    time.sleep(0.05)
torch_best = min(res["torch x.sum(1)"])
print(f"CPU level {pygpu.cpu_isa()}")
for k, v in res.items():
    v.sort()
    print(f"  {k:22s} best {v[0]:6.2f} us  median {v[4]:6.2f} us  best / torch's best "
          f"{v[0] / torch_best:5.2f}")
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--isa", nargs="+", default=["avx2", "native"])
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for isa in args.isa:
        env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("PYGPU_ISA", None)
        if isa != "native":
            env["PYGPU_ISA"] = isa
        print(f"PYGPU_ISA={isa if isa != 'native' else '(unset)'}; loadavg "
              f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(out.stderr[-2000:])
        print(out.stdout, end="")


if __name__ == "__main__":
    main()
