# test_math_ops.py - the math functions of the op table (sin ... isneginf, atan2 ... zeta)
# and their Python compositions against PyTorch, on every device: the methods, in-place
# methods and other spellings each row lists; gradients (float64); special values
# (NaN, +-inf, +-0, the ends of each domain) at vector sizes, where the SIMD kernels'
# tails and lanes are; int64 division semantics; the compositions (logit(eps), lerp,
# addcmul, addcdiv, nan_to_num, clamp_min/max, float_power, polygamma, div's
# rounding_mode); and the errors. Values on the usual inputs are the op table's
# generated cases (tests/op_references.py). Each test loops over the ops inside (a failure names the op), to keep the count low.
import math

import numpy as np
import pytest
import torch

import pygpu

from _helpers import to_device

from op_references import MATH_BINARY, MATH_UNARY

_TORCH_NAME = {"special_i0e": "special.i0e", "special_i1": "special.i1",
               "special_i1e": "special.i1e", "special_ndtr": "special.ndtr",
               "special_entr": "special.entr", "special_xlog1py": "special.xlog1py",
               "special_zeta": "special.zeta"}


def _torch_fn(name):
    f = torch
    for part in _TORCH_NAME.get(name, name).split("."):
        f = getattr(f, part)
    return f


def _domain(rng, dom, n, dtype=np.float64):
    from _helpers import random_array
    return random_array(rng, (n,), dtype, dom)


def _rows(family):
    return [r for r in pygpu._C._op_table() if r[1] == family and r[0] in
            (MATH_UNARY if family == "unary" else MATH_BINARY)]


def test_every_spelling_a_row_lists_computes_the_row(device):
    """pygpu.<name>, Tensor.<name>, Tensor.<name>_ (in place, returning self) and the
    other spellings (arcsin, special.*, fix, ...) agree with the row's function."""
    rng = np.random.default_rng(0)
    for name, family, _, py, _, *_ in _rows("unary") + _rows("binary"):
        ref_fn = getattr(pygpu._C, name)
        doms = (MATH_UNARY[name][1],) if family == "unary" else MATH_BINARY[name][1]
        xs = [to_device(_domain(rng, doms[min(k, len(doms) - 1)], 7), device)
              for k in range(1 if family == "unary" else 2)]
        want = ref_fn(*xs).numpy()
        for q in py:
            root, *path = q.split(".")
            if path[-1].startswith("__"):
                continue
            if root == "pygpu":
                obj = pygpu
                for p in path:
                    obj = getattr(obj, p)
                got = obj(*xs)
            elif path[0].endswith("_"):
                y = xs[0].clone()
                out = getattr(y, path[0])(*xs[1:])
                assert out is y, q
                got = y
            else:
                got = getattr(xs[0], path[0])(*xs[1:])
            np.testing.assert_array_equal(got.numpy(), want, err_msg=q)


def _grad_inputs(name, rng):
    dom = MATH_UNARY[name][1] if name in MATH_UNARY else MATH_BINARY[name][1]
    doms = (dom,) if isinstance(dom, str) else dom
    n = 1 if name in MATH_UNARY else 2
    xs = [_domain(rng, doms[min(k, len(doms) - 1)], 6) for k in range(n)]
    if name == "special_i1" or name == "special_i1e" or name == "sinc":
        xs[0][0] = 0.0  # the removable point of the rule
    return xs


# the rows declared not differentiable (the op table's saves column, pg_ops.def)
_NOT_DIFFERENTIABLE = {r[0] for r in pygpu._C._op_table() if r[5] == "no_grad"}


def test_gradients_match_torch(device):
    """Each differentiable row's backward rule against torch's autograd, float64, both
    operands of the binary ones (the zeta's first has no derivative in either)."""
    rng = np.random.default_rng(1)
    for name in list(MATH_UNARY) + list(MATH_BINARY):
        if name in _NOT_DIFFERENTIABLE:
            continue
        xs = _grad_inputs(name, rng)
        wrt = [1] if name == "special_zeta" else range(len(xs))
        tt = [torch.tensor(x, requires_grad=k in wrt) for k, x in enumerate(xs)]
        pt = [to_device(x, device).requires_grad_(k in wrt) for k, x in enumerate(xs)]
        proj = rng.standard_normal(6)
        (_torch_fn(name)(*tt) * torch.tensor(proj)).sum().backward()
        out = getattr(pygpu._C, name)(*pt)
        assert out.grad_fn is not None, name
        (out * to_device(proj, device)).sum().backward()
        for k in wrt:  # (torch's trigamma, digamma's derivative, is good to 1e-9)
            np.testing.assert_allclose(pt[k].grad.numpy(), tt[k].grad.numpy(), rtol=1e-8,
                                       atol=1e-12, err_msg=f"{name}: gradient of input {k}")


