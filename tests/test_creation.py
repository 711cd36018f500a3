# test_creation.py - dtypes and every way to make a tensor.
#
# Covers the dtype objects and the forms a dtype argument may take, dtype
# inference in tensor() (the PyTorch rule: Python floats -> float32, ints ->
# int64, bools -> bool; NumPy arrays keep their dtype), tensor() copying vs
# from_numpy() sharing, reading non-contiguous and read-only NumPy inputs,
# zeros/ones/empty/full/arange, rand/randn and manual_seed reproducibility
# (the counter-based generator gives cpu and sim the same numbers).
import numpy as np
import pytest

import pygpu

from _helpers import DTYPES, same_device

DTYPE_FACTS = [  # name, itemsize, is_floating_point
    ("float32", 4, True), ("float64", 8, True), ("int64", 8, False), ("bool", 1, False),
]


@pytest.mark.parametrize("name,itemsize,is_float", DTYPE_FACTS)
def test_dtype_object_attributes(name, itemsize, is_float):
    d = getattr(pygpu, name)
    assert d.name == name
    assert str(d) == f"torch.{name}"  # PyTorch's spelling: print(t.dtype) shows torch.float32
    assert d.itemsize == itemsize
    assert d.is_floating_point is is_float


def test_bool_underscore_alias_is_bool():
    assert pygpu.bool_ == pygpu.bool
    assert str(pygpu.bool_) == "torch.bool"


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("form", ["pygpu", "string", "numpy_type", "numpy_dtype"])
def test_dtype_argument_accepts_every_form(name, form, device):
    arg = {
        "pygpu": getattr(pygpu, name), "string": name,
        "numpy_type": np.dtype(name).type, "numpy_dtype": np.dtype(name),
    }[form]
    for t in (pygpu.zeros(2, 3, dtype=arg, device=device), pygpu.tensor([1, 0], dtype=arg, device=device),
              pygpu.ones(3, device=device).astype(arg), pygpu.ones(3, device=device).to(arg)):
        assert t.dtype.name == name
        assert t.numpy().dtype == np.dtype(name)


@pytest.mark.parametrize("make", [
    lambda: pygpu.tensor(np.zeros(3, np.float16)),
    lambda: pygpu.from_numpy(np.zeros(3, np.float16)),
    lambda: pygpu.zeros(3, dtype="float16"),
    lambda: pygpu.zeros(3, dtype=np.float16),
    lambda: pygpu.ones(3).astype(np.float16),
], ids=["tensor", "from_numpy", "zeros_str", "zeros_np", "astype"])
def test_float16_is_accepted_by_every_spelling(make):
    # float16 is supported (stored as itself, computed in float32)
    t = make()
    assert t.dtype == pygpu.float16 and t.tolist() == [float(v) for v in np.asarray(t).ravel()]
    assert (t + 1).dtype == pygpu.float16


@pytest.mark.parametrize("data,dtype", [
    ([1.0, 2.0], "float32"), (1.5, "float32"), ([1, 2, 3], "int64"), (7, "int64"),
    ([True, False], "bool"), (True, "bool"), ([1, 2.5], "float32"), ([[1, 2], [3, 4]], "int64"),
    ([[0.5], [1.5]], "float32"), ([], "float32"),
])
def test_tensor_infers_dtype_from_python_data(data, dtype, device):
    t = pygpu.tensor(data, device=device)
    assert t.dtype.name == dtype
    assert same_device(t.device, device)
    expected = np.array(data, dtype=dtype)
    assert t.shape == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_of_numpy_array_keeps_its_dtype(dtype, device):
    a = np.arange(6).reshape(2, 3).astype(dtype)
    t = pygpu.tensor(a, device=device)
    assert t.dtype.name == dtype
    np.testing.assert_array_equal(t.numpy(), a)


def test_tensor_explicit_dtype_converts(device):
    t = pygpu.tensor([1.7, -2.2], dtype="int64", device=device)
    assert t.dtype.name == "int64"
    np.testing.assert_array_equal(t.numpy(), np.array([1.7, -2.2]).astype(np.int64))


def test_tensor_copies_its_input():
    a = np.arange(4.0)
    t = pygpu.tensor(a)
    a[0] = 100.0
    assert t.numpy()[0] == 0.0
    assert not np.shares_memory(t.numpy(), a)


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    t = pygpu.from_numpy(a)
    assert t.dtype.name == "float64" and t.shape == (2, 3) and same_device(t.device, "cpu")
    a[1, 2] = -1.0
    assert t.numpy()[1, 2] == -1.0
    t.numpy()[0, 0] = 42.0
    assert a[0, 0] == 42.0
    assert np.shares_memory(t.numpy(), a)


