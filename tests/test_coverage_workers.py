# test_coverage_workers.py - build_support/coverage_workers.py, the plugin through which
# coverage_diff.py keeps pytest-xdist's workers alive until gcov has written their counters.
#
# gcov writes counters when a process exits, after Python's atexit functions. A worker whose
# atexit function takes 12 s stands for a worker that finalizes slowly on a loaded machine:
# pytest-xdist kills it after 10 s (its counters would be lost), the plugin waits for it, and a
# kill that happens all the same (here: the plugin's wait cut to 3 s) is noted in the file
# that coverage_diff.py reports.
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("xdist")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a worker that finishes its one test, then takes 12 s to exit; it leaves a file once it has
SLOW_EXIT = """
import atexit, os, time

def _slow_exit():
    time.sleep(12)
    open(os.environ["EXITED_MARK"], "w").close()

def test_slow_exit():
    atexit.register(_slow_exit)
"""


def _start(tmp_path, name, plugin, wait_s=None):
    d = tmp_path / name
    d.mkdir()
    (d / "test_slow.py").write_text(textwrap.dedent(SLOW_EXIT))
    if wait_s is not None:  # loaded before pytest_configure, when the plugin reads it
        (d / "conftest.py").write_text(f"import coverage_workers\ncoverage_workers.WAIT_S = {wait_s}\n")
    env = dict(os.environ, EXITED_MARK=str(d / "exited"), PYGPU_COVERAGE_KILLED=str(d / "killed"),
               PYTHONPATH=os.path.join(ROOT, "build_support"))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1",
           "--rootdir", str(d), "-c", os.devnull] + (["-p", "coverage_workers"] if plugin else [])
    return d, subprocess.Popen(cmd + [str(d / "test_slow.py")], cwd=d, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow
def test_workers_are_waited_for_and_a_kill_is_noted(tmp_path):
    runs = {"xdist alone": _start(tmp_path, "alone", plugin=False),
            "plugin": _start(tmp_path, "plugin", plugin=True),
            "plugin, 3 s": _start(tmp_path, "short", plugin=True, wait_s=3)}
    for what, (d, p) in runs.items():  # side by side: one worker's 12 s each, not three
        out = p.communicate(timeout=300)[0]
        assert p.returncode == 0 and "1 passed" in out, (what, out)
    alone, plugin, short = (d for d, _ in runs.values())
    # pytest-xdist alone kills the worker before its exit is done: a gcov dump would be lost
    assert not (alone / "exited").exists()
    # with the plugin the worker exits in its own time, and nothing is noted
    assert (plugin / "exited").exists() and not (plugin / "killed").exists()
    # a worker killed all the same is noted, for coverage_diff.py to report
    assert not (short / "exited").exists()
    note = (short / "killed").read_text()
    assert "did not exit within 3 s and was killed: its gcov counters are lost" in note
