"""check_cuda_plugin.py PATH - load the CUDA plugin the way pygpu._C does and ask it about devices.

dlopens PATH (RTLD_LOCAL) with ctypes, calls pg_plugin_init with a minimal
pg_core_api built here, then the table's device_count and unavailable_reason
(and, for each device, device_name and total_memory). Prints what it got.

Exit 0 if the plugin loaded and answered (on a machine without a driver it
must say so in unavailable_reason, without crashing); 1 if it could not be
loaded, lacks pg_plugin_init or pg_plugin_abi_version, was built for another
ABI, refuses to initialise or is not the cuda table;
2 on bad usage. Standard library only, so CI can run it before pygpu exists.

The ctypes structures mirror csrc/core/pg_backend.h (struct pg_core_api and
struct pg_backend, PG_BACKEND_ABI_VERSION); keep them in step with it.
"""

import ctypes
import os
import re
import sys

PG_DEV_CUDA = 2


def extras_version():
    """PG_CUDA_EXTRAS_VERSION from csrc/core/pg_cuda_extras.h next to this script, else 1."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "csrc", "core",
                          "pg_cuda_extras.h")
    try:
        with open(header) as f:
            m = re.search(r"#define\s+PG_CUDA_EXTRAS_VERSION\s+(\d+)", f.read())
            if m:
                return int(m.group(1))
    except OSError:
        pass
    return 1


def abi_version():
    """PG_BACKEND_ABI_VERSION from the header next to this script, else 1."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "csrc", "core",
                          "pg_backend.h")
    try:
        with open(header) as f:
            m = re.search(r"#define\s+PG_BACKEND_ABI_VERSION\s+(\d+)", f.read())
            if m:
                return int(m.group(1))
    except OSError:
        pass
    return 1


class PgDevice(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("index", ctypes.c_int)]


# pg_core_api: the services the core lends to a plugin. Only error_set can be
# reached by the calls made here; the others are harmless stubs.
ERROR_SET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_char_p)  # variadic in C
STORAGE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
STORAGE_SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
TRANSFER_TIME = ctypes.CFUNCTYPE(None, PgDevice, PgDevice, ctypes.c_uint64)
OP_DONE = ctypes.CFUNCTYPE(None, PgDevice, ctypes.c_uint64)
STORAGE_MARK = ctypes.c_void_p         # never reached here: no work is queued
STORAGE_WAIT_OTHERS = ctypes.c_void_p


class PgCoreApi(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_int),
                ("error_set", ERROR_SET),
                ("storage_retain", STORAGE_FN),
                ("storage_release", STORAGE_FN),
                ("storage_set_error", STORAGE_SET_ERROR),
                ("stats_transfer_time", TRANSFER_TIME),
                ("stats_op_done", OP_DONE),
                ("storage_mark", STORAGE_MARK),
                ("storage_wait_others", STORAGE_WAIT_OTHERS),
                ("async_error_record", ctypes.c_void_p),  # never reached here either
                ("storage_clear_error", ctypes.c_void_p),
                ("tensor_covers_storage", ctypes.c_void_p)]


BE = ctypes.c_void_p  # const pg_backend *


class PgBackend(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("type", ctypes.c_int),
                ("ctx", ctypes.c_void_p),
                ("device_count", ctypes.CFUNCTYPE(ctypes.c_int, BE)),
                ("device_name", ctypes.CFUNCTYPE(ctypes.c_int, BE, ctypes.c_int, ctypes.c_char_p,
                                                 ctypes.c_size_t)),
                ("total_memory", ctypes.CFUNCTYPE(ctypes.c_size_t, BE, ctypes.c_int)),
                ("raw_alloc", ctypes.c_void_p),
                ("raw_free", ctypes.c_void_p),
                ("host_alloc_pinned", ctypes.c_void_p),
                ("host_free_pinned", ctypes.c_void_p),
                ("launch", ctypes.c_void_p),
                ("copy", ctypes.c_void_p),
                ("wait_event", ctypes.c_void_p),
                ("synchronize", ctypes.c_void_p),
                ("unavailable_reason", ctypes.CFUNCTYPE(ctypes.c_char_p, BE)),
                ("mem_get_info", ctypes.c_void_p),
                ("supports_op", ctypes.c_void_p)]  # ABI 4


def preload_cublas():
    """Load libcublasLt/libcublas from an installed nvidia-cublas wheel, as
    pygpu/cuda/__init__.py does before it loads the plugin (an editable install's
    plugin has no relative path to site-packages). Returns the path or None."""
    import glob
    for entry in sys.path:
        for sub in ("cu13", "cublas"):
            lib = os.path.join(entry or ".", "nvidia", sub, "lib")
            blas = sorted(glob.glob(os.path.join(lib, "libcublas.so.[0-9]*")))
            if not blas:
                continue
            lt = sorted(glob.glob(os.path.join(lib, "libcublasLt.so.[0-9]*")))
            try:
                for p in lt[-1:] + blas[-1:]:
                    ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            return blas[-1]
    return None


