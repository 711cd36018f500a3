# test_bare_dtypes.py - PyTorch's "bare" dtypes (issue 43): uint16, uint32, uint64 and the
# float8 family (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
# float8_e8m0fnu), rows of csrc/core/pg_dtype.h's table, against torch, the oracle:
#   - casts to and from every dtype, bit for bit (float8: every one of the 256 codes, the
#     midpoints between neighbouring codes (ties round to even), values past the largest,
#     infinities and NaNs, from float32, float64, the halves and the integers);
#   - creation (tensor, empty/zeros/ones/full, *_like), copy_, indexing, cat, printing,
#     tolist/item, numpy() (ml_dtypes' arrays for float8) and back;
#   - torch.save/torch.load both ways and safetensors both ways, where the library has a code;
#   - the ops PyTorch runs on uint16/32/64 (mul, ==, !=, &, |, ^, true division, the float
#     functions, sum/prod/cumsum into int64, sort; every other op: tests/test_bare_uint_ops.py);
#   - float8's op table (FP8_OPS): each op on each of the five formats runs where torch's
#     does, with its bits (float32, rounded back once: csrc/core/pg_fp8_ops.h), and raises
#     NotImplementedError where torch's does.
# Promotion, finfo/iinfo and the dtype attributes are tests/test_type_promotion.py's.
import io
import os

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

UINTS = ("uint16", "uint32", "uint64")
FP8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
# every dtype a cast reaches (the shell dtypes, which PyTorch casts to nothing, and complex32:
# tests/test_shell_dtypes.py)
EVERY = [d.name for d in pygpu._dtype.ALL if not d._is_shell and d.name != "complex32"]


def _bits(x):
    """The bytes of a pygpu or torch tensor's elements, as a uint8 array."""
    if isinstance(x, pygpu.Tensor):
        return np.ascontiguousarray(x.cpu().numpy()).view(np.uint8)
    return x.contiguous().view(torch.uint8).numpy() if x.dtype != torch.bool else \
        x.numpy().view(np.uint8)


def _both(values, name, device="cpu"):
    """(the pygpu tensor, the torch tensor) of float64 values cast to `name` (complex: real)."""
    arr = np.asarray(values, dtype=np.float64)
    t = torch.from_numpy(arr).to(getattr(torch, name))
    p = pygpu.tensor(arr, device=device).to(getattr(pygpu, name))
    return p, t


def _fp8_codes(name):
    """Every code of a float8 dtype, as a tensor of it (pygpu's and torch's)."""
    codes = np.arange(256, dtype=np.uint8)
    p = pygpu.tensor(codes.view(getattr(ml_dtypes, name)))
    return p, torch.from_numpy(codes).view(getattr(torch, name))


def _fp8_probe_values(name):
    """Values that test a float8 format's rounding: every code's value, the midpoints between
    neighbours and a little either side (ties to even), past the largest, tiny, inf, NaN."""
    with np.errstate(invalid="ignore"):
        vals = _fp8_codes(name)[1].float().numpy().astype(np.float64)
    finite = np.unique(vals[np.isfinite(vals)])
    mids = (finite[1:] + finite[:-1]) / 2
    rng = np.random.default_rng(43)
    out = np.concatenate([finite, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                          -mids, finite * 1.0001, rng.standard_normal(300) * 100,
                          rng.standard_normal(100) * 1e-3,
                          [0.0, -0.0, 1e30, -1e30, 1e-30, -1e-30, 1e300, np.inf, -np.inf, np.nan,
                           -np.nan, 2.0**-127, 2.0**-128, 2.0**127, 2.0**128, 3e38, 6e38]])
    return out


@pytest.mark.parametrize("name", FP8)
def test_float8_decodes_every_code_as_torch(name):
    p, t = _fp8_codes(name)
    np.testing.assert_array_equal(p.to(pygpu.float32).numpy(), t.float().numpy())
    np.testing.assert_array_equal(p.to(pygpu.float64).numpy(), t.double().numpy())
    assert p.tolist() == pytest.approx(t.tolist(), nan_ok=True)


