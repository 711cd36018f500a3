# test_sparse.py - COO sparse tensors (pygpu/sparse/__init__.py) against torch.sparse on every
# device: construction and its checks, coalesce (sorted, duplicates summed), to_dense,
# Tensor.to_sparse (hybrid too), the products (sparse.mm, spmm, mm, @ on either side) with
# their gradients to the dense operand and to the values, sums and arithmetic; the products
# with a sparse result (smm, hspmm, sspaddmm and their older names dsmm, hsmm, saddmm) in
# PyTorch's uncoalesced layout, Tensor.sparse_mask, a strided tensor's sparse/dense dims.
import numpy as np
import pytest
import torch

import pygpu

from _helpers import to_device

IDX = np.array([[0, 1, 1, 2, 0, 3], [2, 0, 2, 1, 2, 3]])
VAL = np.array([3.0, 4.0, 5.0, 6.0, 1.0, -2.0])


def _both(device, idx=IDX, val=VAL, size=(4, 4)):
    s = pygpu.sparse_coo_tensor(to_device(idx, device), to_device(val, device), size)
    t = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val), size)
    return s, t


def test_construction_coalesce_and_dense(device):
    s, t = _both(device)
    assert s.is_sparse and not s.is_coalesced() and s.shape == (4, 4) and s._nnz() == 6
    assert s.layout is pygpu.sparse_coo and s.device.type == device.split(":")[0]
    np.testing.assert_array_equal(s.to_dense().numpy(), t.to_dense().numpy())
    c, tc = s.coalesce(), t.coalesce()
    assert c.is_coalesced()
    np.testing.assert_array_equal(c.indices().numpy(), tc.indices().numpy())
    np.testing.assert_array_equal(c.values().numpy(), tc.values().numpy())
    with pytest.raises(RuntimeError, match="uncoalesced tensor, please call .coalesce"):
        s.indices()
    # inferred size, hybrid values (nnz, 2), to(dtype)
    h = pygpu.sparse_coo_tensor(to_device(IDX[:, :3], device), to_device(np.ones((3, 2)), device))
    assert h.shape == (2, 3, 2) and h.dense_dim() == 1 and h.sparse_dim() == 2
    assert s.to(pygpu.float32).dtype.name == "float32"
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        pygpu.sparse_coo_tensor(to_device(IDX, device), to_device(VAL, device), (3, 4))
    with pytest.raises(RuntimeError, match="indices and values must have same nnz"):
        pygpu.sparse_coo_tensor(to_device(IDX, device), to_device(VAL[:2], device), (4, 4))


def test_to_sparse_round_trips(device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 2)) * (rng.random((3, 4, 2)) < 0.4)
    for k in (None, 1, 2):
        s = to_device(x, device).to_sparse(k) if k else to_device(x, device).to_sparse()
        t = torch.tensor(x).to_sparse(k) if k else torch.tensor(x).to_sparse()
        np.testing.assert_array_equal(s.indices().numpy(), t.indices().numpy(), err_msg=str(k))
        np.testing.assert_array_equal(s.values().numpy(), t.values().numpy(), err_msg=str(k))
        np.testing.assert_array_equal(s.to_dense().numpy(), x, err_msg=str(k))
    assert to_device(x, device).is_sparse is False


def test_products_match_torch_with_gradients(device):
    rng = np.random.default_rng(1)
    d = rng.standard_normal((4, 3))
    cases = [
        ("sparse.mm", lambda m, s, x: m.sparse.mm(s, x)),
        ("spmm", lambda m, s, x: m.spmm(s, x)),
        ("mm", lambda m, s, x: m.mm(s, x)),
        ("matmul operator", lambda m, s, x: s @ x),
        ("dense @ sparse", lambda m, s, x: x.t() @ s),
        ("coalesced", lambda m, s, x: m.sparse.mm(s.coalesce(), x)),
        ("vector", lambda m, s, x: m.mv(s.to_dense(), x[:, 0]) if m is torch else s @ x[:, 0]),
    ]
    for label, fn in cases:
        s, t = _both(device)
        s = pygpu.sparse_coo_tensor(s._indices(), s._values().detach(), s.shape, requires_grad=True)
        t = torch.sparse_coo_tensor(t._indices(), t._values().detach(), t.shape, requires_grad=True)
        xp = to_device(d, device).requires_grad_()
        xt = torch.tensor(d, requires_grad=True)
        got, want = fn(pygpu, s, xp), fn(torch, t, xt)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12,
                                   err_msg=label)
        proj = rng.standard_normal(tuple(want.shape))
        (got * to_device(proj, device)).sum().backward()
        (want * torch.tensor(proj)).sum().backward()
        np.testing.assert_allclose(xp.grad.numpy(), xt.grad.numpy(), rtol=1e-12,
                                   err_msg=f"{label}: gradient of the dense operand")
        if t.grad is not None and label != "vector":  # each stored value's gradient
            tg = (t.grad.coalesce().to_dense() if t.grad.is_sparse else t.grad).numpy()
            idx = s._indices().numpy()
            np.testing.assert_allclose(s.grad.numpy(), tg[idx[0], idx[1]], rtol=1e-12,
                                       err_msg=f"{label}: gradient of values")
    s, _ = _both(device)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        pygpu.sparse.mm(s, to_device(np.ones((3, 2)), device))


