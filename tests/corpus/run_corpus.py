"""run_corpus.py - run the corpus of real PyTorch programs (listed in manifest.py) under
pygpu and under torch, and compare what they print.

Each program is made from its published file (tests/corpus/sources.py: checked against its
sha256, then the patch in tests/corpus/edits/ applied: random tensors in place of downloads,
epochs and sizes cut) with its imports spelled `import pygpu as torch`. The torch run is the
same file with those import lines spelled back to torch (to_torch): nothing else differs
between the two runs.

run(entry, lib, same_random) runs one program in a subprocess (its own interpreter, so a
program's global settings stay its own) from a scratch directory, and returns
(returncode, stdout, stderr). With same_random, tests/corpus/same_random.py gives both
runs one random stream; compare() then checks every number the two runs printed.
workaround=True runs it with its workaround patch too (a program whose `needs` names a gap).

The published files are not in the repository (other projects' code is never committed):
they are read from ../shared/corpus beside the clone, or the folder PYGPU_CORPUS_SOURCES
names (sources.sources_dir()). A program whose files that folder does not list yet is
"not provided" (the second corpus's, until they are added there by name).

    python tests/corpus/run_corpus.py                 # every program, a table of results
    python tests/corpus/run_corpus.py ex_gat tut_polynomial_optim --show   # some, with output
    python tests/corpus/run_corpus.py --table         # docs/pytorch.md's table, from the manifest
    python tests/corpus/run_corpus.py --fetch [NAME..]  # git commands that fetch the originals
"""
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import sources  # noqa: E402
from manifest import PROGRAMS as MANIFEST  # noqa: E402
from sources import to_torch  # noqa: E402,F401  (the torch spelling, for the tests)


def listed_files():
    """Every patch stem the manifest implies: the programs and the modules they import."""
    return [stem for e in MANIFEST for _, _, stem in sources.files(e)]


def fetch_commands(entries=MANIFEST, folder=None):
    """Shell commands that put every original (and its sibling modules and its repository's
    LICENSE) at its manifest commit into a sources folder, in its layout
    (<owner>__<repo>/<path>), unedited, and print its SOURCES.tsv rows: how the second
    corpus's files are added to ../shared/corpus."""
    folder = folder or "corpus-sources"
    lines, cloned = [f"mkdir -p {folder}/clones"], set()
    for e in entries:
        repo = e["repo"]
        clone = f"{folder}/clones/{repo.replace('/', '__')}"
        if repo not in cloned:
            cloned.add(repo)
            lines.append(f"git clone -q https://github.com/{repo} {clone}")
        for _, path, _ in sources.files(e) + [(None, e.get("license_file", "LICENSE"), None)]:
            dest = f"{folder}/{repo.replace('/', '__')}/{path}"
            lines.append(f"mkdir -p {os.path.dirname(dest)} && "
                         f"git -C {clone} show {e['commit']}:{path} > {dest}")
    return "\n".join(lines) + "\n"


_BOOT = """
import os, runpy, sys
sys.path.insert(0, {root!r}); sys.path.insert(1, {here!r})
if {same!r}:
    import same_random
    same_random.install({lib!r})
sys.argv = [{path!r}] + {args!r}
sys.path.insert(0, os.path.dirname({path!r}))
runpy.run_path({path!r}, run_name="__main__")
"""

STUBS = os.path.join(HERE, "stubs")


def random_text(n, alphabet):
    """n characters drawn from `alphabet` (a text file's stand-in: its symbols, not its
    words), from a NumPy stream of its own: the same in both runs."""
    rng = np.random.Generator(np.random.PCG64(4321))
    return "".join(np.array(list(alphabet))[rng.integers(0, len(alphabet), n)])


def random_lines(n, alphabet, shortest, longest):
    """n lines (names, words) of shortest..longest characters from `alphabet`."""
    rng = np.random.Generator(np.random.PCG64(4321))
    return "".join("".join(np.array(list(alphabet))[rng.integers(0, len(alphabet), k)]) + "\n"
                   for k in rng.integers(shortest, longest + 1, n))


def random_tokens(n, vocab):
    """n token ids below `vocab` as uint16 bytes (nanoGPT's train.bin/val.bin layout)."""
    rng = np.random.Generator(np.random.PCG64(4321))
    return rng.integers(0, vocab, n).astype(np.uint16).tobytes()


def pickled(obj):
    """A pickle of a literal (nanoGPT's meta.pkl: the vocabulary's size)."""
    return pickle.dumps(obj)


