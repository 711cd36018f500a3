"""coverage_diff.py - does a new test suite reach every line of csrc/ that the old one did?

    python build_support/coverage_diff.py [--old REF] [-n JOBS] [--workdir DIR] [--keep]
                                          [--report FILE] [--save-old F | --load-old F]

Builds the C core once with gcov's instrumentation (setup.py's PYGPU_COVERAGE=1, CUDA off)
in a copy of this working tree, then runs two suites against that one build:
  - old: tests/ as it was at REF (default: the merge base of HEAD and main);
  - new: tests/ as it is in the working tree.
Each suite runs the lanes of .ci/run that exercise the C core's kernels through pytest
(LANES below: the README's `pytest`, and the op-table cases per forced CPU ISA level, which
the old suite ran as the whole op table and the new one runs as the semantics sum only).
After each, gcov reads the counters and the script keeps the set of csrc/ lines executed.
(--save-old F keeps the old suite's lines in F, and --load-old F reads them instead of
running the old suite again: the old side takes the longest and does not change while
the new suite is being written.)
It prints the lines the old suite ran and the new one does not ("lost"), file by file, and
the count the new one runs in addition ("gained"); it exits 1 when a line is lost.

What it does not cover: the CUDA plugin (compiled into its own library; the emulated-CUDA
lane's lines are not instrumented) and the sanitizer and SIMDe builds of .ci/run (the same
sources as this build: the SIMDe lanes differ only in which intrinsics header they take).
Both suites run the same build, so the comparison is fair whatever -O level gcov sees.
gcov writes a process's counters when it exits: pytest-xdist kills a worker that takes more
than 10 s to exit (a loaded, niced machine), and with it the counters of every test the
worker ran, so each pytest here loads coverage_workers.py, which waits for the workers and
reports a kill as a failure (the run's counts are then a floor, not a measurement).
Test-time only; needs gcc's gcov (the one that compiled the core).
"""
import argparse
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ISA_LEVELS = ["baseline", "avx2", "avx512", "avx512_bf16"]

# lane name -> (the tests it runs in the old suite, in the new suite, whether once per
# ISA level below the detected one, pytest options). A path missing from a suite is left out
# of its lane (the old ISA lane: the whole op table where the ref still has it, and the
# semantics file, which refs after the op table's split have instead). The ISA lanes run on
# cpu only: sim runs the same CPU kernels through its queue, whose lines do not depend on the
# ISA level and run in the suite lane.
LANES = {
    "suite": (["tests"], ["tests"], False, []),
    "isa": (["tests/test_ops_table.py", "tests/test_ops_semantics.py"], ["tests/test_ops_semantics.py"],
            True, ["--device", "cpu"]),
}


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, **kw)


def copy_tree(dst):
    """The working tree's tracked and untracked-not-ignored files (what CI's clone has,
    plus uncommitted work), without build outputs."""
    files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        rel = f.decode()
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue  # deleted in the work tree
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, rel))


def old_tests(ref, dst):
    """tests/ at git ref `ref`, unpacked into dst/tests."""
    archive = subprocess.run(["git", "archive", ref, "tests"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dst], input=archive, check=True)


def build(work):
    env = dict(os.environ, PYGPU_CUDA="0", PYGPU_COVERAGE="1")
    r = run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=work, env=env)
    if r.returncode:
        sys.exit("coverage_diff: the instrumented build failed")


def detected_isa(work):
    out = subprocess.run([sys.executable, "-c", "import pygpu; print(pygpu.cpu_isa(detected=True))"],
                         cwd=work, check=True, capture_output=True, text=True).stdout.strip()
    return ISA_LEVELS[:ISA_LEVELS.index(out)]


def run_suite(work, which, jobs, log):
    """Every lane of one suite (which: 0 old, 1 new); a failing test does not stop it (its
    lines still count), but it is reported."""
    failures = []
    lower = detected_isa(work)
    for lane, spec in LANES.items():
        paths = [p for p in spec[which] if os.path.exists(os.path.join(work, p))]
        if not paths:
            continue
        for isa in (lower if spec[2] else [None]):
            env = dict(os.environ)
            env.pop("PYGPU_ISA", None)
            if isa:
                env["PYGPU_ISA"] = isa
            # coverage_workers.py: pytest-xdist's workers are waited for, not killed before gcov
            # writes their counters; a kill all the same is noted in `killed`
            env["PYTHONPATH"] = os.pathsep.join(filter(None, (os.path.join(work, "build_support"),
                                                              env.get("PYTHONPATH"))))
            killed = os.path.join(work, "killed_workers.txt")
            env["PYGPU_COVERAGE_KILLED"] = killed
            if os.path.exists(killed):
                os.remove(killed)
            cmd = ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                    "coverage_workers", "-n", str(jobs)] + spec[3] + paths)
            t0 = time.time()
            with open(log, "a") as f:
                f.write(f"\n=== {lane} {isa or ''}: {' '.join(cmd)}\n")
                f.flush()
                r = run(cmd, cwd=work, env=env, stdout=f, stderr=subprocess.STDOUT)
            print(f"    {lane} {isa or ''}: exit {r.returncode}, {time.time() - t0:.0f}s", flush=True)
            if r.returncode:
                failures.append(f"{lane} {isa or ''} (exit {r.returncode})")
            if os.path.exists(killed):  # that worker's lines are missing: the counts are a floor
                failures.append(f"{lane} {isa or ''}: a worker was killed, its counters lost")
    return failures


