# test_readme.py - the README's Python examples run, in order, as a newcomer would paste them.
#
# Each ```python block of README.md is executed in one shared namespace; a block
# that raises fails the test. The figures in the comments are not checked here
# (the counters they show are checked exactly in test_counters.py).
import os
import re

import pytest

import pygpu

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def _blocks():
    if not os.path.exists(README):
        return []
    with open(README) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


@pytest.mark.skipif(not _blocks(), reason="README.md not next to the tests (installed elsewhere)")
def test_readme_examples_run(capsys):
    ns = {}
    try:
        for i, block in enumerate(_blocks()):
            try:
                exec(compile(block, f"README.md python block {i}", "exec"), ns)
            except Exception as e:  # name the block that broke
                pytest.fail(f"README python block {i} raised {type(e).__name__}: {e}\n{block}")
        out = capsys.readouterr().out
        assert "triggered by item" in out  # the guard example printed its error
        assert "sim:1 and cpu" in out
    finally:
        pygpu.transfer_guard("allow")
        pygpu.synchronize()
