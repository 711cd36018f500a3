# test_complex.py - complex64 and complex128 against PyTorch on every device: the dtypes'
# properties and promotion, creation and NumPy exchange, printing, counted moves, casts both
# ways (the imaginary part's warning), the real views (real, imag, view_as_real/complex),
# conj/angle/abs/complex/polar, the elementwise rules of pygpu/_tensor/complex.py, sum/mean,
# matmul/mm/bmm, PyTorch's refusals (types and words), and files: pygpu.save/load in PyTorch's
# format read and written by torch itself, and safetensors (complex64, the one complex dtype
# the format has). Each test loops over its cases.
import warnings

import numpy as np
import pytest
import torch

import pygpu

R = np.random.default_rng(7)
DTYPES = [("complex64", np.complex64, 1e-5), ("complex128", np.complex128, 1e-12)]


def _c(shape, nd):
    return (R.standard_normal(shape) + 1j * R.standard_normal(shape)).astype(nd)


def _both(arr, device):
    return pygpu.tensor(arr).to(device), torch.tensor(arr)


def _check(label, got, want, tol):
    g = got.cpu().numpy() if isinstance(got, pygpu.Tensor) else np.asarray(got)
    w = want.resolve_conj().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    assert str(g.dtype) == str(w.dtype), f"{label}: dtype {g.dtype} != torch {w.dtype}"
    assert g.shape == w.shape, f"{label}: shape {g.shape} != torch {w.shape}"
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=label)


def test_dtype_objects_as_pytorch():
    for name, alias, size in [("complex64", "cfloat", 8), ("complex128", "cdouble", 16)]:
        d, t = getattr(pygpu, name), getattr(torch, name)
        assert getattr(pygpu, alias) is d
        assert (d.is_complex, d.is_floating_point, d.is_signed, d.itemsize) == (
            t.is_complex, t.is_floating_point, t.is_signed, t.itemsize)
        assert str(d) == str(t)
        assert d.to_real() is getattr(pygpu, "float32" if size == 8 else "float64")
    assert pygpu.float32.to_complex() is pygpu.complex64
    assert pygpu.float64.to_complex() is pygpu.complex128


def test_promotion_table_matches_torch():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
             "float32", "float64", "complex64", "complex128"]
    for a in names:
        for b in names:
            got = pygpu.promote_types(getattr(pygpu, a), getattr(pygpu, b)).name
            want = str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[6:]
            assert got == want, f"{a} + {b}: {got} != torch {want}"


def test_result_type_with_python_complex_and_the_default_dtype():
    cases = [(np.float32, 1j), (np.float64, 1j), (np.int64, 2j), (np.float32, 2.0)]
    for nd, scalar in cases:
        p, t = pygpu.tensor(np.ones(2, nd)), torch.tensor(np.ones(2, nd))
        assert str(pygpu.result_type(p, scalar)) == str(torch.result_type(t, scalar))
        assert str((p + scalar).dtype) == str((t + scalar).dtype), (nd, scalar)
    prev = pygpu.get_default_dtype()
    pygpu.set_default_dtype(pygpu.float64)
    torch_prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert str(pygpu.tensor([1 + 2j]).dtype) == str(torch.tensor([1 + 2j]).dtype)
        assert str((pygpu.ones(2, dtype=pygpu.int64) + 1j).dtype) == str(
            (torch.ones(2, dtype=torch.int64) + 1j).dtype)
    finally:
        pygpu.set_default_dtype(prev)
        torch.set_default_dtype(torch_prev)


def test_creation_numpy_and_printing(device):
    p = pygpu.tensor([1 + 2j, 3 - 1j], device=device)
    t = torch.tensor([1 + 2j, 3 - 1j])
    assert str(p.dtype) == str(t.dtype) == "torch.complex64"
    _check("tensor", p, t, 0)
    for name, nd, _tol in DTYPES:
        a = _c((2, 3), nd)
        f = pygpu.from_numpy(a)
        assert f.dtype is getattr(pygpu, name)
        np.testing.assert_array_equal(f.numpy(), a)
        _check("full", pygpu.full((2,), 1 - 2j, dtype=getattr(pygpu, name), device=device),
               torch.full((2,), 1 - 2j, dtype=getattr(torch, name)), 0)
        _check("zeros", pygpu.zeros(3, dtype=getattr(pygpu, name), device=device),
               torch.zeros(3, dtype=getattr(torch, name)), 0)
        assert pygpu.tensor(a)[0, 1].item() == complex(a[0, 1])
    if device == "cpu":
        for arr in ([1 + 2j, 3 - 1j], [[1.5 + 2.25j, 0j], [3 - 1j, 2 - 2j]]):
            assert repr(pygpu.tensor(arr)) == repr(torch.tensor(arr))
        assert repr(pygpu.tensor([1 + 2j], dtype=pygpu.complex128)) == repr(
            torch.tensor([1 + 2j], dtype=torch.complex128))


