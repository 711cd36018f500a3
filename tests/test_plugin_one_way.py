# test_plugin_one_way.py - issue 29's "one way into the plugin", held in place.
#
# Python reaches the CUDA plugin only through pygpu._C: the backend table and the
# versioned extras table (csrc/core/pg_cuda_extras.h, fetched once at load), never
# through ctypes on the plugin's own symbols; errors.c is the only status->exception
# map; and the calls from C up into Python by name are exactly those that
# docs/architecture.md lists. The version checks of the extras table run here on
# fake plugins (a C compiler is enough) and on the real plugin where it loads.
import ast
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import pygpu
from pygpu import _C

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "pygpu"

# the only modules that may load a shared library through ctypes, and what they load
CTYPES_ALLOWED = {
    "pygpu/_extension.py": "libscipy_openblas, before _C (its rpath cannot find it in a source tree)",
    "pygpu/cuda/__init__.py": "libcublas from the nvidia-cublas wheel, before the plugin",
    "pygpu/cuda/_nvml.py": "libnvidia-ml (NVML), the driver's library, for smi and mem_get_info",
    "pygpu/distributed/__init__.py": "libc's mallopt (keep_heap: no heap trim between DDP steps)",
    "pygpu/_numpy_blas.py": "NumPy's own OpenBLAS, to set its threads' sleep timeout",
}


def _py_files():
    return sorted(p for p in PKG.rglob("*.py"))


def test_no_python_file_calls_the_plugin_through_ctypes():
    for path in _py_files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        assert "pg_plugin_" not in text, f"{rel} names a pg_plugin_ symbol: use a _C._cuda_* method"
        tree = ast.parse(text)
        imports_ctypes = any(
            isinstance(n, (ast.Import, ast.ImportFrom))
            and any(a.name.split(".")[0] == "ctypes" for a in n.names)
            or isinstance(n, ast.ImportFrom) and (n.module or "").startswith("ctypes")
            for n in ast.walk(tree))
        if imports_ctypes:
            assert rel in CTYPES_ALLOWED, f"{rel} imports ctypes; the plugin is reached through _C"
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("CDLL", "LoadLibrary", "PyDLL"):
                src = ast.get_source_segment(text, node)
                assert "PLUGIN" not in src and "_cuda_backend" not in src, \
                    f"{rel}: {src} loads the CUDA plugin through ctypes"


def test_no_second_status_map_in_python():
    """The status codes of csrc/core/pg_status.h become exceptions in errors.c only: no
    Python dict maps status numbers to exception classes."""
    for path in _py_files():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict) and node.keys and all(
                    isinstance(k, ast.Constant) and isinstance(k.value, int) for k in node.keys):
                names = {ast.unparse(v) for v in node.values}
                assert not any(n.endswith("Error") for n in names), \
                    f"{path.relative_to(ROOT)}: a status->exception map {names}; raise through _C"


def test_nccl_error_is_the_one_from_errors_c():
    from pygpu.distributed import _nccl
    assert _nccl.NcclError is _C.NcclError and issubclass(_C.NcclError, RuntimeError)


# ---- the C->Python calls by name are the documented few ---------------------------------

def _c_to_python_calls():
    """Every name C reaches Python by: pg_hook("name") and PyImport_ImportModule("mod")
    with the attribute called on it, in csrc/."""
    found = set()
    for path in sorted((ROOT / "csrc").rglob("*.c")):
        text = path.read_text()
        found |= {f"hook {m}" for m in re.findall(r'pg_hook\("([A-Za-z_0-9]+)"\)', text)}
        for mod in re.findall(r'PyImport_ImportModule\("([A-Za-z_0-9.]+)"\)', text):
            attrs = re.findall(r'PyObject_(?:CallMethod|GetAttrString)\(mod, "([A-Za-z_0-9]+)"', text)
            found |= {f"{mod}.{a}" for a in attrs} or {mod}
    return found


def test_c_to_python_calls_are_the_documented_ones():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("## Calls from C up into Python", 1)
    assert len(section) == 2, "docs/architecture.md lost its 'Calls from C up into Python' section"
    listed = set(re.findall(r"^- `([^`]+)`", section[1].split("\n## ", 1)[0], re.M))
    found = _c_to_python_calls()
    assert found == listed, (f"in csrc/ but not documented: {sorted(found - listed)}; "
                             f"documented but gone: {sorted(listed - found)}")
    assert not any("_cuda_streams" in f for f in found), "C calls pygpu.cuda.streams again"


# ---- the extras table's version checks --------------------------------------------------

