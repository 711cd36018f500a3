# test_int_dtypes.py - int8, uint8, int16 and int32 (issue 43) beyond the op table, against
# torch on every device: creation and NumPy / DLPack / buffer exchange (zero-copy where NumPy
# has the dtype), casts between every pair of dtypes, indexing (as values and, int32, as
# index tensors), sort, argsort, topk, cumulative ops, where and masked ops, cat and stack,
# integer matmul, and Python values. The elementwise ops and reductions are the op-table
# suite's integer sum (tests/test_ops_dtypes.py).
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

INTS = ("int32", "int16", "int8", "uint8")
# (PyTorch's bare dtypes, uint16/32/64 and float8, are tests/test_bare_dtypes.py's)
ALL = tuple(d.name for d in pygpu._dtype.ALL if not d._bare)


def _t(x, device):
    return pygpu.tensor(x, device=device)


def _same(got, want):
    """got (pygpu) equals want (torch) in dtype, shape and values (exactly)."""
    assert got.dtype.name == str(want.dtype).replace("torch.", ""), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    w = want.float().numpy() if want.dtype == torch.bfloat16 else want.numpy()
    g = got.cpu().float().numpy() if got.dtype.name == "bfloat16" else got.cpu().numpy()
    np.testing.assert_array_equal(g, w)


def _data(dt, shape=(6, 5), seed=0):
    """An integer array with the dtype's extremes beside small values."""
    info = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    x = rng.integers(max(info.min, -20), 21, size=shape).astype(dt)
    x.reshape(-1)[:3] = (info.min, info.max, 0)
    return x


# ---- creation and exchange ------------------------------------------------------------------

@pytest.mark.parametrize("dt", INTS)
def test_factories_are_torchs(dt, device):
    T, P = getattr(torch, dt), getattr(pygpu, dt)
    info = np.iinfo(dt)
    for got, want in [
        (pygpu.zeros(2, 3, dtype=P, device=device), torch.zeros(2, 3, dtype=T)),
        (pygpu.ones(4, dtype=P, device=device), torch.ones(4, dtype=T)),
        (pygpu.full((2, 2), int(info.max), dtype=P, device=device), torch.full((2, 2), int(info.max), dtype=T)),
        (pygpu.full((3,), int(info.min), dtype=P, device=device), torch.full((3,), int(info.min), dtype=T)),
        (pygpu.arange(5, dtype=P, device=device), torch.arange(5, dtype=T)),
        (pygpu.arange(120, 140, 3, dtype=P, device=device), torch.arange(120, 140, 3, dtype=T)),  # int8 wraps
        (pygpu.tensor([1, 2, int(info.max)], dtype=P, device=device), torch.tensor([1, 2, int(info.max)], dtype=T)),
        (pygpu.tensor([[1.9, -0.5]], dtype=P, device=device) if info.min < 0 else
         pygpu.tensor([[1.9, 0.5]], dtype=P, device=device),
         torch.tensor([[1.9, -0.5]], dtype=T) if info.min < 0 else torch.tensor([[1.9, 0.5]], dtype=T)),
        (pygpu.zeros_like(pygpu.ones(3, dtype=P, device=device)), torch.zeros_like(torch.ones(3, dtype=T))),
    ]:
        _same(got, want)
        assert got.device.type == pygpu.device(device).type
    assert pygpu.empty(3, dtype=P, device=device).dtype is P
    with pytest.raises(OverflowError):  # out of the dtype's range: refused, as torch does
        pygpu.tensor([int(info.max) + 1], dtype=P)
    with pytest.raises(OverflowError):
        pygpu.full((2,), int(info.min) - 1, dtype=P, device=device)


