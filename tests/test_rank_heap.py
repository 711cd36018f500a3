"""A DDP rank keeps its freed host memory (pygpu.distributed.keep_heap): without it glibc
handed the heap's top back to the kernel after each step and the next step faulted the
same pages in again (729 faults, about 2.5 ms of CPU per step and rank, docs/parallel.md).
Each case runs in a fresh interpreter: mallopt is process-wide."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STEPS = """
import resource, sys
import pygpu
from pygpu.distributed import keep_heap
print("kept", keep_heap())
big = pygpu.zeros((1 << 20,)); del big  # 4 MB, mmapped: glibc's thresholds slide to 4 / 8 MB
def step():  # a training step's transient tensors: 12 MB from the heap, written, freed
    ts = [pygpu.ones((1 << 18,)) for _ in range(12)]
    del ts
step()
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print("faults", (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 20)
"""


def _run(env_extra):
    # PYGPU_HOST_CACHE_MB=0: pygpu's own host cache (docs/devices.md) would keep these 1 MB
    # blocks itself and never hand them to glibc, which is what is measured here
    env = dict(os.environ, PYTHONPATH=ROOT, PYGPU_HOST_CACHE_MB="0", **env_extra)
    for k in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "PYGPU_KEEP_HEAP"):
        if k not in env_extra:
            env.pop(k, None)
    out = subprocess.run([sys.executable, "-c", STEPS], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    return lines["kept"] == "True", float(lines["faults"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_kept_heap_stops_the_per_step_page_faults():
    kept, faults = _run({})
    if not kept:
        pytest.skip("this libc has no mallopt (not glibc)")
    assert faults < 50  # 0 here
    kept, faults = _run({"PYGPU_KEEP_HEAP": "0"})  # the opt-out: glibc's own trimming
    assert not kept
    assert faults > 1000  # 12 MB faulted back in per step (3072 pages; 2016 measured)


def test_a_malloc_setting_in_the_environment_wins():
    kept, _ = _run({"MALLOC_TRIM_THRESHOLD_": "1048576"})
    assert not kept
