# test_cuda_backend.py - the CUDA backend beyond the op table, one section per area: streams
# and copies (polling, two GPUs, the copy stream), NCCL's timeouts and teardown, pinned memory
# and its cache, NVML (free memory, smi), the training kernels' errors and reproducibility.
#
# What can be shown without a GPU is shown on sim, with fakes (a fake NVML, a
# fake process group) or against the built plugin's option table; what needs a
# GPU runs where one exists and skips cleanly elsewhere (`needs_cuda`). Where a
# defect can only show on a GPU (an event on the wrong device, a stale
# "not ready" error), the test here is the GPU one: the code is in
# csrc/backends/cuda/cuda_queue.c and cuda_copy.c.
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
from pygpu.cuda import _nvml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

needs_cuda = pytest.mark.skipif(not pygpu.cuda.is_available(),
                                reason=f"cuda unavailable: {pygpu.cuda.unavailable_reason()}")
needs_two_gpus = pytest.mark.skipif(
    not pygpu.cuda.is_available() or pygpu.cuda.device_count() < 2, reason="needs two GPUs")


def run_py(code, timeout=300, env=None):
    """Run `code` in a fresh interpreter (process-wide CUDA state)."""
    full = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **(env or {}))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=full)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def plugin():
    """Load the CUDA plugin (its extras table is then pygpu._C's _cuda_* methods),
    or skip where it is not built."""
    if not pygpu.cuda.is_built():
        pytest.skip("the CUDA plugin is not built")
    pygpu.cuda.is_available()  # loads it (and its cuBLAS) through the core
    if not pygpu._C._load_cuda(None):
        pytest.skip(f"the CUDA plugin does not load: {pygpu.cuda.unavailable_reason()}")
    return pygpu._C


def get_option(C, name):
    return C._cuda_get_option(name)


# ---- a cleared "not ready" after polling a non-blocking copy --------------------------

@needs_cuda
def test_first_op_after_nonblocking_pinned_copy_runs():
    """cudaEventQuery's cudaErrorNotReady used to stay in the last-error slot, so the
    next kernel launch failed with "device not ready"."""
    n = 1 << 22
    host = pygpu.arange(n).astype(pygpu.float32).pin_memory()
    for k in range(5):
        d = host.to("cuda:0", non_blocking=True)  # polled (not ready yet) at the next copy
        back = (d * 2 + k).to("cpu", non_blocking=True)
        y = d + 1  # the first op after the copies: must launch
        assert y[n - 1].item() == n
        back.wait()
        assert back.numpy()[[0, n - 1]].tolist() == [k, 2 * (n - 1) + k]


# ---- two GPUs: the device is restored, peer copies ------------------------------

@needs_two_gpus
def test_copies_between_gpus_keep_each_device_usable():
    """A copy that waited for the other GPU's stream used to leave that GPU current:
    the next events were created there and every later copy failed."""
    for k in range(4):
        a = pygpu.full((1 << 20,), float(k), device="cuda:1") * 3
        b = a.to("cuda:0", non_blocking=True)  # waits for cuda:1's kernel, on the device
        c = (b + 1).to("cuda:1")
        assert c.sum().item() == (3 * k + 1) * (1 << 20)
        host = b.to("cpu", non_blocking=True)  # an event on cuda:0, made on cuda:0
        host.wait()
        assert host.numpy()[0] == 3 * k


# ---- a copy stream, device-side waits --------------------------------------------------

@needs_cuda
def test_prefetch_on_the_copy_stream_is_ordered_with_kernels():
    """Non-blocking h2d copies go to the copy stream; the kernels that read them wait
    on the device, and a block freed by the compute stream is not written early."""
    n = 1 << 20
    acc = pygpu.zeros(n, device="cuda:0")
    total = 0.0
    for k in range(20):
        batch = pygpu.full((n,), float(k)).pin_memory()
        d = batch.to("cuda:0", non_blocking=True)  # copy stream
        acc = acc + d                             # compute stream, after the copy
        tmp = acc * 0                             # freed at once: its block is reused next round
        del tmp
        total += k
    assert acc.min().item() == total and acc.max().item() == total


