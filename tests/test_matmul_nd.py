# test_matmul_nd.py - matmul at any rank with broadcast batch axes, and the products built on
# it (bmm, baddbmm, addbmm, tensordot, einsum), against torch: values and gradients on every
# device, the operand layouts that fold into one GEMM without a copy, and the hand-written
# attention of a GPT (issue 43, item 2).
import math

import numpy as np
import pytest
import torch

import pygpu
from pygpu._tensor.einsum import contraction_path

from _helpers import to_device, to_numpy

R = np.random.default_rng(43)


def _pair(shape, device, dtype=np.float64):
    a = R.standard_normal(shape).astype(dtype)
    return (to_device(a, device).requires_grad_(),
            torch.tensor(a, requires_grad=True))


def _close(ours, theirs, rtol=1e-10, atol=1e-12):
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=rtol, atol=atol)


def _backward_both(ours, theirs, device):
    w = R.standard_normal(tuple(theirs.shape))
    (ours * to_device(w, device)).sum().backward()
    (theirs * torch.tensor(w)).sum().backward()


SHAPES = [  # PyTorch's matmul cases: 1-D promoted, batch axes broadcast (right aligned)
    ((5,), (5,)), ((4, 5), (5,)), ((5,), (5, 3)), ((4, 5), (5, 3)),
    ((2, 3, 4, 5), (2, 3, 5, 6)),     # (B, H, T, D) @ (B, H, D, S)
    ((2, 1, 4, 5), (1, 3, 5, 6)),     # both broadcast
    ((4, 5), (2, 3, 5, 6)),           # a matrix against a batch
    ((2, 3, 4, 5), (5, 6)),           # a batch against a matrix: folded into one product
    ((2, 3, 4, 5), (5,)), ((5,), (2, 3, 5, 6)),
    ((3, 4, 5), (2, 1, 5, 6)),        # ranks differ
    ((2, 3, 4, 5), (1, 1, 5, 6)),     # size-1 batch axes on the right
    ((1, 2, 1, 3, 4, 5), (2, 1, 2, 1, 5, 6)),  # six dimensions
    ((0, 3, 4, 5), (1, 5, 6)), ((2, 3, 4, 0), (2, 3, 0, 6)), ((2, 3, 0, 5), (5, 6)),
]


@pytest.mark.parametrize("sa,sb", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
def test_matmul_any_rank_matches_torch(device, sa, sb):
    (a, ta), (b, tb) = _pair(sa, device), _pair(sb, device)
    out, ref = a @ b, ta @ tb
    _close(out, ref)
    _close(pygpu.matmul(a, b), ref)
    if ref.numel():
        _backward_both(out, ref, device)
        _close(a.grad, ta.grad)
        _close(b.grad, tb.grad)


def test_matmul_dtypes_at_rank_four(device):
    for dt, rtol in ((np.float32, 1e-5), (np.int64, 0)):
        a = (R.standard_normal((2, 3, 4, 5)) * 4).astype(dt)
        b = (R.standard_normal((3, 5, 2)) * 4).astype(dt)
        np.testing.assert_allclose(to_numpy(to_device(a, device) @ to_device(b, device)),
                                   (torch.tensor(a) @ torch.tensor(b)).numpy(), rtol=rtol,
                                   atol=rtol)


def _heads(x, B, T, H, D, lib):
    """q, k, v of shape (B, H, T, D) split from one (B, T, 3*H*D) projection, as nanoGPT's
    CausalSelfAttention makes them: views whose batch axes (B, H) share no single stride."""
    q, k, v = x.split(H * D, dim=2)
    return [t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v)]


def test_the_reproducer_q_at_k_transposed(device):
    # issue 43: `q @ k.transpose(-2, -1)` with q, k of shape (B, H, T, D), forward and backward
    (q, tq), (k, tk) = _pair((2, 3, 5, 4), device), _pair((2, 3, 5, 4), device)
    out, ref = q @ k.transpose(-2, -1), tq @ tk.transpose(-2, -1)
    _close(out, ref)
    _backward_both(out, ref, device)
    _close(q.grad, tq.grad)
    _close(k.grad, tk.grad)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-10), (np.float32, 2e-5)])
