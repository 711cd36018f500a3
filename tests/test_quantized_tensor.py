# test_quantized_tensor.py - PyTorch's quantized tensors (pygpu/quantization/_quantized.py)
# against torch on every device: quantize_per_tensor / per_channel / _dynamic bit for bit
# (int_repr and dequantize, halfway values included: rounding half to even, clamping at each
# dtype's range, every axis, float qparams), the five dtypes (sub-byte packing of int_repr),
# q_scale / q_zero_point / q_per_channel_* / qscheme, printing, the views, cat, clone and to
# torch allows, empty_quantized, pickling, and torch's refusals (types and words).
import pickle
import warnings

import numpy as np
import pytest
import torch

import pygpu

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")
R = np.random.default_rng(43)
QDTYPES = ["quint8", "qint8", "qint32", "quint4x2", "quint2x4"]


def _torch_q(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _host(t):
    return (t if str(t.device) == "cpu" else t.cpu()).numpy()


def _same_q(got, want, label):
    """Same dtype, scheme, parameters, levels (int_repr) and reals (dequantize), exactly."""
    assert got.is_quantized and str(got.dtype) == str(want.dtype), label
    assert str(got.qscheme()) == str(want.qscheme()), label
    assert tuple(got.shape) == tuple(want.shape), label
    np.testing.assert_array_equal(_host(got.int_repr()), want.int_repr().numpy(), err_msg=label)
    d = _host(got.dequantize())
    assert d.dtype == np.float32, label
    np.testing.assert_array_equal(d, want.dequantize().numpy(), err_msg=label)
    if want.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        assert (got.q_scale(), got.q_zero_point()) == (want.q_scale(), want.q_zero_point())
    else:
        np.testing.assert_array_equal(_host(got.q_per_channel_scales()),
                                      want.q_per_channel_scales().numpy())
        np.testing.assert_array_equal(_host(got.q_per_channel_zero_points()),
                                      want.q_per_channel_zero_points().numpy())
        assert got.q_per_channel_axis() == want.q_per_channel_axis()


def _inputs(scale, zp, n=257):
    """Random reals over and beyond the dtypes' ranges, plus the halfway points (k + 0.5)
    * scale that rounding half to even decides."""
    halves = (np.arange(-40, 40) + 0.5) * scale
    rand = R.standard_normal(n) * 60 * scale
    return np.concatenate([halves, rand, [0.0, -0.0, 1e9, -1e9]]).astype(np.float32)


def test_dtypes_and_schemes_as_pytorch():
    for name in QDTYPES:
        d, t = getattr(pygpu, name), getattr(torch, name)
        assert str(d) == str(t) and repr(d) == repr(t)
        assert (d.is_floating_point, d.is_complex, d.itemsize) == (
            t.is_floating_point, t.is_complex, t.itemsize)
        with pytest.raises(RuntimeError, match="isSignedType not supported for quantized"):
            d.is_signed
        with pytest.raises(RuntimeError, match="isSignedType not supported for quantized"):
            t.is_signed
        assert pickle.loads(pickle.dumps(d)) is d
    for name in ("per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                 "per_channel_symmetric", "per_channel_affine_float_qparams"):
        s = getattr(pygpu, name)
        assert repr(s) == repr(getattr(torch, name)) and isinstance(s, pygpu.qscheme)
        assert pickle.loads(pickle.dumps(s)) is s


@pytest.mark.parametrize("qdtype", QDTYPES)
def test_quantize_per_tensor_bit_exact(device, qdtype):
    for scale, zp in [(0.5, 2), (0.1, 0), (0.0173, 3), (1 / 3, 1), (2.5e-3, 0)]:
        if qdtype == "qint8":
            zp = zp - 5
        x = _inputs(scale, zp)
        got = pygpu.quantize_per_tensor(pygpu.tensor(x).to(device), scale, zp,
                                        getattr(pygpu, qdtype))
        want = _torch_q(torch.quantize_per_tensor, torch.tensor(x), scale, zp,
                        getattr(torch, qdtype))
        assert got.device == pygpu.device(device)
        _same_q(got, want, f"{qdtype} scale={scale} zp={zp} on {device}")


def test_quantize_per_tensor_tensor_parameters_and_lists(device):
    x = _inputs(0.1, 3)
    got = pygpu.quantize_per_tensor(pygpu.tensor(x).to(device), pygpu.tensor(0.1),
                                    pygpu.tensor(3), pygpu.quint8)
    want = _torch_q(torch.quantize_per_tensor, torch.tensor(x), torch.tensor(0.1),
                    torch.tensor(3), torch.quint8)
    _same_q(got, want, "tensor scale")  # a scale tensor is read as float32, as torch's
    xs = [x[:10], x[10:30]]
    got = pygpu.quantize_per_tensor([pygpu.tensor(a).to(device) for a in xs],
                                    pygpu.tensor([0.1, 0.2]), pygpu.tensor([1, 2]), pygpu.quint8)
    want = _torch_q(torch.quantize_per_tensor, [torch.tensor(a) for a in xs],
                    torch.tensor([0.1, 0.2]), torch.tensor([1, 2]), torch.quint8)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        _same_q(g, w, "list")
    deq = pygpu.dequantize(list(got))
    assert isinstance(deq, tuple)
    np.testing.assert_array_equal(_host(deq[1]), want[1].dequantize().numpy())


@pytest.mark.parametrize("qdtype", ["quint8", "qint8", "qint32"])
def test_quantize_per_channel_bit_exact(device, qdtype):
    x = (R.standard_normal((4, 5, 6)) * 3).astype(np.float32)
    x[0, 0, :4] = [0.05, 0.15, -0.25, 0.35]  # halfway points of scale 0.1
    for axis in range(3):
        c = x.shape[axis]
        scales = np.linspace(0.05, 0.3, c)
        zps = np.arange(c) - (3 if qdtype == "qint8" else 0)
        got = pygpu.quantize_per_channel(pygpu.tensor(x).to(device), pygpu.tensor(scales),
                                         pygpu.tensor(zps), axis, getattr(pygpu, qdtype))
        want = _torch_q(torch.quantize_per_channel, torch.tensor(x), torch.tensor(scales),
                        torch.tensor(zps), axis, getattr(torch, qdtype))
        _same_q(got, want, f"{qdtype} axis={axis} on {device}")
        assert got.q_per_channel_scales().dtype == pygpu.float64
        assert got.q_per_channel_zero_points().dtype == pygpu.int64


def test_quantize_per_channel_float_qparams(device):
    x = (R.standard_normal((5, 8)) * 2).astype(np.float32)
    scales = np.array([0.1, 0.02, 0.3, 0.05, 0.2], np.float32)
    zps = np.array([-0.5, 0.0, 0.25, 1.0, -2.0], np.float32)
    for qdtype in ("quint8", "quint4x2"):
        got = pygpu.quantize_per_channel(pygpu.tensor(x).to(device), pygpu.tensor(scales),
                                         pygpu.tensor(zps), 0, getattr(pygpu, qdtype))
        want = _torch_q(torch.quantize_per_channel, torch.tensor(x), torch.tensor(scales),
                        torch.tensor(zps), 0, getattr(torch, qdtype))
        assert str(got.qscheme()) == "torch.per_channel_affine_float_qparams"
        _same_q(got, want, f"float qparams {qdtype}")


def test_quantize_per_tensor_dynamic_as_pytorch(device):
    for arr in ([-1.0, 0.0, 1.0, 2.0], R.standard_normal(100) * 4, [0.5, 3.0], [-2.0, -1.0],
                [0.0, 0.0], R.standard_normal(50) * 1e-6):
        x = np.asarray(arr, np.float32)
        for qdtype in ("quint8", "qint8"):
            for reduce_range in (False, True):
                got = pygpu.quantize_per_tensor_dynamic(pygpu.tensor(x).to(device),
                                                        getattr(pygpu, qdtype), reduce_range)
                want = _torch_q(torch.quantize_per_tensor_dynamic, torch.tensor(x),
                                getattr(torch, qdtype), reduce_range)
                _same_q(got, want, f"dynamic {qdtype} reduce_range={reduce_range} {x[:3]}")


def test_printing_as_pytorch():
    x = np.array([-1.0, 0.25, 0.5, 1.3, 100.0], np.float32)
    for qdtype in QDTYPES:
        got = pygpu.quantize_per_tensor(pygpu.tensor(x), 0.5, 2, getattr(pygpu, qdtype))
        want = _torch_q(torch.quantize_per_tensor, torch.tensor(x), 0.5, 2,
                        getattr(torch, qdtype))
        assert repr(got) == repr(want)
    w = np.array([[0.1, 1.3, 0.2], [1.0, 0.4, 1.0]], np.float32)
    got = pygpu.quantize_per_channel(pygpu.tensor(w), pygpu.tensor([0.1, 0.2]),
                                     pygpu.tensor([0, 1]), 0, pygpu.qint8)
    want = _torch_q(torch.quantize_per_channel, torch.tensor(w), torch.tensor([0.1, 0.2]),
                    torch.tensor([0, 1]), 0, torch.qint8)
    assert repr(got) == repr(want)
    assert repr(pygpu.quantize_per_tensor(pygpu.tensor(x).to("sim"), 0.5, 2, pygpu.quint8)) \
        .count("device='sim:0'") == 1


def test_views_copies_and_moves_as_pytorch(device):
    x = (R.standard_normal((4, 6)) * 3).astype(np.float32)
    q = pygpu.quantize_per_tensor(pygpu.tensor(x).to(device), 0.1, 128, pygpu.quint8)
    tq = _torch_q(torch.quantize_per_tensor, torch.tensor(x), 0.1, 128, torch.quint8)
    cases = [("slice", lambda a: a[1:3, ::2]), ("int", lambda a: a[2]),
             ("view", lambda a: a.view(3, 8)),
             ("reshape", lambda a: a.t().reshape(24)), ("t", lambda a: a.t()),
             ("transpose", lambda a: a.transpose(0, 1)), ("permute", lambda a: a.permute(1, 0)),
             ("unsqueeze", lambda a: a.unsqueeze(1)), ("flatten", lambda a: a.flatten()),
             ("clone", lambda a: a.clone()), ("contiguous", lambda a: a.t().contiguous()),
             ("detach", lambda a: a.detach()), ("narrow", lambda a: a.narrow(1, 2, 3)),
             ("select", lambda a: a.select(1, 4)), ("flip", lambda a: a.flip(0))]
    for label, f in cases:
        _same_q(f(q), f(tq), label)
        assert f(q).stride() == f(tq).stride(), label
    other = _torch_q(torch.quantize_per_tensor, torch.tensor(x * 2), 0.2, 100, torch.quint8)
    q2 = pygpu.quantize_per_tensor(pygpu.tensor(x * 2).to(device), 0.2, 100, pygpu.quint8)
    with pytest.warns(UserWarning, match="must share the same quantization parameters"):
        joined = pygpu.cat([q, q2], 0)
    with pytest.warns(UserWarning, match="must share the same quantization parameters"):
        _same_q(joined, torch.cat([tq, other], 0), "cat requantizes to the first's")
    _same_q(pygpu.cat([q, q], 1), torch.cat([tq, tq], 1), "cat")
    moved = q.to("cpu")
    _same_q(moved, tq, "to cpu")
    assert moved.device == pygpu.device("cpu")
    e = pygpu.empty_quantized([2, 3], q)
    te = torch.empty_quantized([2, 3], tq)
    assert (e.shape, str(e.dtype), e.q_scale(), e.q_zero_point(), e.device) == (
        tuple(te.shape), str(te.dtype), te.q_scale(), te.q_zero_point(), q.device)
    assert pygpu.equal(q, q.clone()) and not pygpu.equal(q, q2)
    np.testing.assert_array_equal(_host(q == q), (tq == tq).numpy())
    assert (q.numel(), q.dim(), q.element_size(), q.size(1), q.is_contiguous(),
            q.t().is_contiguous()) == (tq.numel(), tq.dim(), tq.element_size(), tq.size(1),
                                       True, False)
    assert q[1, 2].item() == tq[1, 2].item()
    r = pickle.loads(pickle.dumps(q))
    _same_q(r, tq, "pickle")
    assert r.device == q.device


def test_per_channel_views_as_pytorch(device):
    w = (R.standard_normal((3, 4)) * 2).astype(np.float32)
    sc, zp = np.array([0.1, 0.2, 0.3]), np.array([0, 1, 2])
    q = pygpu.quantize_per_channel(pygpu.tensor(w).to(device), pygpu.tensor(sc),
                                   pygpu.tensor(zp), 0, pygpu.qint8)
    tq = _torch_q(torch.quantize_per_channel, torch.tensor(w), torch.tensor(sc),
                  torch.tensor(zp), 0, torch.qint8)
    _same_q(q[1], tq[1], "one channel is per tensor")
    _same_q(q.view(3, 2, 2), tq.view(3, 2, 2), "view keeping the axis")
    _same_q(q.clone(), tq.clone(), "clone")
    # torch lets reshape(12) make a tensor it cannot dequantize or print ("length of scales
    # must equal to channel"); pygpu refuses it at the reshape, with that message
    with pytest.raises(RuntimeError, match="length of scales must equal to channel"):
        q.reshape(12)
    with pytest.raises(RuntimeError, match="length of scales must equal to channel"):
        tq.reshape(12).dequantize()
    for label, f in [("t", lambda a: a.t()),
                     ("cat", lambda a: (torch if isinstance(a, torch.Tensor) else
                                        pygpu).cat([a, a]))]:
        with pytest.raises(RuntimeError):
            f(tq)
        with pytest.raises(RuntimeError):
            f(q)
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        q.q_scale()
    p = pygpu.quantize_per_tensor(pygpu.tensor(w), 0.1, 0, pygpu.qint8)
    with pytest.raises(RuntimeError, match="kPerChannelAffine"):
        p.q_per_channel_scales()


def test_refusals_as_pytorch(device):
    x = pygpu.tensor([1.0, 2.0, 3.0]).to(device)
    q = pygpu.quantize_per_tensor(x, 0.1, 2, pygpu.quint8)
    tx = torch.tensor([1.0, 2.0, 3.0])
    tq = _torch_q(torch.quantize_per_tensor, tx, 0.1, 2, torch.quint8)
    backend = "QuantizedCPU" if device == "cpu" else ("QuantizedCUDA" if device.startswith(
        "cuda") else "QuantizedPrivateUse1")
    with pytest.raises(RuntimeError, match="empty_strided not supported on quantized"):
        tq * 2
    with pytest.raises(RuntimeError, match="Could not run 'aten::mul.Tensor'"):
        q * 2  # NotImplementedError, a RuntimeError: `except RuntimeError` holds for both
    for label, f in [("add", lambda a: a + a), ("mul", lambda a: a * a),
                     ("sum", lambda a: a.sum()), ("abs", lambda a: a.abs()),
                     ("exp", lambda a: a.exp()), ("matmul", lambda a: a @ a)]:
        with pytest.raises(NotImplementedError, match="with arguments from the 'QuantizedCPU'"):
            f(tq)
        with pytest.raises(NotImplementedError, match=f"with arguments from the '{backend}'"):
            f(q)
    for f in [lambda a: a.q_scale(), lambda a: a.int_repr(), lambda a: a.qscheme(),
              lambda a: a.q_per_channel_axis()]:
        with pytest.raises(NotImplementedError, match="with arguments from the 'CPU' backend"):
            f(tx)
        with pytest.raises(NotImplementedError, match="Could not run 'aten::"):
            f(x)
    assert x.dequantize() is x and tx.dequantize() is tx
    assert not x.is_quantized and q.is_quantized
    with pytest.raises(TypeError, match="Got unsupported ScalarType QUInt8"):
        q.numpy()
    with pytest.raises(RuntimeError, match="Quantize only works on Float Tensor, got Double"):
        pygpu.quantize_per_tensor(x.double(), 0.1, 2, pygpu.quint8)
    with pytest.raises(RuntimeError, match="Quantize only works on Float Tensor, got Long"):
        pygpu.quantize_per_tensor(pygpu.tensor([1, 2]).to(device), 0.1, 2, pygpu.quint8)
    with pytest.raises(RuntimeError, match="ScalarType Float is not supported in new_qtensor"):
        pygpu.quantize_per_tensor(x, 0.1, 2, pygpu.float32)
    with pytest.raises(RuntimeError, match="zero_point 300 is above upper bound"):
        pygpu.quantize_per_tensor(x, 0.1, 300, pygpu.quint8)
    with pytest.raises(RuntimeError, match="requires quantized dtype"):
        q.to(pygpu.float32)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype"):
        q.requires_grad_()
    with pytest.raises(RuntimeError, match="length of scales must equal to channel"):
        pygpu.quantize_per_channel(x, pygpu.tensor([0.1, 0.2]), pygpu.tensor([0, 0]), 0,
                                   pygpu.qint8)


def _saved_cases(device):
    x = (R.standard_normal((3, 4)) * 2).astype(np.float32)
    t = pygpu.tensor(x).to(device)
    sc = pygpu.tensor([0.1, 0.2, 0.3])
    ours = {"per_tensor": pygpu.quantize_per_tensor(t, 0.1, 3, pygpu.quint8),
            "per_channel": pygpu.quantize_per_channel(t, sc, pygpu.tensor([0, 1, 2]), 0,
                                                      pygpu.qint8),
            "float_qparams": pygpu.quantize_per_channel(t, sc, pygpu.tensor([0.0, 1.5, 2.0]),
                                                        0, pygpu.quint8),
            "qint32": pygpu.quantize_per_tensor(t, 0.001, -5, pygpu.qint32)}
    ts = torch.tensor([0.1, 0.2, 0.3])
    theirs = {"per_tensor": _torch_q(torch.quantize_per_tensor, torch.tensor(x), 0.1, 3,
                                     torch.quint8),
              "per_channel": _torch_q(torch.quantize_per_channel, torch.tensor(x), ts,
                                      torch.tensor([0, 1, 2]), 0, torch.qint8),
              "float_qparams": _torch_q(torch.quantize_per_channel, torch.tensor(x), ts,
                                        torch.tensor([0.0, 1.5, 2.0]), 0, torch.quint8),
              "qint32": _torch_q(torch.quantize_per_tensor, torch.tensor(x), 0.001, -5,
                                 torch.qint32)}
    return ours, theirs


def test_save_load_in_pytorchs_format_both_ways(device, tmp_path):
    ours, theirs = _saved_cases(device)
    ours["view"] = ours["per_tensor"][1:]  # shares the first's storage record
    pygpu.save(ours, tmp_path / "pygpu.pt")
    # torch's own reader, weights_only (a sim tensor's location is "sim:0": torch maps it)
    with warnings.catch_warnings():  # torch's own TypedStorage deprecation, while it loads
        warnings.simplefilter("ignore")
        loaded = torch.load(tmp_path / "pygpu.pt", map_location="cpu")
    for key, want in theirs.items():
        _same_q(ours[key], loaded[key], f"torch.load of pygpu.save: {key}")
        _same_q(ours[key], want, f"as torch computes it: {key}")
    _same_q(ours["view"], loaded["view"], "a view")
    torch.save(theirs, tmp_path / "torch.pt")
    for kw in ({}, {"weights_only": True}, {"map_location": device}):
        back = pygpu.load(tmp_path / "torch.pt", **kw)
        for key, want in theirs.items():
            _same_q(back[key], want, f"pygpu.load of torch.save {kw}: {key}")
    assert pygpu.load(tmp_path / "torch.pt", map_location=device)["per_tensor"].device == \
        pygpu.device(device)
    with pytest.raises(TypeError, match="not saved in PyTorch's format"):
        pygpu.save(pygpu.quantize_per_tensor(pygpu.tensor([1.0]), 0.5, 1, pygpu.quint4x2),
                   tmp_path / "sub.pt")


def test_quantized_storages_as_pytorch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, qdtype in [("QUInt8Storage", "quint8"), ("QInt8Storage", "qint8"),
                             ("QInt32Storage", "qint32"), ("QUInt4x2Storage", "quint4x2"),
                             ("QUInt2x4Storage", "quint2x4")]:
            cls, tcls = getattr(pygpu, name), getattr(torch, name)
            assert str(cls.dtype) == str(tcls.dtype) == f"torch.{qdtype}"
            s, ts = cls([1, 2, 3]), tcls([1, 2, 3])
            assert (str(s.dtype), s.size(), s.element_size(), s.tolist()) == (
                str(ts.dtype), ts.size(), ts.element_size(), ts.tolist())
            assert isinstance(s, cls) and not isinstance(s, pygpu.FloatStorage)
        q = pygpu.quantize_per_tensor(pygpu.tensor([1.0, 2.0]), 0.1, 2, pygpu.quint8)
        tq = torch.quantize_per_tensor(torch.tensor([1.0, 2.0]), 0.1, 2, torch.quint8)
        st, tst = q.storage(), tq.storage()
        assert (str(st.dtype), st.tolist(), st[0]) == (str(tst.dtype), tst.tolist(), tst[0])
        assert isinstance(st, pygpu.QUInt8Storage) and isinstance(tst, torch.QUInt8Storage)
        assert q.storage_type().__name__ == tq.storage_type().__name__ == "QUInt8Storage"
        assert pickle.loads(pickle.dumps(st)).dtype is pygpu.quint8