def covered_lines(work):
    """{csrc-relative path: (executed lines, executable lines)} from every .gcda under build/."""
    gcdas = glob.glob(os.path.join(work, "build", "**", "*.gcda"), recursive=True)
    if not gcdas:
        sys.exit("coverage_diff: no .gcda files: did the instrumented module run?")
    out = {}
    for gcda in gcdas:
        with tempfile.TemporaryDirectory() as tmp:  # one at a time: gcov names its output
            r = subprocess.run(["gcov", "--json-format", "-o", os.path.dirname(gcda), gcda],
                               cwd=tmp, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"coverage_diff: gcov failed on {gcda}:\n{r.stderr}")
            for js in glob.glob(os.path.join(tmp, "*.gcov.json.gz")):
                with gzip.open(js, "rt") as f:
                    doc = json.load(f)
                for fdoc in doc["files"]:
                    path = os.path.normpath(os.path.join(doc.get("current_working_directory", work),
                                                         fdoc["file"]))
                    rel = os.path.relpath(path, work)
                    if not rel.startswith("csrc" + os.sep):
                        continue  # system headers (NumPy's, Python's)
                    hit, lines = out.setdefault(rel, (set(), set()))
                    for ln in fdoc["lines"]:
                        lines.add(ln["line_number"])
                        if ln["count"] > 0:
                            hit.add(ln["line_number"])
    return out


def reset_counters(work):
    for gcda in glob.glob(os.path.join(work, "build", "**", "*.gcda"), recursive=True):
        os.remove(gcda)


def source_line(work, rel, n):
    try:
        with open(os.path.join(work, rel)) as f:
            return f.readlines()[n - 1].rstrip()
    except (OSError, IndexError):
        return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--old", default=None, help="git ref of the old suite (default: merge-base HEAD main)")
    ap.add_argument("-n", "--jobs", type=int, default=2, help="pytest-xdist workers")
    ap.add_argument("--workdir", default=None, help="where to build (default: a temporary dir)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("--report", default=None, help="also write the report to this file")
    ap.add_argument("--save-old", default=None, help="write the old suite's lines to this JSON file")
    ap.add_argument("--load-old", default=None, help="read the old suite's lines from this JSON file")
    args = ap.parse_args()

    ref = args.old or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, check=True,
                                     capture_output=True, text=True).stdout.strip()
    work = args.workdir or tempfile.mkdtemp(prefix="pygpu-coverage-")
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "pytest.log")
    print(f"coverage_diff: old suite at {ref}, new suite from the working tree; work dir {work}")
    copy_tree(work)
    new_tests = os.path.join(work, "tests.new")
    os.rename(os.path.join(work, "tests"), new_tests)
    build(work)

    results, failures = [], []
    sides = ((0, "old"), (1, "new"))
    if args.load_old:
        with open(args.load_old) as f:
            saved = json.load(f)
        ref = saved["ref"]
        results.append({rel: (set(h), set(e)) for rel, (h, e) in saved["lines"].items()})
        sides = sides[1:]
    for which, label in sides:
        shutil.rmtree(os.path.join(work, "tests"), ignore_errors=True)
        if which == 0:
            old_tests(ref, work)
        else:
            shutil.copytree(new_tests, os.path.join(work, "tests"))
        reset_counters(work)
        print(f"--- the {label} suite", flush=True)
        failures += [f"{label}: {f}" for f in run_suite(work, which, args.jobs, log)]
        results.append(covered_lines(work))
        if which == 0 and args.save_old:
            with open(args.save_old, "w") as f:
                json.dump({"ref": ref, "lines": {rel: (sorted(h), sorted(e)) for rel, (h, e)
                                                 in results[0].items()}}, f)

    old, new = results
    lost, gained, total_old, total_new = {}, 0, 0, 0
    for rel in sorted(set(old) | set(new)):
        o = old.get(rel, (set(), set()))[0]
        n = new.get(rel, (set(), set()))[0]
        total_old += len(o)
        total_new += len(n)
        gained += len(n - o)
        if o - n:
            lost[rel] = sorted(o - n)
    lines = [f"coverage_diff: csrc/ lines executed: old suite ({ref[:12]}) {total_old}, "
             f"new suite {total_new}; lost {sum(map(len, lost.values()))}, gained {gained}"]
    for rel, ns in lost.items():
        lines.append(f"  lost in {rel}:")
        lines += [f"    {n}: {source_line(work, rel, n).strip()}" for n in ns]
    if failures:
        lines.append("test failures (their lines still count): " + "; ".join(failures))
    report = "\n".join(lines)
    print(report)
    if args.report:
        with open(args.report, "w") as f:
            f.write(report + "\n")
    if not args.keep and not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"work dir kept: {work} (pytest output in {log})")
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