@pytest.mark.parametrize("dt", INTS)
def test_numpy_exchange_is_zero_copy(dt):
    a = _data(dt)
    t = pygpu.from_numpy(a)
    assert t.dtype.name == dt and t.tolist() == a.tolist()
    t[0, 0] = 7  # shares a's memory, both ways
    assert a[0, 0] == 7
    back = t.numpy()
    assert back.dtype == np.dtype(dt) and np.shares_memory(back, a)
    assert np.asarray(t).dtype == np.dtype(dt) and np.shares_memory(np.asarray(t), a)
    m = memoryview(t)
    assert m.itemsize == np.dtype(dt).itemsize and np.dtype(m.format) == np.dtype(dt)
    assert pygpu.tensor(a).dtype.name == dt  # tensor() copies an array, keeping its dtype
    assert np.dtype(pygpu.tensor(a).numpy().dtype) == np.dtype(dt)


@pytest.mark.parametrize("dt", INTS)
def test_dlpack_both_ways_with_torch(dt):
    a = _data(dt)
    p = pygpu.from_numpy(a)
    tt = torch.from_dlpack(p)
    assert tt.dtype == getattr(torch, dt) and tt.tolist() == a.tolist()
    back = pygpu.from_dlpack(torch.from_numpy(a.copy()))
    assert back.dtype.name == dt and back.tolist() == a.tolist()


@pytest.mark.parametrize("dt", INTS)
def test_python_values_and_printing(dt, device):
    a = _data(dt, (2, 3))
    t = _t(a, device)
    assert t.tolist() == a.tolist() and all(type(v) is int for v in t.reshape(-1).tolist())
    assert type(t[0, 1].item()) is int and t[0, 1].item() == int(a[0, 1])
    assert int(t[0, 0]) == int(a[0, 0]) and float(t[0, 1]) == float(a[0, 1])
    assert [0, 1, 2][t[0, 2]] == 0  # __index__: an integer tensor of one element
    assert repr(t.cpu()) == repr(torch.from_numpy(a))


# ---- casts ------------------------------------------------------------------------------------

# every dtype's special values: the integers' extremes, floats out of every integer's range,
# fractions, NaN and inf (float -> int out of range is x86's, which torch gives here too)
SPECIAL = [0.0, 1.0, -1.0, 2.5, -2.5, 127.0, 128.0, -129.0, 200.7, -200.3, 255.0, 256.0, 300.5,
           32767.0, 32768.0, -40000.0, 2.0**31, -2.0**31 - 1, 1e10, -1e10, 3e9, float("nan"),
           float("inf"), -float("inf")]


@pytest.mark.parametrize("src", ALL)
def test_casts_between_every_pair_are_torchs(src, device):
    if src in ("bool",) + INTS + ("int64",):
        info_min, info_max = (0, 1) if src == "bool" else (np.iinfo(src).min, np.iinfo(src).max)
        vals = np.array([info_min, info_max, 0, 1, -1 if info_min < 0 else 2, 100, 7],
                        dtype=np.dtype(src) if src != "bool" else bool)
        base = torch.from_numpy(vals)
    else:
        base = torch.tensor(SPECIAL, dtype=torch.float64).to(getattr(torch, src))
    x = pygpu.tensor(base.float().numpy() if src == "bfloat16" else base.numpy(),
                     device=device).to(getattr(pygpu, src))
    for dst in ALL:  # a float out of an integer's range: x86's conversion, as torch's CPU gives
        _same(x.to(getattr(pygpu, dst)), base.to(getattr(torch, dst)))


@pytest.mark.parametrize("dt", INTS)
def test_cast_methods_and_type_strings(dt, device):
    x = pygpu.arange(6, device=device)
    assert x.int().dtype is pygpu.int32 and x.short().dtype is pygpu.int16
    assert x.char().dtype is pygpu.int8 and x.byte().dtype is pygpu.uint8
    y = x.to(getattr(pygpu, dt))
    assert y.type() == torch.zeros(1, dtype=getattr(torch, dt)).type().replace(
        "torch.", "torch." if device == "cpu" else f"torch.{pygpu.device(device).type}.")
    assert y.type(pygpu.float32).dtype is pygpu.float32
    assert y.type("torch.IntTensor").dtype is pygpu.int32
    assert y.long().tolist() == list(range(6)) and y.is_signed() == (dt != "uint8")


