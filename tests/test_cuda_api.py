# test_cuda_api.py - what an H100 user expects of pygpu.cuda: Stream/Event and
# `with stream(s):`, CUDA graphs, device properties, the TF32 getter, NVTX and kernel
# timing switches, __cuda_array_interface__ and DLPack import of CUDA tensors.
#
# Without a GPU (here) the Python-level logic runs: every object refuses a non-cuda
# device with a ValueError and an absent GPU with DeviceUnavailableError, the plugin's
# options round-trip, a graph with nothing captured refuses to replay, DLPack import
# of a CUDA producer asks for cuda before touching the producer. The GPU tests below
# skip cleanly and run where one exists (pytest --device cuda runs them too).
import numpy as np
import pytest

import pygpu
from pygpu import cuda

HAS_GPU = cuda.is_available()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
needs_plugin = pytest.mark.skipif(not cuda.is_built(), reason="pygpu built without the CUDA plugin")


# -- no GPU needed --------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: cuda.Stream("sim:0"), lambda: cuda.Stream("cpu"), lambda: cuda.default_stream("sim:0"),
    lambda: cuda.current_stream("sim:1"), lambda: cuda.get_device_properties("sim:0"),
    lambda: cuda.graph(cuda.CUDAGraph(), device="sim:0").__enter__(),
], ids=["stream_sim", "stream_cpu", "default_stream_sim", "current_stream_sim1",
        "properties_sim", "graph_sim"])
@needs_plugin
def test_cuda_objects_refuse_other_devices(make):
    with pytest.raises(ValueError, match="needs a cuda device, got (sim|cpu)"):
        make()


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message")
@pytest.mark.parametrize("make", [
    lambda: cuda.Stream(), lambda: cuda.Stream("cuda:0"), lambda: cuda.current_stream(),
    lambda: cuda.get_device_properties(0), lambda: cuda.Event().record(),
    lambda: cuda.graph(cuda.CUDAGraph() if cuda.is_built() else None).__enter__(),
], ids=["stream", "stream_cuda0", "current_stream", "properties", "event_record", "graph"])
def test_cuda_objects_without_a_gpu_say_why(make):
    with pytest.raises((pygpu.DeviceUnavailableError, TypeError)) as e:
        make()
    if e.type is not TypeError:  # (TypeError: graph(None) when the plugin is not built)
        assert "cuda:0 is not available" in str(e.value) or "not available" in str(e.value)


def test_stream_context_arguments():
    with cuda.stream(None) as s:  # as torch: stream(None) does nothing
        assert s is None
    with pytest.raises(TypeError, match="expects a pygpu.cuda.Stream or None"):
        cuda.stream("cuda:0")
    with pytest.raises(TypeError, match="expects a pygpu.cuda.CUDAGraph"):
        cuda.graph(object())


def test_unrecorded_event():
    e = cuda.Event(enable_timing=True)
    assert e.query() is True  # nothing to wait for
    e.synchronize()
    assert "unrecorded" in repr(e)
    with pytest.raises(ValueError, match="record both events first"):
        e.elapsed_time(cuda.Event(enable_timing=True))
    with pytest.raises(ValueError, match="enable_timing=True"):
        cuda.Event().elapsed_time(e)
    with pytest.raises(TypeError):
        e.elapsed_time(3)
    with pytest.raises(ValueError, match="interprocess"):
        cuda.Event(interprocess=True)


@needs_plugin
def test_tf32_getter_beside_the_setter():
    before = cuda.get_allow_tf32()
    try:
        cuda.set_allow_tf32(True)
        assert cuda.get_allow_tf32() is True
        cuda.set_allow_tf32(False)
        assert cuda.get_allow_tf32() is False
    finally:
        cuda.set_allow_tf32(before)


