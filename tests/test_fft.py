# test_fft.py - pygpu.fft against torch.fft on every device: each transform (1-D, 2-D, N-D,
# real and inverse real) on complex64/complex128 and float32/float64 inputs, odd and even
# lengths, n/s padding and trimming, dim, the three norms; the helpers (fftshift, ifftshift,
# fftfreq, rfftfreq); the Hermitian transforms (hfft, ihfft, their 2-D and N-D forms); where
# the FFT node runs (cpu and sim; cuda on cuFFT where it loads, tests/test_cufft.py, else its
# operands moved to the cpu, counted); PyTorch's errors (types and words). Each test loops
# over its cases.
import numpy as np
import pytest
import torch

import pygpu
from pygpu.backends import _cufft

R = np.random.default_rng(11)
TOL = {np.complex64: 2e-5, np.float32: 2e-5, np.complex128: 1e-12, np.float64: 1e-12}
NORMS = [None, "backward", "ortho", "forward"]


def _data(shape, nd):
    a = R.standard_normal(shape)
    if np.issubdtype(nd, np.complexfloating):
        a = a + 1j * R.standard_normal(shape)
    return a.astype(nd)


def _check(label, got, want, tol):
    g = got.cpu().numpy()
    w = want.resolve_conj().numpy()
    assert str(g.dtype) == str(w.dtype), f"{label}: dtype {g.dtype} != torch {w.dtype}"
    assert g.shape == w.shape, f"{label}: shape {g.shape} != torch {w.shape}"
    scale = max(1.0, float(np.abs(w).max()) if w.size else 1.0)
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, err_msg=label)


def _run(device, fn, arr, tol, **kw):
    p = pygpu.tensor(arr).to(device)
    t = torch.tensor(arr)
    _check(f"{fn} {arr.dtype} {arr.shape} {kw}", getattr(pygpu.fft, fn)(p, **kw),
           getattr(torch.fft, fn)(t, **kw), tol)


def test_complex_1d(device):
    for nd in (np.complex64, np.complex128, np.float32, np.float64):
        for length in (1, 2, 7, 8, 15, 16):
            a = _data((3, length), nd)
            for fn in ("fft", "ifft"):
                for norm in NORMS:
                    _run(device, fn, a, TOL[nd], norm=norm)
        a = _data((4, 6, 5), nd)
        for fn in ("fft", "ifft"):
            for kw in ({"n": 3}, {"n": 9, "dim": 1}, {"n": 8, "dim": 0, "norm": "ortho"},
                       {"dim": -3}):
                _run(device, fn, a, TOL[nd], **kw)


def test_real_1d(device):
    for nd in (np.float32, np.float64):
        for length in (1, 2, 7, 8, 15, 16):
            a = _data((2, length), nd)
            for norm in NORMS:
                _run(device, "rfft", a, TOL[nd], norm=norm)
        a = _data((4, 6, 5), nd)
        for kw in ({"n": 3}, {"n": 9, "dim": 1}, {"n": 7, "dim": 0, "norm": "forward"}):
            _run(device, "rfft", a, TOL[nd], **kw)
    for nd in (np.complex64, np.complex128):
        for m in (1, 2, 4, 5, 9):
            h = _data((3, m), nd)
            for norm in NORMS if m > 1 else ():  # (one point: the default n is 0, an error)
                _run(device, "irfft", h, TOL[nd], norm=norm)
            for n in (1, 2 * m - 1, 2 * m - 2 if m > 1 else 2, 2 * m + 3):
                _run(device, "irfft", h, TOL[nd], n=n)
        _run(device, "irfft", _data((5, 4, 3), nd), TOL[nd], dim=1, n=6)
    # irfft of a real tensor: PyTorch takes it as complex
    _run(device, "irfft", _data((3, 4), np.float32), TOL[np.float32])


def test_nd(device):
    for nd in (np.complex64, np.complex128, np.float32, np.float64):
        a = _data((3, 5, 4), nd)
        for fn in ("fft2", "ifft2", "fftn", "ifftn"):
            for kw in ({}, {"norm": "ortho"}, {"s": (4, 6)}, {"dim": (0, 2)},
                       {"s": (2, 3), "dim": (0, 1), "norm": "forward"}):
                _run(device, fn, a, TOL[nd], **kw)
        _run(device, "fftn", a, TOL[nd], dim=(2, 0))
    for nd in (np.float32, np.float64):
        a = _data((3, 5, 6), nd)
        for fn in ("rfft2", "rfftn"):
            for kw in ({}, {"norm": "ortho"}, {"s": (4, 7)}, {"dim": (0, 2)}):
                _run(device, fn, a, TOL[nd], **kw)
    for nd in (np.complex64, np.complex128):
        h = _data((3, 5, 4), nd)
        for fn in ("irfft2", "irfftn"):
            for kw in ({}, {"norm": "forward"}, {"s": (4, 7)}, {"s": (5, 6)}, {"dim": (0, 2)}):
                _run(device, fn, h, TOL[nd], **kw)


