# test_tensor_surface_reduce.py - reductions with PyTorch's dim/keepdim on pygpu.
#
# Every reduction is compared with PyTorch (values, dtype, shape) over int and tuple dims,
# keepdim on and off, on every device; max/min(dim) must return (values, indices) named
# tuples; the MNIST example's accuracy line (argmax(dim=1, keepdim=True), view_as, eq,
# sum, item) must give PyTorch's number; backward rules are checked against finite
# differences; pygpu's own axis/keepdims spelling keeps working.
import numpy as np
import pytest

import pygpu

from _helpers import OptionalTorch, to_device, to_numpy
from test_autograd import gradcheck

torch = OptionalTorch()  # PyTorch is the oracle where installed; tests without it still run

X = np.random.default_rng(7).standard_normal((3, 4, 5))
POS = np.abs(X) + 0.5
INTS = np.random.default_rng(8).integers(-3, 4, (3, 4, 5))

CASES = [  # name, call (same spelling for pygpu and torch), input
    ("sum_dim", lambda t: t.sum(dim=1), X),
    ("sum_dim_keep", lambda t: t.sum(dim=1, keepdim=True), X),
    ("sum_tuple", lambda t: t.sum(dim=(0, 2)), X),
    ("sum_pos", lambda t: t.sum(1), X),
    ("sum_neg_keep", lambda t: t.sum(-1, True), X),
    ("sum_ints", lambda t: t.sum(dim=0), INTS),
    ("mean_dim", lambda t: t.mean(dim=2), X),
    ("mean_tuple_keep", lambda t: t.mean((0, 1), keepdim=True), X),
    ("amax", lambda t: t.amax(dim=1), X),
    ("amax_tuple", lambda t: t.amax(dim=(0, 2), keepdim=True), X),
    ("amin", lambda t: t.amin(-1), X),
    ("argmax_dim", lambda t: t.argmax(dim=1), X),
    ("argmax_keep", lambda t: t.argmax(dim=1, keepdim=True), X),
    ("argmax_all", lambda t: t.argmax(), X),
    ("argmin_dim", lambda t: t.argmin(dim=2), X),
    ("argmin_all", lambda t: t.argmin(), X),
    ("argmin_ints", lambda t: t.argmin(0), INTS),
    ("prod_dim", lambda t: t.prod(1), X),
    ("prod_all", lambda t: t.prod(), X),
    ("prod_keep", lambda t: t.prod(2, keepdim=True), X),
    ("prod_ints", lambda t: t.prod(0), INTS),
    ("var_all", lambda t: t.var(), X),
    ("var_dim", lambda t: t.var(1), X),
    ("var_unbiased_false", lambda t: t.var(1, unbiased=False), X),
    ("var_correction0", lambda t: t.var(dim=(0, 2), correction=0, keepdim=True), X),
    ("std_all", lambda t: t.std(), X),
    ("std_dim", lambda t: t.std(dim=0, keepdim=True), X),
    ("norm", lambda t: t.norm(), X),
    ("norm_dim", lambda t: t.norm(dim=1), X),
    ("norm_p1", lambda t: t.norm(p=1, dim=2), X),
    ("norm_inf", lambda t: t.norm(p=float("inf"), dim=2), X),
    ("norm_p3", lambda t: t.norm(p=3, dim=0), X),
    ("logsumexp", lambda t: t.logsumexp(1), X),
    ("logsumexp_tuple_keep", lambda t: t.logsumexp((0, 2), keepdim=True), X),
    ("all", lambda t: (t > -10).all(), X),
    ("all_dim", lambda t: (t > 0).all(dim=1), X),
    ("any_dim_keep", lambda t: (t > 1).any(2, keepdim=True), X),
    ("any_of_ints", lambda t: t.any(), INTS),
    ("all_of_ints_dim", lambda t: t.all(0), INTS),
]


