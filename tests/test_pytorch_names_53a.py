# test_pytorch_names_53a.py - issue 43's remaining tensor and op names, each against torch (the
# oracle) on cpu and sim: Tensor.output_nr, module_load, volatile, reinforce, hash_tensor
# (torch's and Tensor's), torch.indices_copy/values_copy, mkldnn_linear_backward_weights,
# embedding_bag (ATen's four results) and miopen_ctc_loss.
import warnings

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")



def _p(t, device="cpu"):
    """torch tensor -> pygpu tensor on device (same dtype)."""
    return pygpu.tensor(t.numpy(), device=device)


def _same_error(fn_torch, fn_pygpu):
    with pytest.raises(Exception) as want:
        fn_torch()
    with pytest.raises(type(want.value)) as got:
        fn_pygpu()
    assert str(got.value) == str(want.value)


# ---- output_nr ---------------------------------------------------------------------------

_MULTI = {
    "split": lambda m, x: m.split(x, 2, 1),
    "split_sizes": lambda m, x: m.split(x, [1, 5], 1),
    "chunk": lambda m, x: m.chunk(x, 3, 1),
    "unbind": lambda m, x: m.unbind(x, 0),
    "tensor_split": lambda m, x: m.tensor_split(x, 3, 1),
    "var_mean": lambda m, x: m.var_mean(x, 1),
    "std_mean": lambda m, x: m.std_mean(x, 1),
    "aminmax": lambda m, x: m.aminmax(x, dim=1),
    "max": lambda m, x: m.max(x, 1),
    "sort": lambda m, x: m.sort(x, 1),
}


@pytest.mark.parametrize("op", sorted(_MULTI))
def test_output_nr_of_each_output_is_torchs(op, device):
    t = torch.randn(4, 6, requires_grad=True)
    p = _p(t.detach(), device).requires_grad_(True)
    want = [r.output_nr for r in _MULTI[op](torch, t)]
    got = [r.output_nr for r in _MULTI[op](pygpu, p)]
    assert got == want


def test_output_nr_of_leaves_and_single_output_ops_is_zero(device):
    x = pygpu.randn(3, device=device, requires_grad=True)
    assert x.output_nr == 0 and (x * 2).output_nr == 0 and x[1].output_nr == 0
    assert pygpu.randn(3, device=device).output_nr == 0
    a, b = x.split(2)  # the second piece's number survives a later op on the first
    assert (a.exp().output_nr, b.output_nr) == (0, 1)
    assert x.output_nr == 0  # numbering the pieces leaves the input's own node alone


# ---- volatile / reinforce ----------------------------------------------------------------

def _warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        value = fn()
    return value, [(type(x.message), str(x.message)) for x in w]


def test_volatile_reads_false_and_sets_nothing_with_torchs_warnings(device):
    t, p = torch.randn(2), pygpu.randn(2, device=device)
    assert _warned(lambda: p.volatile) == _warned(lambda: t.volatile)

    def set_(x):
        x.volatile = True
        return x.volatile
    assert _warned(lambda: set_(p)) == _warned(lambda: set_(t))
    assert not p.requires_grad


def test_reinforce_raises_torchs_error_word_for_word(device):
    _same_error(lambda: torch.randn(2).reinforce(1.0),
                lambda: pygpu.randn(2, device=device).reinforce(1.0))


# ---- module_load -------------------------------------------------------------------------

def test_module_load_copies_or_assigns_and_detaches_as_torchs(device):
    for mod in (torch, pygpu):
        kw = {} if mod is torch else {"device": device}
        x = mod.zeros(3, **kw)
        other = mod.tensor([1.0, 2.0, 3.0], **kw).requires_grad_(True)
        r = x.module_load(other)
        assert r is not x and r is not other and not r.requires_grad
        assert r.tolist() == [1.0, 2.0, 3.0] and x.tolist() == [1.0, 2.0, 3.0]
        r = mod.zeros(3, **kw).module_load(other, assign=True)
        assert r is not other and not r.requires_grad and r.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError):  # copy_'s shape error (pygpu words it its own way)
        pygpu.zeros(3, device=device).module_load(pygpu.ones(4, device=device))


# ---- hash_tensor -------------------------------------------------------------------------

_HASHED = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64"]


