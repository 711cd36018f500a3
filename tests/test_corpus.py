# test_corpus.py - the corpus lane: real PyTorch programs (tests/corpus/, listed in
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
# deselected from the default run like `timing`, and run by their own lane:
# pytest -m corpus tests/test_corpus.py. The manifest's own checks run in the default suite.
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
            marks.append(pytest.mark.xfail(strict=True, reason="needs " + "; ".join(e["needs"])))
        yield pytest.param(e, id=e["name"], marks=marks)


@pytest.mark.corpus
@pytest.mark.parametrize("entry", list(_params()))
def test_program_runs_as_written(entry):
    rc, out, err = run_corpus.run(entry, "pygpu", same_random=entry["compare"])
    assert rc == 0, f"{entry['name']} stopped: {run_corpus.stop_reason(err)}\n{err[-4000:]}"
    if entry["compare"]:
        rct, outt, errt = run_corpus.run(entry, "torch", same_random=True)
        assert rct == 0, f"under torch: {run_corpus.stop_reason(errt)}"
        diff = run_corpus.compare(out, outt, entry["rtol"], entry["atol"], entry.get("mask"))
        assert diff is None, f"{entry['name']}: {diff}\n--- pygpu:\n{out[-2000:]}\n--- torch:\n{outt[-2000:]}"


def test_the_manifest_is_whole():
    """Every program file is listed, every entry names its source and commit, and the
    corpus is the size the issue asks for."""
    files = {e["file"] for e in PROGRAMS} | {w for e in PROGRAMS for w in e.get("with", ())}
    on_disk = set(os.listdir(run_corpus.PROGRAMS))
    assert on_disk == files, on_disk ^ files
    assert len(PROGRAMS) >= 30
    for e in PROGRAMS:
        assert e["repo"] and e["path"] and len(e["commit"]) == 40 and e["edits"], e["name"]
        with open(run_corpus.program_path(e)) as f:
            head = f.read(400)
        assert e["repo"] in head and "license" in head, e["name"]


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
