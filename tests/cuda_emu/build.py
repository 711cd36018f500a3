"""build.py - build the emulated CUDA plugin: the real plugin sources run on the CPU.

    python tests/cuda_emu/build.py [OUT.so] [--kernels-from DIR]

Compiles csrc/backends/cuda/*.c unchanged (gcc, the toolkit's and cuBLAS's
headers), csrc/backends/cuda/kernels/*.cu as C++ for the CPU (g++, after rewrite_launches.py
turns `<<<...>>>` launches into calls, over emu_kernel.h), and links them with
the stand-in CUDA runtime (emu_runtime.cpp), cuBLAS (emu_cublas.cpp), cuBLASLt's
integer GEMM (emu_cublaslt.cpp) and the fiber scheduler (emu_fiber.cpp) into one shared object that pygpu loads in
place of pygpu/_cuda_backend.so when PYGPU_CUDA_BACKEND_SO names it. No libcudart,
libcublas or libcublasLt is linked: every CUDA call lands in the stand-ins. The emulated
NCCL (emu_nccl.cpp) is inside the plugin too and exports NCCL's names:
PYGPU_NCCL_LIBRARY set to the plugin's path makes pygpu.distributed load it; so is the
emulated cuDNN (emu_cudnn.cpp), which PYGPU_CUDNN_LIBRARY makes pygpu.backends.cudnn load,
and the emulated cuFFT (emu_cufft.cpp) and cuSOLVER (emu_cusolver.cpp), which
PYGPU_CUFFT_LIBRARY and PYGPU_CUSOLVER_LIBRARY make the plugin load on the first FFT or
factorization.

--kernels-from DIR takes the kernel files named in DIR instead of csrc/backends/cuda/kernels/
(the harness test builds an old kernel this way to prove the run catches it).
Objects are cached under the output's directory by content hash, so a rebuild
after editing one file compiles that file only.

Test and CI use only; nothing here is part of what pip installs.
"""
import concurrent.futures
import hashlib
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# the CUDA kernels, next to their backend (as ggml-cuda's are)
KERNELS = os.path.join(ROOT, "csrc", "backends", "cuda", "kernels")

sys.path.insert(0, os.path.join(ROOT, "build_support"))
sys.path.insert(0, HERE)
import cuda_build  # noqa: E402
import rewrite_launches  # noqa: E402

DEFAULT_OUT = os.path.join(ROOT, "build", "cuda_emu", "current", "_cuda_backend_emu.so")
OBJ_DIR = os.path.join(ROOT, "build", "cuda_emu", "obj")
EMU_SOURCES = ["emu_runtime.cpp", "emu_cublas.cpp", "emu_cublaslt.cpp", "emu_fiber.cpp",
               "emu_nccl.cpp", "emu_cudnn.cpp", "emu_cufft.cpp", "emu_cusolver.cpp"]


def _headers():
    tk = cuda_build.find_toolkit()
    if tk is None:
        raise SystemExit("cuda_emu: no CUDA toolkit headers (nvcc in /usr/local/cuda or $CUDA_HOME)")
    cb = cuda_build.find_cublas(tk)
    if cb is None:
        raise SystemExit("cuda_emu: no cuBLAS headers (pip install nvidia-cublas)")
    return tk, cb


