# test_c_boundary.py - the hot paths stay in C: .to() and small ops call no Python.
#
# Devices and dtypes are parsed in C (csrc/bindings/tensor_object.c:
# pg_parse_device_fast / pg_parse_dtype_fast, tensor_methods.c: parse_to_fast);
# the Python hooks are left for cold paths (repr, NumPy dtypes, "sim" meaning
# the current device, error messages). Counted here with sys.setprofile, not
# timed: a call must run no more Python frames than the NumPy call it mirrors.
import sys

import numpy as np
import pytest

import pygpu
from pygpu import _C, _device


def _python_frames(fn):
    """Python functions entered while fn() runs, fn itself not counted."""
    names = []

    def prof(frame, event, arg):
        if event == "call":
            names.append(f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_code.co_name}")

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return names[1:]  # names[0] is fn


@pytest.fixture(scope="module")
def t():
    x = pygpu.ones(4)
    s = x.to("sim:0")
    _ = (s + s, s.device, x.device)  # first-use work (the Device objects) done
    pygpu.synchronize()
    return x, s


def test_numpy_calls_run_no_python_frame():
    x = np.ones(4)
    assert _python_frames(lambda: np.add(x, x)) == []


@pytest.mark.parametrize("call", [
    "x.to('sim:0')", "x.to('sim:1')", "x.to('cpu')", "x.to('float64')", "x.to(pygpu.float64)",
    "x.to('sim:0', 'float64')", "x.to(device='sim:0', dtype=pygpu.float32)", "x.to(s)",
    "x.to('sim:0', non_blocking=True)", "x.to(s.device)", "x.to(x.device, copy=True)",
    "s.to('cpu')", "s.cpu()", "x.astype('int64')", "s + s", "s * 2.0", "pygpu.add(s, s)", "s.exp()",
    "s.sum()", "s.sum(axis=0)", "pygpu.maximum(s, s)", "s @ s", "s[1:]", "s.reshape(2, 2)",
])
def test_to_and_small_ops_run_no_more_python_than_numpy(t, call):
    x, s = t
    fn = eval("lambda: " + call, {"pygpu": pygpu, "x": x, "s": s})
    frames = _python_frames(fn)
    assert frames == [], f"{call} ran Python: {frames}"


def test_the_cold_forms_still_reach_the_python_hook(t):
    x, _ = t
    assert x.to(np.float64).dtype == pygpu.float64  # a NumPy type: _dtype.to_dtype
    assert str(x.to("sim").device) == "sim:0"  # the current sim device
    assert _python_frames(lambda: x.to(np.float64))  # really the hook: frames ran


@pytest.mark.parametrize("bad,exc,match", [
    ("sim:9", IndexError, "sim:9 does not exist"), ("tpu:0", ValueError, "unknown device type 'tpu'"),
    ("sim:+1", ValueError, "bad device index"), ("cpu:1", ValueError, "single cpu device"),
    ("float128", TypeError, "unsupported dtype 'float128'"),
])
def test_what_c_does_not_parse_gets_the_hooks_message(t, bad, exc, match):
    x, _ = t
    with pytest.raises(exc, match=match):
        x.to(bad)


def test_device_types_come_from_the_c_core():
    types = _C._device_types()
    assert types[0] == "cpu" and set(types) >= {"cpu", "sim", "cuda"}
    assert list(_device._TYPES) == list(types)
    assert [_device._TYPES[n] for n in types] == list(range(len(types)))
    assert pygpu.sim._acc.code == types.index("sim")
    assert pygpu.cuda._acc.code == types.index("cuda")