@pytest.mark.parametrize("dtype", _HASHED)
def test_hash_tensor_is_bit_exact(dtype, device):
    a = np.random.RandomState(1).randn(3, 5, 7) * 100
    a[0, 0, 0] = np.nan
    a[1, 2, 3] = -0.0
    t = torch.tensor(a).to(getattr(torch, dtype))
    if dtype in ("float16", "bfloat16"):  # torch's bits (its NaN's payload is its converter's)
        p = pygpu.tensor(t.view(torch.int16).numpy(), device=device).view(getattr(pygpu, dtype))
    else:
        p = _p(t, device)
    for args, kw in [((), {}), ((1,), {}), (((0, 2),), {"keepdim": True}), (([],), {}),
                     ((-1,), {"keepdim": True}), ((None,), {})]:
        want = torch.hash_tensor(t, *args, **kw)
        got = pygpu.hash_tensor(p, *args, **kw)
        assert str(got.dtype) == "torch.uint64" and tuple(got.shape) == tuple(want.shape)
        assert got.cpu().tolist() == want.tolist(), (args, kw)
    assert p.hash_tensor(2).cpu().tolist() == t.hash_tensor(2).tolist()


def test_hash_tensor_errors_are_torchs(device):
    def both(make, *args, **kw):
        _same_error(lambda: torch.hash_tensor(make(torch, {}), *args, **kw),
                    lambda: pygpu.hash_tensor(make(pygpu, {"device": device}), *args, **kw))
    both(lambda m, kw: m.empty(0, **kw))
    both(lambda m, kw: m.empty(2, 0, **kw), 1)
    both(lambda m, kw: m.ones(2, 3, **kw), mode=1)
    with pytest.raises(IndexError):  # pygpu's dim-range words (views.norm_dim), torch's type
        pygpu.hash_tensor(pygpu.ones(2, 3, device=device), 5)
    for dt in ("uint16", "uint32", "uint64", "complex64"):
        both(lambda m, kw: m.ones(2, dtype=getattr(m, dt), **kw))
    # a 0-d tensor's dim 0, and out=
    t, p = torch.tensor(3.0), pygpu.tensor(3.0, device=device)
    assert pygpu.hash_tensor(p, 0).cpu().tolist() == torch.hash_tensor(t, 0).tolist()
    out = pygpu.empty(0, dtype=pygpu.uint64, device=device)
    assert pygpu.hash_tensor(p, out=out) is out and out.cpu().tolist() == \
        torch.hash_tensor(t).tolist()


# ---- indices_copy / values_copy ----------------------------------------------------------

