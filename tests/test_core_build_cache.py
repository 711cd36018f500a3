"""test_core_build_cache.py - the C core's object cache (build_support/core_objects.py, used
by setup.py's BuildExt), with a stand-in compiler where a compile runs: these run everywhere
in a second.

- A second build with the same command compiles nothing, also when pip's build isolation
  puts NumPy's headers in a new temporary directory (the README's two commands, the CPU-only
  wheel and the emulated-CUDA lane's build then share the first build's objects).
- Anything the compiler reads that can change the object changes the key: a flag (the
  sanitizer and SIMDe builds never share objects with the default one), the source, a header
  or table of csrc/, the headers of an include directory, the checkout (its path is in the
  debug information), the compiler.
- A coverage build (a .gcno beside each object) is never cached; PYGPU_CORE_CACHE=0 and
  PYGPU_CORE_CACHE_DIR choose.
- setup.py's BuildExt compiles through it: a second build of a one-file extension compiles
  nothing, a build with another flag compiles again.
"""
import os
import stat
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build_support"))
import core_objects  # noqa: E402


def _checkout(root):
    (root / "csrc" / "core").mkdir(parents=True)
    (root / "csrc" / "core" / "pg_tensor.h").write_text("/* header */\n")
    (root / "csrc" / "core" / "pg_ops.def").write_text("PG_OP(add)\n")
    (root / "csrc" / "core" / "pg_add.c").write_text("int add(int a, int b) { return a + b; }\n")
    return root


def _numpy_headers(where, text="/* numpy 2.3 */\n"):
    inc = where / "numpy" / "_core" / "include"
    (inc / "numpy").mkdir(parents=True)
    (inc / "numpy" / "arrayobject.h").write_text(text)
    return str(inc)


def _key(repo, flags=(), numpy_inc=None, compiler=sys.executable):
    src = str(repo / "csrc" / "core" / "pg_add.c")
    depends = core_objects.files_digest([str(p) for p in (repo / "csrc").rglob("*.[hd]*")])
    cmd = [compiler, "-O2", "-I" + str(repo / "csrc" / "core")] + (
        ["-I" + numpy_inc] if numpy_inc else []) + ["-c", src] + list(flags)
    return core_objects.object_key(cmd, src, str(repo), depends)


def test_the_same_command_in_another_pip_build_environment_has_the_same_key(tmp_path):
    repo = _checkout(tmp_path / "clone")
    first = _key(repo, numpy_inc=_numpy_headers(tmp_path / "pip-build-env-1" / "overlay"))
    second = _key(repo, numpy_inc=_numpy_headers(tmp_path / "pip-build-env-2" / "overlay"))
    # `setup.py build_ext` in CI's venv, which lies inside the clone (.venv-ci)
    in_venv = _key(repo, numpy_inc=_numpy_headers(repo / ".venv-ci" / "lib" / "site-packages"))
    assert first == second == in_venv


def test_flags_never_share_an_object(tmp_path):
    repo = _checkout(tmp_path / "clone")
    plain = _key(repo, ["-Werror"])
    assert _key(repo, ["-Werror", "-fsanitize=address,undefined", "-O1", "-g"]) != plain
    assert _key(repo, ["-Werror", "-DPG_BF16_SIMDE=1", "-Wno-psabi"]) != plain
    assert _key(repo, []) != plain


@pytest.mark.parametrize("path", ["csrc/core/pg_add.c", "csrc/core/pg_tensor.h",
                                  "csrc/core/pg_ops.def"])
def test_the_source_a_header_or_the_op_table_changes_the_key(tmp_path, path):
    repo = _checkout(tmp_path / "clone")
    before = _key(repo)
    (repo / path).write_text((repo / path).read_text() + "/* v2 */\n")
    assert _key(repo) != before


def test_other_headers_in_an_include_directory_change_the_key(tmp_path):
    repo = _checkout(tmp_path / "clone")
    old = _key(repo, numpy_inc=_numpy_headers(tmp_path / "a"))
    assert _key(repo, numpy_inc=_numpy_headers(tmp_path / "b", "/* numpy 2.4 */\n")) != old


