# test_complex_autograd.py - autograd through complex tensors and torch.fft against PyTorch on
# every device: the gradient of a real loss (a fixed random projection of each output's real
# pairs) with respect to complex and real leaves, by pygpu.autograd.grad and
# torch.autograd.grad, for each complex op and each fft function (n/s, dim, norm); gradcheck
# and gradgradcheck with complex inputs; the complex ops PyTorch has that pygpu composes
# (tanh, sigmoid, prod, where, index_select, gather, tensor indexing) and its sort refusal; a
# small model (a real linear layer, rfft, a spectral loss) trained a few steps beside torch.
# Each test loops over its cases.
import numpy as np
import pytest
import torch

import pygpu

R = np.random.default_rng(43)


def _c(shape):
    return R.standard_normal(shape) + 1j * R.standard_normal(shape)


def _r(shape):
    return R.standard_normal(shape)


def _leaves(arrays, device):
    ps, ts = [], []
    for a in arrays:
        if isinstance(a, np.ndarray):
            ps.append(pygpu.tensor(a).to(device).requires_grad_(True))
            ts.append(torch.tensor(a).requires_grad_(True))
        else:  # an index tensor or a number: as it is
            ps.append(pygpu.tensor(a).to(device) if isinstance(a, list) else a)
            ts.append(torch.tensor(a) if isinstance(a, list) else a)
    return ps, ts


def _loss(m, out, w):
    """A real scalar from out: its real pairs times the fixed weights w, summed."""
    if m is torch:
        out = out.resolve_conj()  # torch's conj() is lazy; pygpu's writes the conjugate
    pairs = m.view_as_real(out) if out.dtype.is_complex else out
    return (pairs * (pygpu.tensor(w).to(out.device) if m is pygpu else torch.tensor(w))).sum()


def _host(t):
    return t.detach().cpu().resolve_conj().numpy() if isinstance(t, torch.Tensor) else \
        t.detach().cpu().numpy()


def _compare(label, f, arrays, device, tol=1e-9, create_graph=False):
    """f(module, *leaves) on pygpu and torch: the values, then every leaf's gradient."""
    ps, ts = _leaves(arrays, device)
    want = f(torch, *ts)
    got = f(pygpu, *ps)
    assert tuple(got.shape) == tuple(want.shape), f"{label}: shape {got.shape} != {want.shape}"
    assert str(got.dtype) == str(want.dtype), f"{label}: dtype {got.dtype} != {want.dtype}"
    np.testing.assert_allclose(_host(got), _host(want), rtol=tol, atol=tol, err_msg=label)
    shape = tuple(want.shape) + ((2,) if want.is_complex() else ())
    w = R.standard_normal(shape)
    pl = [p for p in ps if isinstance(p, pygpu.Tensor) and p.requires_grad]
    tl = [t for t in ts if isinstance(t, torch.Tensor) and t.requires_grad]
    gw = torch.autograd.grad(_loss(torch, want, w), tl, create_graph=create_graph,
                             allow_unused=True)
    gp = pygpu.autograd.grad(_loss(pygpu, got, w), pl, create_graph=create_graph,
                             allow_unused=True)
    for i, (a, b) in enumerate(zip(gp, gw)):
        assert (a is None) == (b is None), f"{label}: gradient {i}: {a} and torch's {b}"
        if a is None:
            continue
        assert str(a.dtype) == str(b.dtype), f"{label}: grad {i} dtype {a.dtype} != {b.dtype}"
        np.testing.assert_allclose(_host(a), _host(b), rtol=tol, atol=tol,
                                   err_msg=f"{label}: gradient of input {i}")
    return gp, gw