def test_moves_count_bytes(device, fresh_stats):
    device = "sim:0" if device == "cpu" else device  # a move needs a device besides the host
    a = _c((4, 5), np.complex128)
    h = pygpu.tensor(a)
    pygpu.reset_stats()
    d = h.to(device)
    back = d.cpu()
    s = pygpu.stats()
    assert s.h2d_bytes == a.nbytes and s.d2h_bytes == a.nbytes
    np.testing.assert_array_equal(back.numpy(), a)


def test_casts_both_ways_as_torch(device):
    a = _c((3, 4), np.complex128)
    reals = [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_]
    for name, _nd, _tol in DTYPES:
        pd, td = getattr(pygpu, name), getattr(torch, name)
        p, t = _both(a, device)
        _check(f"complex128 -> {name}", p.to(pd), t.to(td), 1e-6)
        for rn in reals:
            r = (R.standard_normal((3, 4)) * 5).astype(rn)
            pr, tr = _both(r, device)
            _check(f"{rn.__name__} -> {name}", pr.to(pd), tr.to(td), 1e-6)
        # complex -> real: the real part, with PyTorch's warning
        for rn in ("float32", "float64"):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                got = p.to(pd).to(getattr(pygpu, rn))
            assert any("discards the imaginary part" in str(x.message) for x in w)
            _check(f"{name} -> {rn}", got, t.to(td).real.to(getattr(torch, rn)), 1e-6)
    # a strided (transposed) complex tensor made contiguous, cast and broadcast into a slice
    p, t = _both(a, device)
    _check("transpose contiguous", p.T.contiguous(), t.T.contiguous(), 0)
    q = pygpu.zeros(2, 3, 4, dtype=pygpu.complex64, device=device)
    q[1] = p
    tq = torch.zeros(2, 3, 4, dtype=torch.complex64)
    tq[1] = t
    _check("setitem", q, tq, 1e-6)


def test_real_imag_views_and_view_as(device):
    for name, nd, tol in DTYPES:
        a = _c((3, 4), nd)
        p, t = _both(a, device)
        _check("real", p.real, t.real, 0)
        _check("imag", p.imag, t.imag, 0)
        _check("view_as_real", pygpu.view_as_real(p), torch.view_as_real(t), 0)
        _check("view_as_complex", pygpu.view_as_complex(pygpu.view_as_real(p)),
               torch.view_as_complex(torch.view_as_real(t)), 0)
        _check("view of a slice", pygpu.view_as_real(p[:, 1:]), torch.view_as_real(t[:, 1:]), 0)
        # the views share memory: writes through real/imag reach the complex tensor
        p.real.fill_(1.0)
        p.imag[0] = 2.0
        t.real.fill_(1.0)
        t.imag[0] = 2.0
        _check("written through views", p, t, 0)
        assert pygpu.is_complex(p) and p.is_complex() and not p.real.is_complex()
    x = pygpu.ones(3, device=device)
    assert x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        x.imag
    bad = [(pygpu.ones(3, device=device), "last dimension of size 2"),
           (pygpu.ones(2, 2, device=device).T, "last dimension with stride 1"),
           (pygpu.ones(3, 2, dtype=pygpu.int64, device=device), "only supported for half, float and double"),
           (pygpu.ones(5, device=device)[1:].reshape(2, 2), "storage_offset divisible by 2")]
    for t, words in bad:
        with pytest.raises(RuntimeError, match=words):
            pygpu.view_as_complex(t)


