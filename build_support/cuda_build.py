"""cuda_build.py - find the CUDA toolkit and cuBLAS, and build the CUDA plugin.

Also answers which nvidia-cublas wheel the build (extra_build_requires, for
pygpu_build_backend) and the installed package (runtime_requires, for
setup.py) need when the toolkit has no cuBLAS of its own.

setup.py uses this module (standard library only) to decide whether to build
pygpu/_cuda_backend.so and to build it:

    build, reason = decide(os.environ)        # PYGPU_CUDA=0|1|auto
    tk = find_toolkit(); cb = find_cublas(tk)
    build_plugin(out, repo_root, tk, cb, archs=None, verbose=False)

The plugin is every csrc/backends/cuda/kernels/*.cu (nvcc) plus csrc/backends/cuda/* (gcc for
.c, nvcc for .cu), linked into one shared object with the CUDA runtime
STATIC (no libcudart.so needed at run time) and cuBLAS (libcublas and
libcublasLt, the int8 GEMM's) shared, found through
an rpath to the absolute cuBLAS directory and to $ORIGIN/../nvidia/<x>/lib,
where pip puts the nvidia-cublas wheel next to the installed pygpu package.
Warnings are errors, -Wl,--no-undefined proves the plugin needs no symbol
of the core, and only pg_plugin_* are exported. Objects go to a temporary
directory, never into the source tree; each is also kept in an object cache
outside the tree (PYGPU_CUDA_CACHE_DIR, else $XDG_CACHE_HOME/pygpu/cuda-objects or
~/.cache/pygpu/cuda-objects; PYGPU_CUDA_CACHE=0 turns it off), keyed by the
compiler's version, the command and the content of the source and of every header
under csrc/, so a rebuild of unchanged sources (`pip install -e .` then
`pip install -e ".[test]"`) compiles nothing.

Run as a script to build by hand:  python build_support/cuda_build.py OUT.so
"""

import concurrent.futures
import glob
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

DEFAULT_ARCHS = ["80", "90"]  # sm_80, sm_90 SASS; PTX of the highest (compute_90) for newer GPUs
NO_GPU_ARCHS = ["compute_80"]  # default_archs() where no GPU is visible: PTX, JIT-compiled once
CUBLAS_WHEEL_DIRS = ("cu13", "cublas")  # nvidia-cublas (CUDA 13) and nvidia-cublas-cu12 layouts


class CudaBuildError(RuntimeError):
    """The CUDA plugin could not be built; the message holds the tool's output."""


def _nvcc_root(nvcc):
    """Toolkit root of an nvcc binary; asks nvcc itself when it is a wrapper script."""
    roots = [os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))]
    try:
        out = subprocess.run([nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
                             capture_output=True, text=True, timeout=60)
        m = re.search(r"^#\$ _HERE_=(.+)$", out.stdout + out.stderr, re.M)
        if m:
            roots.insert(0, os.path.dirname(m.group(1).strip()))
    except (OSError, subprocess.SubprocessError):
        pass
    for root in roots:
        if os.path.isfile(os.path.join(root, "include", "cuda_runtime_api.h")):
            return root
    return None


def _toolkit_libdir(root):
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib"),
                os.path.join("targets", "sbsa-linux", "lib")):
        d = os.path.join(root, sub)
        if os.path.isfile(os.path.join(d, "libcudart_static.a")):
            return d
    return None


def find_toolkit(env=None):
    """The CUDA toolkit to build with, or None.

    Looks for nvcc in $CUDA_HOME/bin, $CUDA_PATH/bin, on PATH, then in
    /usr/local/cuda/bin. Returns {"root", "nvcc", "include", "lib64",
    "version"}; lib64 is the directory holding libcudart_static.a."""
    env = os.environ if env is None else env
    candidates = [os.path.join(env[v], "bin", "nvcc") for v in ("CUDA_HOME", "CUDA_PATH")
                  if env.get(v)]
    on_path = shutil.which("nvcc", path=env.get("PATH", os.defpath))
    if on_path:
        candidates.append(on_path)
    candidates.append("/usr/local/cuda/bin/nvcc")
    for nvcc in candidates:
        if not (os.path.isfile(nvcc) and os.access(nvcc, os.X_OK)):
            continue
        root = _nvcc_root(nvcc)
        libdir = root and _toolkit_libdir(root)
        if not libdir:
            continue
        version = None
        try:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
            m = re.search(r"release (\d+\.\d+)", out.stdout)
            version = m.group(1) if m else None
        except (OSError, subprocess.SubprocessError):
            pass
        return {"root": root, "nvcc": nvcc, "include": os.path.join(root, "include"),
                "lib64": libdir, "version": version}
    return None