_UNARY = [
    ("neg", lambda m, z: -z), ("exp", lambda m, z: z.exp()), ("log", lambda m, z: z.log()),
    ("sqrt", lambda m, z: z.sqrt()), ("reciprocal", lambda m, z: z.reciprocal()),
    ("1 / z", lambda m, z: 1 / z), ("sin", lambda m, z: z.sin()), ("cos", lambda m, z: z.cos()),
    ("square", lambda m, z: z.square()), ("abs", lambda m, z: z.abs()),
    ("angle", lambda m, z: z.angle()), ("conj", lambda m, z: z.conj()),
    ("real", lambda m, z: z.real), ("imag", lambda m, z: z.imag),
    ("tanh", lambda m, z: z.tanh()), ("sigmoid", lambda m, z: z.sigmoid()),
    ("torch.sigmoid", lambda m, z: m.sigmoid(z)),
    ("view_as_real", lambda m, z: m.view_as_real(z)), ("z ** 2", lambda m, z: z ** 2),
    ("z ** 2.5", lambda m, z: z ** 2.5), ("z ** (1+1j)", lambda m, z: z ** (1 + 1j)),
    ("2j * z - 1", lambda m, z: 2j * z - 1), ("z / (2 - 1j)", lambda m, z: z / (2 - 1j)),
    ("sum", lambda m, z: z.sum()), ("mean", lambda m, z: z.mean()),
    ("sum(1)", lambda m, z: z.sum(1)), ("mean(0, keepdim)", lambda m, z: z.mean(0, keepdim=True)),
    ("prod", lambda m, z: z.prod()), ("prod(1)", lambda m, z: z.prod(1)),
    ("prod(0, keepdim)", lambda m, z: z.prod(0, keepdim=True)),
    ("to complex64", lambda m, z: z.to(m.complex64)), ("clone", lambda m, z: z.clone()),
    ("flip", lambda m, z: z.flip(1)), ("roll", lambda m, z: z.roll(1, 1)),
    ("transpose", lambda m, z: z.transpose(0, 1)), ("permute", lambda m, z: z.permute(1, 0)),
    ("T contiguous", lambda m, z: z.T.contiguous()), ("reshape", lambda m, z: z.reshape(-1)),
    ("z[1]", lambda m, z: z[1]), ("z[:, 1:]", lambda m, z: z[:, 1:]),
    ("cat", lambda m, z: m.cat([z, z * 2], 0)), ("stack", lambda m, z: m.stack([z, z.exp()], 1)),
    ("unsqueeze expand", lambda m, z: z.unsqueeze(0).expand(2, 3, 5)),
    ("abs().pow(2).sum", lambda m, z: z.abs().pow(2).sum()),
]


def test_unary_and_views_against_torch(device):
    for label, f in _UNARY:
        _compare(label, f, [_c((3, 5))], device)


def test_tanh_and_sigmoid_far_out_and_near_poles(device):
    """The stable forms: large real parts (no inf / inf), near tanh's pole (no cancellation),
    tiny sigmoids (relative accuracy), against torch in complex128 and complex64 (where
    torch's complex64 sigmoid overflows to NaN at -100 + 0.5j, pygpu's gives the value)."""
    z = np.array([50 + 1j, -50 + 2j, 0.3 + 100j, 1e-8 + 1e-8j, 20.5 + 3j, -100 + 0.5j,
                  1e-3 + 1j * np.pi / 2, 1j, 0j])
    for nd, tol in ((np.complex128, 1e-12), (np.complex64, 2e-6)):
        for f in ("tanh", "sigmoid"):
            want = getattr(torch.tensor(z.astype(nd)), f)().numpy()
            got = getattr(pygpu.tensor(z.astype(nd)).to(device), f)().cpu().numpy()
            keep = ~np.isnan(want)
            np.testing.assert_allclose(got[keep], want[keep], rtol=tol, atol=1e-30,
                                       err_msg=f"{f} {nd.__name__}")


_BINARY = [
    ("add", lambda m, a, b: a + b), ("sub", lambda m, a, b: a - b),
    ("mul", lambda m, a, b: a * b), ("div", lambda m, a, b: a / b),
    ("pow", lambda m, a, b: a ** b), ("where", lambda m, a, b: m.where(a.real > 0, a, b)),
    ("where number", lambda m, a, b: m.where(a.real > 0, a, 0)),
    ("matmul", lambda m, a, b: a @ b.T), ("mm", lambda m, a, b: m.mm(a, b.T)),
    ("bmm", lambda m, a, b: m.bmm(a.unsqueeze(0), b.T.unsqueeze(0))),
    ("matrix @ vector", lambda m, a, b: a @ b[0]),
]


def test_binary_and_products_against_torch(device):
    for label, f in _BINARY:
        _compare(label, f, [_c((3, 4)), _c((3, 4))], device)
    # broadcast operands
    _compare("mul broadcast", lambda m, a, b: a * b, [_c((3, 4)), _c((4,))], device)
    _compare("div broadcast", lambda m, a, b: a / b, [_c((3, 1)), _c((4,))], device)


