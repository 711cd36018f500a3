"""run_corpus.py - run the corpus of real PyTorch programs (tests/corpus/programs/, listed
in manifest.py) under pygpu and under torch, and compare what they print.

Each program is a copy of a public program with only the edits its manifest entry lists
(its imports spelled `import pygpu as torch`, downloads replaced by random tensors of the
same shapes, epochs and sizes cut). The torch run is the same file with those import lines
spelled back to torch (to_torch below): nothing else differs between the two runs.

run(entry, lib, same_random) runs one program in a subprocess (its own interpreter, so a
program's global settings stay its own) from a scratch directory, and returns
(returncode, stdout, stderr). With same_random, tests/corpus/same_random.py gives both
runs one random stream; compare() then checks every number the two runs printed.

The programs themselves are not in the repository (they are other projects' code, and
fetched code is never committed): they are read from tests/corpus/programs/ (git-ignored),
or from the folder PYGPU_CORPUS_DIR names. missing() says which are absent, and
where_from() how to get them (docs/pytorch.md, "The corpus").

    python tests/corpus/run_corpus.py                 # every program, a table of results
    python tests/corpus/run_corpus.py ex_gat tut_polynomial_optim --show   # some, with output
    python tests/corpus/run_corpus.py --table         # docs/pytorch.md's table, from the manifest
    python tests/corpus/run_corpus.py --sources       # git commands that fetch the originals
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = os.environ.get("PYGPU_CORPUS_DIR") or os.path.join(HERE, "programs")
sys.path.insert(0, HERE)

from manifest import PROGRAMS as MANIFEST  # noqa: E402


def listed_files():
    """Every file the manifest names: the programs and their sibling modules."""
    return [e["file"] for e in MANIFEST] + [w for e in MANIFEST for w in e.get("with", ())]


def missing():
    """The listed files the programs folder lacks (all of them in a fresh clone)."""
    return [f for f in listed_files() if not os.path.isfile(os.path.join(PROGRAMS, f))]


def where_from(absent):
    """What to tell a developer whose programs folder lacks `absent`."""
    names = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
    return (f"the corpus programs are missing from {PROGRAMS}: {names} "
            f"({len(absent)} of {len(listed_files())} files). They are not in the repository: "
            f"they are copies of other projects' code (pytorch/examples, pytorch/tutorials, "
            f"yunjey/pytorch-tutorial, jcjohnson/pytorch-examples), and fetched code is never "
            f"committed. Copy an edited set into that folder (or point PYGPU_CORPUS_DIR at "
            f"one), or rebuild it: `python tests/corpus/run_corpus.py --sources` prints the git "
            f"commands that fetch each original at the manifest's commit; then make the edits "
            f"tests/corpus/manifest.py lists for it (docs/pytorch.md, \"The corpus\").")


def sources(folder="corpus-sources"):
    """Shell commands that fetch every original (and its sibling modules) at its manifest
    commit into PROGRAMS, under the manifest's file names, unedited: the edits, and the
    header naming the source and its license, are then made by hand as the manifest says."""
    lines, cloned = [f"mkdir -p {folder} {PROGRAMS}"], set()
    for e in MANIFEST:
        repo = e["repo"]
        clone = os.path.join(folder, repo.replace("/", "__"))
        if repo not in cloned:
            cloned.add(repo)
            lines.append(f"git clone -q https://github.com/{repo} {clone}")
        # a sibling module `<program>__<name>.py` is <name>.py beside the program's source
        for name, path in [(e["file"], e["path"])] + [
                (w, os.path.dirname(e["path"]) + "/" + w.split("__", 1)[1])
                for w in e.get("with", ())]:
            lines.append(f"git -C {clone} show {e['commit']}:{path} > "
                         f"{os.path.join(PROGRAMS, name)}")
    return "\n".join(lines) + "\n"

# `import pygpu as torch`, `from pygpu import nn`, `import pygpu.nn.functional as F`, ...
_IMPORT = re.compile(r"^(\s*)(import|from)\s+pygpu(\b[\w.]*)(.*)$")


def to_torch(source):
    """The program as it was written for torch: its pygpu import lines spelled torch."""
    out = []
    for line in source.splitlines():
        m = _IMPORT.match(line)
        if m:
            rest = m.group(4)
            if m.group(2) == "import" and rest.strip() == "as torch":
                rest = ""
            line = f"{m.group(1)}{m.group(2)} torch{m.group(3)}{rest}"
        out.append(line)
    return "\n".join(out) + "\n"


_BOOT = """
import os, runpy, sys
sys.path.insert(0, {root!r}); sys.path.insert(1, {here!r})
if {same!r}:
    import same_random
    same_random.install({lib!r})