def _site_dirs(env):
    """site-packages directories to search for the nvidia-cublas wheel: those on
    sys.path, and those of the environment pip installs into (under build
    isolation sys.path holds only the isolated build environment)."""
    dirs = list(sys.path)
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # some virtualenv versions
        pass
    for prefix in (sys.prefix, sys.base_prefix, env.get("VIRTUAL_ENV")):
        if prefix:
            paths = sysconfig.get_paths(vars={"base": prefix, "platbase": prefix})
            dirs += [paths["purelib"], paths["platlib"]]
    seen, out = set(), []
    for d in dirs:
        d = os.path.abspath(d) if d else None
        if d and d not in seen and os.path.isdir(d):
            seen.add(d)
            out.append(d)
    return out


def _cublas_lib(libdir):
    """Path of libcublas.so (or the highest libcublas.so.N) in libdir, or None."""
    plain = os.path.join(libdir, "libcublas.so")
    if os.path.isfile(plain):
        return plain
    versioned = sorted(glob.glob(os.path.join(libdir, "libcublas.so.[0-9]*")),
                       key=lambda p: [int(x) for x in re.findall(r"\d+", os.path.basename(p))])
    return versioned[-1] if versioned else None


def _cublaslt_lib(libdir):
    """Path of libcublasLt.so (or the highest libcublasLt.so.N) in libdir, or None: the
    int8 GEMM (cuBLASLt's IMMA) of csrc/backends/cuda/cuda_quant.c; it ships beside
    libcublas in the toolkit and in the nvidia-cublas wheels."""
    plain = os.path.join(libdir, "libcublasLt.so")
    if os.path.isfile(plain):
        return plain
    versioned = sorted(glob.glob(os.path.join(libdir, "libcublasLt.so.[0-9]*")),
                       key=lambda p: [int(x) for x in re.findall(r"\d+", os.path.basename(p))])
    return versioned[-1] if versioned else None


def find_cublas(toolkit, env=None):
    """cuBLAS headers and library, or None.

    In the toolkit first, else in nvidia/cu13 (or nvidia/cublas) of any
    site-packages. Returns {"include", "lib", "library", "wheel_subdir"};
    wheel_subdir is "cu13"/"cublas" for a wheel (used for the relative rpath),
    None for a toolkit copy."""
    env = os.environ if env is None else env
    if toolkit:
        inc, lib = toolkit["include"], toolkit["lib64"]
        library = _cublas_lib(lib)
        if os.path.isfile(os.path.join(inc, "cublas_v2.h")) and library:
            return {"include": inc, "lib": lib, "library": library, "wheel_subdir": None}
    for sp in _site_dirs(env):
        for sub in CUBLAS_WHEEL_DIRS:
            base = os.path.join(sp, "nvidia", sub)
            inc, lib = os.path.join(base, "include"), os.path.join(base, "lib")
            library = _cublas_lib(lib) if os.path.isdir(lib) else None
            if os.path.isfile(os.path.join(inc, "cublas_v2.h")) and library:
                return {"include": inc, "lib": lib, "library": library, "wheel_subdir": sub}
    return None


def cublas_wheel_requirement(toolkit):
    """The pip requirement for the nvidia-cublas wheel that matches a toolkit's
    major version (CUDA 13: nvidia-cublas 13.x, installed under nvidia/cu13;
    CUDA 12: nvidia-cublas-cu12, under nvidia/cublas)."""
    major = (toolkit.get("version") or "").split(".")[0]
    if major == "12":
        return "nvidia-cublas-cu12"
    if major.isdigit():
        return f"nvidia-cublas>={major},<{int(major) + 1}"
    return "nvidia-cublas"