def check(path):
    errors = []
    cublas = preload_cublas()
    if cublas:
        print(f"cublas (preloaded from the nvidia-cublas wheel): {cublas}")

    def error_set(status, fmt):
        # the plugin always passes ("%s", message); the message itself is not reachable
        errors.append((status, fmt.decode(errors="replace") if fmt else ""))
        return status

    keep = {
        "error_set": ERROR_SET(error_set),
        "storage_retain": STORAGE_FN(lambda s: None),
        "storage_release": STORAGE_FN(lambda s: None),
        "storage_set_error": STORAGE_SET_ERROR(lambda s, m: None),
        "stats_transfer_time": TRANSFER_TIME(lambda a, b, ns: None),
        "stats_op_done": OP_DONE(lambda d, ns: None),
    }
    core = PgCoreApi(abi_version(), **keep)

    try:
        lib = ctypes.CDLL(os.path.abspath(path), mode=os.RTLD_LOCAL | os.RTLD_NOW)
    except OSError as e:
        print(f"error: cannot load {path}: {e}", file=sys.stderr)
        return 1
    try:
        plugin_abi = ctypes.c_int.in_dll(lib, "pg_plugin_abi_version").value
    except ValueError:
        print(f"error: {path} does not export pg_plugin_abi_version", file=sys.stderr)
        return 1
    if plugin_abi != core.abi_version:
        print(f"error: {path} was built for backend ABI {plugin_abi}, the headers here say "
              f"{core.abi_version}", file=sys.stderr)
        return 1
    try:
        init = lib.pg_plugin_init
    except AttributeError:
        print(f"error: {path} does not export pg_plugin_init", file=sys.stderr)
        return 1
    init.restype = ctypes.c_int
    init.argtypes = [ctypes.POINTER(PgCoreApi), ctypes.POINTER(ctypes.POINTER(PgBackend))]
    table = ctypes.POINTER(PgBackend)()
    status = init(ctypes.byref(core), ctypes.byref(table))
    if status != 0 or not table:
        print(f"error: pg_plugin_init returned status {status}", file=sys.stderr)
        return 1
    be = table.contents
    name = be.name.decode() if be.name else None
    print(f"plugin: {os.path.abspath(path)}")
    print(f"backend: {name} (device type {be.type})")
    if name != "cuda" or be.type != PG_DEV_CUDA:
        print("error: not the cuda backend table", file=sys.stderr)
        return 1
    addr = ctypes.cast(table, ctypes.c_void_p)
    count = be.device_count(addr)
    print(f"device_count: {count}")
    reason = be.unavailable_reason(addr) if be.unavailable_reason else None
    print(f"unavailable_reason: {reason.decode() if reason else None}")
    for i in range(count):
        buf = ctypes.create_string_buffer(256)
        st = be.device_name(addr, i, buf, len(buf))
        mem = be.total_memory(addr, i) if be.total_memory else 0
        print(f"cuda:{i}: {buf.value.decode() if st == 0 else '(name unavailable)'}, "
              f"{mem / 2**30:.1f} GiB")
    if count == 0 and not reason:
        print("error: no devices and no reason given", file=sys.stderr)
        return 1
    # the second table (pg_cuda_extras.h): handed out for this version, headed by its
    # own size and version; another version is refused
    try:
        get = lib.pg_plugin_get_extras
    except AttributeError:
        print(f"error: {path} does not export pg_plugin_get_extras", file=sys.stderr)
        return 1
    get.restype = ctypes.c_int
    get.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    want, out = extras_version(), ctypes.c_void_p()
    if get(want, ctypes.byref(out)) != 0 or not out.value:
        print(f"error: pg_plugin_get_extras({want}) refused", file=sys.stderr)
        return 1
    size = ctypes.c_size_t.from_address(out.value).value
    version = ctypes.c_int.from_address(out.value + ctypes.sizeof(ctypes.c_size_t)).value
    print(f"extras: version {version}, {size} bytes")
    if version != want:
        print(f"error: the extras table says version {version}, the header {want}", file=sys.stderr)
        return 1
    if get(want + 1, ctypes.byref(out)) == 0:
        print(f"error: pg_plugin_get_extras accepted version {want + 1}", file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: check_cuda_plugin.py PATH/TO/_cuda_backend.so", file=sys.stderr)
        return 2
    return check(argv[0])


if __name__ == "__main__":
    sys.exit(main())
