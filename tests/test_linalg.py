# test_linalg.py - torch.linalg (one LINALG node: LAPACK on cpu and sim, cuSOLVER on cuda
# (the emulated device's stand-in, tests/cuda_emu/emu_cusolver.cpp, where no GPU is), the
# sub-ops cuSOLVER lacks moved to the cpu and back) and the shape/matrix functions
# (pygpu/_tensor/shape.py) against PyTorch on every device: values, gradients (float64) where
# pygpu differentiates, errors, and the counted transfers (the info read back, the cpu
# fallback). Each test loops over its cases (a failure names one).
import math
import os

import numpy as np
import pytest
import torch

import pygpu

from _helpers import to_device

R = np.random.default_rng(0)


def _spd(n, batch=()):
    a = R.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _compare(label, got, want, rtol=1e-9, atol=1e-10):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), label
        for k, (g, w) in enumerate(zip(got, want)):
            _compare(f"{label}[{k}]", g, w, rtol, atol)
        return
    w = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    g = got.detach().numpy() if isinstance(got, pygpu.Tensor) else np.asarray(got)
    assert g.shape == w.shape, f"{label}: shape {g.shape} != torch {w.shape}"
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=label)


# (label, fn(module, *tensors), inputs, differentiable)
_VALUES = [
    ("solve", lambda m, a, b: m.linalg.solve(a, b), [R.standard_normal((4, 4)), R.standard_normal((4, 2))], True),
    ("solve vector", lambda m, a, b: m.linalg.solve(a, b), [R.standard_normal((4, 4)), R.standard_normal(4)], True),
    ("solve batch broadcast", lambda m, a, b: m.linalg.solve(a, b),
     [R.standard_normal((2, 3, 3)), R.standard_normal((3, 1))], True),
    ("solve left=False", lambda m, a, b: m.linalg.solve(a, b, left=False),
     [R.standard_normal((3, 3)), R.standard_normal((2, 3))], True),
    ("inv", lambda m, a: m.linalg.inv(a), [R.standard_normal((2, 4, 4))], True),
    ("det", lambda m, a: m.linalg.det(a), [R.standard_normal((3, 3, 3))], True),
    ("slogdet", lambda m, a: m.linalg.slogdet(a)[1], [R.standard_normal((3, 4, 4))], True),
    ("slogdet sign", lambda m, a: m.linalg.slogdet(a)[0], [R.standard_normal((5, 3, 3))], False),
    ("logdet", lambda m, a: m.logdet(a), [_spd(3)], True),
    ("cholesky", lambda m, a: m.linalg.cholesky(a), [_spd(4, (2,))], True),
    ("cholesky upper", lambda m, a: m.linalg.cholesky(a, upper=True), [_spd(3)], True),
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), [_spd(4)], True),
    ("eigh values", lambda m, a: m.linalg.eigh(a)[0], [_spd(4, (2,))], True),
    ("eigh vectors (sign-fixed)", lambda m, a: _signfix(m, m.linalg.eigh(a)[1]), [_spd(4)], True),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), [R.standard_normal((2, 5, 3))], True),
    ("svd S", lambda m, a: m.linalg.svd(a, full_matrices=False)[1], [R.standard_normal((3, 5))], True),
    ("svd reconstructs", lambda m, a: _svd_rebuild(m, a), [R.standard_normal((4, 6))], False),
    ("qr reconstructs", lambda m, a: _qr_rebuild(m, a, "reduced"), [R.standard_normal((5, 3))], False),
    ("qr complete", lambda m, a: _qr_rebuild(m, a, "complete"), [R.standard_normal((2, 3, 5))], False),
    ("qr R abs", lambda m, a: m.linalg.qr(a)[1].abs(), [R.standard_normal((5, 3))], False),
    ("lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, [R.standard_normal((6, 3)), R.standard_normal((6, 2))], False),
    ("pinv", lambda m, a: m.linalg.pinv(a), [R.standard_normal((5, 3))], False),
    ("matrix_rank", lambda m, a: m.linalg.matrix_rank(a), [R.standard_normal((4, 2)) @ R.standard_normal((2, 5))], False),
    ("matrix_power", lambda m, a: m.linalg.matrix_power(a, 3), [R.standard_normal((3, 3))], True),
    ("matrix_power -2", lambda m, a: m.linalg.matrix_power(a, -2), [_spd(3)], True),
    ("multi_dot", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]),
     [R.standard_normal((2, 3)), R.standard_normal((3, 4)), R.standard_normal((4, 2))], True),
    ("norm default", lambda m, a: m.linalg.norm(a), [R.standard_normal((3, 4))], True),
    ("norm vector 3", lambda m, a: m.linalg.norm(a, 3, dim=1), [R.standard_normal((3, 4))], True),
    ("vector_norm inf", lambda m, a: m.linalg.vector_norm(a, math.inf, dim=0), [R.standard_normal((3, 4))], True),
    ("vector_norm 1 keepdim", lambda m, a: m.linalg.vector_norm(a, 1, dim=-1, keepdim=True), [R.standard_normal((3, 4))], True),
    ("vector_norm 0.5", lambda m, a: m.linalg.vector_norm(a, 0.5), [R.standard_normal(5)], True),
    ("vector_norm at 0", lambda m, a: m.linalg.vector_norm(a * 0.0), [R.standard_normal(4)], True),
    ("matrix_norm fro", lambda m, a: m.linalg.matrix_norm(a), [R.standard_normal((2, 3, 4))], True),
    ("matrix_norm nuc", lambda m, a: m.linalg.matrix_norm(a, "nuc"), [R.standard_normal((3, 4))], True),
    ("matrix_norm 2", lambda m, a: m.linalg.matrix_norm(a, 2), [R.standard_normal((3, 4))], True),
    ("matrix_norm 1", lambda m, a: m.linalg.matrix_norm(a, 1), [R.standard_normal((3, 4))], True),
    ("matrix_norm -inf", lambda m, a: m.linalg.matrix_norm(a, -math.inf), [R.standard_normal((3, 4))], True),
    ("cond", lambda m, a: m.linalg.cond(a), [R.standard_normal((3, 3))], True),
    ("vecdot", lambda m, a, b: m.linalg.vecdot(a, b), [R.standard_normal((3, 4)), R.standard_normal(4)], True),
    ("linalg.cross", lambda m, a, b: m.linalg.cross(a, b), [R.standard_normal((2, 3)), R.standard_normal((2, 3))], True),
]