sys.argv = [{path!r}]
runpy.run_path({path!r}, run_name="__main__")
"""


def program_path(entry):
    return os.path.join(PROGRAMS, entry["file"])


def run(entry, lib, same_random=False, timeout=300):
    with open(program_path(entry)) as f:
        source = f.read()
    if lib == "torch":
        source = to_torch(source)
    with tempfile.TemporaryDirectory(prefix="corpus-") as work:
        for extra in entry.get("with", ()):  # the program's sibling modules (a model file)
            with open(os.path.join(PROGRAMS, extra)) as f:
                text = f.read()
            with open(os.path.join(work, extra.split("__", 1)[-1]), "w") as f:
                f.write(to_torch(text) if lib == "torch" else text)
        path = os.path.join(work, "main.py")
        with open(path, "w") as f:
            f.write(source)
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
        env.pop("PYGPU_ACCELERATOR", None)
        boot = _BOOT.format(root=ROOT, here=HERE, same=same_random, lib=lib, path=path)
        cmd = [sys.executable, "-c", boot]
        if entry.get("launch"):  # a torchrun program: under the launcher, its own arguments
            cmd = _launched(entry["launch"], path, env)
        try:
            p = subprocess.run(cmd, cwd=work, env=env, text=True,
                               capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            return 124, e.stdout or "", f"timed out after {timeout} s"
        return p.returncode, p.stdout, p.stderr


def _launched(launch, path, env):
    """The command that runs a torchrun program under pygpu.distributed.run; on cuda with no
    GPU here, on tests/cuda_emu's emulated GPUs and NCCL stand-in."""
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    if launch.get("device") == "cuda" and "PYGPU_CUDA_BACKEND_SO" not in env:
        import pygpu
        if not pygpu.cuda.is_available():
            sys.path.insert(0, os.path.join(ROOT, "tests", "cuda_emu"))
            import harness
            plugin = harness.build("current")
            env.update(PYGPU_CUDA_BACKEND_SO=plugin, PYGPU_NCCL_LIBRARY=plugin)
    return [sys.executable, "-m", "pygpu.distributed.run", "--nproc_per_node",
            str(launch["nproc_per_node"]), path, *launch.get("args", ())]


_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w])")


_DEVICE = re.compile(r"\b(?:sim|cuda|cpu)(?::\d+)?\b")


def numbers(text):
    """Every number printed, device names left out (pygpu may run on sim:0 where torch ran
    on the cpu: torch.accelerator)."""
    return [float(x) for x in _NUMBER.findall(_DEVICE.sub("", text))]


def compare(out_pygpu, out_torch, rtol, atol, mask=None):
    """None if every number printed matches within rtol/atol, else what differs. `mask`: a
    regular expression for what is not compared (a wall-clock time the program prints)."""
    if mask:
        out_pygpu, out_torch = re.sub(mask, "", out_pygpu), re.sub(mask, "", out_torch)
    a, b = numbers(out_pygpu), numbers(out_torch)
    if len(a) != len(b):
        return f"pygpu printed {len(a)} numbers, torch {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if abs(x - y) > atol + rtol * abs(y):
            return f"number {i}: pygpu {x!r}, torch {y!r} (rtol {rtol}, atol {atol})"
    return None


def stop_reason(stderr):
    """The last line of a traceback: where the program stopped."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no message)"


def table():
    """docs/pytorch.md's corpus table, from the manifest (tests/test_corpus.py checks the page
    holds exactly this)."""
    rows = ["| Program | Source | Result under pygpu |", "|---|---|---|"]
    for e in MANIFEST:
        if e["needs"]:
            res = "stops at what it needs: " + "; ".join(e["needs"])
        else:
            res = "ran to the end" + ("; its numbers match torch's" if e["compare"] else
                                      " (" + e["note"] + ")")
        rows.append(f"| `{e['name']}` | {e['repo']}/{e['path']} | {res} |")
    ran = sum(1 for e in MANIFEST if not e["needs"])
    rest = len(MANIFEST) - ran
    rows += ["", f"{ran} of {len(MANIFEST)} run to the end today" +
             (f"; the other {rest} stop at what pygpu still lacks." if rest else ".")]
    return "\n".join(rows) + "\n"


def main(argv):
    if "--table" in argv:
        print(table(), end="")
        return
    if "--sources" in argv:
        print(sources(), end="")
        return
    show = "--show" in argv
    names = [a for a in argv if not a.startswith("--")]
    entries = [e for e in MANIFEST if not names or e["name"] in names]
    absent = missing()
    if absent:
        sys.exit(where_from(absent))
    ran = 0
    for e in entries:
        rc, out, err = run(e, "pygpu", same_random=e.get("compare", False))
        status = "ran to the end" if rc == 0 else f"stops at: {stop_reason(err)}"
        if rc == 0:
            ran += 1
            if e.get("compare"):
                rct, outt, errt = run(e, "torch", same_random=True)
                diff = compare(out, outt, e["rtol"], e["atol"], e.get("mask")) if rct == 0 \
                    else f"torch failed: {stop_reason(errt)}"
                status += "; numbers match torch's" if diff is None else f"; differs: {diff}"
        print(f"{e['name']:40s} {status}")
        if show:
            print(out[-3000:], err[-3000:])
    print(f"{ran} of {len(entries)} ran to the end")


if __name__ == "__main__":
    main(sys.argv[1:])