def test_indices_and_values_copies_of_a_sparse_tensor(device):
    i, v = [[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0]
    t = torch.sparse_coo_tensor(i, v, (2, 3)).coalesce()
    p = pygpu.sparse_coo_tensor(pygpu.tensor(i, device=device),
                                pygpu.tensor(v, device=device), (2, 3)).coalesce()
    ind, val = pygpu.indices_copy(p), pygpu.values_copy(p)
    assert ind.cpu().tolist() == t.indices().tolist()  # torch's own copy has no COO kernel
    assert val.cpu().tolist() == t.values().tolist()
    ind.fill_(0)
    val.fill_(0)  # copies: the sparse tensor keeps its own
    assert p.indices().cpu().tolist() == t.indices().tolist()
    assert p.values().cpu().tolist() == v
    csr_t, csr_p = t.to_dense().to_sparse_csr(), p.to_dense().to_sparse_csr()
    assert pygpu.values_copy(csr_p).cpu().tolist() == torch.values_copy(csr_t).tolist()
    _same_error(lambda: torch.indices_copy(torch.ones(2)),
                lambda: pygpu.indices_copy(pygpu.ones(2, device=device)))
    _same_error(lambda: torch.values_copy(torch.ones(2)),
                lambda: pygpu.values_copy(pygpu.ones(2, device=device)))


# ---- mkldnn_linear_backward_weights ------------------------------------------------------

@pytest.mark.parametrize("bias_defined", [True, False])
def test_mkldnn_linear_backward_weights_is_torchs(bias_defined, device):
    g, x, w = torch.randn(2, 5, 3), torch.randn(2, 5, 4), torch.randn(3, 4)
    want = torch.mkldnn_linear_backward_weights(g.to_mkldnn(), x.to_mkldnn(), w, bias_defined)
    got = pygpu.mkldnn_linear_backward_weights(_p(g, device), _p(x, device), _p(w, device),
                                               bias_defined)
    assert np.allclose(got[0].cpu().numpy(), want[0].numpy(), atol=1e-5)
    assert tuple(got[1].shape) == tuple(want[1].shape)
    if bias_defined:
        assert np.allclose(got[1].cpu().numpy(), want[1].numpy(), atol=1e-5)
    with pytest.raises(RuntimeError, match="dense_to_mkldnn expects float"):
        pygpu.mkldnn_linear_backward_weights(_p(g, device).double(), _p(x, device).double(),
                                             _p(w, device), True)


# ---- embedding_bag -----------------------------------------------------------------------

_BAGS = [([1, 2, 4, 5, 4, 3, 2, 9], [0, 4, 4, 6]), ([3, 3, 1, 0, 7], [0, 2]),
         ([1, 2, 4, 5, 4, 3, 2, 9], [0, 4, 4, 8])]


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_four_results_are_torchs(mode, device):
    torch.manual_seed(0)
    w = torch.randn(10, 3)
    pw = _p(w, device)
    for idx, off in _BAGS:
        for last in (False, True):
            if last and off[-1] != len(idx):
                continue
            for pad in (None, 2, 4, -1, -3):
                for it in ("int64", "int32"):
                    ti = torch.tensor(idx, dtype=getattr(torch, it))
                    to = torch.tensor(off, dtype=getattr(torch, it))
                    want = torch.embedding_bag(w, ti, to, False, mode, False, None, last, pad)
                    got = pygpu.embedding_bag(pw, _p(ti, device), _p(to, device), False, mode,
                                              False, None, last, pad)
                    assert np.allclose(got[0].cpu().numpy(), want[0].numpy(), atol=1e-6)
                    for a, b in zip(got[1:], want[1:]):
                        assert str(a.dtype) == str(b.dtype)
                        assert a.cpu().tolist() == b.tolist(), (idx, off, last, pad)


def test_embedding_bag_output_carries_the_weight_gradient(device):
    w = torch.randn(6, 2, requires_grad=True)
    idx, off = torch.tensor([0, 2, 2, 5]), torch.tensor([0, 1])
    pw = _p(w.detach(), device).requires_grad_(True)
    torch.embedding_bag(w, idx, off, False, 1)[0].sum().backward()
    pygpu.embedding_bag(pw, _p(idx, device), _p(off, device), False, 1)[0].sum().backward()
    assert np.allclose(pw.grad.cpu().numpy(), w.grad.numpy(), atol=1e-6)


# ---- miopen_ctc_loss ---------------------------------------------------------------------

def test_miopen_ctc_loss_is_the_loss_and_torchs_native_gradient(device):
    # PyTorch runs miopen_ctc_loss only under ROCm; the oracle is what MIOpen returns to it:
    # each sample's loss and the gradient ATen's native ctc_loss backward computes
    torch.manual_seed(0)
    lp = torch.randn(7, 3, 5).log_softmax(2)
    tg, il, tl = torch.tensor([1, 2, 3, 1, 4, 4, 2], dtype=torch.int32), [7, 5, 6], [2, 2, 3]
    x = lp.clone().requires_grad_(True)
    want = torch.nn.functional.ctc_loss(x, tg, il, tl, reduction="none")
    want.sum().backward()
    for lens in ((il, tl), (pygpu.tensor(il), pygpu.tensor(tl))):
        costs, grad = pygpu.miopen_ctc_loss(_p(lp, device), _p(tg), *lens, 0, True, False)
        assert np.allclose(costs.cpu().numpy(), want.detach().numpy(), atol=1e-5)
        assert np.allclose(grad.cpu().numpy(), x.grad.numpy(), atol=1e-5)
        assert tuple(grad.shape) == (7, 3, 5) and not grad.requires_grad
    with pytest.raises(NotImplementedError):  # torch's CPU build has no kernel for it
        torch.miopen_ctc_loss(lp, tg, il, tl, 0, True, False)


def test_miopen_ctc_loss_checks_in_atens_words(device):
    lp = pygpu.randn(4, 2, 5, device=device).log_softmax(2)
    tg = pygpu.tensor([1, 2, 1], dtype=pygpu.int32)
    cases = [((pygpu.randn(4, 5, device=device), tg, [4], [1], 0),
              "Expected 3-dimensional tensor, but got 2-dimensional tensor for argument #1 "
              "'log_probs' (while checking arguments for miopen_ctc_loss)"),
             ((lp.double(), tg, [4, 4], [2, 1], 0),
              "Expected tensor for argument #1 'log_probs' to have scalar type Float; but got "
              "Double instead (while checking arguments for miopen_ctc_loss)"),
             ((lp, tg.long(), [4, 4], [2, 1], 0),
              "Expected tensor for argument #2 'targets' to have scalar type Int; but got Long "
              "instead (while checking arguments for miopen_ctc_loss)"),
             ((lp, tg, [4], [2, 1], 0), "input_lengths needs to have size to match batch_size"),
             ((lp, tg, [4, 4], [2], 0), "target_lengths needs to have size to match batch_size"),
             ((lp, tg, [4, 4], [2, 1], 1), "blank must be label 0 for miopen_ctc_loss")]
    for args, msg in cases:
        with pytest.raises(RuntimeError) as e:
            pygpu.miopen_ctc_loss(*args, True, False)
        assert str(e.value) == msg


def test_embedding_bag_padding_idx_range_is_atens(device):
    w, idx, off = torch.randn(10, 3), torch.tensor([1, 2]), torch.tensor([0])
    for pad in (-11, 10):
        _same_error(lambda: torch.embedding_bag(w, idx, off, False, 1, False, None, False, pad),
                    lambda: pygpu.embedding_bag(_p(w, device), _p(idx, device), _p(off, device),
                                                False, 1, False, None, False, pad))


# ---- mkldnn_rnn_layer --------------------------------------------------------------------

@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("has_biases", [True, False])
def test_mkldnn_rnn_layer_is_torchs_lstm_layer(reverse, has_biases, device):
    torch.manual_seed(0)
    T, B, I, H = 5, 2, 4, 3
    ts = [torch.randn(T, B, I, requires_grad=True), torch.randn(4 * H, I), torch.randn(4 * H, H),
          torch.randn(4 * H), torch.randn(4 * H), torch.randn(B, H), torch.randn(B, H)]
    ps = [_p(t.detach(), device) for t in ts]
    ps[0].requires_grad_(True)
    want = torch.mkldnn_rnn_layer(*ts, reverse, [], 2, H, 1, has_biases, False, False, True)
    got = pygpu.mkldnn_rnn_layer(*ps, reverse, [], 2, H, 1, has_biases, False, False, True)
    for a, b in zip(got[:3], want[:3]):
        assert tuple(a.shape) == tuple(b.shape)
        assert np.allclose(a.detach().cpu().numpy(), b.detach().numpy(), atol=1e-5)
    assert str(got[3].dtype) == "torch.uint8"  # oneDNN's workspace: pygpu keeps none
    want[0].sum().backward()
    got[0].sum().backward()
    assert np.allclose(ps[0].grad.cpu().numpy(), ts[0].grad.numpy(), atol=1e-5)


def test_mkldnn_rnn_layer_takes_only_lstm(device):
    T, B, I, H = 3, 2, 4, 3
    ts = [torch.randn(T, B, I), torch.randn(H, I), torch.randn(H, H), torch.randn(H),
          torch.randn(H), torch.randn(B, H), torch.randn(B, H)]
    _same_error(lambda: torch.mkldnn_rnn_layer(*ts, False, [], 1, H, 1, True, False, False,
                                               False),
                lambda: pygpu.mkldnn_rnn_layer(*[_p(t, device) for t in ts], False, [], 1, H, 1,
                                               True, False, False, False))


# ---- grad_dtype --------------------------------------------------------------------------

def _grad_dtype_story(mod, device):
    """What a program sees of grad_dtype, as a list of values and error texts."""
    kw = {} if mod is torch else {"device": device}
    seen = []

    def run(fn):
        try:
            seen.append(repr(fn()))
        except RuntimeError as e:
            seen.append(f"RuntimeError: {e}")

    x = mod.ones(3, requires_grad=True, **kw)
    run(lambda: str(x.grad_dtype))
    run(lambda: (x * 2).grad_dtype)

    def set_on_non_leaf():
        (x * 2).grad_dtype = mod.float16
    run(set_on_non_leaf)

    def set_int():
        x.grad_dtype = 3
    run(set_int)

    def assign(dt):
        def f():
            x.grad = mod.ones(3, dtype=dt, **kw)
            return str(x.grad.dtype)
        return f
    run(assign(mod.float64))  # the default: the tensor's own dtype
    run(assign(mod.int64))
    x.grad_dtype = None
    run(lambda: x.grad_dtype)
    run(assign(mod.float64))  # None: any dtype

    def set_dt(dt):
        def f():
            x.grad_dtype = dt
            return str(x.grad_dtype)
        return f
    run(set_dt(mod.float16))  # a gradient of another dtype is there
    x.grad = None
    run(set_dt(mod.float16))
    (x * 3).sum().backward()  # backward casts what it accumulates
    run(lambda: (str(x.grad.dtype), x.grad.tolist()))
    (x * 3).sum().backward()
    run(lambda: (str(x.grad.dtype), x.grad.tolist()))
    z = mod.zeros(2, **kw)  # a leaf that does not require grad has one too
    run(lambda: str(z.grad_dtype))
    return seen


def test_grad_dtype_is_torchs(device):
    assert _grad_dtype_story(pygpu, device) == _grad_dtype_story(torch, device)


# ---- module_load through load_state_dict -------------------------------------------------

def _load_story(mod, future, device, swap, assign):
    """What a program sees after load_state_dict: whether the parameter object it held is
    still the module's, and its values once the state's tensor is written (assign=True
    shares that tensor's memory). torch refuses to swap a tensor a view still refers to."""
    kw = {} if mod is torch else {"device": device}
    mod.manual_seed(0)
    lin = mod.nn.Linear(3, 2)
    if mod is pygpu:
        lin = lin.to(device)
    weight = lin.weight
    state = {"weight": mod.arange(6.0, **kw).reshape(2, 3), "bias": mod.ones(2, **kw)}
    future.set_swap_module_params_on_conversion(swap)
    try:
        lin.load_state_dict(state, assign=assign)
    finally:
        future.set_swap_module_params_on_conversion(False)
    with mod.no_grad():
        state["weight"].add_(100)
    return (lin.weight is weight, isinstance(lin.weight, mod.nn.Parameter),
            lin.weight.requires_grad, lin.weight.tolist())


# (no swap, assign=True) is left out: there pygpu keeps the Parameter object on purpose
# (Module.load_state_dict's docstring), where PyTorch makes a new one
@pytest.mark.parametrize("swap, assign", [(False, False), (True, False), (True, True)])
def test_load_state_dict_through_module_load_is_torchs(swap, assign, device):
    import torch.__future__
    from pygpu import __future__ as future
    assert _load_story(pygpu, future, device, swap, assign) == \
        _load_story(torch, torch.__future__, device, swap, assign)


def test_swap_tensors_trades_contents(device):
    a = pygpu.tensor([1.0, 2.0], device=device, requires_grad=True)
    b = pygpu.tensor([3.0, 4.0, 5.0], device=device)
    pygpu.utils.swap_tensors(a, b)
    assert a.tolist() == [3.0, 4.0, 5.0] and not a.requires_grad
    assert b.tolist() == [1.0, 2.0] and b.requires_grad
    ta, tb = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0, 5.0])
    torch.utils.swap_tensors(ta, tb)
    assert (ta.tolist(), ta.requires_grad, tb.tolist(), tb.requires_grad) == \
        (a.tolist(), a.requires_grad, b.tolist(), b.requires_grad)


