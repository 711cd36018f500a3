# test_tensor_surface_index.py - the index family and indexing with tensors and masks.
#
# gather, scatter(_), scatter_add(_), index_select, index_add_, index_copy_, masked_fill(_),
# masked_select, nonzero, cumsum, cumprod, sort, argsort, topk and t[...] / t[...] = v with
# int tensors, lists and bool masks, compared with PyTorch on every device and on every
# dtype the kernels move; bad indices raise IndexError (on sim at the next read, as every
# asynchronous failure) and change nothing; in-place writes land in the tensor's own memory
# (a view of it sees them); backward rules are checked against finite differences.
import numpy as np
import pytest

import pygpu

from _helpers import OptionalTorch, to_device, to_numpy
from test_autograd import gradcheck

torch = OptionalTorch()  # PyTorch is the oracle where installed; tests without it still run

R = np.random.default_rng(21)
X = R.standard_normal((3, 4, 5))
IDX = R.integers(0, 3, (2, 4, 5))       # gather along dim 0
IDX1 = R.integers(0, 5, (3, 4, 2))      # gather along dim 2 (smaller on the last axis)
SEL = np.array([4, 0, 0, 2])


def _t(a, device):
    return to_device(a, device)


def _check(got, ref):
    assert tuple(got.shape) == tuple(ref.shape)
    assert got.dtype.name == str(ref.dtype).replace("torch.", "")
    np.testing.assert_allclose(to_numpy(got.float() if got.dtype.name == "bfloat16" else got),
                               ref.float().numpy() if ref.dtype == torch.bfloat16 else ref.numpy(),
                               rtol=1e-6, atol=1e-12)


