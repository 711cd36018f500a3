# test_views.py - views share memory with their base and keep it alive.
#
# A view is a base plus an offset and strides: indexing, .T, .transpose and
# .reshape of a contiguous tensor copy nothing. These tests write through NumPy
# into the array a cpu tensor wraps and check that every view sees it, check
# which operations copy (contiguous() of a strided view, clone()), and check
# lifetimes with weakrefs and sys.getrefcount: from_numpy keeps its array
# alive, views keep their base alive, and dropping everything returns the
# reference count to where it started (no leaked references). Stores through
# indexing: a float that does not fit an int64 tensor raises OverflowError and
# changes nothing; an overlapping self-copy goes through a temporary, as NumPy's.
import gc
import math
import sys
import weakref

import numpy as np
import pytest

import pygpu

from _helpers import to_device, to_numpy

NAN = float("nan")

VIEWS = [  # name, view, the same view of the NumPy array
    ("row", lambda t: t[1]),
    ("neg_row", lambda t: t[-1]),
    ("rows", lambda t: t[1:3]),
    ("step", lambda t: t[::2]),
    ("neg_step", lambda t: t[::-1]),
    ("column", lambda t: t[:, 2]),
    ("ellipsis", lambda t: t[..., 0]),
    ("newaxis", lambda t: t[None]),
    ("T", lambda t: t.T),
    ("transpose", lambda t: t.transpose(1, 0)),
    ("reshape", lambda t: t.reshape(2, -1)),
    ("element", lambda t: t[2, 3]),
    ("view_of_view", lambda t: t.T[1:, ::2][0]),
]


@pytest.mark.parametrize("name,view", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_sees_writes_to_the_numpy_base(name, view):
    a = np.arange(24.0).reshape(4, 6)
    t = pygpu.from_numpy(a)
    v = view(t)
    expected_view = view(a)
    np.testing.assert_array_equal(v.numpy(), expected_view)
    a *= -1.0  # in place: the memory the tensor and the view point into
    np.testing.assert_array_equal(v.numpy(), view(a))
    np.testing.assert_array_equal(t.numpy(), a)
    assert np.shares_memory(v.numpy(), a)


@pytest.mark.parametrize("name,view", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_on_device_has_numpy_values(name, view, device):
    a = np.arange(24.0).reshape(4, 6)
    t = pygpu.tensor(a, device=device)
    v = view(t)
    assert v.shape == view(a).shape
    np.testing.assert_array_equal(v.numpy(), view(a))
    np.testing.assert_array_equal((v * 1.0).numpy(), view(a))  # ops read strided views


def test_write_through_numpy_export_reaches_the_array():
    a = np.zeros(6, np.float32)
    t = pygpu.from_numpy(a)
    t[2:4].numpy()[:] = 7.0
    np.testing.assert_array_equal(a, [0, 0, 7, 7, 0, 0])


def test_contiguous_copies_only_when_needed():
    a = np.arange(12.0).reshape(3, 4)
    t = pygpu.from_numpy(a)
    strided = t.T
    assert not strided.is_contiguous()
    c = strided.contiguous()
    assert c.is_contiguous()
    assert not np.shares_memory(c.numpy(), a)
    np.testing.assert_array_equal(c.numpy(), a.T)
    same = t.contiguous()
    assert np.shares_memory(same.numpy(), a), "contiguous() of a contiguous tensor copied"


def test_clone_never_shares_memory():
    a = np.arange(5.0)
    c = pygpu.from_numpy(a).clone()
    a[:] = 0
    np.testing.assert_array_equal(c.numpy(), np.arange(5.0))


def test_reshape_of_non_contiguous_view_has_right_values():
    a = np.arange(12.0).reshape(3, 4)
    r = pygpu.from_numpy(a).T.reshape(-1)
    np.testing.assert_array_equal(r.numpy(), a.T.reshape(-1))


def test_iteration_yields_views_of_axis_0():
    a = np.arange(6.0).reshape(3, 2)
    rows = list(pygpu.from_numpy(a))
    assert len(rows) == 3
    a[1, 1] = 50.0
    assert rows[1].numpy()[1] == 50.0
    assert [r.shape for r in rows] == [(2,)] * 3


def test_len_is_size_of_axis_0():
    assert len(pygpu.zeros(5, 2)) == 5
    assert len(pygpu.zeros(0, 3)) == 0


def test_from_numpy_keeps_the_array_alive():
    a = np.arange(1000.0)
    alive = weakref.ref(a)
    t = pygpu.from_numpy(a)
    del a
    gc.collect()
    assert alive() is not None, "the tensor let its array die"
    np.testing.assert_array_equal(t.numpy(), np.arange(1000.0))
    del t
    gc.collect()
    assert alive() is None, "the array outlived every tensor: a reference leaked"


def test_view_keeps_its_base_alive():
    a = np.arange(100.0)
    alive = weakref.ref(a)
    t = pygpu.from_numpy(a)
    v = t[10:20:2]
    del a, t
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(v.numpy(), np.arange(10.0, 20.0, 2.0))
    w = v[1:]  # a view of a view
    del v
    gc.collect()
    np.testing.assert_array_equal(w.numpy(), [12.0, 14.0, 16.0, 18.0])
    del w
    gc.collect()
    assert alive() is None


def test_numpy_export_keeps_the_tensor_memory_alive(device):
    t = pygpu.arange(10, device=device)
    out = t[2:5].numpy()
    del t
    gc.collect()
    np.testing.assert_array_equal(out, [2, 3, 4])


def test_device_view_outlives_its_base(device):
    t = pygpu.arange(100, dtype="float32", device=device)
    v = t[::10]
    del t
    gc.collect()
    np.testing.assert_array_equal((v + 0).numpy(), np.arange(0, 100, 10, dtype=np.float32))


def test_refcount_of_array_returns_to_baseline():
    a = np.arange(64.0).reshape(8, 8)
    gc.collect()
    baseline = sys.getrefcount(a)
    for _ in range(100):
        t = pygpu.from_numpy(a)
        views = [t[1], t.T, t[::2, 1:], t.reshape(-1), t[None]]
        exported = [v.numpy() for v in views] + [np.asarray(t), memoryview(t)]
        s = (t + 1.0).sum()
        assert sys.getrefcount(a) > baseline
        del t, views, exported, s
    gc.collect()
    assert sys.getrefcount(a) == baseline


def test_refcount_of_tensor_returns_to_baseline(device):
    t = pygpu.ones(4, 4, device=device)
    gc.collect()
    baseline = sys.getrefcount(t)
    for _ in range(100):
        views = [t[0], t.T, t[::2], t.reshape(16), t[..., None]]
        results = [t + t, t.sum(axis=0), t @ t, t.to("cpu"), t.clone()]
        del views, results
    gc.collect()
    assert sys.getrefcount(t) == baseline


def test_refcount_of_dtype_and_device_objects_is_stable():
    d = pygpu.float32
    dev = pygpu.device("cpu")

    def use(times):
        for _ in range(times):
            t = pygpu.zeros(3, dtype=d, device=dev)
            _ = (t.dtype, t.device, t.astype(d), t.to(dev))
            del t, _
        gc.collect()

    use(1)  # a one-time cache may take a reference; a leak takes one per use
    before = (sys.getrefcount(d), sys.getrefcount(dev))
    use(1000)
    assert (sys.getrefcount(d), sys.getrefcount(dev)) == before


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
