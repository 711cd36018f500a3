"""cuda12_nvrtc.py - the CUDA plugin's device code (csrc/backends/cuda/kernels/*.cu) compiled by CUDA 12.

PyPI has no CUDA 12 nvcc (nvidia-cuda-nvcc-cu12 ships ptxas, libnvvm and libdevice but
no front end), so CI compiles the kernels with NVRTC 12 (nvidia-cuda-nvrtc-cu12: the
same EDG front end and NVVM as nvcc 12) and assembles them with the CUDA 12 ptxas, for
every architecture the real build targets (cuda_build.resolve_archs: SASS for sm_80 and
sm_90 by default). Each csrc/backends/cuda/kernels/*.cu, unmodified, goes

    NVRTC 12, -arch=compute_XX  ->  PTX  ->  ptxas 12 -arch=sm_XX --warning-as-error

and any error or warning fails, as nvcc's -Werror all-warnings would. So a CUDA
13-only type, intrinsic, header or runtime call in the kernel files fails CI.

NVRTC compiles device code only, while each .cu also holds its host launchers, whose
calls `kernel<T><<<...>>>` are what instantiate the templated kernels. Rather than a
second, hand-kept list of instantiations, the files are compiled with -default-device
and -rdc=true: the launchers become device functions and their <<<...>>> launches are
dynamic-parallelism launches, so every instantiation the real build makes is made here,
from the same dispatch code. What that costs, and how it is made up:
  - the launchers' own code is checked as device code, not host code;
  - host-only runtime calls (cudaMallocAsync...) are not declared on the device: a
    prelude redeclares each one the kernel files call, copied from CUDA 12's
    cuda_runtime_api.h, so one that CUDA 12 lacks is still an error (and a call the
    device runtime already has, cudaGetLastError, comes from NVRTC 12 itself);
  - NVRTC has no C/C++ standard headers: a shim directory maps the few the kernels
    include (<stdint.h>, <type_traits>...) onto CCCL's libcu++ (nvidia-cuda-cccl-cu12).
The host launchers are not compiled as host code for CUDA 12 (nor linked: they are
stubbed in cuda12_check.py's link); the csrc/backends/cuda/*.c host files are.

    python build_support/cuda12_nvrtc.py NVIDIA_DIR [KERNEL.cu ...]

(all of csrc/backends/cuda/kernels/*.cu unless files are named; PYGPU_CUDA_ARCHS=90 picks targets).

NVIDIA_DIR is the site-packages/nvidia directory holding cuda_nvrtc/, cuda_nvcc/,
cuda_runtime/, cuda_cccl/ and cublas/. cuda12_check.py calls check() as one step."""
import concurrent.futures
import ctypes
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# the CUDA kernels, next to their backend (as ggml-cuda's are)
KERNELS = os.path.join(REPO, "csrc", "backends", "cuda", "kernels")

sys.path.insert(0, HERE)
import cuda_build  # noqa: E402  (standard library only)

# The C/C++ headers csrc/backends/cuda/kernels/ includes, for NVRTC (which has none), from libcu++.
SHIM = {
    "stdint.h": "#include <cuda/std/cstdint>\n",
    "stddef.h": "#include <cuda/std/cstddef>\n",
    "stdbool.h": "",
    "limits.h": "#include <cuda/std/climits>\n",
    "math.h": "#include <cuda/std/cmath>\n",
    "string.h": "",  # memcpy, all pg_half.h uses, is built into NVRTC
    # std::is_same and friends: qualified lookup in std follows the using-directive
    "type_traits": "#include <cuda/std/type_traits>\nnamespace std { using namespace cuda::std; }\n",
}