def test_conj_angle_abs_complex_polar(device):
    for name, nd, tol in DTYPES:
        a = _c((2, 5), nd)
        p, t = _both(a, device)
        _check("conj", p.conj(), t.conj(), 0)
        assert p.conj().is_conj() is False  # pygpu materializes the conjugate
        _check("conj_physical", p.conj_physical(), t.conj_physical(), 0)
        _check("angle", p.angle(), t.angle(), tol)
        _check("abs", p.abs(), t.abs(), tol)
        _check("abs fn", pygpu.abs(p), torch.abs(t), tol)
        re, im = a.real.copy(), a.imag.copy()
        _check("complex", pygpu.complex(pygpu.tensor(re).to(device), pygpu.tensor(im).to(device)),
               torch.complex(torch.tensor(re), torch.tensor(im)), 0)
        mag = np.abs(re)
        _check("polar", pygpu.polar(pygpu.tensor(mag).to(device), pygpu.tensor(im).to(device)),
               torch.polar(torch.tensor(mag), torch.tensor(im)), tol)
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got scalar type Double"):
        pygpu.complex(pygpu.ones(2, device=device), pygpu.ones(2, dtype=pygpu.float64, device=device))


_BIN = [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b),
        ("div", lambda a, b: a / b), ("pow", lambda a, b: a ** b), ("eq", lambda a, b: a == b),
        ("ne", lambda a, b: a != b), ("add alpha", lambda a, b: a.add(b, alpha=2)),
        ("torch.mul", lambda a, b: (pygpu if isinstance(a, pygpu.Tensor) else torch).mul(a, b))]
_UN = [("neg", lambda x: -x), ("exp", lambda x: x.exp()), ("log", lambda x: x.log()),
       ("sqrt", lambda x: x.sqrt()), ("reciprocal", lambda x: x.reciprocal()),
       ("sin", lambda x: x.sin()), ("cos", lambda x: x.cos()), ("square", lambda x: x.square()),
       ("isnan", lambda x: x.isnan()), ("isfinite", lambda x: x.isfinite())]


def test_elementwise_against_torch(device):
    for name, nd, tol in DTYPES:
        a, b = _c((3, 4), nd), _c((4,), nd)
        pa, ta = _both(a, device)
        pb, tb = _both(b, device)
        for label, f in _BIN:
            _check(f"{name} {label} broadcast", f(pa, pb), f(ta, tb), tol * 10)
        for label, f in _UN:
            _check(f"{name} {label}", f(pa), f(ta), tol * 10)
        # mixed operands: a real tensor, Python numbers (complex included), 0-d tensors
        r = R.standard_normal((3, 4)).astype(np.float32)
        pr, tr = _both(r, device)
        for label, f in [("real + complex", lambda x, y: y + x), ("complex * real", lambda x, y: x * y),
                         ("complex / 2", lambda x, y: x / 2), ("2j * complex", lambda x, y: 2j * x),
                         ("complex - (1+1j)", lambda x, y: x - (1 + 1j)), ("pow 2", lambda x, y: x ** 2),
                         ("pow 0.5", lambda x, y: x ** 0.5), ("real ** 1j", lambda x, y: y ** 1j)]:
            _check(f"{name} {label}", f(pa, pr), f(ta, tr), 1e-5)  # (real ** 1j: complex64)
        # in place
        q, tq = pa.clone(), ta.clone()
        q += pb
        q.mul_(pb)
        q.exp_()
        tq += tb
        tq.mul_(tb)
        tq.exp_()
        _check(f"{name} in place", q, tq, tol * 100)
    with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast to the desired output type Float"):
        x = pygpu.ones(2, device=device)
        x += 1j


def test_sum_mean(device):
    for name, nd, tol in DTYPES:
        a = _c((3, 4, 5), nd)
        p, t = _both(a, device)
        for kw in [{}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"dim": (0, 2)}]:
            _check(f"{name} sum {kw}", p.sum(**kw), t.sum(**kw), tol * 10)
            _check(f"{name} mean {kw}", p.mean(**kw), t.mean(**kw), tol * 10)
        _check("pygpu.sum", pygpu.sum(p, 0), torch.sum(t, 0), tol * 10)


