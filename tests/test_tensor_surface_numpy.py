# test_tensor_surface_numpy.py - the tensor surface against NumPy, so it is checked where
# PyTorch is not installed (the other test_tensor_surface_*.py files use PyTorch as the
# oracle and skip without it). Each row pairs a pygpu call with the NumPy expression that
# has the same semantics (take_along_axis for gather, a stable sort for sort, where for
# masked_fill, fancy indexing for tensor indexing, ...), run on every device.
import numpy as np
import pytest

import pygpu

from _helpers import to_device, to_numpy

R = np.random.default_rng(41)
X = R.standard_normal((3, 4, 5))
IDX = R.integers(0, 4, (3, 2, 5))
SEL = np.array([4, 0, 0, 2])
MASK = X > 0.3

CASES = [  # name, pygpu call on (x, T), NumPy expression on x
    ("view", lambda x, T: x.view(12, 5), lambda a: a.reshape(12, 5)),
    ("permute", lambda x, T: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("transpose", lambda x, T: x.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("unsqueeze", lambda x, T: x.unsqueeze(1), lambda a: a[:, None]),
    ("squeeze", lambda x, T: x[:, :1].squeeze(1), lambda a: a[:, 0]),
    ("flatten1", lambda x, T: x.flatten(1), lambda a: a.reshape(3, 20)),
    ("unflatten", lambda x, T: x.unflatten(1, (2, 2)), lambda a: a.reshape(3, 2, 2, 5)),
    ("expand", lambda x, T: x[:, :1].expand(3, 6, 5), lambda a: np.broadcast_to(a[:, :1], (3, 6, 5))),
    ("narrow", lambda x, T: x.narrow(2, 1, 3), lambda a: a[:, :, 1:4]),
    ("split", lambda x, T: x.split([1, 3], 1)[1], lambda a: a[:, 1:]),
    ("chunk", lambda x, T: x.chunk(2, 2)[1], lambda a: a[:, :, 3:]),
    ("unbind", lambda x, T: x.unbind(2)[4], lambda a: a[:, :, 4]),
    ("mT", lambda x, T: x.mT, lambda a: a.swapaxes(-1, -2)),
    ("repeat", lambda x, T: x.repeat(1, 2, 1), lambda a: np.tile(a, (1, 2, 1))),
    ("sum_dim", lambda x, T: x.sum(dim=1, keepdim=True), lambda a: a.sum(1, keepdims=True)),
    ("mean_tuple", lambda x, T: x.mean(dim=(0, 2)), lambda a: a.mean((0, 2))),
    ("max_dim", lambda x, T: x.max(dim=1).values, lambda a: a.max(1)),
    ("max_dim_idx", lambda x, T: x.max(dim=1).indices, lambda a: a.argmax(1)),
    ("min_dim_idx", lambda x, T: x.min(2, keepdim=True)[1], lambda a: a.argmin(2)[..., None]),
    ("argmax_keep", lambda x, T: x.argmax(dim=1, keepdim=True), lambda a: a.argmax(1)[:, None]),
    ("argmin", lambda x, T: x.argmin(dim=0), lambda a: a.argmin(0)),
    ("amax", lambda x, T: x.amax((0, 2)), lambda a: a.max((0, 2))),
    ("amin", lambda x, T: x.amin(1), lambda a: a.min(1)),
    ("prod", lambda x, T: x.prod(2), lambda a: a.prod(2)),
    ("var", lambda x, T: x.var(1), lambda a: a.var(1, ddof=1)),
    ("var_biased", lambda x, T: x.var(1, unbiased=False), lambda a: a.var(1)),
    ("std", lambda x, T: x.std(dim=(0, 1)), lambda a: a.std((0, 1), ddof=1)),
    ("norm", lambda x, T: x.norm(dim=2), lambda a: np.sqrt((a * a).sum(2))),
    ("logsumexp", lambda x, T: x.logsumexp(1), lambda a: np.log(np.exp(a).sum(1))),
    ("all", lambda x, T: (x > -5).all(dim=2), lambda a: (a > -5).all(2)),
    ("any", lambda x, T: (x > 1).any(1), lambda a: (a > 1).any(1)),
    ("gather", lambda x, T: x.gather(1, T(IDX)), lambda a: np.take_along_axis(a, IDX, 1)),
    ("index_select", lambda x, T: x.index_select(2, T(SEL)), lambda a: np.take(a, SEL, 2)),
    ("masked_fill", lambda x, T: x.masked_fill(T(MASK), -1.0), lambda a: np.where(MASK, -1.0, a)),
    ("cumsum", lambda x, T: x.cumsum(1), lambda a: a.cumsum(1)),
    ("cumprod", lambda x, T: x.cumprod(2), lambda a: a.cumprod(2)),
    ("sort", lambda x, T: x.sort(dim=1).values, lambda a: np.sort(a, 1, kind="stable")),
    ("argsort", lambda x, T: x.argsort(dim=2), lambda a: np.argsort(a, 2, kind="stable")),
    ("argsort_desc", lambda x, T: x.argsort(0, descending=True),
     lambda a: np.argsort(-a, 0, kind="stable")),
    ("topk", lambda x, T: x.topk(2, dim=2).values, lambda a: -np.sort(-a, 2)[..., :2]),
    ("topk_idx", lambda x, T: x.topk(3, dim=1, largest=False).indices,
     lambda a: np.argsort(a, 1, kind="stable")[:, :3]),
    ("getitem_tensor", lambda x, T: x[T(np.array([2, 0]))], lambda a: a[[2, 0]]),
    ("getitem_axis2", lambda x, T: x[:, :, [4, 1]], lambda a: a[:, :, [4, 1]]),
    ("getitem_pairs", lambda x, T: x[T(np.array([0, 2])), T(np.array([3, 1]))],
     lambda a: a[[0, 2], [3, 1]]),
    ("getitem_mask", lambda x, T: x[T(MASK)], lambda a: a[MASK]),
    ("getitem_mask_rows", lambda x, T: x[T(MASK[:, 0, 0])], lambda a: a[MASK[:, 0, 0]]),
    ("nonzero", lambda x, T: T(MASK).nonzero(), lambda a: np.argwhere(MASK)),
    ("unique", lambda x, T: T(np.array([3, 1, 3, 0])).unique(), lambda a: np.unique([3, 1, 3, 0])),
    ("einsum", lambda x, T: pygpu.einsum("ijk,ilk->jl", x, x), lambda a: np.einsum("ijk,ilk->jl", a, a)),
    ("bmm", lambda x, T: pygpu.bmm(x, x.mT), lambda a: a @ a.swapaxes(1, 2)),
    ("stack", lambda x, T: pygpu.stack([x, x], 1), lambda a: np.stack([a, a], 1)),
]


@pytest.mark.parametrize("name,ours,ref", CASES, ids=[c[0] for c in CASES])
def test_surface_matches_numpy(name, ours, ref, device):
    got = ours(to_device(X, device), lambda a: to_device(a, device))
    expected = np.asarray(ref(X))
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(to_numpy(got), expected, rtol=1e-10, atol=1e-12)


SETS = [
    ("column", lambda t, T: t.__setitem__((slice(None), 1), 0.0)),
    ("mask", lambda t, T: t.__setitem__(T(MASK), 9.0)),
    ("int_rows", lambda t, T: t.__setitem__(T(np.array([2, 0])), -1.0)),
    ("pairs_tensor", lambda t, T: t.__setitem__((T(np.array([0, 1])), T(np.array([3, 2]))),
                                               T(np.ones(5) * 4.0))),
]


@pytest.mark.parametrize("name,fn", SETS, ids=[s[0] for s in SETS])
def test_setitem_matches_numpy(name, fn, device):
    a = X.copy()
    fn(a, lambda v: v)
    t = to_device(X, device)
    fn(t, lambda v: to_device(v, device))
    np.testing.assert_array_equal(to_numpy(t), a)


def test_creation_matches_numpy(device):
    np.testing.assert_array_equal(to_numpy(pygpu.eye(3, 4, device=device)), np.eye(3, 4))
    np.testing.assert_allclose(to_numpy(pygpu.linspace(-1, 2, 7, dtype=pygpu.float64,
                                                       device=device)), np.linspace(-1, 2, 7))
    np.testing.assert_allclose(to_numpy(pygpu.logspace(0, 2, 3, device=device)), [1, 10, 100],
                               rtol=1e-6)
    a, b = R.standard_normal(3), R.standard_normal(4)
    np.testing.assert_allclose(to_numpy(pygpu.outer(to_device(a, device), to_device(b, device))),
                               np.outer(a, b))