def test_gradients_with_a_number_operand(device):
    rng = np.random.default_rng(2)
    for name in ("atan2", "hypot", "fmod", "remainder", "copysign", "xlogy", "logaddexp",
                 "logaddexp2", "fmax", "fmin"):
        x = _domain(rng, "positive", 5)
        for left in (False, True):
            tt = torch.tensor(x, requires_grad=True)
            pt = to_device(x, device).requires_grad_()
            f_t, f_p = _torch_fn(name), getattr(pygpu._C, name)
            c = torch.tensor(1.5, dtype=torch.float64)  # torch's atan2 takes no number
            (f_t(c, tt) if left else f_t(tt, c)).sum().backward()
            (f_p(1.5, pt) if left else f_p(pt, 1.5)).sum().backward()
            np.testing.assert_allclose(pt.grad.numpy(), tt.grad.numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=f"{name} left={left}")


# NaN, the infinities, signed zeros and each function's edges, scattered over an array long
# enough for whole vectors and a tail (1003), so every lane of the SIMD kernels meets them
_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30,
                     1e30, -1e30, 88.0, -88.0, 710.0, 2.0, -2.0, 3.5, -3.5, 0.999999, -0.999999,
                     1.0000001, 20.0, 1e-8])


def _special_array(rng, dtype):
    x = rng.standard_normal(1003) * 3
    x[rng.permutation(1003)[:_SPECIAL.size * 4]] = np.tile(_SPECIAL, 4)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_values_at_vector_sizes_match_torch(device, dtype):
    """Against torch in float64 rounded to the dtype (the correctly rounded value, up to
    torch's own float64 error): libmvec's vector functions are within 4 ulp."""
    rng = np.random.default_rng(3)
    x = _special_array(rng, dtype)
    y = np.roll(x, 7)
    tx, ty = to_device(x, device), to_device(y, device)
    x64, y64 = torch.from_numpy(x.astype(np.float64)), torch.from_numpy(y.astype(np.float64))
    rtol = 2e-6 if dtype == "float32" else 1e-12
    big = np.finfo(dtype).max / 1e3
    with np.errstate(all="ignore"):
        for name in list(MATH_UNARY) + list(MATH_BINARY):
            binary = name in MATH_BINARY
            got = (getattr(pygpu._C, name)(tx, ty) if binary else getattr(pygpu._C, name)(tx)).numpy()
            want = _torch_fn(name)(*((x64, y64) if binary else (x64,))).numpy()
            if name == "nextafter":  # the next value is the dtype's own
                want = np.nextafter(x, y)
            elif name == "special_ndtr":  # torch's loses the left tail (1e-3 at -7.7): erfc's
                want = (0.5 * torch.erfc(-x64 / math.sqrt(2.0))).numpy().astype(dtype)
            elif want.dtype.kind == "f":
                want = want.astype(dtype)
            if name == "special_zeta":  # torch (Cephes) gives NaN for q = -inf where the
                ok = np.isfinite(y)    # sum is 0, and pygpu's own convention elsewhere
                got, want = got[ok], want[ok]
            scale = np.where(np.isfinite(want), np.abs(want), 0)
            # a few ulp of the terms where the result cancels: lgamma, digamma near their
            # roots, logit and logaddexp near 0
            atol = {"float32": 4e-6, "float64": 1e-13}[dtype] if name in (
                "lgamma", "digamma", "special_zeta", "tan", "sinc", "logit", "logaddexp", "logaddexp2") else 0
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            same = (got == want) | (np.isnan(got) & np.isnan(want))
            if got.dtype.kind == "f":  # at the range's edge (sinh(710) is 1.1e308): torch's
                same |= np.isinf(want) & (np.abs(got) > big) & (np.sign(got) == np.sign(want))
            # ndtr's far left tail in float32: erfc's argument -x/sqrt(2) is rounded first
            r = rtol * (10 if name == "special_ndtr" else 1)
            bad = ~same & ~(err <= r * scale + atol)
            assert not bad.any(), (f"{name} ({dtype}): {int(bad.sum())} differ, e.g. at "
                                   f"x={x[bad][:3]}, y={y[bad][:3]}: {got[bad][:3]} vs torch "
                                   f"{want[bad][:3]}")


