"""coverage_workers.py - a pytest plugin that coverage_diff.py loads into every pytest it runs
(`-p coverage_workers`): it keeps pytest-xdist's workers alive until gcov has written their
counters, and says so when one was killed anyway.

gcov writes a process's counters (the .gcda files) when the process exits, after Python's
own finalization. At the end of a session pytest-xdist asks each worker to exit and, after
NodeManager.EXIT_TIMEOUT (10 s), kills the ones still running (execnet's Group.terminate:
SIGKILL). A worker whose exit takes longer than that (finalizing torch and pygpu, then
merging 113 .gcda files, on a loaded machine, niced) loses the counters of every test it ran,
or of the files gcov had not written yet: the lines those tests alone reach read as "lost".
Measured on this build (tests/test_rnn.py, -n 2, load 19): 890 csrc/ lines with the kill,
4,226 without it. So here the controller waits for its workers (WAIT_S), and a kill that
happens all the same is written to $PYGPU_COVERAGE_KILLED, which coverage_diff.py reports as
a failure of the run: its counts are then a lower bound, not a measurement.
Test-time only; not imported by pygpu.
"""
import os
import sys

# how long the controller waits for a worker to exit before killing it (pytest-xdist: 10 s)
WAIT_S = 1800


def pytest_configure(config):
    try:
        from execnet import gateway_io
        from xdist import workermanage
    except ImportError:  # no pytest-xdist: every test runs in this process, which exits normally
        return
    workermanage.NodeManager.EXIT_TIMEOUT = WAIT_S
    kill = gateway_io.Popen2IOMaster.kill
    if getattr(kill, "_coverage_noted", False):
        return

    def noted_kill(self):
        note = (f"coverage_workers: a pytest-xdist worker (pid {self.popen.pid}) did not exit "
                f"within {WAIT_S} s and was killed: its gcov counters are lost\n")
        sys.stderr.write(note)
        path = os.environ.get("PYGPU_COVERAGE_KILLED")
        if path:
            with open(path, "a") as f:
                f.write(note)
        kill(self)

    noted_kill._coverage_noted = True
    gateway_io.Popen2IOMaster.kill = noted_kill
