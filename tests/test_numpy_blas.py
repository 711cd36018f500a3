"""import pygpu makes NumPy's OpenBLAS threads sleep soon after each call (issue 45,
pygpu/_numpy_blas.py): whether NumPy was imported first (the running library is changed) or
after (the environment variable is set before it loads), and a user's own
OPENBLAS_THREAD_TIMEOUT is kept. Each case runs in a fresh interpreter. The threads' spinning is
seen as process CPU time while the main thread sleeps after a NumPy product."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
first = sys.argv[1]
if first == "pygpu":
    import pygpu
import numpy as np
if first == "numpy":
    import pygpu
a = np.ones((512, 512), np.float32)
for _ in range(3):
    a @ a
spin = []
for _ in range(3):
    a @ a
    c = time.process_time()
    time.sleep(0.1)
    spin.append(time.process_time() - c)  # what NumPy's idle workers burn meanwhile
print(json.dumps({"status": pygpu.cpu.numpy_blas_status(), "spin": min(spin),
                  "product": float((a @ a)[0, 0])}))
"""


def _run(first, **env):
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.pop("OPENBLAS_THREAD_TIMEOUT", None)
    e.update(env)
    out = subprocess.run([sys.executable, "-c", CHILD, first], env=e, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("first", ["numpy", "pygpu"])
def test_numpy_blas_threads_sleep_after_a_call(first):
    res = _run(first)
    want = "applied to NumPy's running OpenBLAS" if first == "numpy" else "set before NumPy"
    assert want in res["status"], res
    assert res["product"] == 512.0  # NumPy still computes, its threads restarted
    assert res["spin"] < 0.02, res  # 2^28 cycles of spinning would be ~0.1 s of CPU


def test_a_users_own_timeout_is_kept():
    res = _run("numpy", OPENBLAS_THREAD_TIMEOUT="20")
    assert res["status"].startswith("left alone: OPENBLAS_THREAD_TIMEOUT=20"), res