def test_gpt_hand_written_attention_matches_torch(device, dtype, rtol):
    B, T, H, D = 2, 6, 3, 4
    x = R.standard_normal((B, T, 3 * H * D)).astype(dtype)
    px, tx = to_device(x, device).requires_grad_(), torch.tensor(x, requires_grad=True)
    mask = np.tril(np.ones((T, T)))
    outs = []
    for lib, xx in ((pygpu, px), (torch, tx)):
        q, k, v = _heads(xx, B, T, H, D, lib)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        m = lib.tensor(mask.reshape(1, 1, T, T)) if lib is torch else \
            to_device(mask.reshape(1, 1, T, T), device)
        att = att.masked_fill(m == 0, float("-inf"))
        att = lib.nn.functional.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, H * D)
        outs.append(y)
    _close(outs[0], outs[1], rtol=rtol, atol=rtol)
    _backward_both(outs[0], outs[1], device)
    _close(px.grad, tx.grad, rtol=rtol * 10, atol=rtol * 10)


def _matmul_ops(fn):
    """The ops fn runs (profiler rows), and on cuda that each matmul is one cuBLAS call."""
    from pygpu import profiler
    with profiler.profile() as prof:
        fn()
    rows = {r.key: r.count for r in prof.key_averages()}
    kernels = {k: n for k, n in rows.items() if k.startswith(("cublas", "pg_"))}
    ops = {k: n for k, n in rows.items() if k not in kernels}
    blas = sum(n for k, n in kernels.items() if k.startswith("cublas"))
    assert blas in (0, ops.get("matmul", 0)), kernels  # 0: not cuda (no kernel rows)
    assert all("StridedBatched" in k for k in kernels if k.startswith("cublas")), kernels
    return ops


def test_batched_operands_need_no_copy_and_one_product(device):
    # contiguous and transposed (B, H, T, D) views fold their batch axes into one stride:
    # one matmul node, no copy; a batch against one matrix folds into the rows; one matrix
    # against a batch is read with batch stride 0
    q = to_device(R.standard_normal((2, 3, 5, 4)), device)
    k = to_device(R.standard_normal((2, 3, 5, 4)), device)
    w = to_device(R.standard_normal((4, 7)), device)
    m = to_device(R.standard_normal((6, 4)), device)
    assert _matmul_ops(lambda: q @ k.transpose(-2, -1)) == {"matmul": 1}
    assert _matmul_ops(lambda: q.transpose(-2, -1) @ k) == {"matmul": 1}
    assert _matmul_ops(lambda: q @ w) == {"matmul": 1}
    assert _matmul_ops(lambda: q @ w.reshape(1, 1, 4, 7)) == {"matmul": 1}
    assert _matmul_ops(lambda: m @ k.transpose(-2, -1)) == {"matmul": 1}
    # no single batch stride: heads split out of one projection, or a broadcast over one batch
    # axis but not the other, are copied once to the broadcast shape, as PyTorch's reshape does
    x = to_device(R.standard_normal((2, 5, 3 * 12)), device)
    hq, hk, _ = _heads(x, 2, 5, 3, 4, pygpu)
    assert _matmul_ops(lambda: hq @ hk.transpose(-2, -1)) == {"matmul": 1, "copy": 2}
    assert _matmul_ops(lambda: q[:, :1] @ k.transpose(-2, -1)) == {"matmul": 1, "copy": 1}


def test_matmul_errors_are_pytorchs():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 0"):
        pygpu.ones(2, 3, 4) @ pygpu.ones(3, 4, 5)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(6x4 and 5x2\)"):
        pygpu.ones(2, 3, 4) @ pygpu.ones(5, 2)
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        pygpu.ones(3) @ pygpu.ones(4)
    with pytest.raises(RuntimeError, match="at least 1D"):
        pygpu.ones(()) @ pygpu.ones(3)


# ---- bmm, baddbmm, addbmm and the in-place forms ----------------------------------------------

def test_bmm_family_matches_torch(device):
    (i, ti), (b1, tb1), (b2, tb2) = (_pair(s, device) for s in ((3, 5), (2, 3, 4), (2, 4, 5)))
    cases = [
        (pygpu.bmm(b1, b2), torch.bmm(tb1, tb2)),
        (pygpu.baddbmm(i, b1, b2, beta=0.5, alpha=2.0), torch.baddbmm(ti, tb1, tb2, beta=0.5,
                                                                      alpha=2.0)),
        (pygpu.addbmm(i, b1, b2, beta=0.5, alpha=2.0), torch.addbmm(ti, tb1, tb2, beta=0.5,
                                                                    alpha=2.0)),
        (i.addbmm(b1, b2), ti.addbmm(tb1, tb2)),
    ]
    for ours, ref in cases:
        _close(ours, ref)
        _backward_both(ours, ref, device)
    for ours, ref in ((i, ti), (b1, tb1), (b2, tb2)):
        _close(ours.grad, ref.grad)