def _signfix(m, V):
    """eigenvectors up to sign: each column made to have a positive first entry"""
    s = m.sign(V[..., :1, :])
    return V * s


def _svd_rebuild(m, a):
    U, S, Vh = m.linalg.svd(a, full_matrices=False)
    return (U * S.unsqueeze(-2)) @ Vh


def _qr_rebuild(m, a, mode):
    Q, R_ = m.linalg.qr(a, mode=mode)
    return Q @ R_


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_linalg_matches_torch(device, dtype):
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == "float64" else dict(rtol=2e-4, atol=2e-5)
    for label, fn, arrays, _ in _VALUES:
        arrays = [a.astype(dtype) for a in arrays]
        want = fn(torch, *[torch.tensor(a) for a in arrays])
        got = fn(pygpu, *[to_device(a, device) for a in arrays])
        assert pygpu.Tensor is type(got) and str(got.device).startswith(device.split(":")[0]), label
        _compare(label, got, want, **tol)


def test_linalg_gradients_match_torch(device):
    rng = np.random.default_rng(1)
    for label, fn, arrays, differentiable in _VALUES:
        if not differentiable:
            continue
        tt = [torch.tensor(a, requires_grad=True) for a in arrays]
        pt = [to_device(a, device).requires_grad_() for a in arrays]
        want = fn(torch, *tt)
        got = fn(pygpu, *pt)
        proj = rng.standard_normal(tuple(want.shape))
        (want * torch.tensor(proj)).sum().backward()
        (got * to_device(proj, device)).sum().backward()
        for k, (p, t) in enumerate(zip(pt, tt)):
            _compare(f"{label}: gradient of input {k}", p.grad, t.grad, rtol=1e-7, atol=1e-9)


