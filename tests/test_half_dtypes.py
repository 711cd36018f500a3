# test_half_dtypes.py - float16 and bfloat16: storage, casts, interop and ops.
#
# They are stored as themselves: created, cast to and from every dtype, moved
# between devices and exchanged with NumPy (float16), DLPack (both) and Python
# (both); ops run on them natively (each element computed in float32 and
# rounded once at the store, no widened temporary: checked through sim's
# memory counters). Conversions are checked bit for bit: float16 against
# NumPy's own float16 (every one of the 65536 patterns, and narrowing from
# float32/float64 including ties and subnormals), bfloat16 against the
# bit-level rule for float32 -> bfloat16 (round to nearest even on the top 16
# bits, NaN made quiet). The op table (test_ops_semantics.py) runs every op on both
# half dtypes against NumPy's float16 and float32 references rounded once.
import numpy as np
import pytest

import pygpu

from _helpers import to_device, to_numpy

# the NumPy references overflow to inf and cast NaN on purpose
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

HALF = [pygpu.float16, pygpu.bfloat16]
ALL_DTYPES = [pygpu.bool, pygpu.int64, pygpu.float32, pygpu.float64, pygpu.float16, pygpu.bfloat16]


def _torch():
    """bfloat16 bit patterns travel through torch's DLPack (NumPy has no bfloat16); torch is a
    cross-check only, never a dependency: these tests skip without it."""
    return pytest.importorskip("torch", reason="bfloat16 bit patterns need torch's DLPack")


def bits_of(t):
    """The raw uint16 bits of a cpu float16 (NumPy) or bfloat16 (DLPack, torch) tensor."""
    if t.dtype is pygpu.float16:
        return t.cpu().numpy().view(np.uint16).copy()
    torch = _torch()
    return torch.from_dlpack(t.cpu()).view(torch.int16).numpy().view(np.uint16).copy()


def from_bits(bits, dtype, device="cpu"):
    """A tensor of `dtype` holding the uint16 patterns `bits`."""
    bits = np.ascontiguousarray(bits, dtype=np.uint16)
    if dtype is pygpu.float16:
        return pygpu.from_numpy(bits.view(np.float16)).to(device)
    torch = _torch()
    tt = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    return pygpu.from_dlpack(tt).to(device)


def bf16_reference(x32):
    """float32 -> bfloat16 bits: round to nearest even on the top half; NaN quiet."""
    b = np.asarray(x32, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x32, dtype=np.float32))
    return np.where(nan, ((b >> 16) | 0x40).astype(np.uint16), rounded)


def interesting_doubles(rng):
    """Normals, subnormals, ties at every scale, limits and specials."""
    parts = [
        rng.standard_normal(4000) * 10.0 ** rng.integers(-9, 6, 4000),
        (rng.integers(0, 1 << 14, 2000) + 0.5) * 2.0 ** rng.integers(-35, 6, 2000),  # f16 ties
        (rng.integers(0, 1 << 11, 2000) * 2 + 1) * 2.0 ** -25,  # ties among f16 subnormals
        np.array([0.0, -0.0, 65504.0, 65519.99, 65520.0, 65536.0, 1e300, -1e300, 2.0 ** -24,
                  2.0 ** -25, 2.0 ** -25 * 1.0000001, 2.0 ** -26, 6.1e-5, 3.3895314e38,
                  3.3961775e38, 1e-40, np.inf, -np.inf, np.nan, -np.nan]),
    ]
    x = np.concatenate(parts)
    return np.concatenate([x, -x])


# ---- conversions, bit for bit -------------------------------------------------------------

def test_every_float16_pattern_widens_like_numpy(device):
    pats = np.arange(1 << 16, dtype=np.uint16)
    t = from_bits(pats, pygpu.float16, device)
    ref = pats.view(np.float16)
    for target in ("float32", "float64"):
        got = to_numpy(t.astype(getattr(pygpu, target)))
        np.testing.assert_array_equal(got, ref.astype(target))
    assert (bits_of(t.clone()) == pats).all()  # a same-dtype copy keeps every bit


