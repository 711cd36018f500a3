# perf_outside_nodes.py - where a pygpu training step's CPU goes: inside the cpu device's nodes or
# outside them (the Python layer, the backward engine, the bindings), by sampling one process
# with Linux perf (issue 45). The step runs in a child process; once it is warm, perf attaches
# to it for --steps steps and is stopped by the child before it exits (so the interpreter's
# shutdown is not counted). A sample is in a node when its stack holds `cpu_launch` (the cpu
# backend's entry: the node's waits and kernel), or in oneDNN when its leaf is JIT code (no
# unwind tables: the stack stops there) or its stack is in libdnnl or libgomp; a pool
# worker's sample is a task or a wait.
#
#   PYTHONPATH=. python benchmarks/perf_outside_nodes.py resnet18@32 --threads 1 --steps 3
#
# Needs `perf` with permission to attach (perf_event_paranoid <= 2 for one's own process) and
# frame information for the unwinder (--call-graph dwarf). Process CPU samples, so the shares
# hold on a loaded machine.
import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time

# the child: build the row's step, warm it, signal the parent, wait for perf, run the steps,
# stop perf, report its CPU time per step
CHILD = r"""
import os, signal, sys, time
sys.path.insert(0, {bench!r})
import bench_models as B, _models as M
import pygpu
pygpu.set_num_threads({threads})
name, batch = B.parse_row({row!r})
block = B.train_block(pygpu, name, M.FULL[name], batch, None)
block(2)
open({ready!r}, "w").write("ready")
while not os.path.exists({perfpid!r}) or not open({perfpid!r}).read().strip():
    time.sleep(0.05)
time.sleep(1.0)  # perf's start-up
t = time.process_time()
block({steps})
cpu = (time.process_time() - t) / {steps}
os.kill(int(open({perfpid!r}).read()), signal.SIGINT)
print(f"{{cpu * 1e3:.1f}}")
"""

def _jit_leaf(joined):
    """Whether the sample's innermost user-space frame is code no file holds: JIT code
    (perf names it `[unknown]`, in a /tmp/perf-PID.map or an anonymous mapping)."""
    for frame in joined.split(" | "):
        if "[kernel.kallsyms]" in frame:
            continue  # an interrupt or a page fault taken in the frame below
        return "[unknown]" in frame and ("perf-" in frame or "anon" in frame or
                                         "([unknown])" in frame)
    return False


# what a sample's stack says, first match wins (the stack as one string of symbol names)
CATEGORIES = (
    ("pool worker: task", lambda j: "worker_main" in j and "run_task" in j),
    ("pool worker: waiting for a job", lambda j: "worker_main" in j),
    ("in nodes", lambda j: "cpu_launch" in j),
    # oneDNN's kernels are JIT code with no unwind tables: the unwinder stops in them, so
    # their samples never reach cpu_launch (they read as "Python interpreter" before)
    ("in oneDNN (JIT code or libdnnl/libgomp, unwound no further)",
     lambda j: _jit_leaf(j) or "libdnnl" in j or "libgomp" in j),
    ("python gc", lambda j: "gc_collect" in j),
    ("backward engine outside nodes", lambda j: "pg_ag_backward" in j),
    ("other pygpu C outside nodes", lambda j: "_C.cpython" in j or "pygpu/_C" in j),
    ("Python interpreter", lambda j: True),
)


def classify(stacks):
    """{thread id: Counter(category: samples)} from (tid, [frame text, ...]) pairs."""
    out = collections.defaultdict(collections.Counter)
    for tid, frames in stacks:
        joined = " | ".join(frames)
        cat = next(name for name, test in CATEGORIES if test(joined))
        out[tid][cat] += 1
    return out


def read_stacks(data):
    text = subprocess.run(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso"],
                          capture_output=True, text=True, check=True).stdout
    for block in text.split("\n\n"):
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if lines:
            yield lines[0].split()[0], lines[1:]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("row", help="MODEL@BATCH, as bench_models.py's rows")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--freq", type=int, default=999)
    args = ap.parse_args(argv)
    bench = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        ready, perfpid, data = (os.path.join(tmp, n) for n in ("ready", "perfpid", "perf.data"))
        child = subprocess.Popen([sys.executable, "-c", CHILD.format(
            bench=bench, threads=args.threads, row=args.row, ready=ready, perfpid=perfpid,
            steps=args.steps)], stdout=subprocess.PIPE, text=True)
        while not os.path.exists(ready):
            if child.poll() is not None:
                raise SystemExit("the step's process ended before it was warm")
            time.sleep(0.1)
        perf = subprocess.Popen(["perf", "record", "-q", "-o", data, "-F", str(args.freq),
                                 "--call-graph", "dwarf,16384", "-p", str(child.pid)])
        with open(perfpid, "w") as f:
            f.write(str(perf.pid))
        cpu_ms = child.communicate()[0].strip()
        perf.wait()
        if perf.returncode not in (0, -signal.SIGINT):
            raise SystemExit(f"perf record failed ({perf.returncode})")
        per_thread = classify(read_stacks(data))
    load = os.getloadavg()[0]
    print(f"\n{args.row}, {args.threads} thread(s): {cpu_ms} CPU ms per step (load {load:.1f})\n")
    print("| thread | samples | " + " | ".join(name for name, _ in CATEGORIES) + " |")
    print("|---" * (len(CATEGORIES) + 2) + "|")
    for tid, counts in sorted(per_thread.items(), key=lambda kv: -sum(kv[1].values())):
        n = sum(counts.values())
        cells = " | ".join(f"{counts[name] / n * 100:.1f}%" for name, _ in CATEGORIES)
        print(f"| {tid} | {n} | {cells} |")


if __name__ == "__main__":
    main()