def test_int64_division_follows_python_and_never_traps(device):
    a = np.array([7, -7, 7, -7, 0, -(2 ** 63), 5, -5], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, -1, 1, -1], dtype=np.int64)
    ta, tb = to_device(a, device), to_device(b, device)
    for name, op in [("remainder", lambda x, y: x % y), ("floor_divide", lambda x, y: x // y),
                     ("fmod", torch.fmod)]:
        want = op(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        got = getattr(pygpu, name)(ta, tb).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)
    np.testing.assert_array_equal((ta % tb).numpy(), (torch.from_numpy(a) % torch.from_numpy(b)).numpy())
    np.testing.assert_array_equal((ta // 3).numpy(), a // 3)
    zero = to_device(np.zeros(8, np.int64), device)
    assert (ta % zero).numpy().tolist() == [0] * 8  # a zero element gives 0, never a trap
    for name in ("remainder", "fmod", "floor_divide"):
        with pytest.raises(RuntimeError, match=f"{name}: ZeroDivisionError.*{ta.device.type}"):
            getattr(pygpu, name)(ta, 0)
    t = ta.clone()
    t //= 2
    t %= 3
    np.testing.assert_array_equal(t.numpy(), (torch.from_numpy(a) // 2) % 3)


def test_compositions_match_torch_with_gradients(device):
    """The functions composed of rows (pygpu/_tensor/math.py), values and gradients."""
    rng = np.random.default_rng(4)
    p = rng.uniform(0.01, 0.99, 6)
    x, y, z = rng.standard_normal(6), rng.standard_normal(6), np.abs(rng.standard_normal(6)) + 0.5
    cases = [
        ("logit eps", lambda m, a: m.logit(a, eps=0.1), [p]),
        ("logit method", lambda m, a: a.logit(0.2), [p]),
        ("lerp number", lambda m, a, b: m.lerp(a, b, 0.3), [x, y]),
        ("lerp tensor", lambda m, a, b, c: m.lerp(a, b, c), [x, y, p]),
        ("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), [x, y, z]),
        ("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c, value=-2), [x, y, z]),
        ("clamp_min", lambda m, a: m.clamp_min(a, 0.1), [x]),
        ("clamp_max", lambda m, a: a.clamp_max(0.1), [x]),
        ("float_power", lambda m, a: m.float_power(a, 2.5), [z]),
        ("polygamma 1", lambda m, a: m.polygamma(1, a), [z]),
        ("polygamma 3", lambda m, a: m.special.polygamma(3, a), [z]),
        ("multigammaln", lambda m, a: m.special.multigammaln(a + 2.0, 3), [z]),
        ("ndtri", lambda m, a: m.special.ndtri(a), [p]),
        ("log_ndtr", lambda m, a: m.special.log_ndtr(a), [x]),
        ("ldexp", lambda m, a: m.ldexp(a, m.tensor([1, 2, 3, 0, 5, 4], device=a.device)), [x]),
        ("div trunc", lambda m, a: m.div(a, 0.7, rounding_mode="trunc"), [x * 4]),
        ("div floor", lambda m, a: a.div(0.7, rounding_mode="floor"), [x * 4]),
        ("nan_to_num", lambda m, a: m.nan_to_num(a.log(), posinf=9.0), [x]),
        ("xlogy number", lambda m, a: m.xlogy(2.0, a), [z]),
        ("square", lambda m, a: m.square(a), [x]),
        ("sgn", lambda m, a: a.sgn() * a, [x]),
    ]
    for label, fn, arrs in cases:
        tt = [torch.tensor(a, requires_grad=True) for a in arrs]
        pt = [to_device(a, device).requires_grad_() for a in arrs]
        want = fn(torch, *tt)
        got = fn(pygpu, *pt)
        # (torch's float64 trigamma is accurate to 1e-9 only: polygamma's rows are 1e-16)
        rtol = 1e-8 if "gamma" in label else 1e-10
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol,
                                   atol=1e-12, equal_nan=True, err_msg=label)
        if not want.requires_grad or "div" in label:
            continue
        proj = rng.standard_normal(want.shape)
        (torch.nan_to_num(want) * torch.tensor(proj)).sum().backward()
        (pygpu.nan_to_num(got) * to_device(proj, device)).sum().backward()
        for k, (a, b) in enumerate(zip(pt, tt)):
            if b.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol * 10,
                                           atol=1e-12, err_msg=f"{label}: gradient of input {k}")


def test_in_place_compositions_write_self(device):
    rng = np.random.default_rng(5)
    x, y, z = (rng.standard_normal(5).astype(np.float32) for _ in range(3))
    z = np.abs(z) + 0.5
    for label, fn in [("addcmul_", lambda m, a, b, c: a.addcmul_(b, c, value=0.5)),
                      ("addcdiv_", lambda m, a, b, c: a.addcdiv_(b, c, value=2)),
                      ("lerp_", lambda m, a, b, c: a.lerp_(b, 0.25)),
                      ("clamp_min_", lambda m, a, b, c: a.clamp_min_(0.0)),
                      ("nan_to_num_", lambda m, a, b, c: a.div_(0.0).nan_to_num_(neginf=-5.0)),
                      ("sin_", lambda m, a, b, c: a.sin_()), ("atan2_", lambda m, a, b, c: a.atan2_(b))]:
        t = torch.tensor(x)
        p = to_device(x, device)
        want = fn(torch, t, torch.tensor(y), torch.tensor(z))
        got = fn(pygpu, p, to_device(y, device), to_device(z, device))
        assert got is p, label
        np.testing.assert_allclose(p.numpy(), want.numpy(), rtol=1e-6, atol=1e-6, err_msg=label)


def test_errors_name_the_op_the_dtype_and_the_device(device):
    b = to_device(np.array([True, False]), device)
    with pytest.raises(TypeError, match=rf"square: .*bool.*{b.device.type}"):
        pygpu.square(b)
    with pytest.raises(TypeError, match=rf"nextafter: .*float16 on {b.device.type}"):
        pygpu.nextafter(b.half(), b.half())
    with pytest.raises(ValueError, match="rounding_mode"):
        pygpu.div(b.float(), 2, rounding_mode="round")
    with pytest.raises(RuntimeError, match="negative n"):
        pygpu.polygamma(-1, b.float())


def test_autograd_sees_in_place_math_on_saved_inputs(device):
    """A rule that reads its input (sin reads x) keeps it from an in-place overwrite."""
    x = to_device(np.array([0.5, 1.0]), device).requires_grad_()
    y = x * 1.0
    z = y.sin()
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_more_pointwise_functions_match_torch(device):
    """angle, the conj family, mvlgamma, igamma/igammac, round(decimals), frexp: compositions
    of rows (pygpu/_tensor/math.py), values against torch."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal(9) * 3
    x[:4] = [0.0, -0.0, 8.0, -0.375]
    a = np.abs(rng.standard_normal(9)) * 3 + 0.2
    pos = np.abs(x) + 0.1
    cases = [
        ("angle", lambda m, u, v: m.angle(u)),
        ("conj", lambda m, u, v: u.conj() * 1.0),
        ("resolve_neg", lambda m, u, v: m.resolve_neg(u) * 1.0),
        ("mvlgamma", lambda m, u, v: m.mvlgamma(v + 2.0, 3)),
        ("igamma", lambda m, u, v: m.igamma(v, u.abs())),
        ("igammac", lambda m, u, v: m.igammac(v, u.abs() + 0.5)),
        ("round decimals", lambda m, u, v: m.round(u * 7.0, decimals=2)),
        ("round -1", lambda m, u, v: (u * 40.0).round(decimals=-1)),
        ("frexp mantissa", lambda m, u, v: m.frexp(u)[0]),
        ("frexp exponent", lambda m, u, v: m.frexp(u)[1]),
    ]
    for label, fn in cases:
        want = fn(torch, torch.tensor(x), torch.tensor(a))
        got = fn(pygpu, to_device(x, device), to_device(a, device))
        tol = 1e-9 if label.startswith("igamma") else 1e-12
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol, err_msg=label)
        # (frexp's exponent is int64: pygpu has no int32)
        want_dtype = "int64" if label == "frexp exponent" else str(want.dtype).replace("torch.", "")
        assert got.dtype.name == want_dtype, label
    with pytest.raises(ValueError, match="multigammaln"):
        pygpu.mvlgamma(to_device(pos, device), 0)