def test_real_and_complex_together(device):
    cases = [
        ("real * complex", lambda m, x, z: x * z), ("complex - real", lambda m, x, z: z - x),
        ("real / complex", lambda m, x, z: x / z),
        ("complex(x, z.imag)", lambda m, x, z: m.complex(x, z.imag)),
        ("polar", lambda m, x, z: m.polar(x.abs() + 0.5, z.real)),
        ("x.to(complex128) * z", lambda m, x, z: x.to(m.complex128) * z),
        ("real matmul complex", lambda m, x, z: x.to(m.complex128) @ z.T),
        ("view_as_complex", lambda m, x, z: m.view_as_complex(m.stack([x, x * 2], -1)) * z),
        ("z.real * x", lambda m, x, z: (z * z).real * x),
        ("z.abs() + x", lambda m, x, z: z.abs() + x),
        ("where real", lambda m, x, z: m.where(x > 0, z * x, 0.5)),
    ]
    for label, f in cases:
        _compare(label, f, [_r((3, 4)), _c((3, 4))], device)


def test_complex_to_real_casts_as_torch(device):
    """A cast to a real dtype keeps the real part (with PyTorch's warning); its gradient
    comes back as a complex one with zero imaginary parts."""
    for label, f in [("to(float64)", lambda m, z: z.to(m.float64)),
                     ("double()", lambda m, z: (z * z).double()),
                     ("float() to complex64", lambda m, z: z.float().to(m.complex64))]:
        with pytest.warns(UserWarning, match="Casting complex values to real discards"):
            _compare(label, f, [_c((3, 4))], device, tol=1e-6)


def test_gradients_at_zero_parts_as_torch(device):
    """Where a formula's other branch divides by a zero part, torch's gradients are finite."""
    z = np.array([[0j, 2 + 0j, -3 + 0j, 1.5j], [-2j, 1 + 1j, 0.5 + 0j, -1 - 0.5j]])
    for label, f in [("abs", lambda m, z: z.abs()), ("angle", lambda m, z: z.angle()),
                     ("reciprocal", lambda m, z: z[:, 1:].reciprocal()),
                     ("div", lambda m, z: (z + 1) / z[:, 1:2]),
                     ("sqrt", lambda m, z: z[:, 1:].sqrt())]:
        _compare(label, f, [z], device)


def test_index_ops_against_torch(device):
    idx = [2, 0, 0, 3]
    cases = [
        ("index_select", lambda m, z, i: z.index_select(1, i)),
        ("z[:, i]", lambda m, z, i: z[:, i]), ("z[i[:2]]", lambda m, z, i: z[i[:2]]),
        ("gather", lambda m, z, i: z.gather(1, i.reshape(1, 4).expand(3, 4))),
        ("z[mask]", lambda m, z, i: z[z.real > 0]),
        ("masked_select", lambda m, z, i: z.masked_select(z.imag > 0)),
    ]
    for label, f in cases:
        _compare(label, f, [_c((3, 5)), idx], device)


def test_in_place_and_masked_ops_against_torch(device):
    """In-place complex ops on a tensor in a graph (their rules read a copy, so the backward's
    saved values are not overwritten), masked fills, vdot's conjugate."""
    def inplace(m, z):
        y = z * 1
        y.mul_(2 - 1j)
        y += z
        y[0] = z[1] * 3
        y.mul_(z)
        y.exp_()  # last: its backward reads its output, as torch's
        return y
    cases = [
        ("in place", inplace),
        ("masked_fill", lambda m, z: z.masked_fill(z.real > 0, 2 - 1j)),
        ("masked_fill_", lambda m, z: (z * 1).masked_fill_(z.imag > 0, 1j)),
        ("setitem mask", lambda m, z: (z * 1).__setitem__(z.real > 0, 0.5) or z),
        ("vdot", lambda m, z: m.vdot(z[0], z[1])),
    ]
    for label, f in cases:
        _compare(label, f, [_c((3, 4))], device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        pygpu.tensor(_c((2,))).to(device).requires_grad_(True).mul_(2)


def test_optimizers_step_complex_parameters_as_torch(device):
    """A complex parameter steps as its real pairs (PyTorch's optimizers view_as_real it)."""
    a = _c((3, 4))
    for name, kw in [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.1}),
                     ("AdamW", {"lr": 0.1}), ("RMSprop", {"lr": 0.01})]:
        tz = torch.tensor(a).requires_grad_(True)
        pz = pygpu.tensor(a).to(device).requires_grad_(True)
        topt = getattr(torch.optim, name)([tz], **kw)
        popt = getattr(pygpu.optim, name)([pz], **kw)
        for _ in range(3):
            for z, opt in ((tz, topt), (pz, popt)):
                opt.zero_grad()
                ((z * z).sin().abs() ** 2).sum().backward()
                opt.step()
        np.testing.assert_allclose(_host(pz), _host(tz), rtol=1e-9, atol=1e-9, err_msg=name)