# ---- is_inference ------------------------------------------------------------------------

def _inference_story(mod, device):
    """Which tensors are inference tensors, and what each write and use of one gives."""
    kw = {} if mod is torch else {"device": device}

    def run(fn):
        try:
            r = fn()
            return r.tolist() if hasattr(r, "tolist") else r
        except RuntimeError as e:
            return f"RuntimeError: {e}"
    seen = []
    n = mod.ones(3, **kw)
    w = mod.ones(3, requires_grad=True, **kw)
    with mod.inference_mode():
        i = mod.ones(3, **kw)
        made = {"view of normal": n.view(-1), "op result": i * 2, "op on normal": n + 1,
                "clone of normal": n.clone(), "slice": i[1:]}
        seen.append(run(lambda: i.add_(1)))  # inside: allowed, on both kinds
        seen.append(run(lambda: n.add_(0)))
        seen.append(mod.is_inference_mode_enabled())
    seen.append([t.is_inference() for t in (n, i, *made.values())])
    seen.append([mod.is_inference(i[0:2]), i.view(-1).is_inference(), i.detach().is_inference()])

    def setitem():
        i[0] = 5.0
    for write in (lambda: i.add_(1), lambda: i.copy_(n), setitem, lambda: i.zero_(),
                  lambda: i.fill_(2), lambda: made["slice"].mul_(2), lambda: i.mul_(w)):
        seen.append(run(write))
    # (torch runs a refused view's in-place kernel before its autograd layer refuses it, so
    # i's values are not compared after the writes above; a fresh inference tensor is)
    with mod.inference_mode():
        k = mod.full((3,), 2.0, **kw)
    seen.append(run(lambda: (k * w).sum()))  # mul saves k for w's gradient
    seen.append(run(lambda: (k + w).sum()))  # add saves nothing
    seen.append(run(lambda: (k.clone() * w).sum()))
    seen.append(run(lambda: k + 1))
    with mod.inference_mode(False):
        seen.append((mod.is_inference_mode_enabled(), mod.ones(1, **kw).is_inference()))
    with mod.inference_mode():
        with mod.inference_mode(False):
            seen.append((mod.is_inference_mode_enabled(), mod.ones(1, **kw).is_inference(),
                         mod.is_grad_enabled()))
    seen.append(mod.is_inference_mode_enabled())
    return seen


def test_inference_tensors_are_torchs(device):
    assert _inference_story(pygpu, device) == _inference_story(torch, device)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        pygpu.is_inference(3)
