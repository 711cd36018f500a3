# test_cuda_emulated.py - the CUDA plugin run on the emulated device (tests/cuda_emu/):
# the real csrc/backends/cuda/kernels/*.cu and csrc/backends/cuda/*.c, compiled for the CPU over a
# stand-in CUDA runtime and cuBLAS. Each test runs its code in a fresh interpreter
# whose pygpu loads the emulated plugin (PYGPU_CUDA_BACKEND_SO), and checks results
# against NumPy. Issue 29's defects each have a test here that failed before its fix;
# the harness's own teeth: the half binary kernel as it was before the fix, built
# into a second plugin, must fail the same check.
import os
import sys
import textwrap

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu"))
import harness  # noqa: E402

pytestmark = pytest.mark.skipif(harness.skip_reason() is not None,
                                reason=str(harness.skip_reason()))

CHECKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu", "checks")


@pytest.fixture(scope="module")
def plugin():
    return harness.build("current")


def _run(plugin, code, **env):
    r = harness.run(plugin, textwrap.dedent(code), **env)
    assert r.returncode == 0, f"on the emulated device:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_device_reports_an_h100_and_runs_kernels(plugin):
    out = _run(plugin, """
        import numpy as np, pygpu
        from pygpu import cuda
        assert cuda.is_available(), cuda.unavailable_reason()
        p = cuda.get_device_properties(0)
        assert (p.major, p.minor) == (9, 0) and p.multi_processor_count == 132, p
        assert cuda.device_count() == 2
        rng = np.random.default_rng(0)
        a = rng.standard_normal((37, 53)).astype(np.float32)
        b = rng.standard_normal((53, 29)).astype(np.float32)
        ta, tb = pygpu.tensor(a, device="cuda"), pygpu.tensor(b, device="cuda")
        np.testing.assert_allclose((ta @ tb).numpy(), a @ b, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(ta.sum().item(), a.sum(dtype=np.float64), rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(ta.exp().numpy(), np.exp(a), rtol=1e-6)
        # a block reduction (shared memory and __syncthreads) over a large row
        big = rng.standard_normal(100_000).astype(np.float64)
        np.testing.assert_allclose(pygpu.tensor(big, device="cuda").sum().item(), big.sum(),
                                   rtol=1e-12, atol=1e-9)
        print("ok")
    """)
    assert "ok" in out


def test_cpu_only_node_forms_are_declined_on_cuda(plugin):
    """Batch norm's EVAL_FWD node and CLAMP's gradient form have no cuda kernel: supports_node
    declines them, so evaluation under no_grad and relu6's backward run as tensor ops there
    (issue 45's cpu nodes), and agree with NumPy."""
    out = _run(plugin, """
        import numpy as np, pygpu
        from pygpu import _C
        rng = np.random.default_rng(0)
        x = rng.standard_normal((4, 6, 5, 5)).astype(np.float32) * 4
        t = pygpu.tensor(x, device="cuda")
        assert not _C._has_node("BATCH_NORM", t, "EVAL_FWD") and _C._has_node("BATCH_NORM", t)
        assert not _C._has_node("CLAMP", t, "grad") and _C._has_node("CLAMP", t)
        rm, rv = rng.standard_normal(6).astype(np.float32), rng.random(6).astype(np.float32) + .5
        m = pygpu.nn.Sequential(pygpu.nn.BatchNorm2d(6), pygpu.nn.ReLU6()).to("cuda").eval()
        m[0].running_mean.copy_(pygpu.tensor(rm, device="cuda"))
        m[0].running_var.copy_(pygpu.tensor(rv, device="cuda"))
        with pygpu.no_grad():
            y = m(t).numpy()
        want = np.clip((x - rm.reshape(1, 6, 1, 1)) / np.sqrt(rv.reshape(1, 6, 1, 1) + 1e-5), 0, 6)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
        tx = pygpu.tensor(x, device="cuda", requires_grad=True)
        pygpu.nn.functional.relu6(tx).sum().backward()
        np.testing.assert_array_equal(tx.grad.numpy(), ((x > 0) & (x < 6)).astype(np.float32))
        print("ok")
    """)
    assert "ok" in out


def test_half_binary_ops_compute_in_float32(plugin):
    """Defect 1: float16/bfloat16 binary ops ran in half (scalar narrowed, NaN lost)."""
    with open(os.path.join(CHECKS, "half_binary.py")) as f:
        _run(plugin, f.read())


def test_reverted_half_kernel_is_caught():
    """The harness has teeth: today's check fails on the kernel as it was before the fix."""
    reverted = harness.build("reverted")
    with open(os.path.join(CHECKS, "half_binary.py")) as f:
        r = harness.run(reverted, f.read())
    assert r.returncode != 0, "the reverted half kernel passed the emulated run"
    assert "differ from float32 rounded once" in r.stderr or "NaN must win" in r.stderr, r.stderr


def test_graph_refuses_ops_whose_scalars_would_freeze(plugin):
    """Defect 2: a replayed Adam step reused the captured step count and bias
    corrections. Capture must refuse it (or replay it right); SGD without
    momentum, RMSprop and Adadelta (no step-dependent scalar) still replay exactly as eager
    steps; Adagrad (its lr_decay by step count) is refused as Adam is."""
    _run(plugin, """
        import numpy as np, pygpu
        from pygpu import cuda, nn, optim

        def setup(opt_cls, **kw):
            pygpu.manual_seed(0)
            model = nn.Linear(8, 4).to("cuda")
            return model, opt_cls(model.parameters(), **kw)

        rng = np.random.default_rng(1)
        xs = [rng.standard_normal((16, 8)).astype(np.float32) for _ in range(4)]

        def step(model, opt, x):
            opt.zero_grad()
            loss = (model(x) * model(x)).mean()
            loss.backward()
            opt.step()
            return loss

        for opt_cls, kw in ((optim.Adam, {"lr": 0.1}), (optim.SGD, {"lr": 0.1}),
                            (optim.Adagrad, {"lr": 0.1}), (optim.RMSprop, {"lr": 0.01}),
                            (optim.Adadelta, {"lr": 1.0})):
            model, opt = setup(opt_cls, **kw)
            eager = [step(model, opt, pygpu.tensor(x, device="cuda")).item() for x in xs]
            model, opt = setup(opt_cls, **kw)
            sx = pygpu.tensor(xs[0], device="cuda")
            got = [step(model, opt, sx).item()]
            g = cuda.CUDAGraph()
            try:
                with cuda.graph(g):
                    sl = step(model, opt, sx)
            except RuntimeError as e:
                # the step-count kinds refuse (pg_ops.def's graph column); the others replay
                assert opt_cls in (optim.Adam, optim.Adagrad), e
                assert opt_cls.__name__ in str(e) and "graph" in str(e), e
                continue
            for x in xs[1:]:
                sx.copy_(pygpu.tensor(x))
                g.replay()
                got.append(sl.item())
            np.testing.assert_allclose(got, eager, rtol=1e-5,
                                       err_msg=f"{opt_cls.__name__}: replay differs from eager")
        print("ok")
    """)


