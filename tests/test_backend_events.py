# test_backend_events.py - the CUDA backend's contracts that can be checked
# without a GPU:
#   - the per-storage pending-work record is backend-neutral: a host buffer
#     with a write pending on a second backend (a fake standing in for cuda,
#     through _C._test_event_record) is waited for before sim copies from it,
#     and a sim write into a host buffer is waited for by the other backend;
#   - a host->device copy waits for a pending device->host write into its
#     source from another device's queue (sim:0 -> pinned host -> sim:1, with
#     the link model making the first copy slow);
#   - pin_memory() loads the CUDA plugin first, so "pinned" is the pinning of
#     the accelerator that exists, and counts as pinned;
#   - the GIL is given up around blocking allocator calls;
#   - loading the plugin: an ABI mismatch, a plugin that does not say its
#     ABI, and a missing libcublas each give a message naming the problem,
#     and two threads loading at once both see the outcome of one load.
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
from pygpu import _C

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_py(code, timeout=120):
    """Run `code` in a fresh interpreter (process-wide state: the cuda loader)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ---- the pending-work record -----------------------------------------------------------

def test_record_shared_by_two_backends():
    r = _C._test_event_record()
    # sim waited on the host for the fake's pending write before queuing its copy ...
    assert r["fake_waits_at_enqueue"] == 1
    # ... so it copied the bytes that write produced, not the zeros before it
    assert r["copied"] == 42.0
    # each event keeps its own backend: the write is still the fake's, the read is sim's
    assert r["write_is_fake"] and r["read_is_sim"]
    assert r["fake_last_seq"] == 7
    # the fake (cuda's role) waited for sim's pending d2h into a host buffer through sim
    assert r["copied_back"] == 42.0
    # waiting for a buffer to go idle asks each backend about its own events
    assert r["fake_waits_after_idle"] == r["fake_waits_before_idle"] + 1


@pytest.mark.parametrize("non_blocking_h2d", [True, False])
def test_h2d_waits_for_pending_d2h_into_its_source(link_model_off, sim_count, non_blocking_h2d):
    if sim_count < 2:
        pytest.skip("needs sim:0 and sim:1")
    n = 1 << 16
    want = np.arange(n, dtype=np.float64) * 3 + 1
    x = pygpu.tensor(want, device="sim:0")
    pygpu.synchronize("sim:0")
    host = pygpu.zeros(n, dtype=pygpu.float64).pin_memory()
    # the d2h into `host` takes 200 ms on sim:0's copy stream
    pygpu.sim.configure(latency_us=200_000)
    host.copy_(x, non_blocking=True)
    pygpu.sim.configure()  # the h2d itself is instant: only waiting can make it right
    y = host.to("sim:1", non_blocking=non_blocking_h2d)
    np.testing.assert_array_equal(y.numpy(), want)


def test_pinned_host_buffer_round_trip_between_devices(link_model_off, sim_count):
    """d2h from sim:1 and h2d to sim:0 through one pinned buffer, repeatedly:
    every round must see the previous round's bytes."""
    if sim_count < 2:
        pytest.skip("needs sim:0 and sim:1")
    host = pygpu.zeros(4096, dtype=pygpu.float32).pin_memory()
    pygpu.sim.configure(latency_us=2_000)
    for k in range(5):
        src = pygpu.full((4096,), float(k), dtype=pygpu.float32, device=f"sim:{k % 2}")
        host.copy_(src, non_blocking=True)
        back = host.to(f"sim:{(k + 1) % 2}", non_blocking=True)
        assert back.max().item() == k and back.min().item() == k


