# test_autograd_writes.py - indexed and masked writes of values that require grad
# (pygpu/autograd/writes.py): item assignment with ints, slices, index tensors and masks,
# index_put_ (accumulating too), masked_fill_ with a 0-d tensor value, masked_scatter_,
# copy_ into a slice, index_copy_/index_add_/scatter_/scatter_add_ with a source that
# requires grad; the seq2seq reproducer of issue 43 (out[t] = decoder_output in a loop); and
# the gradients of these writes to second order. Every case against torch, on every device.
import numpy as np
import pytest

import pygpu

from _helpers import to_device

A = np.random.default_rng(3).standard_normal((3, 4))
B = np.random.default_rng(4).standard_normal((4,))


def _leaves(lib, device):
    if lib is pygpu:
        return to_device(A, device).requires_grad_(), to_device(B, device).requires_grad_()
    return lib.tensor(A, requires_grad=True), lib.tensor(B, requires_grad=True)


def _zeros(lib, shape, like):
    if lib is pygpu:
        return pygpu.zeros(shape, dtype=like.dtype, device=like.device)
    return lib.zeros(shape, dtype=like.dtype)


def _idx(lib, values, like):
    t = lib.tensor(np.array(values))
    return t.to(like.device) if lib is pygpu else t


def _setitem_basic(lib, x, w):
    out = _zeros(lib, (3, 4), x)
    out[0] = w * 2
    out[1:, 1:3] = x[1:, :2] * x[1:, 2:]
    out[2, 3] = w[0] * w[1]
    return out


def _setitem_index_tensor(lib, x, w):
    out = x * 1
    out[_idx(lib, [2, 0], x)] = w
    out[:, _idx(lib, [1, 3], x)] = x[:, :2].exp()
    return out


def _setitem_mask(lib, x, w):
    out = x * 1
    out[x > 0] = 0.0
    out[out == 0] = (w * w).sum()
    return out


def _index_put(lib, x, w):
    out = _zeros(lib, (3, 4), x)
    out.index_put_((_idx(lib, [0, 2], x), _idx(lib, [1, 1], x)), w[:2] * 3)
    out.index_put_((_idx(lib, [1, 1, 2], x),), x[0] * w, accumulate=True)
    return out * x


def _masked_fill_value_tensor(lib, x, w):
    out = x * 2
    out.masked_fill_(x < 0, w[0] * w[1])
    return out


def _masked_scatter(lib, x, w):
    out = x * 1
    out.masked_scatter_(x > 0.2, (w * 3).repeat(3))
    return out * out


def _copy_into_slice(lib, x, w):
    out = _zeros(lib, (2, 3, 4), x)
    out[1].copy_(x * w)
    out[0, :, 1:].copy_(x[:, :3])
    return out.sum(0)


def _index_copy_add(lib, x, w):
    out = x * 1
    out.index_copy_(1, _idx(lib, [3, 0], x), x[:, 1:3] * 2)
    out.index_add_(0, _idx(lib, [2, 2], x), (w * w).reshape(1, 4).repeat(2, 1), alpha=0.5)
    return out


def _scatter_writes(lib, x, w):
    out = _zeros(lib, (3, 4), x)
    out.scatter_(1, _idx(lib, [[0, 2], [1, 3], [3, 0]], x), x[:, :2] * 5)
    out.scatter_add_(0, _idx(lib, [[0, 1, 2, 0]], x), w.reshape(1, 4))
    return out * x


def _seq2seq_reproducer(lib, x, w):
    """Issue 43: outputs = torch.zeros(T, B, V); outputs[t] = decoder_output in a loop."""
    T, V = 4, 4
    out = _zeros(lib, (T, 3, V), x)
    h = x
    for t in range(T):
        h = (h * w).tanh() + x * 0.1
        out[t] = h
    return out.reshape(T * 3, V) @ w


PROGRAMS = {f.__name__[1:]: f for f in (
    _setitem_basic, _setitem_index_tensor, _setitem_mask, _index_put, _masked_fill_value_tensor,
    _masked_scatter, _copy_into_slice, _index_copy_add, _scatter_writes, _seq2seq_reproducer)}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_write_gradients_match_pytorch(device, name):
    torch = pytest.importorskip("torch")
    x, w = _leaves(pygpu, device)
    out = PROGRAMS[name](pygpu, x, w)
    proj = np.random.default_rng(5).standard_normal(tuple(out.shape))
    (out * to_device(proj, device)).sum().backward()
    tx, tw = _leaves(torch, None)
    tout = PROGRAMS[name](torch, tx, tw)
    (tout * torch.tensor(proj)).sum().backward()
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    for mine, ref in ((x, tx), (w, tw)):
        if ref.grad is None:
            assert mine.grad is None
        else:
            np.testing.assert_allclose(mine.grad.cpu().numpy(), ref.grad.numpy(), rtol=1e-11,
                                       atol=1e-13)


@pytest.mark.parametrize("name", ["setitem_basic", "setitem_index_tensor", "index_put",
                                  "masked_scatter", "copy_into_slice", "scatter_writes"])
def test_writes_have_second_derivatives(device, name):
    x, w = _leaves(pygpu, device)
    assert pygpu.autograd.gradgradcheck(lambda a, b: PROGRAMS[name](pygpu, a, b), (x, w))


def test_write_grad_fn_names_match_pytorch(device):
    torch = pytest.importorskip("torch")
    names = {}
    for lib in (pygpu, torch):
        x, w = _leaves(lib, device if lib is pygpu else None)
        seen = []
        for write in (lambda o: o.__setitem__(0, w), lambda o: o.__setitem__(
                _idx(lib, [1], x), w), lambda o: o.copy_(x), lambda o: o.masked_fill_(x > 0, 1.0),
                lambda o: o.index_put_((_idx(lib, [0], x),), w)):
            o = x * 1
            write(o)
            seen.append(type(o.grad_fn).__name__ if lib is torch else
                        repr(o.grad_fn).split()[0][1:])
        names[lib.__name__] = seen
    assert names["pygpu"] == names["torch"]


def test_writes_into_a_leaf_that_requires_grad_are_refused(device):
    x, w = _leaves(pygpu, device)
    for write in (lambda: x.__setitem__(0, w), lambda: x.copy_(x * 2),
                  lambda: x.masked_fill_(x > 0, 0.0), lambda: x.index_add_(0, _idx(
                      pygpu, [0], x), w.reshape(1, 4)),
                  lambda: x.masked_scatter_(x > 0, w.repeat(3))):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation."):
            write()


def test_writes_without_autograd_stay_plain(device):
    out = to_device(np.zeros((2, 3)), device)
    out[0] = to_device(np.ones(3), device)
    out.masked_scatter_(out == 0, to_device(np.arange(6.0), device))
    assert out.grad_fn is None and not out.requires_grad
    np.testing.assert_allclose(out.cpu().numpy(), [[1, 1, 1], [0, 1, 2]])
    with pygpu.no_grad():
        x = to_device(np.ones(3), device).requires_grad_()
        out[1] = x
    assert out.grad_fn is None
