# test_cuda_stream_queues.py - user streams (pygpu.cuda.Stream, the cudafeat work) on
# the compute/copy/comm queue model (the cudafix work): where the two meet.
#
# An op under `with cuda.stream(s):` counts as compute work but runs on s, so:
#   - a tensor a non-blocking copy on the copy stream is still filling is waited for by
#     s itself (csrc/backends/cuda/cuda_queue.c, pg_cuda_order_after_on);
#   - a copy-stream copy of a tensor made inside the block waits for s, through the
#     compute stream (pg_cuda_stream_join_current);
#   - __cuda_array_interface__ / __dlpack__(stream=) name a stream that also covers the
#     copy and comm streams (pg_plugin_stream_gather);
#   - a CUDA tensor imported through DLPack is marked as compute work
#     (pg_plugin_storage_imported), so the copy stream orders after its producer.
# These orderings only show on a GPU; without one the new plugin entry refuses cleanly.

import numpy as np
import pytest

import pygpu
from pygpu import cuda

HAS_GPU = cuda.is_available()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU refusal")
def test_stream_call_without_a_gpu_refuses():
    if not cuda.is_built():
        pytest.skip("pygpu built without the CUDA plugin")
    cuda.is_available()  # loads the plugin through the core
    if not pygpu._C._load_cuda(None):
        pytest.skip(f"the CUDA plugin does not load: {cuda.unavailable_reason()}")
    # no device: an exception from the status (errors.c), no crash
    with pytest.raises(pygpu.DeviceUnavailableError):
        pygpu._C._cuda_stream_query(0, None)


@needs_gpu
def test_user_stream_op_waits_for_a_prefetch():
    n = 1 << 22
    side = cuda.Stream()
    for k in range(10):
        host = pygpu.full((n,), float(k)).pin_memory()
        x = host.to("cuda:0", non_blocking=True)  # copy stream
        with cuda.stream(side):
            y = (x * 2.0).sum()                    # on `side`, after the copy
        assert y.item() == 2.0 * k * n


@needs_gpu
def test_copy_stream_reads_what_a_user_stream_wrote():
    x = pygpu.arange(1 << 22, device="cuda:0").astype(pygpu.float32)
    side = cuda.Stream()
    for k in range(5):
        with cuda.stream(side):
            y = x * float(k)                      # on `side`
            h = y.to("cpu", non_blocking=True)    # copy stream, after `side`'s kernel
        h.wait()
        assert h.numpy()[[1, 1000]].tolist() == [k, 1000 * k]


@needs_gpu
def test_cuda_array_interface_stream_covers_a_prefetch():
    host = pygpu.full((1 << 22,), 3.0).pin_memory()
    x = host.to("cuda:0", non_blocking=True)
    iface = x.__cuda_array_interface__
    # the stream named is this thread's, made to wait for the copy stream first
    assert iface["stream"] == cuda.current_stream(0).cuda_stream
    cuda.current_stream(0).synchronize()
    assert x[-1].item() == 3.0


class _Producer:
    """Another library's CUDA tensor, as far as from_dlpack can tell (a pygpu tensor
    itself would be returned as is)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kw):
        return self.t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


@needs_gpu
def test_dlpack_round_trip_is_ordered_with_the_copy_stream():
    # export waits for the copy stream (a prefetch filling x); the imported storage is
    # marked as compute work, so a copy-stream d2h of it waits for the producer's side
    for k in range(5):
        host = pygpu.full((1 << 22,), float(k)).pin_memory()
        x = host.to("cuda:0", non_blocking=True)
        y = pygpu.from_dlpack(_Producer(x))
        h = y.to("cpu", non_blocking=True)
        h.wait()
        assert h.numpy()[[0, -1]].tolist() == [k, k]
