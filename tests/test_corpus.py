# test_corpus.py - the corpus: real PyTorch programs (listed in tests/corpus/manifest.py), each
# made from its published file (tests/corpus/sources.py: the sha256 checked, the patch in
# tests/corpus/edits/ applied, the imports spelled `import pygpu as torch`), run under pygpu
# and, where the manifest says so, their printed numbers compared with the same program run
# under torch from the same random stream (tests/corpus/same_random.py).
#
# A program whose `needs` is empty must run to the end. A program that stops at something
# pygpu lacks is expected to stop as written (xfail, strict): when the branch that brings it
# lands and the program runs, the test fails until its `needs` is emptied in the manifest
# (and its workaround patch deleted), so the docs' corpus table never goes stale. Its
# workaround patch (edits/<name>.workaround.patch) must make it run to the end, with
# torch's numbers.
#
# Each program runs in its own interpreter (seconds each): those tests are marked `corpus`,
# deselected from the default run like `timing`: pytest -m corpus tests/test_corpus.py
# (.ci/run's corpus lane, with -n 2).
#
# The published files are not in the repository (other projects' code is never committed):
# they are read from ../shared/corpus beside the clone, or the folder PYGPU_CORPUS_SOURCES
# names. Without that folder every `corpus` test fails and says where it looked (a skip would
# read as a pass). A program the folder does not list yet (the second corpus's, until its
# files are added there by name) is reported as "not provided" (an xfail with that reason,
# listed in pytest's summary), never skipped in silence. The manifest's and the patches' own
# checks need no published file and run in the default suite, as does the docs table's.
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus"))

import run_corpus  # noqa: E402
import sources  # noqa: E402
from manifest import FIRST, PROGRAMS, SECOND  # noqa: E402


def _as_written():
    for e in PROGRAMS:
        marks = []
        if e["needs"]:
            # raises=AssertionError: a missing sources folder (pytest.fail) still fails
            marks.append(pytest.mark.xfail(strict=True, raises=AssertionError,
                                           reason="needs " + "; ".join(e["needs"])))
        yield pytest.param(e, id=e["name"], marks=marks)


def _require(entry):
    """Fail if the sources folder is missing; xfail (listed, not skipped) if it does not
    list this program yet."""
    try:
        provided = sources.provided(entry)
    except sources.SourcesMissing as e:
        pytest.fail(str(e), pytrace=False)
    if not provided:
        pytest.xfail(f"not provided: {entry['repo']}/{entry['path']} at {entry['commit'][:12]} "
                     f"is not in {sources.sources_dir()}/SOURCES.tsv yet "
                     f"(tests/corpus/SOURCES_second.tsv lists the files to add)")


@pytest.mark.corpus
def test_the_sources_are_whole():
    """The sources folder is there and every file SOURCES.tsv lists has its sha256."""
    try:
        bad = sources.check_hashes()
    except sources.SourcesMissing as e:
        pytest.fail(str(e), pytrace=False)
    assert not bad, "\n".join(bad)


@pytest.mark.corpus
def test_the_first_corpus_is_provided():
    """Every first-corpus program's files are in the sources folder (they were published
    there with this lane), but for one added later and marked `pending` in the manifest
    (listed "not provided" by its own test); the second corpus's may not be yet."""
    try:
        absent = [e["name"] for e in FIRST if not e.get("pending") and not sources.provided(e)]
    except sources.SourcesMissing as e:
        pytest.fail(str(e), pytrace=False)
    assert not absent, f"not in {sources.sources_dir()}: {absent}"


@pytest.mark.corpus
@pytest.mark.parametrize("entry", list(_as_written()))
def test_program_runs_as_written(entry):
    _require(entry)
    problem, output = run_corpus.check(entry)
    assert problem is None, f"{entry['name']}: {problem}\n{output[-4000:]}"


@pytest.mark.corpus
@pytest.mark.parametrize("entry", [pytest.param(e, id=e["name"]) for e in PROGRAMS
                                   if e["needs"]])
def test_program_runs_with_its_workaround(entry):
    _require(entry)
    problem, output = run_corpus.check(entry, workaround=True)
    assert problem is None, f"{entry['name']} with its workaround: {problem}\n{output[-4000:]}"


def test_the_manifest_is_whole():
    """Every entry names its source, commit, license and edits, names and files are unique,
    and each corpus is the size its issue asks for (no program file needed)."""
    assert len(FIRST) >= 30 and len(SECOND) >= 30
    names = [e["name"] for e in PROGRAMS]
    files = run_corpus.listed_files()
    assert len(set(names)) == len(names) and len(set(files)) == len(files)
    for e in PROGRAMS:
        assert e["repo"].count("/") == 1 and e["path"].endswith(".py"), e["name"]
        assert len(e["commit"]) == 40 and int(e["commit"], 16) >= 0, e["name"]
        assert e["license"] and e["edits"] and e["file"] == e["name"] + ".py", e["name"]
        assert all(w.endswith(".py") for w in e.get("with", ())), e["name"]
        assert e["compare"] or e["note"], f"{e['name']}: say why it is not compared"
        assert e["rtol"] > 0 and e["atol"] > 0, e["name"]
        assert bool(e["needs"]) == bool(e.get("workaround")), (
            f"{e['name']}: a program that needs something lists its workaround, and only then")


