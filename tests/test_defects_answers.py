# test_defects_answers.py - regression tests for the hangs and silent wrong
# answers of issue 7 §3: each once gave a wrong value or blocked forever, and
# must now give NumPy's answer or raise an exception that names the problem.
import ctypes
import math

import numpy as np
import pytest

import pygpu

from _helpers import to_device, to_numpy

NAN = float("nan")


# ---- sim.configure refuses values that hang or mean something else ------------------------

@pytest.mark.parametrize("kwargs", [
    {"latency_us": NAN}, {"latency_us": math.inf}, {"latency_us": -1.0},
    {"h2d_gbps": NAN}, {"h2d_gbps": math.inf}, {"d2h_gbps": -math.inf}, {"d2h_gbps": NAN},
], ids=lambda k: f"{next(iter(k))}={next(iter(k.values()))}")
def test_sim_configure_refuses_non_finite(kwargs, link_model_off):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=f"{name} must be a finite number"):
        pygpu.sim.configure(**kwargs)
    assert pygpu.sim.link() == {"latency_us": 0.0, "h2d_gbps": 0.0, "d2h_gbps": 0.0}
    # the next transfer still completes
    assert pygpu.ones(4).to("sim:0").cpu().tolist() == [1.0] * 4


# ---- inject_fault rejects names no op has -------------------------------------------------

@pytest.mark.parametrize("name", ["frobnicate", "", "Add", "mean"])
def test_inject_fault_rejects_unknown_op(name):
    with pytest.raises(ValueError, match="unknown op name") as info:
        pygpu.sim.inject_fault(name)
    assert "matmul" in str(info.value) and "add" in str(info.value)  # the list of valid names


def test_inject_fault_known_op_still_fires():
    buf = pygpu.zeros(8, device="sim:0")
    pygpu.sim.inject_fault("multiply")
    bad = buf * 2
    with pytest.raises(pygpu.AsyncOpError):
        bad.tolist()
    pygpu.synchronize("sim:0")  # delivered once, to tolist() (issue 20): the device is clean


# ---- axes are checked in 64 bits ----------------------------------------------------------

AXIS_CASES = [
    ("sum", lambda t: t.sum(axis=2**32), "4294967296"),
    ("sum_neg", lambda t: t.sum(axis=-(2**32)), "-4294967296"),
    ("sum_tuple", lambda t: t.sum(axis=(0, 2**32 + 1)), "4294967297"),
    ("max", lambda t: t.max(axis=2**63 - 1), "9223372036854775807"),
    ("min", lambda t: t.min(axis=2**33), "8589934592"),
    ("argmax", lambda t: t.argmax(axis=2**32), "4294967296"),
    ("mean", lambda t: t.mean(axis=2**32 + 1), "4294967297"),
    ("fn_sum", lambda t: pygpu.sum(t, axis=2**32), "4294967296"),
    ("transpose", lambda t: t.transpose(2**32 + 1, 2**32), "4294967297"),
    ("transpose_tuple", lambda t: t.transpose((0, 2**32)), "4294967296"),
    ("sum_small", lambda t: t.sum(axis=2), "2"),
    ("transpose_small", lambda t: t.transpose(0, 2), "2"),
]


@pytest.mark.parametrize("fn,number", [c[1:] for c in AXIS_CASES], ids=[c[0] for c in AXIS_CASES])
def test_axis_out_of_bounds_is_an_axis_error(device, fn, number):
    t = to_device(np.arange(6.0).reshape(2, 3), device)
    with pytest.raises(pygpu.AxisError) as info:
        fn(t)
    assert f"axis {number} is out of bounds for array of dimension 2" in str(info.value)
    assert isinstance(info.value, IndexError) and isinstance(info.value, ValueError)


# ---- relu / maximum / minimum propagate NaN ---------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_keeps_nan(device, dtype):
    a = np.array([NAN, -1.0, 0.0, 2.5, -NAN], dtype=dtype)
    got = to_numpy(pygpu.relu(to_device(a, device)))
    np.testing.assert_array_equal(got, np.maximum(a, 0))
    got = to_numpy(to_device(a, device).relu())
    np.testing.assert_array_equal(got, np.maximum(a, 0))