def test_half_matmul_is_rounded_once(plugin):
    """Defect 7: with CUBLAS_DEFAULT_MATH cuBLAS may reduce split-K partials in half;
    the product of two float16 matrices must be float32 sums rounded once."""
    _run(plugin, """
        import numpy as np, ml_dtypes, pygpu
        rng = np.random.default_rng(3)
        for np_t in (np.float16, ml_dtypes.bfloat16):
            # eighths: every float32 partial sum is exact, so the only rounding is the store
            a = (rng.integers(-16, 17, (4, 2048)) / 8).astype(np_t)
            b = (rng.integers(-16, 17, (2048, 3)) / 8).astype(np_t)
            ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32).astype(np_t)
            got = (pygpu.tensor(a, device="cuda") @ pygpu.tensor(b, device="cuda")).numpy()
            np.testing.assert_array_equal(got.astype(np.float32), ref.astype(np.float32))
        print("ok")
    """)


def test_stream_and_event_calls_leave_the_current_device(plugin):
    """Defect 6: Stream/Event destroy, query, synchronize and elapsed_time switched the
    calling thread's CUDA device with a bare cudaSetDevice (another library sharing the
    thread, CuPy or PyTorch, then queued on the wrong GPU)."""
    _run(plugin, """
        import ctypes, gc, pygpu
        from pygpu import cuda
        runtime = ctypes.CDLL(cuda.PLUGIN)  # the emulated runtime's own state
        pygpu.ones(4, device="cuda:0").sum().item()   # the plugin makes cuda:0 current
        assert runtime.pg_emu_current_device() == 0
        s = cuda.Stream(device=1)
        a, b = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        a.record(s)
        b.record(s)
        pygpu.ones(4, device="cuda:0").sum().item()
        calls = {"query": b.query, "synchronize": b.synchronize,
                 "elapsed_time": lambda: a.elapsed_time(b)}
        for name, call in calls.items():
            call()
            assert runtime.pg_emu_current_device() == 0, f"Event.{name}() switched the device"
        del a, b, s
        gc.collect()
        assert runtime.pg_emu_current_device() == 0, "Stream/Event destroy switched the device"
        print("ok")
    """)


def test_autocast_linear_with_float32_weight(plugin):
    """Found by the emulated device: under autocast the core sends linear a half x with
    the float32 weight (and wants float32 dW, db); the CUDA launcher took one dtype for
    all of them, so it read the weight as 16-bit values forward, and backward read the
    16-bit x and dy as float32 and wrote dx as float32, past the buffers' end. Forward
    and backward must match the CPU's."""
    _run(plugin, """
        import numpy as np, pygpu
        rng = np.random.default_rng(5)
        X = rng.standard_normal((64, 24)).astype(np.float32)
        for dt in (pygpu.bfloat16, pygpu.float16):
            res = {}
            for dev in ("cpu", "cuda"):
                pygpu.manual_seed(0)
                lin = pygpu.nn.Linear(24, 16).to(dev)
                x = pygpu.tensor(X, device=dev)
                with pygpu.autocast(dev, dtype=dt):
                    y = lin(x)
                y.astype(pygpu.float32).sum().backward()
                res[dev] = (y.detach().astype(pygpu.float32).numpy(), lin.weight.grad.numpy(),
                            lin.bias.grad.numpy())
                assert lin.weight.grad.dtype == pygpu.float32
            for got, ref in zip(res["cuda"], res["cpu"]):
                np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2)
        print("ok")
    """)


def test_ddp_over_emulated_nccl_matches_single_process_training(plugin, tmp_path):
    """DDP with two ranks, one emulated GPU each, gradients all-reduced by the NCCL
    stand-in on the comm stream: the parameters equal single-process training on the
    global batch (tests/test_ddp.py's check, on cuda)."""
    from _mpi import launch
    from test_ddp import TRAIN, _reference, _rows
    script = TRAIN.replace("device = sys.argv[1]",
                           "device = f\"cuda:{os.environ['LOCAL_RANK']}\"; "
                           "pygpu.cuda.set_device(int(os.environ['LOCAL_RANK']))")
    env = {k: v for k, v in harness.env(plugin).items()
           if k in ("PYGPU_CUDA_BACKEND_SO", "PYGPU_NCCL_LIBRARY")}
    proc = launch(tmp_path, script, args=["cuda", "25"], env=env, timeout=300)
    rows = _rows(proc)
    assert len(rows) == 2
    ref = _reference()
    for row in rows:
        assert row["stats"]["calls"] == {"all_reduce": 3, "broadcast_object_list": 1}
        for got, want in zip(row["params"], ref.parameters()):
            np.testing.assert_allclose(np.array(got), want.detach().numpy(), rtol=1e-10,
                                       atol=1e-12)


def test_kernel_timing_reuses_its_events(plugin):
    """Defect 9: kernel timing created and destroyed two CUDA events per op; they now
    come from (and go back to) the device's spare events."""
    _run(plugin, """
        import ctypes, pygpu
        from pygpu import cuda
        runtime = ctypes.CDLL(cuda.PLUGIN)
        x = pygpu.ones((256,), device="cuda")
        x = x * 1.0
        before = pygpu.stats()
        created = runtime.pg_emu_events_created()
        with cuda.profiling(nvtx=False, kernel_timing=True):
            for _ in range(200):
                x = x * 1.0001
                if _ % 20 == 0:
                    x.sum().item()      # a host wait collects the finished timings
            cuda.synchronize()
        new = runtime.pg_emu_events_created() - created
        d = pygpu.stats() - before
        assert d.kernel_ops >= 200, d.kernel_ops
        assert new < 100, f"{new} events created for 200 timed ops"
        print("ok")
    """)


