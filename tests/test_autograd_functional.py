# test_autograd_functional.py - autograd.grad's whole signature, Tensor.backward's
# create_graph and inputs, torch.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp)
# and the WGAN-GP gradient penalty of issue 43 (a convolutional critic, then a linear one):
# each against torch, on every device.
import inspect
import warnings

import numpy as np
import pytest

import pygpu

from _helpers import to_device

torch = pytest.importorskip("torch")

X = np.random.default_rng(7).standard_normal((2, 3))
Y = np.random.default_rng(8).standard_normal((3,))


def _pair(device, a=X):
    return (to_device(a, device).requires_grad_(), torch.tensor(a, requires_grad=True))


def _np(t):
    return t.detach().cpu().numpy()


def _same(mine, ref, rtol=1e-10, atol=1e-12):
    if isinstance(ref, (tuple, list)):
        assert isinstance(mine, (tuple, list)) and len(mine) == len(ref)
        for m, r in zip(mine, ref):
            _same(m, r, rtol, atol)
        return
    if ref is None:
        assert mine is None
        return
    assert tuple(mine.shape) == tuple(ref.shape)
    np.testing.assert_allclose(_np(mine), ref.detach().numpy(), rtol=rtol, atol=atol)


# ---- autograd.grad ------------------------------------------------------------------------------

def test_grad_signature_is_pytorchs():
    mine = inspect.signature(pygpu.autograd.grad)
    theirs = inspect.signature(torch.autograd.grad)
    assert [(p.name, p.default) for p in mine.parameters.values()] == \
        [(p.name, p.default) for p in theirs.parameters.values()]
    mine = inspect.signature(pygpu.autograd.backward)
    theirs = inspect.signature(torch.autograd.backward)
    assert [p.name for p in mine.parameters.values()] == \
        [p.name for p in theirs.parameters.values()]


def test_grad_options_match_pytorch(device):
    x, tx = _pair(device)
    y, ty = _pair(device, Y)
    for lib, a, b in ((pygpu, x, y), (torch, tx, ty)):
        out = (a * a).sum(1)
        unused = b * 2
        g1 = lib.autograd.grad(out, [a, b], grad_outputs=out.detach() * 0 + 1, allow_unused=True,
                               retain_graph=True)
        g2 = lib.autograd.grad(out.sum(), [a, b], materialize_grads=True, retain_graph=True)
        g3 = lib.autograd.grad(out.sum(), {"a": a}, retain_graph=True)
        g4 = lib.autograd.grad(out, a, grad_outputs=(lib.eye(2, dtype=a.dtype) if lib is torch
                                                      else pygpu.eye(2, dtype=a.dtype,
                                                                     device=a.device)),
                               is_grads_batched=True, retain_graph=True)
        with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
            g5 = lib.autograd.grad(out.sum(), a, only_inputs=False)
        del unused
        if lib is pygpu:
            mine = (g1, g2, g3["a"], g4, g5)
        else:
            theirs = (g1, g2, g3["a"], g4, g5)
    _same(mine, theirs)


@pytest.mark.parametrize("call,match", [
    (lambda lib, a, b: lib.autograd.grad((a * 2).sum(), b), "One of the differentiated Tensors "
                                                            "does not require grad"),
    (lambda lib, a, b: lib.autograd.grad(b.sum(), a), "element 0 of tensors does not require "
                                                      "grad and does not have a grad_fn"),
    (lambda lib, a, b: lib.autograd.grad((a * 2), a), "grad can be implicitly created only for "
                                                      "scalar outputs"),
    (lambda lib, a, b: lib.autograd.grad((a * 2).sum(), [a, a * 1]),
     "The differentiated Tensor at index 1 appears to not have been used in the graph"),
    (lambda lib, a, b: lib.autograd.grad((a * 2).sum(), a, allow_unused=False,
                                         materialize_grads=True), "Expected allow_unused to be "
                                                                  "True or not passed"),
    (lambda lib, a, b: lib.autograd.grad([(a * 2).sum(), a.sum()], a, grad_outputs=[None]),
     "got 2 tensors and 1 gradients"),
])
def test_grad_errors_are_pytorchs(device, call, match):
    x, tx = _pair(device)
    for lib, a in ((pygpu, x), (torch, tx)):
        b = (to_device(Y, device) if lib is pygpu else torch.tensor(Y))
        with pytest.raises((RuntimeError, ValueError), match=match):
            call(lib, a, b)


