# test_defects_crashes.py - regression tests for the crashes of issue 7 §2.
#
# Each case that once killed the interpreter runs in a child process, so a
# crash fails its test instead of taking pytest down with it: the child prints
# one line naming the exception it got, and the test checks that line and the
# exit status (a signal shows as a negative return code).
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
from pygpu import _C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_child(code, env=None, timeout=120):
    """Run `code` in a fresh interpreter importing this tree's pygpu; (rc, stdout, stderr)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full_env, timeout=timeout, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stderr


# ---- out of device memory inside .to() / copy_() ------------------------------------------

OOM_CHILD = """
    import pygpu
    keep = [pygpu.zeros(1000).to("sim:0") for _ in range(3)]
    try:
        for _ in range(50):
            {stmt}
        print("NO-ERROR")
    except MemoryError as e:
        print("MemoryError:", e)
"""


@pytest.mark.parametrize("stmt", [
    'keep.append(pygpu.zeros(1 << 20).to("sim:0"))',
    'keep.append(pygpu.zeros(1 << 20, device="sim:0"))',
    'keep.append(pygpu.zeros(1 << 18, device="sim:0") + 1.0)',
    'd = pygpu.zeros(1 << 20, device="sim:0"); d.copy_(pygpu.ones(1 << 20)); keep.append(d)',
    'keep.append(pygpu.ones(1 << 20).to("sim:0", non_blocking=True))',
], ids=["to", "zeros", "add", "copy_", "to-nonblocking"])
def test_out_of_device_memory_is_a_memory_error(stmt):
    rc, out, err = run_child(OOM_CHILD.format(stmt=stmt), env={"PYGPU_SIM_MEMORY_MB": "1"})
    assert rc == 0, f"child died with {rc}: {err[-2000:]}"
    line = out.strip().splitlines()[-1]
    assert line.startswith("MemoryError:"), out
    assert "sim:0" in line and "bytes" in line and "in use" in line, line


# ---- private _C functions with device or dtype numbers ------------------------------------

BAD_DEVICE_CALLS = [
    ("_empty_cache", (5, 0)),
    ("_empty_cache", (1, 99)),
    ("_empty_cache", (-1, 0)),
    ("_reset_peak", (1, 16)),
    ("_reset_peak", (7, 0)),
    ("_memory_stats", (1, -1)),
    ("_memory_stats", (3, 0)),
    ("_memory_stats", (0, 4)),
    ("_synchronize", (9, 0)),
    ("_device_name", (1, 1 << 20)),
    ("_total_memory", (-5, 0)),
    ("_seed", (1, 5, 0)),
    ("_seed", (1, 1, 99)),
    ("_seed", (1, -2, 0)),
]


@pytest.mark.parametrize("fn,args", BAD_DEVICE_CALLS,
                         ids=[f"{f}{a}" for f, a in BAD_DEVICE_CALLS])
def test_private_device_functions_check_their_device(fn, args):
    rc, out, err = run_child(f"""
        from pygpu import _C
        try:
            _C.{fn}(*{args!r})
            print("NO-ERROR")
        except (ValueError, RuntimeError) as e:
            print(type(e).__name__ + ":", e)
    """)
    assert rc == 0, f"child died with {rc}: {err[-2000:]}"
    assert "Error:" in out and "NO-ERROR" not in out, out


@pytest.mark.parametrize("code", [99, -1, 6, 2**31 + 2])
def test_from_array_copy_checks_the_dtype_code(code):
    with pytest.raises((ValueError, OverflowError), match="dtype code|int"):
        _C._from_array_copy(np.zeros(3), code)


def test_private_random_checks_its_kind():
    with pytest.raises(ValueError, match="kind"):
        _C._random(5, (2,), pygpu.float32, "cpu")


# ---- sim use after the atexit shutdown ----------------------------------------------------

SHUTDOWN_CASES = {
    "atexit_before_import": """
        import atexit
        def late():  # registered before pygpu's own handler, so it runs after it
            import pygpu
            t = pygpu.ones(4, device="sim:0")
            print("late", (t + 1).tolist(), (t * 3).sum().item())
            pygpu.synchronize()
            h = pygpu.zeros(4).pin_memory()
            h.copy_(t, non_blocking=True)
            print("copied", h.tolist())
        atexit.register(late)
        import pygpu
        keep = pygpu.ones(1000, device="sim:0") * 2  # streams exist and storages hold events
        keep2 = pygpu.ones(10, device="sim:1") + 1
    """,
    "del_during_finalisation": """
        import pygpu
        class Holder:
            def __init__(self):
                self.t = pygpu.arange(6.0, device="sim:0") * 2
            def __del__(self):
                try:
                    print("del", (self.t + 1).tolist())
                except Exception as e:  # raising is allowed; crashing is not
                    print("del raised", type(e).__name__)
        h = Holder()
        h.self_ref = h  # freed only by the final collection, after atexit
        x = pygpu.ones(4, device="sim:0") + 1
    """,
    "daemon_thread": """
        import threading, time
        import pygpu
        started = threading.Event()
        def work():
            t = pygpu.ones(256, device="sim:0")
            while True:
                t = (t + 1) - 1
                t.sum().item()
                started.set()
        threading.Thread(target=work, daemon=True).start()
        started.wait(30)
        time.sleep(0.05)
        print("exiting")
    """,
    "first_use_after_shutdown": """
        import atexit
        def late():
            import pygpu
            print("late", (pygpu.ones(3, device="sim:1") * 5).tolist())
        atexit.register(late)
        import pygpu
        pygpu.ones(2, device="sim:0") + 1  # sim:1 is never touched before exit
    """,
}


@pytest.mark.parametrize("name", list(SHUTDOWN_CASES))
def test_sim_use_after_shutdown_works_or_raises(name):
    rc, out, err = run_child(SHUTDOWN_CASES[name])
    assert rc == 0, f"child died with {rc}:\n{out}\n{err[-3000:]}"
    assert "Sanitizer" not in err and "Fatal Python error" not in err, err[-3000:]
    if name == "atexit_before_import":
        assert "late [2.0, 2.0, 2.0, 2.0] 12.0" in out and "copied [1.0, 1.0, 1.0, 1.0]" in out
    elif name == "del_during_finalisation":
        assert "del [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]" in out or "del raised" in out, out
    elif name == "daemon_thread":
        assert "exiting" in out
    else:
        assert "late [5.0, 5.0, 5.0]" in out
