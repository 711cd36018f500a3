# test_view_dtype.py - Tensor.view(dtype) (issue 43) against torch, the oracle, on every
# device: the same bytes as another dtype, a view sharing the storage and its version
# counter. Equal element sizes keep shape and strides; a narrower dtype splits the last axis,
# a wider one merges it (stride 1; size, offset and the other strides divisible), with
# PyTorch's RuntimeError texts where a layout is refused; a 0-d tensor only to an equal size.
# Not differentiable, as PyTorch's view.dtype: the result never requires grad.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

# (source dtype, target dtype) pairs: equal sizes, narrower, wider, across kinds
PAIRS = [("float32", "int32"), ("int32", "float32"), ("float32", "uint8"), ("float32", "int16"),
         ("float64", "float16"), ("int16", "float32"), ("uint8", "int64"), ("bfloat16", "int16"),
         ("float16", "bfloat16"), ("int64", "complex128"), ("float32", "complex64"),
         ("complex64", "float32"), ("uint8", "bool"), ("int8", "uint8"), ("uint8", "float8_e4m3fn"),
         ("float32", "complex32"), ("int16", "complex32"), ("uint8", "bits8"), ("uint8", "uint4"),
         ("int16", "bits16"), ("uint8", "float4_e2m1fn_x2"), ("float32", "uint16")]

# layouts, as functions of a contiguous (4, 6) tensor: some pass the rules, some do not
LAYOUTS = {
    "contiguous": lambda x: x,
    "row_slice": lambda x: x[1:3],
    "col_slice_even": lambda x: x[:, 2:6],
    "col_slice_odd": lambda x: x[:, 1:4],
    "offset_odd": lambda x: x[1:, 1:3],
    "step_rows": lambda x: x[::3, :4],
    "step_cols": lambda x: x[:, ::2],
    "transposed": lambda x: x.t(),
    "flat": lambda x: x.reshape(-1),
    "zero_size": lambda x: x[:, :0],
    "zero_d": lambda x: x[1, 2],
}


def _bytes_source(lib, name, device=None):
    """A (4, 6) tensor of `name` with distinct, finite bytes: uint8 codes viewed and cast."""
    size = getattr(torch, name).itemsize
    codes = (np.arange(24 * size, dtype=np.uint8) * 37 % 61).astype(np.uint8)  # finite floats
    t = torch.from_numpy(codes).view(getattr(torch, name)).reshape(4, 6)
    if lib is torch:
        return t
    return pygpu.from_numpy(codes.copy()).to(device).view(getattr(pygpu, name)).reshape(4, 6)


def _layout(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


def _outcome(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 - the type is compared with torch's
        return ("raise", e)


@pytest.mark.parametrize("src,dst", PAIRS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_view_dtype_is_torchs(device, src, dst, layout):
    x_t = LAYOUTS[layout](_bytes_source(torch, src))
    x_p = LAYOUTS[layout](_bytes_source(pygpu, src, device))
    assert _layout(x_p) == _layout(x_t)
    want = _outcome(lambda: x_t.view(getattr(torch, dst)))
    got = _outcome(lambda: x_p.view(getattr(pygpu, dst)))
    if want[0] == "raise":
        assert got[0] == "raise", (got, want)
        assert type(got[1]) is type(want[1]) or isinstance(got[1], type(want[1])), got[1]
        assert str(got[1]) == str(want[1])
        return
    assert got[0] == "ok", got[1]
    r_t, r_p = want[1], got[1]
    assert str(r_p.dtype) == str(r_t.dtype) and r_p.device == x_p.device
    assert _layout(r_p) == _layout(r_t)
    # the same bytes: both viewed back as their own source dtype's bytes, then as uint8
    back_t = r_t.view(getattr(torch, src))
    back_p = r_p.view(getattr(pygpu, src))
    assert _layout(back_p) == _layout(back_t)
    if back_t.numel() and back_t.dim():
        want_bytes = back_t.contiguous().view(torch.uint8).numpy()
        got_bytes = back_p.contiguous().view(pygpu.uint8).cpu().numpy()
        np.testing.assert_array_equal(got_bytes, want_bytes)


@pytest.mark.parametrize("dst", ["int32", "uint8", "float64", "float16"])
def test_values_are_the_bytes_reinterpreted(device, dst):
    a = np.array([[1.5, -2.0, 3.25, 1e-3], [7.0, 0.0, -0.5, 2.0]], dtype=np.float32)
    got = pygpu.tensor(a, device=device).view(getattr(pygpu, dst)).cpu().numpy()
    want = torch.from_numpy(a).view(getattr(torch, dst)).numpy()
    np.testing.assert_array_equal(got, want)


def test_shares_storage_and_version_counter(device):
    a = pygpu.ones(4, device=device)
    b = a.view(pygpu.int32)
    b.add_(1)  # 0x3f800001: the next float32 above 1
    assert a._version == b._version == 1
    np.testing.assert_array_equal(a.cpu().numpy(), np.full(4, np.nextafter(np.float32(1), 2)))
    a.zero_()
    assert b._version == 2 and b.cpu().tolist() == [0, 0, 0, 0]
    n = a.view(pygpu.int16)  # narrower: writes land in the right halves
    n[1] = 0x3f80  # float32's high half (little-endian) of element 0
    assert a.cpu().tolist() == [1.0, 0.0, 0.0, 0.0]


def test_not_differentiable_as_torch(device):
    for lib, dev in ((torch, None), (pygpu, device)):
        x = lib.ones(4, requires_grad=True) if lib is torch else \
            pygpu.ones(4, device=dev, requires_grad=True)
        for dt in ("int32", "float32", "float16"):
            v = x.view(getattr(lib, dt))
            assert not v.requires_grad and v.grad_fn is None, (lib, dt)
        y = x * 2
        assert not y.view(lib.float32).requires_grad
        (x * 3).sum().backward()  # the graph is untouched by the views
        assert x.grad.tolist() == [3.0] * 4


def test_same_dtype_is_a_view(device):
    a = pygpu.arange(6, device=device).reshape(2, 3)
    b = a.view(pygpu.int64)
    assert b.shape == a.shape and b.stride() == a.stride()
    b[0, 0] = 9
    assert a[0, 0].item() == 9


@pytest.mark.parametrize("args,kwargs", [(("int32", 2), {}), ((), {"dtype": "int32"}),
                                         (("int32",), {}), ((pygpu.int32, 2), {})])
def test_bad_arguments_raise_typeerror(args, kwargs):
    x = pygpu.ones(2)
    with pytest.raises(TypeError, match="view\\(\\) received an invalid combination"):
        x.view(*args, **kwargs)


def test_keyword_dtype():
    x = pygpu.ones(2)
    assert x.view(dtype=pygpu.int32).tolist() == torch.ones(2).view(dtype=torch.int32).tolist()


@pytest.mark.parametrize("dtype,nbytes", [("int16", 16), ("float64", 16), ("int16", 3)])
def test_set_to_an_untyped_storage_reads_its_bytes_as_the_dtype(dtype, nbytes):
    """Tensor.set_(untyped_storage): the storage's bytes as self's dtype, as torch's (a
    trailing part element dropped)."""
    src_t = torch.arange(nbytes, dtype=torch.uint8)
    src_p = pygpu.arange(nbytes, dtype=pygpu.uint8)
    want = torch.empty(0, dtype=getattr(torch, dtype)).set_(src_t.untyped_storage())
    got = pygpu.empty(0, dtype=getattr(pygpu, dtype)).set_(src_p.untyped_storage())
    assert tuple(got.shape) == tuple(want.shape) and got.tolist() == want.tolist()