def toolkit_has_cublas(toolkit):
    """Whether the toolkit itself ships cuBLAS (header and library)."""
    return (os.path.isfile(os.path.join(toolkit["include"], "cublas_v2.h"))
            and _cublas_lib(toolkit["lib64"]) is not None)


def extra_build_requires(env=None):
    """Build requirements beyond pyproject.toml's: the nvidia-cublas wheel when
    the CUDA plugin will be built (PYGPU_CUDA not 0, nvcc found) and the
    toolkit lacks cuBLAS. Used by pygpu_build_backend."""
    env = os.environ if env is None else env
    mode = (env.get("PYGPU_CUDA") or "auto").strip().lower()
    if mode in ("0", "off", "no", "false"):
        return []
    toolkit = find_toolkit(env)
    if toolkit is None or toolkit_has_cublas(toolkit):
        return []
    return [cublas_wheel_requirement(toolkit)]


def runtime_requires(env=None):
    """Run-time requirements the CUDA plugin adds: the nvidia-cublas wheel when
    the plugin is built against it (the toolkit has no cuBLAS), since the
    plugin loads libcublas from there. Used by setup.py (dynamic
    dependencies), so pip installs the wheel next to pygpu."""
    env = os.environ if env is None else env
    try:
        build, _ = decide(env)
    except CudaBuildError:
        return []
    if not build:
        return []
    toolkit = find_toolkit(env)
    cublas = find_cublas(toolkit, env)
    if cublas is None or cublas.get("wheel_subdir") is None:
        return []
    return [cublas_wheel_requirement(toolkit)]


def decide(env=None):
    """Whether to build the CUDA plugin, from PYGPU_CUDA (0, 1 or auto; default auto).

    Returns (build, reason). 0: never. auto: when a toolkit and cuBLAS are
    found. 1: they are required, and CudaBuildError says what is missing."""
    env = os.environ if env is None else env
    mode = (env.get("PYGPU_CUDA") or "auto").strip().lower()
    if mode in ("0", "off", "no", "false"):
        return False, "PYGPU_CUDA=0: the CUDA backend is not built"
    if mode not in ("1", "on", "yes", "true", "auto"):
        raise CudaBuildError(f"PYGPU_CUDA={env.get('PYGPU_CUDA')!r}: expected 0, 1 or auto")
    required = mode != "auto"
    toolkit = find_toolkit(env)
    if toolkit is None:
        msg = ("nvcc not found (looked in $CUDA_HOME/bin, $CUDA_PATH/bin, on PATH and in "
               "/usr/local/cuda/bin): no CUDA toolkit")
        if required:
            raise CudaBuildError(f"PYGPU_CUDA=1 but {msg}")
        return False, f"{msg}: building without the CUDA backend"
    cublas = find_cublas(toolkit, env)
    if cublas is None:
        wheel = "nvidia-cublas-cu12" if (toolkit.get("version") or "").startswith("12.") \
            else "nvidia-cublas"
        msg = ("nvcc found (CUDA toolkit at {}) but cuBLAS not found (cublas_v2.h + libcublas.so, "
               "in the toolkit or the {} wheel): pip install {}".format(toolkit["root"], wheel,
                                                                       wheel))
        if required:
            raise CudaBuildError(f"PYGPU_CUDA=1 but {msg}")
        return False, f"{msg}: building without the CUDA backend"
    return True, "CUDA {} at {}, cuBLAS in {}".format(toolkit["version"] or "?", toolkit["root"],
                                                     cublas["lib"])


def resolve_archs(archs=None, env=None):
    """Compute capabilities as digit strings ("80", "90a"). PYGPU_CUDA_ARCHS
    ("80;90", commas or spaces also accepted) overrides `archs`. A PTX-only
    entry ("compute_80") is returned as "compute_80"; see resolve_targets."""
    env = os.environ if env is None else env
    if env.get("PYGPU_CUDA_ARCHS"):
        archs = re.split(r"[;,\s]+", env["PYGPU_CUDA_ARCHS"].strip())
    out = []
    for a in (archs or DEFAULT_ARCHS):
        a = a.strip()
        if not a:
            continue
        ptx = a.startswith("compute_")
        a = re.sub(r"^(sm_|compute_)", "", a)
        if not re.fullmatch(r"\d+[a-z]?", a):
            raise CudaBuildError(f"bad CUDA architecture {a!r} (expected e.g. 80, sm_90 or "
                                 "compute_80)")
        out.append("compute_" + a if ptx else a)
    return out


