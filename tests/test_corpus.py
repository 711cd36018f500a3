# test_corpus.py - the corpus: real PyTorch programs (tests/corpus/, listed in
# tests/corpus/manifest.py) run as written under pygpu, with only the edits the manifest
# lists, and, where the manifest says so, their printed numbers compared with the same
# program run under torch from the same random stream (tests/corpus/same_random.py).
#
# A program whose `needs` is empty must run to the end. A program that needs what another
# issue's branch brings (convolution, recurrent layers, math functions) is expected to stop
# (xfail, strict): when that branch lands and the program runs, the test fails until its
# `needs` is emptied in the manifest, so the docs' corpus table never goes stale.
#
# Each program runs in its own interpreter (seconds each): those tests are marked `corpus`,
# deselected from the default run like `timing`: pytest -m corpus tests/test_corpus.py.
#
# The programs are not in the repository (other projects' code is never committed): they
# are read from tests/corpus/programs/ (git-ignored) or the folder PYGPU_CORPUS_DIR names.
# Where they are missing, every `corpus` test fails and says how to get them (a skip would
# read as a pass). The manifest's own checks need no program file and run in the default
# suite, as does the docs table's.
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus"))

import run_corpus  # noqa: E402
from manifest import PROGRAMS  # noqa: E402

def _params():
    for e in PROGRAMS:
        marks = []
        if e["needs"]:
            # raises=AssertionError: a missing programs folder (pytest.fail) still fails
            marks.append(pytest.mark.xfail(strict=True, raises=AssertionError,
                                           reason="needs " + "; ".join(e["needs"])))
        yield pytest.param(e, id=e["name"], marks=marks)


def _require_programs():
    absent = run_corpus.missing()
    if absent:
        pytest.fail(run_corpus.where_from(absent), pytrace=False)


@pytest.mark.corpus
def test_the_programs_are_here():
    """The programs folder holds every file the manifest lists, each opening with its
    source repository and license (the header the edits add)."""
    _require_programs()
    for e in PROGRAMS:
        with open(run_corpus.program_path(e)) as f:
            head = f.read(400)
        assert e["repo"] in head and "license" in head, (
            f"{run_corpus.program_path(e)} does not open with its source ({e['repo']}) and "
            f"license: see docs/pytorch.md, \"The corpus\"")


@pytest.mark.corpus
@pytest.mark.parametrize("entry", list(_params()))
def test_program_runs_as_written(entry):
    _require_programs()
    rc, out, err = run_corpus.run(entry, "pygpu", same_random=entry["compare"])
    assert rc == 0, f"{entry['name']} stopped: {run_corpus.stop_reason(err)}\n{err[-4000:]}"
    if entry["compare"]:
        rct, outt, errt = run_corpus.run(entry, "torch", same_random=True)
        assert rct == 0, f"under torch: {run_corpus.stop_reason(errt)}"
        diff = run_corpus.compare(out, outt, entry["rtol"], entry["atol"], entry.get("mask"))
        assert diff is None, f"{entry['name']}: {diff}\n--- pygpu:\n{out[-2000:]}\n--- torch:\n{outt[-2000:]}"


def test_the_manifest_is_whole():
    """Every entry names its source, commit, license and edits, names and files are unique,
    and the corpus is the size the issue asks for (no program file needed)."""
    assert len(PROGRAMS) >= 30
    names = [e["name"] for e in PROGRAMS]
    files = run_corpus.listed_files()
    assert len(set(names)) == len(names) and len(set(files)) == len(files)
    for e in PROGRAMS:
        assert e["repo"].count("/") == 1 and e["path"].endswith(".py"), e["name"]
        assert len(e["commit"]) == 40 and int(e["commit"], 16) >= 0, e["name"]
        assert e["license"] and e["edits"] and e["file"] == e["name"] + ".py", e["name"]
        assert all(w.startswith(e["name"] + "__") for w in e.get("with", ())), e["name"]
        assert e["compare"] or e["note"], f"{e['name']}: say why it is not compared"
        assert e["rtol"] > 0 and e["atol"] > 0, e["name"]


def test_a_missing_programs_folder_says_where_they_come_from():
    old = run_corpus.PROGRAMS
    run_corpus.PROGRAMS = os.path.join(old, "no-such-folder")
    try:
        absent = run_corpus.missing()
        msg = run_corpus.where_from(absent)
    finally:
        run_corpus.PROGRAMS = old
    assert len(absent) == len(run_corpus.listed_files())
    assert "PYGPU_CORPUS_DIR" in msg and "--sources" in msg and "never committed" in msg
    cmds = run_corpus.sources()
    for e in PROGRAMS:
        assert f"{e['commit']}:{e['path']} > " in cmds, e["name"]
    for f in run_corpus.listed_files():
        assert f"/{f}\n" in cmds, f


def test_the_docs_table_is_the_manifests():
    doc = open(os.path.join(run_corpus.ROOT, "docs", "pytorch.md")).read()
    assert run_corpus.table() in doc, ("docs/pytorch.md's corpus table differs from the "
                                       "manifest: paste `python tests/corpus/run_corpus.py "
                                       "--table` over it")


def test_to_torch_spells_only_the_imports_back():
    src = ("import pygpu as torch\nimport pygpu.nn as nn\nfrom pygpu.utils.data import DataLoader\n"
           "x = 'pygpu'\n")
    assert run_corpus.to_torch(src) == ("import torch\nimport torch.nn as nn\n"
                                        "from torch.utils.data import DataLoader\nx = 'pygpu'\n")
