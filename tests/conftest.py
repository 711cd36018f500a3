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
# directly: sim is always present, so they always run. A test that compares a
# device's result with the CPU's takes `compared_device` (every selected device but
# cpu; with cpu alone selected the test is not generated). An option that exists on
# one device type only (cuda's int8 requantizing GEMM) is a device-specific parameter:
# the test module declares it in DEVICE_PARAMS and it multiplies only the tests that
# read it, only on that device. tests/_collection_checks.py fails the session, at
# collection, on duplicate ids, the same case twice and a device compared with itself.
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

# duplicate ids, the same case twice, a device compared with itself: the session fails at
# collection (hooks registered here)
from _collection_checks import (DEVICE_FIXTURES, pytest_collection_modifyitems,  # noqa: E402,F401
                                pytest_report_collectionfinish)


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
    config.addinivalue_line("markers", "not_generated(reason): a placeholder where a device fixture has "
                            "no device; deselected at collection (tests/_collection_checks.py)")
    config.addinivalue_line("markers", "corpus: runs a real PyTorch program in a subprocess "
                            "(tests/test_corpus.py); deselected by default, run with -m corpus")
    config.stash[_DEVICES] = _selected_devices(config)  # a bad --device stops the run here


def pytest_report_header(config):
    return f"pygpu devices under test: {', '.join(config.stash[_DEVICES])}"


def _devices_of(fixture, selected):
    """The devices a device fixture takes, from the selected ones."""
    if fixture == "device":
        return selected
    if fixture == "other_device":
        # the selected devices besides cpu (tests/test_ops_devices.py: cpu has its own sum,
        # against NumPy); cpu alone where cpu is all that was selected, so that no test is
        # left without one
        return [d for d in selected if not d.startswith("cpu")] or ["cpu"]
    if fixture == "kernel_device":
        # the selected devices with kernels of their own: sim runs the CPU's (through its
        # queue), so the layouts sum (tests/test_ops_layouts.py) skips it unless it is alone
        return [d for d in selected if not d.startswith("sim")] or selected
    # compared_device: a device whose results the test compares with the CPU's; never cpu,
    # and none (the test is not generated) where cpu is all that was selected
    return [d for d in selected if not d.startswith("cpu")]


def _device_params(metafunc, device):
    """[(id, {fixture: value})]: the device-specific parameters the test reads, crossed, for
    one device. A test module declares them as DEVICE_PARAMS = {fixture: {device type:
    [(id, value), ...]}}; a device type it does not name gets the fixture's one default
    (DEVICE_PARAMS[fixture][None]), with no id. So an option that exists only on cuda
    multiplies the cuda tests alone, and only the tests that read it."""
    combos = [("", {})]
    for name, per_type in sorted(getattr(metafunc.module, "DEVICE_PARAMS", {}).items()):
        if name not in metafunc.fixturenames:
            continue
        values = per_type.get(device.split(":")[0]) or [("", per_type[None])]
        combos = [("-".join(filter(None, (cid, vid))), {**cparams, name: v})
                  for cid, cparams in combos for vid, v in values]
    return combos


def pytest_generate_tests(metafunc):
    """Device parameters, generated only for the tests that read them: a test that takes no
    device fixture is not multiplied by the devices, and one that takes no device-specific
    option (DEVICE_PARAMS) is not multiplied by its values (tests/_collection_checks.py
    fails the session where a test still is)."""
    selected = metafunc.config.stash[_DEVICES]
    options_taken = False  # the device-specific options follow the first device fixture only
    for fixture in DEVICE_FIXTURES:
        if fixture not in metafunc.fixturenames:
            continue
        devices = _devices_of(fixture, selected)
        if not devices:
            reason = (f"{fixture}: a device to compare with the cpu, and cpu is all that was "
                      "selected")
            metafunc.parametrize(fixture, [pytest.param(None, id="none", marks=pytest.mark
                                                        .not_generated(reason))])
            continue
        options = {d: [("", {})] if options_taken else _device_params(metafunc, d)
                   for d in devices}
        options_taken = True
        names = sorted({n for combos in options.values() for _, params in combos for n in params})
        cases = [pytest.param(d, *(params[n] for n in names),
                              id="-".join(filter(None, (d.replace(":", ""), oid))))
                 for d in devices for oid, params in options[d]]
        metafunc.parametrize([fixture] + names, cases, indirect=names)


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
