# test_sparse_compressed.py - the compressed sparse layouts (pygpu/sparse/_compressed.py)
# against torch's on every device: sparse_csr/csc/bsr/bsc_tensor and
# sparse_compressed_tensor with their shape checks and check_invariants' errors, the index
# accessors (and the wrong layout's error), the *_copy functions, Tensor.to_sparse_csr/csc/
# bsr/bsc and to_sparse(layout=), conversions between the layouts and to and from COO, the
# products (@, mm, matmul, addmm, sparse.mm; dense @ compressed) with their gradients to
# the dense operand and to the values, add, a scalar's mul, and the transpose CSR <-> CSC.
import numpy as np
import pytest
import torch

import pygpu

from _helpers import to_device

# torch's own notes on its compressed tensors (beta; invariant checks off by default)
pytestmark = pytest.mark.filterwarnings("ignore:Sparse")

CROW, COL = [0, 2, 3, 5], [0, 2, 1, 0, 3]
VAL = [1.0, 2.0, 3.0, 4.0, 5.0]
DENSE = np.array([[1, 0, 2, 0, 0, 0],
                  [0, 3, 0, 0, 0, 0],
                  [0, 0, 0, 0, 7, 8],
                  [4, 0, 0, 5, 0, 6]], np.float32)
LAYOUTS = [("sparse_csr", None), ("sparse_csc", None), ("sparse_bsr", (2, 2)),
           ("sparse_bsc", (2, 2)), ("sparse_bsr", (1, 3)), ("sparse_bsc", (4, 2))]
ACCESSORS = {"sparse_csr": ("crow_indices", "col_indices"),
             "sparse_csc": ("ccol_indices", "row_indices"),
             "sparse_bsr": ("crow_indices", "col_indices"),
             "sparse_bsc": ("ccol_indices", "row_indices")}


def _same(p, t):
    """p (pygpu compressed) holds what t (torch compressed) holds."""
    assert repr(p.layout) == repr(t.layout)
    assert tuple(p.shape) == tuple(t.shape) and p._nnz() == t._nnz()
    c, pl = ACCESSORS[repr(t.layout)[6:]]
    np.testing.assert_array_equal(getattr(p, c)().numpy(), getattr(t, c)().numpy())
    np.testing.assert_array_equal(getattr(p, pl)().numpy(), getattr(t, pl)().numpy())
    np.testing.assert_array_equal(p.values().detach().numpy(), t.values().detach().numpy())


def _convert(x, name, blocksize):
    fn = getattr(x, f"to_{name}")
    return fn(blocksize) if blocksize else fn()


@pytest.mark.parametrize("name,blocksize", LAYOUTS)
def test_dense_to_each_layout_and_back(device, name, blocksize):
    x, t = to_device(DENSE, device), torch.tensor(DENSE)
    p, q = _convert(x, name, blocksize), _convert(t, name, blocksize)
    _same(p, q)
    assert p.device.type == device.split(":")[0]
    np.testing.assert_array_equal(p.to_dense().numpy(), DENSE)
    _same(x.to_sparse(layout=getattr(pygpu, name), blocksize=blocksize),
          t.to_sparse(layout=getattr(torch, name), blocksize=blocksize))
    # the same tensor rebuilt from its parts by the layout's constructor
    c, pl = ACCESSORS[name]
    again = getattr(pygpu, f"{name}_tensor")(getattr(p, c)(), getattr(p, pl)(), p.values(),
                                             p.shape, check_invariants=True)
    _same(again, q)
    inferred = getattr(pygpu, f"{name}_tensor")(getattr(p, c)(), getattr(p, pl)(), p.values())
    assert tuple(inferred.shape) == tuple(getattr(torch, f"{name}_tensor")(
        getattr(q, c)(), getattr(q, pl)(), q.values()).shape)
    generic = pygpu.sparse_compressed_tensor(getattr(p, c)(), getattr(p, pl)(), p.values(),
                                             p.shape, layout=getattr(pygpu, name))
    _same(generic, q)
    # to COO: every element a block holds, zeros included, as torch's
    coo, tcoo = p.to_sparse(), q.to_sparse().coalesce()
    np.testing.assert_array_equal(coo.indices().numpy(), tcoo.indices().numpy())
    np.testing.assert_array_equal(coo.values().numpy(), tcoo.values().numpy())