def visible_gpu_archs(env=None):
    """Compute capabilities of the GPUs the driver shows on this machine, as digit strings
    (["90"] on an H100 or H200), from nvidia-smi; [] where there is none or no driver."""
    env = os.environ if env is None else env
    smi = shutil.which("nvidia-smi", path=env.get("PATH", os.defpath))
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    caps = {m.group(1) + m.group(2) for m in re.finditer(r"^\s*(\d+)\.(\d+)\s*$", out.stdout, re.M)}
    return sorted(caps, key=int)


def default_archs(env=None):
    """The targets when PYGPU_CUDA_ARCHS does not say: the GPUs of this machine (SASS for
    each, and PTX of the highest), as torch.utils.cpp_extension does; without a visible
    GPU, PTX for compute_80 only (NO_GPU_ARCHS), which every GPU from the A100 on compiles
    at first load, once: the driver keeps the result in its JIT cache. A build for other
    machines (a wheel, a cluster's login node) sets PYGPU_CUDA_ARCHS="80;90" (DEFAULT_ARCHS:
    SASS for sm_80 and sm_90, PTX of compute_90)."""
    env = os.environ if env is None else env
    if env.get("PYGPU_CUDA_ARCHS"):
        return resolve_archs(None, env)
    return visible_gpu_archs(env) or list(NO_GPU_ARCHS)


def resolve_targets(archs=None, env=None):
    """What nvcc builds: [("sass", "80"), ("ptx", "90"), ...]. "80"/"sm_80" is SASS for
    sm_80; "compute_80" is PTX only (the driver compiles it at first load and keeps the
    result in its JIT cache). A list of SASS only gets the PTX of its highest arch too,
    so that newer GPUs can JIT it."""
    targets = []
    for a in resolve_archs(archs, env):
        targets.append(("ptx", a[len("compute_"):]) if a.startswith("compute_") else ("sass", a))
    if not any(kind == "ptx" for kind, _ in targets):
        top = max((a for _, a in targets), key=lambda a: int(re.match(r"\d+", a).group()))
        targets.append(("ptx", top))
    return targets


def describe_targets(targets):
    return ", ".join(("sm_" if kind == "sass" else "compute_") + a
                     + (" SASS" if kind == "sass" else " PTX") for kind, a in targets)


def gencode_flags(archs):
    """SASS for every arch, plus PTX of the highest so newer GPUs can JIT it
    (PTX only for a "compute_NN" entry)."""
    flags = []
    for kind, a in resolve_targets(archs, env={}):
        code = f"sm_{a}" if kind == "sass" else f"compute_{a}"
        flags += ["-gencode", f"arch=compute_{a},code={code}"]
    return flags


def nvcc_flags(targets):
    """nvcc's flags for the kernel and host .cu files, for resolve_targets' targets."""
    # FMA contraction stays on (nvcc's default): the kernels that must round like their
    # CPU twins use explicitly rounded pg_mul_rn/pg_add_rn (csrc/backends/cuda/kernels/pg_cuda_common.cuh)
    flags = ["-std=c++17", "-O3", "-Werror", "all-warnings",
             "-Xcompiler", "-fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror"]
    for kind, a in targets:
        code = f"sm_{a}" if kind == "sass" else f"compute_{a}"
        flags += ["-gencode", f"arch=compute_{a},code={code}"]
    return flags


def include_flags(repo_root, toolkit, cublas):
    return ["-I" + os.path.join(repo_root, "csrc", "core"),
            "-I" + os.path.join(repo_root, "csrc", "backends", "cuda", "kernels"),
            "-I" + toolkit["include"], "-I" + cublas["include"]]


