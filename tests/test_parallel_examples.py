# test_parallel_examples.py - the multi-GPU guide's two scripts, ported to sim (examples/), run as
# a user runs them: the DataParallel FooNet script with python, the DDP --local_rank script under
# `python -m pygpu.distributed.launch` and under plain `mpirun -np 2`. .ci/run runs them too.
import os
import re
import subprocess
import sys

import pytest

import pygpu

from _mpi import PKG_ROOT, require_mpi

EXAMPLES = os.path.join(PKG_ROOT, "examples")
ENV = dict(os.environ, PYTHONPATH=PKG_ROOT, PYTHONUNBUFFERED="1", OMPI_MCA_rmaps_base_oversubscribe="1",
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_pml="ob1",
           OMPI_MCA_btl="self,vader,tcp")
pytestmark = pytest.mark.skipif(not os.path.isdir(EXAMPLES), reason="no examples/ beside the package")


def _run(cmd, timeout=180):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout, cwd=PKG_ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.skipif(pygpu.sim.device_count() != 2, reason="the guide's run has two devices")
def test_data_parallel_foonet_script_runs_as_written():
    out = _run([sys.executable, os.path.join(EXAMPLES, "data_parallel_foonet.py")])
    assert out.count("batch size in forward: 8") == 2  # 16 rows, one half per device
    assert "model outputs.size: torch.Size([16, 3])" in out and "device_count :2" in out


def _checksums(out):
    found = re.findall(r"rank (\d) of 2 on (sim:\d): weights checksum (\S+)", out)
    assert sorted(r for r, _, _ in found) == ["0", "1"], out
    assert len({c for _, _, c in found}) == 1, out  # every rank ends with the same weights
    return {r: d for r, d, _ in found}


def test_ddp_local_rank_script_under_launch():
    require_mpi()
    out = _run([sys.executable, "-m", "pygpu.distributed.launch", "--nproc_per_node=2",
                os.path.join(EXAMPLES, "ddp_local_rank.py")])
    assert _checksums(out) == {"0": "sim:0", "1": "sim:1"}  # --local_rank reached each rank
    assert "epoch 1 loss" in out


def test_ddp_local_rank_script_under_mpirun():
    require_mpi()
    from pygpu.distributed.run import find_mpirun
    out = _run([find_mpirun(), "-np", "2", sys.executable, os.path.join(EXAMPLES, "ddp_local_rank.py")])
    assert _checksums(out) == {"0": "sim:0", "1": "sim:0"}  # no --local_rank: each process's own sim:0


def test_tensor_size_is_torchs_spelling_of_shape():
    t = pygpu.zeros(4, 3)
    assert t.size() == (4, 3) and t.size(0) == 4 and t.size(-1) == 3
    with pytest.raises(IndexError, match="out of bounds"):
        t.size(2)


def test_docs_parallel_python_blocks_run(capsys):
    import re
    path = os.path.join(PKG_ROOT, "docs", "parallel.md")
    if not os.path.exists(path):
        pytest.skip("docs/ not beside the package")
    with open(path) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks
    ns = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/parallel.md python block {i}", "exec"), ns)
    out = capsys.readouterr().out
    if pygpu.sim.device_count() == 2:
        assert out.count("batch size in forward: 8") == 2 and "replicate" in out
