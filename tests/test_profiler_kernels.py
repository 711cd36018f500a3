# test_profiler_kernels.py - which CUDA kernels pygpu's ops choose, read from pygpu.profiler
# on the emulated device (tests/cuda_emu: the real plugin and kernels on the CPU), so CI
# holds the structure the first H200 run's profiles asked for without a GPU:
#   - under bf16 autocast every GEMM of a Linear's forward and backward is a 16-bit GEMM on
#     the tensor cores (cublasGemmEx, bf16 inputs, float32 compute), dW written as float32;
#     the H200 run found the backward's products in float32 (87% of the step);
#   - a contiguous elementwise op is one kernel; a reduction over all elements is one pass
#     plus a combine measured in microseconds;
#   - the profiler notes each kernel and library call of an op, with the GEMM's types.
# Each test runs its code in a fresh interpreter whose pygpu loads the emulated plugin.
import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu"))
import harness  # noqa: E402

pytestmark = pytest.mark.skipif(harness.skip_reason() is not None,
                                reason=str(harness.skip_reason()))


@pytest.fixture(scope="module")
def plugin():
    return harness.build("current")


def _run(plugin, code):
    r = harness.run(plugin, textwrap.dedent(code))
    assert r.returncode == 0, f"on the emulated device:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_bf16_autocast_linear_runs_16_bit_gemms_forward_and_backward(plugin):
    _run(plugin, """
        import numpy as np, pygpu
        from pygpu import nn
        from pygpu.profiler import profile, ProfilerActivity
        pygpu.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 32), nn.ReLU(),
                              nn.Linear(32, 10)).to("cuda")
        x = pygpu.tensor(np.random.default_rng(0).standard_normal((40, 64)).astype(np.float32),
                         device="cuda").requires_grad_()
        y = pygpu.tensor(np.arange(40) % 10, device="cuda")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with pygpu.autocast("cuda", dtype=pygpu.bfloat16):
                loss = nn.CrossEntropyLoss()(model(x), y)
            loss.backward()
        events = prof.events()
        fwd = [e for e in events if e.name == "linear"]
        bwd = [e for e in events if e.name == "linear_backward"]
        assert len(fwd) == 3 and len(bwd) == 3, [e.name for e in events]
        gemms = [(e.name, k) for e in fwd + bwd for k in e.kernels if k.is_gemm]
        # forward one product per layer; backward dW and dx per layer (x requires grad)
        assert len(gemms) == 3 + 6, gemms
        for name, k in gemms:
            assert (k.name, k.in_type, k.compute_type) == ("cublasGemmEx", "bf16", "f32"), (name, k)
        # dW straight from float32 accumulators, dx (and the forward) rounded once to bf16
        outs = sorted(k.out_type for name, k in gemms if name == "linear_backward")
        assert outs == ["bf16"] * 3 + ["f32"] * 3, outs
        assert all(k.out_type in ("bf16", "f32") for name, k in gemms if name == "linear")
        # the weight gradients are float32 (the master copy's dtype)
        assert all(p.grad.dtype is pygpu.float32 for p in model.parameters())
        # and the table names the GEMMs with their types
        table = prof.key_averages().table(sort_by="cuda_time_total")
        assert "cublasGemmEx bf16 x bf16 -> f32 (compute f32)" in table, table
        assert "cublasSgemm" not in table, table
        print("ok")
    """)


def test_float32_linear_runs_float32_gemms_and_tf32_is_named(plugin):
    _run(plugin, """
        import numpy as np, pygpu
        from pygpu import nn
        from pygpu.profiler import profile
        layer = nn.Linear(16, 8).to("cuda")
        x = pygpu.tensor(np.ones((4, 16), np.float32), device="cuda")
        for tf32, compute in ((False, "f32"), (True, "f32_fast_tf32")):
            pygpu.backends.cuda.matmul.allow_tf32 = tf32
            with profile() as prof:
                layer(x).sum().backward()
                x @ x.T
            gemms = [k for e in prof.events() for k in e.kernels if k.is_gemm]
            assert len(gemms) == 3, gemms  # forward, dW, the matmul
            assert all(k.in_type == "f32" and k.compute_type == compute for k in gemms), gemms
        pygpu.backends.cuda.matmul.allow_tf32 = False
        print("ok")
    """)


def test_contiguous_elementwise_ops_are_one_kernel_each(plugin):
    _run(plugin, """
        import numpy as np, pygpu
        from pygpu.profiler import profile
        a = pygpu.tensor(np.ones((256, 33), np.float32), device="cuda")
        b = pygpu.tensor(np.ones((256, 33), np.float32), device="cuda")
        h = a.astype(pygpu.bfloat16)
        with profile() as prof:
            a * 2
            a + b
            a.exp()
            (h * 3).relu()
            a.clamp(-1, 1)
            a.astype(pygpu.float16)
        for e in prof.events():
            assert e.kernels_launched == 1, e
            assert len(e.kernels) == 1 and not e.kernels[0].is_gemm, e
            assert e.kernels[0].name.startswith("pg_"), e
        print(sorted({k.name for e in prof.events() for k in e.kernels}))
    """)


def test_kernel_events_have_device_times_within_their_op(plugin):
    out = _run(plugin, """
        import numpy as np, pygpu
        from pygpu import nn
        from pygpu.profiler import profile
        layer = nn.Linear(32, 16).to("cuda")
        x = pygpu.tensor(np.ones((8, 32), np.float32), device="cuda")
        with profile() as prof:
            layer(x).relu().sum().item()
        (lin,) = [e for e in prof.events() if e.name == "linear"]
        assert [k.name for k in lin.kernels] == ["cublasSgemm", "pg_linear_epilogue_kernel"], lin
        assert lin.device_time_total > 0
        total = sum(k.device_time for k in lin.kernels)
        assert 0 < total <= lin.device_time_total * 1.01 + 1, (total, lin.device_time_total)
        assert all(0 <= k.start_ns <= lin.device_ns for k in lin.kernels)
        print("ok")
    """)
    assert "ok" in out