@pytest.mark.parametrize("src", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", FP8)
def test_float8_rounds_as_torch(device, name, src):
    """Round to nearest even through float32, saturating (e4m3fn) or to inf (e5m2) or to the
    one NaN (fnuz); e8m0fnu drops the sign: every probe value, bit for bit, on each device."""
    vals = _fp8_probe_values(name)
    p = pygpu.tensor(vals).to(getattr(pygpu, src))
    # torch's source holds the very bits of pygpu's (the two round a NaN's sign into bfloat16
    # differently; that is the bfloat16 cast's business, not float8's)
    t = torch.from_numpy(_bits(p).copy()).view(getattr(torch, src))
    if device.startswith("cuda"):  # float8 runs on cpu and sim only: casts refused on cuda
        with pytest.raises(RuntimeError, match=name):
            p.to(device).to(getattr(pygpu, name))
        return
    got = p.to(device).to(getattr(pygpu, name))
    want = t.to(getattr(torch, name))
    bad = np.nonzero(_bits(got) != _bits(want))[0]
    assert bad.size == 0, (name, src, vals[bad[:5]], _bits(got)[bad[:5]], _bits(want)[bad[:5]])


@pytest.mark.parametrize("name", FP8)
def test_float8_matches_ml_dtypes_where_torch_and_ml_dtypes_agree(name):
    """ml_dtypes as a second oracle: the same bits wherever it and torch agree (they part only
    at e4m3fn's overflow, which torch saturates and ml_dtypes makes NaN, and e8m0fnu's sign
    and zero)."""
    vals = _fp8_probe_values(name).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        ml = vals.astype(getattr(ml_dtypes, name)).view(np.uint8)
    want = _bits(torch.from_numpy(vals).to(getattr(torch, name)))
    got = _bits(pygpu.tensor(vals).to(getattr(pygpu, name)))
    agree = ml == want
    assert agree.mean() > 0.5  # a real second check, not an empty one
    np.testing.assert_array_equal(got[agree], ml[agree])


def _cast_values(src):
    """Values of dtype `src` that exercise a cast: edges, negatives, fractions, NaN."""
    if src == "bool":
        return [0, 1, 1, 0]
    if src in UINTS or src in ("uint8", "int8", "int16", "int32", "int64"):
        info = np.iinfo(src)
        vals = [0, 1, 2, 7, 100, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
                2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, -1, -2, -128, -32768, -2**31, -2**63]
        return [v for v in vals if info.min <= v <= info.max]
    return [0.0, -0.0, 0.5, 1.5, 2.5, -1.0, -2.5, 100.7, 255.0, 300.0, 65535.0, 70000.0, 1e5,
            3e9, 2**31, 2**32 - 1.0, -2**31, 2**53, 2**63, 1e19, 1e20, np.nan, np.inf, -np.inf]


def _safe_float_to_uint(dst, src, vals):
    """PyTorch's float -> uint32 differs between its scalar and its vectorized loop outside
    [-2**31, 2**32) (undefined in C++): those values are left out of the comparison."""
    if dst == "uint32" and src in ("float32", "float64", "float16", "bfloat16") or (
            dst == "uint32" and src.startswith("float8")):
        return [v for v in vals if -2**31 < v < 2**32]
    return vals


@pytest.mark.parametrize("src", EVERY)
@pytest.mark.parametrize("name", UINTS)
def test_uint_casts_to_and_from_every_dtype_as_torch(device, name, src):
    vals = _cast_values(src)
    if src.startswith("complex"):
        vals = _cast_values("float64")
    if src in FP8:  # (NaN to an unsigned integer: undefined in C++, torch's differs by path)
        vals = [v for v in _fp8_codes(src)[1].float().numpy().astype(np.float64).tolist()
                if not np.isnan(v)]
    vals = _safe_float_to_uint(name, src, vals)
    if name == "uint32" and not (src in UINTS or src in ("bool", "uint8", "int8", "int16", "int32", "int64")):
        vals = [v for v in vals if not np.isnan(v)]  # (vectorized and scalar differ on NaN too)
    # the source tensor, made the same way in both libraries
    if src in UINTS or src in ("uint8", "int8", "int16", "int32", "int64", "bool"):
        arr = np.array(vals, dtype=np.dtype(src if src != "bool" else "bool"))
        t = torch.from_numpy(arr.copy())
        p = pygpu.tensor(arr, device=device)
    else:
        p, t = _both(vals, src, device)
        if src in FP8 and device.startswith("cuda"):
            return
    got, want = p.to(getattr(pygpu, name)), t.to(getattr(torch, name))
    assert got.dtype.name == name and got.device == p.device
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy(), err_msg=f"{src} -> {name}")
    # and back: every element of the uint dtype to the source dtype
    back = _cast_values(name)
    arr = np.array(back, dtype=name)
    want_back = torch.from_numpy(arr.copy()).to(getattr(torch, src))
    if src in FP8 and device.startswith("cuda"):
        return
    got_back = pygpu.tensor(arr, device=device).to(getattr(pygpu, src))
    if src == "bfloat16" or src in FP8:  # NumPy lacks these: compare their float32 values
        np.testing.assert_array_equal(got_back.float().cpu().numpy(), want_back.float().numpy())
    else:
        np.testing.assert_array_equal(got_back.cpu().numpy(), want_back.numpy(),
                                      err_msg=f"{name} -> {src}")