def test_conversions_between_layouts(device):
    x, t = to_device(DENSE, device), torch.tensor(DENSE)
    csr, tcsr = x.to_sparse_csr(), t.to_sparse_csr()
    _same(csr.to_sparse_csc(), tcsr.to_sparse_csc())
    _same(csr.to_sparse_csc().to_sparse_csr(), tcsr)
    _same(csr.to_sparse_bsr((2, 3)), tcsr.to_sparse_bsr((2, 3)))
    _same(csr.to_sparse_bsc((2, 2)), tcsr.to_sparse_bsc((2, 2)))
    assert csr.to_sparse_csr() is csr
    _same(x.to_sparse().to_sparse_csr(), t.to_sparse().to_sparse_csr())
    _same(x.to_sparse().to_sparse_bsr((2, 2)), t.to_sparse().to_sparse_bsr((2, 2)))
    with pytest.raises(RuntimeError, match="must be divisible by given blocksize"):
        csr.to_sparse_bsr((3, 2))
    with pytest.raises(RuntimeError, match="expected SparseCsr or SparseCsc layout but got "
                                           "SparseBsr"):
        csr.to_sparse_bsr((2, 2)).to_sparse_csr()
    # a hybrid tensor: one dense dim in each value
    h = np.stack([DENSE, 2 * DENSE], -1)
    _same(to_device(h, device).to_sparse_csr(dense_dim=1),
          torch.tensor(h).to_sparse_csr(dense_dim=1))


def test_accessors_copies_and_errors(device):
    s = pygpu.sparse_csr_tensor(to_device(CROW, device), to_device(COL, device),
                                to_device(VAL, device), (3, 4))
    t = torch.sparse_csr_tensor(torch.tensor(CROW), torch.tensor(COL), torch.tensor(VAL), (3, 4))
    _same(s, t)
    assert s.is_sparse_csr and not s.is_sparse and s.sparse_dim() == 2 and s.dense_dim() == 0
    for fn in ("crow_indices_copy", "col_indices_copy"):
        out = getattr(pygpu, fn)(s)
        np.testing.assert_array_equal(out.numpy(), getattr(torch, fn)(t).numpy())
        assert out.data_ptr() != getattr(s, fn[:-5])().data_ptr()
    csc, tcsc = s.to_sparse_csc(), t.to_sparse_csc()
    for fn in ("ccol_indices_copy", "row_indices_copy"):
        np.testing.assert_array_equal(getattr(pygpu, fn)(csc).numpy(),
                                      getattr(torch, fn)(tcsc).numpy())
    for obj, tobj, name in ((s, t, "ccol_indices"), (s, t, "row_indices"),
                            (csc, tcsc, "crow_indices"), (s, t, "indices")):
        with pytest.raises(RuntimeError) as want:
            getattr(tobj, name)()
        with pytest.raises(RuntimeError, match=str(want.value).split(" but")[0]):
            getattr(obj, name)()
    x = to_device(DENSE, device)
    with pytest.raises(RuntimeError, match="crow_indices expected sparse row compressed"):
        x.crow_indices()


BAD = [  # (crow, col, size): each refused by torch's check_invariants with its message
    ([0, 2, 3, 5], [0, 2, 1, 0, 3], (3, 3)),
    ([1, 2, 3, 5], [0, 2, 1, 0, 3], (3, 4)),
    ([0, 2, 3, 4], [0, 2, 1, 0, 3], (3, 4)),
    ([0, 3, 2, 5], [0, 2, 1, 0, 3], (3, 4)),
    ([0, 2, 3, 5], [2, 0, 1, 0, 3], (3, 4)),
    ([0, 2, 3, 5], [0, 0, 1, 0, 3], (3, 4)),
    ([0, 2, 3, 5], [0, -1, 1, 0, 3], (3, 4)),
]


@pytest.mark.parametrize("crow,col,size", BAD)
def test_check_invariants_errors_as_torch(device, crow, col, size):
    with pytest.raises(RuntimeError) as want:
        torch.sparse_csr_tensor(torch.tensor(crow), torch.tensor(col), torch.tensor(VAL), size,
                                check_invariants=True)
    with pytest.raises(RuntimeError) as got:
        pygpu.sparse_csr_tensor(to_device(crow, device), to_device(col, device),
                                to_device(VAL, device), size, check_invariants=True)
    assert str(got.value) == str(want.value)


def test_shape_checks(device):
    crow, col, val = (to_device(a, device) for a in (CROW, COL, VAL))
    with pytest.raises(RuntimeError, match=r"crow_indices.shape\[-1\] must be equal to the "
                                           r"number of rows \+ 1 \(=5\), but got 4"):
        pygpu.sparse_csr_tensor(crow, col, val, (4, 4))
    with pytest.raises(RuntimeError, match="same dtype"):
        pygpu.sparse_csr_tensor(crow.to(pygpu.int32), col, val, (3, 4))
    with pytest.raises(RuntimeError, match="number of specified elements"):
        pygpu.sparse_csr_tensor(crow, col, val[:4], (3, 4))
    with pytest.raises(RuntimeError, match="expected sparse compressed tensor layout"):
        pygpu.sparse_compressed_tensor(crow, col, val, (3, 4), layout=pygpu.sparse_coo)
    with pytest.raises(RuntimeError, match="batched compressed sparse tensors"):
        pygpu.sparse_csr_tensor(crow.reshape(1, 4), col.reshape(1, 5), val.reshape(1, 5))
    ok = pygpu.sparse_csr_tensor(crow.to(pygpu.int32), col.to(pygpu.int32), val, (3, 4))
    assert ok.crow_indices().dtype == pygpu.int32
    np.testing.assert_array_equal(ok.to_dense().numpy(), torch.sparse_csr_tensor(
        torch.tensor(CROW), torch.tensor(COL), torch.tensor(VAL), (3, 4)).to_dense().numpy())