def test_pinned_relay_between_devices_of_one_type(device, link_model_off):
    """device:0 -> pinned host -> device:1 (or :0 again), non_blocking both ways,
    the source changing every round: on cuda this is the d2h-then-h2d case of
    two streams; on sim, of two copy streams."""
    kind = pygpu.device(device).type
    if kind == "cpu":
        pytest.skip("needs an accelerator")
    count = (pygpu.sim if kind == "sim" else pygpu.cuda).device_count()
    a, b = f"{kind}:0", f"{kind}:{min(1, count - 1)}"
    n = 1 << 18
    host = pygpu.zeros(n, dtype=pygpu.float32).pin_memory()
    base = pygpu.arange(n, device=a).astype(pygpu.float32)
    if kind == "sim":
        pygpu.sim.configure(latency_us=20_000)  # every sim copy pending for 20 ms
    for k in range(3):
        host.copy_(base + k, non_blocking=True)
        got = host.to(b, non_blocking=True)
        assert got.numpy()[[0, n - 1]].tolist() == [k, n - 1 + k]


def test_pinned_buffer_shared_by_sim_and_cuda(link_model_off):
    """The issue's case: one pinned buffer written by sim (slow d2h), then read
    by cuda (h2d), then written by cuda and read by sim. Needs a GPU."""
    if not pygpu.cuda.is_available():
        pytest.skip(f"cuda unavailable: {pygpu.cuda.unavailable_reason()}")
    n = 1 << 16
    want = np.arange(n, dtype=np.float32)
    host = pygpu.zeros(n, dtype=pygpu.float32).pin_memory()
    s = pygpu.tensor(want, device="sim:0")
    pygpu.sim.configure(latency_us=100_000)
    host.copy_(s, non_blocking=True)            # sim's pending write
    c = host.to("cuda:0", non_blocking=True)    # cuda must wait for it
    np.testing.assert_array_equal(c.numpy(), want)
    host.copy_(c * 2, non_blocking=True)        # cuda's pending write
    s2 = host.to("sim:0", non_blocking=True)    # sim must wait for it
    np.testing.assert_array_equal(s2.numpy(), want * 2)


# ---- pin_memory and the CUDA plugin ---------------------------------------------------

def test_pin_memory_loads_the_cuda_plugin_first():
    out = run_py("""
        import pygpu
        acc = pygpu.cuda._acc
        assert not acc._tried, "importing pygpu must not load the CUDA plugin"
        p = pygpu.arange(8).astype(pygpu.float32).pin_memory()
        assert acc._tried, "pin_memory() must load the plugin (pinned memory is CUDA's when a GPU exists)"
        assert p.is_pinned()
        pygpu.reset_stats()
        d = p.to("sim:0", non_blocking=True)
        t = pygpu.stats().transfers
        assert [(x["count"], x["pinned"], x["async"]) for x in t] == [(1, 1, 1)], t
        assert d.tolist() == list(range(8))
        print("cuda:", pygpu.cuda.unavailable_reason())
    """)
    assert "cuda:" in out


def test_non_blocking_to_host_loads_the_cuda_plugin_first():
    run_py("""
        import pygpu
        x = pygpu.ones(4, device="sim:0")
        assert not pygpu.cuda._acc._tried
        h = x.to("cpu", non_blocking=True)
        assert pygpu.cuda._acc._tried and h.is_pinned()
        pygpu.synchronize()
        assert h.tolist() == [1.0] * 4
    """)


# ---- the GIL around blocking calls -----------------------------------------------------

def test_blocking_hooks_give_up_the_gil():
    assert _C._test_blocking_hooks() == (True, False, True)


def test_blocking_hooks_from_a_thread_without_the_gil():
    """A sim worker frees pinned buffers: the hooks must not touch a GIL it lacks."""
    import threading
    errors = []

    def churn():
        try:
            for _ in range(50):
                h = pygpu.ones(256).pin_memory()
                d = h.to("sim:0", non_blocking=True)
                del h  # the copy task may hold the last reference, on the worker
                assert d.sum().item() == 256
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# ---- loading the plugin ----------------------------------------------------------------

FAKE_PLUGIN = r"""
#include <stddef.h>
#ifdef ABI
__attribute__((visibility("default"))) const int pg_plugin_abi_version = ABI;
#endif
#ifdef NEEDS_LIB
int missing_fn(void);
int use_it(void) { return missing_fn(); }
#endif
__attribute__((visibility("default"))) int pg_plugin_init(const void *core, const void **out)
{
    (void)core; (void)out;
    return 7; /* refuse: the tests must never get this far */
}
"""