def test_linalg_errors_and_fallback_transfers(device):
    sing = to_device(np.array([[1.0, 2.0], [2.0, 4.0]]), device)
    with pytest.raises(pygpu.linalg.LinAlgError, match="linalg.inv: .*singular"):
        pygpu.linalg.inv(sing)
    with pytest.raises(RuntimeError, match="singular"):
        pygpu.linalg.solve(sing, to_device(np.ones(2), device))
    with pytest.raises(pygpu.linalg.LinAlgError, match="not positive-definite .*order 2"):
        pygpu.linalg.cholesky(to_device(np.array([[1.0, 2.0], [2.0, 1.0]]), device))
    with pytest.raises(TypeError, match="linalg.inv: Expected a floating point.*int64"):
        pygpu.linalg.inv(to_device(np.eye(2, dtype=np.int64), device))
    with pytest.raises(RuntimeError, match="square matrices"):
        pygpu.linalg.det(to_device(np.ones((2, 3)), device))
    L, info = pygpu.linalg.cholesky_ex(to_device(-np.eye(2), device))
    assert int(info.item()) == 1
    x = to_device(R.standard_normal((3, 3)), device).requires_grad_()
    with pytest.raises(NotImplementedError, match="linalg.qr"):
        pygpu.linalg.qr(x)[0].sum().backward()
    a = to_device(_spd(3), device)
    with pygpu.track() as t:
        r = pygpu.linalg.inv(a)
    assert r.device == a.device
    if device == "cpu":
        assert (t.d2h_count, t.h2d_count) == (0, 0), t
    elif pygpu._C._has_node("LINALG", a, "INV"):  # sim, cuda: the node there, its info read back
        assert (t.d2h_count, t.d2h_bytes, t.h2d_count, t.implicit_count) == (1, 8, 0, 1), t
    else:  # cuda without cuSOLVER: the documented fallback, one explicit transfer each way
        assert (t.d2h_count, t.h2d_count, t.implicit_count) == (1, 1, 0), t


@pytest.mark.parametrize("upper", [False, True])
def test_ex_variants_report_info_per_matrix(device, upper):
    """cholesky_ex and inv_ex factor every matrix of a batch and report LAPACK's info per
    matrix (int32, no exception, no sync): the failed ones' index or order, 0 elsewhere; a
    failed Cholesky leaves LAPACK's partial factor, as PyTorch's does."""
    n = 4
    A = np.stack([_spd(n) for _ in range(6)]).reshape(3, 2, n, n)
    flat = A.reshape(-1, n, n)
    for i in (0, 3, 4):
        flat[i, i % n, i % n] = -50.0
    L, info = pygpu.linalg.cholesky_ex(to_device(A, device), upper=upper)
    tL, tinfo = torch.linalg.cholesky_ex(torch.tensor(A), upper=upper)
    assert info.dtype == pygpu.int32 and info.shape == (3, 2)
    np.testing.assert_array_equal(info.cpu().numpy(), tinfo.numpy())
    ok = tinfo.numpy() == 0
    if device.startswith("cuda"):  # a failed matrix's partial factor is cuSOLVER's own there
        np.testing.assert_allclose(L.cpu().numpy()[ok], tL.numpy()[ok], rtol=1e-9, atol=1e-10)
    else:  # LAPACK's potrf on cpu and sim, as torch's CPU
        _compare("cholesky_ex's L", L, tL)
    B = flat.copy()
    B[1] = 0.0
    inverse, info = pygpu.linalg.inv_ex(to_device(B, device))
    tinv, tinfo = torch.linalg.inv_ex(torch.tensor(B))
    np.testing.assert_array_equal(info.cpu().numpy(), tinfo.numpy())
    ok = tinfo.numpy() == 0
    np.testing.assert_allclose(inverse.cpu().numpy()[ok], tinv.numpy()[ok], rtol=1e-9)
    assert pygpu.linalg.cholesky_ex(to_device(_spd(n), device)).L.shape == (n, n)
    with pytest.raises(pygpu.linalg.LinAlgError, match=r"Batch element 0"):
        pygpu.linalg.cholesky_ex(to_device(A, device), check_errors=True)
    a = to_device(_spd(3, (2,)), device).requires_grad_()
    t = torch.tensor(a.detach().cpu().numpy(), requires_grad=True)
    pygpu.linalg.cholesky_ex(a, upper=upper).L.sum().backward()
    torch.linalg.cholesky_ex(t, upper=upper).L.sum().backward()
    _compare("cholesky_ex's gradient", a.grad, t.grad, rtol=1e-8)