def test_arithmetic_and_sums(device):
    s, t = _both(device)
    s2, t2 = _both(device, IDX[:, :2], VAL[:2] * 10)
    for label, got, want in [
        ("sum", pygpu.sparse.sum(s), torch.sparse.sum(t)),
        ("sum dim", pygpu.sparse.sum(s, 1), torch.sparse.sum(t, 1).to_dense()),
        ("scale", (s * 2.0).to_dense(), (t * 2.0).to_dense()),
        ("neg", (-s).to_dense(), (-t).to_dense()),
        ("add", (s + s2).to_dense(), (t + t2).to_dense()),
        ("add dense", s + to_device(np.ones((4, 4)), device), torch.ones(4, 4, dtype=torch.float64) + t),
        ("dense add", to_device(np.ones((4, 4)), device) + s, torch.ones(4, 4, dtype=torch.float64) + t),
        ("t", s.t().to_dense(), t.t().to_dense()),
    ]:
        np.testing.assert_allclose(got.numpy(), want.numpy(), err_msg=label)
    if device != "cpu":
        c = s.cpu()
        assert c.device.type == "cpu" and c.to(device).device == s.device


def test_a_graph_convolution_as_pygcn_writes_it(device):
    """tkipf/pygcn's layer: torch.sparse.FloatTensor(indices, values, shape) and
    torch.spmm(adj, torch.mm(x, W)), its loss and gradients against torch's."""
    rng = np.random.default_rng(3)
    n, f, h = 12, 5, 4
    idx = np.vstack((rng.integers(0, n, 40), rng.integers(0, n, 40))).astype(np.int64)
    val = rng.random(40).astype(np.float32)
    x, w = rng.standard_normal((n, f)).astype(np.float32), rng.standard_normal((f, h)).astype(np.float32)
    adj_p = pygpu.sparse.FloatTensor(to_device(idx, device), to_device(val, device), (n, n))
    adj_t = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val), (n, n))
    wp, wt = to_device(w, device).requires_grad_(), torch.tensor(w, requires_grad=True)
    out_p = pygpu.spmm(adj_p, pygpu.mm(to_device(x, device), wp)).relu().sum()
    out_t = torch.spmm(adj_t, torch.mm(torch.tensor(x), wt)).relu().sum()
    out_p.backward()
    out_t.backward()
    np.testing.assert_allclose(float(out_p), float(out_t), rtol=1e-5)
    np.testing.assert_allclose(wp.grad.numpy(), wt.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert adj_p.dtype.name == "float32"


DENSE = np.array([[0.0, 2, 0], [1, 0, 0], [0, 0, 0], [0, 0, 3]])


def _same_coo(p, t):
    np.testing.assert_array_equal(p._indices().numpy(), t._indices().numpy())
    np.testing.assert_allclose(p._values().detach().numpy(), t._values().detach().numpy(),
                               rtol=1e-12)
    assert tuple(p.shape) == tuple(t.shape)
    assert p.is_coalesced() == t.is_coalesced()
    assert (p.sparse_dim(), p.dense_dim()) == (t.sparse_dim(), t.dense_dim())


def test_products_with_sparse_results(device):
    d = np.random.default_rng(1).standard_normal((3, 2))
    ts, ps = torch.tensor(DENSE).to_sparse(), to_device(DENSE, device).to_sparse()
    for name, old in (("smm", None), ("hspmm", "hsmm")):
        ref = getattr(torch, name)(ts, torch.tensor(d))
        for fn in filter(None, (name, old)):
            _same_coo(getattr(pygpu, fn)(ps, to_device(d, device)), ref)
    _same_coo(ps.smm(to_device(d, device)), ts.smm(torch.tensor(d)))
    np.testing.assert_allclose(pygpu.dsmm(ps, to_device(d, device)).numpy(),
                               torch.dsmm(ts, torch.tensor(d)).numpy(), rtol=1e-12)
    sq = DENSE[:3]
    m2 = np.random.default_rng(2).standard_normal((3, 3))
    ref = torch.sspaddmm(torch.tensor(sq).to_sparse(), torch.tensor(sq).to_sparse(),
                         torch.tensor(m2), beta=0.5, alpha=2)
    for fn in (pygpu.sspaddmm, pygpu.saddmm):
        _same_coo(fn(to_device(sq, device).to_sparse(), to_device(sq, device).to_sparse(),
                     to_device(m2, device), beta=0.5, alpha=2), ref)
    with pytest.raises(RuntimeError, match="can only be called on sparse tensors"):
        pygpu.sspaddmm(to_device(sq, device), to_device(sq, device).to_sparse(),
                       to_device(m2, device))


def test_sparse_mask_and_dims(device):
    x = np.random.default_rng(3).standard_normal((4, 3))
    ref = torch.tensor(x).sparse_mask(torch.tensor(DENSE).to_sparse())
    out = to_device(x, device).sparse_mask(to_device(DENSE, device).to_sparse())
    _same_coo(out, ref)
    np.testing.assert_allclose(out.values().numpy(), ref.values().numpy())
    t = to_device(x, device)
    assert (t.sparse_dim(), t.dense_dim()) == (torch.tensor(x).sparse_dim(),
                                               torch.tensor(x).dense_dim()) == (0, 2)