CASES = [  # name, fn(module, x, tensors-maker) -> tensor
    ("gather0", lambda x, T: x.gather(0, T(IDX))),
    ("gather2_smaller", lambda x, T: x.gather(2, T(IDX1))),
    ("gather_neg_dim", lambda x, T: x.gather(-1, T(IDX1))),
    ("index_select0", lambda x, T: x.index_select(0, T(np.array([2, 0])))),
    ("index_select2", lambda x, T: x.index_select(2, T(SEL))),
    ("scatter", lambda x, T: x.scatter(0, T(np.array([[[0, 1, 2, 0, 1]]])), x[:1, :1] * 10)),
    ("scatter_value", lambda x, T: x.scatter(2, T(np.array([[[4], [0], [1], [2]]] * 3)), 9.0)),
    ("scatter_add", lambda x, T: x.scatter_add(0, T(IDX), x[:2] * 3)),
    ("index_add", lambda x, T: x.index_add(2, T(SEL), x[:, :, :4])),
    ("index_copy", lambda x, T: x.index_copy(1, T(np.array([3, 1])), x[:, :2] * 0 - 1)),
    ("masked_fill", lambda x, T: x.masked_fill(x > 0.5, -7.0)),
    ("masked_fill_bcast", lambda x, T: x.masked_fill(x[0, 0] > 0, 0.0)),
    ("masked_select", lambda x, T: x.masked_select(x > 0)),
    ("cumsum0", lambda x, T: x.cumsum(0)),
    ("cumsum_neg", lambda x, T: x.cumsum(dim=-1)),
    ("cumprod1", lambda x, T: x.cumprod(1)),
    ("sort_values", lambda x, T: x.sort(dim=1).values),
    ("sort_indices", lambda x, T: x.sort(dim=1).indices),
    ("sort_desc", lambda x, T: x.sort(descending=True)[0]),
    ("argsort", lambda x, T: x.argsort(dim=0)),
    ("argsort_desc", lambda x, T: x.argsort(dim=-1, descending=True)),
    ("topk_values", lambda x, T: x.topk(3).values),
    ("topk_indices", lambda x, T: x.topk(2, dim=0).indices),
    ("topk_smallest", lambda x, T: x.topk(2, dim=1, largest=False)[0]),
    ("nonzero", lambda x, T: (x > 0.3).nonzero()),
    ("getitem_int_tensor", lambda x, T: x[T(np.array([2, 0, 2]))]),
    ("getitem_list", lambda x, T: x[[1, 0]]),
    ("getitem_neg_index", lambda x, T: x[T(np.array([-1, 0]))]),
    ("getitem_2d_index", lambda x, T: x[T(np.array([[0, 1], [2, 2]]))]),
    ("getitem_axis1", lambda x, T: x[:, T(np.array([3, 0]))]),
    ("getitem_ellipsis_last", lambda x, T: x[..., [4, 1]]),
    ("getitem_pairs", lambda x, T: x[T(np.array([0, 2, 1])), T(np.array([3, 3, 0]))]),
    ("getitem_pairs_bcast", lambda x, T: x[T(np.array([[0], [2]])), T(np.array([1, 3]))]),
    ("getitem_mask", lambda x, T: x[x > 0]),
    ("getitem_mask_rows", lambda x, T: x[x[:, 0, 0] > -10]),
    ("getitem_mask_2d", lambda x, T: x[x[:, :, 0] > 0]),
    ("getitem_int_then_tensor", lambda x, T: x[1, T(np.array([0, 3]))]),
    ("getitem_mask_axis1", lambda x, T: x[:, x[0, :, 0] > 0]),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_index_op_matches_torch(name, fn, device):
    ref = fn(torch.tensor(X), lambda a: torch.tensor(a))
    got = fn(_t(X, device), lambda a: _t(a, device))
    _check(got, ref)


MOVE_DTYPES = ["float32", "float64", "int64", "bool", "float16", "bfloat16"]


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
def test_moves_run_on_every_dtype(dtype, device):
    tdt = getattr(torch, dtype)
    base = torch.tensor(X * 3).to(tdt)
    ours = pygpu.tensor(base.float().numpy() if dtype == "bfloat16" else base.numpy(),
                        device=device).to(dtype=getattr(pygpu, dtype if dtype != "bool" else "bool_"))
    for fn in (lambda x, T: x.gather(0, T(IDX)), lambda x, T: x.index_select(2, T(SEL)),
               lambda x, T: x[T(np.array([2, 0]))], lambda x, T: x.masked_fill(x[0] == x[0], 1)):
        _check(fn(ours, lambda a: _t(a, device)), fn(base, lambda a: torch.tensor(a)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "float16", "bfloat16"])
def test_arithmetic_index_ops_on_every_dtype(dtype, device):
    tdt = getattr(torch, dtype)
    base = torch.tensor(np.round(X * 3)).to(tdt)
    ours = pygpu.tensor(base.double().numpy(), device=device).to(dtype=getattr(pygpu, dtype))
    for fn in (lambda x, T: x.scatter_add(0, T(IDX), x[:2]), lambda x, T: x.cumsum(1),
               lambda x, T: x.index_add(2, T(SEL), x[:, :, :4]), lambda x, T: x.sort(1)[0]):
        _check(fn(ours, lambda a: _t(a, device)), fn(base, lambda a: torch.tensor(a)))


def test_cumsum_of_bool_and_int_is_int64(device):
    b = _t(np.array([True, False, True]), device)
    assert b.cumsum(0).dtype == pygpu.int64
    np.testing.assert_array_equal(to_numpy(b.cumsum(0)), [1, 1, 2])


def test_sort_is_stable_and_puts_nan_last(device):
    a = np.array([2.0, np.nan, 1.0, 2.0, 1.0, np.nan, 0.0])
    ours = _t(a, device).sort(stable=True)
    ref = torch.tensor(a).sort(stable=True)
    np.testing.assert_array_equal(to_numpy(ours.indices), ref.indices.numpy())
    ours_d = _t(a, device).sort(descending=True, stable=True)
    ref_d = torch.tensor(a).sort(descending=True, stable=True)
    np.testing.assert_array_equal(to_numpy(ours_d.indices), ref_d.indices.numpy())


# ---- in place ---------------------------------------------------------------------------

def test_in_place_index_ops_write_the_tensors_memory():
    a = X.copy()
    t = pygpu.from_numpy(a)
    t.masked_fill_(t > 1.0, 0.0)
    assert (a > 1.0).sum() == 0
    t.scatter_(0, pygpu.tensor(np.zeros((1, 4, 5), np.int64)), pygpu.ones((1, 4, 5), dtype="float64"))
    np.testing.assert_array_equal(a[0], 1.0)
    t.index_add_(2, pygpu.tensor(np.array([0])), pygpu.ones((3, 4, 1), dtype="float64"))
    np.testing.assert_array_equal(a[0, :, 0], 2.0)
    t.scatter_add_(1, pygpu.tensor(np.zeros((3, 1, 5), np.int64)), pygpu.ones((3, 1, 5), dtype="float64"))
    np.testing.assert_array_equal(a[0, 0, 1:], 2.0)


def test_in_place_on_a_strided_view_writes_through(device):
    t = _t(np.zeros((4, 6)), device)
    v = t.t()  # (6, 4), strided
    v.index_copy_(0, _t(np.array([5]), device), _t(np.ones((1, 4)), device))
    v.masked_fill_(_t(np.eye(6, 4, dtype=bool), device), 3.0)
    ref = torch.zeros(4, 6)
    rv = ref.t()
    rv.index_copy_(0, torch.tensor([5]), torch.ones(1, 4))
    rv.masked_fill_(torch.tensor(np.eye(6, 4, dtype=bool)), 3.0)
    np.testing.assert_array_equal(to_numpy(t), ref.numpy())


SETITEM = [
    ("column_zero", lambda t, T: t.__setitem__((slice(None), 1), 0)),
    ("mask_scalar", lambda t, T: t.__setitem__(t > 0, -1.0)),
    ("mask_rows_scalar", lambda t, T: t.__setitem__(T(np.array([True, False, True])), 5.0)),
    ("mask_tensor", lambda t, T: t.__setitem__(t > 0.5, T(np.array([100.0])))),
    ("int_tensor_rows", lambda t, T: t.__setitem__(T(np.array([2, 0])), T(np.ones((4, 5))) * 2)),
    ("list_axis1", lambda t, T: t.__setitem__((slice(None), [0, 3]), 8.0)),
    ("pairs", lambda t, T: t.__setitem__((T(np.array([0, 1])), T(np.array([2, 3]))), 4.0)),
    ("neg_index", lambda t, T: t.__setitem__(T(np.array([-1])), 6.0)),
    ("through_transpose", lambda t, T: t.transpose(0, 2).__setitem__(T(np.array([1])), 9.0)),
]


@pytest.mark.parametrize("name,fn", SETITEM, ids=[s[0] for s in SETITEM])
def test_setitem_matches_torch(name, fn, device):
    ref = torch.tensor(X)
    fn(ref, lambda a: torch.tensor(a))
    t = _t(X, device)
    fn(t, lambda a: _t(a, device))
    np.testing.assert_array_equal(to_numpy(t), ref.numpy())


def test_tensor_index_setitem_keeps_the_view_relation():
    a = X.copy()
    t = pygpu.from_numpy(a)
    t[pygpu.tensor(np.array([1]))] = 0.0
    assert (a[1] == 0).all()
    t[t < 0] = 0.0
    assert (a >= 0).all()


# ---- errors -----------------------------------------------------------------------------

ERRORS = [  # name, fn, PyTorch's exception type
    ("gather_index_out_of_range", lambda x, T: x.gather(0, T(np.full((1, 4, 5), 3))), RuntimeError),
    ("gather_negative", lambda x, T: x.gather(0, T(np.full((1, 4, 5), -1))), RuntimeError),
    ("gather_rank", lambda x, T: x.gather(0, T(np.zeros((4, 5), np.int64))), RuntimeError),
    ("gather_float_index", lambda x, T: x.gather(0, T(np.zeros((1, 4, 5)))), RuntimeError),
    ("index_select_2d", lambda x, T: x.index_select(0, T(np.zeros((2, 2), np.int64))), IndexError),
    ("index_select_range", lambda x, T: x.index_select(1, T(np.array([4]))), (IndexError, RuntimeError)),
    ("getitem_range", lambda x, T: x[T(np.array([3]))], IndexError),
    ("mask_shape", lambda x, T: x[T(np.array([True, False]))], IndexError),
    ("masked_fill_float_mask", lambda x, T: x.masked_fill(x, 0.0), RuntimeError),
    ("topk_too_many", lambda x, T: x.topk(6), RuntimeError),
    ("cumsum_dim", lambda x, T: x.cumsum(3), IndexError),
]


@pytest.mark.parametrize("name,fn,texc", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_input_raises(name, fn, texc, device):
    with pytest.raises(texc):
        fn(torch.tensor(X), lambda a: torch.tensor(a))
    # pygpu: the matching Python category (IndexError for indices, TypeError for dtypes,
    # ValueError/RuntimeError for shapes); on sim an index value fails at the read
    with pytest.raises((IndexError, TypeError, ValueError, RuntimeError, pygpu.AsyncOpError)):
        to_numpy(fn(_t(X, device), lambda a: _t(a, device)))


def test_bad_scatter_index_changes_nothing():
    t = pygpu.zeros((2, 3), dtype="float64")
    bad = pygpu.tensor(np.array([[0, 1, 5]]))
    with pytest.raises(IndexError, match="out of bounds"):
        t.scatter_(1, bad, pygpu.ones((1, 3), dtype="float64"))
    np.testing.assert_array_equal(to_numpy(t), np.zeros((2, 3)))


def test_bad_index_on_sim_fails_at_the_read():
    t = pygpu.zeros((2, 3), dtype="float64", device="sim")
    t.scatter_(1, pygpu.tensor(np.array([[0, 1, 5]]), device="sim"),
               pygpu.ones((1, 3), dtype="float64", device="sim"))
    with pytest.raises(pygpu.AsyncOpError, match="index 5 is out of bounds"):
        to_numpy(t)


def test_index_error_names_the_index_and_size():
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 3"):
        pygpu.tensor(X).index_select(0, pygpu.tensor(np.array([7])))


def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    x = pygpu.ones(3).requires_grad_()
    with pytest.raises(RuntimeError, match="requires grad"):
        x.masked_fill_(x > 0, 0.0)


# ---- autograd ---------------------------------------------------------------------------

GRADS = [
    ("gather", lambda x: x.gather(0, pygpu.tensor(IDX, device=x.device))),
    ("index_select", lambda x: x.index_select(2, pygpu.tensor(SEL, device=x.device))),
    ("getitem_tensor", lambda x: x[pygpu.tensor(np.array([2, 0, 2]), device=x.device)]),
    ("getitem_mask", lambda x: x[pygpu.tensor(X > 0, device=x.device)]),
    ("masked_fill", lambda x: x.masked_fill(pygpu.tensor(X > 0, device=x.device), 1.0)),
    ("cumsum", lambda x: x.cumsum(1)),
    ("sort_values", lambda x: x.sort(2)[0]),
    ("topk_values", lambda x: x.topk(2, dim=0)[0]),
    ("scatter_self", lambda x: x.scatter(0, pygpu.tensor(IDX[:1], device=x.device),
                                         pygpu.zeros((1, 4, 5), dtype="float64", device=x.device))),
]


@pytest.mark.parametrize("name,fn", GRADS, ids=[g[0] for g in GRADS])
def test_index_backward_matches_finite_differences(name, fn, device):
    gradcheck(fn, [X], device)


def test_scatter_add_src_gradient(device):
    idx = pygpu.tensor(IDX, device=device)
    gradcheck(lambda x, s: x.scatter_add(0, idx, s), [X, X[:2]], device)


def test_cumprod_backward_matches_finite_differences(device):
    # without zeros (the closed form); zeros and PyTorch: tests/test_autograd_extras.py
    gradcheck(lambda x: x.cumprod(1), [X + 5.0], device)


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}])
@pytest.mark.parametrize("data", [np.array([[3, 1, 2], [3, 3, 0]]), np.array([2.5, -1.0, 2.5]),
                                  np.zeros(0)])