def test_nccl_init_failure_frees_the_communicator(plugin):
    """Defect 8: when ncclCommInitRank failed after making the communicator (anything but
    ncclInProgress), the plugin freed its handle and leaked NCCL's communicator."""
    _run(plugin, """
        import ctypes, os, pygpu
        from pygpu import _C, cuda
        from pygpu.distributed import _nccl
        _nccl._lib()                 # the plugin, with the NCCL stand-in loaded into it
        uid = _C._cuda_nccl_unique_id()
        try:
            _C._cuda_nccl_comm_init(1, uid, 0, 0)
            raise AssertionError("comm_init should have failed")
        except _nccl.NcclError as e:
            assert "ncclCommInitRank failed" in str(e), e
        emu = ctypes.CDLL(cuda.PLUGIN)  # the emulator's own counter, not a plugin entry point
        assert emu.pg_emu_nccl_live() == 0, "the failed init leaked its communicator"
        print("ok")
    """, PYGPU_CUDA_EMU_NCCL_INIT_FAIL=1)


def test_h2d_copy_waits_for_other_threads_user_streams(plugin):
    """Defect 3: before a non-blocking H2D copy the copy stream waited for compute and
    for the calling thread's user stream only. Another thread's tensor freed while its
    kernels on that thread's user stream still read it gave its block to the copy,
    which overwrote it first. The emulated streams run concurrently and each item is
    delayed, so the freed block's late reader sees the copy's values without the fix."""
    _run(plugin, """
        import threading, numpy as np, pygpu
        from pygpu import cuda
        n = 1 << 16
        ready, copied = threading.Event(), threading.Event()
        out = {}

        def reader():
            s = cuda.Stream()
            with cuda.stream(s):
                t = pygpu.ones((n,), device="cuda")
                busy = pygpu.ones((64,), device="cuda")
                for _ in range(30):               # keep s busy: its next op runs late
                    busy = busy * 1.0
                total = t.sum()                   # reads t's block, queued behind them
                del t                             # the block goes back to the allocator
                ready.set()
                copied.wait()
                out["sum"] = total.item()

        th = threading.Thread(target=reader)
        th.start()
        ready.wait()
        host = pygpu.tensor(np.full(n, 7.0, dtype=np.float32)).pin_memory()
        u = host.to("cuda", non_blocking=True)    # may get t's block
        copied.set()
        th.join()
        assert out["sum"] == n, f"the user stream read {out['sum']}: the copy overwrote its block"
        assert u.sum().item() == 7.0 * n
        print("ok")
    """, PYGPU_CUDA_EMU_DELAY_US=2000)


def test_int8_linear_on_cuda_is_the_cpu_bits(plugin):
    """Issue 28: the int8 layers on cuda (csrc/backends/cuda/kernels/quant.cu around cuBLASLt's s8 x s8 -> s32
    GEMM, emu_cublaslt.cpp here) give the CPU kernels' bits: dynamic and static, float32 and
    u8 out, an odd shape (K not a multiple of 4, N not of 16), and the weight moved there."""
    out = _run(plugin, """
        import numpy as np, pygpu
        from pygpu import nn
        from pygpu.nn import quantized as nnq
        pygpu.manual_seed(0)
        lin = nn.Linear(67, 45)
        x = np.random.default_rng(0).standard_normal((9, 67)).astype(np.float32)
        q = nnq.dynamic.Linear.from_float(lin, activation="relu")
        want = q(pygpu.tensor(x)).numpy()
        got = q.to("cuda")(pygpu.tensor(x, device="cuda")).cpu().numpy()
        assert np.array_equal(want.view(np.int32), got.view(np.int32)), np.abs(want - got).max()
        s = nnq.Linear.from_observed(lin, (0.03, 64), (0.05, 0), activation="relu", emit_int8=True)
        hw = s(pygpu.tensor(x)).int_repr()
        hg = s.to("cuda")(pygpu.tensor(x, device="cuda")).int_repr()
        assert np.array_equal(hw, hg) and hw.max() > 0
        print("ok")
    """)
    assert "ok" in out