@pytest.fixture(scope="module")
def fake_plugins(tmp_path_factory):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build fake plugins")
    d = tmp_path_factory.mktemp("plugins")
    src = d / "fake.c"
    src.write_text(FAKE_PLUGIN)

    def build(name, *flags):
        out = d / name
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(out), str(src), *flags], check=True,
                       capture_output=True)
        return str(out)

    # a stand-in libcublas that exists at link time and is gone at load time
    stub = d / "stub.c"
    stub.write_text("int missing_fn(void) { return 1; }\n")
    lib = d / "libcublas.so.99"
    subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname,libcublas.so.99", "-o", str(lib),
                    str(stub)], check=True, capture_output=True)
    plugins = {
        "abi999": build("abi999.so", "-DABI=999"),
        "no_abi": build("no_abi.so"),
        "no_cublas": build("no_cublas.so", "-DABI=2", "-DNEEDS_LIB", str(lib)),
    }
    lib.unlink()
    return plugins


def _load_reason(path):
    return run_py(f"""
        from pygpu import _C
        assert _C._load_cuda({path!r}) is False
        print(_C._cuda_reason())
    """).strip()


def _core_abi():
    """PG_BACKEND_ABI_VERSION, as csrc/core/pg_backend.h defines it."""
    import pathlib
    import re
    header = pathlib.Path(__file__).resolve().parents[1] / "csrc" / "core" / "pg_backend.h"
    return int(re.search(r"#define\s+PG_BACKEND_ABI_VERSION\s+(\d+)", header.read_text()).group(1))


def test_plugin_abi_mismatch_names_both_versions(fake_plugins):
    why = _load_reason(fake_plugins["abi999"])
    assert "built for backend ABI 999" in why and f"this pygpu core has ABI {_core_abi()}" in why, why
    assert "rebuild" in why


def test_plugin_without_abi_symbol_is_refused_by_name(fake_plugins):
    why = _load_reason(fake_plugins["no_abi"])
    assert "pg_plugin_abi_version" in why and f"ABI {_core_abi()}" in why, why


def test_missing_cublas_says_what_to_install(fake_plugins):
    why = _load_reason(fake_plugins["no_cublas"])
    assert why.startswith("cuBLAS not found: pip install nvidia-cublas"), why
    assert "libcublas.so.99" in why


def test_two_threads_loading_see_one_outcome(fake_plugins):
    """The second thread must wait for the first load, not report "not built"."""
    out = run_py(f"""
        import threading, time
        import pygpu, pygpu.cuda as cuda
        from pygpu import _C
        cuda.PLUGIN = {fake_plugins["abi999"]!r}
        real = _C._load_cuda
        def slow_load(path):
            time.sleep(0.3)
            return real(path)
        _C._load_cuda = slow_load
        reasons = []
        ts = [threading.Thread(target=lambda: reasons.append(cuda.unavailable_reason()))
              for _ in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        assert len(set(reasons)) == 1, reasons
        print(reasons[0])
    """)
    assert "built for backend ABI 999" in out, out


def test_not_built_reason_quotes_the_build(tmp_path):
    """No plugin: the reason is the build's own (nvcc not found, PYGPU_CUDA=0, ...)."""
    record = tmp_path / "reason.txt"
    record.write_text("nvcc not found (looked in ...): no CUDA toolkit\n")
    out = run_py(f"""
        import pygpu, pygpu.cuda as cuda
        cuda.PLUGIN = {str(tmp_path / "absent.so")!r}
        cuda.BUILD_REASON = {str(record)!r}
        print(cuda.unavailable_reason())
        cuda.BUILD_REASON = {str(tmp_path / "no-record.txt")!r}
        print(cuda.unavailable_reason())
    """)
    first, second = out.strip().splitlines()
    assert first == "pygpu was built without the CUDA backend: nvcc not found (looked in ...): no CUDA toolkit"
    assert second == "pygpu was built without the CUDA backend (no absent.so)"
