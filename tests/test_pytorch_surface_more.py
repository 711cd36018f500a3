# test_pytorch_surface_more.py - the rest of torch's and Tensor's public names (issue 43,
# item 7), against torch: order statistics and NaN-aware reductions (_tensor/stats.py),
# comparisons (_tensor/compare.py), stacking/splitting/broadcasting and the *_copy views
# (_tensor/stack.py), flat and per-axis indexing (_tensor/gather.py), and the other
# spellings: in-place function forms, nn.functional's ops at torch's level with ATen's
# argument order, windows, small process-wide names, other backends' Tensor flags
# (_tensor/spellings.py). Values, index choices and gradients are compared on cpu and sim.
import warnings

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return x


def _same(a, b, rtol=1e-7):
    a, b = _np(a), _np(b)
    if isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, rtol)
        return
    if isinstance(b, np.ndarray):
        assert tuple(np.shape(a)) == b.shape, (np.shape(a), b.shape)
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), b.astype(np.float64),
                                   rtol=rtol, atol=1e-12, equal_nan=True)
    else:
        assert a == b


def _run(fn, device, arrays, grads=False, rtol=1e-7):
    """fn(module, *tensors) on both libraries from the same arrays; compare results (and
    the gradients of their sum for float arrays, when grads)."""
    ours = [pygpu.tensor(a, device=device) for a in arrays]
    theirs = [torch.tensor(a) for a in arrays]
    if grads:
        ours = [t.requires_grad_() for t in ours]
        theirs = [t.requires_grad_() for t in theirs]
    o, t = fn(pygpu, *ours), fn(torch, *theirs)
    _same(o, t, rtol)
    if grads:
        first = lambda r: r[0] if isinstance(r, tuple) else r  # noqa: E731
        first(o).sum().backward()
        first(t).sum().backward()
        for a, b in zip(ours, theirs):
            _same(a.grad, b.grad, rtol)


R = np.random.default_rng(0)
DISTINCT = R.permutation(60).reshape(3, 4, 5).astype(np.float64) - 30
WITH_NAN = DISTINCT.copy()
WITH_NAN[0, 1, 2] = WITH_NAN[2, 3, 0] = np.nan
INTS = R.integers(0, 4, (4, 7))

STATS = [
    ("median", lambda m, x: m.median(x), [DISTINCT], True),
    ("median(dim)", lambda m, x: m.median(x, 1), [DISTINCT], True),
    ("median(dim, keepdim)", lambda m, x: x.median(-1, keepdim=True), [DISTINCT], True),
    ("median with NaN", lambda m, x: m.median(x, 2), [WITH_NAN], False),
    ("nanmedian", lambda m, x: (m.nanmedian(x), m.nanmedian(x, 1)), [WITH_NAN], False),
    ("kthvalue", lambda m, x: m.kthvalue(x, 3, 2), [DISTINCT], True),
    ("mode", lambda m, x: m.mode(x, 1), [INTS], False),
    ("mode(dim 0, keepdim)", lambda m, x: x.mode(0, keepdim=True), [INTS], False),
    ("msort", lambda m, x: m.msort(x), [DISTINCT], True),
    ("quantile", lambda m, x: m.quantile(x, 0.3), [DISTINCT], True),
    ("quantile(q tensor, dim, keepdim)",
     lambda m, x: m.quantile(x, m.tensor([0.1, 0.5, 0.9], dtype=x.dtype), dim=1, keepdim=True),
     [DISTINCT], True),
]
for _interp in ("lower", "higher", "midpoint", "nearest"):
    STATS.append((f"quantile({_interp})", lambda m, x, i=_interp: m.quantile(
        x, m.tensor([0.25, 0.4, 0.75], dtype=x.dtype), dim=2, interpolation=i),
        [DISTINCT], False))
