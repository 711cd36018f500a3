"""test_cuda_build_cache.py - the CUDA plugin's object cache and targets
(build_support/cuda_build.py), with a stand-in compiler: no nvcc is run, so these run
everywhere in a second.

- A second build compiles nothing, also when pip's build isolation puts cuBLAS in a new
  temporary directory and when the checkout is another clone (issue 46: the README's second
  command recompiled what the first had just cached, because the key held those paths).
- A changed kernel file recompiles that file alone; a changed header or op table (.def), every
  file.
- The default targets: the visible GPUs' archs, else compute_80 PTX only; PYGPU_CUDA_ARCHS
  overrides both.
- The build's progress lines say how far it has got.
"""
import io
import os
import stat

import pytest

from test_cuda_build import cuda_build

FAKE_NVCC = """#!/bin/sh
# a compiler stand-in: writes the source's bytes to the object, logs the source's name
out=""; src=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) echo "fake compiler 1.0"; exit 0;;
    -o) out="$2"; shift;;
    -c) src="$2"; shift;;
  esac
  shift
done
cat "$src" > "$out"
basename "$src" >> "$(dirname "$0")/compiled.log"
"""


def _tree(root):
    """A checkout with two kernel files, one host file and a header."""
    kernels = root / "csrc" / "backends" / "cuda" / "kernels"
    kernels.mkdir(parents=True)
    (root / "csrc" / "core").mkdir(parents=True)
    (kernels / "reduce.cu").write_text("// reduce\n" * 20)
    (kernels / "rows.cu").write_text("// rows\n")
    (root / "csrc" / "backends" / "cuda" / "cuda_state.c").write_text("/* state */\n")
    (root / "csrc" / "core" / "pg_tensor.h").write_text("/* header */\n")
    return root


def _toolkit(tmp_path):
    bindir = tmp_path / "cuda" / "bin"
    bindir.mkdir(parents=True)
    nvcc = bindir / "nvcc"
    nvcc.write_text(FAKE_NVCC)
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "cuda" / "include").mkdir()
    return {"root": str(tmp_path / "cuda"), "nvcc": str(nvcc),
            "include": str(tmp_path / "cuda" / "include"), "lib64": str(tmp_path / "cuda" / "lib64"),
            "version": "13.0"}, bindir / "compiled.log"


def _cublas(where):
    """cuBLAS headers at a path of their own, as pip's build environment has them."""
    inc = where / "nvidia" / "cu13" / "include"
    inc.mkdir(parents=True)
    (inc / "cublas_v2.h").write_text("/* cublas */\n")
    return {"include": str(inc), "lib": str(where / "nvidia" / "cu13" / "lib"),
            "library": "libcublas.so.13", "wheel_subdir": "cu13"}


class Builds:
    """Runs the plugin's compile step (cuda_build.plugin_jobs + compile_objects) as the real
    build does, with the stand-in compiler, and says which sources it compiled."""

    def __init__(self, tmp_path):
        self.tmp, self.n = tmp_path, 0
        self.toolkit, self.log = _toolkit(tmp_path)
        self.cache = str(tmp_path / "object-cache")

    def build(self, repo, cublas=None, targets=(("ptx", "80"),)):
        self.n += 1
        cublas = cublas or _cublas(self.tmp / f"pip-build-env-{self.n}" / "overlay")
        build_dir = self.tmp / f"build-{self.n}"
        build_dir.mkdir()
        cc = [self.toolkit["nvcc"]]
        versions = {"nvcc": "fake compiler 1.0", "cc": "fake compiler 1.0"}
        jobs = cuda_build.plugin_jobs(str(repo), self.toolkit, cublas, list(targets),
                                      str(build_dir), cc=cc, versions=versions)
        progress = cuda_build.BuildProgress("CUDA backend", len(jobs), stream=io.StringIO())
        compiled = cuda_build.compile_objects(jobs, self.cache, progress=progress, workers=2)
        for _, obj, _, _ in jobs:  # every object is there, compiled or from the cache
            assert os.path.getsize(obj) > 0
        return sorted(os.path.basename(c) for c in compiled), progress.stream.getvalue()


@pytest.fixture
def builds(tmp_path):
    return Builds(tmp_path)


ALL = ["cuda_state.c", "reduce.cu", "rows.cu"]


def test_a_second_build_compiles_nothing(builds, tmp_path):
    repo = _tree(tmp_path / "clone")
    assert builds.build(repo)[0] == ALL
    # pip's build isolation: the cuBLAS wheel in a new pip-build-env-* directory each time
    assert builds.build(repo)[0] == []


def test_another_clone_reuses_the_objects(builds, tmp_path):
    assert builds.build(_tree(tmp_path / "first"))[0] == ALL
    assert builds.build(_tree(tmp_path / "second"))[0] == []


def test_a_changed_source_recompiles_that_file_alone(builds, tmp_path):
    repo = _tree(tmp_path / "clone")
    builds.build(repo)
    (repo / "csrc" / "backends" / "cuda" / "kernels" / "rows.cu").write_text("// rows, v2\n")
    assert builds.build(repo)[0] == ["rows.cu"]
    assert builds.build(repo)[0] == []


