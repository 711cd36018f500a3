# test_bare_uint_ops.py - every op pygpu runs on uint16, uint32 and uint64 (issue 43 item 1),
# as a table: each row is the op written once for pygpu and torch, and once for NumPy.
#   - Where torch 2.13's CPU computes the op on the dtype, pygpu gives its values and dtype.
#   - Where torch raises NotImplementedError ("lt_cpu" not implemented for 'UInt64': its
#     missing kernel, not a refusal of the question), pygpu computes, as a deliberate
#     superset (docs/tensors.md), and gives NumPy's answer on the same unsigned dtype (the
#     result dtypes torch gives its other integers: int64 indices, bool comparisons). The
#     set of those ops is SUPERSET below, checked against torch, so the docs' list cannot
#     drift from it.
# uint64's values include 2**63 and above, which order above 2**63 - 1 (its order key,
# csrc/core/pg_ops.h pg_op_order_key), and Python ints up to 2**64 - 1 as scalars.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

UINTS = ("uint16", "uint32", "uint64")


def _values(name):
    """(a, b): two vectors of the dtype over its whole range, b with no zero (a divisor)."""
    top = np.iinfo(name).max
    half = (top >> 1) + 1  # 2**63 for uint64: the first value int64's bits order wrongly
    a = np.array([1, half + 5, top, 7, half - 1, 0, half, 300, top - 1, 7], dtype=name)
    b = np.array([3, half + 1, 5, top - 1, half, 9, half, 2, top, 7], dtype=name)
    return a, b


def _top(x):
    """The largest value of x's unsigned dtype (pygpu's, torch's or NumPy's), a Python int."""
    return int(np.iinfo(str(x.dtype).split(".")[-1]).max)


def _half(x):
    """2**(bits - 1) for x's dtype: 2**63 for uint64, beyond int64 as a Python int."""
    return (_top(x) >> 1) + 1