def test_each_sub_op_runs_where_its_backend_says(device):
    """The backend answers per sub-op (supports_node): cpu and sim run every LINALG row;
    cuda runs the rows with a cuda function (cuSOLVER) once cuSOLVER is loaded, and the
    others (LSTSQ) go to the cpu and back, explicitly and counted."""
    from pygpu.backends import _cusolver
    a, b = to_device(_spd(3), device), to_device(R.standard_normal((3, 2)), device)
    rows = {r[1]: r[5] for r in pygpu._C._subop_table() if r[0] == "LINALG"}
    got = {op: pygpu._C._has_node("LINALG", a, op, b if cols[0] == "2" else None)
           for op, cols in rows.items()}
    if device.startswith("cuda"):
        loaded = _cusolver.version() > 0
        if os.environ.get("PYGPU_CUSOLVER_LIBRARY"):  # the emulated lane names its stand-in
            assert loaded, "PYGPU_CUSOLVER_LIBRARY is set but cuSOLVER did not load"
        want = {op: loaded and cols[3] != "NO_CUDA" for op, cols in rows.items()}
    else:
        want = {op: True for op in rows}
    assert got == want
    if device.startswith("cuda"):  # an empty matrix is the cpu's (its LAPACK wrappers define it)
        assert not pygpu._C._has_node("LINALG", to_device(np.zeros((0, 0)), device), "INV")
    with pygpu.track() as t:
        x = pygpu.linalg.lstsq(a, b).solution
    assert x.device == a.device
    np.testing.assert_allclose(x.numpy(), np.linalg.lstsq(_np(a), _np(b), rcond=None)[0],
                               rtol=1e-9)
    if not got["LSTSQ"]:  # moved to the cpu: explicit transfers, no implicit ones
        assert t.implicit_count == 0 and t.d2h_count >= 2 and t.h2d_count >= 1, t


def _np(t):
    return t.cpu().numpy()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_factorizations_of_batches_and_shapes_match_torch(device, dtype):
    """Every sub-op the device runs, over batches and the shapes that take each branch of
    its kernel (cuda: A wide or tall for gesvd, which takes tall matrices only; QR's complete
    Q wider than A; a left side with several columns), against torch."""
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == "float64" else dict(rtol=3e-4, atol=3e-5)
    rng = np.random.default_rng(7)

    def arr(*shape):
        return rng.standard_normal(shape).astype(dtype)

    def spd(n, batch=()):
        return _spd(n, batch).astype(dtype)

    cases = [
        ("lu_factor", lambda m, a: m.linalg.lu_factor(a).LU, [arr(3, 4, 4)]),
        ("lu_factor pivots", lambda m, a: m.linalg.lu_factor(a).pivots.long(), [arr(2, 5, 5)]),
        ("solve many columns", lambda m, a, b: m.linalg.solve(a, b), [arr(2, 5, 5), arr(2, 5, 3)]),
        ("inv batch", lambda m, a: m.linalg.inv(a), [arr(2, 3, 3, 3)]),
        ("det batch", lambda m, a: m.linalg.det(a), [arr(4, 3, 3)]),
        ("cholesky batch", lambda m, a: m.linalg.cholesky(a), [spd(5, (3,))]),
        ("cholesky upper batch", lambda m, a: m.linalg.cholesky(a, upper=True), [spd(4, (2,))]),
        ("qr tall", lambda m, a: _qr_rebuild(m, a, "reduced"), [arr(2, 6, 3)]),
        ("qr wide", lambda m, a: _qr_rebuild(m, a, "reduced"), [arr(3, 5)]),
        ("qr complete tall", lambda m, a: _qr_rebuild(m, a, "complete"), [arr(6, 3)]),
        ("qr complete Q orthogonal", lambda m, a: _gram(m, m.linalg.qr(a, mode="complete")[0]),
         [arr(2, 6, 3)]),
        ("qr r", lambda m, a: m.linalg.qr(a, mode="r")[1].abs(), [arr(5, 4)]),
        ("svd wide", lambda m, a: _svd_rebuild(m, a), [arr(2, 3, 6)]),
        ("svd tall", lambda m, a: _svd_rebuild(m, a), [arr(2, 6, 3)]),
        ("svd square S", lambda m, a: m.linalg.svd(a)[1], [arr(3, 4, 4)]),
        ("svd full U tall", lambda m, a: _gram(m, m.linalg.svd(a)[0]), [arr(5, 2)]),
        ("svd full Vh wide", lambda m, a: _gram(m, m.linalg.svd(a)[2]), [arr(2, 5)]),
        ("svd full rebuilds tall", lambda m, a: _svd_full_rebuild(m, a), [arr(5, 3)]),
        ("svd full rebuilds wide", lambda m, a: _svd_full_rebuild(m, a), [arr(3, 5)]),
        ("svdvals tall", lambda m, a: m.linalg.svdvals(a), [arr(3, 7, 2)]),
        ("eigh upper", lambda m, a: m.linalg.eigh(a, UPLO="U")[0], [spd(5, (2,))]),
        ("eigh vectors rebuild", lambda m, a: _eigh_rebuild(m, a), [spd(4, (3,))]),
        ("eigvalsh reads the lower triangle", lambda m, a: m.linalg.eigvalsh(m.tril(a)),
         [spd(4)]),
        ("eigvalsh U reads the upper triangle", lambda m, a: m.linalg.eigvalsh(m.triu(a), "U"),
         [spd(4, (2,))]),
        ("cholesky reads the lower triangle", lambda m, a: m.linalg.cholesky(m.tril(a)),
         [spd(4)]),
        ("cholesky upper reads the upper triangle",
         lambda m, a: m.linalg.cholesky(m.triu(a), upper=True), [spd(4)]),
    ]
    for label, fn, arrays in cases:
        want = fn(torch, *[torch.tensor(a) for a in arrays])
        got = fn(pygpu, *[to_device(a, device) for a in arrays])
        assert str(got.device).startswith(device.split(":")[0]), label
        _compare(label, got, want, **tol)