@needs_cuda
def test_d2h_on_the_copy_stream_reads_finished_data():
    x = pygpu.arange(1 << 20, device="cuda:0").astype(pygpu.float32)
    for k in range(5):
        y = x * k                                 # compute stream
        h = y.to("cpu", non_blocking=True)        # copy stream, after y's kernel
        del y                                     # its block stays held until the DMA is done
        z = x + 1                                 # may take y's block on the compute stream
        h.wait()
        assert h.numpy()[[1, 1000]].tolist() == [k, 1000 * k]
        assert z[0].item() == 1


# ---- NCCL: timeouts, abort, destroy ------------------------------------------------

def test_nccl_timeout_validation():
    from pygpu.distributed import _nccl
    with pytest.raises(ValueError, match=">= 0 seconds"):
        _nccl.set_timeout(-1)


def test_nccl_timeout_from_env_must_be_a_number(monkeypatch):
    from pygpu.distributed import _nccl
    monkeypatch.setenv("PYGPU_NCCL_TIMEOUT", "ten")
    with pytest.raises(ValueError, match="PYGPU_NCCL_TIMEOUT='ten'"):
        _nccl._timeout_from_env()


def test_destroy_process_group_destroys_the_nccl_communicator(monkeypatch):
    """The default group's close() (pygpu/distributed/_group.py) finalizes its NCCL
    communicator and frees its MPI communicator, once: a second destroy is harmless."""
    import pygpu.distributed as dist
    from pygpu.distributed import _group, groups

    class FakeNccl:
        closed = 0

        def close(self):
            FakeNccl.closed += 1

    class FakeComm:
        freed = 0

        def Free(self):
            FakeComm.freed += 1

    pg = object.__new__(_group.ProcessGroup)  # its state only: no MPI job here
    pg.nccl_queue = pg.stage_queue = None
    pg.nccl, pg.ring_comm = FakeNccl(), FakeComm()
    monkeypatch.setattr(groups, "_world", pg)
    assert dist.is_initialized()
    dist.destroy_process_group()
    assert FakeNccl.closed == 1 and FakeComm.freed == 1 and not dist.is_initialized()
    dist.destroy_process_group()  # a second call is harmless
    assert FakeNccl.closed == 1


def test_plugin_nccl_timeout_option():
    C = plugin()
    C._cuda_set_option("nccl_timeout_s", 7)
    assert get_option(C, "nccl_timeout_s") == 7
    with pytest.raises(ValueError, match="nccl_timeout_s must be >= 0"):
        C._cuda_set_option("nccl_timeout_s", -1)
    assert get_option(C, "nccl_timeout_s") == 7
    C._cuda_set_option("nccl_timeout_s", 0)


@needs_cuda
def test_nccl_missing_peer_times_out_instead_of_hanging():
    """One rank of two joins: ncclCommInitRank used to block forever."""
    from pygpu.distributed import _nccl
    try:
        _nccl.version()
    except _nccl.NcclUnavailable as e:
        pytest.skip(str(e))

    class OneOfTwo:  # the MPI communicator NcclGroup needs: rank 0 of 2, alone
        def Get_rank(self):
            return 0

        def Get_size(self):
            return 2

        def bcast(self, value, root=0):
            return value

    _nccl.set_timeout(3)
    try:
        with pytest.raises(_nccl.NcclError, match="timed out after 3 s"):
            _nccl.NcclGroup(OneOfTwo(), 0)
    finally:
        _nccl.set_timeout(0)


# ---- pinned memory on the chosen device -------------------------------------------

