"""Where an NVIDIA library that the CUDA plugin loads on first use may be (cuDNN for the
convolutions, cuFFT for torch.fft, cuSOLVER for the factorizations): one search, most specific
first, so that pygpu.backends.cudnn, _cufft and _cusolver list their candidates alike.

The plugin dlopens the first candidate that loads (csrc/backends/cuda/cuda_cudnn.c,
cuda_cusolver.c); nothing here loads anything."""
import glob
import os
import site
import sys


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