def test_index_assignment_values(device):
    z = _c((3, 5))
    p, t = pygpu.tensor(z).to(device), torch.tensor(z)
    for key, v in [((slice(None), [4, 1]), 2 - 1j), ([0, 2], _c((2, 5)))]:
        pv = pygpu.tensor(v).to(device) if isinstance(v, np.ndarray) else v
        tv = torch.tensor(v) if isinstance(v, np.ndarray) else v
        pk = tuple(pygpu.tensor(k).to(device) if isinstance(k, list) else k for k in key) \
            if isinstance(key, tuple) else pygpu.tensor(key).to(device)
        tk = tuple(torch.tensor(k) if isinstance(k, list) else k for k in key) \
            if isinstance(key, tuple) else torch.tensor(key)
        p[pk] = pv
        t[tk] = tv
        np.testing.assert_allclose(p.cpu().numpy(), t.numpy(), rtol=0, atol=0)


def test_sort_is_refused_as_torch(device):
    z = _c((4,))
    p, t = pygpu.tensor(z).to(device), torch.tensor(z)
    for label, f in [("sort", lambda x: x.sort()), ("argsort", lambda x: x.argsort()),
                     ("msort", lambda x: x.msort()), ("topk", lambda x: x.topk(2))]:
        with pytest.raises(RuntimeError) as want:
            f(t)
        with pytest.raises(RuntimeError) as got:
            f(p)
        if p.device.type != "cuda":
            assert str(got.value) == str(want.value), label


def test_requires_grad_and_the_implicit_gradient(device):
    z = pygpu.tensor(_c((3,))).to(device).requires_grad_(True)
    assert z.requires_grad and z.is_leaf
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar "
                                           "outputs"):
        (z * z).sum().backward()
    (z * z).sum().abs().backward()
    want = torch.tensor(z.detach().cpu().numpy()).requires_grad_(True)
    (want * want).sum().abs().backward()
    np.testing.assert_allclose(z.grad.cpu().numpy(), want.grad.numpy(), rtol=1e-9, atol=1e-9)
    assert z.grad.dtype is pygpu.complex128
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        pygpu.ones(2, dtype=pygpu.int64, device=device).requires_grad_(True)


# ---- torch.fft ---------------------------------------------------------------------------

_FFT = [
    ("fft", {}, "c"), ("fft", {"n": 7, "norm": "ortho"}, "c"), ("fft", {"n": 3, "dim": 0}, "c"),
    ("ifft", {}, "c"), ("ifft", {"n": 9, "norm": "forward"}, "c"), ("fft", {}, "r"),
    ("rfft", {}, "r"), ("rfft", {"n": 7}, "r"), ("rfft", {"n": 10, "dim": 0, "norm": "ortho"}, "r"),
    ("irfft", {}, "c"), ("irfft", {"n": 9}, "c"), ("irfft", {"n": 4, "norm": "forward"}, "c"),
    ("irfft", {"dim": 0, "norm": "ortho"}, "c"),
    ("fft2", {}, "c"), ("ifft2", {"s": (3, 7)}, "c"), ("rfft2", {}, "r"),
    ("rfft2", {"s": (5, 5), "norm": "ortho"}, "r"), ("irfft2", {}, "c"),
    ("irfft2", {"s": (4, 7)}, "c"), ("fftn", {}, "c"), ("fftn", {"dim": (0, 2)}, "c"),
    ("ifftn", {"s": (2, 3, 4), "norm": "ortho"}, "c"), ("rfftn", {}, "r"),
    ("rfftn", {"dim": (0, 1), "norm": "forward"}, "r"), ("irfftn", {}, "c"),
    ("irfftn", {"s": (3, 4, 5)}, "c"), ("fftshift", {}, "c"), ("ifftshift", {"dim": 1}, "r"),
]


def test_every_fft_function_against_torch(device):
    for fn, kw, kind in _FFT:
        shape = (4, 6) if fn in ("fft", "ifft", "rfft", "irfft") else (3, 4, 6)
        a = _c(shape) if kind == "c" else _r(shape)
        _compare(f"{fn} {kind} {kw}", lambda m, x: getattr(m.fft, fn)(x, **kw), [a], device)