def test_set_device_tells_the_plugin_where_to_pin(monkeypatch):
    calls = []
    monkeypatch.setattr(pygpu.cuda, "_set_option", lambda name, value: calls.append((name, value)))
    monkeypatch.setattr(pygpu.cuda._acc, "_check_index", lambda index: None)
    before = pygpu.cuda._acc._current
    try:
        pygpu.cuda.set_device(3)
        assert calls == [("current_device", 3)]
        assert pygpu.cuda.current_device() == 3
    finally:
        pygpu.cuda._acc._current = before


def test_plugin_current_device_option_is_checked():
    C = plugin()
    before = get_option(C, "current_device")
    for bad in (99, -1):
        with pytest.raises(IndexError, match="current_device"):
            C._cuda_set_option("current_device", bad)
    assert get_option(C, "current_device") == before


@needs_two_gpus
def test_pin_memory_after_set_device_makes_no_context_on_gpu0():
    out = run_py("""
        import os, pygpu
        from pygpu import _nvml
        pygpu.cuda.set_device(1)
        p = pygpu.ones(1 << 20).pin_memory()
        pids = _nvml.compute_pids(pygpu.cuda.pci_bus_id(0))
        print("skip" if pids is None else os.getpid() in pids)
    """)
    if out.strip() == "skip":
        pytest.skip("NVML cannot list processes here")
    assert out.strip() == "False"


# ---- the caching pinned-host allocator --------------------------------------------

def test_nonblocking_d2h_reuses_pinned_buffers(link_model_off):
    x = pygpu.arange(3000, device="sim:0").astype(pygpu.float32)
    pygpu.sim.empty_cache()
    s0 = pygpu.sim.memory_stats()
    for k in range(5):
        y = (x + k).to("cpu", non_blocking=True)
        assert y.numpy()[[0, 2999]].tolist() == [k, 2999 + k]
        del y
    s1 = pygpu.sim.memory_stats()
    assert s1["pinned_allocs"] - s0["pinned_allocs"] == 1  # one pinning, then the cache
    assert s1["pinned_cache_hits"] - s0["pinned_cache_hits"] == 4
    assert s1["pinned_cached"] >= 3000 * 4


def test_pinned_buffer_is_not_reused_while_its_copy_is_pending(link_model_off):
    """A d2h dropped while still in flight keeps its buffer until the DMA is done:
    the next copy must not land in a buffer the old DMA still writes."""
    a = pygpu.full((4096,), 1.0, device="sim:0")
    b = pygpu.full((4096,), 2.0, device="sim:0")
    pygpu.synchronize("sim:0")
    pygpu.sim.configure(latency_us=50_000)
    old = a.to("cpu", non_blocking=True)
    del old  # pending: the backend still holds it
    new = b.to("cpu", non_blocking=True)
    pygpu.sim.configure()
    new.wait()
    assert new.min().item() == 2.0 and new.max().item() == 2.0


@needs_cuda
def test_nonblocking_d2h_on_cuda_pins_once():
    x = pygpu.arange(1 << 20, device="cuda:0").astype(pygpu.float32)
    y = x.to("cpu", non_blocking=True)
    y.wait()
    del y
    s0 = pygpu.cuda.memory_stats()
    for k in range(5):
        y = (x + k).to("cpu", non_blocking=True)
        y.wait()
        assert y.numpy()[7] == 7 + k
        del y
    s1 = pygpu.cuda.memory_stats()
    assert s1["pinned_allocs"] == s0["pinned_allocs"]  # every buffer came from the cache
    assert s1["pinned_cache_hits"] - s0["pinned_cache_hits"] == 5


def test_empty_cache_gives_pinned_buffers_back():
    p = pygpu.ones(5000).pin_memory()
    del p
    assert pygpu.sim.memory_stats()["pinned_cached"] > 0
    pygpu.sim.empty_cache()
    s = pygpu.sim.memory_stats()
    assert s["pinned_cached"] == 0
    q = pygpu.ones(5000).pin_memory()  # pins again
    assert pygpu.sim.memory_stats()["pinned_allocs"] == s["pinned_allocs"] + 1
    assert q.is_pinned() and q.sum().item() == 5000


# ---- free memory and smi through NVML, by PCI bus id -----------------------------

