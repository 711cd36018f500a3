# test_skip_policy.py - PYGPU_NO_SKIP_MISSING=1 turns a skip for a missing module into a
# failure and lets the allowed ones (tests/_skip_policy.py) through; without it, skips skip.
import os
import subprocess
import sys
import textwrap

TESTS = os.path.dirname(os.path.abspath(__file__))

_CONFTEST = f"""
import sys
sys.path.insert(0, {TESTS!r})
from _skip_policy import pytest_make_collect_report, pytest_runtest_makereport
"""
_TESTS = """
import pytest

def test_missing_module():
    pytest.importorskip("pygpu_no_such_module")

def test_no_gpu():
    pytest.skip("needs a CUDA GPU")

@pytest.mark.skipif(True, reason="some other reason")
def test_marked():
    pass

@pytest.mark.xfail(reason="expected")
def test_expected_failure():
    assert False

def test_passes():
    pass
"""
_MODULE_SKIP = """
import pytest
pytest.importorskip("pygpu_no_such_module")

def test_never_collected():
    pass
"""


def _pytest(tmp_path, strict, files=("test_a.py", "test_b.py")):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(_CONFTEST))
    (tmp_path / "test_a.py").write_text(textwrap.dedent(_TESTS))
    (tmp_path / "test_b.py").write_text(textwrap.dedent(_MODULE_SKIP))
    env = dict(os.environ)
    env.pop("PYGPU_NO_SKIP_MISSING", None)
    if strict:
        env["PYGPU_NO_SKIP_MISSING"] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "-o", "addopts=", *files], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout.strip().splitlines()[-1]


def test_in_ci_a_missing_module_fails_and_the_allowed_skips_pass(tmp_path):
    rc, summary = _pytest(tmp_path, strict=True, files=("test_a.py",))
    assert rc == 1, summary
    # the missing module fails; the unlisted reason of a skipif mark fails its setup (an error)
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed, 1 error" in summary, summary
    rc, summary = _pytest(tmp_path, strict=True, files=("test_b.py",))
    assert rc == 2 and "1 error" in summary, summary  # a whole file skipped: a collection error


def test_elsewhere_skips_skip(tmp_path):
    rc, summary = _pytest(tmp_path, strict=False)
    assert rc == 0, summary
    assert "1 passed, 4 skipped, 1 xfailed" in summary, summary