# ---- indexing -----------------------------------------------------------------------------

@pytest.mark.parametrize("dt", INTS)
def test_indexing_values_and_int32_indices(dt, device):
    a = _data(dt)
    x, tx = _t(a, device), torch.from_numpy(a.copy())
    i32 = np.array([4, 0, 2, 2], np.int32)
    pi, ti = _t(i32, device), torch.from_numpy(i32)
    _same(x[1], tx[1])
    _same(x[:, 1:4:2], tx[:, 1:4:2])
    _same(x[pi], tx[ti])  # an int32 index tensor, as torch takes
    _same(x[:, pi[:2]], tx[:, ti[:2]])
    _same(x[x > 3], tx[tx > 3])
    _same(x.index_select(1, pi[:3]), tx.index_select(1, ti[:3]))
    _same(x.index_select(0, pi.long()), tx.index_select(0, ti.long()))
    g = np.array([[0, 1], [2, 0]], np.int64)
    _same(x[:2, :3].gather(1, _t(g, device)), tx[:2, :3].gather(1, torch.from_numpy(g)))
    _same(x[:2, :3].gather(1, _t(g.astype(np.int32), device)),
          tx[:2, :3].gather(1, torch.from_numpy(g.astype(np.int32))))
    y, ty = x.clone(), tx.clone()
    y[pi[:2]] = 5
    ty[ti[:2]] = 5
    _same(y, ty)
    y[0] = _t(a[5], device)
    ty[0] = torch.from_numpy(a[5].copy())
    _same(y, ty)
    mask = _t(a % 2 == 0, device)
    _same(x.masked_fill(mask, 3), tx.masked_fill(torch.from_numpy(a % 2 == 0), 3))
    src = _data(dt, (2, 5), seed=1)
    _same(x.clone().index_add_(0, pi[:2], _t(src, device)),
          tx.clone().index_add_(0, ti[:2], torch.from_numpy(src)))  # wraps as torch's
    sc = np.array([[1, 0, 3, 2, 4]], np.int64)
    _same(x.clone().scatter_(0, _t(sc, device), _t(src[:1], device)),
          tx.clone().scatter_(0, torch.from_numpy(sc), torch.from_numpy(src[:1])))
    _same(x.clone().scatter_add_(0, _t(sc, device), _t(src[:1], device)),
          tx.clone().scatter_add_(0, torch.from_numpy(sc), torch.from_numpy(src[:1])))
    _same(x.nonzero(), tx.nonzero())
    with pytest.raises((TypeError, IndexError, RuntimeError)):  # int16 indices: refused, as torch
        x.index_select(0, pi.short())


# ---- sorting, cumulative, where, joins, matmul ------------------------------------------------

@pytest.mark.parametrize("dt", INTS)
def test_sorts_and_cumulative_ops_are_torchs(dt, device):
    a = _data(dt, (4, 9), seed=2)
    x, tx = _t(a, device), torch.from_numpy(a.copy())
    for desc in (False, True):
        v, i = x.sort(dim=1, descending=desc, stable=True)
        tv, ti = tx.sort(dim=1, descending=desc, stable=True)
        _same(v, tv)
        _same(i, ti)
        _same(x.argsort(dim=0, descending=desc, stable=True), tx.argsort(dim=0, descending=desc, stable=True))
    v, i = x.topk(3, dim=1)
    tv, ti = tx.topk(3, dim=1)
    _same(v, tv)
    _same(x.gather(1, i), tx.gather(1, ti))  # ties may pick other positions; their values agree
    v, _ = x.topk(2, dim=0, largest=False)
    _same(v, tx.topk(2, dim=0, largest=False)[0])
    _same(x.cumsum(1), tx.cumsum(1))  # int64, as torch's
    _same(x.cumprod(0), tx.cumprod(0))
    _same(x.max(dim=1)[0], tx.max(dim=1)[0])
    _same(x.min(dim=0)[0], tx.min(dim=0)[0])
    _same(x.argmax(dim=1), tx.argmax(dim=1))
    _same(x.argmin(dim=0), tx.argmin(dim=0))
    _same(x.prod(dim=1), tx.prod(dim=1))
    _same(x.clamp(-3, 5) if dt != "uint8" else x.clamp(1, 5),
          tx.clamp(-3, 5) if dt != "uint8" else tx.clamp(1, 5))