@pytest.mark.parametrize("source", ["float64", "float32"])
def test_narrowing_to_float16_matches_numpy_bits(device, source):
    x = interesting_doubles(np.random.default_rng(7)).astype(source)
    got = bits_of(to_device(x, device).astype(pygpu.float16))
    ref = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    assert (got[~nan] == ref[~nan]).all(), np.flatnonzero(got[~nan] != ref[~nan])[:10]
    assert np.isnan(got[nan].view(np.float16)).all()


def test_every_bfloat16_pattern_widens_exactly(device):
    pats = np.arange(1 << 16, dtype=np.uint16)
    t = from_bits(pats, pygpu.bfloat16, device)
    ref = (pats.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(to_numpy(t.astype(pygpu.float32)), ref)
    np.testing.assert_array_equal(to_numpy(t.astype(pygpu.float64)), ref.astype(np.float64))
    assert (bits_of(t.clone()) == pats).all()


def test_narrowing_to_bfloat16_matches_bit_reference(device):
    rng = np.random.default_rng(11)
    x = interesting_doubles(rng).astype(np.float32)
    # every rounding case of the low half: below, at and above the tie, odd and even
    hi = rng.integers(0, 1 << 16, 3000, dtype=np.uint32) << 16
    low = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    x = np.concatenate([x, (hi[:, None] | low[None, :]).ravel().view(np.float32)])
    for source in (np.float32, np.float64):  # float32 values are exact as float64
        got = bits_of(to_device(x.astype(source), device).astype(pygpu.bfloat16))
        ref = bf16_reference(x)
        assert (got == ref).all(), (x[got != ref][:5], got[got != ref][:5], ref[got != ref][:5])


def test_bfloat16_from_float64_is_rounded_once(device):
    # 1 + 2**-8 + 2**-30 is just above a bfloat16 tie: one rounding goes up, while
    # float64 -> float32 -> bfloat16 would first drop 2**-30 and then round to even
    x = np.array([1 + 2.0 ** -8 + 2.0 ** -30, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8])
    got = to_numpy(to_device(x, device).astype(pygpu.bfloat16).astype(pygpu.float64))
    np.testing.assert_array_equal(got, [1 + 2.0 ** -7, 1.0, 1 + 2.0 ** -6])


@pytest.mark.parametrize("dt", HALF, ids=str)
@pytest.mark.parametrize("other", ALL_DTYPES, ids=str)
def test_casts_both_ways_with_every_dtype(device, dt, other):
    vals = np.array([0.0, 1.0, -2.0, 3.5, 100.0, -0.25], dtype=np.float64)
    src = to_device(vals, device).astype(other)
    there = src.astype(dt)
    back = there.astype(other)
    assert there.dtype == dt and back.dtype == other and there.device == src.device
    assert back.tolist() == src.tolist()  # all these values are exact in every dtype


def test_specials_cast_like_numpy(device):
    x = np.array([np.nan, np.inf, -np.inf, 1e6, -1e6, 0.5, -0.0], dtype=np.float64)
    h = to_device(x, device).astype(pygpu.float16)
    ref = x.astype(np.float16)
    np.testing.assert_array_equal(to_numpy(h), ref)
    assert h.astype(pygpu.bool).tolist() == ref.astype(bool).tolist()
    finite = np.isfinite(ref)
    assert np.array(h.astype(pygpu.int64).tolist())[finite].tolist() == ref[finite].astype(np.int64).tolist()


# ---- creation and Python values -----------------------------------------------------------

@pytest.mark.parametrize("dt", HALF, ids=str)
def test_creation_functions(device, dt):
    assert pygpu.empty(4, dtype=dt, device=device).shape == (4,)
    assert pygpu.empty(4, dtype=dt, device=device).dtype == dt
    assert pygpu.zeros(2, 3, dtype=dt, device=device).tolist() == [[0.0] * 3] * 2
    assert pygpu.ones(3, dtype=dt, device=device).tolist() == [1.0] * 3
    assert pygpu.full((2,), -1.5, dtype=dt, device=device).tolist() == [-1.5, -1.5]
    assert pygpu.arange(5, dtype=dt, device=device).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    t = pygpu.tensor([1.0, 0.1, 1e5], dtype=dt, device=device)
    ref = [1.0, 0.0999755859375, float("inf")] if dt is pygpu.float16 else [1.0, 0.10009765625, 99840.0]
    assert t.tolist() == ref
    assert t[1].item() == ref[1] and isinstance(t[1].item(), float)
    assert float(t[0]) == 1.0 and bool(t[0]) is True and int(t[0]) == 1
    assert pygpu.zeros_like(t).dtype == dt


@pytest.mark.parametrize("dt", HALF, ids=str)
def test_assignment_rounds_into_half(device, dt):
    t = pygpu.zeros(4, dtype=dt, device=device)
    t[0] = 2.5
    t[1] = 70000.0
    t[2:] = pygpu.tensor([0.1, -3.0], dtype=pygpu.float64, device=device)
    ref = np.array([2.5, 70000.0, 0.1, -3.0])
    want = ref.astype(np.float16).astype(float).tolist() if dt is pygpu.float16 else \
        (bf16_reference(ref.astype(np.float32)).astype(np.uint32) << 16).view(np.float32).astype(float).tolist()
    assert t.tolist() == want


# ---- NumPy, buffer protocol, DLPack -------------------------------------------------------

def test_float16_numpy_interop_shares_memory():
    a = np.array([1.5, -2.25, np.inf], dtype=np.float16)
    t = pygpu.from_numpy(a)
    assert t.dtype == pygpu.float16
    v = t.numpy()
    assert v.dtype == np.float16 and np.shares_memory(v, a)
    m = memoryview(t)
    assert m.format == "e" and m.itemsize == 2
    np.testing.assert_array_equal(np.asarray(m), a)
    t2 = pygpu.tensor(a)
    assert t2.dtype == pygpu.float16 and t2.tolist() == a.tolist()


def _no_ml_dtypes():
    raise ImportError("No module named 'ml_dtypes'")


def test_bfloat16_numpy_needs_ml_dtypes_but_values_convert(monkeypatch):
    t = pygpu.tensor([1.5, -2.0, 3.0], dtype=pygpu.bfloat16)
    monkeypatch.setattr(pygpu._dtype, "_import_ml_dtypes", _no_ml_dtypes)
    with pytest.raises(TypeError, match=r"NumPy has no bfloat16.*ml_dtypes.*astype\(pygpu.float32\)"):
        t.numpy()  # with ml_dtypes installed: an ml_dtypes.bfloat16 view (test_mixed_precision.py)
    arr = np.asarray(t)
    assert arr.dtype == np.float32 and arr.tolist() == [1.5, -2.0, 3.0]
    with pytest.raises(ValueError, match="copy=False"):
        t.__array__(copy=False)
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(t)
    assert "bfloat16" in repr(t) and "1.5" in repr(t)


@pytest.mark.parametrize("dt,tname", [(pygpu.float16, "float16"), (pygpu.bfloat16, "bfloat16")],
                         ids=["float16", "bfloat16"])
def test_dlpack_both_ways(dt, tname):
    torch = _torch()
    tdt = getattr(torch, tname)
    src = torch.tensor([1.0, -0.5, 65504.0, float("nan")], dtype=tdt)
    t = pygpu.from_dlpack(src)
    assert t.dtype == dt
    got = torch.from_dlpack(t)
    assert got.dtype == tdt
    assert torch.equal(got.view(torch.int16), src.view(torch.int16))
    got[0] = 7.0  # zero-copy: the same memory
    assert src[0].item() == 7.0


# ---- arithmetic: computed in float32, rounded back once ----------------------------------

def bf16_round(x):
    """float64/float32 values rounded to bfloat16, as float64 (through the bit reference)."""
    return (bf16_reference(np.asarray(x, np.float32)).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


BF16_OPS = [  # (name, pygpu fn, float32 reference) on two (4, 5) operands
    ("add", lambda x, y: x + y, lambda x, y: x + y), ("sub", lambda x, y: x - y, lambda x, y: x - y),
    ("mul", lambda x, y: x * y, lambda x, y: x * y), ("div", lambda x, y: x / y, lambda x, y: x / y),
    ("maximum", pygpu.maximum, np.maximum), ("scalar_mul", lambda x, y: x * 3, lambda x, y: x * 3),
    ("rsub", lambda x, y: 1.5 - x, lambda x, y: 1.5 - x), ("neg", lambda x, y: -x, lambda x, y: -x),
    ("relu", lambda x, y: x.relu(), lambda x, y: np.maximum(x, 0)),
    ("sqrt_abs", lambda x, y: abs(x).sqrt(), lambda x, y: np.sqrt(np.abs(x))),
    ("max_axis", lambda x, y: x.max(axis=0), lambda x, y: x.max(axis=0)),
    ("min", lambda x, y: x.min(), lambda x, y: x.min()),
]


@pytest.mark.parametrize("fn,ref", [o[1:] for o in BF16_OPS], ids=[o[0] for o in BF16_OPS])
def test_bfloat16_ops_round_the_float32_result_once(device, fn, ref):
    rng = np.random.default_rng(5)
    x, y = (bf16_round(rng.standard_normal((4, 5)) * 4).astype(np.float32) for _ in range(2))
    y[y == 0] = 1
    tx = to_device(x, device).astype(pygpu.bfloat16)
    ty = to_device(y, device).astype(pygpu.bfloat16)
    got = fn(tx, ty)
    assert got.dtype == pygpu.bfloat16 and got.device == tx.device
    want = bf16_round(np.asarray(ref(x, y), dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(got.tolist(), dtype=np.float64), want)


def test_bfloat16_reductions_and_matmul_are_close(device):
    rng = np.random.default_rng(6)
    x = bf16_round(rng.standard_normal((16, 8))).astype(np.float32)
    t = to_device(x, device).astype(pygpu.bfloat16)
    for got, ref in [(t.sum(axis=0), x.sum(axis=0)), (t.mean(), x.mean()), (t @ t.T, x @ x.T)]:
        assert got.dtype == pygpu.bfloat16
        np.testing.assert_allclose(np.asarray(got.tolist()), ref, rtol=2 ** -7, atol=1e-2)
    assert t.argmax(axis=1).tolist() == x.argmax(axis=1).tolist()
    assert (t < 0).tolist() == (x < 0).tolist()


PROMOTION = [  # (a, b, result): PyTorch's rules (torch.promote_types)
    ("float16", "float16", "float16"), ("float16", "bool", "float16"), ("float16", "int64", "float16"),
    ("float16", "float32", "float32"), ("float16", "float64", "float64"),
    ("bfloat16", "bfloat16", "bfloat16"), ("bfloat16", "bool", "bfloat16"),
    ("bfloat16", "int64", "bfloat16"), ("bfloat16", "float32", "float32"),
    ("float16", "bfloat16", "float32"),
]


@pytest.mark.parametrize("a,b,result", PROMOTION, ids=[f"{a}+{b}" for a, b, _ in PROMOTION])
def test_promotion_with_16_bit_floats(a, b, result):
    x = pygpu.ones(3, dtype=a)
    y = pygpu.ones(3, dtype=b)
    assert (x + y).dtype.name == result and (y * x).dtype.name == result
    assert pygpu.matmul(x, y).dtype.name == result
    assert (x < y).dtype.name == "bool"
    assert (x + 1).dtype.name == a and (x * 2.5).dtype.name == a  # scalars keep a float dtype


def test_logical_not_of_half_names_the_dtype():
    with pytest.raises(TypeError, match="logical_not expects a bool tensor, got float16"):
        pygpu.logical_not(pygpu.ones(2, dtype=pygpu.float16))


@pytest.mark.parametrize("dt", HALF, ids=str)
def test_random_in_half_dtypes_rounds_float32_draws(device, dt):
    """torch.rand/randn take float16 and bfloat16 (PyTorch draws them): pygpu draws in
    float32 from the same generator state and rounds once."""
    pygpu.manual_seed(7)
    got = pygpu.rand(300, dtype=dt, device=device)
    pygpu.manual_seed(7)
    want = pygpu.rand(300, device=device).astype(dt)
    assert got.dtype is dt
    np.testing.assert_array_equal(to_numpy(got.astype(pygpu.float32)),
                                  to_numpy(want.astype(pygpu.float32)))
    vals = to_numpy(got.astype(pygpu.float32))
    assert vals.min() >= 0 and vals.max() <= 1 and len(set(vals.tolist())) > 50


def test_half_math_through_float32_matches_numpy(device):
    x = np.random.default_rng(3).standard_normal(50).astype(np.float16)
    t = to_device(x, device)
    got = ((t.astype(pygpu.float32) * 2 + 1).astype(pygpu.float16))
    np.testing.assert_array_equal(to_numpy(got), (x.astype(np.float32) * 2 + 1).astype(np.float16))


# --- half ops are native: kernels read and write float16/bfloat16 themselves -------------

_NATIVE_OPS = {
    "add": lambda a, b: a + b, "mul_scalar": lambda a, b: a * 2.5, "exp": lambda a, b: pygpu.exp(a),
    "less": lambda a, b: a < b, "maximum": pygpu.maximum, "sum": lambda a, b: a.sum(),
    "mean_axis0": lambda a, b: a.reshape(1024, -1).mean(axis=0), "max": lambda a, b: a.max(),
    "argmax": lambda a, b: a.argmax(),
}


@pytest.mark.parametrize("op", list(_NATIVE_OPS))
@pytest.mark.parametrize("dt", HALF, ids=str)
def test_half_ops_make_no_widened_temporary(dt, op):
    """sim counts its memory: an op on half tensors allocates its result and nothing else.
    (When half ops were computed by widening, a + b on two 2 MiB bfloat16 tensors peaked
    at 12 MiB over the inputs: two float32 copies and a float32 result.) A sum's float32
    partial result is the size of the output, not of the input."""
    n = 1 << 20
    rng = np.random.default_rng(0)
    a = to_device(rng.standard_normal(n).astype(np.float32), "sim:0").astype(dt)
    b = to_device(rng.standard_normal(n).astype(np.float32), "sim:0").astype(dt)
    pygpu.sim.synchronize()
    base = pygpu.sim.memory_allocated()
    pygpu.sim.reset_peak_memory_stats()
    out = _NATIVE_OPS[op](a, b)
    pygpu.sim.synchronize()
    extra = pygpu.sim.max_memory_allocated() - base
    result = pygpu.sim.memory_allocated() - base
    assert result <= out.nbytes + 4096  # the result, rounded up to the allocator's block
    limit = result if out.numel() == n else 64 * 1024
    assert extra <= limit, (f"{op} on {dt}: peaked {extra} bytes over its inputs for a "
                            f"{out.nbytes}-byte result: a widened temporary was made")
    # and the values are those of the float32 op, rounded once
    wide = _NATIVE_OPS[op](a.astype(pygpu.float32), b.astype(pygpu.float32))
    want = wide.astype(out.dtype) if wide.dtype == pygpu.float32 else wide
    np.testing.assert_array_equal(_values(out), _values(want))


def _values(t):
    """A tensor's values as NumPy (half dtypes as float64: exact)."""
    return to_numpy(t.cpu().astype(pygpu.float64) if t.dtype in HALF else t.cpu())


@pytest.mark.parametrize("dt", HALF, ids=str)
def test_half_ops_run_or_name_op_dtype_and_device(compared_device, dt):
    """Every device either runs half ops (cpu and sim always do) or refuses each one with
    an error that names the op, the dtype and the device (a backend says which ops it has
    half kernels for through its supports_op slot; cuda refused them all at first), with the
    CPU's values (the CPU's own half ops are the op-table suite's semantics sum)."""
    device = compared_device
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    t = to_device(x, device).astype(dt) if device.startswith(("cpu", "sim")) else None
    if t is None:
        try:
            t = to_device(x, device).astype(dt)
        except TypeError as e:
            assert str(dt) in str(e) and "cuda" in str(e)
            pytest.skip(f"{device} refuses {dt} casts: {e}")
    h = to_device(x, "cpu").astype(dt)
    ops = {"add": lambda v: v + v, "negative": lambda v: -v, "exp": pygpu.exp,
           "greater": lambda v: v > 0, "sum": lambda v: v.sum(axis=0), "mean": lambda v: v.mean(),
           "max": lambda v: v.max(axis=1), "argmax": lambda v: v.argmax()}
    for name, f in ops.items():
        try:
            got = f(t)
        except TypeError as e:
            assert not device.startswith(("cpu", "sim")), f"{name} refused on {device}: {e}"
            assert name in str(e) and str(dt) in str(e) and device.split(":")[0] in str(e), str(e)
            continue
        want = f(h)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(_values(got), _values(want), err_msg=name)