def _gram(m, Q):
    """Q^T Q (or Q Q^T for a wide Q): the identity when the columns (rows) are orthonormal"""
    return _mT(Q) @ Q if Q.shape[-2] >= Q.shape[-1] else Q @ _mT(Q)


def _mT(x):
    return x.transpose(-2, -1)


def _svd_full_rebuild(m, a):
    U, S, Vh = m.linalg.svd(a, full_matrices=True)
    k = S.shape[-1]
    return (U[..., :, :k] * S.unsqueeze(-2)) @ Vh[..., :k, :]


def _eigh_rebuild(m, a):
    w, V = m.linalg.eigh(a)
    return (V * w.unsqueeze(-2)) @ _mT(V)


# ---- shape and matrix functions --------------------------------------------------------------

_SHAPE = [
    ("diag 1d", lambda m, a: m.diag(a), [R.standard_normal(3)]),
    ("diag 1d offset", lambda m, a: m.diag(a, -1), [R.standard_normal(3)]),
    ("diag 2d", lambda m, a: m.diag(a, 1), [R.standard_normal((3, 4))]),
    ("diagonal", lambda m, a: a.diagonal(-1, 0, 2), [R.standard_normal((3, 2, 4))]),
    ("diag_embed", lambda m, a: m.diag_embed(a, 1, 0, 2), [R.standard_normal((2, 3))]),
    ("tril", lambda m, a: m.tril(a, -1), [R.standard_normal((2, 3, 4))]),
    ("triu", lambda m, a: a.triu(1), [R.standard_normal((4, 3))]),
    ("trace", lambda m, a: m.trace(a), [R.standard_normal((3, 4))]),
    ("roll", lambda m, a: m.roll(a, (1, -2), (0, 1)), [R.standard_normal((3, 4))]),
    ("roll flat", lambda m, a: a.roll(5), [R.standard_normal((3, 4))]),
    ("rot90", lambda m, a: m.rot90(a, 1, (0, 1)), [R.standard_normal((2, 3, 4))]),
    ("rot90 -1", lambda m, a: m.rot90(a, -1, (1, 2)), [R.standard_normal((2, 3, 4))]),
    ("repeat_interleave", lambda m, a: m.repeat_interleave(a, 2, dim=1), [R.standard_normal((2, 3))]),
    ("repeat_interleave flat", lambda m, a: a.repeat_interleave(3), [R.standard_normal((2, 2))]),
    ("repeat_interleave counts", lambda m, a: a.repeat_interleave(m.tensor([1, 0, 2], device=a.device), dim=0),
     [R.standard_normal((3, 2))]),
    ("kron", lambda m, a, b: m.kron(a, b), [R.standard_normal((2, 3)), R.standard_normal((3, 2))]),
    ("kron mixed ndim", lambda m, a, b: m.kron(a, b), [R.standard_normal(2), R.standard_normal((3, 2))]),
    ("cross", lambda m, a, b: m.cross(a, b, dim=1), [R.standard_normal((4, 3)), R.standard_normal((4, 3))]),
    ("cdist", lambda m, a, b: m.cdist(a, b), [R.standard_normal((4, 3)), R.standard_normal((5, 3))]),
    ("cdist p1 batch", lambda m, a, b: m.cdist(a, b, p=1.0), [R.standard_normal((2, 4, 3)), R.standard_normal((2, 5, 3))]),
    ("cov", lambda m, a: m.cov(a), [R.standard_normal((3, 6))]),
    ("cov weights", lambda m, a: m.cov(a, correction=0, aweights=m.tensor([1., 2, 3, 1, 1, 2], dtype=a.dtype, device=a.device)),
     [R.standard_normal((3, 6))]),
    ("corrcoef", lambda m, a: m.corrcoef(a), [R.standard_normal((3, 6))]),
    ("broadcast_to", lambda m, a: m.broadcast_to(a, (2, 3, 4)), [R.standard_normal((3, 1))]),
    ("movedim", lambda m, a: m.movedim(a, 0, -1), [R.standard_normal((2, 3, 4))]),
    ("flip", lambda m, a: m.flip(a, (0, 2)), [R.standard_normal((2, 3, 4))]),
]


