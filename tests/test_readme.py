# test_readme.py - the README's and every docs/*.md page's examples run, so no page can drift.
#
# Each ```python block of a page is executed, in order, in one namespace per page (as a
# reader would paste them into one session), from a temporary directory so that files an
# example writes land there; a block that raises fails the test and names the page and the
# block. A few printed figures that the comments quote are checked here too (the counters
# themselves are checked exactly in test_counters.py). Every fenced block must say what it
# is (python runs; text, sh, c and the others in LANGUAGES do not), so that a block cannot
# stop running by losing its language. Relative links must point at files that exist, except the pages other
# work adds (PENDING), which are allowed to be missing until they land.
import glob
import os
import re

import pytest

import pygpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted(["README.md"] + [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))])
# pages the README and docs/index.md link to that other branches write
PENDING = {"docs/parallel.md", "docs/cuda.md", "docs/mixed_precision.md", "docs/performance.md"}
LANGUAGES = {"python", "text", "sh", "bash", "console", "c", "json", "toml", "ini"}  # only python runs
# output that a page's comments quote, checked when the page runs
EXPECTED_OUTPUT = {
    "README.md": ["h2d: 1 transfer, 24 bytes", "d2h: 1 transfer, 8 bytes", "implicit by trigger: repr=1"],
    "docs/devices.md": ["sim:1 and cpu"],
    "docs/transfers.md": ["triggered by item", "1 160000 1 160000"],
    "docs/inference.md": ["h2d bytes: 684176 of 2678824", "pygpu.nn.quantized.dynamic Linear"],
    "docs/training.md": ["864 24 {'item': 20}", "sim:1 cpu"],
    "docs/autograd.md": ["which is output 0 of Sigmoid, is at version 2; expected version 0",
                         "[8.0, 16.0, 0.0] [0.0, -32.0, 0.0]", "torch.Size([4, 1, 3, 3])"],
}

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.S | re.M)


def _read(page):
    with open(os.path.join(ROOT, page)) as f:
        return f.read()


def _blocks(page):
    """(language, code) of every fenced block of `page`, in order."""
    return [(m.group(1).strip(), m.group(2)) for m in _FENCE.finditer(_read(page))]


def _restore_process_state():
    pygpu.synchronize()
    pygpu.transfer_guard("allow")
    pygpu.sim.configure(latency_us=0, h2d_gbps=None, d2h_gbps=None)
    pygpu.sim.set_device(0)


needs_checkout = pytest.mark.skipif(
    not os.path.exists(os.path.join(ROOT, "README.md")),
    reason="README.md and docs/ are not next to the tests (installed elsewhere)")


@needs_checkout
def test_the_docs_pages_are_found():
    assert "README.md" in PAGES and "docs/index.md" in PAGES, PAGES


@needs_checkout
@pytest.mark.parametrize("page", PAGES)
def test_every_block_says_what_it_is(page):
    bad = [lang or "(none)" for lang, _ in _blocks(page) if lang not in LANGUAGES]
    assert not bad, (f"{page}: fenced blocks must be one of {sorted(LANGUAGES)} "
                     f"(python runs in the suite; text/sh/c do not), found {bad}")


@needs_checkout
@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page, capsys, tmp_path, monkeypatch):
    code = [c for lang, c in _blocks(page) if lang == "python"]
    monkeypatch.chdir(tmp_path)
    _restore_process_state()
    pygpu.reset_stats()
    ns = {"__name__": f"docs_page_{re.sub(r'[^0-9a-zA-Z]', '_', page)}"}
    try:
        for i, block in enumerate(code):
            try:
                exec(compile(block, f"{page} python block {i}", "exec"), ns)
            except Exception as e:  # name the block that broke
                pytest.fail(f"{page} python block {i} raised {type(e).__name__}: {e}\n{block}")
        out = capsys.readouterr().out
        for text in EXPECTED_OUTPUT.get(page, []):
            assert text in out, f"{page}: expected {text!r} in what its examples print:\n{out}"
    finally:
        _restore_process_state()


_LINK = re.compile(r"\]\(([^)\s]+)\)")


@needs_checkout
@pytest.mark.parametrize("page", PAGES)
def test_relative_links_point_at_files(page):
    missing = []
    for target in _LINK.findall(_FENCE.sub("", _read(page))):  # not inside code blocks
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page
        path = os.path.normpath(os.path.join(os.path.dirname(page), target.split("#")[0]))
        if not os.path.exists(os.path.join(ROOT, path)) and path not in PENDING:
            missing.append(target)
    assert not missing, f"{page} links to files that do not exist: {missing}"


@needs_checkout
def test_the_readme_stays_short_and_opens_with_the_quick_start():
    text = _read("README.md")
    assert len(text.splitlines()) <= 150
    first = text.split("## What's inside")[0]
    assert "## Two commands" in first and "## Quick start" in first and '.to("sim:0")' in first
    # every docs page is reachable from the index
    index = _read("docs/index.md")
    for page in PAGES:
        if page.startswith("docs/") and page != "docs/index.md":
            assert f"({os.path.basename(page)})" in index, f"docs/index.md does not link {page}"