# manifest `data`: {file name: [kind, arguments...]}: the input files a program reads, made
# random (the corpus replaces data by random data of the same layout, never downloads it)
DATA_KINDS = {"text": random_text, "lines": random_lines, "tokens": random_tokens,
              "pickle": pickled}


def run(entry, lib, same_random=False, workaround=False, timeout=300):
    """Run the program (made from its published file) under `lib` ("pygpu" or "torch")
    in a scratch folder: its modules beside it, its data files (`data`), the stand-ins for
    packages this machine lacks (`stubs`, from tests/corpus/stubs/), its arguments (`args`)."""
    made = sources.make(entry, workaround=workaround)
    with tempfile.TemporaryDirectory(prefix="corpus-") as work:
        for dest, text in made.items():
            target = os.path.join(work, dest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w") as f:
                f.write(to_torch(text) if lib == "torch" else text)
        for name, (kind, *params) in entry.get("data", {}).items():
            target = os.path.join(work, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            data = DATA_KINDS[kind](*params)
            with open(target, "wb" if isinstance(data, bytes) else "w") as f:
                f.write(data)
        for stub in entry.get("stubs", ()):
            shutil.copytree(os.path.join(STUBS, stub), os.path.join(work, stub))
        path = os.path.join(work, "main.py")
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
        env.pop("PYGPU_ACCELERATOR", None)
        env.update(entry.get("env", {}))  # the program's own (PYGPU_ACCELERATOR=cpu, ...)
        boot = _BOOT.format(root=ROOT, here=HERE, same=same_random, lib=lib, path=path,
                            args=list(entry.get("args", ())))
        cmd = [sys.executable, "-c", boot]
        if entry.get("launch"):  # a torchrun program: under the launcher, its own arguments
            cmd = _launched(entry["launch"], path, env)
        try:
            p = subprocess.run(cmd, cwd=work, env=env, text=True,
                               capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            return 124, out, f"timed out after {timeout} s"
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
             (f"; the other {rest} stop at what pygpu still lacks." if rest > 1 else
              "; the other one stops at what pygpu still lacks." if rest else ".")]
    return "\n".join(rows) + "\n"


_TRACEBACK = "Traceback (most recent call last)"


def check(entry, workaround=False):
    """Run the program under pygpu and, where the manifest compares it, under torch from the
    same random stream: (None, pygpu's output) if it ran to the end and every printed number
    matched torch's, else (what went wrong, pygpu's output and errors)."""
    same = entry["compare"]
    rc, out, err = run(entry, "pygpu", same_random=same, workaround=workaround)
    if rc != 0:
        return f"stops at: {stop_reason(err)}", out + err
    if _TRACEBACK in err:  # the program ended, but a thread or child process of it raised
        return f"a thread or process of it raised: {stop_reason(err)}", out + err
    if not same:
        return None, out
    rct, outt, errt = run(entry, "torch", same_random=True, workaround=workaround)
    if rct != 0 or _TRACEBACK in errt:
        return f"under torch: {stop_reason(errt)}", outt + errt
    diff = compare(out, outt, entry["rtol"], entry["atol"], entry.get("mask"))
    if diff:
        return f"differs from torch: {diff}", f"--- pygpu:\n{out}\n--- torch:\n{outt}"
    return None, out


def main(argv):
    if "--table" in argv:
        print(table(), end="")
        return
    names = [a for a in argv if not a.startswith("--")]
    entries = [e for e in MANIFEST if not names or e["name"] in names]
    if "--fetch" in argv:
        print(fetch_commands(entries), end="")
        return
    show = "--show" in argv
    try:
        bad = sources.check_hashes()
    except sources.SourcesMissing as e:
        sys.exit(str(e))
    if bad:
        sys.exit("\n".join(bad))
    ran = ran_worked = absent = 0
    for e in entries:
        if not sources.provided(e):
            absent += 1
            print(f"{e['name']:40s} not provided in {sources.sources_dir()}")
            continue
        problem, out = check(e)
        status = problem or ("ran to the end" + ("; numbers match torch's" if e["compare"]
                                                 else ""))
        ran += problem is None
        if e["needs"]:
            wproblem, wout = check(e, workaround=True)
            ran_worked += wproblem is None
            status += "; with its workaround: " + (wproblem or "ran, numbers match")
            out += "\n--- with its workaround:\n" + wout
        else:
            ran_worked += problem is None
        print(f"{e['name']:40s} {status}")
        if show:
            print(out[-6000:])
    done = len(entries) - absent
    print(f"{ran} of {done} ran to the end as written, {ran_worked} with workarounds" +
          (f"; {absent} not provided" if absent else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