def test_shape_functions_match_torch_with_gradients(device):
    rng = np.random.default_rng(2)
    for label, fn, arrays in _SHAPE:
        tt = [torch.tensor(a, requires_grad=True) for a in arrays]
        pt = [to_device(a, device).requires_grad_() for a in arrays]
        want = fn(torch, *tt)
        got = fn(pygpu, *pt)
        _compare(label, got, want)
        proj = rng.standard_normal(tuple(want.shape))
        (want * torch.tensor(proj)).sum().backward()
        (got * to_device(proj, device)).sum().backward()
        for k, (p, t) in enumerate(zip(pt, tt)):
            _compare(f"{label}: gradient of input {k}", p.grad, t.grad)


def test_counting_and_splitting_match_torch(device):
    ints = np.array([1, 3, 3, 0, 7, 1, 1])
    vals = R.standard_normal(20) * 2
    seq = np.sort(R.standard_normal(8))
    q = R.standard_normal((2, 5))
    cases = [
        ("bincount", lambda m, x: m.bincount(x), [ints]),
        ("bincount minlength", lambda m, x: x.bincount(minlength=10), [ints]),
        ("bincount weights", lambda m, x, w: m.bincount(x, w), [ints, R.standard_normal(7)]),
        ("histc", lambda m, x: m.histc(x, bins=6, min=-2, max=2), [vals]),
        ("histc range", lambda m, x: x.histc(bins=4), [vals]),
        ("searchsorted", lambda m, s, v: m.searchsorted(s, v), [seq, q]),
        ("searchsorted right", lambda m, s, v: m.searchsorted(s, v, right=True), [seq, np.r_[seq[:3], 9.0]]),
        ("searchsorted side", lambda m, s, v: m.searchsorted(s, v, side="right"), [seq, q]),
        ("bucketize", lambda m, v, s: m.bucketize(v, s), [q, seq]),
        ("tril_indices", lambda m: m.tril_indices(3, 4, 1), []),
        ("triu_indices", lambda m: m.triu_indices(4, 3, -1), []),
    ]
    for label, fn, arrays in cases:
        want = fn(torch, *[torch.tensor(a) for a in arrays])
        got = fn(pygpu, *[to_device(a, device) for a in arrays])
        _compare(label, got, want)
        assert got.dtype.name == str(want.dtype).replace("torch.", ""), label
    x = to_device(np.arange(10.0), device)
    for spec in (3, [2, 5], (1, -3, 20)):
        got = pygpu.tensor_split(x, spec)
        want = torch.tensor_split(torch.arange(10.0, dtype=torch.float64), spec)
        _compare(f"tensor_split {spec}", [g for g in got], [w for w in want])
    got = pygpu.block_diag(to_device(np.ones((1, 2)), device), to_device(np.full((2, 1), 2.0), device))
    _compare("block_diag", got, torch.block_diag(torch.ones(1, 2, dtype=torch.float64),
                                                 torch.full((2, 1), 2.0, dtype=torch.float64)))