def _compile(cmd, src_text, obj):
    """Runs cmd (reading the source from stdin when src_text is given) unless obj exists."""
    if os.path.exists(obj):
        return obj
    tmp = obj + f".{os.getpid()}.tmp"
    r = subprocess.run(cmd + ["-o", tmp], input=src_text, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"cuda_emu: compile failed: {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
    os.replace(tmp, obj)
    return obj


def build(out=DEFAULT_OUT, kernels_from=None, verbose=False):
    tk, cb = _headers()
    out = os.path.abspath(out)
    objdir = OBJ_DIR  # shared by every build: the key names the source, flags and headers
    os.makedirs(os.path.dirname(out), exist_ok=True)
    os.makedirs(objdir, exist_ok=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)  # a fresh clone has no build/cuda_emu/current
    inc = ["-I" + os.path.join(ROOT, "csrc", "core"), "-I" + KERNELS,
           "-I" + tk["include"], "-I" + cb["include"]]
    # -fno-tree-vectorize: GCC 12 stops with an internal error vectorizing the packed
    # elementwise kernels' unrolled bfloat16 loops (issue 38); the host's SIMD says nothing
    # about the GPU's speed anyway
    cxx = ["g++", "-std=c++17", "-O2", "-g0", "-fPIC", "-fvisibility=hidden", "-ffp-contract=off",
           "-fno-tree-vectorize", "-Wall", "-Wno-unused-function", "-Wno-unused-variable"]
    cc = ["gcc", "-std=c11", "-O1", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror",
          "-D_POSIX_C_SOURCE=200809L"]
    jobs = []
    for src in cuda_build.plugin_sources(ROOT):
        name = os.path.basename(src)
        if src.endswith(".cu"):
            path = os.path.join(kernels_from, name) if kernels_from else src
            if kernels_from and not os.path.exists(path):
                path = src
            with open(path) as f:
                text = rewrite_launches.rewrite(f.read())
            cmd = cxx + ["-include", os.path.join(HERE, "emu_kernel.h")] + inc + [
                "-x", "c++", "-c", "-"]
        else:
            with open(src) as f:
                text = f.read()
            cmd = cc + inc + ["-x", "c", "-c", "-", "-iquote", os.path.dirname(src)]
        jobs.append((name, cmd, text))
    for name in EMU_SOURCES:
        with open(os.path.join(HERE, name)) as f:
            text = f.read()
        jobs.append((name, cxx + inc + ["-iquote", HERE, "-x", "c++", "-c", "-"], text))
    deps = "".join(open(os.path.join(HERE, h)).read() for h in ("emu_kernel.h", "emu_internal.h"))
    for hdr in sorted(os.listdir(KERNELS)) + sorted(
            os.listdir(os.path.join(ROOT, "csrc", "core"))) + sorted(
            os.listdir(os.path.join(ROOT, "csrc", "backends", "cuda"))):
        for d in (KERNELS, os.path.join(ROOT, "csrc", "core"), os.path.join(ROOT, "csrc", "backends", "cuda")):
            p = os.path.join(d, hdr)
            if hdr.endswith((".h", ".cuh", ".def")) and os.path.exists(p):
                deps += open(p).read()
    dep_hash = hashlib.sha1(deps.encode()).hexdigest()
    objs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futs = []
        for name, cmd, text in jobs:
            key = hashlib.sha1((shlex.join(cmd) + dep_hash + text).encode()).hexdigest()[:16]
            obj = os.path.join(objdir, f"{name}.{key}.o")
            futs.append(pool.submit(_compile, cmd, text, obj))
        for f in futs:
            objs.append(f.result())
    tmp = out + f".{os.getpid()}.tmp"
    # -Bsymbolic: the plugin's own calls bind to the stand-ins even where one is exported
    # (NCCL's, cuBLASLt's for the tests) and pygpu.cuda has preloaded the real library
    link = ["g++", "-shared", "-o", tmp] + objs + ["-ldl", "-lpthread", "-lrt", "-lm",
                                                  "-Wl,--no-undefined", "-Wl,-Bsymbolic"]
    r = subprocess.run(link, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"cuda_emu: link failed:\n{r.stdout}{r.stderr}")
    os.replace(tmp, out)
    if verbose:
        print(out)
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    kernels_from = None
    if "--kernels-from" in args:
        i = args.index("--kernels-from")
        kernels_from = args[i + 1]
        del args[i:i + 2]
    build(args[0] if args else DEFAULT_OUT, kernels_from, verbose=True)
