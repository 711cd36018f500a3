# _skip_policy.py - which skips CI accepts: with PYGPU_NO_SKIP_MISSING=1 (CI's main lane sets
# it) a skipped test fails unless its reason matches ALLOWED_SKIPS. A test that needs a module
# the test extras (pyproject's [test]) or .ci/run install (torch, ml_dtypes, mpi4py, sklearn,
# matplotlib, ...) skips where it is missing, on a developer's machine; in CI that would hide
# the test, so there it fails. tests/conftest.py registers the two hooks below;
# tests/test_skip_policy.py checks them. A new legitimate skip: add its reason here, with why.
import os
import re

import pytest

# (reason pattern, why): each a fact about the machine, never about what was installed
ALLOWED_SKIPS = (
    (r"needs a CUDA GPU|cuda unavailable|cuda absent|CUDA plugin does not load|needs an accelerator"
     r"|NVML cannot list processes|torch without CUDA|could not import 'cupy'",
     "no GPU here: the CUDA tests run in the emulated-CUDA lane and on GPU machines (CuPy needs "
     "a GPU; PyTorch's CPU wheel, CI's oracle, has no CUDA)"),
    (r"needs two cuda devices|needs two GPUs|need two GPUs|needs at least 2 cores",
     "fewer GPUs or cores than the test needs"),
    (r"this CPU (has only|has no|lacks)|no AVX|does not run here", "an ISA level this CPU lacks"),
    (r"no spare core", "the machine is too loaded to measure a parallel speed-up"),
    (r"network namespaces not permitted|needs root, iproute2 and unshare",
     "the container may not make network namespaces (tests/test_two_machines.py)"),
    (r"NCCL unavailable", "NCCL is a lane of its own (.ci/run: nvidia-nccl-cu13, PYGPU_REQUIRE_NCCL=1)"),
    # a parametrization that has nothing to check for one of its values
    (r"one optimizer is enough at the benchmark's size|cuBLAS takes no mask",
     "a case with nothing to check (test_bf16_panels, test_prune say why)"),
)


def skip_reason(report):
    lr = report.longrepr
    return str(lr[2] if isinstance(lr, tuple) and len(lr) == 3 else lr)


def unexpected_skip(report):
    """The reason of a skip CI must not accept, or None."""
    if os.environ.get("PYGPU_NO_SKIP_MISSING") != "1" or not report.skipped:
        return None
    if hasattr(report, "wasxfail"):
        return None  # an expected failure, reported as one
    reason = skip_reason(report)
    if any(re.search(pattern, reason) for pattern, _ in ALLOWED_SKIPS):
        return None
    return reason


def _fail_unexpected_skip(report):
    reason = unexpected_skip(report)
    if reason is not None:
        report.outcome = "failed"
        report.longrepr = (f"skipped, and PYGPU_NO_SKIP_MISSING=1 accepts only the skips in "
                           f"tests/_skip_policy.py ALLOWED_SKIPS: {reason}\n(a module the test "
                           "extras or .ci/run install is missing, or a new skip needs its reason "
                           "listed there)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_unexpected_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield  # a module-level importorskip skips the whole file at collection
    _fail_unexpected_skip(outcome.get_result())
