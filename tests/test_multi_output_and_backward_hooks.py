# test_multi_output_and_backward_hooks.py - autograd Functions with several outputs, and a
# module's full backward hooks built on them, against torch: gradients (first and second
# order), outputs that get no gradient (zeros, or None after set_materialize_grads(False)),
# non-differentiable outputs, an input returned as an output, gradcheck; hooks' grad_input
# and grad_output, replacements, the no-input-requires-grad case, a checkpointed function
# with two outputs.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

X0 = np.random.default_rng(0).standard_normal(5)


def _sincos(lib, materialize=True):
    class SinCos(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.set_materialize_grads(materialize)
            s, c = lib.sin(x) * w, lib.cos(x) * w
            ctx.save_for_backward(x, w, s)
            return s, c

        @staticmethod
        def backward(ctx, gs, gc):
            x, w, s = ctx.saved_tensors
            ctx.seen = (gs is None, gc is None)
            gs = lib.zeros_like(x) if gs is None else gs
            gc = lib.zeros_like(x) if gc is None else gc
            gx = gs * lib.cos(x) * w - gc * lib.sin(x) * w
            gw = (gs * lib.sin(x) + gc * lib.cos(x)).sum()
            return gx, gw
    return SinCos


def _run_sincos(lib):
    F = _sincos(lib)
    x = lib.tensor(X0, requires_grad=True)
    w = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
    s, c = F.apply(x, w)
    gx, gw = lib.autograd.grad((s * c).sum(), (x, w), create_graph=True)
    ggw = lib.autograd.grad(gx.sum(), w)[0]
    x2 = lib.tensor(X0, requires_grad=True)
    s2, _ = F.apply(x2, w)
    s2.sum().backward()  # the cosine output gets no gradient: zeros are passed
    return [s.detach().numpy(), gx.detach().numpy(), gw.detach().numpy(), ggw.numpy(),
            x2.grad.numpy()]


def test_two_outputs_first_and_second_order_equal_torch():
    for a, b in zip(_run_sincos(pygpu), _run_sincos(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_set_materialize_grads_false_passes_none():
    for lib in (pygpu, torch):
        F = _sincos(lib, materialize=False)
        x = lib.tensor(X0, requires_grad=True)
        s, c = F.apply(x, lib.tensor(1.0, dtype=lib.float64))
        c.sum().backward()
        assert s.grad_fn is not None and x.grad is not None
    assert pygpu.autograd.gradcheck(
        lambda x, w: sum(_sincos(pygpu).apply(x, w)),
        (pygpu.tensor(X0, requires_grad=True),
         pygpu.tensor(2.0, dtype=pygpu.float64, requires_grad=True)))


def test_non_differentiable_and_returned_input_outputs():
    for lib in (pygpu, torch):
        class MaxAndIndex(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = x.argmax()
                ctx.mark_non_differentiable(idx)
                ctx.save_for_backward(x, idx)
                return x.max(), idx, x

            @staticmethod
            def backward(ctx, g, g_idx, g_x):
                x, idx = ctx.saved_tensors
                out = lib.zeros_like(x)
                out[idx] = g
                return out + g_x

        x = lib.tensor([1.0, 5.0, 2.0], requires_grad=True)
        m, i, same = MaxAndIndex.apply(x)
        assert i.grad_fn is None and not i.requires_grad
        assert same is not x and same.grad_fn is not None
        (m * 3 + same.sum()).backward()
        assert x.grad.tolist() == [1.0, 4.0, 1.0]


def _hooked(lib):
    log = []
    m = lib.nn.Bilinear(3, 2, 2)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)),
                               dtype=lib.float32))
    m.register_full_backward_pre_hook(
        lambda mod, go: (go[0] * 2,))
    m.register_full_backward_hook(
        lambda mod, gi, go: log.append([None if g is None else np.round(g.numpy(), 5).tolist()
                                        for g in gi + go]))
    m.register_full_backward_hook(
        lambda mod, gi, go: (None if gi[0] is None else gi[0] + 1, gi[1]), prepend=True)
    a = lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    b = lib.tensor([[0.5, -1.0]])  # the second input needs no gradient
    m(a, b).sum().backward()
    log.append(np.round(a.grad.numpy(), 5).tolist())
    return log


def test_full_backward_hooks_equal_torch():
    assert _hooked(pygpu) == _hooked(torch)
    m = pygpu.nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        m(pygpu.ones(1, 2, requires_grad=True)).sum().backward()
    m2 = pygpu.nn.Linear(2, 2)
    seen = []
    h = m2.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        m2(pygpu.ones(1, 2)).sum().backward()
    assert seen == [(None,)]
    h.remove()
    m2(pygpu.ones(1, 2)).sum().backward()
    assert len(seen) == 1


def test_checkpoint_of_a_function_with_two_outputs():
    from pygpu.utils.checkpoint import checkpoint
    lin = pygpu.nn.Linear(3, 3)

    def two(x):
        h = lin(x)
        return h.tanh(), h.sigmoid()

    x = pygpu.randn(4, 3, requires_grad=True)
    a, b = checkpoint(two, x, use_reentrant=False)
    (a * b).sum().backward()
    g = x.grad.clone()
    x.grad = None
    a, b = two(x)
    (a * b).sum().backward()
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-7)