def test_grad_of_a_non_leaf_and_through_it(device):
    x, tx = _pair(device)
    res = []
    for lib, a in ((pygpu, x), (torch, tx)):
        h = a.exp()
        out = (h * a).sum()
        res.append(lib.autograd.grad(out, [h, a]))
    _same(res[0], res[1])


def test_backward_with_inputs_and_create_graph(device):
    x, tx = _pair(device)
    y, ty = _pair(device, Y)
    for lib, a, b in ((pygpu, x, y), (torch, tx, ty)):
        (a * b).sum().backward(inputs=[b])  # only b accumulates
        assert a.grad is None
        if lib is pygpu:  # (torch warns once per process)
            with pytest.warns(UserWarning, match="create_graph=True will create a reference "
                                                 "cycle"):
                (a.sin() * b).sum().backward(create_graph=True)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                (a.sin() * b).sum().backward(create_graph=True)
        assert a.grad.requires_grad
        a.grad.sum().backward(inputs=[a])  # the second derivative accumulates into a.grad
    _same((x.grad, y.grad), (tx.grad, ty.grad))


def test_repeated_create_graph_gives_third_derivatives(device):
    x, tx = _pair(device)
    res = []
    for lib, a in ((pygpu, x), (torch, tx)):
        f = (a.tanh() * a.sigmoid()).sum()
        (g1,) = lib.autograd.grad(f, a, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), a, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), a)
        res.append((g1, g2, g3))
    _same(res[0], res[1])


# ---- torch.autograd.functional ------------------------------------------------------------------

def _f_single(x):
    return (x.exp() * x.sin()).sum(-1)


def _f_pair(x, y):
    return x.tanh() @ y + (y * y).sum(), (x * x).sum(0) * y


def _scalar(x, y):
    return ((x @ y).sigmoid() * x.sum()).sum() + (y * y * y).sum()


