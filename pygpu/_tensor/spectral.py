"""The short-time Fourier transform and its inverse, with PyTorch's signatures, defaults,
checks and results: torch.stft / Tensor.stft and torch.istft / Tensor.istft.

stft: the signal (L,) or (B, L), padded by n_fft // 2 on each side when centered (reflect
by default), cut into frames of n_fft every hop_length samples (Tensor.unfold: a view),
each multiplied by the window (win_length samples, zero-padded to n_fft in the middle) and
transformed by torch.fft's rfft (onesided) or fft (pocketfft on the cpu, cuFFT on cuda):
(B, n_fft // 2 + 1 or n_fft, n_frames). istft inverts it by PyTorch's method: the inverse
transform of each frame times the window, overlap-added (F.fold) and divided by the
overlap-added squared window, which must not vanish anywhere (NOLA). Both are
differentiable where torch.fft's transforms are (pygpu.fft refuses a grad-requiring input
until its backward is built, and so, with its message, do these)."""
import warnings

from .. import _C, _dtype
from . import create as _tensor_create

Tensor = _C.Tensor


def _fft():
    from .. import fft
    return fft


def _F():
    from ..nn import functional
    return functional


def _window_full(window, n_fft, win_length, like, fn):
    """The window (n_fft,) of like's real dtype: ones(win_length) when None, centered."""
    real = like.dtype if not like.dtype.is_complex else (
        _dtype.float64 if like.dtype is _dtype.complex128 else _dtype.float32)
    if window is None:
        window = _tensor_create.ones(win_length, dtype=real, device=like.device)
    elif window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{fn}: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _F().pad(window, (left, n_fft - win_length - left))
    return window


def _lengths(fn, n_fft, hop_length, win_length):
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if n_fft <= 0:
        raise RuntimeError(f"{fn}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{fn}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{fn}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """The STFT of input (L,) or (B, L): complex (B, freq, n_frames) (return_complex=True)
    or its real view (..., 2) (False, deprecated; PyTorch requires the argument for real
    input)."""
    fn = "stft"
    if not isinstance(input, Tensor):
        raise TypeError(f"stft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.", stacklevel=2)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D")
    hop, win = _lengths(fn, n_fft, hop_length, win_length)
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which "
                      "is known to cause spectral leakage. Other windows such as torch.hann_"
                      "window or torch.hamming_window are recommended to reduce spectral "
                      "leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                      stacklevel=2)
    x = input.unsqueeze(0) if input.ndim == 1 else input
    if center:
        if pad_mode not in ("constant", "reflect", "replicate", "circular"):
            raise RuntimeError(f"stft: unsupported pad_mode {pad_mode!r}")
        p = n_fft // 2
        x = _F().pad(x.unsqueeze(1), (p, p), mode=pad_mode).squeeze(1)
    L = x.shape[-1]
    if not 0 < n_fft <= L:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {L}, but got n_fft={n_fft}")
    w = _window_full(window, n_fft, win, input, fn)
    frames = x.unfold(-1, n_fft, hop) * w  # (B, n_frames, n_fft)
    if onesided is None:
        onesided = not complex_in
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    spec = _fft().rfft(frames, dim=-1) if onesided else _fft().fft(frames, dim=-1)
    if normalized:
        spec = spec * (n_fft ** -0.5)
    spec = spec.transpose(-2, -1)  # (B, freq, n_frames)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    if not return_complex:
        from .complex import view_as_real
        return view_as_real(spec.contiguous())
    return spec


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The signal (L,) or (B, L) whose stft is input (freq, n_frames) or (B, freq,
    n_frames), complex: the windowed inverse frames overlap-added and divided by the
    overlap-added squared window."""
    fn = "istft"
    if not isinstance(input, Tensor):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex "
                           f"dtype, but got {input.ndim}")
    hop, win = _lengths(fn, n_fft, hop_length, win_length)
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", stacklevel=2)
    spec = input.unsqueeze(0) if input.ndim == 2 else input
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided:
        if n_fft // 2 + 1 != n_freq:
            raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of "
                               f"the input tensor to match n_fft / 2 + 1 when onesided=True, "
                               f"but got {n_freq}")
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
    elif n_fft != n_freq:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got "
                           f"{n_freq}")
    w = _window_full(window, n_fft, win, spec, fn)
    frames_f = spec.transpose(-2, -1)  # (B, n_frames, freq)
    if normalized:
        frames_f = frames_f * (n_fft ** 0.5)
    if onesided:
        frames = _fft().irfft(frames_f, n=n_fft, dim=-1)
    else:
        frames = _fft().ifft(frames_f, n=n_fft, dim=-1)
        if not return_complex:
            from .complex import real
            frames = real(frames)
    frames = frames * w  # (B, n_frames, n_fft)
    expected = n_fft + hop * (n_frames - 1)
    F = _F()
    y = _overlap_add(F, frames, expected, n_fft, hop)  # (B, expected)
    env = _overlap_add(F, (w * w).reshape(1, 1, n_fft).expand(1, n_frames, n_fft).contiguous(),
                       expected, n_fft, hop)
    start = n_fft // 2 if center else 0
    end = expected - (n_fft // 2 if center else 0) if length is None else start + int(length)
    end_in = min(end, expected)
    y = y[:, start:end_in]
    env = env[:, start:end_in]
    if bool((env.abs() < 1e-11).any().item()):
        raise RuntimeError("istft(...): window overlap add min: 0, the window must be nonzero "
                           "where frames overlap (NOLA)")
    y = y / env
    if end > end_in:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", stacklevel=2)
        y = F.pad(y, (0, end - end_in))
    return y.squeeze(0) if input.ndim == 2 else y


def _overlap_add(F, frames, expected, n_fft, hop):
    """sum over frames t of frames[:, t, k] at t * hop + k: (B, expected) (F.fold)."""
    if frames.dtype.is_complex:
        from .complex import complex as make_complex, imag, real
        return make_complex(_overlap_add(F, real(frames), expected, n_fft, hop),
                            _overlap_add(F, imag(frames), expected, n_fft, hop))
    cols = frames.transpose(-2, -1)  # (B, n_fft, n_frames)
    out = F.fold(cols, (1, expected), (1, n_fft), stride=(1, hop))  # (B, 1, 1, expected)
    return out.reshape(frames.shape[0], expected)


METHODS = {"stft": stft, "istft": istft}
FUNCTIONS = dict(METHODS)
