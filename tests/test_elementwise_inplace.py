# test_elementwise_inplace.py - the op table's in-place variants and newer elementwise ops
# beyond what the op table's in-place cases (tests/_op_cases.py) check: in-place ops write self (no new
# memory where the op computes in self's dtype: one node with dst == src0), through views
# and with aliased operands; PyTorch's dtype, shape and autograd refusals with its messages;
# and, where PyTorch is installed, values and dtypes against it.
import numpy as np
import pytest

import pygpu

from _helpers import to_device


def _fresh_allocations(device):
    s = pygpu.stats().per_device[str(pygpu.device(device))]
    return s["allocs"] + s["cache_hits"]


@pytest.mark.parametrize("name,call", [
    ("add_", lambda x, y: x.add_(y)), ("mul_", lambda x, y: x.mul_(2.0)), ("exp_", lambda x, y: x.exp_()),
    ("clamp_", lambda x, y: x.clamp_(-0.5, 0.5)), ("pow_", lambda x, y: x.pow_(2)),
    ("neg_", lambda x, y: x.neg_()),
])
def test_inplace_in_self_dtype_allocates_nothing(device, name, call):
    x = to_device(np.linspace(-1, 1, 64, dtype=np.float32), device)
    y = to_device(np.linspace(0, 1, 64, dtype=np.float32), device)
    pygpu.synchronize()
    before = _fresh_allocations(device)
    assert call(x, y) is x
    pygpu.synchronize()
    assert _fresh_allocations(device) == before, f"{name} allocated memory"


def test_inplace_writes_through_a_view_into_its_base(device):
    base = to_device(np.arange(12, dtype=np.float64).reshape(3, 4), device)
    col = base[:, 1]
    col.mul_(10).add_(1)
    ref = np.arange(12, dtype=np.float64).reshape(3, 4)
    ref[:, 1] = ref[:, 1] * 10 + 1
    np.testing.assert_array_equal(base.numpy(), ref)


def test_inplace_with_aliased_and_overlapping_operands(device):
    a = np.arange(10, dtype=np.float64)
    x = to_device(a, device)
    x.add_(x)  # the same layout: direct
    np.testing.assert_array_equal(x.numpy(), a + a)
    y = to_device(a, device)
    y[1:].add_(y[:-1])  # overlapping, shifted: computed aside first, as NumPy's a[1:] += a[:-1]
    ref = a.copy()
    ref[1:] += a[:-1].copy()
    np.testing.assert_array_equal(y.numpy(), ref)


def test_inplace_result_is_cast_to_self_dtype_as_pytorch(device):
    x = to_device(np.ones(3, dtype=np.float32), device)
    x.add_(to_device(np.full(3, 0.1), device))  # float64 other: computed in float64, cast back
    assert x.dtype == pygpu.float32
    np.testing.assert_array_equal(x.numpy(), np.float32(1 + 0.1))
    i = to_device(np.arange(3), device)
    i.mul_(to_device(np.array([True, False, True]), device))
    assert i.dtype == pygpu.int64 and i.tolist() == [0, 0, 2]


@pytest.mark.parametrize("call,exc,match", [
    (lambda i, f: i.add_(1.5), TypeError, "result type float32 can't be cast to the desired output type int64"),
    (lambda i, f: i.div_(2), TypeError, "can't be cast"),
    (lambda i, f: i.exp_(), TypeError, "exp_"),
    (lambda i, f: f.reshape(3, 1).add_(f), ValueError, r"output with shape \(3, 1\) doesn't match the broadcast shape \(3, 3\)"),
    (lambda i, f: f.bitwise_and(f), TypeError, "bitwise_and takes bool or integer tensors, got float32"),
    (lambda i, f: f & f, TypeError, "float32"),
    (lambda i, f: pygpu.where(i, f, f), TypeError, "condition to be a bool tensor, got int64"),
    (lambda i, f: f.clamp(), RuntimeError, "at least one of 'min' or 'max'"),
    (lambda i, f: pygpu.where(f > 0, f, "x"), TypeError, "where: expected a Tensor or a Python number"),
    (lambda i, f: f.mul(f, alpha=2), TypeError, "unexpected keyword argument 'alpha'"),
    (lambda i, f: f.floor().logical_not_(), TypeError, "logical_not expects a bool tensor"),
    (lambda i, f: (f > 0).neg(), TypeError, "bool"),
])
def test_bad_input_says_what_was_wrong(device, call, exc, match):
    i = to_device(np.arange(3), device)
    f = to_device(np.linspace(-1, 1, 3, dtype=np.float32), device)
    with pytest.raises(exc, match=match):
        call(i, f)


