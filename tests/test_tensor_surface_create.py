# test_tensor_surface_create.py - creation functions, new_* methods, stack, einsum and the
# matrix products with PyTorch's names, compared with PyTorch on every device (values,
# dtypes, shapes, errors); random ones are checked for range, shape and distribution.
import numpy as np
import pytest

import pygpu

from _helpers import OptionalTorch, to_device, to_numpy
from test_autograd import gradcheck

torch = OptionalTorch()  # PyTorch is the oracle where installed; tests without it still run

R = np.random.default_rng(31)


def _check(got, ref, rtol=1e-6):
    assert tuple(got.shape) == tuple(ref.shape)
    assert got.dtype.name == str(ref.dtype).replace("torch.", "")
    np.testing.assert_allclose(to_numpy(got), ref.numpy(), rtol=rtol, atol=1e-6)


DETERMINISTIC = [
    ("eye", lambda m, d: m.eye(4, device=d)),
    ("eye_rect", lambda m, d: m.eye(2, 5, dtype=m.float64, device=d)),
    ("eye_int", lambda m, d: m.eye(3, 2, dtype=m.int64, device=d)),
    ("eye_empty", lambda m, d: m.eye(0, device=d)),
    ("linspace", lambda m, d: m.linspace(-1, 1, 7, device=d)),
    ("linspace_f64", lambda m, d: m.linspace(0, 10, 11, dtype=m.float64, device=d)),
    ("linspace_one", lambda m, d: m.linspace(3, 5, 1, device=d)),
    ("linspace_zero", lambda m, d: m.linspace(3, 5, 0, device=d)),
    ("logspace", lambda m, d: m.logspace(0, 3, 4, device=d)),
    ("logspace_base2", lambda m, d: m.logspace(0, 4, 5, base=2.0, dtype=m.float64, device=d)),
]


@pytest.mark.parametrize("name,fn", DETERMINISTIC, ids=[c[0] for c in DETERMINISTIC])
def test_creation_matches_torch(name, fn, device):
    _check(fn(pygpu, device), fn(torch, "cpu"))


def test_like_functions(device):
    t = to_device(np.ones((2, 3), np.float32), device)
    f = pygpu.full_like(t, 2.5)
    assert f.shape == (2, 3) and f.dtype == pygpu.float32 and f.device == t.device
    np.testing.assert_array_equal(to_numpy(f), np.full((2, 3), 2.5))
    assert pygpu.empty_like(t).shape == (2, 3)
    assert pygpu.full_like(t, 1, dtype=pygpu.int64).dtype == pygpu.int64
    r = pygpu.rand_like(t)
    assert r.dtype == pygpu.float32 and r.device == t.device
    assert 0 <= to_numpy(r).min() and to_numpy(r).max() < 1
    assert pygpu.randn_like(t).shape == (2, 3)


def test_randint_and_randperm(device):
    pygpu.manual_seed(0)
    r = pygpu.randint(3, 10, (1000,), device=device)
    a = to_numpy(r)
    assert r.dtype == pygpu.int64 and a.min() == 3 and a.max() == 9
    assert len(np.unique(a)) == 7
    r2 = pygpu.randint(5, (2, 3), device=device)
    assert r2.shape == (2, 3) and 0 <= to_numpy(r2).min() and to_numpy(r2).max() < 5
    p = to_numpy(pygpu.randperm(50, device=device))
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    with pytest.raises(RuntimeError):
        pygpu.randint(5, 5, (2,))


def test_new_methods(device):
    t = to_device(np.ones((2, 2)), device)
    for name, args in [("new_zeros", (3, 2)), ("new_ones", ((3,),)), ("new_empty", (4,)),
                       ("new_full", ((2, 3), 7.0))]:
        out = getattr(t, name)(*args)
        ref = getattr(torch.ones(2, 2, dtype=torch.float64), name)(*args)
        assert out.shape == tuple(ref.shape) and out.dtype == pygpu.float64
        assert out.device == t.device
        if name != "new_empty":
            np.testing.assert_array_equal(to_numpy(out), ref.numpy())
    n = t.new_tensor([1, 2, 3])
    assert n.dtype == pygpu.float64 and n.device == t.device  # torch: self's dtype
    assert t.new_zeros(2, dtype=pygpu.int64).dtype == pygpu.int64
    assert t.new_ones(2, requires_grad=True).requires_grad


