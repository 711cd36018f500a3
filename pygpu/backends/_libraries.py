"""Where an NVIDIA library that the CUDA plugin loads on first use may be (cuDNN for the
convolutions, cuFFT for torch.fft, cuSOLVER for the factorizations): one search, most specific
first, so that pygpu.backends.cudnn, _cufft and _cusolver list their candidates alike; and
the one explicit load (`load_first`) that cudnn.is_available() and _cufft.is_available() ask.

The plugin dlopens the first candidate that loads (csrc/backends/cuda/cuda_lazy_library.c);
`candidates` loads nothing."""
import glob
import os
import site
import sys

from .. import _C
from .. import cuda as _cuda


def candidates(env, subdirs, pattern, soname):
    """Paths of a library, most specific first: the environment variable `env` (the emulated
    device of tests/cuda_emu names its own stand-in there), the nvidia-* wheels beside pygpu
    (site-packages/nvidia/<subdir>/lib/<pattern>), the CUDA toolkit's lib64, then `soname`
    (the loader's own search path)."""
    out = [os.environ[env]] if os.environ.get(env) else []
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    roots = [here] + site.getsitepackages() + [site.getusersitepackages()]
    roots += [p for p in sys.path if p.endswith("site-packages")]
    for r in roots:
        for sub in subdirs:
            out += sorted(glob.glob(os.path.join(r, "nvidia", sub, "lib", pattern)))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            out += sorted(glob.glob(os.path.join(os.environ[var], "lib64", pattern)))
    seen, unique = set(), []
    for p in out:
        if p not in seen and os.path.exists(p):
            seen.add(p)
            unique.append(p)
    return unique + [soname]


def load_first(state, load, paths, missing, install, on_load=None):
    """Load a library into the CUDA plugin from the first of `paths` that loads, once: the
    answer is kept in state["loaded"] and, where none loads, the last two failures (or
    `missing`) and the `install` hint in state["why"]. `load(path)` is the plugin's loader
    (DeviceUnavailableError when that path does not load); on_load() runs after the first
    successful load. True when the library is there."""
    if state["loaded"] is not None:
        return state["loaded"]
    if _cuda.is_built():
        _cuda._load()  # the plugin (once); it preloads cuBLAS from its wheel
    if not _cuda.is_built() or not _C._load_cuda(None):
        state["why"] = f"the CUDA backend is not available: {_cuda.unavailable_reason()}"
        state["loaded"] = False
        return False
    errors = []
    for path in paths:
        try:
            load(path)
        except _C.DeviceUnavailableError as e:
            errors.append(str(e))
            continue
        state["loaded"] = True
        if on_load is not None:
            on_load()
        return True
    state["why"] = f"{'; '.join(errors[-2:]) if errors else missing} ({install})"
    state["loaded"] = False
    return False