def test_inplace_on_a_leaf_that_requires_grad_is_refused_with_pytorchs_message(device):
    w = to_device(np.ones(3), device).requires_grad_()
    for call in (lambda: w.add_(1), lambda: w.exp_(), lambda: w.clamp_(0, 1), lambda: w.mul_(w)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation."):
            call()
    with pygpu.no_grad():  # allowed there, as in PyTorch (an optimizer's update)
        w.add_(1)
    np.testing.assert_array_equal(w.detach().numpy(), 2.0)


def test_inplace_inside_a_graph_is_recorded(device):
    # PyTorch records an in-place op on a non-leaf as its new grad_fn (more cases, and the
    # version counter, in tests/test_version_counter.py)
    w = to_device(np.ones(3), device).requires_grad_()
    h = w * 2.0
    h.add_(1)
    assert h.grad_fn is not None
    plain = to_device(np.full(3, 3.0), device)
    plain.mul_(w)  # plain now has w in its history
    (h.sum() + plain.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), 2.0 + 3.0)


def test_comparison_methods_and_operators_agree(device):
    a = to_device(np.array([1.0, 2.0, np.nan]), device)
    b = to_device(np.array([2.0, 2.0, np.nan]), device)
    for m, op in [("eq", "__eq__"), ("ne", "__ne__"), ("lt", "__lt__"), ("le", "__le__"),
                  ("gt", "__gt__"), ("ge", "__ge__")]:
        assert getattr(a, m)(b).tolist() == getattr(a, op)(b).tolist(), m
        assert getattr(a, m)(2.0).dtype == pygpu.bool_


# ---- PyTorch as the oracle -----------------------------------------------------------------

_TORCH_UNARY = ["sign", "floor", "ceil", "round", "trunc", "reciprocal", "rsqrt", "isnan",
                "isfinite", "abs", "neg", "exp", "sqrt"]


@pytest.mark.parametrize("name", _TORCH_UNARY)
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_unary_ops_match_pytorch(device, name, dtype):
    torch = pytest.importorskip("torch")
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 3.25, -7.0])
    tx = torch.tensor(x, dtype=getattr(torch, dtype))
    px = pygpu.tensor(tx.float().numpy(), device=device).astype(dtype)
    got = (getattr(pygpu, name)(px) if hasattr(pygpu, name) else getattr(px, name)())
    ref = getattr(torch, name)(tx)
    assert got.dtype.name == str(ref.dtype).replace("torch.", ""), name
    np.testing.assert_allclose(got.astype(pygpu.float64).numpy() if ref.is_floating_point()
                               else got.numpy(), ref.double().numpy() if ref.is_floating_point()
                               else ref.numpy(), rtol=1e-6 if dtype == "float64" else 1e-2,
                               equal_nan=True, err_msg=name)