@pytest.mark.parametrize("name,blocksize", LAYOUTS)
def test_products_and_their_gradients(device, name, blocksize):
    rng = np.random.default_rng(1)
    b = rng.standard_normal((6, 3)).astype(np.float32)
    g = rng.standard_normal((4, 3)).astype(np.float32)
    p = _convert(to_device(DENSE, device), name, blocksize)
    q = _convert(torch.tensor(DENSE), name, blocksize)
    d, td = to_device(b, device).requires_grad_(True), torch.tensor(b, requires_grad=True)
    vals = p.values().detach().requires_grad_(True)
    c, pl = ACCESSORS[name]
    s = getattr(pygpu, f"{name}_tensor")(getattr(p, c)(), getattr(p, pl)(), vals, p.shape)
    out = s @ d
    want = DENSE @ b
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-5, atol=1e-5)
    (out * to_device(g, device)).sum().backward()
    np.testing.assert_allclose(d.grad.numpy(), DENSE.T @ g, rtol=1e-5, atol=1e-5)
    # the values' gradient: (g @ b^T) at the entries' elements, laid out as the values
    full = torch.tensor(g @ b.T)
    tv = q.values().detach().clone().requires_grad_(True)
    dense_of_values = getattr(torch, f"{name}_tensor")(getattr(q, c)(), getattr(q, pl)(), tv,
                                                       q.shape).to_dense()
    (dense_of_values * full).sum().backward()
    np.testing.assert_allclose(vals.grad.numpy(), tv.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert repr(s.grad.layout) == repr(q.layout)
    # the other spellings of the same product
    bd = to_device(b, device)
    for prod in (pygpu.mm(p, bd), pygpu.matmul(p, bd), pygpu.sparse.mm(p, bd), p.mm(bd),
                 p.matmul(bd)):
        np.testing.assert_allclose(prod.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose((p @ bd[:, 0]).numpy(), want[:, 0], rtol=1e-5, atol=1e-5)
    inp = to_device(np.ones((4, 3), np.float32), device)
    np.testing.assert_allclose(pygpu.addmm(inp, p, bd, beta=0.5, alpha=2.0).numpy(),
                               0.5 + 2.0 * want, rtol=1e-5, atol=1e-5)
    left = to_device(g.T, device)  # (3, 4) @ (4, 6)
    np.testing.assert_allclose((left @ p).numpy(), g.T @ DENSE, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        p @ to_device(np.ones((5, 2), np.float32), device)


def test_csr_product_against_torch_on_a_random_matrix(device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((50, 40)).astype(np.float32)
    a[rng.random(a.shape) < 0.8] = 0
    b = rng.standard_normal((40, 7)).astype(np.float32)
    got = to_device(a, device).to_sparse_csr() @ to_device(b, device)
    want = torch.tensor(a).to_sparse_csr() @ torch.tensor(b)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,blocksize", LAYOUTS[:4])
def test_add_mul_and_transpose(device, name, blocksize):
    other = DENSE * 0
    other[0, 1], other[3, 0], other[2, 5] = 9, -4, 1  # overlaps one entry, cancels one
    p1, p2 = (_convert(to_device(a, device), name, blocksize) for a in (DENSE, other))
    t1, t2 = (_convert(torch.tensor(a), name, blocksize) for a in (DENSE, other))
    if name in ("sparse_csr",):  # torch adds CSR to CSR (its other layouts refuse)
        _same(p1 + p2, t1 + t2)
    np.testing.assert_array_equal((p1 + p2).to_dense().numpy(), DENSE + other)
    np.testing.assert_array_equal((p1 - p2).to_dense().numpy(), DENSE - other)
    _same(p1 * 2.5, t1 * 2.5)
    _same(2.5 * p1, 2.5 * t1)
    np.testing.assert_array_equal((p1 / 2).to_dense().numpy(), DENSE / 2)
    tt, pt = t1.t(), p1.t()
    _same(pt, tt)
    np.testing.assert_array_equal(pt.to_dense().numpy(), DENSE.T)
    _same(p1.transpose(0, 1), t1.transpose(0, 1))


def test_across_devices():
    p = to_device(DENSE, "sim").to_sparse_csr()
    host = p.to("cpu")
    assert host.device.type == "cpu" and host.crow_indices().device.type == "cpu"
    np.testing.assert_array_equal(host.to_dense().numpy(), DENSE)
    assert p.to(pygpu.float64).dtype == pygpu.float64
    assert host.to("sim").values().device.type == "sim"