def test_in_place_products_match_torch(device):
    arrays = [R.standard_normal(s) for s in ((3, 5), (3, 4), (4, 5), (2, 3, 4), (2, 4, 5))]
    x, y, z = (to_device(arrays[0], device) for _ in range(3))
    tx, ty, tz = (torch.tensor(arrays[0]) for _ in range(3))
    m1, m2, b1, b2 = (to_device(a, device) for a in arrays[1:])
    tm1, tm2, tb1, tb2 = (torch.tensor(a) for a in arrays[1:])
    assert x.addmm_(m1, m2, alpha=2.0) is x
    tx.addmm_(tm1, tm2, alpha=2.0)
    y.addbmm_(b1, b2, beta=0.5)
    ty.addbmm_(tb1, tb2, beta=0.5)
    w, tw = to_device(np.zeros((2, 3, 5)), device), torch.zeros(2, 3, 5, dtype=torch.float64)
    w.baddbmm_(b1, b2)
    tw.baddbmm_(tb1, tb2)
    for ours, ref in ((x, tx), (y, ty), (w, tw)):
        _close(ours, ref)
    del z, tz


BMM_ERRORS = [
    (lambda m: m.bmm(m.ones(3, 3), m.ones(3, 3, 3)), "batch1 must be a 3D tensor"),
    (lambda m: m.bmm(m.ones(2, 3, 4), m.ones(3, 4, 3)),
     r"Expected size for first two dimensions of batch2 tensor to be: \[2, 4\] but got: "
     r"\[3, 4\]"),
    (lambda m: m.baddbmm(m.ones(2, 4, 3), m.ones(2, 3, 4), m.ones(2, 4, 3)),
     r"The expanded size of the tensor \(3\) must match the existing size \(4\)"),
    (lambda m: m.tensordot(m.ones(2, 3), m.ones(4, 5), dims=1),
     "contracted dimensions need to match, but first has size 3 in dim -1 and second has "
     "size 4 in dim 0"),
    (lambda m: m.tensordot(m.ones(2, 3), m.ones(4, 5), dims=3),
     "tensordot expects dims < ndim_a or ndim_b"),
    (lambda m: m.tensordot(m.ones(2, 3), m.ones(3, 5), dims=([1], [0, 1])),
     "both dimension lists should have same length"),
]


@pytest.mark.parametrize("call,message", BMM_ERRORS)
def test_product_errors_are_pytorchs(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(torch)
    with pytest.raises(RuntimeError, match=message):
        call(pygpu)


# ---- tensordot and einsum ---------------------------------------------------------------------

TENSORDOT = [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 5), 1), ((2, 3), (4, 5), 0),
             ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((2, 1), (3, 5), 1),
             ((3, 4), (4, 2), (1, 0))]


@pytest.mark.parametrize("sa,sb,dims", TENSORDOT, ids=[str(c) for c in TENSORDOT])
def test_tensordot_matches_torch(device, sa, sb, dims):
    (a, ta), (b, tb) = _pair(sa, device), _pair(sb, device)
    tdims = ([dims[0]], [dims[1]]) if isinstance(dims, tuple) and isinstance(dims[0], int) \
        else dims
    out, ref = pygpu.tensordot(a, b, dims=dims), torch.tensordot(ta, tb, dims=tdims)
    _close(out, ref)
    _backward_both(out, ref, device)
    _close(a.grad, ta.grad)
    _close(b.grad, tb.grad)


