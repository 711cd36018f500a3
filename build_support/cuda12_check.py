"""cuda12_check.py - the CUDA plugin against CUDA 12: host code compiled and linked,
device code compiled.

The default build uses CUDA 13 (static runtime, cuBLAS 13 wheel), which needs an
R580+ driver; many H100 nodes run R535/R550, for which pygpu is built with CUDA 12
(see "Which CUDA" in csrc/backends/cuda/cuda_plugin.c). CI keeps that build working:

  - with a CUDA 12 toolkit (PYGPU_CUDA12_HOME, holding bin/nvcc): the whole plugin is
    built with it (build_support/cuda_build.py) and must link libcublas.so.12;
  - without one (PyPI has no CUDA 12 nvcc: nvidia-cuda-nvcc-cu12 ships ptxas, libnvvm
    and libdevice but no front end), in two steps:
      1. host: every host file of the plugin (csrc/backends/cuda/*.c) is compiled
         with -Werror against the CUDA 12 runtime and cuBLAS 12 headers of the
         nvidia-cuda-runtime-cu12, nvidia-cuda-nvcc-cu12 (crt/), nvidia-cuda-cccl-cu12
         (nv/target) and nvidia-cublas-cu12 wheels, and linked as the real build
         links (static cudart 12, libcublas.so.12, -Wl,--no-undefined), with the
         kernel launchers (pg_kernel_*, defined in csrc/backends/cuda/kernels/*.cu) replaced by stubs;
      2. device: every csrc/backends/cuda/kernels/*.cu is compiled by NVRTC 12 (nvidia-cuda-nvrtc-cu12)
         to PTX and assembled by the CUDA 12 ptxas for each target arch, warnings
         being errors (build_support/cuda12_nvrtc.py says how, and what that leaves
         out: the launchers are compiled as device code, not host code).

Either way the linked result is loaded by check_cuda_plugin.py (it must say why it
cannot run: no driver here).

    python build_support/cuda12_check.py NVIDIA_DIR OUT.so

NVIDIA_DIR is the site-packages/nvidia directory holding cuda_runtime/, cuda_nvrtc/,
cuda_nvcc/, cuda_cccl/ and cublas/."""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# the CUDA kernels, next to their backend (as ggml-cuda's are)
KERNELS = os.path.join(REPO, "csrc", "backends", "cuda", "kernels")

sys.path.insert(0, HERE)
import cuda_build  # noqa: E402  (standard library only)
import cuda12_nvrtc  # noqa: E402


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")


def kernel_stubs():
    """C source defining every pg_kernel_* launcher that pg_cuda_kernels.h declares, read
    after the preprocessor: some launchers are declared once per row of a table
    (pg_kernel_index_<family>, one per PG_SUBOP_INDEX row's family). The CUDA and cuBLAS
    headers it includes are empty stand-ins here: no launcher's name depends on them."""
    with tempfile.TemporaryDirectory(prefix="pygpu-stub-headers-") as empty:
        for header in ("cublas_v2.h", "cuda_runtime_api.h"):
            open(os.path.join(empty, header), "w").close()
        proc = subprocess.run(["gcc", "-E", "-P", "-I" + empty,
                               "-I" + os.path.join(REPO, "csrc", "core"), "-I" + KERNELS,
                               "-x", "c", os.path.join(KERNELS, "pg_cuda_kernels.h")],
                              capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"preprocessing pg_cuda_kernels.h failed:\n{proc.stderr}")
    names = sorted(set(re.findall(r"cudaError_t\s+(pg_kernel_\w+)\s*\(", proc.stdout)))
    if not names:
        sys.exit("no pg_kernel_* launchers found in csrc/backends/cuda/kernels/pg_cuda_kernels.h")
    return "".join(f"int {n}(void);\nint {n}(void) {{ return 0; }}\n" for n in names), names


def full_build(home, out):
    env = dict(os.environ, CUDA_HOME=home)
    toolkit = cuda_build.find_toolkit(env)
    if toolkit is None or not (toolkit["version"] or "").startswith("12."):
        sys.exit(f"PYGPU_CUDA12_HOME={home}: no CUDA 12 nvcc there ({toolkit})")
    cublas = cuda_build.find_cublas(toolkit, env)
    if cublas is None:
        sys.exit("no cuBLAS 12 for the CUDA 12 toolkit: pip install nvidia-cublas-cu12")
    cuda_build.build_plugin(out, REPO, toolkit, cublas, archs=["90"], verbose=True)