def test_matmul_mm_bmm(device):
    for name, nd, tol in DTYPES:
        a, b = _c((2, 3, 4), nd), _c((2, 4, 5), nd)
        pa, ta = _both(a, device)
        pb, tb = _both(b, device)
        _check("matmul batched", pa @ pb, ta @ tb, tol * 10)
        _check("bmm", pygpu.bmm(pa, pb), torch.bmm(ta, tb), tol * 10)
        _check("mm", pygpu.mm(pa[0], pb[0]), torch.mm(ta[0], tb[0]), tol * 10)
        _check("mm of a transpose", pa[0].T @ pa[1], ta[0].T @ ta[1], tol * 10)
        _check("matrix @ vector", pa[0] @ pb[0, :, 0], ta[0] @ tb[0, :, 0], tol * 10)
        _check("vector @ matrix", pa[0, 0] @ pb[0], ta[0, 0] @ tb[0], tol * 10)
        _check("broadcast batch", pa @ pb[0], ta @ tb[0], tol * 10)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        pygpu.ones(2, 2, dtype=pygpu.complex64, device=device) @ pygpu.ones(2, 2, device=device)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        pygpu.ones(2, 3, dtype=pygpu.complex64, device=device) @ pygpu.ones(2, 3, dtype=pygpu.complex64, device=device)


def test_refusals_as_torch(device):
    p = pygpu.tensor([1 + 2j, 3j], device=device)
    t = torch.tensor([1 + 2j, 3j])
    cases = [("lt", lambda x: x < x), ("ge", lambda x: x >= x), ("max", lambda x: x.max()),
             ("min", lambda x: x.min()), ("relu", lambda x: x.relu()),
             ("floor", lambda x: x.floor()), ("floor_divide", lambda x: x // x),
             ("argmax", lambda x: x.argmax())]
    for label, f in cases:
        with pytest.raises(Exception) as want:
            f(t)
        with pytest.raises(type(want.value)) as got:
            f(p)
        assert str(got.value) == str(want.value), label
    # a complex tensor can require grad, as in PyTorch (tests/test_complex_autograd.py)
    assert pygpu.ones(2, dtype=pygpu.complex64, device=device).requires_grad_(True).requires_grad


def test_save_load_through_torchs_format_and_safetensors(device, tmp_path):
    import safetensors.torch as st
    for name, nd, _ in DTYPES:
        a = _c((3, 4), nd)
        p, t = _both(a, device)
        pygpu.save({"x": p, "col": p[:, 1], "zero_d": p[2, 3]}, tmp_path / "p.pt")
        got = torch.load(tmp_path / "p.pt", map_location="cpu", weights_only=True)
        assert got["x"].dtype is getattr(torch, name) and got["zero_d"].shape == ()
        np.testing.assert_array_equal(got["x"].numpy(), a)
        np.testing.assert_array_equal(got["col"].numpy(), a[:, 1])
        assert got["zero_d"].item() == complex(a[2, 3])
        # t.conj() carries torch's conjugate bit, its imag the negative bit: pygpu applies them
        torch.save({"x": t, "row": t[1], "conj": t.conj()}, tmp_path / "t.pt")
        torch.save({"neg": t.conj().imag}, tmp_path / "n.pt")  # a real view: a file of its own
        back = pygpu.load(tmp_path / "t.pt", map_location=device)
        assert back["x"].dtype is getattr(pygpu, name) and str(back["x"].device).startswith(
            device.split(":")[0])
        np.testing.assert_array_equal(back["x"].cpu().numpy(), a)
        np.testing.assert_array_equal(back["row"].cpu().numpy(), a[1])
        np.testing.assert_array_equal(back["conj"].cpu().numpy(), a.conj())
        np.testing.assert_array_equal(pygpu.load(tmp_path / "n.pt")["neg"].numpy(), -a.imag)
        np.testing.assert_array_equal(back["x"].cpu().numpy(), a)  # the shared storage as saved
        path = tmp_path / f"{name}.safetensors"
        if name == "complex64":  # safetensors' C64, both ways with safetensors' own torch API
            pygpu.save({"x": p}, path)
            np.testing.assert_array_equal(st.load_file(str(path))["x"].numpy(), a)
            st.save_file({"y": t * 2}, str(path))
            np.testing.assert_array_equal(pygpu.load(path)["y"].numpy(), a * 2)
        else:  # the format has no complex128: refused by name, as safetensors.torch refuses it
            with pytest.raises(KeyError):
                st.save_file({"y": t}, str(path))
            with pytest.raises(TypeError, match="complex128"):
                pygpu.save({"x": p}, path)
