"""sources.py - the corpus programs' runnable copies, made from their published sources.

The published files (other projects' code, never committed here) live unedited in a folder
of their own, `../shared/corpus` beside the clone, or wherever PYGPU_CORPUS_SOURCES points:
`<owner>__<repo>/<path>` per file, each repository's LICENSE, and SOURCES.tsv, one row per
file with its repository, commit, path, sha256 and licence (that folder's README.md).

What this repository holds is the edits, as code: tests/corpus/edits/<name>.patch, a
unified diff from the published file to the program as the corpus runs it under torch
(downloads replaced by random tensors of the same shapes, epochs and sizes cut: the
manifest's `edits`, in prose). A program that needs no edit has no patch. A program that
stops at something pygpu lacks also has <name>.workaround.patch: the few lines that work
around that gap (the manifest's `needs` names it), applied on top of the first. A module
the program imports from its repository (manifest `with`) has <name>__<module>.patch.

make(entry) then builds the runnable copy: the published file, its patch(es), the imports
spelled for pygpu (to_pygpu: `import torch` -> `import pygpu as torch`, ...; the only edit
no patch shows, and run_corpus.to_torch undoes exactly it), and a header naming the source,
its commit and licence. Every file is checked against its sha256 before it is used.

    python tests/corpus/sources.py --check            # every hash in SOURCES.tsv
    python tests/corpus/sources.py --make DIR [NAME..]  # the runnable copies, DIR/<name>/main.py
    python tests/corpus/sources.py --make-workaround DIR [NAME..]  # with their workarounds
    python tests/corpus/sources.py --diff DIR NAME [--workaround]  # an edited copy -> its patch
"""
import difflib
import hashlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EDITS = os.path.join(HERE, "edits")


def sources_dir():
    """Where the published sources are: PYGPU_CORPUS_SOURCES, else ../shared/corpus beside
    the clone (where CI has them)."""
    return os.path.abspath(os.environ.get("PYGPU_CORPUS_SOURCES")
                           or os.path.join(ROOT, "..", "shared", "corpus"))


class SourcesMissing(Exception):
    """The sources folder, or its SOURCES.tsv, is not there at all."""


class NotProvided(Exception):
    """The sources folder has no row for this program (yet): the second corpus's files are
    added to it by name."""


class BadSource(Exception):
    """A listed file is absent, or its bytes differ from its sha256, or a patch does not
    apply: the runnable copy cannot be made as the repository says."""


