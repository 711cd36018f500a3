"""test_cuda_build.py - the CUDA plugin builds, links cleanly and loads without a GPU;
the PYGPU_CUDA decision and toolkit/cuBLAS discovery of build_support/cuda_build.py.

None of this needs a GPU or a driver. The plugin is built once per session
(fixture `cuda_plugin`, about half a minute on two cores; marked `slow`) into
a temporary directory, or taken from $PYGPU_CUDA_PLUGIN when that names an
already built file (e.g. the one setup.py produced). Tests that need it skip,
saying why, when there is no nvcc or no cuBLAS.
"""

import ctypes.util
import glob
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the CUDA kernels, next to their backend (as ggml-cuda's are)
KERNELS = os.path.join(REPO, "csrc", "backends", "cuda", "kernels")

CHECK_SCRIPT = os.path.join(REPO, "build_support", "check_cuda_plugin.py")
# one way into the plugin: the ABI version, the backend table and the extras table
# (csrc/core/pg_cuda_extras.h: streams, events, graphs, NCCL, options), nothing else
EXPORTS = {"pg_plugin_abi_version", "pg_plugin_init", "pg_plugin_get_extras"}


def _load_build_module():
    spec = importlib.util.spec_from_file_location(
        "pygpu_cuda_build", os.path.join(REPO, "build_support", "cuda_build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cuda_build = _load_build_module()


def _driver_present():
    return os.path.exists("/dev/nvidia0") or ctypes.util.find_library("cuda") is not None


@pytest.fixture(scope="session")
def cuda_plugin(tmp_path_factory):
    prebuilt = os.environ.get("PYGPU_CUDA_PLUGIN")
    if prebuilt:
        if not os.path.isfile(prebuilt):
            pytest.fail(f"PYGPU_CUDA_PLUGIN={prebuilt} does not exist")
        return prebuilt
    toolkit = cuda_build.find_toolkit()
    if toolkit is None:
        pytest.skip("no CUDA toolkit: nvcc not in $CUDA_HOME, $CUDA_PATH, PATH or /usr/local/cuda")
    cublas = cuda_build.find_cublas(toolkit)
    if cublas is None:
        pytest.skip("no cuBLAS in the toolkit or any site-packages (pip install nvidia-cublas)")
    out = str(tmp_path_factory.mktemp("cuda_plugin") / "_cuda_backend.so")
    cuda_build.build_plugin(out, REPO, toolkit, cublas, archs=None, verbose=False)
    return out


def _tool(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        pytest.skip(f"{cmd[0]} is not installed")


# --- the built plugin ------------------------------------------------------------------------

@pytest.mark.slow
def test_plugin_builds_out_of_tree(cuda_plugin):
    assert os.path.getsize(cuda_plugin) > 0
    stray = glob.glob(os.path.join(KERNELS, "*.o")) + glob.glob(
        os.path.join(REPO, "csrc", "backends", "cuda", "*.o"))
    assert stray == [], f"build wrote objects into the source tree: {stray}"


@pytest.mark.slow
def test_plugin_needs_no_core_symbols(cuda_plugin):
    undefined = _tool("nm", "-D", "--undefined-only", cuda_plugin)
    core = [line for line in undefined.splitlines() if re.search(r"\bpg_", line)]
    assert core == [], "the plugin references symbols of the core:\n" + "\n".join(core)


@pytest.mark.slow
def test_plugin_exports_only_its_entry_points(cuda_plugin):
    defined = _tool("nm", "-D", "--defined-only", cuda_plugin)
    names = {line.split()[-1] for line in defined.splitlines() if line.strip()}
    assert names == EXPORTS, f"unexpected exports (static cudart leaking?): {names - EXPORTS}"


@pytest.mark.slow
def test_plugin_links_cudart_static_and_cublas_shared(cuda_plugin):
    dynamic = _tool("readelf", "-d", cuda_plugin)
    needed = re.findall(r"\(NEEDED\).*\[(.+)\]", dynamic)
    assert any(n.startswith("libcublas.so") for n in needed), needed
    assert any(n.startswith("libcublasLt.so") for n in needed), needed  # the int8 GEMM's
    assert not any(n.startswith("libcudart") for n in needed), needed
    rpath = re.search(r"\((?:RUNPATH|RPATH)\).*\[(.+)\]", dynamic)
    assert rpath and "$ORIGIN/../nvidia/" in rpath.group(1), dynamic


@pytest.mark.slow
def test_load_check_answers_without_crashing(cuda_plugin):
    proc = subprocess.run([sys.executable, CHECK_SCRIPT, cuda_plugin], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    count = int(re.search(r"^device_count: (\d+)$", out, re.M).group(1))
    reason = re.search(r"^unavailable_reason: (.*)$", out, re.M).group(1)
    if count > 0:
        assert reason == "None", out
    else:
        assert reason != "None", out
    if not _driver_present():
        assert count == 0 and reason.startswith("no CUDA driver found ("), out


def test_load_check_rejects_a_missing_file(tmp_path):
    proc = subprocess.run([sys.executable, CHECK_SCRIPT, str(tmp_path / "nope.so")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "cannot load" in proc.stderr


# --- PYGPU_CUDA -------------------------------------------------------------------------------

FAKE_TOOLKIT = {"root": "/fake/cuda", "nvcc": "/fake/cuda/bin/nvcc",
                "include": "/fake/cuda/include", "lib64": "/fake/cuda/lib64", "version": "13.0"}
FAKE_CUBLAS = {"include": "/fake/cu13/include", "lib": "/fake/cu13/lib",
               "library": "/fake/cu13/lib/libcublas.so.13", "wheel_subdir": "cu13"}


@pytest.fixture
def found(monkeypatch):
    """Make the toolkit / cuBLAS look present or absent: found(toolkit=..., cublas=...)."""
    calls = []

    def setup(toolkit, cublas):
        monkeypatch.setattr(cuda_build, "find_toolkit",
                            lambda env=None: calls.append("toolkit") or toolkit)
        monkeypatch.setattr(cuda_build, "find_cublas",
                            lambda tk, env=None: calls.append("cublas") or cublas)
        return calls

    return setup


@pytest.mark.parametrize("value", ["0", "off", "false"])
def test_decide_off_never_looks(found, value):
    calls = found(FAKE_TOOLKIT, FAKE_CUBLAS)
    build, reason = cuda_build.decide({"PYGPU_CUDA": value})
    assert build is False and "PYGPU_CUDA=0" in reason
    assert calls == []


@pytest.mark.parametrize("env", [{}, {"PYGPU_CUDA": "auto"}, {"PYGPU_CUDA": ""}])
def test_decide_auto_builds_when_found(found, env):
    found(FAKE_TOOLKIT, FAKE_CUBLAS)
    build, reason = cuda_build.decide(env)
    assert build is True and "/fake/cuda" in reason


def test_decide_auto_skips_without_toolkit(found):
    found(None, FAKE_CUBLAS)
    build, reason = cuda_build.decide({"PYGPU_CUDA": "auto"})
    assert build is False and "no CUDA toolkit" in reason


def test_decide_auto_skips_without_cublas(found):
    found(FAKE_TOOLKIT, None)
    build, reason = cuda_build.decide({})
    assert build is False and "pip install nvidia-cublas" in reason
    assert reason.startswith("nvcc found") and "cuBLAS not found" in reason


# --- nvidia-cublas as a build requirement and a run-time dependency -----------------------------

@pytest.fixture
def toolkit_cublas(monkeypatch):
    """found(toolkit, has_cublas, cublas): the toolkit, whether it ships cuBLAS, what find_cublas gives."""
    def setup(toolkit, has_cublas, cublas=None):
        monkeypatch.setattr(cuda_build, "find_toolkit", lambda env=None: toolkit)
        monkeypatch.setattr(cuda_build, "toolkit_has_cublas", lambda tk: has_cublas)
        monkeypatch.setattr(cuda_build, "find_cublas", lambda tk, env=None: cublas)
    return setup


@pytest.mark.parametrize("toolkit, has_cublas, env, want", [
    (FAKE_TOOLKIT, False, {}, ["nvidia-cublas>=13,<14"]),          # nvcc, no cuBLAS: ask pip
    (dict(FAKE_TOOLKIT, version="12.9"), False, {}, ["nvidia-cublas-cu12"]),
    (FAKE_TOOLKIT, True, {}, []),                                   # the toolkit has it
    (None, False, {}, []),                                          # no nvcc: no CUDA build
    (FAKE_TOOLKIT, False, {"PYGPU_CUDA": "0"}, []),                 # CUDA build switched off
])
def test_extra_build_requires(toolkit_cublas, toolkit, has_cublas, env, want):
    toolkit_cublas(toolkit, has_cublas)
    assert cuda_build.extra_build_requires(env) == want


@pytest.mark.parametrize("cublas, want", [
    (FAKE_CUBLAS, ["nvidia-cublas>=13,<14"]),                           # linked against the wheel
    (dict(FAKE_CUBLAS, wheel_subdir=None), []),                         # the toolkit's own
    (None, []),                                                         # not built at all
])
def test_runtime_requires(toolkit_cublas, cublas, want):
    toolkit_cublas(FAKE_TOOLKIT, cublas is not None and cublas["wheel_subdir"] is None, cublas)
    assert cuda_build.runtime_requires({}) == want


def test_build_backend_adds_cublas_to_setuptools_requirements(monkeypatch):
    sys.path.insert(0, os.path.join(REPO, "build_support"))
    try:
        import pygpu_build_backend as backend
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(backend.cuda_build, "extra_build_requires", lambda env: ["nvidia-cublas"])
    monkeypatch.setattr(backend._setuptools, "get_requires_for_build_wheel", lambda cs=None: ["x"])
    monkeypatch.setattr(backend._setuptools, "get_requires_for_build_editable",
                        lambda cs=None: ["y"])
    assert backend.get_requires_for_build_wheel() == ["x", "nvidia-cublas"]
    assert backend.get_requires_for_build_editable() == ["y", "nvidia-cublas"]
    # every other hook is setuptools' own
    assert backend.build_wheel is backend._setuptools.build_wheel


def test_pyproject_uses_the_in_tree_backend():
    with open(os.path.join(REPO, "pyproject.toml")) as f:
        text = f.read()
    assert 'build-backend = "pygpu_build_backend"' in text
    assert 'backend-path = ["build_support"]' in text
    assert 'dynamic = ["dependencies"]' in text


def test_decide_required_builds_when_found(found):
    found(FAKE_TOOLKIT, FAKE_CUBLAS)
    assert cuda_build.decide({"PYGPU_CUDA": "1"})[0] is True


@pytest.mark.parametrize("toolkit, cublas, missing", [(None, FAKE_CUBLAS, "nvcc not found"),
                                                      (FAKE_TOOLKIT, None, "cuBLAS not found")])
def test_decide_required_fails_loudly(found, toolkit, cublas, missing):
    found(toolkit, cublas)
    with pytest.raises(cuda_build.CudaBuildError, match=missing):
        cuda_build.decide({"PYGPU_CUDA": "1"})


def test_decide_rejects_unknown_value(found):
    found(FAKE_TOOLKIT, FAKE_CUBLAS)
    with pytest.raises(cuda_build.CudaBuildError, match="expected 0, 1 or auto"):
        cuda_build.decide({"PYGPU_CUDA": "maybe"})


# --- architectures ----------------------------------------------------------------------------

def test_default_archs_are_sm80_sm90_plus_ptx():
    flags = cuda_build.gencode_flags(cuda_build.resolve_archs(None, env={}))
    assert flags == ["-gencode", "arch=compute_80,code=sm_80",
                     "-gencode", "arch=compute_90,code=sm_90",
                     "-gencode", "arch=compute_90,code=compute_90"]


def test_archs_env_overrides():
    archs = cuda_build.resolve_archs(["70"], env={"PYGPU_CUDA_ARCHS": "86;sm_120"})
    assert archs == ["86", "120"]
    assert cuda_build.gencode_flags(archs)[-1] == "arch=compute_120,code=compute_120"


def test_bad_arch_is_an_error():
    with pytest.raises(cuda_build.CudaBuildError, match="bad CUDA architecture"):
        cuda_build.resolve_archs(["ampere"], env={})


# --- discovery --------------------------------------------------------------------------------

def _touch(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def test_find_toolkit_from_cuda_home(tmp_path):
    root = tmp_path / "cuda"
    nvcc = root / "bin" / "nvcc"
    _touch(str(nvcc), "#!/bin/sh\necho 'Cuda compilation tools, release 12.9, V12.9.1'\n")
    nvcc.chmod(0o755)
    _touch(str(root / "include" / "cuda_runtime_api.h"))
    _touch(str(root / "lib64" / "libcudart_static.a"))
    tk = cuda_build.find_toolkit({"CUDA_HOME": str(root), "PATH": ""})
    assert tk["root"] == str(root) and tk["nvcc"] == str(nvcc)
    assert tk["lib64"] == str(root / "lib64") and tk["version"] == "12.9"


def test_site_dirs_include_the_target_virtualenv(tmp_path):
    venv = tmp_path / "venv"
    sp = cuda_build.sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"]
    os.makedirs(sp)
    assert os.path.abspath(sp) in cuda_build._site_dirs({"VIRTUAL_ENV": str(venv)})


def test_find_cublas_in_a_wheel(tmp_path, monkeypatch):
    sp = tmp_path / "site-packages"
    _touch(str(sp / "nvidia" / "cu13" / "include" / "cublas_v2.h"))
    _touch(str(sp / "nvidia" / "cu13" / "lib" / "libcublas.so.12"))
    _touch(str(sp / "nvidia" / "cu13" / "lib" / "libcublas.so.13"))
    monkeypatch.setattr(cuda_build, "_site_dirs", lambda env: [str(sp)])
    toolkit = dict(FAKE_TOOLKIT, include=str(tmp_path / "none"), lib64=str(tmp_path / "none"))
    cb = cuda_build.find_cublas(toolkit, env={})
    assert cb["include"] == str(sp / "nvidia" / "cu13" / "include")
    assert cb["library"] == str(sp / "nvidia" / "cu13" / "lib" / "libcublas.so.13")
    assert cb["wheel_subdir"] == "cu13"


# --- the CUDA 12 configuration (build_support/cuda12_check.py, run by .ci/run) ----------------
def test_cuda12_check_stubs_every_kernel_launcher():
    spec = importlib.util.spec_from_file_location(
        "pygpu_cuda12_check", os.path.join(REPO, "build_support", "cuda12_check.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    src, names = mod.kernel_stubs()
    with open(os.path.join(KERNELS, "pg_cuda_kernels.h")) as f:
        written = set(re.findall(r"\b(pg_kernel_\w+)\s*\(", f.read()))
    # the launchers a table row declares (pg_kernel_index_##family), one per INDEX family
    from pygpu import _C
    families = {row[-1][0] for row in _C._subop_table() if row[0] == "INDEX"}  # (..., (family,))
    by_row = {f"pg_kernel_index_{family}" for family in families}
    # and two per PG_OPTIM row of the op table (pg_kernel_<name>, pg_kernel_multi_<name>)
    with open(os.path.join(REPO, "csrc", "core", "pg_ops.def")) as f:
        optims = re.findall(r"^PG_OPTIM\(\w+,\s*(\w+)", f.read(), re.M)
    by_row |= {f"pg_kernel_{p}{name}" for name in optims for p in ("", "multi_")}
    assert families and optims and "pg_kernel_matmul" in names
    assert set(names) == written | by_row
    assert all(f"int {n}(void) {{ return 0; }}" in src for n in names)


def _load_build_support(name):
    spec = importlib.util.spec_from_file_location(
        "pygpu_" + name, os.path.join(REPO, "build_support", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cuda12_nvrtc_prelude_redeclares_only_host_only_cuda12_calls(tmp_path):
    """The CUDA 12 device check (build_support/cuda12_nvrtc.py) compiles the launchers as
    device code; the host-only runtime calls they make are redeclared for the device with
    CUDA 12's signatures, those the device runtime has are left to NVRTC, and one CUDA 12
    does not declare stays undeclared, so that NVRTC rejects it."""
    mod = _load_build_support("cuda12_nvrtc")
    header = tmp_path / "cuda_runtime_api.h"
    header.write_text(
        "extern __host__ __cudart_builtin__ cudaError_t CUDARTAPI cudaGetLastError(void);\n"
        "extern __host__ cudaError_t CUDARTAPI cudaMallocAsync(void **devPtr, size_t size,\n"
        "    cudaStream_t hStream);\n"
        "extern __host__ cudaError_t CUDARTAPI cudaMemsetAsync(void *devPtr, int value, "
        "size_t count, cudaStream_t stream __dv(0));\n")
    src = tmp_path / "k.cu"
    src.write_text("void f() { cudaMallocAsync(&p, 8, s); cudaMemsetAsync(p, 0, 8, s);\n"
                   "  cudaGetLastError(); cudaMemGetDefaultMemPool(&pool, 0, t); }\n")
    prelude, decls = mod.host_runtime_prelude([str(src)], str(header))
    assert decls == [
        'extern "C" __device__ cudaError_t cudaMallocAsync(void **devPtr, size_t size,\n'
        "    cudaStream_t hStream);",
        'extern "C" __device__ cudaError_t cudaMemsetAsync(void *devPtr, int value, '
        "size_t count, cudaStream_t stream);"]
    assert "cudaGetLastError" not in prelude and "cudaMemGetDefaultMemPool" not in prelude
    assert prelude.startswith("#include <cuda_runtime_api.h>\n")


def test_no_kernel_branches_on_the_cuda_arch():
    """CI's CUDA 12 device check (.ci/run) compiles the kernels for sm_90 only, which covers
    sm_80 too as long as no kernel source branches on __CUDA_ARCH__; one that does needs
    PYGPU_CUDA_ARCHS there to list every arch the build targets."""
    root = pathlib.Path(__file__).resolve().parent.parent
    hits = [str(p.relative_to(root)) for p in sorted(pathlib.Path(KERNELS).glob("*.cu*"))
            if "__CUDA_ARCH__" in p.read_text()]
    assert not hits, f"kernels branching on __CUDA_ARCH__ (see .ci/run's CUDA 12 step): {hits}"