def test_shape_function_errors(device):
    x = to_device(np.ones(3), device)
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        pygpu.tril(x)
    with pytest.raises(RuntimeError, match="diag\\(\\): Supports 1D or 2D tensors"):
        pygpu.diag(to_device(np.ones((2, 2, 2)), device))
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative"):
        pygpu.bincount(to_device(np.array([-1, 2]), device))
    with pytest.raises(RuntimeError, match="must have length 3"):
        pygpu.cross(to_device(np.ones((2, 4)), device), to_device(np.ones((2, 4)), device), dim=1)


@pytest.mark.parametrize("shape,scale", [((4, 4), 1.0), ((3, 5, 5), 3.0), ((2, 2), 50.0),
                                         ((1, 1), 0.1), ((2, 0, 0), 1.0)])
def test_matrix_exp_matches_torch_with_its_gradient(device, shape, scale):
    rng = np.random.default_rng(5)
    A = rng.standard_normal(shape) * scale
    pa = pygpu.tensor(A, device=device, requires_grad=True)
    ta = torch.tensor(A, requires_grad=True)
    po, to = pygpu.matrix_exp(pa), torch.matrix_exp(ta)
    big = max(1.0, float(np.abs(to.detach().numpy()).max()) if A.size else 1.0)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-12,
                               atol=1e-13 * big)
    np.testing.assert_allclose(pygpu.linalg.matrix_exp(pa).detach().numpy(),
                               pa.matrix_exp().detach().numpy())
    if A.size:
        w = rng.standard_normal(shape)
        (po * pygpu.tensor(w, device=device)).sum().backward()
        (to * torch.tensor(w)).sum().backward()
        gbig = float(np.abs(ta.grad.numpy()).max())
        np.testing.assert_allclose(pa.grad.numpy(), ta.grad.numpy(), rtol=1e-11,
                                   atol=1e-13 * gbig)
    with pytest.raises(RuntimeError, match="linalg.matrix_exp: A must be batches of square "
                                           "matrices, but they are 2 by 3 matrices"):
        pygpu.matrix_exp(pygpu.zeros(2, 3, device=device))


@pytest.mark.parametrize("shape", [(20, 15), (15, 20), (2, 20, 15)])
def test_svd_lowrank_and_pca_lowrank_recover_a_low_rank_matrix_as_torch(device, shape):
    rng = np.random.default_rng(8)
    m, n = shape[-2:]
    A = rng.standard_normal(shape[:-1] + (4,)) @ rng.standard_normal((4, n))
    pa = pygpu.tensor(A, device=device)
    U, S, V = pygpu.svd_lowrank(pa, q=5)
    Ut, St, Vt = torch.svd_lowrank(torch.tensor(A), q=5)
    assert tuple(U.shape) == tuple(Ut.shape) and tuple(V.shape) == tuple(Vt.shape)
    np.testing.assert_allclose(S.numpy()[..., :4], St.numpy()[..., :4], rtol=1e-10)
    rec = (U.numpy() * S.numpy()[..., None, :]) @ np.swapaxes(V.numpy(), -1, -2)
    np.testing.assert_allclose(rec, A, atol=1e-10)
    eye = np.swapaxes(U.numpy(), -1, -2) @ U.numpy()
    np.testing.assert_allclose(eye, np.broadcast_to(np.eye(5), eye.shape), atol=1e-10)
    for center in (True, False):
        _, S2, _ = pygpu.pca_lowrank(pa, q=4, center=center)
        _, St2, _ = torch.pca_lowrank(torch.tensor(A), q=4, center=center)
        np.testing.assert_allclose(S2.numpy(), St2.numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="must be non-negative integer and not greater than"):
        pygpu.svd_lowrank(pa, q=min(m, n) + 1)
    with pytest.raises(ValueError, match="niter\\(=-1\\) must be non-negative integer"):
        pygpu.pca_lowrank(pa, niter=-1)
