# bench_conv_paths.py - issue 45: a model's training step with pygpu's CPU convolutions on each
# path (pygpu.backends.mkldnn.set_conv_path: "own" = pygpu's kernels only, "auto" = the
# choice table of csrc/backends/cpu/cpu_conv_dnnl.c, "dnnl" = oneDNN wherever it takes the
# shape) and torch's step, all in ONE process, their blocks rotating in each round
# (bench_models.alternate: a pause before each block), so the paths are compared at one load.
# Prints each side's least and median process CPU ms per step, torch/pygpu for each path, and
# how many nodes oneDNN ran.
#   PYTHONPATH=. python benchmarks/bench_conv_paths.py [--rows resnet18@32,mobilenetv2@32]
#       [--threads 1] [--rounds 5] [--steps 1]
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models as B  # noqa: E402

PATHS = ("own", "auto", "dnnl")


def on_path(block, path):
    from pygpu.backends import mkldnn

    def run(n):
        before = mkldnn.set_conv_path(path)
        try:
            return block(n)
        finally:
            mkldnn.set_conv_path(before)
    return run


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="resnet18@32,mobilenetv2@32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--tiny", action="store_true", help="tiny shapes (a smoke run)")
    a = ap.parse_args(argv)
    libs = B.load_libs(["pygpu", "torch"])
    B.set_threads(libs, a.threads)
    pygpu, torch = libs["pygpu"], libs["torch"]
    from pygpu.backends import mkldnn
    sizes = B.M.TINY if a.tiny else B.M.FULL
    print(f"threads {a.threads}, rounds {a.rounds}, {a.steps} steps a block, process CPU ms per "
          f"step; oneDNN {mkldnn.version()}, isa {pygpu.cpu_isa()}, load "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}")
    print("| row | " + " | ".join(f"pygpu {p} least / median" for p in PATHS)
          + " | torch least / median | " + " | ".join(f"torch/{p} (median)" for p in PATHS)
          + " | oneDNN nodes |")
    print("|---|" + "---|" * (2 * len(PATHS) + 2))
    for row in a.rows.split(","):
        name, batch = B.parse_row(row)
        state = B.state_of(B.build(pygpu, name, sizes[name]))
        pg = B.train_block(pygpu, name, sizes[name], batch, state)
        blocks = {p: on_path(pg, p) for p in PATHS}
        blocks["torch"] = B.train_block(torch, name, sizes[name], batch, state)
        c0 = mkldnn.calls()
        _, cpu = B.alternate(blocks, a.rounds, a.steps)
        med = {k: statistics.median(v) * 1e3 for k, v in cpu.items()}
        cells = [f"{min(cpu[k]) * 1e3:.1f} / {med[k]:.1f}" for k in blocks]
        ratios = [f"{med['torch'] / med[p]:.2f}x" for p in PATHS]
        print(f"| {row} | " + " | ".join(cells) + " | " + " | ".join(ratios)
              + f" | {mkldnn.calls() - c0} |", flush=True)


if __name__ == "__main__":
    main()
