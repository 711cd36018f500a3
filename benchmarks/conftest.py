# conftest.py - setup shared by the pygpu benchmarks (pytest-benchmark).
#
# Benchmark files are named bench_*.py so that the default test run (testpaths
# = tests) never picks them up; this conftest collects them when pytest is
# pointed at benchmarks/. At session start the header says which BLAS library
# and CPU kernel NumPy (and pygpu, if it loads one) will use, with how many
# threads, and which OPENBLAS_* variables are set, because a matmul ratio means
# nothing without them. Each benchmark compares pygpu against the real
# alternative in the same group; see README.md for how to read the ratios.
#
# Each side is timed in a block of its own, and only once the other side's threads are
# asleep: NumPy's OpenBLAS keeps its idle threads spinning for ~0.1 s after a call, and
# pygpu's pools spin briefly too, on the cores the next benchmark wants (a pygpu matmul
# timed right after NumPy's ran up to 1.9x slower). The `benchmark` fixture below pauses
# before it starts timing, which also covers a benchmark's own NumPy correctness check.
# bench_numpy_interleave.py measures the interleaved case on purpose.
import os
import time

import numpy as np
import pytest

import pygpu


def pytest_collect_file(file_path, parent):
    # A file named on the command line is collected by pytest itself.
    if file_path.suffix == ".py" and file_path.name.startswith("bench_") and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def blas_description():
    """One line per BLAS/OpenMP pool loaded in this process (threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ["threadpoolctl not installed (pip install threadpoolctl): BLAS kernel unknown"]
    lines = []
    for pool in threadpool_info():
        lines.append(
            f"{pool.get('internal_api')} {pool.get('version')} kernel={pool.get('architecture', '?')} "
            f"threads={pool.get('num_threads')} ({os.path.basename(pool.get('filepath', ''))})"
        )
    return lines or ["no BLAS thread pool found"]


def pytest_report_header(config):
    env = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "OMP_", "MKL_"))}
    return [
        f"numpy {np.__version__}, pygpu devices: {[str(d) for d in pygpu.devices()]}",
        *(f"BLAS: {line}" for line in blas_description()),
        f"BLAS env: {env or 'none set'}",
        f"cpus: {os.cpu_count()}",
    ]


@pytest.fixture(autouse=True)
def _settle_devices():
    """No work from the previous benchmark is still running; link model off."""
    pygpu.synchronize()
    pygpu.sim.configure(latency_us=0, h2d_gbps=None, d2h_gbps=None)
    yield
    pygpu.synchronize()


BLAS_SETTLE_S = 0.25  # longer than OpenBLAS's default idle spin (2^28 cycles)


@pytest.fixture
def benchmark(benchmark):
    """pytest-benchmark's fixture, pausing BLAS_SETTLE_S before it times anything."""
    base = type(benchmark)

    class Settled(base):
        def __call__(self, *args, **kwargs):
            time.sleep(BLAS_SETTLE_S)
            return base.__call__(self, *args, **kwargs)

        def pedantic(self, *args, **kwargs):
            time.sleep(BLAS_SETTLE_S)
            return base.pedantic(self, *args, **kwargs)

    benchmark.__class__ = Settled
    return benchmark


@pytest.fixture
def rng():
    return np.random.default_rng(0)