def test_hermitian(device):
    for nd in (np.complex64, np.complex128):
        for m in (2, 3, 5):
            h = _data((3, m), nd)
            for norm in NORMS:
                _run(device, "hfft", h, TOL[nd], norm=norm)
            for n in (1, 2 * m - 1, 2 * m + 2):
                _run(device, "hfft", h, TOL[nd], n=n)
        h = _data((3, 5, 4), nd)
        _run(device, "hfft", h, TOL[nd], dim=1, n=6)
        for fn in ("hfft2", "hfftn"):
            for kw in ({}, {"norm": "forward"}, {"s": (4, 7)}, {"dim": (0, 2)},
                       {"s": (2, 3, 5), "dim": (2, 0, 1), "norm": "ortho"}):
                if fn == "hfft2" and len(kw.get("s", ())) == 3:
                    continue
                _run(device, fn, h, TOL[nd], **kw)
    _run(device, "hfft", _data((3, 4), np.float64), TOL[np.float64])  # real input: complex
    for nd in (np.float32, np.float64):
        for length in (1, 2, 7, 8):
            a = _data((2, length), nd)
            for norm in NORMS:
                _run(device, "ihfft", a, TOL[nd], norm=norm)
        a = _data((4, 6, 5), nd)
        for kw in ({"n": 3}, {"n": 9, "dim": 1}, {"dim": 0, "norm": "forward"}):
            _run(device, "ihfft", a, TOL[nd], **kw)
        for fn in ("ihfft2", "ihfftn"):
            for kw in ({}, {"norm": "ortho"}, {"s": (4, 7)}, {"dim": (0, 2)}):
                _run(device, fn, a, TOL[nd], **kw)
    # the pair inverts each other (hfft of ihfft gives back the real signal)
    a = _data((3, 10), np.float64)
    back = pygpu.fft.hfft(pygpu.fft.ihfft(pygpu.tensor(a).to(device)), n=10)
    np.testing.assert_allclose(back.cpu().numpy(), a, atol=1e-12)


def test_round_trips(device):
    a = _data((4, 9), np.float64)
    p = pygpu.tensor(a).to(device)
    np.testing.assert_allclose(pygpu.fft.irfft(pygpu.fft.rfft(p), n=9).cpu().numpy(), a, atol=1e-12)
    c = _data((3, 4, 6), np.complex128)
    q = pygpu.tensor(c).to(device)
    for norm in NORMS:
        back = pygpu.fft.ifftn(pygpu.fft.fftn(q, norm=norm), norm=norm).cpu().numpy()
        np.testing.assert_allclose(back, c, atol=1e-12)


def test_shift_and_freq(device):
    for shape in ((5,), (4, 7), (6, 3, 2)):
        a = _data(shape, np.complex64)
        for fn in ("fftshift", "ifftshift"):
            for kw in ({}, {"dim": 0}, {"dim": (-1,)}):
                _run(device, fn, a, 0, **kw)
            p, t = pygpu.arange(int(np.prod(shape))).reshape(shape), torch.arange(int(np.prod(shape))).reshape(shape)
            np.testing.assert_array_equal(getattr(pygpu.fft, fn)(p.to(device)).cpu().numpy(),
                                          getattr(torch.fft, fn)(t).numpy())
    for n in (1, 4, 5, 8):
        for d in (1.0, 0.25):
            np.testing.assert_allclose(pygpu.fft.fftfreq(n, d, device=device).cpu().numpy(),
                                       torch.fft.fftfreq(n, d).numpy(), rtol=1e-6)
            np.testing.assert_allclose(pygpu.fft.rfftfreq(n, d, device=device).cpu().numpy(),
                                       torch.fft.rfftfreq(n, d).numpy(), rtol=1e-6)
    f = pygpu.fft.fftfreq(4, dtype=pygpu.float64, device=device)
    assert f.dtype is pygpu.float64 and str(f.device).startswith(device.split(":")[0])


def test_errors_as_torch(device):
    x, tx = pygpu.ones(4, device=device), torch.ones(4)
    xc, txc = x.to(pygpu.complex64), tx.to(torch.complex64)
    cases = [("fft n=0", lambda m, a, c: m.fft.fft(a, n=0)),
             ("irfft n=0", lambda m, a, c: m.fft.irfft(c, n=0)),
             ("irfft of one point", lambda m, a, c: m.fft.irfft(c[:1])),
             ("bad norm", lambda m, a, c: m.fft.fft(a, norm="foo")),
             ("rfft of complex", lambda m, a, c: m.fft.rfft(c)),
             ("dim out of range", lambda m, a, c: m.fft.fft(a, dim=2)),
             ("fft2 of 1-D", lambda m, a, c: m.fft.fft2(a)),
             ("s longer than ndim", lambda m, a, c: m.fft.fftn(a, s=(2, 2))),
             ("dims repeated", lambda m, a, c: m.fft.fftn(a.reshape(2, 2), dim=(0, 0))),
             ("s and dim lengths", lambda m, a, c: m.fft.fftn(a.reshape(2, 2), s=(4,), dim=(0, 1))),
             ("half", lambda m, a, c: m.fft.fft(a.to(m.float16))),
             ("ihfft of complex", lambda m, a, c: m.fft.ihfft(c)),
             ("ihfftn of no axis", lambda m, a, c: m.fft.ihfftn(a, dim=())),
             ("hfft n=0", lambda m, a, c: m.fft.hfft(c, n=0)),
             ("hfft2 of 1-D", lambda m, a, c: m.fft.hfft2(c))]
    for label, f in cases:
        with pytest.raises(Exception) as want:
            f(torch, tx, txc)
        with pytest.raises(type(want.value)) as got:
            f(pygpu, x, xc)
        assert str(got.value) == str(want.value), label


def test_the_node_runs_on_the_cpu_backend_sim_and_cufft(device):
    x = pygpu.tensor(_data((2, 8), np.complex64)).to(device)
    here = pygpu._C._has_node("FFT", x)
    # cuda runs the node on cuFFT where the library loads (the emulated device's stand-in)
    assert here == (not device.startswith("cuda") or _cufft.is_available())
    pygpu.synchronize()
    pygpu.reset_stats()
    y = pygpu.fft.fft(x)
    pygpu.synchronize()
    s = pygpu.stats()
    if here:
        assert s.transfer_count == 0
    else:  # moved to the cpu and back, both counted
        assert s.d2h_bytes == x.nbytes and s.h2d_bytes == y.nbytes
    assert y.device == x.device