class Nvrtc:
    """The few entry points of libnvrtc.so.12 used here, through ctypes (which
    releases the GIL around each call, so files compile in parallel threads)."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = (major.value, minor.value)
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def compile(self, name, source, options):
        """(ok, log, ptx) for one translation unit."""
        lib, prog = self.lib, ctypes.c_void_p()
        rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0,
                                    None, None)
        if rc != 0:
            return False, lib.nvrtcGetErrorString(rc).decode(), None
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            rc = lib.nvrtcCompileProgram(prog, len(options), opts)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            log = log.value.decode(errors="replace").strip()
            if rc != 0:
                return False, log or lib.nvrtcGetErrorString(rc).decode(), None
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            ptx = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, ptx)
            return True, log, ptx.value
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


def host_runtime_prelude(sources, runtime_header):
    """__device__ redeclarations of the host-only CUDA runtime functions the kernel
    files call, with their CUDA 12 signatures. One the header declares for the device
    too (__cudart_builtin__) is left to NVRTC; one it does not declare at all is left
    undeclared, so NVRTC reports it."""
    with open(runtime_header) as f:
        header = f.read()
    called = set()
    for src in sources:
        with open(src) as f:
            called |= set(re.findall(r"\b(cuda[A-Z]\w*)\s*\(", f.read()))
    decls = []
    for name in sorted(called):
        m = re.search(r"extern\s+__host__\s+(__cudart_builtin__\s+)?(\w+)\s+CUDARTAPI\s+"
                      + name + r"\s*\(([^;]*)\)\s*;", header)
        if m and not m.group(1):
            params = re.sub(r"\s*__dv\([^)]*\)", "", m.group(3))
            decls.append(f'extern "C" __device__ {m.group(2)} {name}({params});')
    # <math.h> too: nvcc's cuda_runtime.h gives every .cu its INFINITY and NAN
    return ("#include <cuda_runtime_api.h>\n#include <math.h>\n" + "\n".join(decls) + "\n",
            decls)


def check(nvidia, sources=None, archs=None, jobs=None, verbose=True):
    """Compile every csrc/backends/cuda/kernels/*.cu (or `sources`) for every arch; SystemExit with the log on failure.
    Returns a one-line summary."""
    t0 = time.monotonic()
    lib = os.path.join(nvidia, "cuda_nvrtc", "lib", "libnvrtc.so.12")
    ptxas = os.path.join(nvidia, "cuda_nvcc", "bin", "ptxas")
    for path, wheel in ((lib, "nvidia-cuda-nvrtc-cu12"), (ptxas, "nvidia-cuda-nvcc-cu12")):
        if not os.path.isfile(path):
            sys.exit(f"missing {path}: pip install {wheel}")
    nvrtc = Nvrtc(lib)
    if nvrtc.version[0] != 12:
        sys.exit(f"{lib} is NVRTC {nvrtc.version}, not CUDA 12")
    ptxas_version = subprocess.run([ptxas, "--version"], capture_output=True,
                                   text=True).stdout
    if "release 12." not in ptxas_version:
        sys.exit(f"{ptxas} is not CUDA 12:\n{ptxas_version}")
    # every arch of the targets, each to PTX by NVRTC and to SASS by ptxas (a PTX-only target
    # of the real build is checked through ptxas too: the driver's JIT will run it)
    archs = sorted({a for _, a in cuda_build.resolve_targets(archs)})
    sources = sources or sorted(glob.glob(os.path.join(KERNELS, "*.cu")))
    if not sources:
        sys.exit("no csrc/backends/cuda/kernels/*.cu")
    rt_inc = os.path.join(nvidia, "cuda_runtime", "include")
    prelude, host_decls = host_runtime_prelude(
        sources, os.path.join(rt_inc, "cuda_runtime_api.h"))
    with tempfile.TemporaryDirectory(prefix="pygpu-nvrtc12-") as tmp:
        shim = os.path.join(tmp, "shim")
        os.mkdir(shim)
        for name, text in SHIM.items():
            with open(os.path.join(shim, name), "w") as f:
                f.write(f"#pragma once\n{text}")
        with open(os.path.join(shim, "pg_nvrtc_prelude.h"), "w") as f:
            f.write("#pragma once\n" + prelude)
        base = ["--std=c++17", "--device-as-default-execution-space", "-rdc=true",
                "--pre-include=pg_nvrtc_prelude.h", "-I" + shim,
                "-I" + os.path.join(REPO, "csrc", "core"), "-I" + KERNELS,
                "-I" + rt_inc, "-I" + os.path.join(nvidia, "cuda_cccl", "include"),
                "-I" + os.path.join(nvidia, "cuda_nvcc", "include"),
                "-I" + os.path.join(nvidia, "cublas", "include")]

        def one(src, arch):
            name = os.path.basename(src)
            with open(src) as f:
                text = f.read()
            ok, log, ptx = nvrtc.compile(name, text, base + [f"-arch=compute_{arch}"])
            if not ok or "warning" in log:
                return f"NVRTC {nvrtc.version[0]}.{nvrtc.version[1]} compute_{arch}: {name}\n{log}"
            ptx_path = os.path.join(tmp, f"{name}.{arch}.ptx")
            with open(ptx_path, "wb") as f:
                f.write(ptx)
            cmd = [ptxas, f"-arch=sm_{arch}", "-c", "--warning-as-error", ptx_path,
                   "-o", ptx_path[:-4] + ".cubin"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0 or proc.stdout.strip() or proc.stderr.strip():
                return f"ptxas 12 sm_{arch}: {name}\n{proc.stdout}{proc.stderr}"
            return None

        work = [(s, a) for s in sources for a in archs]
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as ex:
            errors = [e for e in ex.map(lambda w: one(*w), work) if e]
    if errors:
        sys.exit("CUDA 12 device code failed to compile:\n\n" + "\n\n".join(errors))
    called = [re.search(r"(cuda[A-Z]\w*)\(", d).group(1) for d in host_decls]
    summary = (f"NVRTC {nvrtc.version[0]}.{nvrtc.version[1]} + ptxas 12: {len(sources)} kernel "
               f"files compiled for {', '.join('sm_' + a for a in archs)} (no warnings) in "
               f"{time.monotonic() - t0:.0f}s; host-only runtime calls checked against CUDA 12: "
               f"{', '.join(called) or 'none'}")
    if verbose:
        print(summary, flush=True)
    return summary


def main(argv):
    if not argv:
        print("usage: python build_support/cuda12_nvrtc.py NVIDIA_DIR [KERNEL.cu ...]",
              file=sys.stderr)
        return 2
    check(argv[0], [os.path.abspath(a) for a in argv[1:]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