@pytest.mark.parametrize("src", [n for n in EVERY if not n.startswith("float8")])
@pytest.mark.parametrize("name", FP8)
def test_float8_casts_from_every_dtype_as_torch(name, src):
    vals = _cast_values(src) if not src.startswith("complex") else _cast_values("float64")
    if src in UINTS or src in ("uint8", "int8", "int16", "int32", "int64", "bool"):
        arr = np.array(vals, dtype=np.dtype(src))
        t, p = torch.from_numpy(arr.copy()), pygpu.tensor(arr)
    else:
        p, t = _both(vals, src)
    np.testing.assert_array_equal(_bits(p.to(getattr(pygpu, name))),
                                  _bits(t.to(getattr(torch, name))), err_msg=f"{src} -> {name}")
    # and every float8 code back to the source dtype (ints: truncation of the float value)
    codes_p, codes_t = _fp8_codes(name)
    if src in UINTS or src in ("uint8", "int8", "int16", "int32", "int64"):
        keep = np.isfinite(codes_t.float().numpy())
        if src in ("uint32",):  # (torch's float -> uint32 out of range: see above)
            keep &= np.abs(codes_t.float().numpy()) < 2**31
        keep_t = torch.from_numpy(keep)
        codes_t, codes_p = codes_t[keep_t], codes_p[pygpu.tensor(keep)]
    got = codes_p.to(getattr(pygpu, src))
    want = codes_t.to(getattr(torch, src))
    if src == "bfloat16":
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    else:
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"{name} -> {src}")