def test_a_changed_header_recompiles_everything(builds, tmp_path):
    repo = _tree(tmp_path / "clone")
    builds.build(repo)
    (repo / "csrc" / "core" / "pg_tensor.h").write_text("/* header, v2 */\n")
    assert builds.build(repo)[0] == ALL


def test_a_changed_op_table_recompiles_everything(builds, tmp_path):
    # the kernels include csrc/core/pg_ops.def: a new row must not link a stale object
    repo = _tree(tmp_path / "clone")
    (repo / "csrc" / "core" / "pg_ops.def").write_text("PG_OP(add)\n")
    builds.build(repo)
    (repo / "csrc" / "core" / "pg_ops.def").write_text("PG_OP(add)\nPG_OP(sub)\n")
    assert builds.build(repo)[0] == ALL


def test_other_cublas_headers_or_targets_recompile(builds, tmp_path):
    repo = _tree(tmp_path / "clone")
    builds.build(repo)
    other = _cublas(tmp_path / "other-cublas")
    (tmp_path / "other-cublas" / "nvidia" / "cu13" / "include" / "cublas_v2.h").write_text("/* 13.1 */")
    assert builds.build(repo, cublas=other)[0] == ALL
    kernels = ["reduce.cu", "rows.cu"]  # the host file does not see the targets
    assert builds.build(repo, targets=[("sass", "90"), ("ptx", "90")])[0] == kernels


def test_the_cache_off_compiles_every_time(builds, tmp_path, monkeypatch):
    repo = _tree(tmp_path / "clone")
    builds.cache = None
    assert builds.build(repo)[0] == ALL
    assert builds.build(repo)[0] == ALL


def test_the_largest_kernel_file_is_compiled_first(builds, tmp_path):
    repo = _tree(tmp_path / "clone")
    jobs = cuda_build.plugin_jobs(str(repo), builds.toolkit, _cublas(tmp_path / "cb"),
                                  [("ptx", "80")], str(tmp_path), cc=["cc"],
                                  versions={"nvcc": "", "cc": ""})
    assert [os.path.basename(j[3]) for j in jobs] == ["reduce.cu", "rows.cu", "cuda_state.c"]


def test_progress_says_how_far_the_build_has_got(builds, tmp_path):
    _, lines = builds.build(_tree(tmp_path / "clone"))
    steps = [ln for ln in lines.splitlines() if ln.startswith("pygpu: CUDA backend ")]
    assert [ln.split()[3] for ln in steps] == ["1/3", "2/3", "3/3"]
    assert all(ln.endswith(" compiled") for ln in steps)
    _, lines = builds.build(_tree(tmp_path / "clone2"))
    assert all(ln.endswith(" from the cache") for ln in lines.splitlines())


def test_progress_can_be_silenced():
    p = cuda_build.BuildProgress("C core", 4, env={"PYGPU_BUILD_PROGRESS": "0"})
    p.step("x.c")
    assert p.stream is None


def test_progress_thins_its_lines_to_the_count_asked():
    out = io.StringIO()
    p = cuda_build.BuildProgress("C core", 100, lines=10, stream=out)
    for i in range(100):
        p.step(f"f{i}.c")
    assert len(out.getvalue().splitlines()) == 10 and "100/100" in out.getvalue()


# --- targets --------------------------------------------------------------------------------

def _fake_smi(tmp_path, caps):
    bindir = tmp_path / "smi"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + "".join(f"echo {c}\n" for c in caps))
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    return {"PATH": str(bindir)}


def test_without_a_gpu_the_default_is_compute_80_ptx_only(tmp_path):
    env = {"PATH": str(tmp_path)}  # no nvidia-smi
    assert cuda_build.visible_gpu_archs(env) == []
    targets = cuda_build.resolve_targets(cuda_build.default_archs(env), env)
    assert targets == [("ptx", "80")]
    assert cuda_build.nvcc_flags(targets)[-2:] == ["-gencode", "arch=compute_80,code=compute_80"]


def test_with_gpus_the_default_is_their_sass_and_the_highest_ptx(tmp_path):
    env = _fake_smi(tmp_path, ["9.0", "8.0", "9.0"])
    assert cuda_build.visible_gpu_archs(env) == ["80", "90"]
    assert cuda_build.resolve_targets(cuda_build.default_archs(env), env) == [
        ("sass", "80"), ("sass", "90"), ("ptx", "90")]


def test_pygpu_cuda_archs_overrides_the_gpus(tmp_path):
    env = dict(_fake_smi(tmp_path, ["9.0"]), PYGPU_CUDA_ARCHS="80;90")
    assert cuda_build.resolve_targets(cuda_build.default_archs(env), env) == [
        ("sass", "80"), ("sass", "90"), ("ptx", "90")]
    env["PYGPU_CUDA_ARCHS"] = "compute_80"
    assert cuda_build.resolve_targets(cuda_build.default_archs(env), env) == [("ptx", "80")]


def test_a_failing_nvidia_smi_means_no_gpu(tmp_path):
    bindir = tmp_path / "smi"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed: no driver' >&2\nexit 9\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    assert cuda_build.visible_gpu_archs({"PATH": str(bindir)}) == []


def test_a_bad_arch_is_refused():
    with pytest.raises(cuda_build.CudaBuildError, match="bad CUDA architecture"):
        cuda_build.resolve_targets(["sm90x1"], env={})