@pytest.mark.parametrize("fn", ["maximum", "minimum"])
def test_maximum_minimum_propagate_nan(device, fn):
    a = np.array([NAN, 1.0, NAN, -2.0, 3.0], dtype=np.float32)
    b = np.array([0.0, NAN, NAN, 5.0, -3.0], dtype=np.float32)
    got = to_numpy(getattr(pygpu, fn)(to_device(a, device), to_device(b, device)))
    np.testing.assert_array_equal(got, getattr(np, fn)(a, b))
    got = to_numpy(getattr(pygpu, fn)(to_device(a, device), 0.0))
    np.testing.assert_array_equal(got, getattr(np, fn)(a, np.float32(0)))


# ---- a float stored into an int64 tensor must fit -----------------------------------------

INT_STORES = [
    ("setitem_index", lambda t, v: t.__setitem__(0, v)),
    ("setitem_slice", lambda t, v: t.__setitem__(slice(None), v)),
    ("setitem_empty_slice", lambda t, v: t.__setitem__(slice(0, 0), v)),
    ("full", lambda t, v: pygpu.full((3,), v, dtype=pygpu.int64, device=t.device)),
]


@pytest.mark.parametrize("value", [1e300, -1e300, NAN, math.inf, -math.inf, 2.0**63, -(2.0**64)])
@pytest.mark.parametrize("store", [s[1] for s in INT_STORES], ids=[s[0] for s in INT_STORES])
def test_out_of_range_float_into_int64_raises(device, store, value):
    t = pygpu.zeros(3, dtype=pygpu.int64, device=device)
    with pytest.raises(OverflowError, match="int64") as info:
        store(t, value)
    assert "does not fit" in str(info.value)
    assert t.tolist() == [0, 0, 0]


@pytest.mark.parametrize("value", [1.9, -2.5, 2.0**62, -(2.0**63)])
def test_in_range_float_into_int64_truncates_like_numpy(device, value):
    t = pygpu.zeros(2, dtype=pygpu.int64, device=device)
    t[0] = value
    ref = np.zeros(2, dtype=np.int64)
    ref[0] = value
    assert t.tolist() == ref.tolist()


# ---- the buffer protocol honours contiguity requests --------------------------------------

class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.py_object), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int),
                ("ndim", ctypes.c_int), ("format", ctypes.c_char_p),
                ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)), ("suboffsets", ctypes.c_void_p),
                ("internal", ctypes.c_void_p)]


_STRIDES = 0x0010 | 0x0008  # PyBUF_STRIDES (includes PyBUF_ND)
BUF_FLAGS = {"C": 0x0020 | _STRIDES, "F": 0x0040 | _STRIDES, "ANY": 0x0080 | _STRIDES,
             "STRIDES": _STRIDES, "SIMPLE": 0}


def get_buffer(obj, flags):
    """PyObject_GetBuffer with raw flags; returns (ndim, shape) and releases the buffer."""
    get = ctypes.pythonapi.PyObject_GetBuffer
    get.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
    view = _PyBuffer()
    get(obj, ctypes.byref(view), flags)  # ctypes.pythonapi raises the set exception
    try:
        shape = tuple(view.shape[i] for i in range(view.ndim)) if view.shape else None
        return view.ndim, shape
    finally:
        ctypes.pythonapi.PyBuffer_Release(ctypes.byref(view))


BUFFER_CASES = [  # (layout, flags, accepted)
    ("strided", "C", False), ("strided", "F", False), ("strided", "ANY", False),
    ("strided", "SIMPLE", False), ("strided", "STRIDES", True),
    ("transposed", "C", False), ("transposed", "F", True), ("transposed", "ANY", True),
    ("c_order", "C", True), ("c_order", "F", False), ("c_order", "ANY", True),
    ("c_order", "SIMPLE", True),
]


@pytest.mark.parametrize("layout,flags,accepted", BUFFER_CASES,
                         ids=[f"{a}-{b}" for a, b, _ in BUFFER_CASES])
def test_buffer_contiguity_requests(layout, flags, accepted):
    base = pygpu.arange(12.0).reshape(3, 4)
    t = {"strided": base[:, ::2], "transposed": base.T, "c_order": base}[layout]
    if accepted:
        ndim, _ = get_buffer(t, BUF_FLAGS[flags])
        assert ndim == t.ndim
    else:
        with pytest.raises(BufferError, match=r"contiguous\(\)"):
            get_buffer(t, BUF_FLAGS[flags])