STATS += [
    ("quantile with NaN", lambda m, x: m.quantile(x, 0.5, dim=2), [WITH_NAN], False),
    ("nanquantile", lambda m, x: m.nanquantile(x, 0.3, dim=2), [WITH_NAN], False),
    ("nansum, nanmean", lambda m, x: (m.nansum(x), m.nanmean(x, 1), x.nansum((0, 2))),
     [WITH_NAN], False),
    ("std_mean, var_mean", lambda m, x: (m.std_mean(x, 1), m.var_mean(x, correction=0),
                                         m.std_mean(x, 2, keepdim=True)), [DISTINCT], False),
    ("aminmax", lambda m, x: (m.aminmax(x), m.aminmax(x, dim=1, keepdim=True)), [DISTINCT],
     False),
    ("count_nonzero", lambda m, x: (m.count_nonzero(x), m.count_nonzero(x, 1),
                                    x.count_nonzero((0, 1))), [INTS], False),
    ("cummax", lambda m, x: m.cummax(x, 1), [DISTINCT], True),
    ("cummin", lambda m, x: m.cummin(x, -1), [DISTINCT], True),
    ("cummax with ties and NaN", lambda m, x: m.cummax(x, 0),
     [np.array([1.0, 3.0, 3.0, np.nan, 2.0, np.nan, 5.0])], False),
    ("cummin of ints", lambda m, x: m.cummin(x, 1), [INTS], False),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, 2), [DISTINCT * 3], True),
]


@pytest.mark.parametrize("name,fn,arrays,grads", STATS, ids=[s[0] for s in STATS])
def test_stats_match_torch(device, name, fn, arrays, grads):
    _run(fn, device, arrays, grads=grads, rtol=1e-9)


COMPARE = [
    ("isclose", lambda m, a, b: m.isclose(a, b),
     [np.array([1.0, np.inf, np.nan, 1e-9, -np.inf, 2.0]),
      np.array([1.0 + 1e-6, np.inf, np.nan, 0.0, np.inf, 2.1])]),
    ("isclose(equal_nan, rtol)", lambda m, a, b: m.isclose(a, b, rtol=0.1, equal_nan=True),
     [np.array([1.0, np.nan, 2.0]), np.array([1.05, np.nan, 2.5])]),
    ("isclose ints", lambda m, a, b: m.isclose(a, b), [np.array([1, 2]), np.array([1, 3])]),
    ("allclose, equal", lambda m, a, b: (m.allclose(a, b), m.equal(a, b), a.equal(a),
                                         m.allclose(a, a + 1e-9)),
     [np.array([1.0, 2.0]), np.array([1.0, 2.00001])]),
    ("isin", lambda m, a, b: (m.isin(a, b), m.isin(a, b, invert=True)),
     [np.array([[1, 2], [3, 4]]), np.array([2, 4, 6])]),
    ("isreal", lambda m, a, b: m.isreal(a), [np.array([1.0, 2.0]), np.array([0.0])]),
]


@pytest.mark.parametrize("name,fn,arrays", COMPARE, ids=[c[0] for c in COMPARE])
def test_comparisons_match_torch(device, name, fn, arrays):
    _run(fn, device, arrays)