@pytest.mark.parametrize("view", [
    lambda a: a[::2], lambda a: a.T, lambda a: a[:, 1::2], lambda a: a[::-1], lambda a: a[1:, ::3],
], ids=["rows_step", "transpose", "cols_step", "reversed", "offset_and_step"])
def test_non_contiguous_numpy_input_is_read_correctly(view, device):
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    a = view(base)
    t = pygpu.tensor(a, device=device)
    assert t.shape == a.shape
    np.testing.assert_array_equal(t.numpy(), a)
    f = pygpu.from_numpy(a)  # zero-copy: keeps the strides
    assert f.shape == a.shape
    np.testing.assert_array_equal(f.numpy(), a)
    assert np.shares_memory(f.numpy(), base)
    np.testing.assert_array_equal((f + 0).numpy(), a)


def test_from_numpy_non_contiguous_keeps_strides_and_contiguity_flag():
    base = np.arange(12.0).reshape(3, 4)
    f = pygpu.from_numpy(base.T)
    assert not f.is_contiguous()
    assert f.numpy().strides == base.T.strides
    c = f.contiguous()
    assert c.is_contiguous()
    np.testing.assert_array_equal(c.numpy(), base.T)


def test_read_only_numpy_input_gives_read_only_tensor():
    a = np.arange(5.0)
    a.flags.writeable = False
    t = pygpu.from_numpy(a)
    np.testing.assert_array_equal(t.numpy(), a)
    assert not t.numpy().flags.writeable
    assert memoryview(t).readonly
    assert not np.asarray(t).flags.writeable
    np.testing.assert_array_equal((t * 2).numpy(), a * 2)  # still usable as an input
    c = pygpu.tensor(a)  # a copy of read-only data is an ordinary tensor
    np.testing.assert_array_equal(c.numpy(), a)


def test_big_endian_input_is_converted_or_rejected_never_misread():
    a = np.arange(4, dtype=">f4")
    try:
        t = pygpu.tensor(a)
    except (TypeError, ValueError):
        return  # an honest refusal is acceptable
    np.testing.assert_array_equal(t.numpy(), a.astype(np.float32))


@pytest.mark.parametrize("fname,value", [("zeros", 0), ("ones", 1)])
@pytest.mark.parametrize("shape_args", [(2, 3), ((2, 3),), (0,), ((),), (4,)], ids=str)
def test_zeros_ones_shapes_dtype_and_device(fname, value, shape_args, device):
    t = getattr(pygpu, fname)(*shape_args, device=device)
    shape = shape_args[0] if isinstance(shape_args[0], tuple) else shape_args
    assert t.shape == tuple(shape)
    assert t.dtype.name == "float32"
    assert same_device(t.device, device)
    np.testing.assert_array_equal(t.numpy(), np.full(shape, value, np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_has_shape_and_dtype(dtype, device):
    t = pygpu.empty(3, 4, dtype=dtype, device=device)
    assert t.shape == (3, 4) and t.dtype.name == dtype and t.nbytes == 12 * np.dtype(dtype).itemsize
    assert pygpu.empty((2, 2)).dtype == pygpu.float32


@pytest.mark.parametrize("value,dtype,expected_dtype", [
    (1.5, None, "float32"), (7, None, "int64"), (True, None, "bool"),
    (2, "float64", "float64"), (0.0, pygpu.int64, "int64"), (3, np.bool_, "bool"),
])
def test_full(value, dtype, expected_dtype, device):
    t = pygpu.full((2, 3), value, dtype=dtype, device=device)
    assert t.shape == (2, 3) and t.dtype.name == expected_dtype
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value, expected_dtype))


