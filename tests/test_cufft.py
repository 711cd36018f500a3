# test_cufft.py - cuFFT for torch.fft on cuda (csrc/backends/cuda/cuda_cufft.c): loaded lazily
# (never by `import pygpu`), the FFT node on cuFFT where it loads (every sub-op in both
# precisions and both directions, the norms' factors, the Hermitian transforms' conjugations,
# C2R's input left as it was, cached plans, a user stream, no lines), and the cpu round trip
# (counted) where it does not. On the emulated device (tests/cuda_emu, PYGPU_CUFFT_LIBRARY
# naming the emulated plugin) these run the plugin's real cuFFT calls against a stand-in that
# checks cuFFT's arguments; on a GPU, against cuFFT. The stand-in's own checks are tested
# here too, through ctypes on the emulated plugin.
import os
import sys

import numpy as np
import pytest

import pygpu
from pygpu.backends import _cufft

from _helpers import run_child

torch = pytest.importorskip("torch")
needs_cuda = pytest.mark.skipif(not pygpu.cuda.is_available(), reason="needs a CUDA GPU (or "
                                "the emulated device of tests/cuda_emu)")
rng = np.random.default_rng(43)
TOL = {np.complex64: 3e-5, np.float32: 3e-5, np.complex128: 1e-11, np.float64: 1e-11}


def _data(shape, nd):
    a = rng.standard_normal(shape)
    if np.issubdtype(nd, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(nd)


def _same(got, want, tol, label):
    g, w = got.cpu().numpy(), want.resolve_conj().numpy()
    assert g.dtype == w.dtype and g.shape == w.shape, label
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max())),
                               err_msg=label)


def test_import_never_loads_cufft():
    rc, out, err = run_child("""
        import pygpu
        from pygpu.backends import _cufft
        pygpu.fft.fft(pygpu.randn(8).to(pygpu.complex64))  # on cpu: no cuFFT
        print(_cufft._state["loaded"])
    """)
    assert rc == 0, err
    assert out.split() == ["None"]


@needs_cuda
def test_the_node_runs_on_cufft_with_no_transfer():
    assert _cufft.is_available(), _cufft.unavailable_reason()
    assert _cufft.version() > 0
    cases = [("fft", np.complex64, {}), ("ifft", np.complex128, {"norm": "ortho"}),
             ("rfft", np.float32, {"norm": "forward"}), ("irfft", np.complex128, {"n": 9}),
             ("hfft", np.complex64, {"n": 8}), ("ihfft", np.float64, {"norm": "ortho"}),
             ("fft2", np.float64, {"s": (3, 5)}), ("irfftn", np.complex64, {}),
             ("hfftn", np.complex128, {"norm": "forward"}), ("ihfft2", np.float32, {})]
    for fn, nd, kw in cases:
        a = _data((3, 4, 6), nd)
        x = pygpu.tensor(a, device="cuda")
        pygpu.synchronize()
        pygpu.reset_stats()
        y = getattr(pygpu.fft, fn)(x, **kw)
        pygpu.synchronize()
        assert pygpu.stats().transfer_count == 0, fn  # no trip through the cpu
        assert y.device.type == "cuda"
        _same(y, getattr(torch.fft, fn)(torch.tensor(a), **kw), TOL[nd], f"{fn} {nd} {kw}")


@needs_cuda
def test_every_subop_precision_and_direction_against_torch():
    for nd in (np.complex64, np.complex128):
        for length in (1, 2, 5, 8, 12):
            a = _data((4, length), nd)
            for fn in ("fft", "ifft", "irfft", "hfft"):
                for norm in (None, "ortho", "forward") if length > 1 or fn in ("fft", "ifft") \
                        else ():
                    _same(getattr(pygpu.fft, fn)(pygpu.tensor(a, device="cuda"), norm=norm),
                          getattr(torch.fft, fn)(torch.tensor(a), norm=norm), TOL[nd],
                          f"{fn} {nd} {length} {norm}")
    for nd in (np.float32, np.float64):
        for length in (1, 2, 5, 8, 12):
            a = _data((3, length), nd)
            for fn in ("rfft", "ihfft"):
                for norm in (None, "ortho", "forward"):
                    _same(getattr(pygpu.fft, fn)(pygpu.tensor(a, device="cuda"), norm=norm),
                          getattr(torch.fft, fn)(torch.tensor(a), norm=norm), TOL[nd],
                          f"{fn} {nd} {length} {norm}")


@needs_cuda
def test_c2r_leaves_its_input_and_plans_are_reused():
    # cuFFT's C2R overwrites its input (the stand-in writes NaN there): the node runs it on a
    # copy, so the caller's spectrum is unchanged
    h = _data((5, 7), np.complex64)
    x = pygpu.tensor(h, device="cuda")
    for fn in ("irfft", "hfft"):
        y = getattr(pygpu.fft, fn)(x)
        np.testing.assert_array_equal(x.cpu().numpy(), h)
        _same(y, getattr(torch.fft, fn)(torch.tensor(h)), TOL[np.complex64], fn)
    # more layouts than the plan cache holds, then the first again
    for n in list(range(1, 40)) + [1, 2, 3]:
        a = _data((2, n), np.complex128)
        _same(pygpu.fft.fft(pygpu.tensor(a, device="cuda")), torch.fft.fft(torch.tensor(a)),
              TOL[np.complex128], f"fft n={n}")