A = np.arange(24.0).reshape(2, 3, 4)
STACK = [
    ("atleast", lambda m, a: (m.atleast_1d(a[0, 0, 0]), m.atleast_2d(a[0, 0]),
                              m.atleast_3d(a[0]), m.atleast_3d(a[0, 0]),
                              m.atleast_3d(a[0, 0, 0]), m.atleast_2d((a[0, 0], a[0]))), True),
    ("hstack, vstack, dstack, column_stack, row_stack",
     lambda m, a: (m.hstack([a[0], a[1]]), m.vstack([a[0, 0], a[1, 0]]),
                   m.dstack([a[0], a[1]]), m.column_stack([a[0, 0], a[0, 1], a[0].t()[:4, :2]]),
                   m.row_stack([a[0], a[1]]), m.hstack([a[0, 0], a[1, 1]])), True),
    ("hsplit, vsplit, dsplit", lambda m, a: (m.hsplit(a, 3), m.vsplit(a, [1]),
                                            m.dsplit(a, [1, 3]), a[0, 0].hsplit(2)), True),
    ("split_with_sizes, unsafe_*", lambda m, a: (a.split_with_sizes([1, 3], 2),
                                                 m.unsafe_split(a, 2, 2),
                                                 m.unsafe_chunk(a, 3, 1)), True),
    ("fliplr, flipud, moveaxis, swapdims", lambda m, a: (m.fliplr(a), m.flipud(a),
                                                          m.moveaxis(a, 0, -1),
                                                          a.swapdims(0, 2)), True),
    ("broadcast_tensors", lambda m, a: m.broadcast_tensors(a[:, :1], a[0, :, :1], a[0, 0]),
     True),
    ("diagflat, narrow_copy, unfold", lambda m, a: (m.diagflat(a[0, 0], -1),
                                                    a.narrow_copy(2, 1, 2),
                                                    a.unfold(2, 2, 1), a[0, 0].unfold(0, 3, 2)),
     True),
    ("combinations", lambda m, a: (m.combinations(a[0, 0]), m.combinations(a[0, 0], 3),
                                   m.combinations(a[0, 0, :3], with_replacement=True)), True),
    ("*_copy", lambda m, a: (m.permute_copy(a, (2, 0, 1)), m.transpose_copy(a, 0, 1),
                             m.t_copy(a[0]), m.squeeze_copy(a[:1]), m.unsqueeze_copy(a, 1),
                             m.expand_copy(a[:, :1], (2, 3, 4)), m.select_copy(a, 1, 2),
                             m.diagonal_copy(a[0]), m.unbind_copy(a, 1),
                             m.split_copy(a, 2, 2), m.view_copy(a, (6, 4)),
                             m.alias_copy(a), m.as_strided_copy(a, (2, 2), (4, 1)),
                             m.slice_copy(a, 2, 1, 3), m.unfold_copy(a, 2, 2, 2)), True),
    ("take, take_along_dim", lambda m, a: (
        m.take(a, m.tensor([[0, 23], [-1, 5]], device=a.device)),
        m.take_along_dim(a, m.tensor([[[1]], [[3]]], device=a.device), 2),
        m.take_along_dim(a, m.tensor([3, 0], device=a.device))), True),
    ("index_fill", lambda m, a: (m.index_fill(a, 1, m.tensor([0, 2], device=a.device), -1.0),
                                 a.index_fill(2, m.tensor([3], device=a.device),
                                              m.tensor(7.0, device=a.device))), True),
]


@pytest.mark.parametrize("name,fn,grads", STACK, ids=[s[0] for s in STACK])
def test_stacking_and_views_match_torch(device, name, fn, grads):
    def both(m, a):
        return fn(m, a)

    def flat(r):
        return list(r) if isinstance(r, (tuple, list)) else [r]
    ours = pygpu.tensor(A, device=device).requires_grad_(grads)
    theirs = torch.tensor(A).requires_grad_(grads)
    o, t = flat(both(pygpu, ours)), flat(both(torch, theirs))
    _same(o, t)
    if grads:
        w = [np.random.default_rng(k).standard_normal(tuple(_np(r).shape))
             for k, r in enumerate(_flatten(t))]
        sum(((r * pygpu.tensor(x, device=device)).sum() for r, x in zip(_flatten(o), w)),
            pygpu.zeros((), dtype=pygpu.float64, device=device)).backward()
        sum((r * torch.tensor(x)).sum() for r, x in zip(_flatten(t), w)).backward()
        _same(ours.grad, theirs.grad)


def _flatten(rs):
    out = []
    for r in rs:
        out += _flatten(r) if isinstance(r, (tuple, list)) else [r]
    return [r for r in out if r.dtype in (pygpu.float64, torch.float64)]