@pytest.mark.parametrize("dt", INTS)
def test_where_cat_stack_are_torchs(dt, device):
    a, b = _data(dt, (3, 4)), _data(dt, (3, 4), seed=3)
    x, y = _t(a, device), _t(b, device)
    tx, ty = torch.from_numpy(a), torch.from_numpy(b)
    c = a > b
    _same(pygpu.where(_t(c, device), x, y), torch.where(torch.from_numpy(c), tx, ty))
    _same(pygpu.where(_t(c, device), x, 2), torch.where(torch.from_numpy(c), tx, 2))
    _same(pygpu.cat([x, y], 0), torch.cat([tx, ty], 0))
    _same(pygpu.cat([x, y], 1), torch.cat([tx, ty], 1))
    _same(pygpu.stack([x, y]), torch.stack([tx, ty]))
    z = _data("int64", (3, 4))
    _same(pygpu.cat([x, _t(z, device)]), torch.cat([tx, torch.from_numpy(z)]))  # promotes


@pytest.mark.parametrize("dt", INTS)
def test_integer_matmul_is_torchs_on_the_cpu(dt, device):
    for sa, sb in (((3, 4), (4, 5)), ((4,), (4, 2)), ((2, 3, 4), (2, 4, 2)), ((5,), (5,))):
        a, b = _data(dt, sa, seed=4), _data(dt, sb, seed=5)
        _same(_t(a, device) @ _t(b, device), torch.from_numpy(a) @ torch.from_numpy(b))  # wraps


def test_integer_tensors_round_trip_through_save_and_load(tmp_path):
    """pygpu.save/load keep every integer dtype (a 2-D int8 tensor stays a tensor: only the
    int8 layers' weights, listed by name in the file, load as packed weights)."""
    state = {dt: pygpu.tensor(_data(dt, (2, 3))) for dt in INTS}
    path = str(tmp_path / "ints.safetensors")
    pygpu.save(state, path)
    back = pygpu.load(path)
    for dt in INTS:
        assert isinstance(back[dt], pygpu.Tensor) and back[dt].dtype.name == dt
        assert back[dt].tolist() == state[dt].tolist()


def test_embedding_takes_int32_indices(device):
    w = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    i = np.array([[1, 9], [0, 3]], np.int32)
    got = pygpu.nn.functional.embedding(_t(i, device), _t(w, device))
    want = torch.nn.functional.embedding(torch.from_numpy(i), torch.from_numpy(w))
    assert got.dtype is pygpu.float32
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


def test_integer_tensors_cross_pytorchs_checkpoint_format_both_ways(tmp_path):
    """PyTorch's zip format: torch.load reads pygpu's integer tensors, pygpu.load torch's."""
    state = {dt: pygpu.tensor(_data(dt, (2, 3))) for dt in INTS}
    path = str(tmp_path / "ints.pt")
    pygpu.save(state, path)
    theirs = torch.load(path, weights_only=True)
    for dt in INTS:
        _same(state[dt], theirs[dt])
    torch.save(theirs, path)
    back = pygpu.load(path)
    for dt in INTS:
        _same(back[dt], theirs[dt])


