# test_import_cycles.py - layers read one way: no file reaches back to itself, and no Python
# module imports one of a higher layer (PY_LAYERS) unless KNOWN_UPWARD says why.
#
# build_support/check_import_cycles.py reads the C sources (who uses what another
# file defines, through headers' inline functions and macros) and the Python
# imports (module level and inside functions) and fails on a cycle that its
# KNOWN list does not name. Here: the repository passes it, and the checker
# really finds the kinds of cycle it exists for.
import importlib.util
import io
import pathlib
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _checker():
    spec = importlib.util.spec_from_file_location(
        "check_import_cycles", ROOT / "build_support" / "check_import_cycles.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_repository_has_no_cycles_but_the_known_ones():
    out = io.StringIO()
    new, stale = _checker().check(str(ROOT), out=out)
    assert not new, out.getvalue()
    assert not stale, out.getvalue()


def _write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def test_a_python_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    _write(tmp_path, {
        "pygpu/__init__.py": "from . import a\n",
        "pygpu/a.py": "from . import b\n",
        "pygpu/b.py": "def f():\n    from .a import g\n",
        "csrc/x.c": "int x(void) { return 0; }\n",
    })
    c = _checker()
    assert c.cycles(c.py_graph(str(tmp_path))) == [("pygpu/a.py", "pygpu/b.py")]


def test_a_c_cycle_through_a_header_inline_function_is_found(tmp_path):
    _write(tmp_path, {
        "csrc/obj.h": """
            int slow(int x);
            static inline int fast(int x) { return x ? slow(x) : 0; }
            int wrap(int x);
        """,
        "csrc/obj.c": '#include "obj.h"\nint wrap(int x) { return fast(x); }\n',
        "csrc/slow.c": '#include "obj.h"\nint slow(int x) { return wrap(x - 1); }\n',
        "csrc/leaf.c": "static int helper(void) { return 1; }\nint leaf(void) { return helper(); }\n",
        "pygpu/__init__.py": "",
    })
    c = _checker()
    assert c.cycles(c.c_graph(str(tmp_path))) == [("csrc/obj.c", "csrc/slow.c")]


def test_a_submodule_importing_its_own_package_is_a_cycle(tmp_path):
    # `from .. import zeros` in pygpu/nn/x.py: pygpu imports nn, nn imports x, x imports
    # pygpu. The checker once skipped every submodule -> parent edge and missed these.
    _write(tmp_path, {
        "pygpu/__init__.py": "from . import _C\nfrom ._tensor_create import zeros\nfrom . import nn\n",
        "pygpu/_tensor_create.py": "from . import _C\n",
        "pygpu/nn/__init__.py": "from .x import f\n",
        "pygpu/nn/x.py": "from .. import _C\n\ndef f():\n    from .. import zeros\n",
        "csrc/x.c": "int x(void) { return 0; }\n",
    })
    c = _checker()
    assert c.cycles(c.py_graph(str(tmp_path))) == [
        ("pygpu/__init__.py", "pygpu/nn/__init__.py", "pygpu/nn/x.py")]
    # importing the module that defines the name, and the compiled _C, is no cycle
    (tmp_path / "pygpu/nn/x.py").write_text("from .. import _C\nfrom .._tensor_create import zeros\n")
    assert c.cycles(c.py_graph(str(tmp_path))) == []


def _c_includes(rel):
    import re
    text = (ROOT / rel).read_text()
    return {pathlib.PurePosixPath(m).name for m in re.findall(r'#\s*include\s*"([^"]+)"', text)}


def test_the_tensor_type_header_declares_nothing_of_autograd_or_autocast():
    # autograd.c and autocast.c sit above the Tensor type (they include tensor_object.h),
    # so the type's header must not declare or call their functions: autograd.h and
    # autocast.h do, for the binding files that record or cast ops
    graph = _checker().c_graph(str(ROOT))
    reached = graph["csrc/bindings/tensor_object.h"]
    assert not reached & {"csrc/bindings/autograd.c", "csrc/bindings/autocast.c"}, sorted(reached)


def test_no_kernel_the_pool_splitter_calls_includes_the_splitter_header():
    # cpu_parallel.c calls the kernels (matmul, training, BLAS set-up); a kernel that
    # included cpu_parallel.h for its part arithmetic closed a loop: it takes cpu_part.h
    graph = _checker().c_graph(str(ROOT))
    called = sorted(graph["csrc/backends/cpu/cpu_parallel.c"])
    assert called
    for rel in called:
        if rel != "csrc/backends/cpu/cpu_parallel_reduce.c":  # the splitter's other half
            assert "cpu_parallel.h" not in _c_includes(rel), rel


def test_an_upward_import_is_found_and_a_module_in_no_layer_too(tmp_path):
    # pygpu._tensor (the tensor layer) reaching into pygpu.nn (a library above it), even from
    # inside a function, is an upward import; nn importing the tensor layer is not.
    _write(tmp_path, {
        "pygpu/__init__.py": "from . import nn\n",
        "pygpu/_tensor/__init__.py": "",
        "pygpu/_tensor/math.py": "def f():\n    from ..nn import functional\n",
        "pygpu/nn/__init__.py": "from .functional import g\n",
        "pygpu/nn/functional.py": "from .._tensor import math\n\ndef g():\n    pass\n",
        "pygpu/_newthing.py": "",
    })
    c = _checker()
    up, unplaced = c.upward_imports(str(tmp_path))
    assert up == [("pygpu._tensor.math", "pygpu.nn.functional")]
    assert unplaced == ["pygpu._newthing"]


def test_a_known_upward_import_that_is_gone_is_stale(monkeypatch):
    c = _checker()
    monkeypatch.setattr(c, "KNOWN_UPWARD", c.KNOWN_UPWARD + [
        ("pygpu._tensor.math", "pygpu.nn", "an entry no import matches")])
    out = io.StringIO()
    new, stale = c.check(str(ROOT), out=out)
    assert not new and stale == ["pygpu._tensor.math -> pygpu.nn"], out.getvalue()


def test_the_package_root_holds_at_most_30_modules():
    """Issue 44's layout: pygpu/ keeps at most 30 .py files at its root, as torch/ keeps its
    root small; a new module goes into the package of its layer (pygpu/_ops, pygpu/_tensor,
    pygpu/utils, ...)."""
    root = [p.name for p in (ROOT / "pygpu").glob("*.py")]
    assert len(root) <= 30, sorted(root)
