# test_autograd.py - autograd: every differentiable op and a whole MLP against finite
# differences in float64 on every device, plus the graph's rules (accumulation,
# no_grad, detach, leaves, errors) and "backward runs where the data lives".
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import functional as F

from _helpers import to_device, to_numpy


def numeric_grad(f, arrays, i, eps=1e-6):
    """d f(arrays) / d arrays[i] by central differences (f returns a float)."""
    a = arrays[i]
    g = np.zeros_like(a)
    it = np.nditer(a, flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        old = a[idx]
        a[idx] = old + eps
        fp = f(arrays)
        a[idx] = old - eps
        fm = f(arrays)
        a[idx] = old
        g[idx] = (fp - fm) / (2 * eps)
    return g


def gradcheck(fn, arrays, device, wrt=None, atol=1e-6, rtol=1e-5):
    """fn(*tensors) -> tensor; checks every input's analytic gradient (of a random
    projection of the output, so non-scalar outputs are covered) against finite
    differences, all in float64 on `device`."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    wrt = range(len(arrays)) if wrt is None else wrt
    out0 = fn(*[to_device(a, device) for a in arrays])
    proj = np.random.default_rng(1).standard_normal(out0.shape)

    def f(arrs):
        with pygpu.no_grad():
            out = fn(*[to_device(a, device) for a in arrs])
        return float((to_numpy(out) * proj).sum())

    ts = [to_device(a, device).requires_grad_(i in wrt) for i, a in enumerate(arrays)]
    out = fn(*ts)
    assert out.requires_grad
    out.backward(to_device(proj, device))
    for i in wrt:
        assert ts[i].grad is not None, f"input {i} got no gradient"
        assert str(ts[i].grad.device) == str(ts[i].device)
        np.testing.assert_allclose(to_numpy(ts[i].grad), numeric_grad(f, arrays, i),
                                   atol=atol, rtol=rtol, err_msg=f"gradient of input {i}")


R = np.random.default_rng(0)


def rn(*shape):
    return R.standard_normal(shape)


def pos(*shape):
    return np.abs(R.standard_normal(shape)) + 0.5


LABELS = np.array([2, 0, 3, 1, 3])

# (id, fn, inputs, wrt)
OPS = [
    ("add-broadcast-bias", lambda x, b: x + b, [rn(4, 3), rn(3)], None),
    ("add-scalar", lambda x: 2.5 + x, [rn(3, 2)], None),
    ("sub", lambda x, y: x - y, [rn(3, 4), rn(3, 1)], None),
    ("rsub-scalar", lambda x: 1.0 - x, [rn(5)], None),
    ("mul", lambda x, y: x * y, [rn(2, 3), rn(1, 3)], None),
    ("mul-scalar", lambda x: x * 3.0, [rn(4)], None),
    ("div", lambda x, y: x / y, [rn(3, 2), pos(3, 2)], None),
    ("rdiv-scalar", lambda x: 2.0 / x, [pos(4)], None),
    ("neg", lambda x: -x, [rn(3)], None),
    ("relu", pygpu.relu, [rn(4, 5)], None),
    ("tanh", pygpu.tanh, [rn(4, 5)], None),
    ("sigmoid", pygpu.sigmoid, [rn(4, 5)], None),
    ("exp", pygpu.exp, [rn(3, 3)], None),
    ("log", pygpu.log, [pos(3, 3)], None),
    ("sqrt", pygpu.sqrt, [pos(6)], None),
    ("maximum", pygpu.maximum, [rn(3, 4), rn(4)], None),
    ("minimum", pygpu.minimum, [rn(2, 3), rn(2, 1)], None),
    ("abs", pygpu.abs, [pos(5) * np.array([1, -1, 1, -1, 1])], None),
    ("maximum-scalar", lambda x: pygpu.maximum(x, 0.25), [rn(6)], None),
    ("matmul-2d", lambda a, b: a @ b, [rn(3, 4), rn(4, 2)], None),
    ("matmul-vec", lambda a, b: a @ b, [rn(3, 4), rn(4)], None),
    ("matmul-vecmat", lambda a, b: a @ b, [rn(4), rn(4, 2)], None),
    ("matmul-batched", lambda a, b: a @ b, [rn(2, 3, 4), rn(4, 2)], None),
    ("sum-all", lambda x: x.sum(), [rn(3, 4)], None),
    ("sum-axis", lambda x: x.sum(axis=1), [rn(3, 4)], None),
    ("sum-keepdims", lambda x: pygpu.sum(x, 0, keepdims=True), [rn(3, 4)], None),
    ("mean-all", lambda x: x.mean(), [rn(3, 4)], None),
    ("mean-axes", lambda x: x.mean(axis=(0, 2)), [rn(2, 3, 4)], None),
    ("reshape", lambda x: x.reshape(4, 3) * 1.0, [rn(3, 4)], None),
    ("transpose", lambda x: x.T @ x, [rn(3, 4)], None),
    ("transpose-perm", lambda x: x.transpose(1, 2, 0), [rn(2, 3, 4)], None),
    ("slice", lambda x: x[1:, ::2], [rn(4, 5)], None),
    ("index-int", lambda x: x[2] * x[0], [rn(4, 3)], None),
    ("index-ellipsis-newaxis", lambda x: x[..., None, 1:], [rn(2, 3)], None),
    ("iterate-rows", lambda x: [r for r in x][1] * 2.0, [rn(3, 2)], None),
    ("contiguous", lambda x: x.T.contiguous(), [rn(3, 2)], None),
    ("cat-dim0", lambda a, b: pygpu.cat([a, b]), [rn(2, 3), rn(4, 3)], None),
    ("cat-dim1", lambda a, b: pygpu.cat([a, b], dim=1), [rn(2, 3), rn(2, 1)], None),
    ("softmax", lambda x: pygpu.softmax(x, dim=1), [rn(4, 5)], None),
    ("log_softmax", lambda x: pygpu.log_softmax(x), [rn(4, 5)], None),
    ("log_softmax-dim0", lambda x: pygpu.log_softmax(x, dim=0), [rn(4, 5)], None),
    ("cross_entropy", lambda x: pygpu.cross_entropy(x, _labels(x)), [rn(5, 4)], None),
    ("cross_entropy-sum", lambda x: F.cross_entropy(x, _labels(x), reduction="sum"),
     [rn(5, 4)], None),
    ("mse", lambda x, y: F.mse_loss(x, y), [rn(3, 4), rn(3, 4)], None),
    ("mse-sum", lambda x, y: F.mse_loss(x, y, reduction="sum"), [rn(5), rn(5)], None),
    ("linear-3d-input", lambda x, w, b: F.linear(x, w, b, "relu"), [rn(2, 3, 4), rn(5, 4), rn(5)],
     None),
    ("shared-input", lambda x: x * x + x.exp() * x, [rn(4)], None),
    ("linear", lambda x, w, b: F.linear(x, w, b), [rn(5, 3), rn(4, 3), rn(4)], None),
    ("linear-nobias", lambda x, w: F.linear(x, w), [rn(5, 3), rn(4, 3)], None),
    ("linear-relu", lambda x, w, b: F.linear(x, w, b, "relu"), [rn(5, 3), rn(4, 3), rn(4)],
     None),
    ("linear-tanh", lambda x, w, b: F.linear(x, w, b, "tanh"), [rn(5, 3), rn(4, 3), rn(4)],
     None),
    ("linear-sigmoid", lambda x, w, b: F.linear(x, w, b, "sigmoid"),
     [rn(5, 3), rn(4, 3), rn(4)], None),
    ("to-device-and-back", lambda x: (x.to("cpu") * 2.0).to(x.device), [rn(3)], None),
    # the op table's newer elementwise ops (their rules: pygpu/autograd/rules.py)
    ("reciprocal", pygpu.reciprocal, [pos(3, 2) * np.array([1, -1])], None),
    ("rsqrt", lambda x: x.rsqrt(), [pos(5)], None),
    ("pow", pygpu.pow, [pos(3, 4), rn(4)], None),
    ("pow-zero-base", lambda x, y: x ** y, [np.array([0.0, 0.0, 2.0]), np.array([2.0, 3.0, 0.5])],
     None),
    ("pow-scalar-exponent", lambda x: x ** 3, [rn(4)], None),
    ("pow-scalar-half", lambda x: x.pow(0.5), [pos(4)], None),
    ("rpow-scalar", lambda x: 2.0 ** x, [rn(4)], None),
    ("where", lambda c, a, b: pygpu.where(c > 0, a, b), [rn(3, 4), rn(3, 4), rn(4)], [1, 2]),
    ("where-scalar", lambda c, a: pygpu.where(c > 0, a, 0.5), [rn(5), rn(5)], [1]),
    ("where-method", lambda c, a, b: a.where(c > 0, b), [rn(2, 3), rn(2, 3), rn(1, 3)], [1, 2]),
    ("clamp", lambda x: x.clamp(-0.5, 0.5), [rn(4, 5)], None),
    ("clamp-min", lambda x: pygpu.clamp(x, min=0.1), [rn(6)], None),
    ("clamp-tensor-bounds", lambda x, lo, hi: x.clamp(lo, hi), [rn(4, 3), rn(3) - 1, rn(4, 1) + 1],
     None),
    ("clip", lambda x: pygpu.clip(x, max=0.2), [rn(6)], None),
    ("sign-floor-round", lambda x: x.sign() * x + x.floor() + x.round() + x.ceil() + x.trunc(),
     [rn(5) + 0.1], None),
    ("add-alpha", lambda x, y: x.add(y, alpha=2.0), [rn(3), rn(3)], None),
    ("sub-method", lambda x, y: x.sub(y), [rn(3), rn(1)], None),
    ("mul-div-methods", lambda x, y: x.mul(y).div(y + 3.0), [rn(3), pos(3)], None),
]


def _labels(x):
    return to_device(LABELS[: x.shape[0]], x.device)


@pytest.mark.parametrize("name,fn,inputs,wrt", OPS, ids=[o[0] for o in OPS])
def test_gradient_matches_finite_differences(name, fn, inputs, wrt, device):
    gradcheck(fn, inputs, device, wrt)


def test_whole_mlp_gradient_matches_finite_differences(device):
    pygpu.manual_seed(3)
    model = nn.MLP([4, 6, 5, 3], activation="tanh").double().to(device)
    x = rn(7, 4)
    y = to_device(np.array([0, 2, 1, 1, 0, 2, 2]), device)
    loss = nn.CrossEntropyLoss()(model(to_device(x, device)), y)
    loss.backward()
    for name, p in model.named_parameters():
        base = to_numpy(p).copy()

        def f(arrs, p=p):
            with pygpu.no_grad():
                p.copy_(to_device(arrs[0], device))
                v = float(nn.CrossEntropyLoss()(model(to_device(x, device)), y).item())
                p.copy_(to_device(base, device))
            return v

        np.testing.assert_allclose(to_numpy(p.grad), numeric_grad(f, [base.copy()], 0),
                                   atol=1e-6, rtol=1e-5, err_msg=name)