def test_stack(device):
    a, b = R.standard_normal((2, 3)), R.standard_normal((2, 3))
    for dim in (0, 1, 2, -1):
        _check(pygpu.stack([to_device(a, device), to_device(b, device)], dim),
               torch.stack([torch.tensor(a), torch.tensor(b)], dim))
    with pytest.raises(RuntimeError):
        pygpu.stack([to_device(a, device), to_device(a[:1], device)])
    gradcheck(lambda x, y: pygpu.stack([x, y], 1), [a, b], device)


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ijk->kj", [(2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("ij,jk", [(3, 4), (4, 2)]),
    ("abc,cd->dba", [(2, 3, 4), (4, 5)]),
    ("ij,k->ik", [(3, 4), (2,)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum_matches_torch(eq, shapes, device):
    arrs = [R.standard_normal(s) for s in shapes]
    _check(pygpu.einsum(eq, *[to_device(a, device) for a in arrs]),
           torch.einsum(eq, *[torch.tensor(a) for a in arrs]), rtol=1e-10)


def test_einsum_backward(device):
    gradcheck(lambda a, b: pygpu.einsum("bij,bjk->bik", a, b),
              [R.standard_normal((2, 3, 4)), R.standard_normal((2, 4, 2))], device)


def test_einsum_refuses_what_torch_refuses():
    with pytest.raises(RuntimeError, match="repeated for operand 0 but the sizes don't match"):
        pygpu.einsum("ii->i", pygpu.ones((3, 4)))
    with pytest.raises(ValueError):  # pygpu.ShapeError: PyTorch's RuntimeError, a ValueError too
        pygpu.einsum("ij,jk->ik", pygpu.ones((3, 4)), pygpu.ones((5, 2)))


PRODUCTS = [
    ("outer", lambda m, T: m.outer(T((3,)), T((4,)))),
    ("dot", lambda m, T: m.dot(T((5,)), T((5,)))),
    ("mm", lambda m, T: m.mm(T((3, 4)), T((4, 2)))),
    ("mv", lambda m, T: m.mv(T((3, 4)), T((4,)))),
    ("bmm", lambda m, T: m.bmm(T((2, 3, 4)), T((2, 4, 5)))),
    ("addmm", lambda m, T: m.addmm(T((3, 2)), T((3, 4)), T((4, 2)), beta=0.5, alpha=2.0)),
    ("addmm_bcast", lambda m, T: m.addmm(T((2,)), T((3, 4)), T((4, 2)))),
    ("baddbmm", lambda m, T: m.baddbmm(T((2, 3, 5)), T((2, 3, 4)), T((2, 4, 5)), alpha=0.5)),
    ("method_addmm", lambda m, T: T((3, 2)).addmm(T((3, 4)), T((4, 2)))),
    ("method_outer", lambda m, T: T((3,)).outer(T((2,)))),
]


@pytest.mark.parametrize("name,fn", PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_products_match_torch(name, fn, device):
    def maker(mod, dev):
        rng = np.random.default_rng(5)
        if mod is torch:
            return lambda s: torch.tensor(rng.standard_normal(s))
        return lambda s: to_device(rng.standard_normal(s), dev)
    _check(fn(pygpu, maker(pygpu, device)), fn(torch, maker(torch, "cpu")), rtol=1e-10)


def test_product_shape_errors():
    for call in (lambda m: m.bmm(m.ones((2, 3)), m.ones((2, 3))),
                 lambda m: m.dot(m.ones(3), m.ones(4)),
                 lambda m: m.mm(m.ones(3), m.ones((3, 3)))):
        with pytest.raises(RuntimeError):
            call(torch)
        with pytest.raises(RuntimeError):
            call(pygpu)


def test_module_level_spellings():
    x = pygpu.tensor(np.arange(6.0).reshape(2, 3))
    assert pygpu.flatten(x).shape == (6,)
    assert pygpu.unsqueeze(x, 0).shape == (1, 2, 3)
    assert pygpu.transpose(x, 0, 1).shape == (3, 2)
    assert pygpu.gather(x, 1, pygpu.tensor(np.array([[0], [2]]))).tolist() == [[0.0], [5.0]]
    assert pygpu.topk(x, 1).values.tolist() == [[2.0], [5.0]]
    assert "eye" in pygpu.__all__ and "einsum" in pygpu.__all__