def test_fft_second_derivatives_against_torch(device):
    """create_graph=True: the gradient's own gradient (the adjoint of the adjoint)."""
    for fn, kind in [("fft", "c"), ("rfft", "r"), ("irfft", "c"), ("rfft2", "r")]:
        a = _c((4, 6)) if kind == "c" else _r((4, 6))
        ps, ts = _leaves([a], device)
        w = R.standard_normal(a.shape + ((2,) if kind == "c" else ()))

        def first(m, x):
            y = getattr(m.fft, fn)(x) * x.sum()
            (g,) = m.autograd.grad(_loss(m, y, _W[fn]), [x], create_graph=True)
            return _loss(m, g * g, w)
        _W[fn] = R.standard_normal(tuple(getattr(torch.fft, fn)(ts[0]).shape) + (2,))
        (gp,) = pygpu.autograd.grad(first(pygpu, ps[0]), [ps[0]])
        (gt,) = torch.autograd.grad(first(torch, ts[0]), [ts[0]])
        np.testing.assert_allclose(_host(gp), _host(gt), rtol=1e-8, atol=1e-8, err_msg=fn)


_W = {}


def test_gradcheck_with_complex_inputs(device):
    z = pygpu.tensor(_c((2, 3))).to(device).requires_grad_(True)
    x = pygpu.tensor(_r((2, 3))).to(device).requires_grad_(True)
    ga = pygpu.autograd
    assert ga.gradcheck(lambda z: (z * z.exp()).sum(0), (z,))
    assert ga.gradcheck(lambda z, x: z / (x.to(pygpu.complex128) + 2), (z, x))
    assert ga.gradcheck(lambda z: pygpu.fft.fft(z, n=5), (z,))
    assert ga.gradcheck(lambda x: pygpu.fft.rfft(x, norm="ortho"), (x,))
    assert ga.gradcheck(lambda z: pygpu.fft.irfft(z, n=4), (z,))
    assert ga.gradcheck(lambda z: z.tanh().abs(), (z,), fast_mode=True)
    assert ga.gradgradcheck(lambda z: (z * z).sin(), (z,))
    assert ga.gradgradcheck(lambda z: pygpu.fft.ifft2(z, norm="ortho"), (z,))
    # a wrong gradient is caught: a rule that conjugates where it should not
    bad = lambda z: pygpu.view_as_complex(_Conjugated.apply(pygpu.view_as_real(z)))
    assert not ga.gradcheck(lambda z: bad(z) * z, (z,), raise_exception=False)


class _Conjugated(pygpu.autograd.Function):
    """The identity on pairs with the imaginary part's gradient negated: wrong on purpose."""
    @staticmethod
    def forward(ctx, p):
        return p.clone()

    @staticmethod
    def backward(ctx, g):
        return g * pygpu.tensor([1.0, -1.0], dtype=g.dtype, device=g.device)


def test_a_spectral_model_trains_as_torch(device):
    """A real signal through a real linear layer, its rfft, a loss on the spectrum's
    magnitude and phase: five SGD steps, losses and weights equal to torch's."""
    n = 16
    x = _r((8, n)).astype(np.float32)
    target = np.abs(np.fft.rfft(_r((8, n)))).astype(np.float32)
    torch.manual_seed(0)
    tl = torch.nn.Linear(n, n)
    pl = pygpu.nn.Linear(n, n).to(device)
    with pygpu.no_grad():
        pl.weight.copy_(pygpu.tensor(tl.weight.detach().numpy()).to(device))
        pl.bias.copy_(pygpu.tensor(tl.bias.detach().numpy()).to(device))
    scale = torch.tensor(0.5 + 0.1j, dtype=torch.complex64).requires_grad_(True)
    pscale = pygpu.tensor(0.5 + 0.1j, dtype=pygpu.complex64).to(device).requires_grad_(True)
    topt = torch.optim.SGD(list(tl.parameters()) + [scale], lr=0.05)
    popt = pygpu.optim.SGD(list(pl.parameters()) + [pscale], lr=0.05)

    def loss(m, layer, s, xx, tt):
        spec = m.fft.rfft(layer(xx), norm="ortho") * s
        mag = spec.abs()
        return ((mag - tt) ** 2).mean() + 0.01 * spec.angle().pow(2).mean()
    for step in range(5):
        lt = loss(torch, tl, scale, torch.tensor(x), torch.tensor(target))
        lp = loss(pygpu, pl, pscale, pygpu.tensor(x).to(device), pygpu.tensor(target).to(device))
        np.testing.assert_allclose(lp.item(), lt.item(), rtol=2e-5, err_msg=f"step {step}")
        topt.zero_grad()
        popt.zero_grad()
        lt.backward()
        lp.backward()
        assert pscale.grad.dtype is pygpu.complex64
        np.testing.assert_allclose(pscale.grad.cpu().numpy(), scale.grad.numpy(), rtol=1e-4,
                                   atol=1e-6)
        topt.step()
        popt.step()
    np.testing.assert_allclose(pl.weight.detach().cpu().numpy(), tl.weight.detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pscale.detach().cpu().numpy(), scale.detach().numpy(), rtol=1e-4)
