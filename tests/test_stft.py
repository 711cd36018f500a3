# test_stft.py - torch.stft / istft and their Tensor methods (pygpu/_tensor/spectral.py)
# against torch on every device: windows shorter than n_fft, hops, centering and its pad
# modes, normalized, onesided and two-sided, return_complex False (the real view), istft's
# length (shorter, longer: zero-padded, or refused where the window envelope vanishes),
# the round trip, the gradient through stft, and PyTorch's errors.
import warnings

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

rng = np.random.default_rng(5)
X = rng.standard_normal((2, 100))


def P(t, device):
    return None if t is None else pygpu.tensor(np.asarray(t), device=device)


CASES = [dict(n_fft=16, hop_length=5, win_length=12, window="hann", normalized=True),
         dict(n_fft=16, center=False, onesided=False),
         dict(n_fft=16, window="hann16"),
         dict(n_fft=20, pad_mode="constant"),
         dict(n_fft=15, hop_length=4, pad_mode="replicate", window="hamming")]


def _window(kw, lib):
    name = kw.get("window")
    if name is None:
        return None
    n = kw.get("win_length", kw["n_fft"]) if name != "hann16" else 16
    fn = lib.hamming_window if name == "hamming" else lib.hann_window
    return fn(n, dtype=lib.float64)


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("return_complex", [True, False])
def test_stft_matches_torch(device, case, return_complex):
    kw = dict(CASES[case])
    tkw = dict(kw, window=_window(kw, torch), return_complex=return_complex)
    pkw = dict(kw, window=P(_window(kw, torch), device), return_complex=return_complex)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.stft(torch.tensor(X), **tkw)
        out = pygpu.stft(P(X, device), **pkw)
        out1 = P(X[0], device).stft(**pkw)  # 1-d input, the method
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-12)
    np.testing.assert_allclose(out1.numpy(), ref[0].numpy(), atol=1e-12)


@pytest.mark.parametrize("case", range(len(CASES) - 1))
@pytest.mark.parametrize("length", [None, 100, 90, 120])
def test_istft_matches_torch(device, case, length):
    kw = {k: v for k, v in CASES[case].items() if k != "pad_mode"}
    spec = torch.stft(torch.tensor(X), window=_window(kw, torch), return_complex=True,
                      **{k: v for k, v in kw.items() if k != "window"})
    tkw = dict(kw, window=_window(kw, torch), length=length)
    pkw = dict(kw, window=P(_window(kw, torch), device), length=length)
    try:
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            ref = torch.istft(spec, **tkw)
    except RuntimeError:  # the window envelope vanishes in the span asked for (NOLA)
        with pytest.raises(RuntimeError, match="window overlap add min"):
            pygpu.istft(P(spec.numpy(), device), **pkw)
        return
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        out = pygpu.istft(P(spec.numpy(), device), **pkw)
    # PyTorch's warnings (each once per process in torch, so named here, not compared)
    said = [str(w.message) for w in ours]
    assert any(m.startswith("A window was not provided") for m in said) == (
        kw.get("window") is None)
    assert any(m.startswith("The length of signal is shorter") for m in said) == (
        length == 120)  # past the last frame in every case; 90 and 100 are within
    assert tuple(out.shape) == tuple(ref.shape)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-12)
    if length == 100:
        np.testing.assert_allclose(out.numpy(), X, atol=1e-12)  # the round trip


def test_stft_gradient(device):
    """Through torch.fft's rfft: where pygpu.fft has no backward yet, stft says so, as the
    FFT does; where it has, the gradient is torch's."""
    x = rng.standard_normal(64)
    try:
        pygpu.fft.rfft(pygpu.tensor(x, requires_grad=True))
    except RuntimeError as e:
        assert "autograd through the FFT" in str(e)
        with pytest.raises(RuntimeError, match="autograd through the FFT"):
            pygpu.stft(pygpu.tensor(x, device=device, requires_grad=True), 16,
                       window=pygpu.hann_window(16, dtype=pygpu.float64, device=device),
                       return_complex=True)
        return
    tx = torch.tensor(x, requires_grad=True)
    torch.stft(tx, 16, window=torch.hann_window(16, dtype=torch.float64),
               return_complex=True).abs().sum().backward()
    px = pygpu.tensor(x, device=device, requires_grad=True)
    pygpu.stft(px, 16, window=pygpu.hann_window(16, dtype=pygpu.float64, device=device),
               return_complex=True).abs().sum().backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), atol=1e-10)


def test_errors():
    x = pygpu.tensor(X)
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        pygpu.stft(x, 16)
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        torch.stft(torch.tensor(X), 16)
    with pytest.raises(RuntimeError, match="expected a 1D window tensor"):
        pygpu.stft(x, 16, window=pygpu.ones(10, dtype=pygpu.float64), return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input"):
        pygpu.istft(x, 16)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        pygpu.stft(x, 16, window=pygpu.ones(16, dtype=pygpu.float64), return_complex=False)