def _np(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


@pytest.mark.parametrize("name,fn,a", CASES, ids=[c[0] for c in CASES])
def test_reduction_matches_torch(name, fn, a, device):
    ref = fn(torch.tensor(a))
    got = fn(to_device(a, device))
    assert tuple(got.shape) == tuple(ref.shape)
    assert got.dtype.name == str(ref.dtype).replace("torch.", "")
    np.testing.assert_allclose(to_numpy(got), ref.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_dim_return_values_and_indices(op, keepdim, device):
    t = to_device(X, device)
    out = getattr(t, op)(dim=1, keepdim=keepdim)
    ref = getattr(torch.tensor(X), op)(dim=1, keepdim=keepdim)
    values, indices = out
    assert out.values is values and out.indices is indices
    np.testing.assert_array_equal(to_numpy(values), ref.values.numpy())
    np.testing.assert_array_equal(to_numpy(indices), ref.indices.numpy())
    assert type(out).__name__ == op
    positional = getattr(t, op)(2)
    np.testing.assert_array_equal(to_numpy(positional[1]), getattr(torch.tensor(X), op)(2)[1])


def test_max_forms(device):
    t = to_device(X, device)
    assert t.max().shape == ()
    assert float(t.max().item()) == X.max()
    np.testing.assert_array_equal(to_numpy(t.max(axis=1)), X.max(axis=1))  # pygpu's spelling
    o = to_device(np.zeros_like(X), device)
    np.testing.assert_array_equal(to_numpy(t.max(o)), np.maximum(X, 0))
    np.testing.assert_array_equal(to_numpy(t.min(other=o)), np.minimum(X, 0))


def test_mnist_accuracy_line(device):
    """pytorch/examples mnist/main.py: pred = output.argmax(dim=1, keepdim=True);
    correct += pred.eq(target.view_as(pred)).sum().item()"""
    rng = np.random.default_rng(5)
    output_np = rng.standard_normal((64, 10)).astype(np.float32)
    target_np = rng.integers(0, 10, 64)
    output, target = to_device(output_np, device), to_device(target_np, device)
    pred = output.argmax(dim=1, keepdim=True)
    eq = pred.eq(target.view_as(pred)) if hasattr(pred, "eq") else pred == target.view_as(pred)
    correct = eq.sum().item()
    tpred = torch.tensor(output_np).argmax(dim=1, keepdim=True)
    assert correct == tpred.eq(torch.tensor(target_np).view_as(tpred)).sum().item()
    assert pred.shape == (64, 1) and pred.dtype == pygpu.int64


def test_dtype_argument(device):
    t = to_device(INTS, device)
    assert t.prod(dim=1, dtype=pygpu.float64).dtype == pygpu.float64
    assert t.double().sum(dim=0).dtype == pygpu.float64  # sum/mean take no dtype= (C methods)


def test_sum_and_mean_take_dim_in_c_and_record_the_right_gradient(device):
    x = to_device(X, device).requires_grad_()
    assert pygpu.Tensor.sum is type(x).__dict__["sum"]  # no Python wrapper in the way
    (x.sum(dim=1, keepdim=True) * 2.0).sum().backward()
    np.testing.assert_array_equal(to_numpy(x.grad), np.full(X.shape, 2.0))
    x.grad = None
    x.mean(dim=(0, 2)).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), np.full(X.shape, 1.0 / 15))
    assert pygpu.sum(to_device(X, device), dim=0, keepdim=True).shape == (1, 4, 5)


def test_reduce_errors_match_torch(device):
    t = to_device(X, device)
    for call, exc in [(lambda z: z.sum(dim=3), IndexError), (lambda z: z.argmax(dim=-4), IndexError),
                      (lambda z: z.max(dim=5), IndexError), (lambda z: z.amax(dim=3), IndexError)]:
        with pytest.raises(exc):
            call(torch.tensor(X))
        with pytest.raises(exc):
            call(t)
    with pytest.raises(TypeError):
        t.sum(dim=1, axis=1)


def test_empty_all_any(device):
    t = to_device(np.zeros((0, 3)), device)
    assert bool(t.all().item()) is True and bool(t.any().item()) is False
    assert t.all(dim=0).shape == (3,)


GRADS = [
    ("sum_dim_keep", lambda x: x.sum(dim=1, keepdim=True)),
    ("mean_tuple", lambda x: x.mean(dim=(0, 2))),
    ("max_dim_values", lambda x: x.max(dim=1).values),
    ("min_dim_keep", lambda x: x.min(dim=2, keepdim=True)[0]),
    ("amax", lambda x: x.amax(dim=(0, 1))),
    ("amin", lambda x: x.amin(dim=1, keepdim=True)),
    ("prod_dim", lambda x: x.prod(1)),
    ("prod_all", lambda x: x.prod()),
    ("var", lambda x: x.var(1)),
    ("std", lambda x: x.std(dim=0, keepdim=True)),
    ("norm", lambda x: x.norm(dim=2)),
    ("logsumexp", lambda x: x.logsumexp(1)),
]


@pytest.mark.parametrize("name,fn", GRADS, ids=[g[0] for g in GRADS])
def test_reduction_backward_matches_finite_differences(name, fn, device):
    gradcheck(fn, [np.random.default_rng(11).standard_normal((2, 3, 4))], device, atol=1e-5)


def test_prod_backward_with_a_zero_matches_torch(device):
    a = np.array([[2.0, 0.0, 3.0], [1.0, 4.0, 5.0], [0.0, 0.0, 2.0]])
    x = to_device(a, device).requires_grad_()
    x.prod(1).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    tx.prod(1).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), tx.grad.numpy())


def test_amax_splits_the_gradient_between_ties(device):
    x = to_device(np.array([1.0, 3.0, 3.0]), device).requires_grad_()
    x.amax().backward()
    tx = torch.tensor([1.0, 3.0, 3.0], requires_grad=True)
    tx.amax().backward()
    np.testing.assert_allclose(to_numpy(x.grad), tx.grad.numpy())


def test_logsumexp_of_minus_inf_rows(device):
    a = np.array([[-np.inf, -np.inf], [0.0, 1.0]])
    got = to_numpy(to_device(a, device).logsumexp(1))
    np.testing.assert_allclose(got, torch.tensor(a).logsumexp(1).numpy())