FUNCTIONAL = {
    "jacobian-single": lambda F, x, y: F.jacobian(_f_single, x),
    "jacobian-tuples": lambda F, x, y: F.jacobian(_f_pair, (x, y)),
    "jacobian-vectorize": lambda F, x, y: F.jacobian(_f_pair, (x, y), vectorize=True),
    "hessian-single": lambda F, x, y: F.hessian(lambda a: _scalar(a, y.detach()), x),
    "hessian-tuple": lambda F, x, y: F.hessian(_scalar, (x, y)),
    "vjp": lambda F, x, y: F.vjp(_f_pair, (x, y), (x[:, 0] * 0 + 1, y * 2)),
    "jvp": lambda F, x, y: F.jvp(_f_pair, (x, y), (x * 0.5, y - 1)),
    "vhp": lambda F, x, y: F.vhp(_scalar, (x, y), (x * 2, y)),
    "hvp": lambda F, x, y: F.hvp(_scalar, (x, y), (x * 2, y)),
    "hvp-create_graph": lambda F, x, y: F.hvp(_scalar, (x, y), (x * 2, y), create_graph=True),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_matches_pytorch(device, name):
    mine = FUNCTIONAL[name](pygpu.autograd.functional, to_device(X, device),
                            to_device(Y, device))
    theirs = FUNCTIONAL[name](torch.autograd.functional, torch.tensor(X), torch.tensor(Y))
    _same(mine, theirs)


def test_functional_signatures_are_pytorchs():
    for name in ("jacobian", "hessian", "vjp", "jvp", "vhp", "hvp"):
        mine = inspect.signature(getattr(pygpu.autograd.functional, name))
        theirs = inspect.signature(getattr(torch.autograd.functional, name))
        assert [(p.name, p.default) for p in mine.parameters.values()] == \
            [(p.name, p.default) for p in theirs.parameters.values()], name


def test_functional_create_graph_is_differentiable(device):
    x, tx = _pair(device)
    y, ty = _pair(device, Y)
    res = []
    for lib, a, b in ((pygpu, x, y), (torch, tx, ty)):
        _, hv = lib.autograd.functional.hvp(_scalar, (a, b), (a * 0 + 1, b * 0 + 1),
                                            create_graph=True)
        (hv[0].sum() + hv[1].sum()).backward()
        res.append((a.grad, b.grad))
    _same(res[0], res[1])


@pytest.mark.parametrize("call,match", [
    (lambda F, x, y: F.jacobian(lambda a: y * 2, x, strict=True),
     "Output 0 of the user-provided function does not require gradients"),
    (lambda F, x, y: F.hessian(lambda a: (a * 2).sum(), x, strict=True),
     "jacobian of the user-provided function with respect to input 0 is independent"),
    (lambda F, x, y: F.vjp(_f_single, x), "The vector v can only be None"),
    (lambda F, x, y: F.hvp(_f_single, x, x), "should contain a single element"),
    (lambda F, x, y: F.jvp(_f_single, x, y), "v has invalid size"),
])
def test_functional_errors_are_pytorchs(device, call, match):
    for F, x, y in ((pygpu.autograd.functional, to_device(X, device), to_device(Y, device)),
                    (torch.autograd.functional, torch.tensor(X), torch.tensor(Y))):
        with pytest.raises(RuntimeError, match=match):
            call(F, x, y)


# ---- the WGAN-GP gradient penalty (issue 43's reproducer) ---------------------------------------

def _critic(lib, conv):
    nn = lib.nn
    if conv:
        return nn.Sequential(nn.Conv2d(2, 4, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
                             nn.Conv2d(4, 4, 3, padding=1), nn.LeakyReLU(0.2),
                             nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16, 8), nn.Tanh(),
                             nn.Linear(8, 1))
    return nn.Sequential(nn.Linear(12, 16), nn.LeakyReLU(0.2), nn.LayerNorm(16),
                         nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))


def _penalty_step(lib, critic, real, fake, alpha, device):
    def t(a):
        return to_device(a, device) if lib is pygpu else torch.tensor(a)
    x = t(alpha) * t(real) + (1 - t(alpha)) * t(fake)
    x.requires_grad_(True)
    d = critic(x)
    ones = lib.ones(d.shape, dtype=d.dtype, device=d.device) if lib is pygpu else \
        torch.ones(d.shape, dtype=d.dtype)
    g = lib.autograd.grad(outputs=d, inputs=x, grad_outputs=ones, create_graph=True,
                          retain_graph=True, only_inputs=True)[0]
    g = g.view(g.size(0), -1)
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean() * 10
    loss = d.mean() - critic(t(real)).mean() + penalty
    loss.backward()
    return loss


@pytest.mark.parametrize("conv", [True, False], ids=["conv-critic", "linear-critic"])
def test_wgan_gp_gradient_penalty_matches_pytorch(device, conv):
    torch.manual_seed(0)
    tc = _critic(torch, conv).double()
    pc = _critic(pygpu, conv).double().to(device)
    with pygpu.no_grad():
        for tp, pp in zip(tc.parameters(), pc.parameters()):
            pp.copy_(to_device(tp.detach().numpy(), device))
    rng = np.random.default_rng(0)
    shape = (3, 2, 8, 8) if conv else (3, 12)
    real, fake = rng.standard_normal(shape), rng.standard_normal(shape)
    alpha = rng.uniform(size=(3,) + (1,) * (len(shape) - 1))
    tl = _penalty_step(torch, tc, real, fake, alpha, None)
    pl = _penalty_step(pygpu, pc, real, fake, alpha, device)
    np.testing.assert_allclose(float(pl.item()), float(tl.item()), rtol=1e-10)
    for (name, tp), pp in zip(tc.named_parameters(), pc.parameters()):
        np.testing.assert_allclose(pp.grad.cpu().numpy(), tp.grad.numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)
