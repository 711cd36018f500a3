# test_vmap.py - torch.vmap / torch.func.vmap against torch on every device: in_dims and
# out_dims (ints, None, nested), keyword arguments, pytrees in and out, chunk_size, nested
# vmap, randomness, gradients through it, the one-call ops (elementwise, matmul, sum/mean:
# counted as one op) and torch's errors (pygpu/func/_vmap.py).
import numpy as np
import pytest
import torch

import pygpu


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, pygpu.Tensor) else t.detach().numpy()


def _close(p, t, tol=1e-12):
    if isinstance(t, (tuple, list)):
        assert type(p) is type(t) and len(p) == len(t)
        for a, b in zip(p, t):
            _close(a, b, tol)
    elif isinstance(t, dict):
        assert p.keys() == t.keys()
        for k in t:
            _close(p[k], t[k], tol)
    elif isinstance(t, torch.Tensor):
        assert tuple(p.shape) == tuple(t.shape)
        np.testing.assert_allclose(_np(p), _np(t), rtol=tol, atol=tol)
    else:
        assert p == t


def _inputs(device, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    return ([pygpu.tensor(a, device=device) for a in arrays], [torch.tensor(a) for a in arrays])


# name: (function of the module m, in_dims, out_dims, chunk_size, input shapes)
CASES = {
    "lambda_sum": (lambda m: lambda x: x.sum(), 0, 0, None, [(4, 3)]),
    "dot_in_dims_1": (lambda m: m.dot, 1, 0, None, [(5, 4), (5, 4)]),
    "unbatched_arg": (lambda m: lambda x, y: m.mv(y, x), (0, None), 0, None, [(4, 3), (2, 3)]),
    "negative_dims": (lambda m: lambda x: x.softmax(0), -1, -1, None, [(3, 5)]),
    "out_dims_1": (lambda m: lambda x: x * 2, 0, 1, None, [(4, 3, 2)]),
    "tuple_out": (lambda m: lambda x, y: (x + y, x * y), (0, 1), (0, 1), None, [(3, 2), (2, 3)]),
    "dict_in_out": (lambda m: lambda d: {"s": d["a"] @ d["b"], "n": d["a"].norm()},
                    ({"a": 0, "b": None},), 0, None, [(4, 2, 3), (3, 5)]),
    "chunked": (lambda m: lambda x: x.cumsum(0), 0, 0, 3, [(7, 4)]),
    "nested": (lambda m: m.vmap(lambda r: r.max(), in_dims=0), 1, 0, None, [(3, 4)]),
    "nested_outer_inner": (lambda m: lambda x: m.vmap(lambda a, b: a * b, in_dims=(0, None))(
        x, x.sum()), 0, 0, None, [(2, 3)]),
    # the one-call ops: elementwise, matmul, reductions over the other dims
    "mul_broadcast": (lambda m: m.mul, (0, None), 0, None, [(4, 3), (2, 1, 3)]),
    "exp": (lambda m: m.exp, 2, 0, None, [(3, 2, 4)]),
    "add_chunked": (lambda m: m.add, (1, 0), 1, 2, [(3, 5), (5, 3)]),
    "matmul": (lambda m: m.matmul, (0, None), 0, None, [(4, 2, 3), (6, 3, 5)]),
    "bmm": (lambda m: m.bmm, (0, 0), 0, None, [(3, 2, 4, 5), (3, 2, 5, 1)]),
    "matmul_vector_loops": (lambda m: m.matmul, (0, None), 0, None, [(4, 3), (3,)]),
    "sum_all": (lambda m: m.sum, 1, 0, None, [(3, 4, 2)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_vmap_matches_torch(device, case):
    make, in_dims, out_dims, chunk, shapes = CASES[case]
    ps, ts = _inputs(device, *shapes)
    if case == "dict_in_out":
        ps, ts = [{"a": ps[0], "b": ps[1]}], [{"a": ts[0], "b": ts[1]}]
    got = pygpu.vmap(make(pygpu), in_dims, out_dims, chunk_size=chunk)(*ps)
    try:
        want = torch.vmap(make(torch), in_dims, out_dims, chunk_size=chunk)(*ts)
    except NotImplementedError as e:
        # torch's own nested vmap refuses `r.max()` ("Cannot access storage of
        # BatchedTensorImpl") in a process where test_shell_dtypes.py's ops-run cases ran
        # before it (all twenty shell dtypes' torch calls together; no single one does it):
        # state left in torch, not pygpu's. The oracle is then torch in a fresh process.
        if "BatchedTensorImpl" not in str(e) or not all(isinstance(t, torch.Tensor) for t in ts):
            raise
        want = _torch_vmap_in_fresh_process(case, ts)
    _close(got, want)


def _torch_vmap_in_fresh_process(case, ts):
    import os
    import pickle
    import subprocess
    import sys
    code = ("import pickle, sys, torch; sys.path.insert(0, sys.argv[1]); import test_vmap as T; "
            "make, i, o, c, _ = T.CASES[sys.argv[2]]; "
            "xs = [torch.from_numpy(a) for a in pickle.load(sys.stdin.buffer)]; "
            "r = torch.vmap(make(torch), i, o, chunk_size=c)(*xs); "
            "pickle.dump([t.numpy() for t in r] if isinstance(r, tuple) else r.numpy(), "
            "sys.stdout.buffer)")
    out = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__), case],
                         input=pickle.dumps([t.detach().numpy() for t in ts]),
                         capture_output=True, check=True).stdout
    r = pickle.loads(out)
    return tuple(torch.from_numpy(a) for a in r) if isinstance(r, list) else torch.from_numpy(r)


def test_reductions_with_dims_and_keywords(device):
    (p,), (t,) = _inputs(device, (4, 3, 5))
    for fn, kw in (("sum", {"dim": 1}), ("mean", {"dim": (0, -1), "keepdim": True}),
                   ("sum", {"dim": -2})):
        _close(pygpu.vmap(getattr(pygpu, fn))(p, **kw), torch.vmap(getattr(torch, fn))(t, **kw))
    _close(pygpu.vmap(pygpu.sum, in_dims=(0, None))(p, 0),
           torch.vmap(torch.sum, in_dims=(0, None))(t, 0))


def test_keyword_arguments_are_not_mapped(device):
    (x, s), (tx, ts) = _inputs(device, (2, 5), (2, 5))

    def fn(m):
        return lambda a, scale=4.0: a * scale
    _close(pygpu.vmap(fn(pygpu))(x, scale=s), torch.vmap(fn(torch))(tx, scale=ts))


def test_the_batched_ops_run_as_one_call(device):
    """vmap(pygpu.mul) is one mul, vmap(pygpu.matmul) one matmul: the op count of the call
    is the same as the op's on the whole batch (the loop would make B of them and a stack)."""
    (x, y), _ = _inputs(device, (64, 8, 8), (64, 8, 8))
    for fn in (pygpu.mul, pygpu.matmul):
        pygpu.reset_stats()
        fn(x, y)
        direct = pygpu.stats().ops
        pygpu.reset_stats()
        pygpu.vmap(fn)(x, y)
        assert pygpu.stats().ops <= direct + 2  # the batch-first moves are views at most
    pygpu.reset_stats()
    pygpu.vmap(lambda a, b: a * b)(x, y)
    assert pygpu.stats().ops > 64  # a lambda: one mul per sample, then the stack


def test_gradients_flow_through_vmap(device):
    (p, w), (t, tw) = _inputs(device, (5, 3), (3, 4))
    for a in (p, w, t, tw):
        a.requires_grad_()

    def fn(m):
        return lambda x, w: (x @ w).tanh().sum()
    (pygpu.vmap(fn(pygpu), in_dims=(0, None))(p, w) ** 2).sum().backward()
    (torch.vmap(fn(torch), in_dims=(0, None))(t, tw) ** 2).sum().backward()
    _close(p.grad, t.grad)
    _close(w.grad, tw.grad)


def test_randomness_error_same_different(device):
    x = pygpu.zeros(4, 3, device=device)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error"):
        pygpu.vmap(lambda a: a + pygpu.rand(3, device=device))(x)
    same = pygpu.vmap(lambda a: a + pygpu.rand(3, device=device), randomness="same")(x)
    assert np.all(_np(same) == _np(same)[0])
    diff = pygpu.vmap(lambda a: a + pygpu.rand(3, device=device), randomness="different")(x)
    assert len({tuple(r) for r in _np(diff)}) == 4
    drop = pygpu.vmap(lambda a: pygpu.nn.functional.dropout(a, 0.5), randomness="same")(
        pygpu.ones(6, 50, device=device))
    assert np.all(_np(drop) == _np(drop)[0])  # one mask for every sample, as torch's "same"


ERRORS = {  # torch's ValueError / RuntimeError, word for word where the message is torch's
    "randomness": (lambda m: m.vmap(lambda x: x, randomness="x")(m.ones(2)), RuntimeError),
    "chunk_size": (lambda m: m.vmap(lambda x: x, chunk_size=0)(m.ones(2)), ValueError),
    "in_dims_list": (lambda m: m.vmap(lambda x: x, in_dims=[0])(m.ones(2)), ValueError),
    "in_dims_float": (lambda m: m.vmap(lambda x: x, in_dims=(0.5,))(m.ones(2)), ValueError),
    "in_dim_range": (lambda m: m.vmap(lambda x: x, in_dims=2)(m.ones(2)), ValueError),
    "non_tensor": (lambda m: m.vmap(lambda x: x)(3), ValueError),
    "structure": (lambda m: m.vmap(lambda x: x, in_dims=(0, 0))(m.ones(2)), ValueError),
    "sizes": (lambda m: m.vmap(lambda x, y: x)(m.ones(2), m.ones(3)), ValueError),
    "no_inputs": (lambda m: m.vmap(lambda: 1)(), ValueError),
    "nothing_mapped": (lambda m: m.vmap(lambda x: x, in_dims=(None,))(m.ones(2)), ValueError),
    "returns_int": (lambda m: m.vmap(lambda x: 3)(m.ones(2)), ValueError),
    "out_dims_kind": (lambda m: m.vmap(lambda x: x, out_dims="a")(m.ones(2)), ValueError),
    "out_dims_structure": (lambda m: m.vmap(lambda x: x, out_dims=(0, 1))(m.ones(2)),
                           ValueError),
    "batched_out_dim_none": (lambda m: m.vmap(lambda x: x, out_dims=None)(m.arange(2.0)),
                             ValueError),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_vmap_errors_are_torchs(case):
    fn, kind = ERRORS[case]
    with pytest.raises(kind) as want:
        fn(torch)
    with pytest.raises(kind) as got:
        fn(pygpu)
    first = str(want.value).split(" has structure")[0]  # torch prints its TreeSpec after
    assert str(got.value).startswith(first)


def test_out_dims_none_keeps_an_unbatched_output_and_func_is_torch_func():
    assert pygpu.func.vmap is pygpu.vmap
    got = pygpu.vmap(lambda x: (x, pygpu.ones(3)), out_dims=(0, None))(pygpu.ones(2))
    want = torch.vmap(lambda x: (x, torch.ones(3)), out_dims=(0, None))(torch.ones(2))
    _close(got, want)