@needs_plugin
def test_profiling_switches_restore():
    assert (cuda.get_nvtx(), cuda.get_kernel_timing()) == (False, False)
    with cuda.profiling():
        assert cuda.get_nvtx() and cuda.get_kernel_timing()
        with cuda.profiling(nvtx=False, kernel_timing=True):
            assert not cuda.get_nvtx() and cuda.get_kernel_timing()
        assert cuda.get_nvtx()
    assert (cuda.get_nvtx(), cuda.get_kernel_timing()) == (False, False)
    with cuda.nvtx_range("no profiler attached: a no-op"):
        pass


@needs_plugin
def test_graph_with_nothing_captured_refuses_replay():
    g = cuda.CUDAGraph()
    assert g.num_ops == 0
    with pytest.raises(RuntimeError, match="nothing captured"):
        g.replay()
    g.reset()
    with pytest.raises(ValueError, match="capture needs a user stream"):
        g.capture_begin(cuda.Stream(_index=0))  # the device's own stream: refused by the plugin


def test_cuda_array_interface_only_on_cuda():
    for dev in ("cpu", "sim:0"):
        t = pygpu.ones((2, 3), device=dev)
        assert not hasattr(t, "__cuda_array_interface__")
        with pytest.raises(AttributeError, match=f"cuda tensors only; this one is on {dev}"):
            t.__cuda_array_interface__


class _FakeCudaProducer:
    """Says it holds CUDA memory; records whether pygpu asked it for a capsule."""
    asked = None

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, **kw):
        self.asked = kw
        raise AssertionError("pygpu must ask for cuda before taking a CUDA capsule")


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU path")
def test_dlpack_import_of_cuda_memory_without_a_gpu():
    p = _FakeCudaProducer()
    with pytest.raises(pygpu.DeviceUnavailableError, match="not available"):
        pygpu.from_dlpack(p)
    assert p.asked is None


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU path")
@needs_plugin
def test_cuda_dlpack_capsule_refused_without_a_gpu_and_left_unconsumed():
    # a legacy DLPack capsule naming CUDA memory (device 2, cuda:0), built by hand
    import ctypes as C

    class DLDevice(C.Structure):
        _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]

    class DLDataType(C.Structure):
        _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]

    class DLTensor(C.Structure):
        _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32),
                    ("dtype", DLDataType), ("shape", C.POINTER(C.c_int64)),
                    ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]

    class DLManaged(C.Structure):
        pass
    deleter_t = C.CFUNCTYPE(None, C.POINTER(DLManaged))
    DLManaged._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", C.c_void_p),
                          ("deleter", deleter_t)]
    freed = []
    deleter = deleter_t(lambda m: freed.append(True))
    shape = (C.c_int64 * 1)(4)
    m = DLManaged(DLTensor(C.c_void_p(0x1000), DLDevice(2, 0), 1, DLDataType(2, 32, 1), shape,
                           None, 0), None, deleter)
    new_capsule = C.pythonapi.PyCapsule_New
    new_capsule.restype, new_capsule.argtypes = C.py_object, [C.c_void_p, C.c_char_p, C.c_void_p]
    is_valid = C.pythonapi.PyCapsule_IsValid
    is_valid.restype, is_valid.argtypes = C.c_int, [C.py_object, C.c_char_p]
    cap = new_capsule(C.addressof(m), b"dltensor", None)
    with pytest.raises(pygpu.DeviceUnavailableError, match="cuda:0 is not available"):
        pygpu.from_dlpack(cap)
    assert is_valid(cap, b"dltensor") == 1  # not consumed: the producer still owns it
    assert freed == []


def test_stats_carry_kernel_time_fields():
    pygpu.ones((4,), device="sim:0").sum().item()
    s = pygpu.stats()
    assert s.kernel_ops == 0 and s.kernel_seconds == 0.0  # sim measures no kernel time
    assert {"kernel_ops", "kernel_ns"} <= set(s.per_device["sim:0"])