@pytest.mark.parametrize("args,kwargs,expected", [
    ((5,), {}, np.arange(5)),
    ((2, 10, 3), {}, np.arange(2, 10, 3)),
    ((5, 0, -1), {}, np.arange(5, 0, -1)),
    ((0,), {}, np.arange(0)),
    ((3, 3), {}, np.arange(3, 3)),
    ((0, 1, 0.25), {}, np.arange(0, 1, 0.25, dtype=np.float32)),
    ((2.0,), {}, np.arange(2.0, dtype=np.float32)),
    ((1, 2.5), {}, np.arange(1, 2.5, dtype=np.float32)),
    ((4,), {"dtype": "float64"}, np.arange(4, dtype=np.float64)),
    ((0, 3), {"step": 2}, np.arange(0, 3, 2)),
], ids=str)
def test_arange_values_and_inferred_dtype(args, kwargs, expected, device):
    t = pygpu.arange(*args, **kwargs, device=device)
    assert t.dtype.name == expected.dtype.name
    assert t.shape == expected.shape
    np.testing.assert_allclose(t.numpy(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("fname", ["rand", "randn"])
def test_random_shape_dtype_and_seed_reproducibility(fname, device):
    f = getattr(pygpu, fname)
    pygpu.manual_seed(1234)
    x = f(3, 5, device=device).numpy()
    y = f((3, 5), device=device).numpy()
    pygpu.manual_seed(1234)
    x2 = f(3, 5, device=device).numpy()
    y2 = f(3, 5, device=device).numpy()
    assert x.shape == (3, 5) and x.dtype == np.float32
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(x, y), "two draws in a row gave the same numbers"
    pygpu.manual_seed(1235)
    assert not np.array_equal(f(3, 5, device=device).numpy(), x), "seed is ignored"


@pytest.mark.parametrize("fname", ["rand", "randn"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_is_identical_on_cpu_and_sim(fname, dtype):
    f = getattr(pygpu, fname)
    draws = {}
    for dev in ("cpu", "sim:0", "sim:1"):
        pygpu.manual_seed(99)
        draws[dev] = [f(257, dtype=dtype, device=dev).numpy() for _ in range(3)]
    for dev in ("sim:0", "sim:1"):
        for k in range(3):
            np.testing.assert_array_equal(draws[dev][k], draws["cpu"][k], err_msg=f"{dev} draw {k}")
    assert draws["cpu"][0].dtype == np.dtype(dtype)


@pytest.mark.parametrize("fname", ["rand", "randn"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_element_depends_only_on_its_index(fname, dtype, device):
    """Element i is the same whatever the length drawn: the vector kernels must not give
    the elements in a loop's tail (other log/cos code) different values."""
    f = getattr(pygpu, fname)
    draws = []
    for n in (1003, 997, 270, 7):
        pygpu.manual_seed(7)
        draws.append(f(n, dtype=dtype, device=device).numpy())
    for d in draws[1:]:
        np.testing.assert_array_equal(d, draws[0][: d.size])


def test_rand_is_uniform_on_unit_interval(device):
    pygpu.manual_seed(0)
    x = pygpu.rand(100_000, device=device).numpy()
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.005  # ~5 sigma for n = 1e5
    counts, _ = np.histogram(x, bins=10, range=(0, 1))
    assert counts.min() > 9_500 and counts.max() < 10_500


def test_randn_is_standard_normal(device):
    pygpu.manual_seed(0)
    x = pygpu.randn(100_000, dtype="float64", device=device).numpy()
    assert abs(x.mean()) < 0.016  # 5 sigma
    assert abs(x.std() - 1.0) < 0.012
    assert abs((np.abs(x) < 1).mean() - 0.6827) < 0.008
    assert np.isfinite(x).all()


def test_sim_manual_seed_makes_sim_draws_reproducible():
    pygpu.sim.manual_seed(5)
    x = pygpu.rand(64, device="sim").numpy()
    pygpu.sim.manual_seed(5)
    np.testing.assert_array_equal(pygpu.rand(64, device="sim").numpy(), x)
    pygpu.sim.manual_seed_all(6)
    y0 = pygpu.rand(64, device="sim:0").numpy()
    pygpu.sim.manual_seed_all(6)
    np.testing.assert_array_equal(pygpu.rand(64, device="sim:0").numpy(), y0)


@pytest.mark.parametrize("dev_arg", ["string", "device_object"])
def test_device_argument_accepts_string_or_device(dev_arg, device):
    arg = device if dev_arg == "string" else pygpu.device(device)
    for t in (pygpu.zeros(2, device=arg), pygpu.tensor([1.0], device=arg), pygpu.arange(3, device=arg),
              pygpu.rand(2, device=arg), pygpu.full((1,), 2.0, device=arg), pygpu.ones(1).to(arg)):
        assert same_device(t.device, device)


def test_from_file_reads_and_maps_a_file_as_torch(tmp_path):
    import torch
    path = str(tmp_path / "values.bin")
    np.arange(6, dtype=np.float32).tofile(path)
    for shared in (None, False, True):
        ours = pygpu.from_file(path, shared=shared, size=4, dtype=pygpu.float32)
        theirs = torch.from_file(path, shared=shared, size=4, dtype=torch.float32)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    mapped = pygpu.from_file(path, shared=True, size=6, dtype=pygpu.float32)
    mapped.mul_(10.0)  # a shared mapping writes through to the file
    del mapped
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.float32), np.arange(6) * 10.0)
    copied = pygpu.from_file(path, shared=False, size=6, dtype=pygpu.float32)
    copied.zero_()  # a private copy does not
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.float32), np.arange(6) * 10.0)
    fresh = str(tmp_path / "new.bin")
    pygpu.from_file(fresh, shared=True, size=3, dtype=pygpu.int64).fill_(7)
    np.testing.assert_array_equal(np.fromfile(fresh, dtype=np.int64), [7, 7, 7])
    for lib in (pygpu, torch):
        with pytest.raises(RuntimeError, match="is smaller than the required mapping size <40>"):
            lib.from_file(path, size=10)
