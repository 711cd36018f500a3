# test_selftest.py - `python -m pygpu.selftest`: it runs every group (ops, the large
# inputs of the split reductions, pinned non-blocking copies, the training ops) on sim:0
# here and on cuda:0 where a GPU exists, and a wrong answer makes it fail.
import subprocess
import sys

import numpy as np
import pytest

import pygpu
from pygpu.tools import selftest


def test_selftest_passes_on_sim(capsys):
    assert selftest.main(["--device", "sim:0"]) == 0
    out = capsys.readouterr().out
    for dtype in ("float32", "float64"):
        assert f"sim:0    {dtype:<8} ops+large+copies+training: ok" in out


def test_selftest_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "pygpu.selftest", "--device", "sim:0",
                        "--only", "ops"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sim:0    float32  ops: ok" in r.stdout


def test_large_group_reaches_split_reduction_sizes():
    # on a GPU with ~132 SMs a contiguous row splits from 2 * 2048 elements with fewer
    # than 4 * 132 rows, a strided one from 2 * 64 with fewer than 1024 * 132 rows
    shapes = [args[0].shape for _, _, args in selftest._large_cases(np.random.default_rng(0))]
    assert (1 << 20,) in shapes and (6, 1 << 17) in shapes and (1 << 17, 5) in shapes


@pytest.mark.parametrize("group, broken, name", [
    ("training", "_adam_ref", "Adam step"),
    ("training", "_sgd_ref", "SGD momentum step"),
])
def test_selftest_reports_a_wrong_answer(monkeypatch, group, broken, name):
    monkeypatch.setattr(selftest, broken, lambda w, grads: w + 1.0)
    assert name in selftest.check("sim:0", "float32", (group,))


def test_selftest_reports_a_wrong_op(monkeypatch, capsys):
    def wrong(x):  # right on the device, off by one in the NumPy reference
        return x.sum() if isinstance(x, pygpu.Tensor) else x.sum() + 1.0
    monkeypatch.setattr(selftest, "_large_cases", lambda rng: [("wrong", wrong, (np.ones(4096),))])
    assert selftest.main(["--device", "sim:0", "--only", "large"]) == 1
    assert "FAILED: wrong" in capsys.readouterr().out


@pytest.mark.skipif(not pygpu.cuda.is_available(), reason="needs a CUDA GPU")
def test_selftest_passes_on_cuda(capsys):
    assert selftest.main(["--device", "cuda:0"]) == 0, capsys.readouterr().out
