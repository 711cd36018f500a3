"""NumPy's OpenBLAS threads made to sleep soon after each call, so that they do not hold the
cores pygpu's pool needs (issue 45; the mechanism is docs/performance.md's "NumPy and pygpu in
one process").

NumPy's OpenBLAS (numpy.libs/libscipy_openblas64_*) keeps its idle worker threads spinning for
2^OPENBLAS_THREAD_TIMEOUT cycles after each call (2^28 by default: about 0.1 s) before they
sleep. A program that alternates NumPy's matmul with pygpu's (a notebook, a training loop that
scores with NumPy) then finds a NumPy worker on the core pygpu's second pool thread wants, and
pygpu's product runs at about one thread's speed. OPENBLAS_THREAD_TIMEOUT=TIMEOUT_EXP lets the
workers sleep after about 30 us of idling, so back-to-back NumPy calls still find them awake.

pygpu applies that without the user setting anything, unless the user set
OPENBLAS_THREAD_TIMEOUT themselves (theirs is kept):
  - imported before NumPy's OpenBLAS is loaded: the variable is put in os.environ, and NumPy's
    OpenBLAS reads it when it loads (pygpu's own OpenBLAS too, whose threads pygpu never uses);
  - imported after: the timeout NumPy's OpenBLAS read at load is changed in the running library,
    through the one variable its exported getter openblas_thread_timeout() returns, and its
    threads are stopped (blas_thread_shutdown_, what OpenBLAS runs before a fork): NumPy's next
    BLAS call starts them again, reading the new timeout. The getter's code is checked to be the
    expected `mov eax, [rip + offset]; ret` before anything is written; anything else (another
    BLAS, another build) is left alone, and `status()` says what was done.
"""
import ctypes
import glob
import os
import sys

TIMEOUT_EXP = 16  # 2^16 cycles: tens of microseconds (OpenBLAS clamps to [4, 30])
_VAR = "OPENBLAS_THREAD_TIMEOUT"
_status = "not applied"


def before_numpy():
    """Called first thing by `import pygpu`: the variable, when NumPy's BLAS is not loaded yet.
    Returns whether NumPy was already imported (then apply_live() has the work)."""
    global _status
    if _VAR in os.environ:
        _status = f"left alone: {_VAR}={os.environ[_VAR]} set by the user"
        return False
    if "numpy" in sys.modules:
        return True
    os.environ[_VAR] = str(TIMEOUT_EXP)
    _status = f"{_VAR}={TIMEOUT_EXP} set before NumPy's OpenBLAS loaded"
    return False


def _numpy_openblas():
    """NumPy's bundled OpenBLAS, when it is loaded in this process, else None."""
    np = sys.modules.get("numpy")
    if np is None or not getattr(np, "__file__", None):
        return None
    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libscipy_openblas*.so*"))):
        try:  # RTLD_NOLOAD: only a library already loaded, never a second copy
            return ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
        except OSError:
            continue
    return None


def apply_live():
    """Set the timeout in NumPy's running OpenBLAS and restart its threads (see the module's
    docstring); a no-op where the library or its getter is not the expected one."""
    global _status
    lib = _numpy_openblas()
    if lib is None:
        _status = "not applied: NumPy's bundled OpenBLAS is not loaded"
        return False
    try:
        getter = lib.openblas_thread_timeout
        shutdown = lib.blas_thread_shutdown_
    except AttributeError:
        _status = "not applied: NumPy's OpenBLAS has no openblas_thread_timeout"
        return False
    addr = ctypes.cast(getter, ctypes.c_void_p).value
    code = ctypes.string_at(addr, 7)
    if code[:2] != b"\x8b\x05" or code[6:7] != b"\xc3":  # mov eax, [rip + rel32]; ret
        _status = "not applied: openblas_thread_timeout is not the expected code"
        return False
    rel = int.from_bytes(code[2:6], "little", signed=True)
    var = ctypes.c_int.from_address(addr + 6 + rel)
    var.value = TIMEOUT_EXP
    getter.restype = ctypes.c_int
    if getter() != TIMEOUT_EXP:
        _status = "not applied: the timeout did not read back"
        return False
    shutdown.restype = ctypes.c_int
    shutdown()  # the next NumPy BLAS call starts its threads with the new timeout
    _status = f"{_VAR}={TIMEOUT_EXP} applied to NumPy's running OpenBLAS"
    return True


def status():
    """What pygpu did to NumPy's OpenBLAS thread timeout, in words."""
    return _status
