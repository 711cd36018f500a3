# test_bench_cuda.py - benchmarks/bench_cuda.py's code path on the emulated device
# (tests/cuda_emu), at tiny sizes and one call per block: every row runs in pygpu and in
# PyTorch (on the CPU where this torch has no CUDA; on the GPU on a GPU machine), their results are checked against
# each other, and the markdown table and the JSON have a row each. The speed waits for a
# GPU (docs/cuda.md, build_support/gpu_run.sh).
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu"))
import harness  # noqa: E402

pytestmark = pytest.mark.skipif(harness.skip_reason() is not None,
                                reason=str(harness.skip_reason()))

ROWS = ["matmul fp32", "matmul bf16", "x*2+1", "sum fp32", "softmax rows", "layer_norm rows",
        "clamp", "H2D pinned", "D2H", "H2D pageable", "round trip", "tiny add", "fp32 b8",
        "bf16 b8", "CIFAR CNN fp32 b4", "SDPA causal", "pygpu's math path", "LSTM 2x16",
        "inference MLP 64x3 b16 fp32", "bf16 autocast", "int8 dynamic", "int8 static",
        "CUDA graph replay"]


def test_bench_cuda_runs_every_row_on_the_emulated_device(tmp_path):
    pytest.importorskip("torch")
    plugin = harness.build("current")
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, os.path.join(harness.ROOT, "benchmarks", "bench_cuda.py"),
                        "--quick", "--blocks", "1", "--json", str(out)], cwd=harness.ROOT,
                       env=harness.env(plugin), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(out.read_text())["rows"]
    names = [row["row"] for row in rows]
    for want in ROWS:
        assert any(want in n for n in names), (want, names)
    assert all(row["pygpu"] > 0 and row["torch"] > 0 for row in rows)
    table = [ln for ln in r.stdout.splitlines() if ln.startswith("| ")]
    assert table[0] == "| row | pygpu | torch | unit | pygpu/torch |"
    assert len(table) == 1 + len(rows)
    # the peer named: PyTorch on the CPU, or on the real GPU where this runs on a GPU machine
    import torch
    assert "against torch" in r.stdout
    assert f"on {'cuda' if torch.cuda.is_available() else 'cpu'}" in r.stdout
