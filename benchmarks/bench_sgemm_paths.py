# bench_sgemm_paths.py - pygpu's float32 matmul at issue 45's model shapes, per GEMM path
# (PYGPU_SGEMM=auto: the table in csrc/backends/cpu/cpu_sgemm_dnnl.c; openblas: every panel on
# OpenBLAS, the path before it), against PyTorch and NumPy in the same process.
#
#   PYTHONPATH=. python benchmarks/bench_sgemm_paths.py [--threads 1 2] [--rounds 5]
#   ... --tiny --rounds 1      # smoke: two small shapes, no figures worth reading
#
# Each path runs in a child process (PYGPU_SGEMM is read once), the paths alternating, two
# children each; each child times pygpu, torch and NumPy in alternating blocks. Figures are
# the least process CPU time per call (time.process_time, every thread; --clock wall: elapsed
# time): on a shared machine the figure its load disturbs least (the load average is
# printed). % of peak is GFLOP per CPU-second over benchmarks/_fma_peak.py's measured FMA
# peak of one core (--clock wall: per second over that of all the threads' cores). The children unset
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (benchmarks/README.md: they pin a foreign kernel).
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (name, M, K, N, op(A) transposed, op(B) transposed): C (M, N) = op(A) @ op(B)
SHAPES = [("n = 512", 512, 512, 512, 0, 0),
          ("LSTM decoder fwd @32", 1120, 512, 10000, 0, 1),
          ("LSTM decoder dX @32", 1120, 10000, 512, 0, 0),
          ("LSTM decoder dW @32", 10000, 1120, 512, 1, 0),
          ("LSTM decoder batch 1", 35, 512, 10000, 0, 1),
          ("GPT qkv @8", 2048, 384, 1152, 0, 1),
          ("GPT fc dW @8", 1536, 2048, 384, 1, 0),
          ("ViT fc @32", 2080, 192, 768, 0, 1),
          ("ViT qkv batch 1", 65, 192, 576, 0, 1),
          ("ViT fc batch 1", 65, 192, 768, 0, 1),
          ("ViT fc2 batch 1", 65, 768, 192, 0, 1),
          ("MLP fc1 fwd @64", 64, 784, 512, 0, 1),
          ("MLP fc2 dX @64", 64, 512, 512, 0, 0),
          ("MLP fc1 dW @64", 512, 64, 784, 1, 0)]
TINY = [("tiny a", 40, 30, 20, 0, 1), ("tiny b", 130, 64, 17, 1, 0)]

CHILD = r"""
import json, os, sys, time
import numpy as np
import threadpoolctl, torch, pygpu
shapes, threads, rounds = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
clock = time.perf_counter if sys.argv[4] == "wall" else time.process_time
pygpu.set_num_threads(threads)
torch.set_num_threads(threads)
threadpoolctl.threadpool_limits(threads)
rng = np.random.default_rng(0)

def least(fn, reps):
    fn()
    best = float("inf")
    for _ in range(rounds):
        t = clock()
        for _ in range(reps):
            fn()
        best = min(best, (clock() - t) / reps)
    return best

out = []
for name, M, K, N, ta, tb in shapes:
    A = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)
    B = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    na, nb = (A.T if ta else A), (B.T if tb else B)
    pa, pb = pygpu.tensor(A), pygpu.tensor(B)
    pa, pb = (pa.t() if ta else pa), (pb.t() if tb else pb)
    xa, xb = torch.from_numpy(A), torch.from_numpy(B)
    xa, xb = (xa.t() if ta else xa), (xb.t() if tb else xb)
    ref = na.astype(np.float64) @ nb.astype(np.float64)
    np.testing.assert_allclose((pa @ pb).numpy(), ref, rtol=1e-4, atol=1e-3 * (1 + K ** 0.5))
    reps = max(2, int(2e8 / (2 * M * N * K)))
    t = {"pygpu": [], "torch": [], "numpy": []}
    for _ in range(2):  # the sides alternate block by block
        t["pygpu"].append(least(lambda: pa @ pb, reps))
        t["torch"].append(least(lambda: xa @ xb, reps))
        t["numpy"].append(least(lambda: na @ nb, reps))
    out.append({k: min(v) for k, v in t.items()})
print("JSON " + json.dumps({"rows": out, "load": os.getloadavg()[0]}))
"""


def child(mode, shapes, threads, rounds, clock):
    env = dict(os.environ, PYGPU_SGEMM=mode)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(shapes), str(threads), str(rounds), clock],
                       env=env, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"child ({mode}) failed:\n{p.stderr[-3000:]}")
    return json.loads(next(x for x in p.stdout.splitlines() if x.startswith("JSON "))[5:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--paths", nargs=2, default=["auto", "openblas"],
                    choices=("auto", "openblas", "dnnl"),
                    help="the two PYGPU_SGEMM paths compared (the second is the baseline)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: process CPU time (every thread); wall: elapsed time, for 2+ "
                         "threads at sub-millisecond calls, where the CPU time of the pool's "
                         "other threads is not yet counted when the call returns")
    a = ap.parse_args()
    shapes = TINY if a.tiny else SHAPES
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _fma_peak
    core_peak = _fma_peak.peak(1, iters=2_000_000 if a.tiny else 20_000_000)[0]  # GFLOP/s
    for th in a.threads:
        best = {}
        loads = []
        new, old = a.paths
        for mode in (new, old, new, old):
            r = child(mode, shapes, th, a.rounds, a.clock)
            loads.append(r["load"])
            prev = best.get(mode)
            best[mode] = r["rows"] if prev is None else [
                {k: min(x[k], y[k]) for k in x} for x, y in zip(prev, r["rows"])]
        print(f"\n### float32 matmul per GEMM path, {th} thread(s), PYGPU_ISA="
              f"{os.environ.get('PYGPU_ISA', '(unset)')} (load average "
              f"{min(loads):.1f}-{max(loads):.1f}; one core's FMA peak {core_peak:.0f} GFLOP/s "
              f"per CPU-second; {a.clock} ms per call, least of {a.rounds} blocks x 4 children; % of "
              f"peak: GFLOP per {a.clock} second over {'one core' if a.clock == 'cpu' else f'{th} cores'}'s "
              f"peak)\n")
        print(f"| shape | M x K x N | pygpu {new} | pygpu {old} | torch | NumPy "
              f"| % of peak {new} / {old} / torch / NumPy | torch/{new} | NumPy/{new} "
              f"| {old}/{new} |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for (name, M, K, N, ta, tb), ra, ro in zip(shapes, best[new], best[old]):
            fl = 2 * M * N * K
            cores = 1 if a.clock == "cpu" else th
            pct = lambda s: f"{fl / s / 1e9 / (core_peak * cores) * 100:.0f}%"
            print(f"| {name} | {M} x {K} x {N}{' (A^T)' if ta else ''}{' (B^T)' if tb else ''} "
                  f"| {ra['pygpu'] * 1e3:.3f} | {ro['pygpu'] * 1e3:.3f} | {ra['torch'] * 1e3:.3f} "
                  f"| {ra['numpy'] * 1e3:.3f} | {pct(ra['pygpu'])} / {pct(ro['pygpu'])} / "
                  f"{pct(ra['torch'])} / {pct(ra['numpy'])} | {ra['torch'] / ra['pygpu']:.2f}x "
                  f"| {ra['numpy'] / ra['pygpu']:.2f}x | {ro['pygpu'] / ra['pygpu']:.2f}x |",
                  flush=True)


if __name__ == "__main__":
    main()