def host_only_build(nvidia, out):
    rt_inc, rt_lib = (os.path.join(nvidia, "cuda_runtime", d) for d in ("include", "lib"))
    blas_inc, blas_lib = (os.path.join(nvidia, "cublas", d) for d in ("include", "lib"))
    libcublas = cuda_build._cublas_lib(blas_lib)
    for path in (os.path.join(rt_inc, "cuda_runtime_api.h"),
                 os.path.join(rt_lib, "libcudart_static.a"), os.path.join(blas_inc, "cublas_v2.h")):
        if not os.path.isfile(path):
            sys.exit(f"missing {path}: pip install nvidia-cuda-runtime-cu12 nvidia-cublas-cu12")
    if libcublas is None or ".so.12" not in libcublas:
        sys.exit(f"no libcublas.so.12 in {blas_lib}")
    with open(os.path.join(rt_inc, "cuda_runtime_api.h")) as f:
        version = int(re.search(r"#define\s+CUDART_VERSION\s+(\d+)", f.read()).group(1))
    if version // 1000 != 12:
        sys.exit(f"{rt_inc} is CUDA {version}, not 12")
    # crt/host_defines.h, which the runtime headers include, ships with nvcc's wheel
    crt_inc = os.path.join(nvidia, "cuda_nvcc", "include")
    if not os.path.isfile(os.path.join(crt_inc, "crt", "host_defines.h")):
        sys.exit(f"missing {crt_inc}/crt/host_defines.h: pip install nvidia-cuda-nvcc-cu12")
    # and <nv/target>, which cuda_fp16.h includes, with CCCL's
    cccl_inc = os.path.join(nvidia, "cuda_cccl", "include")
    if not os.path.isfile(os.path.join(cccl_inc, "nv", "target")):
        sys.exit(f"missing {cccl_inc}/nv/target: pip install nvidia-cuda-cccl-cu12")
    includes = ["-I" + os.path.join(REPO, "csrc", "core"), "-I" + KERNELS,
                "-I" + rt_inc, "-I" + crt_inc, "-I" + cccl_inc, "-I" + blas_inc]
    cflags = ["-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror",
              "-D_POSIX_C_SOURCE=200809L"]
    sources = [s for s in cuda_build.plugin_sources(REPO) if s.endswith(".c")]
    with tempfile.TemporaryDirectory(prefix="pygpu-cuda12-") as tmp:
        stub_src, names = kernel_stubs()
        stub = os.path.join(tmp, "kernel_stubs.c")
        with open(stub, "w") as f:
            f.write(stub_src)
        objs = []
        for i, src in enumerate(sources + [stub]):
            obj = os.path.join(tmp, f"{i:02d}.o")
            _run(["gcc"] + cflags + includes + ["-c", src, "-o", obj])
            objs.append(obj)
        _run(["gcc", "-shared", "-o", out] + objs +
             ["-L" + rt_lib, "-lcudart_static", libcublas] +
             ([cuda_build._cublaslt_lib(blas_lib)] if cuda_build._cublaslt_lib(blas_lib) else []) +
             ["-ldl", "-lpthread", "-lrt", "-lm",
              "-Wl,--no-undefined", "-Wl,--exclude-libs,ALL", "-Wl,-rpath," + blas_lib])
    print(f"CUDA {version // 1000}.{version % 1000 // 10}: {len(sources)} host files compiled "
          f"(-Werror) and linked against static cudart 12 and {os.path.basename(libcublas)}; "
          f"{len(names)} kernel launchers stubbed (no CUDA 12 nvcc on PyPI)")
    cuda12_nvrtc.check(nvidia)


def main(argv):
    if len(argv) != 2:
        print("usage: python build_support/cuda12_check.py NVIDIA_DIR OUT.so", file=sys.stderr)
        return 2
    nvidia, out = argv
    home = os.environ.get("PYGPU_CUDA12_HOME")
    if home:
        full_build(home, out)
    else:
        host_only_build(nvidia, out)
    dynamic = subprocess.run(["readelf", "-d", out], capture_output=True, text=True).stdout
    if "libcublas.so.12" not in dynamic:
        sys.exit(f"{out} does not link libcublas.so.12:\n{dynamic}")
    if "libcudart" in dynamic:
        sys.exit(f"{out} links cudart dynamically (it must be static):\n{dynamic}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
