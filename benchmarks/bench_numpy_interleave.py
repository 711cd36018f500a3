# bench_numpy_interleave.py - pygpu's cpu matmul when NumPy's matmul runs between its calls.
#
# NumPy's OpenBLAS (numpy.libs/libscipy_openblas64_*, one thread per core) keeps its idle
# threads spinning for a while after each call (OpenBLAS's thread timeout, about 0.1 s by
# default) before they sleep. pygpu's matmul on the cpu device cuts the product into panels
# over its own pool (one thread per core, each panel one single-threaded call into pygpu's
# own OpenBLAS, scipy_openblas32). Alternate the two, as a notebook or a benchmark that
# interleaves does, and NumPy's spinning threads hold the cores pygpu's pool wants.
#
# Each configuration runs in a fresh interpreter and, for each n, times:
#   block        pygpu's calls in a block of their own, then NumPy's (0.3 s pause between
#                blocks, so the other side's threads are asleep): each side's own speed;
#   interleaved  pygpu, NumPy, pygpu, NumPy, ... each call timed alone.
# Three rounds; the medians are reported. The configurations are the environment fixes:
#   default                  nothing set: `import pygpu` makes NumPy's OpenBLAS threads sleep
#                            after 2^16 cycles of idling (pygpu/_numpy_blas.py, issue 45)
#   OPENBLAS_THREAD_TIMEOUT=28  OpenBLAS's own default, set by the user, so pygpu leaves it:
#                            the behaviour before issue 45
#   OPENBLAS_THREAD_TIMEOUT=4  NumPy's OpenBLAS threads sleep after 2^4 cycles of idling
#   OPENBLAS_NUM_THREADS=1   NumPy's OpenBLAS runs single-threaded (pygpu's is anyway)
#   threadpoolctl            NumPy's BLAS limited to one thread inside the loop only
#                            (threadpool_limits(1, user_api="blas"); pygpu puts its own
#                            OpenBLAS back to one thread per call by itself)
#
#     python benchmarks/bench_numpy_interleave.py [--sizes 256 384 512] [--reps 30]
#
# It is a script, not a pytest-benchmark file: the point is the interleaving, which
# pytest-benchmark (one function per benchmark, run in a block) cannot express.
import argparse
import json
import os
import subprocess
import sys
import time

CONFIGS = [
    ("default", {}, False),  # pygpu's own fix: NumPy's threads sleep after 2^16 cycles
    ("OPENBLAS_THREAD_TIMEOUT=28", {"OPENBLAS_THREAD_TIMEOUT": "28"}, False),  # before it
    ("OPENBLAS_THREAD_TIMEOUT=4", {"OPENBLAS_THREAD_TIMEOUT": "4"}, False),
    ("OPENBLAS_NUM_THREADS=1", {"OPENBLAS_NUM_THREADS": "1"}, False),
    ("threadpoolctl", {}, True),
]

CHILD = r"""
import contextlib, json, sys, time
import numpy as np
import pygpu

sizes, reps, limit = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
ctx = contextlib.nullcontext()
if limit:
    from threadpoolctl import threadpool_limits
    ctx = threadpool_limits(1, user_api="blas")


def one(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


out = {"threads": pygpu.get_num_threads(), "rows": []}
with ctx:
    for n in sizes:
        a = np.random.default_rng(n).standard_normal((n, n), dtype=np.float32)  # (n, n)
        pa = pygpu.from_numpy(a)                                                # (n, n) cpu
        np.testing.assert_allclose((pa @ pa).numpy(), a @ a, rtol=1e-3, atol=1e-2 * n ** 0.5)
        f_pg, f_np = (lambda: pa @ pa), (lambda: a @ a)
        for _ in range(3):
            f_pg(), f_np()
        t = {"pg_block": [], "np_block": [], "pg_inter": [], "np_inter": []}
        for _ in range(3):
            time.sleep(0.3)
            t["pg_block"].append(float(np.median([one(f_pg) for _ in range(reps)])))
            time.sleep(0.3)
            t["np_block"].append(float(np.median([one(f_np) for _ in range(reps)])))
            time.sleep(0.3)
            pg, nq = [], []
            for _ in range(reps):
                pg.append(one(f_pg))
                nq.append(one(f_np))
            t["pg_inter"].append(float(np.median(pg)))
            t["np_inter"].append(float(np.median(nq)))
        out["rows"].append({"n": n, **{k: float(np.median(v)) for k, v in t.items()}})
print("JSON " + json.dumps(out))
"""


def run(config_env, limit, sizes, reps):
    env = dict(os.environ, **config_env)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # see README: pins a foreign kernel
        env.pop(k, None)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(sizes), str(reps), "1" if limit else "0"],
                       env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"child failed:\n{r.stderr[-3000:]}")
    line = next(x for x in r.stdout.splitlines() if x.startswith("JSON "))
    return json.loads(line[5:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 384, 512])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--configs", nargs="+", default=[c[0] for c in CONFIGS])
    args = ap.parse_args(argv)
    print(f"CPU: {os.cpu_count()} logical cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("times are medians per call (ms); ratio pygpu/NumPy < 1: pygpu faster; "
          "slowdown: pygpu interleaved / pygpu in its block")
    for name, env, limit in CONFIGS:
        if name not in args.configs:
            continue
        res = run(env, limit, args.sizes, args.reps)
        print(f"\n{name} (pygpu threads {res['threads']})")
        print(f"  {'n':>5} {'pygpu blk':>10} {'numpy blk':>10} {'pygpu int':>10} {'numpy int':>10}"
              f" {'pg/np blk':>10} {'pg/np int':>10} {'slowdown':>9}")
        for r in res["rows"]:
            print(f"  {r['n']:>5} {r['pg_block'] * 1e3:>10.3f} {r['np_block'] * 1e3:>10.3f}"
                  f" {r['pg_inter'] * 1e3:>10.3f} {r['np_inter'] * 1e3:>10.3f}"
                  f" {r['pg_block'] / r['np_block']:>10.2f} {r['pg_inter'] / r['np_inter']:>10.2f}"
                  f" {r['pg_inter'] / r['pg_block']:>9.2f}")


if __name__ == "__main__":
    main()