def test_detach_copy_is_a_copy_outside_the_graph():
    for m in (pygpu, torch):
        a = m.ones(3, requires_grad=True)
        d = m.detach_copy(a)  # (torch's marks it requiring grad, with no derivative)
        assert d.data_ptr() != a.data_ptr() and d.tolist() == [1.0, 1.0, 1.0]


def test_indexing_in_place_and_unravel_match_torch(device):
    for m in (pygpu, torch):
        kw = {"device": device} if m is pygpu else {}
        z = m.zeros(7, 3, **kw).fill_diagonal_(5, wrap=True)
        w = m.zeros(3, 3, 3, **kw).fill_diagonal_(1)
        p = m.zeros(5, **kw).put_(m.tensor([1, 3, 1], **kw), m.tensor([1.0, 2.0, 3.0], **kw),
                                  accumulate=True)
        q = m.arange(6.0, **kw).put(m.tensor([0, -1], **kw), m.tensor([9.0, 8.0], **kw))
        f = m.arange(6.0, **kw).view(2, 3).index_fill_(1, m.tensor([1], **kw), -2.0)
        u = m.unravel_index(m.tensor([4, 1, 5, 7, -1, -7], **kw), (2, 3))
        uc = m.unique_consecutive(m.tensor([1, 1, 2, 2, 3, 1, 1, 2], **kw), return_inverse=True,
                                  return_counts=True)
        ucd = m.unique_consecutive(m.tensor([[1, 2], [1, 2], [3, 4], [1, 2]], **kw), dim=0,
                                   return_counts=True)
        results = [_np(v) for v in (z, w, p, q, f, *u, *uc, *ucd)]
        if m is pygpu:
            ours = results
    for a, b in zip(ours, results):
        np.testing.assert_array_equal(a, b)


def test_errors_match_torch():
    cases = [lambda m: m.broadcast_shapes((2, 3), (4, 1, 2)),
             lambda m: m.broadcast_tensors(m.zeros(2), m.zeros(3)),
             lambda m: m.hsplit(m.ones(4, 6), 4), lambda m: m.vsplit(m.ones(3), 1),
             lambda m: m.arange(3.0).unfold(0, 4, 1), lambda m: m.take(m.arange(3.0),
                                                                      m.tensor([5])),
             lambda m: m.kthvalue(m.ones(3), 4), lambda m: m.fliplr(m.ones(3)),
             lambda m: m.quantile(m.ones(3), 1.5),
             lambda m: m.unravel_index(m.tensor([1.5]), (2, 3)),
             lambda m: m.unravel_index(m.tensor([1]), (2, -3)),
             lambda m: m.combinations(m.ones(2, 2))]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(torch)
        with pytest.raises(type(theirs.value)) as ours:
            case(pygpu)
        assert str(theirs.value).split("\n")[0] == str(ours.value).split("\n")[0]