def test_kernel_time_reported_by_a_plugin_reaches_the_stats():
    # the path cuda's kernel timing takes (core API stats_op_done), driven by hand on sim:0
    before = pygpu.stats()
    pygpu._C._test_stats_op_done(1500)
    pygpu._C._test_stats_op_done(2500)
    d = pygpu.stats() - before
    assert d.per_device["sim:0"]["kernel_ops"] == 2
    assert d.per_device["sim:0"]["kernel_ns"] == 4000
    assert d.kernel_ops == 2 and d.kernel_seconds == pytest.approx(4e-6)
    assert d.per_device["sim:0"]["ops"] == 0  # launches are counted at launch, not here


# -- on a GPU -------------------------------------------------------------------------------

@needs_gpu
def test_user_stream_results_and_current_stream():
    x = pygpu.tensor(np.arange(1 << 16, dtype=np.float32), device="cuda")
    s = cuda.Stream()
    assert cuda.current_stream() == cuda.default_stream()
    with cuda.stream(s):
        assert cuda.current_stream() == s
        y = x * 2.0 + 1.0
        total = y.sum()
        inside = y.cpu().numpy()  # a copy inside the block sees the stream's work
    assert cuda.current_stream() == cuda.default_stream()
    want = np.arange(1 << 16, dtype=np.float32) * 2 + 1
    assert np.array_equal(inside, want)
    assert np.array_equal((y + 0.0).cpu().numpy(), want)  # default stream after the block
    assert np.isclose(total.item(), want.sum(dtype=np.float64), rtol=1e-6)
    s.synchronize()
    assert s.query()


@needs_gpu
def test_matmul_on_a_user_stream():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 128)), rng.standard_normal((128, 64))
    s = cuda.Stream(priority=-1)
    ta, tb = pygpu.tensor(a, device="cuda"), pygpu.tensor(b, device="cuda")
    with cuda.stream(s):
        c = ta @ tb
    np.testing.assert_allclose(c.cpu().numpy(), a @ b, rtol=1e-12, atol=1e-12)


@needs_gpu
def test_events_time_and_order_streams():
    s1, s2 = cuda.Stream(), cuda.Stream()
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    x = pygpu.ones((1 << 20,), device="cuda")
    with cuda.stream(s1):
        start.record()
        y = (x * 3.0).exp()
        end.record()
    s2.wait_stream(s1)
    s2.wait_event(end)
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0.0
    assert np.allclose(y.cpu().numpy(), np.exp(3.0), rtol=1e-6)


@needs_gpu
def test_device_properties():
    p = cuda.get_device_properties(0)
    assert p.name == cuda.get_device_name(0)
    assert p.major >= 5 and p.total_memory > 0 and p.multi_processor_count > 0
    assert cuda.get_device_capability(0) == (p.major, p.minor)
    assert "multi_processor_count" in repr(p)


@needs_gpu
def test_kernel_time_in_the_stats():
    x = pygpu.ones((1 << 20,), device="cuda")
    before = pygpu.stats()
    with cuda.profiling(nvtx=True, kernel_timing=True):
        for _ in range(5):
            x = x * 1.0001
        cuda.synchronize()
    d = pygpu.stats() - before
    assert d.per_device["cuda:0"]["kernel_ops"] >= 5
    assert d.per_device["cuda:0"]["kernel_ns"] > 0


def _train_setup(seed=0):
    rng = np.random.default_rng(seed)
    pygpu.manual_seed(seed)
    model = pygpu.nn.Sequential(pygpu.nn.Linear(32, 64), pygpu.nn.ReLU(),
                                pygpu.nn.Linear(64, 10)).to("cuda")
    opt = pygpu.optim.SGD(model.parameters(), lr=0.05)
    xs = [rng.standard_normal((128, 32)).astype(np.float32) for _ in range(4)]
    ys = [rng.integers(0, 10, 128) for _ in range(4)]
    return model, opt, xs, ys


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = pygpu.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


