# conftest.py - fixtures shared by the pygpu test suite.
#
# Holds the `--device` option and the `device` fixture that every
# device-parametrized test uses, a fixture that zeroes pygpu's transfer/op
# counters, and fixtures that put the process-wide knobs (transfer guard, sim
# link model, current sim device) back after a test changes them, so that the
# order tests run in never matters.
#
# By default a device-parametrized test runs on cpu and sim, plus cuda when
# pygpu.cuda.is_available(). `--device cuda` (or `--device sim:1`, or
# `--device cpu,sim`) restricts it to the named devices; naming a device that is
# not present is a usage error, not a silent skip. Tests that exercise a
# sim-only feature (asynchrony, fault injection, the link model) use sim
# directly: sim is always present, so they always run.
#
# With PYGPU_NO_SKIP_MISSING=1 (CI's main lane sets it) a skipped test fails unless its
# reason matches tests/_skip_policy.py's ALLOWED_SKIPS: a module the test extras or CI install (torch, ml_dtypes,
# mpi4py, ...) that is missing must not pass unseen as a skip.
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for _helpers, in any import mode

import pygpu  # noqa: E402

from _helpers import to_device, to_numpy  # noqa: E402


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        action="append",
        default=None,
        help="run device-parametrized tests only on these devices "
        "(cpu, sim, sim:1, cuda, cuda:0; repeat or separate with commas)",
    )


def _default_devices():
    devices = ["cpu", "sim"]
    if pygpu.cuda.is_available():
        devices.append("cuda")
    return devices


def _selected_devices(config):
    requested = config.getoption("--device")
    if not requested:
        return _default_devices()
    names = [n.strip() for opt in requested for n in opt.split(",") if n.strip()]
    for name in names:
        if name.startswith("cuda") and not pygpu.cuda.is_available():
            raise pytest.UsageError(
                f"--device {name}: cuda is not available here "
                f"({pygpu.cuda.unavailable_reason()})"
            )
        pygpu.device(name)  # an unknown name fails here, before any test runs
    return names


_DEVICES = pytest.StashKey[list]()


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
    config.addinivalue_line("markers", "timing: asserts on wall-clock time; deselected by default (pyproject addopts), "
                            "run with -m timing (CI's timing lane, with retries)")
    config.addinivalue_line("markers", "corpus: runs a real PyTorch program in a subprocess "
                            "(tests/test_corpus.py); deselected by default, run with -m corpus")
    config.stash[_DEVICES] = _selected_devices(config)  # a bad --device stops the run here


def pytest_report_header(config):
    return f"pygpu devices under test: {', '.join(config.stash[_DEVICES])}"


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        devices = metafunc.config.stash[_DEVICES]
        metafunc.parametrize("device", devices, ids=[d.replace(":", "") for d in devices])
    if "other_device" in metafunc.fixturenames:
        # the selected devices besides cpu (tests/test_ops_devices.py: cpu has its own sum);
        # cpu alone where cpu is all that was selected, so that no test is left without one
        devices = [d for d in metafunc.config.stash[_DEVICES] if not d.startswith("cpu")] or ["cpu"]
        metafunc.parametrize("other_device", devices, ids=[d.replace(":", "") for d in devices])
    if "kernel_device" in metafunc.fixturenames:
        # the selected devices with kernels of their own: sim runs the CPU's (through its
        # queue), so the layouts sum (tests/test_ops_layouts.py) skips it unless it is alone
        selected = metafunc.config.stash[_DEVICES]
        devices = [d for d in selected if not d.startswith("sim")] or selected
        metafunc.parametrize("kernel_device", devices, ids=[d.replace(":", "") for d in devices])


def pytest_xdist_auto_num_workers(config):
    """`pytest -n auto` (the README's test command): one worker per CPU this process may run
    on (its affinity, which a container's CPU limit sets; xdist's own count would be the
    host's physical cores), at most 8: each worker imports torch, the oracle (~0.5 GB)."""
    return max(1, min(len(os.sched_getaffinity(0)), 8))


# PYGPU_NO_SKIP_MISSING=1: a skip not in _skip_policy.ALLOWED_SKIPS fails (hooks registered here)
from _skip_policy import pytest_make_collect_report, pytest_runtest_makereport  # noqa: E402,F401


@pytest.fixture
def fresh_stats():
    """Counters start from zero and no earlier work is still in flight."""
    pygpu.synchronize()
    pygpu.reset_stats()
    yield
    pygpu.synchronize()


@pytest.fixture
def guard_restored():
    """Put the transfer guard back to "allow" whatever the test did."""
    pygpu.transfer_guard("allow")
    yield
    pygpu.transfer_guard("allow")


@pytest.fixture
def link_model_off():
    """Turn the sim link model off before and after the test."""
    pygpu.sim.configure(latency_us=0, h2d_gbps=None, d2h_gbps=None)
    yield
    pygpu.sim.configure(latency_us=0, h2d_gbps=None, d2h_gbps=None)


@pytest.fixture
def sim_device_restored():
    """Put sim's current device back to 0 after the test."""
    yield
    pygpu.sim.set_device(0)


@pytest.fixture
def sim_count():
    """How many sim devices this process has (PYGPU_SIM_DEVICES, default 2)."""
    return int(os.environ.get("PYGPU_SIM_DEVICES", "2"))


@pytest.fixture
def dev():
    """Helpers for tests: dev.put(np_array, device) and dev.get(tensor)."""

    class _Dev:
        put = staticmethod(to_device)
        get = staticmethod(to_numpy)

    return _Dev


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