def test_only_an_int8_layers_weights_load_packed(tmp_path):
    """safetensors: the int8 layers' weights are listed by name in pygpu's metadata and load as
    QTensors; a 2-D int8 tensor of a file pygpu did not write loads as a tensor; a pygpu file
    from before int8 was a dtype (no list) still gives its int8 weights packed."""
    from safetensors.numpy import save_file
    from pygpu import quantization as Q
    from pygpu.quantization import QTensor
    q = Q.quantize_dynamic(pygpu.nn.MLP([8, 6, 3]))
    sd = dict(q.state_dict())
    sd["plain"] = pygpu.tensor(_data("int8", (2, 3)))
    path = str(tmp_path / "q.safetensors")
    pygpu.save(sd, path)
    back = pygpu.load(path)
    assert isinstance(back["layers.0.weight"], QTensor)
    assert isinstance(back["plain"], pygpu.Tensor) and back["plain"].dtype is pygpu.int8
    w = sd["layers.0.weight"].int_repr()
    save_file({"w": w}, path)  # no pygpu metadata
    assert pygpu.load(path)["w"].dtype is pygpu.int8
    save_file({"w": w}, path, metadata={"pygpu.devices": '{"w": "cpu"}'})  # an older pygpu's
    assert isinstance(pygpu.load(path)["w"], QTensor)
    save_file({"w": w}, path, metadata={"pygpu.qstate": '{"w": 1}'})
    with pytest.raises(ValueError, match="corrupt pygpu metadata.*pygpu.qstate"):
        pygpu.load(path)


def test_an_int8_layer_loads_from_pytorchs_format(tmp_path, device):
    """PyTorch's format has no packed weights: the int8 weight comes back an int8 tensor, and
    the quantized layer's load_state_dict packs it."""
    from pygpu import quantization as Q
    pygpu.manual_seed(3)
    q = Q.quantize_dynamic(pygpu.nn.MLP([8, 6, 3])).to(device)
    path = str(tmp_path / "q.pt")
    pygpu.save(q.state_dict(), path)
    loaded = pygpu.load(path)
    assert loaded["layers.0.weight"].dtype is pygpu.int8
    other = Q.quantize_dynamic(pygpu.nn.MLP([8, 6, 3])).to(device)
    other.load_state_dict(loaded)
    x = pygpu.randn(4, 8, device=device)
    np.testing.assert_array_equal(other(x).cpu().numpy(), q(x).cpu().numpy())


def test_searchsorted_and_bucketize_out_int32_are_torchs(device):
    seq = np.array([1.0, 3.0, 5.0, 7.0], np.float32)
    v = np.array([[0.0, 3.0], [6.0, 9.0]], np.float32)
    for right in (False, True):
        _same(pygpu.searchsorted(_t(seq, device), _t(v, device), out_int32=True, right=right),
              torch.searchsorted(torch.from_numpy(seq), torch.from_numpy(v), out_int32=True,
                                 right=right))
        _same(pygpu.bucketize(_t(v, device), _t(seq, device), out_int32=True, right=right),
              torch.bucketize(torch.from_numpy(v), torch.from_numpy(seq), out_int32=True,
                              right=right))


def _legacy_dtypes():
    """The dtypes with a legacy class: all but complex and the bare ones (a name, no class,
    in PyTorch too)."""
    return [dt for dt in pygpu._dtype.ALL if not dt.is_complex and not dt._bare]


def test_legacy_typed_constructors_cover_every_dtype(device):
    assert not hasattr(torch, "ComplexFloatTensor") and not hasattr(pygpu, "ComplexFloatTensor")
    for dt in _legacy_dtypes():
        name = pygpu._dtype.legacy_name(dt)
        ours, theirs = getattr(pygpu, name)([1, 0]), getattr(torch, name)([1, 0])
        _same(ours, theirs)
        assert isinstance(ours, getattr(pygpu, name))
        assert getattr(pygpu, name)(2, 3).shape == (2, 3)


def test_type_takes_the_legacy_classes(device):
    x = _t(np.array([1.5, -2.5], np.float32), device)
    tx = torch.from_numpy(np.array([1.5, -2.5], np.float32))
    for dt in _legacy_dtypes():
        name = pygpu._dtype.legacy_name(dt)
        _same(x.type(getattr(pygpu, name)), tx.type(getattr(torch, name)))