def test_emulated_cublaslt_holds_immas_rules(plugin):
    """The cuBLASLt stand-in (tests/cuda_emu/emu_cublaslt.cpp) computes cuBLASLt's column-major
    D = alpha op(A) op(B) + beta C exactly, and refuses what IMMA refuses with the plain column
    order (not "TN", k or a leading dimension not a multiple of 4) and other types, so a
    plugin change that broke those rules fails on the emulated device as it would on a GPU."""
    out = _run(plugin, """
        import ctypes, os
        import numpy as np
        lib = ctypes.CDLL(os.environ["PYGPU_CUDA_BACKEND_SO"])
        P, ref = ctypes.c_void_p, ctypes.byref
        COMPUTE_32I, R_8I, R_32I, R_32F, TRANSA, TRANSB = 72, 3, 10, 0, 3, 4
        OK, INVALID, NOT_SUPPORTED = 0, 7, 15
        lib.cublasLtMatrixLayoutCreate.argtypes = [ctypes.POINTER(P), ctypes.c_int,
                                                   ctypes.c_uint64, ctypes.c_uint64,
                                                   ctypes.c_int64]
        lib.cublasLtMatmul.argtypes = [P] * 14 + [ctypes.c_size_t, P]
        h = P()
        assert lib.cublasLtCreate(ref(h)) == OK

        def matmul(m, n, k, ta=1, tb=0, lda=None, ldb=None, ldc=None, ab_type=R_8I,
                   compute=COMPUTE_32I, kb=None, beta=1):
            lda = lda or (k if ta else m)
            ldb = ldb or ((kb or k) if not tb else n)
            ldc = ldc or m
            rng = np.random.default_rng(m * n * k)
            A = rng.integers(-128, 128, size=(lda * (m if ta else k),)).astype(np.int8)
            B = rng.integers(-128, 128, size=(ldb * (n if not tb else (kb or k)),)).astype(np.int8)
            D = rng.integers(-1000, 1000, size=(ldc * n,)).astype(np.int32)
            D0 = D.copy()
            desc, la, lb, lc = P(), P(), P(), P()
            assert lib.cublasLtMatmulDescCreate(ref(desc), compute, R_32I) == OK
            for attr, v in ((TRANSA, ta), (TRANSB, tb)):
                x = ctypes.c_int32(v)
                assert lib.cublasLtMatmulDescSetAttribute(desc, attr, ref(x), 4) == OK
            assert lib.cublasLtMatrixLayoutCreate(ref(la), ab_type, k if ta else m,
                                                  m if ta else k, lda) == OK
            assert lib.cublasLtMatrixLayoutCreate(ref(lb), ab_type, (kb or k) if not tb else n,
                                                  n if not tb else (kb or k), ldb) == OK
            assert lib.cublasLtMatrixLayoutCreate(ref(lc), R_32I, m, n, ldc) == OK
            alpha, b = ctypes.c_int32(2), ctypes.c_int32(beta)
            st = lib.cublasLtMatmul(h, desc, ref(alpha), A.ctypes.data, la, B.ctypes.data, lb,
                                    ref(b), D.ctypes.data, lc, D.ctypes.data, lc, None, None, 0,
                                    None)
            return st, A, B, D0, D

        # TN: op(A) = A^T of a stored k x m, B a stored k x n; D m x n, all column-major
        m, n, k = 8, 3, 12
        st, A, B, D0, D = matmul(m, n, k, lda=16)
        assert st == OK, st
        At = A.reshape(m, 16)[:, :k].astype(np.int64)       # column i of stored A: row i here
        Bt = B.reshape(n, k).astype(np.int64)
        want = (2 * (Bt @ At.T) + D0.reshape(n, m)).astype(np.int32)
        assert np.array_equal(D.reshape(n, m), want)
        assert matmul(8, 3, 12, ta=0)[0] == NOT_SUPPORTED           # "NN": not IMMA
        assert matmul(8, 3, 12, ta=1, tb=1)[0] == NOT_SUPPORTED     # "TT"
        assert matmul(8, 3, 6)[0] == NOT_SUPPORTED                  # k not a multiple of 4
        assert matmul(6, 3, 8)[0] == NOT_SUPPORTED                  # m not a multiple of 4
        assert matmul(8, 3, 8, lda=10)[0] == NOT_SUPPORTED          # lda not a multiple of 4
        assert matmul(8, 3, 8, ldc=10)[0] == NOT_SUPPORTED          # ldc
        assert matmul(8, 3, 8, lda=4)[0] == INVALID                 # lda < the stored rows
        assert matmul(8, 3, 8, kb=12)[0] == INVALID                 # op(A) and op(B) disagree on k
        assert matmul(8, 3, 8, ab_type=R_32F)[0] == NOT_SUPPORTED   # only the integer GEMM
        print("ok")
    """, PYGPU_CUDA_EMU_SYNC=1)
    assert "ok" in out


def test_emulated_cublaslt_holds_the_requantizing_immas_rules(plugin):
    """The stand-in's s8-out IMMA row (the requantizing GEMM of cuda_quant.c): D =
    sat_s8(round(relu(alpha[i] acc + bias[i]))) with a per-row alpha vector in device memory
    (ALPHA_DEVICE_VECTOR_BETA_HOST) and a float32 bias, as cuBLASLt documents it; and it
    refuses what cuBLASLt refuses: an epilogue with the s32-out row, the vector pointer modes
    that come with the IMMA-specific orders (ALPHA_DEVICE_VECTOR_BETA_ZERO, DEVICE_VECTOR),
    a bias type other than the scale type, a BIAS epilogue without a bias, other epilogues."""
    out = _run(plugin, """
        import ctypes, os
        import numpy as np
        lib = ctypes.CDLL(os.environ["PYGPU_CUDA_BACKEND_SO"])
        P, ref = ctypes.c_void_p, ctypes.byref
        COMPUTE_32I, R_8I, R_32I, R_32F = 72, 3, 10, 0
        TRANSA, TRANSB, POINTER_MODE, EPILOGUE, BIAS_POINTER, BIAS_TYPE = 3, 4, 2, 7, 8, 26
        HOST, DEVICE_VECTOR, VEC_BETA_ZERO, VEC_BETA_HOST = 0, 2, 3, 4
        DEFAULT, RELU, BIAS, RELU_BIAS, GELU = 1, 2, 4, 6, 32
        OK, INVALID, NOT_SUPPORTED = 0, 7, 15
        lib.cublasLtMatrixLayoutCreate.argtypes = [ctypes.POINTER(P), ctypes.c_int,
                                                   ctypes.c_uint64, ctypes.c_uint64,
                                                   ctypes.c_int64]
        lib.cublasLtMatmul.argtypes = [P] * 14 + [ctypes.c_size_t, P]
        lib.cublasLtMatmulDescSetAttribute.argtypes = [P, ctypes.c_int, P, ctypes.c_size_t]
        h = P()
        assert lib.cublasLtCreate(ref(h)) == OK
        m, n, k = 8, 5, 12
        rng = np.random.default_rng(0)
        A = rng.integers(-128, 128, size=(k * m,)).astype(np.int8)   # stored k x m, TN
        B = rng.integers(-128, 128, size=(k * n,)).astype(np.int8)   # stored k x n
        alpha = (rng.random(m) * 0.02).astype(np.float32)
        bias = rng.standard_normal(m).astype(np.float32) * 20

        def matmul(mode=VEC_BETA_HOST, epi=RELU_BIAS, bias_ptr=True, bias_type=R_32F,
                   scale=R_32F, out=R_8I):
            desc, la, lb, lc = P(), P(), P(), P()
            assert lib.cublasLtMatmulDescCreate(ref(desc), COMPUTE_32I, scale) == OK
            def set32(attr, v):
                x = ctypes.c_int32(v)
                assert lib.cublasLtMatmulDescSetAttribute(desc, attr, ref(x), 4) == OK
            set32(TRANSA, 1)
            set32(TRANSB, 0)
            set32(POINTER_MODE, mode)
            set32(EPILOGUE, epi)
            set32(BIAS_TYPE, bias_type)
            if bias_ptr:
                p = P(bias.ctypes.data)
                assert lib.cublasLtMatmulDescSetAttribute(desc, BIAS_POINTER, ref(p), 8) == OK
            assert lib.cublasLtMatrixLayoutCreate(ref(la), R_8I, k, m, k) == OK
            assert lib.cublasLtMatrixLayoutCreate(ref(lb), R_8I, k, n, k) == OK
            assert lib.cublasLtMatrixLayoutCreate(ref(lc), out, m, n, m) == OK
            D = np.zeros(m * n, np.int8 if out == R_8I else np.int32)
            beta = ctypes.c_float(0) if scale == R_32F else ctypes.c_int32(0)
            a = P(alpha.ctypes.data) if mode in (VEC_BETA_HOST, VEC_BETA_ZERO, DEVICE_VECTOR) \\
                else ref(ctypes.c_float(0.5) if scale == R_32F else ctypes.c_int32(1))
            st = lib.cublasLtMatmul(h, desc, a, A.ctypes.data, la, B.ctypes.data, lb, ref(beta),
                                    D.ctypes.data, lc, D.ctypes.data, lc, None, None, 0, None)
            return st, D

        acc = B.reshape(n, k).astype(np.int64) @ A.reshape(m, k).astype(np.int64).T  # (n, m)
        t = alpha[None, :] * acc.astype(np.float32) + bias[None, :]
        st, D = matmul()
        assert st == OK, st
        want = np.clip(np.rint(np.maximum(t, 0)), -128, 127).astype(np.int8)
        assert np.array_equal(D.reshape(n, m), want)
        assert (want == 127).any() and (want == 0).any()               # both clamps reached
        st, D = matmul(epi=BIAS)                                         # no ReLU: saturation
        assert st == OK and np.array_equal(D.reshape(n, m),
                                           np.clip(np.rint(t), -128, 127).astype(np.int8))
        assert (D == -128).any()
        st, D = matmul(mode=HOST, epi=DEFAULT, bias_ptr=False)           # one alpha, host
        assert st == OK and np.array_equal(
            D.reshape(n, m), np.clip(np.rint(np.float32(0.5) * acc.astype(np.float32)),
                                     -128, 127).astype(np.int8))
        assert matmul(mode=VEC_BETA_ZERO)[0] == NOT_SUPPORTED   # IMMA-specific orders only
        assert matmul(mode=DEVICE_VECTOR)[0] == NOT_SUPPORTED
        assert matmul(bias_type=R_8I)[0] == NOT_SUPPORTED       # the bias is the scale type
        assert matmul(bias_ptr=False)[0] == INVALID             # a BIAS epilogue needs a bias
        assert matmul(epi=GELU)[0] == NOT_SUPPORTED
        # the s32-out row takes no epilogue and no vector alpha
        assert matmul(scale=R_32I, out=R_32I, mode=HOST, epi=BIAS)[0] == NOT_SUPPORTED
        assert matmul(scale=R_32I, out=R_32I, mode=VEC_BETA_HOST, epi=DEFAULT,
                      bias_ptr=False)[0] == NOT_SUPPORTED
        assert matmul(scale=R_32I, out=R_32I, mode=HOST, epi=DEFAULT, bias_ptr=False)[0] == OK
        print("ok")
    """, PYGPU_CUDA_EMU_SYNC=1)
    assert "ok" in out