def test_every_patch_belongs_to_a_program():
    """edits/ holds a patch for a listed file, or a workaround patch for a program that
    `needs` something, and nothing else; a program with needs has its workaround patch."""
    listed = set(run_corpus.listed_files())
    needing = {e["name"] for e in PROGRAMS if e["needs"]}
    for name in os.listdir(sources.EDITS):
        m = re.fullmatch(r"(.+?)(\.workaround)?\.patch", name)
        assert m and m.group(1) in listed, f"tests/corpus/edits/{name}: no such program"
        if m.group(2):
            assert m.group(1).split("__")[0] in needing, (
                f"{name}: its program needs nothing (delete it)")
    for e in PROGRAMS:
        if e["needs"]:  # the workaround may lie in the program or in a module it imports
            assert any(os.path.isfile(sources.patch_path(stem, "workaround"))
                       for _, _, stem in sources.files(e)), f"{e['name']}: no workaround patch"


def test_the_prose_edits_and_the_patches_agree():
    """An entry whose file(s) have a patch says in its `edits` what the patch does (more than
    the import spelling), and one that says more has a patch to show it."""
    for e in PROGRAMS:
        patched = any(os.path.isfile(sources.patch_path(stem)) for _, _, stem in sources.files(e))
        assert patched == (len(e["edits"]) > 1), (
            f"{e['name']}: " + ("its patch is not described in its edits" if patched else
                                "its edits describe a change no patch makes"))


def test_a_patch_applies_exactly_or_says_where_not():
    before = "import torch\nx = 1\nfor t in range(500):\n    pass\nprint(x)\n"
    after = "import torch\nx = 1\nfor t in range(30):\n    pass\nprint(x)\n"
    patch = sources.make_patch(before, after, "a.py")
    assert sources.apply_patch(before, patch) == after
    with pytest.raises(sources.BadSource, match="does not match line 3"):
        sources.apply_patch(before.replace("500", "50"), patch)
    assert sources.make_patch(before, before, "a.py") == ""


def test_a_missing_sources_folder_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("PYGPU_CORPUS_SOURCES", str(tmp_path / "no-such-folder"))
    with pytest.raises(sources.SourcesMissing) as e:
        sources.provided(PROGRAMS[0])
    assert str(tmp_path / "no-such-folder") in str(e.value)
    assert "PYGPU_CORPUS_SOURCES" in str(e.value) and "never committed" in str(e.value)


def test_a_source_is_checked_against_its_hash(tmp_path, monkeypatch):
    """A sources folder whose file differs from SOURCES.tsv's sha256 is refused; one that
    does not list a program says "not provided"."""
    e = FIRST[0]
    folder = tmp_path / "corpus"
    (folder / e["repo"].replace("/", "__") / os.path.dirname(e["path"])).mkdir(parents=True)
    (folder / e["repo"].replace("/", "__") / e["path"]).write_text("import torch\n")
    (folder / "SOURCES.tsv").write_text(
        "name\trepo\tcommit\tpath\tsha256\tlicense\n"
        f"{e['name']}\t{e['repo']}\t{e['commit']}\t{e['path']}\t{'0' * 64}\t{e['license']}\n")
    monkeypatch.setenv("PYGPU_CORPUS_SOURCES", str(folder))
    assert sources.check_hashes() and "sha256" in sources.check_hashes()[0]
    with pytest.raises(sources.BadSource, match="sha256"):
        sources.make(e)
    assert not sources.provided(FIRST[1])
    with pytest.raises(sources.NotProvided, match="not yet provided"):
        sources.make(FIRST[1])


def test_the_docs_table_is_the_manifests():
    doc = open(os.path.join(run_corpus.ROOT, "docs", "pytorch.md")).read()
    assert run_corpus.table() in doc, ("docs/pytorch.md's corpus table differs from the "
                                       "manifest: paste `python tests/corpus/run_corpus.py "
                                       "--table` over it")


def test_the_second_corpus_sources_list_is_the_manifests():
    """tests/corpus/SOURCES_second.tsv (the rows the lead adds to the sources folder's
    SOURCES.tsv) lists every second-corpus file at its manifest commit, with its licence."""
    path = os.path.join(run_corpus.HERE, "SOURCES_second.tsv")
    rows = sources.table(os.path.dirname(path), "SOURCES_second.tsv")
    listed = {(r["repo"], r["commit"], r["path"]) for r in rows}
    for e in SECOND:
        for _, p, _ in sources.files(e):
            assert (e["repo"], e["commit"], p) in listed, f"{e['name']}: {p}"
        assert any(r["name"] == "(licence)" and r["repo"] == e["repo"] for r in rows), e["repo"]
    for r in rows:
        assert re.fullmatch(r"[0-9a-f]{64}", r["sha256"]) and r["license"], r


def test_to_torch_spells_only_the_imports_back():
    src = ("import pygpu as torch\nimport pygpu.nn as nn\nfrom pygpu.utils.data import DataLoader\n"
           "x = 'pygpu'\n")
    assert run_corpus.to_torch(src) == ("import torch\nimport torch.nn as nn\n"
                                        "from torch.utils.data import DataLoader\nx = 'pygpu'\n")


def test_to_pygpu_is_undone_by_to_torch():
    src = ("import torch \nimport torch  # the library\nimport torch.nn as nn\n"
           "from torch import nn, optim\n    import torch.multiprocessing as mp\n"
           "import torchvision\nfrom torch.utils.data import DataLoader\nx = 'torch'\n")
    spelled = sources.to_pygpu(src)
    assert "import pygpu as torch  # the library" in spelled
    assert "import torchvision" in spelled and "x = 'torch'" in spelled
    assert run_corpus.to_torch(spelled) == src
    with pytest.raises(sources.BadSource):
        sources.to_pygpu("import torch, numpy\n")
