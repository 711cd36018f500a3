"""Build pygpu: the C core (pygpu._C) and, where a CUDA toolkit is found, the
CUDA backend plugin (pygpu/_cuda_backend.so, built by build_support/cuda_build.py).

Environment knobs (all optional):
  PYGPU_CUDA=0|1|auto   skip / require / build-if-found the CUDA backend (default auto)
  PYGPU_CUDA_ARCHS      e.g. "80;90" (default sm_80, sm_90 + compute_90 PTX)
  PYGPU_WERROR=1        compile the C core with -Werror (CI does)
  PYGPU_SANITIZE=address,undefined   build with sanitizers (CI's second pass)
  PYGPU_BF16_SIMDE=1    test build: the AVX512_BF16 GEMM (csrc/backends/cpu/cpu_gemm_bf16.c)
                        with SIMDe's portable intrinsics (Debian: libsimde-dev), so that it
                        runs, slowly, on a CPU without AVX-512 (CI's emulation lane); never
                        for a build that ships
  PYGPU_INT8_SIMDE=1    test build, the same for the AVX512_VNNI int8 GEMM
                        (csrc/backends/cpu/cpu_gemm_int8_vnni.c): vpdpbusd through SIMDe
                        (each knob's flags reach its one file: SIMDE_BUILDS)
  PYGPU_COVERAGE=1      test build: the C core instrumented for gcov's line coverage
                        (build_support/coverage_diff.py compares two test suites with it)
  PYGPU_CORE_CACHE=0    compile every C file (default: objects are kept in an object cache,
                        PYGPU_CORE_CACHE_DIR or ~/.cache/pygpu/core-objects, keyed by the
                        command, the compiler, the headers and the source: build_support/core_objects.py)
"""
import concurrent.futures
import glob
import os
import sys

import numpy
import scipy_openblas32
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "build_support"))
import core_objects  # noqa: E402
import cuda_build  # noqa: E402


def core_sources():
    pats = ["csrc/core/*.c", "csrc/backends/cpu/*.c", "csrc/backends/sim/*.c", "csrc/backends/meta/*.c",
            "csrc/bindings/*.c"]
    return sorted(f for p in pats for f in glob.glob(p))


# The SIMDe test builds (setup.py's docstring): each knob's macro goes to the one file that reads
# it, so the other files compile with the default command and the object cache holds them from
# the default build (CI's SIMDe lane then compiles two files, not 118). BuildExt refuses a build
# where another file of csrc/ names the macro. -Wno-psabi: SIMDe passes 64-byte vectors by
# value, which GCC notes on every build.
SIMDE_BUILDS = {  # knob: (the file, its flags)
    "PYGPU_BF16_SIMDE": ("csrc/backends/cpu/cpu_gemm_bf16.c", ["-DPG_BF16_SIMDE=1", "-Wno-psabi"]),
    "PYGPU_INT8_SIMDE": ("csrc/backends/cpu/cpu_gemm_int8_vnni.c", ["-DPG_INT8_SIMDE=1", "-Wno-psabi"]),
}


def per_file_cflags(env=None):
    """{source: extra flags} of the SIMDe knobs set in env; SystemExit when a file of csrc/
    other than a knob's own names its macro (it would compile without it)."""
    env = os.environ if env is None else env
    flags = {}
    for knob, (src, extra) in SIMDE_BUILDS.items():
        if env.get(knob) != "1":
            continue
        macro = extra[0][2:].split("=")[0]
        for path in sorted(glob.glob(os.path.join(HERE, "csrc", "**", "*.[ch]"), recursive=True) +
                           glob.glob(os.path.join(HERE, "csrc", "**", "*.def"), recursive=True)):
            rel = os.path.relpath(path, HERE)
            if rel != src:
                with open(path, errors="replace") as f:
                    if macro in f.read():
                        raise SystemExit(f"setup.py: {rel} names {macro}, which {knob}=1 gives "
                                         f"{src} only (SIMDE_BUILDS)")
        flags[src] = extra
    return flags


def core_extension():
    # -fopenmp-simd: `#pragma omp simd` vectorizes the CPU kernels (no OpenMP runtime);
    # -fno-math-errno: sqrt is one instruction and libmvec's vector exp/log/tanh may be
    # called (csrc/backends/cpu/cpu_vecmath.h). No -march: the hot kernels carry
    # target_clones (AVX-512 / AVX2 / baseline) and pick one at load time.
    cflags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-D_GNU_SOURCE", "-fvisibility=hidden",
              "-Wno-missing-field-initializers", "-Wno-cast-function-type",
              "-fopenmp-simd", "-fno-math-errno"]
    ldflags = []
    if os.environ.get("PYGPU_WERROR") == "1":
        cflags.append("-Werror")
    sanitize = os.environ.get("PYGPU_SANITIZE")
    if sanitize:
        cflags += [f"-fsanitize={sanitize}", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all",
                   "-O1", "-g"]
        ldflags += [f"-fsanitize={sanitize}"]
    if os.environ.get("PYGPU_COVERAGE") == "1":
        # atomic counters: the thread pools run one kernel on several threads at once
        cflags += ["--coverage", "-fprofile-update=atomic"]
        ldflags += ["--coverage"]
    blas_lib = scipy_openblas32.get_lib_dir()
    # The rpath serves regular installs (scipy_openblas32/ sits next to pygpu/ in site-packages).
    # Builds into the source tree (pip install -e ., build_ext --inplace) find the library through
    # pygpu/_extension.py, which loads it from the installed scipy_openblas32 before _C: an
    # absolute path here would name pip's temporary build environment, gone after the build.
    return Extension(
        "pygpu._C",
        sources=core_sources(),
        # every header and the op table: setuptools rebuilds the sources when one is newer
        # (a new pg_ops.def row reaches every file that includes the table)
        depends=sorted(glob.glob("csrc/**/*.h", recursive=True) +
                       glob.glob("csrc/**/*.def", recursive=True)),
        include_dirs=[numpy.get_include(), scipy_openblas32.get_include_dir()],
        library_dirs=[blas_lib],
        libraries=[scipy_openblas32.get_library(), "mvec", "m", "pthread", "dl"],
        runtime_library_dirs=["$ORIGIN/../scipy_openblas32/lib"],
        extra_compile_args=cflags,
        extra_link_args=ldflags,
    )