def table(folder=None, name="SOURCES.tsv"):
    """SOURCES.tsv's rows as dicts (name, repo, commit, path, sha256, license)."""
    folder = folder or sources_dir()
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise SourcesMissing(
            f"the corpus sources are not at {folder} (no SOURCES.tsv there): the published "
            f"files of the corpus programs are kept outside the repository (fetched code is "
            f"never committed), in ../shared/corpus beside the clone; set "
            f"PYGPU_CORPUS_SOURCES to the folder that holds them (docs/pytorch.md, "
            f"\"The corpus\")")
    with open(path, encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    head = lines[0].split("\t")
    return [dict(zip(head, ln.split("\t"))) for ln in lines[1:]]


def file_path(row, folder=None):
    """Where a SOURCES.tsv row's file lies: <owner>__<repo>/<path>."""
    return os.path.join(folder or sources_dir(), row["repo"].replace("/", "__"), row["path"])


def check_hashes(folder=None):
    """Every row's file is there with its sha256: [] if so, else what is wrong, one line
    each."""
    bad = []
    for row in table(folder):
        path = file_path(row, folder)
        if not os.path.isfile(path):
            bad.append(f"{path}: missing")
            continue
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest != row["sha256"]:
            bad.append(f"{path}: sha256 {digest}, SOURCES.tsv says {row['sha256']}")
    return bad


def files(entry):
    """(where it goes, its path in the repository, its patch stem) for the program and each
    module it imports from its repository (manifest `with`: repository paths). The program
    runs as main.py; a module beside it or below its folder keeps its place relative to it
    (`datautils.py`, `models/resnet.py`), one elsewhere its place from the repository's root
    (minGPT's `mingpt/model.py` for `projects/adder/adder.py`). The patch stem names
    edits/<stem>.patch: the entry's name, or name__<place, / as __> for a module."""
    out = [("main.py", entry["path"], entry["name"])]
    home = os.path.dirname(entry["path"])
    for path in entry.get("with", ()):
        dest = os.path.relpath(path, home) if home and path.startswith(home + "/") else path
        stem = entry["name"] + "__" + dest[:-3].replace("/", "__")
        out.append((dest, path, stem))
    return out


def published(entry, path, folder=None):
    """The published text of `path` (the program or a sibling) at the entry's commit,
    checked against its sha256."""
    rows = [r for r in table(folder)
            if r["repo"] == entry["repo"] and r["path"] == path and r["commit"] == entry["commit"]]
    if not rows:
        raise NotProvided(f"{entry['name']}: {entry['repo']}/{path} at {entry['commit'][:12]} "
                          f"is not in {os.path.join(folder or sources_dir(), 'SOURCES.tsv')} "
                          f"(not yet provided)")
    row = rows[0]
    fp = file_path(row, folder)
    try:
        with open(fp, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadSource(f"{entry['name']}: {fp}: {e}") from None
    if hashlib.sha256(data).hexdigest() != row["sha256"]:
        raise BadSource(f"{entry['name']}: {fp} differs from its sha256 in SOURCES.tsv")
    return data.decode("utf-8")


def provided(entry, folder=None):
    """True if the sources folder lists every file of this program (a missing folder
    raises SourcesMissing)."""
    listed = {(r["repo"], r["path"], r["commit"]) for r in table(folder)}
    return all((entry["repo"], p, entry["commit"]) in listed for _, p, _ in files(entry))


# ---- unified diffs ------------------------------------------------------------------

def _split(text):
    """Lines with their \\n, split at \\n only (str.splitlines also splits at form feeds
    and other characters a source file may hold inside a line)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(text, patch, name="patch"):
    """`text` with the unified diff `patch` applied, strictly: every hunk's context and
    removed lines must be exactly where the hunk says (the sources are pinned by hash, so
    there is no fuzz to allow)."""
    old = _split(text)
    out, pos = [], 0  # pos: lines of `old` consumed
    lines = _split(patch)
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        i += 1  # the ---/+++ header
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            raise BadSource(f"{name}: line {i + 1} is not a hunk header: {lines[i]!r}")
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        if start < pos:
            raise BadSource(f"{name}: hunks overlap at line {start + 1}")
        out += old[pos:start]
        pos = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            ln = lines[i]
            tag, body = ln[:1], ln[1:]
            if tag in (" ", "-"):
                if pos >= len(old) or old[pos] != body:
                    got = old[pos] if pos < len(old) else "(end of file)"
                    raise BadSource(f"{name}: hunk at line {start + 1} does not match line "
                                    f"{pos + 1}: expected {body!r}, found {got!r}")
                pos += 1
                if tag == " ":
                    out.append(body)
            elif tag == "+":
                out.append(body)
            else:
                raise BadSource(f"{name}: bad line {i + 1}: {ln!r}")
            i += 1
    return "".join(out + old[pos:])


def make_patch(before, after, label):
    """The unified diff from `before` to `after` (three lines of context), as apply_patch
    reads it; '' when they are equal. Both end in a newline (_lines), so no hunk needs
    "No newline at end of file"."""
    return "".join(difflib.unified_diff(_split(before), _split(after), f"a/{label}",
                                        f"b/{label}"))


# ---- the import spelling ------------------------------------------------------------

# `import torch`, `import torch.nn as nn`, `from torch import nn`, `from torch.utils.data import X`
_TORCH_IMPORT = re.compile(r"^(\s*)(import|from)\s+torch(\b[\w.]*)(.*)$")


def to_pygpu(source):
    """The program with its torch imports spelled for pygpu: `import torch` becomes
    `import pygpu as torch`, `import torch.nn as nn` `import pygpu.nn as nn`, `from torch.X
    import Y` `from pygpu.X import Y`. to_torch is its inverse."""
    out = []
    for line in source.replace("\r\n", "\n").rstrip("\n").split("\n"):
        m = _TORCH_IMPORT.match(line)
        if m:
            rest = m.group(4)
            if m.group(2) == "import" and m.group(3) == "" and not rest.strip().startswith("as"):
                if rest.strip() and not rest.lstrip().startswith("#"):
                    raise BadSource(f"an import line this spelling cannot carry: {line!r}")
                rest = " as torch" + rest
            line = f"{m.group(1)}{m.group(2)} pygpu{m.group(3)}{rest}"
        out.append(line)
    return "\n".join(out) + "\n"


# `import pygpu as torch`, `from pygpu import nn`, `import pygpu.nn.functional as F`, ...
_IMPORT = re.compile(r"^(\s*)(import|from)\s+pygpu(\b[\w.]*)(.*)$")


def to_torch(source):
    """The program as it was written for torch: its pygpu import lines spelled torch."""
    out = []
    for line in source.replace("\r\n", "\n").rstrip("\n").split("\n"):
        m = _IMPORT.match(line)
        if m:
            rest = m.group(4)
            if m.group(2) == "import" and re.match(r"\s+as torch\s*(#|$)", rest):
                rest = rest.split("as torch", 1)[1]  # what followed it: a comment, or nothing
            line = f"{m.group(1)}{m.group(2)} torch{m.group(3)}{rest}"
        out.append(line)
    return "\n".join(out) + "\n"


# ---- the runnable copies ------------------------------------------------------------

def patch_path(stem, kind=""):
    """edits/<stem>.patch, or <stem>.workaround.patch (kind="workaround")."""
    return os.path.join(EDITS, stem + (f".{kind}" if kind else "") + ".patch")


def edited(entry, stem, path, workaround=False, folder=None):
    """A file of the program as the corpus runs it under torch: published, then patched."""
    text = _lines(published(entry, path, folder))  # line endings as the patches have them
    kinds = [""] + (["workaround"] if workaround else [])
    for kind in kinds:
        pp = patch_path(stem, kind)
        if os.path.isfile(pp):
            with open(pp, encoding="utf-8") as f:
                text = apply_patch(text, f.read(), os.path.relpath(pp, ROOT))
    return text


def header(entry, path):
    lic = entry["repo"].replace("/", "__") + "/" + entry.get("license_file", "LICENSE")
    return (f"# corpus program {entry['name']}: {entry['repo']} {path} at "
            f"{entry['commit']}, license {entry['license']} (the sources folder's {lic}).\n"
            f"# Made by tests/corpus/sources.py from the published file: edits in "
            f"tests/corpus/edits/, imports spelled for pygpu.\n")


def make(entry, workaround=False, folder=None):
    """{place: text} of the program's runnable copy (main.py: pygpu spelling, with the
    header) and the modules it imports from its repository."""
    out = {}
    for dest, path, stem in files(entry):
        text = edited(entry, stem, path, workaround, folder)
        copy = to_pygpu(text)
        if to_torch(copy) != _lines(text):  # the torch run must be exactly the patched file
            raise BadSource(f"{path}: its import lines do not spell back to torch exactly")
        out[dest] = header(entry, path) + copy
    return out


def _lines(text):
    """The text as to_pygpu and to_torch write it: \\n line ends, exactly one at the end."""
    return text.replace("\r\n", "\n").rstrip("\n") + "\n"


def strip_header(text):
    """A runnable copy without the header make() put on it."""
    for start in ("# corpus program ", "# Made by tests/corpus/sources.py"):
        if text.startswith(start):
            text = text.split("\n", 1)[1]
    return text


def _main(argv):
    sys.path.insert(0, HERE)
    from manifest import PROGRAMS
    if argv[:1] == ["--check"]:
        bad = check_hashes()
        print("\n".join(bad) if bad else f"{len(table())} files, every sha256 matches "
              f"({sources_dir()})")
        sys.exit(1 if bad else 0)
    if argv[:1] in (["--make"], ["--make-workaround"]):  # DIR [NAME...]: DIR/<name>/...
        folder, names = argv[1], argv[2:]
        for e in PROGRAMS:
            if names and e["name"] not in names:
                continue
            if not provided(e):
                print(f"{e['name']}: not provided in {sources_dir()}")
                continue
            for dest, text in make(e, workaround=argv[0] == "--make-workaround").items():
                target = os.path.join(folder, e["name"], dest)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "w") as f:
                    f.write(text)
        return
    if argv[:1] == ["--diff"]:  # DIR NAME [--workaround]: DIR/<name>/... -> its patches
        folder, name = argv[1], argv[2]
        workaround = "--workaround" in argv
        e = next(e for e in PROGRAMS if e["name"] == name)
        for dest, path, stem in files(e):
            # the method's edits: from the published file; a workaround: from those edits
            base = edited(e, stem, path) if workaround else published(e, path)
            with open(os.path.join(folder, e["name"], dest)) as f:
                now = to_torch(strip_header(f.read()))
            pp = patch_path(stem, "workaround" if workaround else "")
            diff = make_patch(_lines(base), now, f"{e['repo']}/{path}")
            if diff:
                os.makedirs(EDITS, exist_ok=True)
                with open(pp, "w") as f:
                    f.write(diff)
                print(f"wrote {os.path.relpath(pp, ROOT)}")
            elif os.path.exists(pp):
                os.remove(pp)
                print(f"removed {os.path.relpath(pp, ROOT)} (no edit left)")
        return
    print(__doc__)


if __name__ == "__main__":
    _main(sys.argv[1:])