def test_torch_level_spellings_match_torch(device):
    x = np.random.default_rng(3).standard_normal((2, 3, 8))
    w = np.random.default_rng(4).standard_normal((4, 3, 3))
    table = [
        lambda m, a: m.exp_(a.clone()), lambda m, a: m.sigmoid_(a.clone()),
        lambda m, a: m.clamp_(a.clone(), -0.5, 0.5), lambda m, a: m.fill(a, 2.5),
        lambda m, a: m.dropout(a, 0.5, False), lambda m, a: m.feature_dropout(a, 0.5, False),
        lambda m, a: m.layer_norm(a, (8,)), lambda m, a: m.group_norm(a, 3),
        lambda m, a: m.batch_norm(a, None, None, m.zeros(3, dtype=a.dtype, device=a.device),
                                  m.ones(3, dtype=a.dtype, device=a.device), False, 0.1, 1e-5,
                                  True),
        lambda m, a: m.instance_norm(a, None, None, None, None, True, 0.1, 1e-5, True),
        lambda m, a: m.kl_div(a.log_softmax(-1), a.softmax(-1), 2),
        lambda m, a: m.binary_cross_entropy_with_logits(a, (a > 0).double(), None, None, 0),
        lambda m, a: m.hinge_embedding_loss(a, (a > 0).double() * 2 - 1, 1.0, 1),
        lambda m, a: m.rsub(a, 2.0, alpha=3), lambda m, a: m.selu(a), lambda m, a: m.celu(a, 2.0),
        lambda m, a: m.threshold(a, 0.1, -5.0), lambda m, a: m.hardshrink(a, 0.3),
        lambda m, a: a.hardshrink(0.3), lambda m, a: m.constant_pad_nd(a, (1, 2), 3.0),
        lambda m, a: m.max_pool1d(a, 2), lambda m, a: m.max_pool1d_with_indices(a, 3, 2),
        lambda m, a: m.avg_pool1d(a, 2), lambda m, a: m.adaptive_max_pool1d(a, 3),
        lambda m, a: m.adaptive_avg_pool1d(a, 4), lambda m, a: m.pdist(a[0]),
        lambda m, a: m.cosine_similarity(a[0], a[1]), lambda m, a: m.rms_norm(a, (8,)),
        lambda m, a: m.pixel_unshuffle(a.reshape(1, 2, 6, 4), 2),
        lambda m, a: a.adjoint(), lambda m, a: a[0].H, lambda m, a: a.mH,
    ]
    for k, fn in enumerate(table):
        _run(fn, device, [x])
    _run(lambda m, a, b: m.conv1d(a, b, None, 1, 1), device, [x, w])
    _run(lambda m, a, b: m.embedding(b.reshape(12, 3), m.tensor([[0, 11], [5, 5]],
                                                             device=b.device)), device, [x, w])
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                 "kaiser_window"):
        for n, periodic in ((0, True), (1, True), (7, True), (8, False)):
            ours = getattr(pygpu, name)(n, periodic, dtype=pygpu.float64, device=device)
            ref = getattr(torch, name)(n, periodic, dtype=torch.float64)
            np.testing.assert_allclose(ours.cpu().numpy(), ref.numpy(), rtol=1e-9, atol=1e-12)
    assert pygpu.hamming_window(6, alpha=0.5, beta=0.5).dtype is pygpu.float32