def _lower_median(a):
    return np.sort(a)[(a.size - 1) // 2]


def _np_unique_counts(a):
    return np.unique(a, return_counts=True)


# (name, f(x, y) on pygpu or torch tensors, g(a, b) on NumPy arrays): the result may be a
# tensor, a tuple of tensors (values, indices) or a Python number
OPS = [
    ("lt", lambda x, y: x < y, lambda a, b: a < b),
    ("le", lambda x, y: x <= y, lambda a, b: a <= b),
    ("gt", lambda x, y: x > y, lambda a, b: a > b),
    ("ge", lambda x, y: x >= y, lambda a, b: a >= b),
    ("eq", lambda x, y: x == y, lambda a, b: a == b),
    ("ne", lambda x, y: x != y, lambda a, b: a != b),
    ("max", lambda x, y: x.max(), lambda a, b: a.max()),
    ("min", lambda x, y: x.min(), lambda a, b: a.min()),
    ("amax_dim", lambda x, y: x.view(2, 5).amax(1), lambda a, b: a.reshape(2, 5).max(1)),
    ("amin_dim", lambda x, y: x.view(2, 5).amin(0), lambda a, b: a.reshape(2, 5).min(0)),
    ("argmax", lambda x, y: x.argmax(), lambda a, b: np.argmax(a)),
    ("argmin", lambda x, y: x.argmin(), lambda a, b: np.argmin(a)),
    ("max_dim", lambda x, y: tuple(x.view(2, 5).max(1)),
     lambda a, b: (a.reshape(2, 5).max(1), a.reshape(2, 5).argmax(1))),
    ("aminmax", lambda x, y: tuple(x.aminmax()), lambda a, b: (a.min(), a.max())),
    ("maximum", lambda x, y: torch_or_pygpu(x).maximum(x, y), np.maximum),
    ("minimum", lambda x, y: torch_or_pygpu(x).minimum(x, y), np.minimum),
    ("sort", lambda x, y: tuple(x.sort(stable=True)),
     lambda a, b: (np.sort(a, kind="stable"), np.argsort(a, kind="stable"))),
    ("sort_descending", lambda x, y: x.sort(descending=True, stable=True).values,
     lambda a, b: np.sort(a)[::-1]),
    ("argsort", lambda x, y: x.argsort(stable=True), lambda a, b: np.argsort(a, kind="stable")),
    ("msort", lambda x, y: torch_or_pygpu(x).msort(x), lambda a, b: np.sort(a)),
    ("topk", lambda x, y: x.topk(3).values, lambda a, b: np.sort(a)[::-1][:3]),
    ("topk_smallest", lambda x, y: x.topk(3, largest=False).values, lambda a, b: np.sort(a)[:3]),
    ("unique", lambda x, y: tuple(torch_or_pygpu(x).unique(x, return_counts=True)),
     lambda a, b: _np_unique_counts(a)),
    ("searchsorted", lambda x, y: torch_or_pygpu(x).searchsorted(x.sort().values, y),
     lambda a, b: np.searchsorted(np.sort(a), b)),
    ("kthvalue", lambda x, y: x.kthvalue(4).values, lambda a, b: np.sort(a)[3]),
    ("median", lambda x, y: x.median(), lambda a, b: _lower_median(a)),
    ("cummax", lambda x, y: x.cummax(0).values, lambda a, b: np.maximum.accumulate(a)),
    ("cummin", lambda x, y: x.cummin(0).values, lambda a, b: np.minimum.accumulate(a)),
    ("clamp", lambda x, y: x.clamp(y, None), lambda a, b: np.maximum(a, b)),
    ("where", lambda x, y: torch_or_pygpu(x).where(x < y, x, y), lambda a, b: np.where(a < b, a, b)),
    ("add", lambda x, y: x + y, lambda a, b: a + b),
    ("sub", lambda x, y: x - y, lambda a, b: a - b),
    ("mul", lambda x, y: x * y, lambda a, b: a * b),
    ("floor_divide", lambda x, y: x // y, lambda a, b: a // b),
    ("remainder", lambda x, y: x % y, lambda a, b: a % b),
    ("fmod", lambda x, y: x.fmod(y), np.fmod),
    ("div_trunc", lambda x, y: x.div(y, rounding_mode="trunc"), lambda a, b: a // b),
    ("true_divide", lambda x, y: x / y, lambda a, b: (a / b).astype(np.float32)),
    ("rshift", lambda x, y: x >> 3, lambda a, b: a >> 3),
    ("lshift", lambda x, y: x << 3, lambda a, b: a << 3),
    ("and", lambda x, y: x & y, lambda a, b: a & b),
    ("or", lambda x, y: x | y, lambda a, b: a | b),
    ("xor", lambda x, y: x ^ y, lambda a, b: a ^ b),
    ("bitwise_not", lambda x, y: ~x, lambda a, b: ~a),
    ("neg", lambda x, y: -x, lambda a, b: (0 - a).astype(a.dtype)),
    ("abs", lambda x, y: x.abs(), lambda a, b: a),
    ("sign", lambda x, y: x.sign(), lambda a, b: (a != 0).astype(a.dtype)),
    ("square", lambda x, y: x * x, lambda a, b: a * a),
    ("sum", lambda x, y: x.sum(), lambda a, b: a.astype(np.int64).sum()),
    ("cumsum", lambda x, y: x.cumsum(0), lambda a, b: np.cumsum(a.astype(np.int64))),
    ("count_nonzero", lambda x, y: x.count_nonzero(), lambda a, b: np.count_nonzero(a)),
    ("nonzero", lambda x, y: x.nonzero(), lambda a, b: np.argwhere(a)),
    ("any", lambda x, y: x.any(), lambda a, b: a.any()),
    ("mm", lambda x, y: x[:4].view(2, 2) @ y[:4].view(2, 2),
     lambda a, b: a[:4].reshape(2, 2) @ b[:4].reshape(2, 2)),
    # Python ints up to 2**64 - 1 beside the tensor (uint64's top half: its bits, its value)
    ("eq_top_scalar", lambda x, y: x == _top(x), lambda a, b: a == _top(a)),
    ("mul_big_scalar", lambda x, y: x * _half(x), lambda a, b: a * np.array(_half(a), a.dtype)),
    ("div_big_scalar", lambda x, y: x / _half(x),
     lambda a, b: (a / float(_half(a))).astype(np.float32)),
    ("lt_big_scalar", lambda x, y: x < _half(x), lambda a, b: a < _half(a)),
    ("where_big_scalar", lambda x, y: torch_or_pygpu(x).where(x == y, x, _top(x)),
     lambda a, b: np.where(a == b, a, np.array(_top(a), a.dtype))),
]

# the ops torch 2.13's CPU refuses (NotImplementedError) on all three dtypes and pygpu
# computes: docs/tensors.md lists them as pygpu's superset
SUPERSET = {"lt", "le", "gt", "ge", "max", "min", "amax_dim", "amin_dim", "argmax", "argmin",
            "max_dim", "aminmax", "maximum", "minimum", "topk", "topk_smallest", "searchsorted",
            "kthvalue", "median", "cummax", "cummin", "clamp", "where", "add", "sub",
            "floor_divide", "remainder", "fmod", "div_trunc", "rshift", "lshift",
            "bitwise_not", "neg", "abs", "sign", "count_nonzero", "nonzero", "mm",
            "lt_big_scalar"}


def torch_or_pygpu(x):
    return pygpu if isinstance(x, pygpu.Tensor) else torch


def _arrays(r):
    """A result as a list of NumPy arrays (a tuple's parts in order)."""
    parts = r if isinstance(r, tuple) else (r,)
    out = []
    for p in parts:
        if isinstance(p, pygpu.Tensor):
            p = p.cpu().numpy()
        elif isinstance(p, torch.Tensor):
            p = p.numpy()
        out.append(np.asarray(p))
    return out


def _same(got, want, what):
    g, w = _arrays(got), _arrays(want)
    assert len(g) == len(w), what
    for x, y in zip(g, w):
        assert x.shape == y.shape, (what, x, y)
        if y.dtype.kind == "f":
            np.testing.assert_allclose(x, y, rtol=1e-6, err_msg=what)
        else:  # exact: the unsigned values compared as Python ints
            assert x.astype(object).tolist() == y.astype(object).tolist(), (what, x, y)


@pytest.mark.parametrize("name", UINTS)
@pytest.mark.parametrize("op", [row[0] for row in OPS])
def test_uint_op_as_torch_or_numpy(device, name, op):
    _, f, g = next(row for row in OPS if row[0] == op)
    a, b = _values(name)
    pa, pb = pygpu.tensor(a, device=device), pygpu.tensor(b, device=device)
    ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    try:
        want = f(ta, tb)
    except NotImplementedError as e:
        assert op in SUPERSET, f"torch refuses {op} on {name} ({e}): list it in SUPERSET"
        assert "not implemented for" in str(e)
        got = f(pa, pb)
        _same(got, g(a, b), op)
        return
    assert op not in SUPERSET, f"torch computes {op} on {name} now: drop it from SUPERSET"
    got = f(pa, pb)
    for x, y in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        if isinstance(y, torch.Tensor):
            assert x.dtype.name == str(y.dtype).replace("torch.", ""), (op, x.dtype, y.dtype)
    _same(got, want, op)
    _same(got, g(a, b), op + " (NumPy)")  # the oracle agrees with torch where both answer


def test_uint64_orders_its_top_half_above_int64s_range(device):
    """The wrong answer this fixes: 2**63 and above ordered as int64's negative numbers."""
    x = pygpu.tensor([2**63 + 5, 1, 2**64 - 1, 2**63 - 1], dtype=pygpu.uint64, device=device)
    assert x.max().item() == 2**64 - 1 and x.min().item() == 1
    assert x.argmax().item() == 2 and x.argmin().item() == 1
    assert x.sort().values.tolist() == [1, 2**63 - 1, 2**63 + 5, 2**64 - 1]
    assert x.topk(2).values.tolist() == [2**64 - 1, 2**63 + 5]
    assert x.view(2, 2).max(0).values.tolist() == [2**64 - 1, 2**63 - 1]