class BuildExt(build_ext):
    """Builds the core, its C files on every core at once (setuptools compiles one extension's
    sources one by one; its --parallel runs whole extensions side by side, and pygpu has one),
    each object through the C core's object cache (build_support/core_objects.py: a second
    build with the same flags and sources compiles nothing), then the CUDA plugin when a
    toolkit is there, saying how far each has got
    (cuda_build.BuildProgress: on the terminal, which pip otherwise keeps silent).
    Writes pygpu/_cuda_build_reason.txt: why the plugin was built or not, for
    pygpu.cuda.unavailable_reason() to quote."""

    def build_extension(self, ext):
        compile_one_by_one = self.compiler.compile
        compile_object = self.compiler._compile  # one object: setuptools' compiler's own step
        progress = cuda_build.BuildProgress("C core", len(ext.sources), lines=10)
        cache = core_objects.cache_dir()
        file_cflags = per_file_cflags()
        depends = core_objects.files_digest(ext.depends) if cache else None
        from_cache = set()

        def compile_object_cached(obj, src, src_ext, cc_args, extra_postargs, pp_opts):
            extra_postargs = extra_postargs + file_cflags.get(os.path.relpath(src, HERE), [])
            cmd = self.compiler.compiler_so + cc_args + [src] + extra_postargs
            if cache is None or not core_objects.cacheable(cmd):
                return compile_object(obj, src, src_ext, cc_args, extra_postargs, pp_opts)
            key = core_objects.object_key(cmd, src, HERE, depends)
            if core_objects.fetch(cache, key, obj):
                from_cache.add(src)
                return None
            compile_object(obj, src, src_ext, cc_args, extra_postargs, pp_opts)
            core_objects.store(cache, key, obj)
            return None

        def compile_in_parallel(sources, output_dir=None, macros=None, include_dirs=None,
                                debug=0, extra_preargs=None, extra_postargs=None, depends=None):
            def one(src):
                objs = compile_one_by_one([src], output_dir, macros, include_dirs, debug,
                                          extra_preargs, extra_postargs, depends)
                progress.step(os.path.relpath(src, HERE) if os.path.isabs(src) else src,
                              src not in from_cache)
                return objs
            progress.say(f"compiling the C core: {len(sources)} files, "
                         f"{os.cpu_count() or 1} at a time; compiled objects are kept in "
                         f"{cache or 'no cache (PYGPU_CORE_CACHE=0)'}")
            with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
                objects = [o for objs in pool.map(one, sources) for o in objs]
            progress.say(f"C core: {len(sources) - len(from_cache)} files compiled, "
                         f"{len(from_cache)} from the cache")
            return objects

        self.compiler.compile = compile_in_parallel
        self.compiler._compile = compile_object_cached
        try:
            super().build_extension(ext)
        finally:
            self.compiler.compile = compile_one_by_one
            self.compiler._compile = compile_object
            progress.close()

    def run(self):
        super().run()
        build, reason = cuda_build.decide(os.environ)
        print(f"pygpu: CUDA backend: {reason}")
        # in place for build_ext --inplace and for editable installs (pip install -e .), whose
        # extension modules setuptools puts into the source tree
        in_tree = self.inplace or getattr(self, "editable_mode", False)
        out_dir = os.path.join(HERE if in_tree else self.build_lib, "pygpu")
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "_cuda_build_reason.txt"), "w") as f:
            f.write(reason + "\n")
        plugin = os.path.join(out_dir, "_cuda_backend.so")
        if not build:
            if os.path.exists(plugin):  # a stale plugin from an earlier build would be loaded
                os.remove(plugin)
            return
        toolkit = cuda_build.find_toolkit(os.environ)
        cublas = cuda_build.find_cublas(toolkit, os.environ)
        cuda_build.build_plugin(plugin, HERE, toolkit, cublas, verbose=bool(self.verbose))


# pyproject.toml declares `dependencies` dynamic: nvidia-cublas joins them when
# the plugin is linked against that wheel (cuda_build.runtime_requires).
# threadpoolctl: the main job's --blas-threads (pure Python, 20 KB)
BASE_REQUIRES = ["numpy>=2.0", "scipy-openblas32>=0.3.27", "safetensors>=0.4", "tqdm>=4",
                 "threadpoolctl>=3"]

setup(ext_modules=[core_extension()], cmdclass={"build_ext": BuildExt},
      install_requires=BASE_REQUIRES + cuda_build.runtime_requires(os.environ))