@pytest.mark.parametrize("name", UINTS + FP8)
def test_creation_copy_indexing_and_printing_as_torch(device, name):
    if name in FP8 and device.startswith("cuda"):
        pytest.skip("float8 runs on cpu and sim (docs/tensors.md)")
    dp, dt = getattr(pygpu, name), getattr(torch, name)
    vals = [1, 2, 3, 250] if name in UINTS else [1.5, -2.0, 0.25, 3.0]
    p = pygpu.tensor(vals, dtype=dp, device=device)
    t = torch.tensor(vals, dtype=dt)
    assert p.dtype is dp and p.dtype == dt.__str__().replace("torch.", "")
    assert repr(p.cpu()) == repr(t)
    assert p.tolist() == t.tolist() and p[1].item() == t[1].item()
    assert p.type() == t.type() if device == "cpu" else True
    for make in ("zeros", "ones", "empty"):
        x = getattr(pygpu, make)(2, 3, dtype=dp, device=device)
        assert x.dtype is dp and x.shape == (2, 3)
    np.testing.assert_array_equal(_bits(pygpu.full((3,), 3.3 if name in FP8 else 7, dtype=dp,
                                                   device=device)),
                                  _bits(torch.full((3,), 3.3 if name in FP8 else 7, dtype=dt)))
    np.testing.assert_array_equal(_bits(pygpu.ones_like(p)), _bits(torch.ones_like(t)))
    np.testing.assert_array_equal(_bits(p[pygpu.tensor([3, 0], device=device)]),
                                  _bits(t[torch.tensor([3, 0])]))
    np.testing.assert_array_equal(_bits(pygpu.cat([p, p[:2]])), _bits(torch.cat([t, t[:2]])))
    y = pygpu.zeros(4, dtype=dp, device=device)
    y.copy_(p)
    y[0] = p[3]
    w = torch.zeros(4, dtype=dt)
    w.copy_(t)
    w[0] = t[3]
    np.testing.assert_array_equal(_bits(y), _bits(w))
    np.testing.assert_array_equal(_bits(p.reshape(2, 2).t().contiguous()),
                                  _bits(t.reshape(2, 2).t().contiguous()))


def test_uint64_holds_its_whole_range():
    big = [2**64 - 1, 2**63, 2**53 + 1, 12345678901234567]
    p, t = pygpu.tensor(big, dtype=pygpu.uint64), torch.tensor(big, dtype=torch.uint64)
    assert p.tolist() == t.tolist() == big and repr(p) == repr(t)
    np.testing.assert_array_equal(p.to(pygpu.float32).numpy(), t.float().numpy())
    np.testing.assert_array_equal(p.to(pygpu.float64).numpy(), t.double().numpy())
    np.testing.assert_array_equal(p.to(pygpu.int64).numpy(), t.long().numpy())
    assert pygpu.full((2,), 2**64 - 1, dtype=pygpu.uint64).tolist() == [2**64 - 1] * 2
    with pytest.raises(OverflowError):  # torch: "can't convert negative int to unsigned"
        pygpu.tensor([-1], dtype=pygpu.uint64)
    with pytest.raises(OverflowError):
        pygpu.tensor([70000], dtype=pygpu.uint16)


@pytest.mark.parametrize("name", UINTS + FP8)
def test_numpy_both_ways(name):
    p, t = _both([1, 2, 3, 4], name)
    arr = p.numpy()
    want = t.numpy() if name in UINTS else t.view(torch.uint8).numpy().view(getattr(ml_dtypes, name))
    assert arr.dtype == want.dtype and arr.tobytes() == want.tobytes()
    back = pygpu.tensor(arr)
    assert back.dtype is getattr(pygpu, name) and _bits(back).tobytes() == arr.tobytes()
    assert pygpu.from_numpy(arr).dtype is getattr(pygpu, name)