EINSUM = [
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iij->ij", [(3, 3, 2)]), ("iji->j", [(3, 4, 3)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("ab,bc,cd,de->ae", [(2, 30), (30, 3), (3, 40), (40, 2)]),
    ("ij,jk,kl,lm,mn->in", [(3, 4), (4, 5), (5, 6), (6, 7), (7, 2)]),
    ("i,i", [(1,), (4,)]), ("ij,ij->ij", [(3, 1), (3, 4)]), ("bA", [(2, 3)]),
    ("...i->i", [(2, 3)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]), ("ij,jk->", [(3, 4), (4, 5)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]), ("ij,ij,ij->i", [(3, 4)] * 3),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ijk,ikl,ilm->ijm", [(2, 3, 4), (2, 4, 5), (2, 5, 6)]), ("a,b->", [(2,), (3,)]),
    ("ij->", [(0, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum_matches_torch(device, eq, shapes):
    pairs = [_pair(s, device) for s in shapes]
    out = pygpu.einsum(eq, *[p[0] for p in pairs])
    ref = torch.einsum(eq, *[p[1] for p in pairs])
    _close(out, ref)
    if ref.numel():
        _backward_both(out, ref, device)
        for ours, theirs in pairs:
            _close(ours.grad, theirs.grad)


def test_einsum_sublist_form(device):
    a, b = R.standard_normal((2, 3)), R.standard_normal((3, 4))
    A, B = to_device(a, device), to_device(b, device)
    np.testing.assert_allclose(to_numpy(pygpu.einsum(A, [0, 1], B, [1, 2], [0, 2])), a @ b)
    ref = torch.einsum(torch.tensor(a), [0, Ellipsis], torch.tensor(b), [Ellipsis, 2])
    np.testing.assert_allclose(to_numpy(pygpu.einsum(A, [0, Ellipsis], B, [Ellipsis, 2])),
                               ref.numpy())


def _flops(sets, output, sizes, path):
    sets, total = list(sets), 0
    for i, j in path:
        keep = set(output).union(*(s for n, s in enumerate(sets) if n not in (i, j)))
        both = sets[i] | sets[j]
        total += math.prod(sizes[c] for c in both)
        sets = [s for n, s in enumerate(sets) if n not in (i, j)] + [both & keep]
    return total


def test_contraction_order_is_cheapest_for_a_chain():
    # A (2x30) B (30x3) C (3x40) D (40x2): left to right costs 2*30*3 + 2*3*40 + 2*40*2;
    # the search must find an order no worse, and 'optimal' the cheapest of all orders
    sizes = {0: 2, 1: 30, 2: 3, 3: 40, 4: 2}
    sets, out = [{0, 1}, {1, 2}, {2, 3}, {3, 4}], [0, 4]
    import itertools

    def all_paths(n):
        if n == 1:
            yield []
            return
        for i, j in itertools.combinations(range(n), 2):
            for rest in all_paths(n - 1):
                yield [(i, j)] + rest
    best = min(_flops(sets, out, sizes, p) for p in all_paths(4))
    assert _flops(sets, out, sizes, contraction_path(sets, out, sizes, "optimal")) == best
    assert _flops(sets, out, sizes, contraction_path(sets, out, sizes, "greedy")) <= \
        _flops(sets, out, sizes, contraction_path(sets, out, sizes, enabled=False))


def test_opt_einsum_flags_are_pytorchs():
    from pygpu.backends import opt_einsum
    assert opt_einsum.enabled is True and opt_einsum.strategy == "auto"
    assert opt_einsum.is_available() == torch.backends.opt_einsum.is_available()
    with pytest.raises(ValueError, match="strategy"):
        opt_einsum.strategy = "fastest"
    a = [R.standard_normal(s) for s in ((3, 4), (4, 5), (5, 2))]
    with opt_einsum.flags(enabled=False):  # left to right
        assert opt_einsum.enabled is False
        np.testing.assert_allclose(to_numpy(pygpu.einsum("ij,jk,kl->il",
                                                         *[pygpu.tensor(x) for x in a])),
                                   a[0] @ a[1] @ a[2])
    assert opt_einsum.enabled is True
    for strategy in ("greedy", "optimal"):
        with opt_einsum.flags(strategy=strategy):
            np.testing.assert_allclose(to_numpy(pygpu.einsum("ij,jk,kl->il",
                                                             *[pygpu.tensor(x) for x in a])),
                                       a[0] @ a[1] @ a[2])


EINSUM_ERRORS = [
    (("ij,jk->ik", (2, 3)), "fewer operands were provided than specified in the equation"),
    (("ij->ik", (2, 3)), "output subscript k does not appear in the equation for any input"),
    (("ij->ii", (2, 3)), "output subscript i appears more than once in the output"),
    (("ijk->i", (2, 3)), r"the number of subscripts in the equation \(3\) does not match the "
                         r"number of dimensions \(2\) for operand 0 and no ellipsis was given"),
    (("ii->i", (2, 3)), "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    (("i1->i", (2, 3)), "invalid subscript given at index 1 in the equation string"),
    (("i.j->ij", (2, 3)), "found '.' for operand 0 that is not part of any ellipsis"),
    (("ij,jk->ik", (2, 3), (4, 5)),
     "subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
]


@pytest.mark.parametrize("args,message", EINSUM_ERRORS,
                         ids=[f"{a[0][0]}-{len(a[0]) - 1}_operands" for a in EINSUM_ERRORS])
def test_einsum_errors_are_pytorchs(args, message):
    eq, shapes = args[0], args[1:]
    with pytest.raises(RuntimeError, match=message):
        torch.einsum(eq, *[torch.ones(s) for s in shapes])
    with pytest.raises(RuntimeError, match=message):
        pygpu.einsum(eq, *[pygpu.ones(s) for s in shapes])
    with pytest.raises(TypeError):
        pygpu.einsum("ij,jk->ik", pygpu.ones(2, 3), "x")