@pytest.mark.parametrize("name", ["pow", "logical_and", "logical_or", "logical_xor", "maximum",
                                  "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "lt"])
def test_binary_ops_match_pytorch(device, name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    ints = rng.integers(-4, 5, size=(3, 4))
    exps = rng.integers(0, 4, size=(4,))
    bools = rng.random((3, 4)) < 0.5
    pairs = [(ints, exps), (bools, bools)] if name.startswith("bitwise") else \
        [(ints.astype(np.float64), exps.astype(np.float64)), (ints, exps)]
    for a, b in pairs:
        ref = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
        got = getattr(to_device(a, device), name)(to_device(b, device))
        assert got.dtype.name == str(ref.dtype).replace("torch.", ""), (name, a.dtype)
        np.testing.assert_array_equal(got.numpy(), ref.numpy(), err_msg=name)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_whole_number_powers_are_exact(device, dtype):
    """A power of whole numbers that is exact in double is exact on every device, bit for
    bit PyTorch's CPU (glibc's pow, correctly rounded): the CPU and CUDA kernels share
    csrc/core/pg_pow.h. The first H200 run gave (-3.0) ** 1.0 = -2.9999999999999996 from
    CUDA's pow; the emulated device's pow is an ulp off in the same way (tests/cuda_emu)."""
    torch = pytest.importorskip("torch")
    base = np.arange(-12, 13)
    a, b = np.meshgrid(base, np.arange(-3, 16) if dtype != "int64" else np.arange(0, 16))
    a, b = a.ravel(), b.ravel()
    a = np.concatenate([a, [2, -2, 3, 7, -1, 1, 0, 0, 2 ** 20, 10]])
    b = np.concatenate([b, [52, 53, 33, 18, 63, 64, 0, 5, 2, 15]])
    a, b = a.astype(dtype), b.astype(dtype)
    got = to_device(a, device).pow(to_device(b, device)).numpy()
    if dtype == "float32":
        # PyTorch's float32 pow (vectorized) is not correctly rounded where the power is not a
        # float (11 ** 7): the reference is its float64 pow (exact here, or one division
        # correctly rounded) rounded to float32
        ref = torch.pow(torch.tensor(a, dtype=torch.float64),
                        torch.tensor(b, dtype=torch.float64)).numpy().astype(np.float32)
    else:
        ref = torch.pow(torch.tensor(a), torch.tensor(b)).numpy()
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, ref, err_msg=dtype)


def test_where_clamp_and_inplace_match_pytorch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5))
    c = x > 0.2
    tx, tc = torch.tensor(x), torch.tensor(c)
    px, pc = to_device(x, device), to_device(c, device)
    np.testing.assert_array_equal(pygpu.where(pc, px, -px).numpy(), torch.where(tc, tx, -tx).numpy())
    np.testing.assert_array_equal(px.clamp(-0.3, 0.4).numpy(), tx.clamp(-0.3, 0.4).numpy())
    np.testing.assert_array_equal(px.clamp(min=0.1).numpy(), tx.clamp(min=0.1).numpy())
    lo, hi = rng.standard_normal(5), rng.standard_normal((4, 1)) + 1
    np.testing.assert_array_equal(px.clamp(to_device(lo, device), to_device(hi, device)).numpy(),
                                  tx.clamp(torch.tensor(lo), torch.tensor(hi)).numpy())
    y, ty = px.clone(), tx.clone()
    for op, arg in [("add_", 1.5), ("mul_", x[0]), ("sub_", 0.25), ("div_", 3.0), ("pow_", 2),
                    ("clamp_", (-1, 1)), ("abs_", None), ("sqrt_", None), ("neg_", None)]:
        args = () if arg is None else arg if isinstance(arg, tuple) else (arg,)
        targs = tuple(torch.tensor(v) if isinstance(v, np.ndarray) else v for v in args)
        pargs = tuple(to_device(v, device) if isinstance(v, np.ndarray) else v for v in args)
        getattr(y, op)(*pargs)
        getattr(ty, op)(*targs)
        np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-12, equal_nan=True, err_msg=op)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clamp_inplace_one_pass_matches_two_ops(device, dtype):
    """clamp_ with two number bounds is one CLAMP node on cpu and sim (the two-op path
    elsewhere): NaN stays NaN, lo > hi gives hi, int and float bounds, strided self (a
    transpose, a step slice), a NaN bound (the two-op path: all NaN, as PyTorch)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((6, 9)).astype(dtype)
    a[1, 2], a[4, 0] = np.nan, np.inf
    for lo, hi in [(-0.5, 0.5), (-1, 1), (0.7, -0.2), (0.1, 0.1), (-np.inf, 0.0)]:
        ref = np.minimum(np.maximum(a, dtype(lo)), dtype(hi))
        x = to_device(a.copy(), device)
        assert x.clamp_(lo, hi) is x
        np.testing.assert_array_equal(x.numpy(), ref, err_msg=f"{lo}, {hi}")
        t = to_device(a.copy(), device)
        t.t().clamp_(lo, hi)  # strided: written through the transpose into the base
        np.testing.assert_array_equal(t.numpy(), ref)
        s = to_device(a.copy(), device)
        s[:, ::2].clamp_(lo, hi)
        part = a.copy()
        part[:, ::2] = ref[:, ::2]
        np.testing.assert_array_equal(s.numpy(), part)
    x = to_device(a.copy(), device)
    x.clamp_(float("nan"), 1.0)
    assert np.isnan(x.numpy()).all()
    torch = pytest.importorskip("torch")
    tx = torch.tensor(a.copy()).clamp_(0.7, -0.2)
    np.testing.assert_array_equal(to_device(a.copy(), device).clamp_(0.7, -0.2).numpy(),
                                  tx.numpy())
