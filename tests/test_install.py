# test_install.py - the newcomer path: how pygpu is found, built and loaded.
#
# - The README's "Two commands" and the lines .ci/run's first stage runs are the same
#   strings, so CI proves exactly what the README tells a newcomer to type.
# - Importing pygpu from a source tree with no built extension raises an ImportError that
#   says what happened and what to run (not Python's circular-import message); each case
#   runs in a subprocess on a copy of pygpu/'s Python files in a temporary directory.
# - A _C built into a tree where its rpath finds no OpenBLAS (what an editable install
#   leaves once pip's build environment is gone) still loads: pygpu/_extension.py preloads
#   the library from the installed scipy_openblas32.
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

import pygpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
CI_SCRIPT = os.path.join(ROOT, ".ci", "run")
PKG_DIR = os.path.dirname(os.path.abspath(pygpu.__file__))
NOT_BUILT = "not built"


def _readme_commands():
    with open(README) as f:
        text = f.read()
    section = re.search(r"^## Two commands\n(.*?)^## ", text, re.S | re.M)
    assert section, "README.md has no '## Two commands' section"
    block = re.search(r"```sh\n(.*?)```", section.group(1), re.S)
    assert block, "the 'Two commands' section has no ```sh block"
    return [line.rstrip() for line in block.group(1).splitlines() if line.strip()]


def _ci_stage(number):
    """The lines of the function .ci/run runs as its lane "<number>. ..." """
    with open(CI_SCRIPT) as f:
        text = f.read()
    call = re.search(rf'^lane "{number}\.[^"]*" (\w+)$', text, re.M)
    assert call, f".ci/run has no lane {number}"
    stage = re.search(rf'^{call.group(1)}\(\) {{\n(.*?)^}}', text, re.S | re.M)
    assert stage, f".ci/run has no function {call.group(1)}"
    return [line.rstrip() for line in stage.group(1).splitlines()]


needs_checkout = pytest.mark.skipif(
    not (os.path.exists(README) and os.path.exists(CI_SCRIPT)),
    reason="README.md and .ci/run are not next to the tests (installed elsewhere)")


@needs_checkout
def test_ci_stage_1_runs_the_readme_commands_as_written():
    commands = _readme_commands()
    assert len(commands) == 2 and commands[0].startswith("pip install"), commands
    stage = _ci_stage(1)
    for command in commands:
        assert command in stage, (
            f"the README's command {command!r} is not a line of .ci/run's stage 1: "
            "change both together")
    # the commands run from the clone's root: nothing in the stage changes directory
    code = [line.split("#", 1)[0] for line in stage]
    assert not any(re.search(r"(^|[\s;&(|])(cd|pushd)\s", line) for line in code), stage


def _copy_python_files(dest, source_tree, with_extension=False):
    """The pygpu package (its subpackages too, no compiled files) copied into dest/pygpu; with
    source_tree, dest also looks like a checkout."""
    pkg = os.path.join(dest, "pygpu")
    shutil.copytree(PKG_DIR, pkg, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    if with_extension:
        for path in glob.glob(os.path.join(PKG_DIR, "_C*.so")):
            shutil.copy(path, pkg)
    if source_tree:
        open(os.path.join(dest, "setup.py"), "w").close()
        os.makedirs(os.path.join(dest, "csrc"))
    return pkg


def _import_in(cwd, code="import pygpu"):
    # -c puts cwd first on sys.path, as `python -m pygpu` from a checkout's root does. -S keeps
    # out site-packages' .pth files: an editable install's import hook (setuptools') would
    # otherwise serve pygpu and its submodules, _C included, from the checkout it was made
    # from, whatever the working directory. NumPy and scipy_openblas32 come in by PYTHONPATH.
    import numpy
    import scipy_openblas32
    deps = {os.path.dirname(os.path.dirname(m.__file__)) for m in (numpy, scipy_openblas32)}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sorted(deps)))
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_import_from_unbuilt_source_tree_says_what_to_run(tmp_path):
    _copy_python_files(str(tmp_path), source_tree=True)
    proc = _import_in(str(tmp_path))
    assert proc.returncode != 0
    err = proc.stderr
    assert "ImportError" in err and NOT_BUILT in err, err
    assert "source tree" in err and str(tmp_path) in err, err
    assert "pip install -e ." in err and "build_ext --inplace" in err, err
    assert "partially initialized" not in err and "circular" not in err, err


def test_import_from_unbuilt_install_says_reinstall(tmp_path):
    _copy_python_files(str(tmp_path), source_tree=False)
    proc = _import_in(str(tmp_path))
    assert proc.returncode != 0
    assert NOT_BUILT in proc.stderr and "reinstall" in proc.stderr, proc.stderr
    assert "partially initialized" not in proc.stderr, proc.stderr


def test_extension_built_for_another_python_is_named(tmp_path):
    pkg = _copy_python_files(str(tmp_path), source_tree=True)
    open(os.path.join(pkg, "_C.cpython-39-x86_64-linux-gnu.so"), "w").close()
    proc = _import_in(str(tmp_path))
    assert proc.returncode != 0
    assert "another Python" in proc.stderr and "_C.cpython-39" in proc.stderr, proc.stderr


@pytest.mark.skipif(not glob.glob(os.path.join(PKG_DIR, "_C*.so")), reason="no _C*.so to copy")
def test_extension_outside_site_packages_finds_openblas(tmp_path):
    # In tmp_path, _C's rpath ($ORIGIN/../scipy_openblas32/lib) leads nowhere, as in an
    # editable install's checkout: only the preload in pygpu/_extension.py can find OpenBLAS.
    assert not os.path.exists(os.path.join(str(tmp_path), "scipy_openblas32"))
    _copy_python_files(str(tmp_path), source_tree=True, with_extension=True)
    proc = _import_in(str(tmp_path), "import pygpu, numpy as np\n"
                                     "a = pygpu.tensor(np.arange(6.0).reshape(2, 3))\n"
                                     "print(pygpu.__file__)\n"
                                     "print((a @ a.T).tolist())")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(str(tmp_path)), lines  # the copy was imported, not this pygpu
    assert lines[1] == "[[5.0, 14.0], [14.0, 50.0]]", lines


def test_openblas_preload_names_the_library():
    from pygpu import _extension
    path = _extension.preload_openblas()
    assert path is not None and os.path.basename(path).startswith("libscipy_openblas"), path
    assert os.path.exists(path)