@needs_gpu
def test_graph_replays_a_training_step():
    eager_model, eager_opt, xs, ys = _train_setup()
    eager = []
    for x, y in zip(xs, ys):
        eager.append(_step(eager_model, eager_opt, pygpu.tensor(x, device="cuda"),
                           pygpu.tensor(y, device="cuda")).item())

    model, opt, xs, ys = _train_setup()
    static_x = pygpu.tensor(xs[0], device="cuda")
    static_y = pygpu.tensor(ys[0], device="cuda")
    # warm up on the first batch (as PyTorch asks), then capture the second step
    first = _step(model, opt, static_x, static_y).item()
    static_x.copy_(pygpu.tensor(xs[1]))
    static_y.copy_(pygpu.tensor(ys[1]))
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        static_loss = _step(model, opt, static_x, static_y)
    assert g.num_ops > 5
    losses = [first]
    for x, y in zip(xs[1:], ys[1:]):
        static_x.copy_(pygpu.tensor(x))
        static_y.copy_(pygpu.tensor(y))
        g.replay()
        losses.append(static_loss.item())
    np.testing.assert_allclose(losses, eager, rtol=1e-5)


@needs_gpu
def test_graph_capture_refuses_host_syncs_and_copies():
    x = pygpu.ones((16,), device="cuda")
    for bad, what in ((lambda: (x * 2).sum().item(), "graph capture"),
                      (lambda: (x * 2).cpu(), "graph capture"),
                      (lambda: cuda.synchronize(), "graph capture"),
                      (lambda: pygpu.tensor(np.ones(4), device="cuda"), "graph capture")):
        g = cuda.CUDAGraph()
        with pytest.raises(RuntimeError, match=what):
            with cuda.graph(g):
                bad()
        assert g.num_ops == 0
        assert cuda.current_stream() == cuda.default_stream()
    assert (x + 1).sum().item() == 32.0  # the device still works


@needs_gpu
def test_cuda_array_interface_v3():
    t = pygpu.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device="cuda")
    cai = t.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 4) and cai["typestr"] == "<f4"
    assert cai["strides"] is None and cai["data"][0] == pygpu._C._data_ptr(t)
    assert cai["stream"] == cuda.current_stream().cuda_stream
    assert t.T.__cuda_array_interface__["strides"] == (4, 16)
    cupy = pytest.importorskip("cupy")
    np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(t)), t.cpu().numpy())


@needs_gpu
def test_dlpack_cuda_round_trip_and_stream_argument():
    t = pygpu.tensor(np.arange(6, dtype=np.float64), device="cuda")
    back = pygpu.from_dlpack(t.__dlpack__(stream=1, max_version=(1, 0)))
    assert back.device == pygpu.device("cuda:0")
    np.testing.assert_array_equal(back.cpu().numpy(), np.arange(6))
    with pytest.raises(ValueError, match="stream=0"):
        t.__dlpack__(stream=0)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    src = torch.arange(10, device="cuda", dtype=torch.float32) * 2
    mine = pygpu.from_dlpack(src)
    assert mine.device == pygpu.device("cuda:0")
    np.testing.assert_array_equal(mine.cpu().numpy(), np.arange(10) * 2)
    theirs = torch.from_dlpack(pygpu.tensor(np.ones(5), device="cuda"))
    assert theirs.is_cuda and float(theirs.sum()) == 5.0


# -- docs/cuda.md ---------------------------------------------------------------------------

def test_cuda_docs_python_blocks_run(capsys):
    # every ```python block of docs/cuda.md runs (on a GPU the demos inside run too)
    import os
    import re
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                        "cuda.md")
    if not os.path.exists(path):
        pytest.skip("docs/ not next to the tests")
    with open(path) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 4
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/cuda.md python block {i}", "exec"), {})
    assert "True" in capsys.readouterr().out or not cuda.is_built()