class FakeNvml:
    """libnvidia-ml's calls used by pygpu.cuda._nvml, over two GPUs known by bus id."""

    GPUS = {b"0000:3B:00.0": (11, 2 << 30, 80 << 30), b"0000:86:00.0": (22, 5 << 30, 80 << 30)}

    def __init__(self):
        self.by_index = 0

    def nvmlDeviceGetHandleByPciBusId_v2(self, bus, ref):
        if bus not in self.GPUS:
            return 13  # NVML_ERROR_NOT_FOUND
        ref._obj.value = self.GPUS[bus][0]
        return 0

    def nvmlDeviceGetHandleByIndex_v2(self, index, ref):
        self.by_index += 1
        ref._obj.value = 11 if index.value == 0 else 22
        return 0

    def _gpu(self, handle):
        return next(g for g in self.GPUS.values() if g[0] == handle.value)

    def nvmlDeviceGetMemoryInfo(self, handle, ref):
        _, used, total = self._gpu(handle)
        ref._obj.total, ref._obj.used, ref._obj.free = total, used, total - used
        return 0

    def nvmlDeviceGetUtilizationRates(self, handle, ref):
        ref._obj.gpu = 40 if handle.value == 11 else 90
        return 0

    def nvmlDeviceGetPowerUsage(self, handle, ref):
        ref._obj.value = 300_000
        return 0


@pytest.fixture
def fake_nvml(monkeypatch):
    fake = FakeNvml()
    monkeypatch.setattr(_nvml, "_load", lambda: fake)
    return fake


def test_nvml_query_matches_by_pci_bus_id(fake_nvml):
    # CUDA_VISIBLE_DEVICES=1: cuda:0 is the second physical GPU; its bus id finds it
    q = _nvml.query(0, bus_id="0000:86:00.0")
    assert q["utilization_pct"] == 90 and q["memory_used"] == 5 << 30
    assert fake_nvml.by_index == 0
    assert _nvml.query(0, bus_id="0000:99:00.0") is None  # unknown bus id: no wrong row
    assert _nvml.query(0)["utilization_pct"] == 40  # no bus id: NVML's own index


def test_nvml_memory_info(fake_nvml):
    assert _nvml.memory_info("0000:3B:00.0") == ((80 - 2) << 30, 80 << 30)
    assert _nvml.memory_info(None) is None


def test_cuda_mem_get_info_asks_nvml_not_the_runtime(fake_nvml, monkeypatch):
    """cudaMemGetInfo makes a context on every GPU it is asked about."""
    monkeypatch.setattr(pygpu.cuda._acc, "_check_index", lambda index: None)
    monkeypatch.setattr(pygpu.cuda, "pci_bus_id", lambda i: ["0000:86:00.0", "0000:3B:00.0"][i])

    def runtime(*args):
        raise AssertionError("the runtime was asked: that creates a context")

    monkeypatch.setattr(pygpu._C, "_mem_get_info", runtime)
    assert pygpu.cuda.mem_get_info(0) == ((80 - 5) << 30, 80 << 30)
    assert pygpu.cuda.mem_get_info(1) == ((80 - 2) << 30, 80 << 30)


def test_smi_row_uses_the_bus_id(fake_nvml, monkeypatch):
    from pygpu.tools import smi
    monkeypatch.setattr(pygpu.cuda, "pci_bus_id", lambda i: "0000:86:00.0")
    assert "90% busy" in smi._nvml_row(0)


def test_plugin_pci_bus_id_without_a_gpu_says_why():
    C = plugin()
    if pygpu.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(pygpu.DeviceUnavailableError, match="cudaDeviceGetPCIBusId"):
        C._cuda_pci_bus_id(0)
    assert pygpu.cuda.pci_bus_id(0) is None


