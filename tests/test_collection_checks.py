# test_collection_checks.py - the rules that keep the suite from multiplying have teeth.
#
# Each case writes a small test file beside copies of conftest.py and the modules it imports,
# collects it in a pytest subprocess, and checks that tests/_collection_checks.py fails the
# session on what it must refuse (a fixture with params that reads the device, the same case
# twice, a device compared with itself) and lets through what it must not (compared_device,
# pygpu on a device against torch on the cpu; with cpu alone selected compared_device's tests
# are not generated), and that conftest.py's DEVICE_PARAMS multiply
# only the tests that read them, only on the device type that has the option.
import os
import shutil
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

import conftest
import pygpu

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = ("conftest.py", "_collection_checks.py", "_helpers.py", "_skip_policy.py")


def _collect(tmp_path, source, *args):
    for name in SUPPORT:
        shutil.copy(os.path.join(HERE, name), tmp_path / name)
    (tmp_path / "test_case.py").write_text(textwrap.dedent(source))
    root = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))  # this pygpu
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH")))))
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                        "no:cacheprovider", "--rootdir", str(tmp_path), "-c",
                        os.devnull, *args, str(tmp_path / "test_case.py")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


REFUSED = """
    import pytest

    @pytest.fixture(params=[False, True])
    def option(request, device):
        return request.param and device.startswith("cuda")

    def test_option(device, option):
        pass

    @pytest.mark.parametrize("n", [3, 3], ids=["three", "again"])
    def test_twice(n):
        pass

    def run(device, x):
        return x

    def test_compare(device):
        assert run("cpu", 1) == run(device, 1)
    """


def test_what_multiplies_the_suite_fails_the_session(tmp_path):
    rc, out = _collect(tmp_path, REFUSED, "--device", "cpu,sim")
    assert rc == 2 and "error during collection" in out, out
    assert "test_option[False-cpu]: fixture 'option' has params and reads the device" in out, out
    assert "test_twice[again]: the same parameters as" in out, out
    assert "test_compare[cpu]: compares device=cpu with 'cpu'" in out, out
    assert "test_compare[sim]: " not in out, out  # sim against the cpu is a comparison


ALLOWED = """
    import pytest
    import pygpu

    DEVICE_PARAMS = {"opt": {"cuda": [("off", False), ("on", True)], None: "default"}}

    @pytest.fixture
    def opt(request):
        return request.param

    def run(device, x):
        return x

    def test_compare(compared_device):
        assert run("cpu", 1) == run(compared_device, 1)

    def test_against_torch(device):  # pygpu on the device, another library on the cpu
        assert run(pygpu, device) == run(object, "cpu")

    def test_reads(compared_device, opt):
        assert opt == "default"

    def test_does_not_read(compared_device):
        pass
    """


def test_compared_device_and_device_params_pass(tmp_path):
    rc, out = _collect(tmp_path, ALLOWED, "--device", "cpu,sim")
    assert rc == 0, out
    names = sorted(line.split("::")[1] for line in out.splitlines() if "::" in line)
    assert names == ["test_against_torch[cpu]", "test_against_torch[sim]", "test_compare[sim]",
                     "test_does_not_read[sim]", "test_reads[sim]"], out
    rc, out = _collect(tmp_path, ALLOWED, "--device", "cpu")
    assert rc == 0 and "1/4 tests collected (3 deselected)" in out, out  # no cpu twin, no skip
    assert "3 tests not generated: compared_device" in out, out


def _metafunc(module_params, fixturenames):
    return SimpleNamespace(module=SimpleNamespace(DEVICE_PARAMS=module_params),
                           fixturenames=fixturenames)


def test_device_params_multiply_only_their_device_and_their_readers():
    params = {"opt": {"cuda": [("off", False), ("on", True)], None: False}}
    reader = _metafunc(params, ["compared_device", "opt"])
    assert conftest._device_params(reader, "cuda:0") == [("off", {"opt": False}),
                                                         ("on", {"opt": True})]
    assert conftest._device_params(reader, "sim") == [("", {"opt": False})]
    assert conftest._device_params(_metafunc(params, ["compared_device"]), "cuda") == [("", {})]


def test_the_rules_are_registered():
    """conftest.py hands pytest the check (a conftest.py that lost the import would let
    everything through) and generates every device fixture the check knows."""
    assert conftest.pytest_collection_modifyitems.__module__ == "_collection_checks"
    assert set(conftest.DEVICE_FIXTURES) == {"device", "other_device", "kernel_device",
                                             "compared_device"}


def test_pytest_refuses_two_cases_with_one_id():
    """pyproject.toml turns on pytest's strict_parametrization_ids: without it pytest numbers
    two equal ids (<lambda>0, <lambda>1) and the suite multiplies unseen."""
    import tomllib

    root = os.path.dirname(HERE)
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        ini = tomllib.load(f)["tool"]["pytest"]["ini_options"]
    assert ini["strict_parametrization_ids"] is True