@pytest.mark.parametrize("name", UINTS + FP8)
def test_torch_save_and_load_both_ways(tmp_path, name):
    vals = [1, 2, 300, 65535] if name in UINTS else [1.5, -2.0, 0.25, 448.0]
    t = torch.tensor(vals, dtype=torch.float64).to(getattr(torch, name))
    p = pygpu.tensor(vals, dtype=pygpu.float64).to(getattr(pygpu, name))
    b = io.BytesIO()
    torch.save({"x": t, "y": t[1:]}, b)
    b.seek(0)
    got = pygpu.load(b)
    assert got["x"].dtype.name == name and _bits(got["x"]).tobytes() == _bits(t).tobytes()
    assert _bits(got["y"]).tobytes() == _bits(t[1:]).tobytes()
    b = io.BytesIO()
    pygpu.save({"x": p}, b)
    b.seek(0)
    back = torch.load(b)["x"]
    assert back.dtype == t.dtype and _bits(back).tobytes() == _bits(t).tobytes()
    from safetensors.torch import load_file, save_file
    path = os.path.join(tmp_path, "m.safetensors")
    if name == "float8_e8m0fnu":  # the library has F8_E8M0; safetensors.torch has no mapping
        pygpu.save({"x": p}, path)
        assert _bits(pygpu.load(path)["x"]).tobytes() == _bits(t).tobytes()
        return
    save_file({"x": t}, path)
    assert _bits(pygpu.load(path)["x"]).tobytes() == _bits(t).tobytes()
    pygpu.save({"x": p}, path)
    back = load_file(path)["x"]
    assert back.dtype == t.dtype and _bits(back).tobytes() == _bits(t).tobytes()


@pytest.mark.parametrize("name", UINTS)
def test_the_ops_torch_runs_on_uint16_to_64(device, name):
    """mul, ==, !=, &, |, ^ in the dtype, true division and float functions in float32,
    sum/prod/cumsum into int64, sort: torch's values and dtypes."""
    info = np.iinfo(name)
    a = np.array([0, 1, 2, 3, 100, 255, info.max, info.max - 1, 7, 7], dtype=name)
    b = np.array([1, 2, 3, 4, 5, 6, 7, 8, 7, 0], dtype=name)
    pa, pb = pygpu.tensor(a, device=device), pygpu.tensor(b, device=device)
    ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    cases = [("mul", lambda x, y: x * y), ("eq", lambda x, y: x == y), ("ne", lambda x, y: x != y),
             ("and", lambda x, y: x & y), ("or", lambda x, y: x | y), ("xor", lambda x, y: x ^ y),
             ("div", lambda x, y: x[:9] / y[:9]), ("sqrt", lambda x, y: x.sqrt()),
             ("sum", lambda x, y: x[:6].sum()), ("prod", lambda x, y: y[:8].prod()),
             ("cumsum", lambda x, y: x[:6].cumsum(0)), ("floor", lambda x, y: x.floor()),
             ("isnan", lambda x, y: x.isnan()), ("clone", lambda x, y: x.clone())]
    for what, f in cases:
        got, want = f(pa, pb), f(ta, tb)
        assert got.dtype.name == str(want.dtype).replace("torch.", ""), what
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, err_msg=what)
    got, want = pa.sort(stable=True), ta.sort(stable=True)  # uint64 past 2**63 too
    np.testing.assert_array_equal(got.values.cpu().numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.indices.cpu().numpy(), want.indices.numpy())


@pytest.mark.parametrize("name", FP8)
def test_float8_arithmetic_raises_not_implemented_as_torch(device, name):
    if device.startswith("cuda"):
        pytest.skip("float8 runs on cpu and sim")
    p, t = _both([1.0, 2.0], name, device)
    for f in (lambda x: x + x, lambda x: x - 1, lambda x: x.exp(), lambda x: x.sum(),
              lambda x: x.neg(), lambda x: x * 2.5):
        with pytest.raises(NotImplementedError):
            f(t)
        with pytest.raises(NotImplementedError, match=str(t.dtype).split(".")[1].capitalize()[:6]):
            f(p)
    for other in ("float32", "int8", "bool"):  # promotion: torch's RuntimeError, its words
        o_t, o_p = torch.ones(2, dtype=getattr(torch, other)), pygpu.ones(2, dtype=getattr(pygpu, other),
                                                                            device=device)
        with pytest.raises(RuntimeError) as want:
            t + o_t
        with pytest.raises(RuntimeError) as got:
            p + o_p
        assert str(got.value) == str(want.value)