@needs_cuda
def test_mem_get_info_of_every_gpu_makes_no_context():
    out = run_py("""
        import os, pygpu
        from pygpu import _nvml
        if _nvml.unavailable_reason():
            print("skip"); raise SystemExit
        infos = [pygpu.cuda.mem_get_info(i) for i in range(pygpu.cuda.device_count())]
        assert all(free <= total for free, total in infos)
        seen = [_nvml.compute_pids(pygpu.cuda.pci_bus_id(i)) for i in range(len(infos))]
        print("skip" if None in seen else any(os.getpid() in s for s in seen))
    """)
    if out.strip() == "skip":
        pytest.skip("NVML cannot list processes here")
    assert out.strip() == "False"


# ---- training kernels: bad labels raise, the loss is reproducible ------------------

@needs_cuda
def test_bad_label_on_cuda_raises_async_op_error():
    logits = pygpu.zeros((4, 4), device="cuda:0")
    labels = pygpu.tensor(np.array([0, 9, 1, 2]), device="cuda:0")
    with pytest.raises(pygpu.AsyncOpError, match="label 9 .*out of range for 4 classes"):
        pygpu.nn.functional.cross_entropy(logits, labels).item()
    # the flag was consumed: the next good op works
    ok = pygpu.nn.functional.cross_entropy(logits, pygpu.tensor(np.array([0, 1, 2, 3]),
                                                                device="cuda:0"))
    assert abs(ok.item() - np.log(4)) < 1e-6


@needs_cuda
def test_cross_entropy_loss_is_the_same_bit_for_bit():
    rng = np.random.default_rng(0)
    x = pygpu.tensor(rng.standard_normal((8192, 10)).astype(np.float32), device="cuda:0")
    y = pygpu.tensor(rng.integers(0, 10, 8192), device="cuda:0")
    losses = {pygpu.nn.functional.cross_entropy(x, y).item() for _ in range(5)}
    assert len(losses) == 1


@needs_cuda
def test_bias_gradient_with_few_outputs_and_many_rows():
    rng = np.random.default_rng(1)
    n, o = 100_000, 10
    layer = pygpu.nn.Linear(4, o).to("cuda:0")
    x = pygpu.tensor(rng.standard_normal((n, 4)).astype(np.float32), device="cuda:0")
    layer(x).sum().backward()
    np.testing.assert_allclose(layer.bias.grad.numpy(), np.full(o, n, np.float32), rtol=1e-6)


# ---- supports_node: the cuda backend's own rules for a node's parameters ------------------

@needs_cuda
def test_cuda_supports_node_declines_what_its_kernels_do_not_cover():
    """cuDNN takes one padding per axis and the attention kernels head dimensions up to 128:
    the cuda backend's supports_node says so (Python asks it through _C._has_node), and a
    node it declines is refused by name rather than launched."""
    from pygpu import _C
    from pygpu.backends import cudnn
    q64, q160 = pygpu.randn(1, 2, 4, 64, device="cuda"), pygpu.randn(1, 2, 4, 160, device="cuda")
    assert _C._has_node("SDPA", q64, q64, q64, None)
    assert not _C._has_node("SDPA", q160, q160, q160, None)
    x = pygpu.randn(1, 2, 8, 8, device="cuda", dtype=pygpu.float64)
    w = pygpu.randn(4, 2, 2, 2, device="cuda", dtype=pygpu.float64)
    same = (1, 1, 1, 1, 0, 1, 0, 1, 1)  # an even kernel's 'same': one more after than before
    assert not _C._has_node("CONV", x, w, same)
    with pytest.raises(RuntimeError, match="conv2d: the cuda backend has no kernel for this "
                                           "node's parameters"):
        _C._conv2d(x, w, None, same)
    if cudnn.is_available():
        assert _C._has_node("CONV", x, w, (1, 1, 1, 1, 1, 1, 1, 1, 1))
        saved = cudnn.enabled
        try:
            cudnn.enabled = False  # the switch reaches the backend's rule
            assert not _C._has_node("CONV", x, w, (1, 1, 1, 1, 1, 1, 1, 1, 1))
        finally:
            cudnn.enabled = saved