FAKE_PLUGIN = r"""
#include <stddef.h>
#include <string.h>
#include "pg_backend.h"
#include "pg_cuda_extras.h"

#define EXPORT __attribute__((visibility("default")))
EXPORT const int pg_plugin_abi_version = PG_BACKEND_ABI_VERSION;
static const pg_core_api *g_core;

static int count(const pg_backend *be) { (void)be; return 0; }
static const char *reason(const pg_backend *be) { (void)be; return "fake plugin: no devices"; }
static const pg_backend g_table = {.name = "cuda", .type = PG_DEV_CUDA, .device_count = count,
                                   .unavailable_reason = reason};

EXPORT pg_status pg_plugin_init(const pg_core_api *core, const pg_backend **out)
{
    g_core = core;
    *out = &g_table;
    return PG_OK;
}

#ifdef TABLE_VERSION
static pg_cuda_extras g_extras;
EXPORT pg_status pg_plugin_get_extras(int version, const void **out)
{
#ifdef REFUSE
    return g_core->error_set(PG_ERR_UNAVAILABLE, "fake extras: version %d refused", version);
#endif
    (void)version;
    g_extras.size = sizeof g_extras;
    g_extras.version = TABLE_VERSION; /* whatever was asked: the core must check */
    *out = &g_extras;
    return PG_OK;
}
#endif
"""


def _core_extras_version():
    header = ROOT / "csrc" / "core" / "pg_cuda_extras.h"
    return int(re.search(r"#define\s+PG_CUDA_EXTRAS_VERSION\s+(\d+)", header.read_text()).group(1))


@pytest.fixture(scope="module")
def fake_plugins(tmp_path_factory):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build fake plugins")
    d = tmp_path_factory.mktemp("extras_plugins")
    src = d / "fake.c"
    src.write_text(FAKE_PLUGIN)

    def build(name, *flags):
        out = d / name
        subprocess.run([cc, "-std=c11", "-shared", "-fPIC", "-fvisibility=hidden",
                        f"-I{ROOT / 'csrc' / 'core'}", "-o", str(out), str(src), *flags],
                       check=True, capture_output=True)
        return str(out)

    v = _core_extras_version()
    return {
        "good": build("good.so", f"-DTABLE_VERSION={v}"),
        "v999": build("v999.so", "-DTABLE_VERSION=999"),
        "refuses": build("refuses.so", f"-DTABLE_VERSION={v}", "-DREFUSE"),
        "none": build("none.so"),
    }


def _extras_error(path):
    """In a fresh process (the plugin stays loaded): load `path` as the CUDA plugin and
    call one extras method; the exception's type and message, or 'ok'."""
    code = textwrap.dedent(f"""
        from pygpu import _C
        assert _C._load_cuda({path!r}) is True, _C._cuda_reason()
        try:
            _C._cuda_get_option("nvtx")
            print("ok")
        except Exception as e:
            print(type(e).__name__, e)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_extras_table_of_another_version_is_refused_by_the_core(fake_plugins):
    msg = _extras_error(fake_plugins["v999"])
    v = _core_extras_version()
    assert msg.startswith("DeviceUnavailableError"), msg
    assert "extras table version 999" in msg and f"needs version {v}" in msg, msg
    assert "rebuild" in msg, msg


def test_extras_refusal_by_the_plugin_keeps_its_message(fake_plugins):
    msg = _extras_error(fake_plugins["refuses"])
    assert msg.startswith("DeviceUnavailableError") and "fake extras: version" in msg, msg


def test_plugin_without_extras_is_named(fake_plugins):
    msg = _extras_error(fake_plugins["none"])
    assert msg.startswith("DeviceUnavailableError") and "pg_plugin_get_extras" in msg, msg


def test_a_matching_table_is_used(fake_plugins):
    # the fake table's slots are NULL: a matching header is accepted and get_option is
    # looked up (the process would crash on the NULL call), so only check the load path
    code = textwrap.dedent(f"""
        from pygpu import _C
        assert _C._load_cuda({fake_plugins['good']!r}) is True
        print(_C._cuda_extras_probe({_core_extras_version()}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0 and out.stdout.strip() == str(_core_extras_version()), out


def test_extras_methods_without_the_plugin_say_cuda_is_unavailable(tmp_path):
    """No plugin where pygpu looks for it: each _C._cuda_* method raises what the
    Python API raised before (pygpu.cuda's "cuda is not available: <why>")."""
    code = textwrap.dedent("""
        from pygpu import _C
        for call in (lambda: _C._cuda_get_option("nvtx"), lambda: _C._cuda_stream_create(0, 0),
                     lambda: _C._cuda_nccl_version(), lambda: _C._cuda_graph_create()):
            try:
                call()
                print("no error")
            except _C.DeviceUnavailableError as e:
                print("unavailable:", e)
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               PYGPU_CUDA_BACKEND_SO=str(tmp_path / "no_such_plugin.so"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 4, lines
    for line in lines:
        assert line.startswith("unavailable: cuda is not available: pygpu was built without "
                               "the CUDA backend"), line


def test_real_plugin_refuses_another_extras_version():
    if not pygpu.cuda.is_built():
        pytest.skip("the CUDA plugin is not built")
    pygpu.cuda.is_available()  # loads it through the core
    if not _C._load_cuda(None):
        pytest.skip(f"the CUDA plugin does not load: {pygpu.cuda.unavailable_reason()}")
    v = _core_extras_version()
    assert _C._cuda_extras_probe(v) == v
    with pytest.raises(pygpu.DeviceUnavailableError,
                       match=rf"extras table .* is version {v}, the pygpu core asked for version {v + 1}"):
        _C._cuda_extras_probe(v + 1)