def test_small_names_match_torch():
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = pygpu.range(1, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.range(1, 4)
        ref2 = torch.range(0, 1, 0.25)
        ours2 = pygpu.range(0, 1, 0.25)
    assert r.tolist() == ref.tolist() and str(r.dtype) == str(ref.dtype)
    assert ours2.tolist() == ref2.tolist()
    buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
    t = pygpu.frombuffer(buf, dtype=pygpu.float32, count=3, offset=4)
    assert t.tolist() == torch.frombuffer(bytearray(buf), dtype=torch.float32, count=3,
                                          offset=4).tolist()
    t[0] = 10.0  # the buffer's memory, as PyTorch's
    assert np.frombuffer(bytes(buf), np.float32)[1] == 10.0
    e = pygpu.empty_strided((2, 3), (1, 2))
    assert e.stride() == torch.empty_strided((2, 3), (1, 2)).stride()
    assert pygpu.ones(3, device="sim").new_empty_strided((2, 2), (1, 2)).device == "sim:0"
    x = pygpu.ones(2, 3)
    assert pygpu.typename(x) == torch.typename(torch.ones(2, 3)) == "torch.FloatTensor"
    assert pygpu.typename(pygpu.nn.Linear) == "pygpu.nn.layers.Linear"
    assert pygpu.get_device(x) == torch.get_device(torch.ones(1)) == -1
    assert x.dim_order() == torch.ones(2, 3).dim_order()
    assert x.t().dim_order() == torch.ones(2, 3).t().dim_order()
    assert x.const_data_ptr() == x.data_ptr()
    for flag in ("is_mps", "is_xla", "is_xpu", "is_ipu", "is_maia", "is_mtia", "is_vulkan",
                 "is_mkldnn", "is_nested", "is_sparse_csr", "is_quantized"):
        assert getattr(x, flag) is False and getattr(torch.ones(1), flag) is False
    assert repr(x.layout) == repr(torch.ones(1).layout) == "torch.strided"
    assert isinstance(pygpu.strided, pygpu.layout)
    assert pygpu.has_lapack and pygpu.GradScaler is pygpu.amp.GradScaler
    for m in (pygpu, torch):
        m.set_deterministic_debug_mode("warn")
        assert m.get_deterministic_debug_mode() == 1
        m.set_deterministic_debug_mode(0)
        assert m.get_deterministic_debug_mode() == 0
        m.set_warn_always(True)
        assert m.is_warn_always_enabled()
        m.set_warn_always(False)
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        pygpu.set_deterministic_debug_mode("loud")
    assert pygpu.get_num_interop_threads() >= 1
    before = pygpu.get_default_dtype()
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            pygpu.set_default_tensor_type(pygpu.DoubleTensor)
        assert pygpu.get_default_dtype() is pygpu.float64 and pygpu.ones(1).dtype is pygpu.float64
    finally:
        pygpu.set_default_dtype(before)


def test_storages_share_the_tensors_memory_as_torchs_do(device):
    import warnings as _w
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        for m in (pygpu, torch):
            kw = {"device": device} if m is pygpu else {}
            x = m.arange(6.0, **kw).view(2, 3)
            s, u = x.storage(), x.untyped_storage()
            assert s.size() == 6 and len(u) == u.nbytes() == 24 and s.element_size() == 4
            assert s.data_ptr() == x.data_ptr() == u.data_ptr() and s[4] == 4.0
            assert isinstance(s, m.FloatStorage) == (device == "cpu" or m is torch)
            assert x.storage_type().__name__ == "FloatStorage" and m.is_storage(u)
            assert not m.is_storage(x)
            s[0] = 7.0  # the tensor's memory
            assert x[0, 0].item() == 7.0
            y = m.empty(0, **kw).set_(x.untyped_storage() if m is torch else s, 2, (2, 2),
                                      (1, 2))
            assert y.tolist() == [[2.0, 4.0], [3.0, 5.0]]
            v = m.empty(0, **kw).set_(x)
            assert v.is_set_to(x) and not x[1:].is_set_to(x)
            z = m.zeros(6, **kw)
            z.as_strided_((2, 2), (1, 2))
            assert tuple(z.shape) == (2, 2) and z.stride() == (1, 2)
            r = m.zeros(2, 2, **kw).resize_as_(m.zeros(4, **kw))
            assert tuple(r.shape) == (4,)
            assert m.DoubleStorage([1, 2]).tolist() == [1.0, 2.0]
            assert m.ones(2, 3, **kw).sum_to_size(1, 3).tolist() == [[2.0, 2.0, 2.0]]
            assert m.nonzero_static(m.tensor([0, 1, 0, 2], **kw), size=3).tolist() == \
                [[1], [3], [-1]]
            assert m.empty_permuted((2, 3, 4), (2, 0, 1), **kw).stride() == (3, 1, 6)
    s = pygpu.ones(3).share_memory_().storage()
    assert s.is_shared() and pygpu.ones(2).untyped_storage().is_shared() is False


def test_autograd_and_overrides_names():
    import pygpu.autograd as ag
    assert not ag.is_tensor_like(1) and ag.is_tensor_like(pygpu.ones(1))
    assert ag.kineto_available() is False and ag.is_view_replay_enabled() is False
    with ag.set_multithreading_enabled(False):
        assert not ag.is_multithreading_enabled()
    assert ag.is_multithreading_enabled()
    assert ag.DeviceType.CUDA.name == torch.autograd.DeviceType.CUDA.name
    assert ag.ProfilerActivity is pygpu.profiler.ProfilerActivity

    class Wrapped:
        def __init__(self, v):
            self.v = v

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return ("handled", func.__name__, args[0].v)

    w = Wrapped(3)
    F = pygpu.nn.functional
    assert F.has_torch_function((w,)) and F.has_torch_function_unary(w)
    assert not F.has_torch_function((pygpu.ones(1),))
    assert F.handle_torch_function(F.relu, (w,), w) == ("handled", "relu", 3)
    with pytest.raises(TypeError, match="no implementation found"):
        class Refuses(Wrapped):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented
        F.handle_torch_function(F.relu, (Refuses(1),), Refuses(1))


def test_lp_pool_and_channel_shuffle_match_torch(device):
    x = np.random.default_rng(5).standard_normal((2, 4, 6, 6))
    cases = [lambda m, t: m.nn.functional.lp_pool2d(t, 2, 3),
             lambda m, t: m.nn.functional.lp_pool1d(t.reshape(2, 4, 36), 1.5, 4, 2),
             lambda m, t: m.nn.functional.channel_shuffle(t, 2),
             lambda m, t: m.nn.LPPool2d(float("inf"), 2)(t),
             lambda m, t: m.nn.LPPool1d(2, 3, 2)(t.reshape(2, 4, 36)),
             lambda m, t: m.nn.ChannelShuffle(4)(t)]
    for fn in cases:
        _run(fn, device, [x], grads=True)
    assert repr(pygpu.nn.LPPool2d(2, 3)) == repr(torch.nn.LPPool2d(2, 3))
    assert repr(pygpu.nn.ChannelShuffle(2)) == repr(torch.nn.ChannelShuffle(2))


SPD = np.random.default_rng(7).standard_normal((4, 4))
SPD = SPD @ SPD.T + 4 * np.eye(4)
NUMERIC = [
    ("gcd, lcm", lambda m, a: (m.gcd(m.tensor([12, -18, 0, 7, 0], device=a.device),
                                     m.tensor([8, 12, 5, 0, 0], device=a.device)),
                               m.lcm(m.tensor([4, -6, 0], device=a.device),
                                     m.tensor([6, 4, 3], device=a.device))), False),
    ("shifts", lambda m, a: (m.bitwise_left_shift(m.tensor([1, -3, 5], device=a.device), 2),
                             m.bitwise_right_shift(m.tensor([-9, 8, 7], device=a.device),
                                                   m.tensor([1, 2, 1], device=a.device))), False),
    ("diff", lambda m, a: (m.diff(a, 2), m.diff(a, dim=0, prepend=a[:1] * 0)), True),
    ("trapezoid", lambda m, a: (m.trapezoid(a), m.trapezoid(a, a[0] * 0 + m.tensor(
        [0.0, 1.0, 3.0, 4.0, 6.0], dtype=a.dtype, device=a.device)),
        m.cumulative_trapezoid(a, dx=0.5), m.trapz(a, dim=0)), True),
    ("inner, vdot, dist", lambda m, a: (m.inner(a, a[0]), m.vdot(a[0], a[1]),
                                        m.dist(a[0], a[1], 3)), True),
    ("addmv, addr", lambda m, a: (m.addmv(a[:, 0], a[:, :4], a[0, :4], beta=2, alpha=0.5),
                                  m.addr(a[:, :3], a[:, 0], a[0, :3])), True),
    ("renorm", lambda m, a: m.renorm(a, 2, 0, 1.5), True),
    ("*_scatter", lambda m, a: (m.diagonal_scatter(a, a[0, :3] * 2, 1),
                                m.select_scatter(a, a[1] * 3, 0, 2),
                                m.slice_scatter(a, a[:1] * 5, 0, 1, 4, 2),
                                m.as_strided_scatter(a, a[0, :4].reshape(2, 2), (2, 2), (1, 5))),
     True),
    ("histogram", lambda m, a: (m.histogram(a, 4), m.histogram(a.reshape(-1), m.tensor(
        [-2.0, 0.0, 0.5, 3.0], dtype=a.dtype, device=a.device), density=True)), False),
]
for _red in ("sum", "prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        NUMERIC.append((f"scatter_reduce {_red} {_inc}",
                        lambda m, a, r=_red, i=_inc: a.scatter_reduce(
                            1, m.tensor([[0, 0, 2, 4, 4]] * 3, device=a.device), a * 2 + 1, r,
                            include_self=i), _red in ("sum", "mean", "prod")))