def test_linear_forward_through_cublaslt_is_the_cpus_within_one_rounding(plugin):
    """Issue 38: the linear forward on cuda is one cublasLtMatmul (csrc/backends/cuda/
    cuda_lt_gemm.c) with the bias and relu in its epilogue; other activations follow in place.
    Against the CPU's fused layer: float32, float16 and bfloat16, with and without a bias,
    every activation, odd shapes (1, 3, 17; K = 300 takes the stand-in's split-K with its
    workspace), a transposed input, and float32 with TF32 allowed. A 16-bit result is the
    CPU's within one rounding (two for the activations applied after the GEMM's rounding,
    as PyTorch's addmm followed by the activation)."""
    out = _run(plugin, """
        import numpy as np, pygpu
        from pygpu import nn
        F = nn.functional
        rng = np.random.default_rng(0)
        from pygpu._ops._train import ACT_TABLE
        acts = [None] + [name for name, _, _ in ACT_TABLE]  # every PG_ACT row
        assert len(acts) >= 5, acts
        checked = 0
        for n, i, o in ((1, 1, 1), (3, 17, 5), (17, 3, 1), (5, 300, 17), (17, 64, 3)):
            x = rng.standard_normal((n, i)).astype(np.float32)
            w = (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)
            b = rng.standard_normal(o).astype(np.float32)
            for dt, rtol, atol in ((pygpu.float32, 2e-6, 2e-6), (pygpu.float16, 2 ** -9, 1e-3),
                                   (pygpu.bfloat16, 2 ** -6, 1e-2)):
                for act in acts:
                    for bias in (b, None):
                        got, want = [
                            F.linear(pygpu.tensor(x, device=dev).astype(dt),
                                     pygpu.tensor(w, device=dev).astype(dt),
                                     None if bias is None
                                     else pygpu.tensor(bias, device=dev).astype(dt),
                                     activation=act).astype(pygpu.float32).cpu().numpy()
                            for dev in ("cuda", "cpu")]
                        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                                   err_msg=f"{n, i, o, dt, act, bias is None}")
                        checked += 1
        assert checked == 5 * 3 * len(acts) * 2
        # views one row in: contiguous, but their pointers only 2-byte aligned (bf16, 17
        # columns), which the heuristic must be told (cuBLASLt assumes 256 bytes otherwise)
        from pygpu.profiler import profile
        X = rng.standard_normal((6, 17)).astype(np.float32)
        W = rng.standard_normal((4, 17)).astype(np.float32)
        B = rng.standard_normal(4).astype(np.float32)
        ys = []
        for dev in ("cuda", "cpu"):
            t = [pygpu.tensor(a, device=dev).astype(pygpu.bfloat16) for a in (X, W, B)]
            with profile() as prof:
                y = F.linear(t[0][1:], t[1][1:], t[2][1:], activation="relu")
            if dev == "cuda":
                (lin,) = [e for e in prof.events() if e.name == "linear"]
                assert [k.name for k in lin.kernels] == ["cublasLtMatmul"], lin.kernels
            ys.append(y.astype(pygpu.float32).cpu().numpy())
        np.testing.assert_allclose(*ys, rtol=2 ** -6, atol=1e-2)
        # a transposed input (the core makes it contiguous before the GEMM)
        xt = rng.standard_normal((40, 9)).astype(np.float32)
        w = rng.standard_normal((6, 40)).astype(np.float32)
        b = rng.standard_normal(6).astype(np.float32)
        got = F.linear(pygpu.tensor(xt, device="cuda").T, pygpu.tensor(w, device="cuda"),
                       pygpu.tensor(b, device="cuda"), activation="relu").cpu().numpy()
        np.testing.assert_allclose(got, np.maximum(xt.T @ w.T + b, 0), rtol=1e-5, atol=1e-5)
        # TF32 allowed: the inputs rounded to 10 mantissa bits, so not float32's result
        pygpu.backends.cuda.matmul.allow_tf32 = True
        x = rng.standard_normal((8, 64)).astype(np.float32)
        w = rng.standard_normal((16, 64)).astype(np.float32)
        got = F.linear(pygpu.tensor(x, device="cuda"), pygpu.tensor(w, device="cuda")).cpu().numpy()
        pygpu.backends.cuda.matmul.allow_tf32 = False
        np.testing.assert_allclose(got, x @ w.T, rtol=2e-2, atol=2e-2)
        assert np.abs(got - x @ w.T).max() > 1e-5
        print("ok")
    """)
    assert "ok" in out


