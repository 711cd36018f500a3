"""cuda_build_times.py - where the CUDA plugin's build time goes: each kernel file compiled
with the build's own flags for a chosen set of targets, timed in CPU seconds (user + sys of
nvcc and every tool it runs), with nvcc's per-phase split (cicc, ptxas per arch; `nvcc -time`).

CPU seconds, not wall: the machines this was measured on are shared, so wall time says how
busy the neighbours were; CPU seconds add up to the build's wall time on an idle machine
divided by the cores it keeps busy. docs/benchmarks.md ("The first command") quotes it.

    python build_support/cuda_build_times.py [--targets TARGETS] [--jobs N] [--files a.cu,b.cu]

TARGETS is a cuda_build target list (see cuda_build.resolve_targets), e.g. "80;90" (SASS for
both + compute_90 PTX, the full build), "90" or "ptx80" (compute_80 PTX only).
Objects go to a temporary directory; the object cache is not used.
"""
import argparse
import concurrent.futures
import csv
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_build  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cpu_run(cmd):
    """(user + sys seconds of cmd and its children, wall seconds, exit status)."""
    import time
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.stderr.write(out.decode(errors="replace"))
    return usage.ru_utime + usage.ru_stime, time.monotonic() - t0, proc.returncode


def _phases(csv_path):
    """{"cicc compute_80": ms, "ptxas sm_90": ms, ...} from nvcc's -time file (wall per phase)."""
    out = {}
    with open(csv_path) as f:
        rows = list(csv.reader(f))
    for row in rows[1:]:
        if len(row) < 8:
            continue
        phase, arch, ms = row[1].strip(), row[4].strip(), float(row[6])
        key = phase.split(" (")[0] + (" " + arch if phase in ("cicc", "ptxas") else "")
        out[key] = out.get(key, 0.0) + ms
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", default=None, help="e.g. 80;90 or ptx80 (default: the build's)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--files", default=None, help="comma-separated kernel file names")
    args = p.parse_args(argv)
    toolkit = cuda_build.find_toolkit()
    cublas = cuda_build.find_cublas(toolkit) if toolkit else None
    if toolkit is None or cublas is None:
        print("no CUDA toolkit or cuBLAS found", file=sys.stderr)
        return 1
    targets = cuda_build.resolve_targets(args.targets.split(";") if args.targets else None, env={})
    flags = cuda_build.nvcc_flags(targets) + cuda_build.include_flags(REPO, toolkit, cublas)
    files = sorted(glob.glob(os.path.join(REPO, "csrc", "backends", "cuda", "kernels", "*.cu")))
    if args.files:
        want = set(args.files.split(","))
        files = [f for f in files if os.path.basename(f) in want]
    tmp = tempfile.mkdtemp(prefix="pygpu-cuda-times-")

    def one(src):
        name = os.path.basename(src)
        obj, times = os.path.join(tmp, name + ".o"), os.path.join(tmp, name + ".csv")
        cpu, wall, rc = _cpu_run([toolkit["nvcc"]] + flags + ["-c", src, "-o", obj,
                                                               "-time", times])
        if rc != 0:
            raise SystemExit(f"{name}: nvcc failed")
        return name, cpu, wall, _phases(times), os.path.getsize(obj)

    print(f"targets {cuda_build.describe_targets(targets)}; {args.jobs} at a time; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    total = 0.0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for name, cpu, wall, ph, size in pool.map(one, files):
            total += cpu
            split = ", ".join(f"{k} {v / 1e3:.1f}" for k, v in sorted(ph.items())
                              if k.startswith(("cicc", "ptxas")))
            print(f"{name:28s} cpu {cpu:7.1f} s  wall {wall:7.1f} s  {size / 2**20:6.1f} MiB  "
                  f"(wall per phase, s: {split})", flush=True)
    print(f"total: {total:.1f} CPU seconds over {len(files)} kernel files; load "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