def test_another_checkout_or_compiler_changes_the_key(tmp_path):
    repo = _checkout(tmp_path / "first")
    first = _key(repo)
    assert _key(_checkout(tmp_path / "second")) != first
    fake = tmp_path / "cc"
    fake.write_text("#!/bin/sh\necho 'fake compiler 9.9'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert _key(repo, compiler=str(fake)) != first


def test_coverage_builds_are_not_cached():
    assert core_objects.cacheable(["gcc", "-O2", "-c", "x.c"])
    assert not core_objects.cacheable(["gcc", "--coverage", "-c", "x.c"])
    assert not core_objects.cacheable(["gcc", "-MD", "-c", "x.c"])


def test_the_cache_directory_and_its_switch(tmp_path):
    assert core_objects.cache_dir({"PYGPU_CORE_CACHE": "0"}) is None
    assert core_objects.cache_dir({"PYGPU_CORE_CACHE_DIR": "/x"}) == "/x"
    assert core_objects.cache_dir({"XDG_CACHE_HOME": "/c"}) == "/c/pygpu/core-objects"


def test_store_then_fetch_gives_the_same_bytes(tmp_path):
    obj = tmp_path / "a.o"
    obj.write_bytes(b"\x7fELF object")
    cache = str(tmp_path / "cache")
    assert not core_objects.fetch(cache, "k", str(tmp_path / "b.o"))
    core_objects.store(cache, "k", str(obj))
    assert core_objects.fetch(cache, "k", str(tmp_path / "b.o"))
    assert (tmp_path / "b.o").read_bytes() == b"\x7fELF object"


SETUP = textwrap.dedent('''
    import os, sys
    sys.argv = ["setup.py", "-q", "build_ext", "--inplace"]
    src = open({setup_py!r}).read()
    # setup.py's BuildExt on a one-file extension: everything before `setup(` is kept; its
    # run() (the CUDA plugin's step, which writes into the checkout's pygpu/) is left out
    g = {{"__file__": {setup_py!r}, "__name__": "pygpu_setup"}}
    exec(compile(src[:src.index("# pyproject.toml declares")], {setup_py!r}, "exec"), g)
    from setuptools import Extension, setup
    from setuptools.command.build_ext import build_ext

    class CoreOnly(g["BuildExt"]):
        def run(self):
            build_ext.run(self)

    setup(name="one", ext_modules=[Extension("one", ["one.c"], depends=["one.h"],
          extra_compile_args=os.environ.get("FLAGS", "").split())],
          cmdclass={{"build_ext": CoreOnly}}, script_args=sys.argv[1:])
''')


def test_setup_py_builds_through_the_cache(tmp_path):
    work = tmp_path / "one"
    work.mkdir()
    (work / "one.h").write_text("#define ONE 1\n")
    (work / "one.c").write_text(textwrap.dedent('''
        #include <Python.h>
        #include "one.h"
        static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "one", NULL, -1, NULL};
        PyMODINIT_FUNC PyInit_one(void) { return PyModule_Create(&m); }
    '''))
    (work / "build_one.py").write_text(SETUP.format(setup_py=os.path.join(ROOT, "setup.py")))
    env = dict(os.environ, PYGPU_CORE_CACHE_DIR=str(tmp_path / "cache"), PYGPU_CUDA="0",
               PYGPU_BUILD_PROGRESS="0")

    def build(flags=""):
        subprocess.run(["rm", "-rf", "build"], cwd=work, check=True)
        r = subprocess.run([sys.executable, "build_one.py"], cwd=work, capture_output=True,
                           text=True, env=dict(env, FLAGS=flags))
        assert r.returncode == 0, r.stdout + r.stderr
        return sorted(os.listdir(tmp_path / "cache"))

    first = build()
    assert len(first) == 1
    assert build() == first  # nothing compiled: the object came from the cache
    assert len(build("-DTWO=2")) == 2  # another flag, another object
    (work / "one.h").write_text("#define ONE 2\n")
    assert len(build()) == 3  # a changed header (depends), another object


def _setup_top(here):
    """setup.py's definitions (everything before `setup(`), as if it lay in `here`."""
    setup_py = os.path.join(ROOT, "setup.py")
    with open(setup_py) as f:
        src = f.read()
    g = {"__file__": os.path.join(str(here), "setup.py"), "__name__": "pygpu_setup"}
    exec(compile(src[:src.index("# pyproject.toml declares")], setup_py, "exec"), g)
    return g


def test_the_simde_knobs_flag_their_own_file_only(tmp_path):
    # the SIMDe lane's build compiles these two files; the rest come from the default build
    g = _setup_top(ROOT)
    both = g["per_file_cflags"]({"PYGPU_BF16_SIMDE": "1", "PYGPU_INT8_SIMDE": "1"})
    assert both == {"csrc/backends/cpu/cpu_gemm_bf16.c": ["-DPG_BF16_SIMDE=1", "-Wno-psabi"],
                    "csrc/backends/cpu/cpu_gemm_int8_vnni.c": ["-DPG_INT8_SIMDE=1", "-Wno-psabi"]}
    assert g["per_file_cflags"]({}) == {}
    # a header naming the macro would compile without it: the build refuses
    fake = tmp_path / "checkout"
    (fake / "csrc" / "backends" / "cpu").mkdir(parents=True)
    (fake / "csrc" / "backends" / "cpu" / "cpu_gemm_bf16.c").write_text("#if PG_BF16_SIMDE\n#endif\n")
    assert _setup_top(fake)["per_file_cflags"]({"PYGPU_BF16_SIMDE": "1"})
    (fake / "csrc" / "backends" / "cpu" / "cpu_gemm_half.h").write_text("#ifdef PG_BF16_SIMDE\n#endif\n")
    with pytest.raises(SystemExit, match="cpu_gemm_half.h names PG_BF16_SIMDE"):
        _setup_top(fake)["per_file_cflags"]({"PYGPU_BF16_SIMDE": "1"})