def test_emulated_cublaslt_holds_the_float_gemms_rules(plugin):
    """The cuBLASLt stand-in's float/half section (tests/cuda_emu/emu_cublaslt.cpp) computes
    D = epilogue(alpha op(A) op(B) + beta C) with the bias and relu and one rounding to D's type,
    and refuses what cuBLASLt refuses: type combinations outside its table, an epilogue it does
    not model, a bias type other than D's, a BIAS epilogue with no bias pointer, less workspace
    than the heuristic's algorithm needs; the reduction-scheme mask decides whether a 16-bit D's
    split-K partial sums are rounded to 16 bits. So a change to cuda_lt_gemm.c that broke one of
    these rules fails here as it would on a GPU."""
    out = _run(plugin, """
        import ctypes, os
        import numpy as np
        lib = ctypes.CDLL(os.environ["PYGPU_CUDA_BACKEND_SO"])
        P, ref = ctypes.c_void_p, ctypes.byref
        R_32F, R_16F, R_16BF, R_8I, R_32I = 0, 2, 14, 3, 10
        C32F, C32F_TF32, C32I, C64F = 68, 77, 72, 70
        TRANSA, TRANSB, EPILOGUE, BIAS_POINTER, BIAS_DATA_TYPE = 3, 4, 7, 8, 26
        DEFAULT, RELU, BIAS, RELU_BIAS, GELU = 1, 2, 4, 6, 32
        MAX_WS, SCHEMES, ALIGN_A = 1, 3, 5
        OK, INVALID, NOT_SUPPORTED = 0, 7, 15

        class Result(ctypes.Structure):
            _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspaceSize", ctypes.c_size_t),
                        ("state", ctypes.c_int), ("wavesCount", ctypes.c_float),
                        ("reserved", ctypes.c_int * 4)]

        lib.cublasLtMatrixLayoutCreate.argtypes = [ctypes.POINTER(P), ctypes.c_int,
                                                   ctypes.c_uint64, ctypes.c_uint64,
                                                   ctypes.c_int64]
        lib.cublasLtMatmul.argtypes = [P] * 14 + [ctypes.c_size_t, P]
        lib.cublasLtMatmulAlgoGetHeuristic.argtypes = [P] * 7 + [ctypes.c_int, P, P]
        h = P()
        assert lib.cublasLtCreate(ref(h)) == OK
        np_of = {R_32F: np.float32, R_16F: np.float16}
        rng = np.random.default_rng(0)

        def bf16(a):  # float32 -> bfloat16 bits, round to nearest even
            u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
            return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

        def from_bf16(bits):
            return (bits.astype(np.uint32) << 16).view(np.float32)

        def store(a, t):
            return bf16(a) if t == R_16BF else np.asarray(a, np_of[t])

        def load(a, t):
            return from_bf16(a) if t == R_16BF else a.astype(np.float32)

        def gemm(m, n, k, ab=R_32F, cd=R_32F, compute=C32F, epi=DEFAULT, bias=True,
                 bias_type=None, ws=32 << 20, give_ws=None, schemes=None, ta=1, requested=1,
                 A=None, B=None, align=4, a_offset=0):
            # column-major: A stored k x m (op T), B stored k x n (op N), D m x n; numpy's
            # buffers are not 256-byte aligned (cuBLASLt's default assumption), so the
            # preference says 4 bytes unless align says otherwise; a_offset moves A's pointer
            A = store(rng.standard_normal(k * m + a_offset) if A is None else A, ab)[a_offset:]
            B = store(rng.standard_normal(k * n) if B is None else B, ab)
            bv = store(rng.standard_normal(m), cd)
            D = store(np.zeros(m * n), cd)
            desc, la, lb, lc, pref = P(), P(), P(), P(), P()
            assert lib.cublasLtMatmulDescCreate(ref(desc), compute, R_32F) == OK
            for attr, v in ((TRANSA, ta), (TRANSB, 0), (EPILOGUE, epi)):
                x = ctypes.c_int32(v)
                assert lib.cublasLtMatmulDescSetAttribute(desc, attr, ref(x), 4) == OK
            if bias:
                p = P(bv.ctypes.data)
                assert lib.cublasLtMatmulDescSetAttribute(desc, BIAS_POINTER, ref(p), 8) == OK
            if bias_type is not None:
                x = ctypes.c_int32(bias_type)
                assert lib.cublasLtMatmulDescSetAttribute(desc, BIAS_DATA_TYPE, ref(x), 4) == OK
            assert lib.cublasLtMatrixLayoutCreate(ref(la), ab, k, m, k) == OK
            assert lib.cublasLtMatrixLayoutCreate(ref(lb), ab, k, n, k) == OK
            assert lib.cublasLtMatrixLayoutCreate(ref(lc), cd, m, n, m) == OK
            assert lib.cublasLtMatmulPreferenceCreate(ref(pref)) == OK
            w = ctypes.c_uint64(ws)
            assert lib.cublasLtMatmulPreferenceSetAttribute(pref, MAX_WS, ref(w), 8) == OK
            if schemes is not None:
                x = ctypes.c_uint32(schemes)
                assert lib.cublasLtMatmulPreferenceSetAttribute(pref, SCHEMES, ref(x), 4) == OK
            for i in range(4):
                x = ctypes.c_uint32(align)
                assert lib.cublasLtMatmulPreferenceSetAttribute(pref, ALIGN_A + i, ref(x), 4) == OK
            res, count = Result(), ctypes.c_int(-1)
            st = lib.cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref, requested,
                                                    ref(res), ref(count))
            if st != OK:
                return st, count.value, None, None
            assert count.value == 1 and res.state == OK
            size = res.workspaceSize if give_ws is None else give_ws
            buf = np.zeros(max(size, 1), np.uint8)
            alpha, beta = ctypes.c_float(1), ctypes.c_float(0)
            st = lib.cublasLtMatmul(h, desc, ref(alpha), A.ctypes.data, la, B.ctypes.data, lb,
                                    ref(beta), D.ctypes.data, lc, D.ctypes.data, lc, ref(res),
                                    buf.ctypes.data, size, None)
            Am = load(A, ab).reshape(m, k).astype(np.float64)   # column i of stored A
            Bm = load(B, ab).reshape(n, k).astype(np.float64)
            want = Bm @ Am.T + (load(bv, cd) if epi in (BIAS, RELU_BIAS) else 0)
            if epi in (RELU, RELU_BIAS):
                want = np.maximum(want, 0)
            return st, res.workspaceSize, load(D, cd).reshape(n, m), want

        # the table: f32 (32F, 32F_FAST_TF32), f16 -> f16|f32, bf16 -> bf16|f32 (32F)
        for ab, cd, compute, tol in ((R_32F, R_32F, C32F, 1e-5), (R_32F, R_32F, C32F_TF32, 1e-2),
                                     (R_16F, R_16F, C32F, 2 ** -10), (R_16F, R_32F, C32F, 1e-5),
                                     (R_16BF, R_16BF, C32F, 2 ** -7), (R_16BF, R_32F, C32F, 1e-5)):
            for epi in (DEFAULT, RELU, BIAS, RELU_BIAS):
                st, _, got, want = gemm(17, 3, 29, ab, cd, compute, epi)
                assert st == OK, (ab, cd, compute, epi, st)
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
                if epi in (RELU, RELU_BIAS):
                    assert (got == 0).any() and (got > 0).any()
        for ab, cd, compute in ((R_16F, R_16BF, C32F), (R_16BF, R_16F, C32F), (R_32F, R_16BF, C32F),
                                (R_16BF, R_16BF, C32F_TF32), (R_32F, R_32F, C64F),
                                (R_32F, R_32F, C32I)):
            assert gemm(8, 3, 8, ab, cd, compute)[0] == NOT_SUPPORTED, (ab, cd, compute)
        assert gemm(8, 3, 8, epi=GELU)[0] == NOT_SUPPORTED               # not modelled
        assert gemm(8, 3, 8, R_16BF, R_16BF, bias_type=R_32F, epi=BIAS)[0] == NOT_SUPPORTED
        assert gemm(8, 3, 8, R_16BF, R_16BF, bias_type=R_16BF, epi=BIAS)[0] == OK
        assert gemm(8, 3, 8, epi=BIAS, bias=False)[0] == INVALID         # no bias pointer
        assert gemm(8, 3, 8, requested=0)[0] == INVALID
        assert gemm(8, 3, 5, ta=0)[0] == INVALID         # op(A) 5 x 8 and op(B) 5 x 3 disagree
        # the algorithm assumes the preference's alignment: A one bf16 in is 2-byte aligned
        assert gemm(8, 3, 8, R_16BF, R_16BF, a_offset=1)[0] == INVALID
        st, _, got, want = gemm(8, 3, 8, R_16BF, R_16BF, a_offset=1, align=2)
        assert st == OK
        np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=2 ** -7)
        # split-K (k > 256): with a workspace and only the compute-type scheme allowed, the
        # heuristic's algorithm needs one; less is refused, and the result is the float sum
        # rounded once
        st, need, got, want = gemm(4, 2, 600, R_16BF, R_16BF, schemes=2 | 0)
        assert st == OK and need > 0, (st, need)
        np.testing.assert_allclose(got, want, rtol=2 ** -8, atol=1e-3)
        assert gemm(4, 2, 600, R_16BF, R_16BF, schemes=2, give_ws=need - 4)[0] == INVALID
        # no workspace room: one float sum, no workspace
        st, need, got, want = gemm(4, 2, 600, R_16BF, R_16BF, schemes=2, ws=0)
        assert st == OK and need == 0
        np.testing.assert_allclose(got, want, rtol=2 ** -8, atol=1e-3)
        # the default mask allows the output-type schemes: partial sums rounded to bf16, which
        # a sum that starts each chunk of 256 with 1 and adds 2^-9 shows: the chunks' 1.498,
        # 1.498, 1.170 round to 1.5, 1.5, 1.172 and their bf16 sum to 4.1875, where the float
        # sum 4.166 rounds once to 4.15625
        A, B = np.full((4, 600), 2.0 ** -9), np.ones(600 * 2)
        A[:, ::256] = 1.0
        A = A.reshape(-1)
        st, _, lossy, want = gemm(4, 2, 600, R_16BF, R_16BF, epi=DEFAULT, A=A, B=B)
        st2, _, exact, _ = gemm(4, 2, 600, R_16BF, R_16BF, epi=DEFAULT, A=A, B=B, schemes=2)
        assert st == OK and st2 == OK
        assert np.all(exact == from_bf16(bf16(want))), (exact, want)
        assert np.all(exact == 4.15625) and np.all(lossy == 4.1875), (lossy, exact)
        print("ok")
    """, PYGPU_CUDA_EMU_SYNC=1)
    assert "ok" in out