def _run(cmd, verbose):
    if verbose:
        print(" ".join(shlex.quote(c) for c in cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CudaBuildError("command failed (exit {}):\n  {}\n{}{}".format(
            proc.returncode, " ".join(shlex.quote(c) for c in cmd), proc.stdout, proc.stderr))
    if verbose and (proc.stdout or proc.stderr):
        print(proc.stdout + proc.stderr, end="", flush=True)


def object_cache_dir(switch, folder, env=None):
    """An object cache's directory (this file's CUDA objects, core_objects.py's C core ones):
    None when <switch>=0, <switch>_DIR when set, else <XDG cache>/pygpu/<folder>."""
    env = os.environ if env is None else env
    if env.get(switch) == "0":
        return None
    if env.get(switch + "_DIR"):
        return env[switch + "_DIR"]
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pygpu", folder)


def _cache_dir(env=None):
    """The CUDA object cache's directory, or None when PYGPU_CUDA_CACHE=0."""
    return object_cache_dir("PYGPU_CUDA_CACHE", "cuda-objects", env)


def _headers_digest(repo_root):
    """One hash over every header and table under csrc/ (a kernel may include any of them:
    the elementwise, activation and optimizer kernels include csrc/core/pg_ops.def)."""
    import hashlib
    h = hashlib.sha256()
    paths = [p for pat in ("*.h*", "*.def")
             for p in glob.glob(os.path.join(repo_root, "csrc", "**", pat), recursive=True)]
    for path in sorted(paths):
        h.update(os.path.relpath(path, repo_root).encode())
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _dir_digest(path, pattern="*.h*"):
    """One hash over the files of a directory that match pattern (names and bytes)."""
    import hashlib
    h = hashlib.sha256()
    for f in sorted(glob.glob(os.path.join(path, pattern))):
        h.update(os.path.basename(f).encode())
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


def _stable_paths(repo_root, toolkit, cublas):
    """{absolute path: what stands for it in a cache key}. Under pip's build isolation the
    cuBLAS wheel lies in a new temporary directory (pip-build-env-XXXX) on every build, and a
    fresh clone has a new root: a key holding those paths missed every time (the README's
    second command recompiled every object the first had just cached). The checkout stands
    for itself through the sources' and headers' bytes, the toolkit through nvcc's version,
    and cuBLAS through its headers' bytes."""
    return {os.path.abspath(repo_root): "<repo>", toolkit["root"]: "<cuda>",
            toolkit["include"]: "<cuda-include>",
            cublas["include"]: "<cublas-include {}>".format(_dir_digest(cublas["include"]))}


def _object_key(cmd, obj, src, tool_version, headers, paths=None):
    """The cache key of one object: the command (its output path left out, the paths of
    `paths` replaced by their stand-ins, longest first), the compiler's version, the
    source's bytes and the headers' digest."""
    import hashlib
    h = hashlib.sha256()
    order = sorted((paths or {}).items(), key=lambda kv: -len(kv[0]))

    def stable(arg):
        for path, token in order:
            arg = arg.replace(path, token)
        return arg
    h.update("\0".join(stable(c) for c in cmd if c != obj).encode())
    h.update(tool_version.encode())
    h.update(headers.encode())
    with open(src, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def _compile_cached(cmd, obj, key, cache, verbose):
    """Compile unless the cache holds the object; then store it (atomically).
    Returns True when it compiled, False when the cache held the object."""
    cached = os.path.join(cache, key + ".o") if cache else None
    if cached and os.path.isfile(cached):
        shutil.copyfile(cached, obj)
        return False
    _run(cmd, verbose)
    if cached:
        try:
            os.makedirs(cache, exist_ok=True)
            staged = "{}.{}.tmp".format(cached, os.getpid())
            shutil.copyfile(obj, staged)
            os.replace(staged, cached)
        except OSError:
            pass  # a cache that cannot be written is only a slower next build
    return True


_PROGRESS_LOCK = threading.Lock()


class BuildProgress:
    """One line per finished object, for the person waiting. pip shows a build backend's
    output only with -v, so the lines go to the controlling terminal (/dev/tty) when the
    build has one and stderr is not it; else to stderr (pip -v, CI logs).
    PYGPU_BUILD_PROGRESS=0 silences it."""

    def __init__(self, what, total, env=None, lines=None, stream=None):
        env = os.environ if env is None else env
        self.what, self.total, self.done, self.t0 = what, total, 0, time.monotonic()
        self.lines = lines or total  # at most this many step lines (the last always shows)
        self.stream, self._own, self._said = stream, False, False
        if stream is not None or env.get("PYGPU_BUILD_PROGRESS") == "0":
            return
        self.stream = sys.stderr
        if not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
            try:
                self.stream, self._own = open("/dev/tty", "w"), True
            except OSError:
                pass

    def say(self, text):
        if self.stream is not None:
            # on the terminal pip shares, start below its spinner ("Building editable ... |")
            lead = "\n" if self._own and self.done == 0 and not self._said else ""
            self._said = True
            try:
                self.stream.write(f"{lead}pygpu: {text}\n")
                self.stream.flush()
            except OSError:
                pass

    def step(self, name, compiled=None):
        """One object done: compiled (True), from the cache (False), or either (None)."""
        with _PROGRESS_LOCK:
            self.done += 1
            done = self.done
        if done != self.total and done * self.lines // self.total == \
                (done - 1) * self.lines // self.total:
            return
        how = {True: " compiled", False: " from the cache", None: ""}[compiled]
        self.say(f"{self.what} {done}/{self.total} ({time.monotonic() - self.t0:.0f} s): "
                 f"{name}{how}")

    def close(self):
        if self._own:
            self.stream.close()


def compile_objects(jobs, cache, verbose=False, progress=None, workers=None):
    """Compile [(cmd, obj, key, name)] on `workers` threads (default: every core), through
    the object cache; jobs run in the order given (longest first balances the cores).
    Returns the names that were compiled (not found in the cache); CudaBuildError on the
    first failure."""
    compiled = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool:
        futures = {pool.submit(_compile_cached, cmd, obj, key, cache, verbose): name
                   for cmd, obj, key, name in jobs}
        try:
            for f in concurrent.futures.as_completed(futures):
                did = f.result()  # re-raises the first CudaBuildError
                if did:
                    compiled.append(futures[f])
                if progress is not None:
                    progress.step(futures[f], did)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return compiled


def _tool_version(tool):
    try:
        out = subprocess.run(tool + ["--version"], capture_output=True, text=True, timeout=60)
        return out.stdout + out.stderr
    except (OSError, subprocess.SubprocessError):
        return ""


def _is_temporary(path):
    tmp = os.path.realpath(tempfile.gettempdir())
    real = os.path.realpath(path)
    return real.startswith(tmp + os.sep) or "pip-build-env-" in real


def plugin_sources(repo_root):
    srcs = sorted(glob.glob(os.path.join(repo_root, "csrc", "backends", "cuda", "kernels", "*.cu")))
    cuda_dir = os.path.join(repo_root, "csrc", "backends", "cuda")
    srcs += sorted(glob.glob(os.path.join(cuda_dir, "*.c")) +
                   glob.glob(os.path.join(cuda_dir, "*.cu")))
    return srcs


def plugin_jobs(repo_root, toolkit, cublas, targets, build_dir, cc=None, versions=None):
    """The plugin's compile jobs, [(cmd, obj, key, name)], the kernel files first, largest
    first (so that the longest compiles start at once and the cores finish together).
    versions: {"nvcc": ..., "cc": ...}, the compilers' --version text (asked when None)."""
    cc = cc or shlex.split(os.environ.get("CC") or "gcc")
    if versions is None:
        versions = {"nvcc": _tool_version([toolkit["nvcc"]]), "cc": _tool_version(cc)}
    includes = include_flags(repo_root, toolkit, cublas)
    nvcc = nvcc_flags(targets)
    c_flags = ["-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror",
               "-D_POSIX_C_SOURCE=200809L"]
    headers = _headers_digest(repo_root)
    paths = _stable_paths(repo_root, toolkit, cublas)
    sources = plugin_sources(repo_root)
    jobs = []
    for i, src in enumerate(sources):
        obj = os.path.join(build_dir, f"{i:02d}_{os.path.basename(src)}.o")
        if src.endswith(".cu"):
            cmd = [toolkit["nvcc"]] + nvcc + includes + ["-c", src, "-o", obj]
            key = _object_key(cmd, obj, src, versions["nvcc"], headers, paths)
        else:
            cmd = cc + c_flags + includes + ["-c", src, "-o", obj]
            key = _object_key(cmd, obj, src, versions["cc"], headers, paths)
        jobs.append((cmd, obj, key, os.path.relpath(src, repo_root)))
    kernel_dir = os.path.join(repo_root, "csrc", "backends", "cuda", "kernels")
    order = {j[3]: (not os.path.join(repo_root, j[3]).startswith(kernel_dir),
                    -os.path.getsize(os.path.join(repo_root, j[3]))) for j in jobs}
    return sorted(jobs, key=lambda j: order[j[3]])


def build_plugin(out_path, repo_root, toolkit, cublas, archs=None, verbose=False, env=None):
    """Compile and link the CUDA plugin to out_path; CudaBuildError on failure.
    Returns the sources it compiled (those not in the object cache)."""
    env = os.environ if env is None else env
    if toolkit is None or cublas is None:
        raise CudaBuildError("build_plugin needs a toolkit and cuBLAS (see decide())")
    targets = resolve_targets(archs if archs is not None else default_archs(env), env)
    cc = shlex.split(env.get("CC") or "gcc")
    if not plugin_sources(repo_root):
        raise CudaBuildError(f"no CUDA plugin sources under {repo_root}")
    build_dir = tempfile.mkdtemp(prefix="pygpu-cuda-build-")
    cache = _cache_dir(env)
    jobs = plugin_jobs(repo_root, toolkit, cublas, targets, build_dir, cc)
    progress = BuildProgress("CUDA backend", len(jobs), env)
    try:
        t0 = time.monotonic()
        progress.say(f"building the CUDA backend: {len(jobs)} sources for "
                     f"{describe_targets(targets)}, {os.cpu_count() or 2} at a time; compiled "
                     f"objects are kept in {cache or 'no cache (PYGPU_CUDA_CACHE=0)'}")
        compiled = compile_objects(jobs, cache, verbose, progress)
        # the absolute cuBLAS directory, unless it is pip's temporary build
        # environment (gone after the build; pygpu/cuda/__init__.py preloads the
        # installed wheel's copy instead)
        rpaths = [] if _is_temporary(cublas["lib"]) else [os.path.abspath(cublas["lib"])]
        if cublas.get("wheel_subdir"):
            rpaths.append("$ORIGIN/../nvidia/{}/lib".format(cublas["wheel_subdir"]))
        else:
            rpaths.append("$ORIGIN/../nvidia/cu13/lib")
        tmp_out = os.path.join(build_dir, os.path.basename(out_path))
        link = cc + ["-shared", "-o", tmp_out] + sorted(j[1] for j in jobs) + [
            "-L" + toolkit["lib64"], "-lcudart_static", cublas["library"]] + (
            [_cublaslt_lib(cublas["lib"])] if _cublaslt_lib(cublas["lib"]) else []) + [
            "-lstdc++", "-ldl", "-lpthread", "-lrt", "-lm",
            "-Wl,--no-undefined",        # the plugin may not lean on symbols of pygpu._C
            "-Wl,--exclude-libs,ALL",    # keep static cudart's symbols out of the dynamic table
            "-Wl,-rpath-link," + cublas["lib"]] + ["-Wl,-rpath," + r for r in rpaths]
        _run(link, verbose)
        # copy next to the target, then rename: a process that has the old
        # plugin mapped keeps its (unlinked) copy intact
        out_dir = os.path.dirname(os.path.abspath(out_path))
        os.makedirs(out_dir, exist_ok=True)
        staged = os.path.join(out_dir, ".{}.{}.tmp".format(os.path.basename(out_path), os.getpid()))
        shutil.copyfile(tmp_out, staged)
        os.chmod(staged, 0o755)
        os.replace(staged, out_path)
        reused = len(jobs) - len(compiled)
        progress.say(f"built the CUDA backend in {time.monotonic() - t0:.0f} s "
                     f"({len(compiled)} sources compiled, {reused} from the cache)")
        return compiled
    finally:
        progress.close()
        shutil.rmtree(build_dir, ignore_errors=True)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: cuda_build.py OUT.so   (PYGPU_CUDA_ARCHS=80;90 to pick targets)",
              file=sys.stderr)
        return 2
    toolkit = find_toolkit()
    cublas = find_cublas(toolkit) if toolkit else None
    if toolkit is None or cublas is None:
        print(decide({**os.environ, "PYGPU_CUDA": "auto"})[1], file=sys.stderr)
        return 1
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        build_plugin(argv[0], repo_root, toolkit, cublas, verbose=True)
    except CudaBuildError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