# float8's op table: (name, f(x, y) on two float8 tensors of one format, pygpu's or torch's)
FP8_OPS = [
    ("eq", lambda x, y: x == y), ("ne", lambda x, y: x != y), ("mul", lambda x, y: x * y),
    ("mul_", lambda x, y: x.clone().mul_(y)), ("abs", lambda x, y: x.abs()),
    ("isnan", lambda x, y: x.isnan()), ("isinf", lambda x, y: x.isinf()),
    ("isfinite", lambda x, y: x.isfinite()),
    ("eq_number", lambda x, y: x == 0.3), ("ne_number", lambda x, y: x != 1000.0),
    ("eq_0d", lambda x, y: x == y[0]),
    ("mm", lambda x, y: x[:16].view(4, 4) @ y[:16].view(4, 4)),
    ("matmul_3d_2d", lambda x, y: x[:16].view(2, 2, 4) @ y[:16].view(4, 4)),
    ("matmul_1d_2d", lambda x, y: x[:4] @ y[:16].view(4, 4)),
    ("where", lambda x, y: _mod(x).where(x == y, x, y)),
    ("cat", lambda x, y: _mod(x).cat([x, y])),
    # what torch refuses (its words: "mul_cpu_reduced_float", "bmm", "add_stub", ...)
    ("mul_number", lambda x, y: x * 2.0), ("mul_0d", lambda x, y: x * y[0]),
    ("mv", lambda x, y: x[:16].view(4, 4) @ y[:4]), ("dot", lambda x, y: x[:4] @ y[:4]),
    ("bmm", lambda x, y: x[:16].view(2, 2, 4) @ y[:16].view(2, 4, 2)),
    ("add", lambda x, y: x + y), ("sub", lambda x, y: x - 1), ("div", lambda x, y: x / y),
    ("neg", lambda x, y: -x), ("lt", lambda x, y: x < y), ("exp", lambda x, y: x.exp()),
    ("sum", lambda x, y: x.sum()), ("max", lambda x, y: x.max()), ("sign", lambda x, y: x.sign()),
]


def _mod(x):
    return pygpu if isinstance(x, pygpu.Tensor) else torch


def _fp8_operands(name, device):
    """Two float8 tensors over the format's range: every 16th code, NaN, the largest, zero."""
    codes = np.arange(256, dtype=np.uint8)
    x = np.concatenate([codes[::7], codes[3::11]])[:40]
    y = np.concatenate([codes[5::9], codes[::13]])[:40]
    ml = getattr(ml_dtypes, name)
    px, py = (pygpu.tensor(v.view(ml), device=device) for v in (x, y))
    tx, ty = (torch.from_numpy(v.copy()).view(getattr(torch, name)) for v in (x, y))
    return px, py, tx, ty


@pytest.mark.parametrize("op", [row[0] for row in FP8_OPS])
@pytest.mark.parametrize("name", FP8)
def test_float8_op_table_as_torch(device, name, op):
    """Each op runs on a float8 format where torch's runs it, with torch's bits (NaNs
    compared as NaN), and raises NotImplementedError, naming the format, where torch's does."""
    if device.startswith("cuda"):
        pytest.skip("float8 runs on cpu and sim")
    f = next(row[1] for row in FP8_OPS if row[0] == op)
    px, py, tx, ty = _fp8_operands(name, device)
    legacy = str(tx.dtype).split(".")[1].capitalize()  # c10's name: Float8_e4m3fn
    try:
        want = f(tx, ty)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError) as got:
            f(px, py)
        assert str(got.value).endswith(f"not implemented for '{legacy}'"), (str(got.value), str(e))
        return
    got = f(px, py)
    assert got.dtype.name == str(want.dtype).replace("torch.", "")
    assert tuple(got.shape) == tuple(want.shape)
    if want.dtype == torch.bool:
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
        return
    g = got.float().cpu().numpy()
    w = want.float().numpy()
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    np.testing.assert_array_equal(g[~np.isnan(g)], w[~np.isnan(w)])