def test_emulated_cusolver_holds_cusolvers_rules(plugin):
    """The cuSOLVER stand-in (tests/cuda_emu/emu_cusolver.cpp) refuses what cuSOLVER documents
    as invalid (a null handle, a fill mode or job outside its enum, lda below max(1, rows), a
    workspace below its bufferSize answer, gesvd with m < n, orgqr with k > n) and computes
    LAPACK's results and devInfo column-major, so a plugin change that broke an argument or
    the row-major/column-major crossing fails on the emulated device as it would on a GPU."""
    out = _run(plugin, """
        import ctypes, os
        import numpy as np
        lib = ctypes.CDLL(os.environ["PYGPU_CUDA_BACKEND_SO"])
        P, I, ref = ctypes.c_void_p, ctypes.c_int, ctypes.byref
        OK, NOT_INITIALIZED, INVALID = 0, 1, 3
        LOWER, UPPER, OP_N, OP_T = 0, 1, 0, 1
        h = P()
        assert lib.cusolverDnCreate(ref(h)) == OK
        lw = I()
        ptr = lambda a: P(a.ctypes.data)  # a host array: the emulated device shares the memory
        # potrf: the buffer size, then the checks of the call
        A = np.asfortranarray(np.array([[4.0, 2.0], [2.0, 3.0]]))
        assert lib.cusolverDnDpotrf_bufferSize(h, LOWER, 2, ptr(A), 2, ref(lw)) == OK
        work, info = np.zeros(max(lw.value, 1)), np.zeros(1, np.int32)
        assert lib.cusolverDnDpotrf_bufferSize(None, LOWER, 2, ptr(A), 2, ref(lw)) == NOT_INITIALIZED
        assert lib.cusolverDnDpotrf_bufferSize(h, 7, 2, ptr(A), 2, ref(lw)) == INVALID  # uplo
        assert lib.cusolverDnDpotrf(h, LOWER, 2, ptr(A), 1, ptr(work), lw, ptr(info)) == INVALID
        assert lib.cusolverDnDpotrf(h, LOWER, 2, ptr(A), 2, ptr(work), lw.value - 1,
                                    ptr(info)) == INVALID                          # short work
        assert lib.cusolverDnDpotrf(h, LOWER, 2, ptr(A), 2, ptr(work), lw, None) == INVALID
        assert lib.cusolverDnDpotrf(h, LOWER, 2, ptr(A), 2, ptr(work), lw, ptr(info)) == OK
        assert info[0] == 0 and np.allclose(np.tril(A), np.linalg.cholesky([[4, 2], [2, 3]]))
        assert np.isnan(work).all()  # the workspace is poisoned: nothing may read it after
        B = np.asfortranarray(np.array([[1.0, 2.0], [2.0, 1.0]]))      # not positive-definite
        assert lib.cusolverDnDpotrf(h, UPPER, 2, ptr(B), 2, ptr(work), lw, ptr(info)) == OK
        assert info[0] == 2                                              # the minor of order 2
        # getrf + getrs (transposed): A^T x = b
        M = np.asfortranarray(np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]]))
        M0 = M.copy()
        assert lib.cusolverDnDgetrf_bufferSize(h, 3, 3, ptr(M), 2, ref(lw)) == INVALID  # lda < m
        assert lib.cusolverDnDgetrf_bufferSize(h, 3, 3, ptr(M), 3, ref(lw)) == OK
        work, ipiv = np.zeros(lw.value), np.zeros(3, np.int32)
        assert lib.cusolverDnDgetrf(h, 3, 3, ptr(M), 3, ptr(work), ptr(ipiv), ptr(info)) == OK
        assert info[0] == 0 and ipiv[0] == 3                              # the largest pivot
        b = np.array([1.0, 2.0, 3.0])
        assert lib.cusolverDnDgetrs(h, 5, 3, 1, ptr(M), 3, ptr(ipiv), ptr(b), 3, ptr(info)) == INVALID
        assert lib.cusolverDnDgetrs(h, OP_T, 3, 1, ptr(M), 3, ptr(ipiv), ptr(b), 2, ptr(info)) == INVALID
        assert lib.cusolverDnDgetrs(h, OP_T, 3, 1, ptr(M), 3, ptr(ipiv), ptr(b), 3, ptr(info)) == OK
        assert np.allclose(M0.T @ b, [1.0, 2.0, 3.0])
        S = np.asfortranarray(np.zeros((2, 2)))
        assert lib.cusolverDnDgetrf(h, 2, 2, ptr(S), 2, ptr(work), ptr(ipiv), ptr(info)) == OK
        assert info[0] == 1                                               # U(1,1) is zero
        # gesvd takes tall matrices only; its workspace is checked
        assert lib.cusolverDnDgesvd_bufferSize(h, 2, 3, ref(lw)) == INVALID
        assert lib.cusolverDnDgesvd_bufferSize(h, 3, 2, ref(lw)) == OK
        T = np.asfortranarray(np.arange(6.0).reshape(3, 2) ** 1.5)
        T0, s, U, VT = T.copy(), np.zeros(2), np.asfortranarray(np.zeros((3, 2))), np.zeros((2, 2))
        work, rwork = np.zeros(lw.value), np.zeros(2)
        gesvd = lambda m, n, lwork, job=ord("S"): lib.cusolverDnDgesvd(
            h, job, job, m, n, ptr(T), 3, ptr(s), ptr(U), 3, ptr(VT), 2, ptr(work), lwork,
            ptr(rwork), ptr(info))
        assert gesvd(2, 3, lw) == INVALID and gesvd(3, 2, lw.value - 1) == INVALID
        assert gesvd(3, 2, lw, ord("X")) == INVALID
        assert gesvd(3, 2, lw) == OK and info[0] == 0
        VTf = VT.reshape(2, 2).T                      # column-major storage read back
        assert np.allclose(s, np.linalg.svd(T0, compute_uv=False))
        assert np.allclose((U * s) @ VTf, T0)
        # orgqr's k <= n <= m; syevd's job
        assert lib.cusolverDnDorgqr_bufferSize(h, 3, 2, 3, ptr(T), 3, ptr(s), ref(lw)) == INVALID
        assert lib.cusolverDnDsyevd_bufferSize(h, 2, LOWER, 2, ptr(A), 2, ptr(s), ref(lw)) == INVALID
        print("ok")
    """, PYGPU_CUDA_EMU_SYNC=1)
    assert "ok" in out
