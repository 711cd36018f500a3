"""harness.py - build the emulated CUDA plugin and run Python on it, for tests.

build(kind) builds (once per process; objects are cached on disk)
build/cuda_emu/<kind>/_cuda_backend_emu.so: kind "current" from csrc/backends/cuda/kernels/, kind
"reverted" with the kernel files of reverted/ in place of csrc/backends/cuda/kernels/' own (the
half binary kernel as it was before issue 29's fix). run(plugin, code) runs
code in a fresh interpreter whose pygpu loads that plugin as cuda
(PYGPU_CUDA_BACKEND_SO); pygpu reads the variable at import, hence the
subprocess. skip_reason() says why the harness cannot build here (no g++, no
CUDA or cuBLAS headers), or None.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import build as _build  # noqa: E402

_built = {}


def skip_reason():
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        # the sanitizer stage: the emulated plugin and its fibers are not built for ASan
        # (the README's suite in .ci/run's first lane runs these tests, unsanitized)
        return "under the sanitizers' LD_PRELOAD"
    if not shutil.which("g++"):
        return "no g++ to compile the kernels for the CPU"
    if os.uname().machine != "x86_64":
        return "the fiber switch of tests/cuda_emu is x86-64 only"
    tk = _build.cuda_build.find_toolkit()
    if tk is None:
        return "no CUDA toolkit headers"
    if _build.cuda_build.find_cublas(tk) is None:
        return "no cuBLAS headers (pip install nvidia-cublas)"
    return None


def build(kind="current"):
    if kind not in _built:
        out = os.path.join(ROOT, "build", "cuda_emu", kind, "_cuda_backend_emu.so")
        kernels_from = os.path.join(HERE, "reverted") if kind == "reverted" else None
        _built[kind] = _build.build(out, kernels_from)
    return _built[kind]


def env(plugin, **extra):
    e = dict(os.environ)
    e["PYGPU_CUDA_BACKEND_SO"] = plugin
    e["PYGPU_NCCL_LIBRARY"] = plugin  # its NCCL stand-in (emu_nccl.cpp)
    # and its cuDNN stand-in (emu_cudnn.cpp): on a machine with a real GPU, PyTorch's
    # nvidia-cudnn wheel is found first otherwise, and real cuDNN refuses the emulated
    # device's streams (CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH on the 2026-11-28 H200 run)
    e["PYGPU_CUDNN_LIBRARY"] = plugin
    e["PYGPU_CUFFT_LIBRARY"] = plugin  # and its cuFFT stand-in (emu_cufft.cpp), for the same reason
    e["PYGPU_CUSOLVER_LIBRARY"] = plugin  # and its cuSOLVER stand-in (emu_cusolver.cpp)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run(plugin, code, timeout=300, **extra_env):
    """subprocess.CompletedProcess of `python -c code` on the emulated device."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env(plugin, **extra_env),
                          capture_output=True, text=True, timeout=timeout)