def test_memoryview_of_strided_tensor_matches_numpy():
    t = pygpu.arange(12.0).reshape(3, 4)[:, ::2]
    m = memoryview(t)
    assert not m.c_contiguous
    np.testing.assert_array_equal(np.asarray(m), np.arange(12.0, dtype=np.float32).reshape(3, 4)[:, ::2])


# ---- overlapping self-copies go through a temporary ---------------------------------------

OVERLAP_CASES = [
    ("shift_right", (8,), lambda t: (slice(1, None),), lambda t: t[:-1]),
    ("shift_left", (8,), lambda t: (slice(None, -1),), lambda t: t[1:]),
    ("reverse", (8,), lambda t: (slice(None),), lambda t: t[::-1]),
    ("transpose", (4, 4), lambda t: (Ellipsis,), lambda t: t.T),
    ("rows_down", (4, 3), lambda t: (slice(1, None),), lambda t: t[:-1]),
    ("cols_right", (3, 5), lambda t: (slice(None), slice(2, None)), lambda t: t[:, :-2]),
    ("broadcast_row", (3, 4), lambda t: (slice(None),), lambda t: t[1]),
    ("strided", (10,), lambda t: (slice(1, 10, 2),), lambda t: t[0:9:2]),
    ("identity", (6,), lambda t: (slice(None),), lambda t: t),
]


@pytest.mark.parametrize("shape,key,src", [c[1:] for c in OVERLAP_CASES],
                         ids=[c[0] for c in OVERLAP_CASES])
@pytest.mark.parametrize("how", ["setitem", "copy_"])
def test_overlapping_self_copy_matches_numpy(device, shape, key, src, how):
    ref = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = to_device(ref, device)
    k = key(ref)
    if how == "setitem":
        t[k] = src(t)
    else:
        t[k].copy_(src(t))
    ref[k] = src(ref)
    np.testing.assert_array_equal(to_numpy(t), ref)


def test_overlapping_copy_with_cast_matches_numpy(device):
    ref = np.arange(8, dtype=np.int64)
    t = to_device(ref, device)
    t[1:] = t[:-1].astype(pygpu.float64)  # not the same storage: no temporary needed
    t[2:] = t[:-2]
    ref[1:] = ref[:-1].astype(np.float64)
    ref[2:] = ref[:-2]
    assert to_numpy(t).tolist() == ref.tolist()


# ---- a write that replaces every byte clears a recorded async failure ---------------------

def _failed_buffer(n=8):
    buf = pygpu.zeros(n, device="sim:0")
    pygpu.sim.inject_fault("add")
    buf[:] = buf + 1
    with pytest.raises(pygpu.AsyncOpError):
        pygpu.synchronize("sim:0")
    return buf


@pytest.mark.parametrize("write", [
    lambda b: b.__setitem__(slice(None), 7.0),
    lambda b: b.__setitem__(Ellipsis, pygpu.full((8,), 7.0, device="sim:0")),
    lambda b: b.copy_(pygpu.full((8,), 7.0)),
    lambda b: b.copy_(pygpu.full((8,), 7.0).pin_memory(), non_blocking=True),
    lambda b: b[::-1].copy_(pygpu.full((8,), 7.0, device="sim:0")),
], ids=["fill", "copy_same_device", "copy_from_host", "copy_from_pinned_async", "reversed_view"])
def test_full_overwrite_clears_async_error(write):
    buf = _failed_buffer()
    with pytest.raises(pygpu.AsyncOpError, match="add"):
        buf.tolist()
    write(buf)
    assert buf.tolist() == [7.0] * 8
    assert (buf + 1).tolist() == [8.0] * 8


def test_partial_overwrite_keeps_async_error():
    buf = _failed_buffer()
    buf[:4] = 7.0  # the other half is still the failed op's output
    with pytest.raises(pygpu.AsyncOpError):
        buf.tolist()
    buf[4:] = 1.0  # two partial writes never clear it: the record is per storage
    with pytest.raises(pygpu.AsyncOpError):
        buf.tolist()
    buf[...] = 2.0
    assert buf.tolist() == [2.0] * 8


def test_host_buffer_of_failed_copy_is_cleared_by_overwrite():
    buf = _failed_buffer()
    host = pygpu.zeros(8).pin_memory()
    host.copy_(buf, non_blocking=True)
    with pytest.raises(pygpu.AsyncOpError):
        host.tolist()
    host[:] = 3.0
    assert host.tolist() == [3.0] * 8