def test_unique_matches_torch(kw, data, device):
    ref = torch.tensor(data).unique(**kw)
    got = _t(data, device).unique(**kw)
    ref = ref if isinstance(ref, tuple) else (ref,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        _check(g, r)


def test_setitem_with_a_value_that_requires_grad_is_recorded():
    # (the gradients against torch, on every device: tests/test_autograd_writes.py)
    t = pygpu.zeros((3, 2), dtype="float64")
    v = pygpu.ones(2, dtype="float64").requires_grad_()
    t[pygpu.tensor(np.array([1]))] = v
    (t * 3.0).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), [3.0, 3.0])
    m = pygpu.zeros((3, 2), dtype="float64")
    m[m == 0] = v[0]
    assert m.grad_fn is not None


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,dim", [((300, 513), 1), ((7, 300, 41), 1), ((300, 4, 97), 2)])
def test_topk_split_across_threads(threads, shape, dim, device):
    """topk along a dim other than 0 is cut into whole slices of dim 0 per pool task (the
    input is large enough to split): the same values and indices as NumPy's stable argsort,
    on every thread count."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal(shape).astype(np.float32)
    a[::7] = np.round(a[::7])  # ties: the earlier index wins, as in the stable argsort
    before = pygpu.get_num_threads()
    pygpu.set_num_threads(threads)
    try:
        v, i = _t(a, device).topk(5, dim=dim)
        v, i = to_numpy(v), to_numpy(i)
    finally:
        pygpu.set_num_threads(before)
    want_i = np.take(np.argsort(-a, axis=dim, kind="stable"), np.arange(5), axis=dim)
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_array_equal(v, np.take_along_axis(a, want_i, axis=dim))
