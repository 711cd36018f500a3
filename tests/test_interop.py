# test_interop.py - how tensors meet NumPy and other libraries.
#
# The buffer protocol (format, shape, strides, read-only flag), __array__ /
# np.asarray (shares memory for cpu tensors, copies from a device), DLPack in
# both directions with NumPy (zero-copy, strides kept, lifetimes held), and
# repr (NumPy's layout with a `tensor(` prefix, the dtype and the device). A
# buffer request for C, F or any contiguity is refused with a BufferError naming
# contiguous() when the tensor's layout does not satisfy it.
import ctypes
import gc
import weakref

import numpy as np
import pytest

import pygpu

from _helpers import DTYPES, same_device

BUFFER_FORMATS = {"float32": "f", "float64": "d", "int64": ("q", "l"), "bool": "?"}


@pytest.mark.parametrize("dtype", DTYPES)
def test_buffer_protocol_describes_the_tensor(dtype):
    a = np.arange(12).reshape(3, 4).astype(dtype)
    t = pygpu.from_numpy(a)
    m = memoryview(t)
    fmt = BUFFER_FORMATS[dtype]
    assert m.format in (fmt if isinstance(fmt, tuple) else (fmt,))
    assert m.shape == (3, 4)
    assert m.strides == a.strides
    assert m.itemsize == a.itemsize
    assert not m.readonly
    np.testing.assert_array_equal(np.asarray(m), a)


def test_buffer_of_strided_view_has_its_strides():
    a = np.arange(24.0).reshape(4, 6)
    v = pygpu.from_numpy(a)[1:, ::2].T
    m = memoryview(v)
    assert m.shape == (3, 3)
    assert m.strides == a[1:, ::2].T.strides
    np.testing.assert_array_equal(np.asarray(m), a[1:, ::2].T)


def test_buffer_writes_reach_the_tensor():
    t = pygpu.zeros(4, dtype="float64")
    m = memoryview(t)
    m[1] = 5.0
    assert t.numpy()[1] == 5.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_asarray_of_cpu_tensor_shares_memory(dtype):
    t = pygpu.ones(3, 2, dtype=dtype)
    a = np.asarray(t)
    assert a.dtype == np.dtype(dtype) and a.shape == (3, 2)
    assert np.shares_memory(a, t.numpy())
    b = np.array(t)  # np.array copies by default
    assert not np.shares_memory(b, t.numpy())
    np.testing.assert_array_equal(b, np.ones((3, 2), dtype))


def test_asarray_of_device_tensor_copies_values(device):
    t = pygpu.arange(6, device=device).reshape(2, 3)
    a = np.asarray(t)
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3))
    assert a.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), np.arange(6.0).reshape(2, 3))


def test_numpy_ufunc_accepts_tensors():
    t = pygpu.tensor([1.0, 4.0, 9.0])
    np.testing.assert_allclose(np.sqrt(t), [1.0, 2.0, 3.0])


def test_numpy_method_is_zero_copy_on_cpu():
    t = pygpu.arange(5)
    assert np.shares_memory(t.numpy(), t.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_to_numpy_is_zero_copy(dtype):
    a = np.arange(10).astype(dtype)
    t = pygpu.from_numpy(a)
    assert tuple(t.__dlpack_device__()) == (1, 0)  # kDLCPU, device 0
    b = np.from_dlpack(t)
    assert b.dtype == np.dtype(dtype)
    assert np.shares_memory(b, a)
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_from_numpy_is_zero_copy(dtype):
    a = np.arange(10).astype(dtype)
    t = pygpu.from_dlpack(a)
    assert t.dtype.name == dtype and t.shape == (10,) and same_device(t.device, "cpu")
    a[3] = a[4]
    np.testing.assert_array_equal(t.numpy(), a)
    assert np.shares_memory(t.numpy(), a)


def test_dlpack_keeps_strides_both_ways():
    a = np.arange(24.0).reshape(4, 6)[::2, 1::2]
    t = pygpu.from_dlpack(a)
    assert t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), a)
    b = np.from_dlpack(pygpu.from_numpy(np.arange(12.0).reshape(3, 4)).T)
    np.testing.assert_array_equal(b, np.arange(12.0).reshape(3, 4).T)


def test_dlpack_round_trip_between_tensors():
    t = pygpu.arange(6.0).reshape(2, 3)
    u = pygpu.from_dlpack(t)
    np.testing.assert_array_equal(u.numpy(), t.numpy())
    assert np.shares_memory(u.numpy(), t.numpy())


def test_dlpack_export_keeps_memory_alive():
    a = np.arange(50.0)
    alive = weakref.ref(a)
    b = np.from_dlpack(pygpu.from_numpy(a))
    del a
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(b, np.arange(50.0))
    del b
    gc.collect()
    assert alive() is None, "an exported capsule leaked the array"


def test_dlpack_import_keeps_memory_alive():
    a = np.arange(50.0)
    alive = weakref.ref(a)
    t = pygpu.from_dlpack(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(50.0))
    del t
    gc.collect()
    assert alive() is None


def test_dlpack_of_device_tensor_reaches_numpy_or_refuses_clearly():
    t = pygpu.arange(4.0, device="sim")
    try:
        b = np.from_dlpack(t)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        assert "sim" in str(e) or "device" in str(e).lower(), str(e)
        return
    np.testing.assert_array_equal(b, np.arange(4.0, dtype=np.float32))


REPRS = [
    (lambda: pygpu.tensor([1.0, 2.0]), "tensor([1., 2.])"),
    (lambda: pygpu.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
    (lambda: pygpu.tensor([True, False]), "tensor([ True, False])"),
    (lambda: pygpu.tensor([0.5], dtype="float64"), "tensor([0.5000], dtype=torch.float64)"),
    (lambda: pygpu.tensor([1.0, 2.0], device="sim"), "tensor([1., 2.], device='sim:0')"),
    (lambda: pygpu.tensor([1.0], device="sim:1"), "tensor([1.], device='sim:1')"),
    (lambda: pygpu.zeros(0), "tensor([])"),
]


@pytest.mark.parametrize("make,expected", REPRS, ids=[r[1] for r in REPRS])
def test_repr_exact(make, expected):
    assert repr(make()) == expected


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3), (2, 2, 2), (), (1,)], ids=str)
def test_repr_is_pytorchs(dtype, shape, device):
    """repr prints as torch's does (torch is the oracle), the device shown after the values
    as torch shows a non-cpu device."""
    torch = pytest.importorskip("torch")
    a = np.asarray(np.arange(int(np.prod(shape))) - 2).reshape(shape).astype(dtype)
    t = pygpu.tensor(a, device=device)
    expected = repr(torch.tensor(a))
    dev = pygpu.device(device)
    if dev.type != "cpu":
        where = f", device='{dev}'"
        expected = (expected.replace(", dtype=", where + ", dtype=", 1) if ", dtype=" in expected
                    else expected[:-1] + where + ")")
    assert repr(t) == expected


def test_str_shows_the_values():
    s = str(pygpu.tensor([1.5, -2.0]))
    assert "1.5" in s and "-2." in s


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