NUMERIC.append(("index_reduce", lambda m, a: a.index_reduce(
    0, m.tensor([0, 2, 0], device=a.device), a * 3, "amax", include_self=False), False))


@pytest.mark.parametrize("name,fn,grads", NUMERIC, ids=[n[0] for n in NUMERIC])
def test_numeric_functions_match_torch(device, name, fn, grads):
    x = np.random.default_rng(11).standard_normal((3, 5)) * 2
    _run(fn, device, [x], grads=grads)


def test_lu_cholesky_and_removed_functions_match_torch(device):
    a = [SPD]
    _run(lambda m, A: (m.cholesky_solve(A, m.linalg.cholesky(A)),
                       m.cholesky_inverse(m.linalg.cholesky(A)),
                       m.cholesky_solve(A[:, :2], m.linalg.cholesky(A).mT, upper=True)),
         device, a, rtol=1e-7)
    _run(lambda m, A: (m.lu_unpack(*m.linalg.lu_factor(A)),
                       m.lu_solve(A[:, :1], *m.linalg.lu_factor(A)),
                       m.lu(A)), device, a, rtol=1e-7)
    _run(lambda m, A: (m.triangular_solve(A[:, :2], A.triu()),
                       m.triangular_solve(A[:, :2], A.tril(), upper=False, transpose=True)),
         device, a, rtol=1e-7)
    _run(lambda m, A: (m.frobenius_norm(A, (0, 1)), m.nuclear_norm(A),
                       m.norm_except_dim(A, 2, 1), m.vander(A[0], 3),
                       m.vander(A[0], increasing=True)), device, a, rtol=1e-7)
    for call in (lambda m: m.eig(m.eye(2)), lambda m: m.symeig(m.eye(2)),
                 lambda m: m.solve(m.eye(2), m.eye(2)), lambda m: m.lstsq(m.eye(2), m.eye(2)),
                 lambda m: m.matrix_rank(m.eye(2)), lambda m: m.eye(2).eig()):
        with pytest.raises(RuntimeError) as theirs:
            call(torch)
        with pytest.raises(RuntimeError) as ours:
            call(pygpu)
        assert str(ours.value) == str(theirs.value)


def test_recurrent_cells_at_torch_level_match_torch(device):
    rng = np.random.default_rng(13)
    x, h, c = rng.standard_normal((3, 4)), rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    for name, gates in (("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("gru_cell", 3),
                        ("lstm_cell", 4)):
        w_ih, w_hh = rng.standard_normal((gates * 5, 4)), rng.standard_normal((gates * 5, 5))
        b_ih, b_hh = rng.standard_normal(gates * 5), rng.standard_normal(gates * 5)

        def call(m, x, h, c, w_ih, w_hh, b_ih, b_hh, name=name):
            hx = (h, c) if name == "lstm_cell" else h
            return getattr(m, name)(x, hx, w_ih, w_hh, b_ih, b_hh)
        _run(call, device, [x, h, c, w_ih, w_hh, b_ih, b_hh], grads=True)
    _run(lambda m, t: m.channel_shuffle(t, 2), device, [rng.standard_normal((2, 4, 3))])