@needs_cuda
def test_a_user_stream_and_no_lines():
    a = _data((6, 10), np.complex64)
    x = pygpu.tensor(a, device="cuda")
    s = pygpu.cuda.Stream()
    s.wait_stream(pygpu.cuda.current_stream())
    with pygpu.cuda.stream(s):
        y = pygpu.fft.fft(x)
        z = pygpu.fft.ifft(y)
    s.synchronize()
    _same(y, torch.fft.fft(torch.tensor(a)), TOL[np.complex64], "fft on a user stream")
    np.testing.assert_allclose(z.cpu().numpy(), a, atol=1e-5)
    e = pygpu.fft.fft(pygpu.zeros(0, 4, device="cuda", dtype=pygpu.complex64))
    assert tuple(e.shape) == (0, 4) and e.device.type == "cuda"
    r = pygpu.fft.rfft(pygpu.zeros(3, 0, 4, device="cuda"))
    assert tuple(r.shape) == (3, 0, 3)


@needs_cuda
def test_without_cufft_the_node_is_declined_and_the_cpu_runs_it():
    rc, out, err = run_child("""
        import numpy as np, torch
        import pygpu
        from pygpu.backends import _cufft
        _cufft.library_candidates = lambda: ["/nonexistent/libcufft.so.12"]  # before the plugin
        a = np.arange(16.0).reshape(2, 8).astype(np.complex64)
        x = pygpu.tensor(a, device="cuda")
        print(pygpu._C._has_node("FFT", x), _cufft.is_available())
        pygpu.synchronize(); pygpu.reset_stats()
        y = pygpu.fft.fft(x)
        pygpu.synchronize()
        s = pygpu.stats()
        print(s.d2h_bytes == x.nbytes, s.h2d_bytes == y.nbytes, y.device.type)
        print(np.allclose(y.cpu().numpy(), torch.fft.fft(torch.tensor(a)).numpy(), atol=1e-4))
        print(_cufft.unavailable_reason())
    """)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["False", "False"], out
    assert lines[1].split() == ["True", "True", "cuda"], out
    assert lines[2] == "True", out
    assert "nvidia-cufft" in lines[3] and "/nonexistent/libcufft.so.12" in lines[3], out


# ---- the stand-in's own checks (tests/cuda_emu/emu_cufft.cpp), as cuFFT documents them ----

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu"))
import harness  # noqa: E402

STAND_IN_CHECKS = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else __import__("os").environ["PYGPU_CUFFT_LIBRARY"])
C2C, R2C, Z2Z = 0x29, 0x2a, 0x69
SUCCESS, INVALID_PLAN, INVALID_TYPE, INVALID_VALUE, INVALID_SIZE = 0, 1, 3, 4, 8
I, P = ctypes.c_int, ctypes.c_void_p
lib.cufftPlanMany.argtypes = [ctypes.POINTER(I), I, ctypes.POINTER(I), ctypes.POINTER(I), I, I,
                              ctypes.POINTER(I), I, I, I, I]
for name in ("cufftExecC2C", "cufftExecZ2Z"):
    getattr(lib, name).argtypes = [I, P, P, I]
for name in ("cufftExecR2C", "cufftExecC2R"):
    getattr(lib, name).argtypes = [I, P, P]
lib.cufftSetStream.argtypes = [I, P]


def arr(v):
    return (I * len(v))(*v) if v is not None else None


def plan(n=(8,), rank=1, inembed=(8,), istride=1, idist=8, onembed=(8,), ostride=1, odist=8,
         kind=C2C, batch=2, out=True):
    h = I(0)
    rc = lib.cufftPlanMany(ctypes.byref(h) if out else None, rank, arr(n), arr(inembed), istride,
                           idist, arr(onembed), ostride, odist, kind, batch)
    return rc, h.value


checks = [
    (plan()[0], SUCCESS),
    (plan(inembed=None, onembed=None, istride=0, idist=0)[0], SUCCESS),  # the basic layout
    (plan(out=False)[0], INVALID_VALUE),            # no plan to write
    (plan(n=None)[0], INVALID_VALUE),
    (plan(kind=0x33)[0], INVALID_TYPE),
    (plan(rank=0)[0], INVALID_SIZE),
    (plan(rank=4, n=(2, 2, 2, 2))[0], INVALID_SIZE),
    (plan(n=(0,))[0], INVALID_SIZE),
    (plan(batch=0)[0], INVALID_SIZE),
    (plan(istride=0)[0], INVALID_SIZE),
    (plan(idist=7)[0], INVALID_SIZE),               # lines that overlap
    (plan(kind=R2C, odist=4)[0], INVALID_SIZE),     # R2C writes 8/2+1 = 5 values a line
    (plan(kind=R2C, odist=5)[0], SUCCESS),
]
rc, h = plan(kind=R2C, odist=5)
a, b = (ctypes.c_double * 32)(), (ctypes.c_double * 32)()
checks += [
    (lib.cufftExecC2C(h, a, b, -1), INVALID_VALUE),  # the exec of another type
    (lib.cufftExecR2C(h, None, b), INVALID_VALUE),
    (lib.cufftDestroy(h), SUCCESS),
    (lib.cufftExecR2C(h, a, b), INVALID_PLAN),       # destroyed
    (lib.cufftDestroy(h), INVALID_PLAN),
    (lib.cufftSetStream(12345, None), INVALID_PLAN),
]
rc, h = plan(kind=Z2Z)
checks += [
    (lib.cufftExecC2C(h, a, b, -1), INVALID_VALUE),  # a single-precision exec on a double plan
    (lib.cufftExecZ2Z(h, a, b, 0), INVALID_VALUE),   # no direction
    (lib.cufftDestroy(h), SUCCESS),
]
bad = [(i, got, want) for i, (got, want) in enumerate(checks) if got != want]
print("bad", bad)
"""


@pytest.mark.skipif(harness.skip_reason() is not None, reason=str(harness.skip_reason()))
def test_the_stand_in_checks_arguments_as_cufft_does():
    r = harness.run(harness.build("current"), STAND_IN_CHECKS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "bad []", r.stdout
