# test_version_counter.py - in-place ops under autograd (pygpu/autograd/inplace.py) and the
# version counter check (pygpu/autograd/versions.py): an in-place op on a non-leaf becomes
# its new grad_fn with the gradients PyTorch gives; a tensor backward saved and that was
# written since fails that backward with PyTorch's message and version numbers; a leaf that
# requires grad is refused; what pygpu refuses instead of rebasing views. Each case runs on
# every device and, where PyTorch is installed, against torch.
import numpy as np
import pytest

import pygpu

from _helpers import to_device

X = np.array([0.5, -1.0, 2.0])
W = np.array([1.5, 0.25, -0.5])

VERSION_ERROR = (r"one of the variables needed for gradient computation has been modified by "
                 r"an inplace operation: \[torch\.[\w.]*Tensor \[3\]\].* is at version {now}; "
                 r"expected version {then} instead")


def _leaves(lib, device=None):
    if lib is pygpu:
        return (to_device(X, device).requires_grad_(), to_device(W, device).requires_grad_())
    return (lib.tensor(X, requires_grad=True), lib.tensor(W, requires_grad=True))


# each program uses only what pygpu and torch share (x, w: float64 leaves requiring grad)
PROGRAMS = {
    "add_scalar": lambda lib, x, w: (x * 2).add_(1),
    "add_tensor": lambda lib, x, w: (x * 2).add_(w),
    "add_alpha": lambda lib, x, w: (x * 2).add_(w, alpha=3.0),
    "sub_": lambda lib, x, w: (x + 0).sub_(w),
    "mul_tensor": lambda lib, x, w: (x * 2).mul_(w),
    "mul_self": lambda lib, x, w: (x * 1).mul_(x),
    "div_tensor": lambda lib, x, w: (x * 2).div_(w),
    "pow_scalar": lambda lib, x, w: (x * 1).pow_(2),
    "exp_": lambda lib, x, w: (x * 0.5).exp_(),
    "chain": lambda lib, x, w: (x * w).add_(1).sub_(x).mul_(w).tanh_(),
    "sigmoid_relu": lambda lib, x, w: (x + w).mul_(2).sigmoid_() + (x * w).relu_(),
    "plain_target": lambda lib, x, w: lib.ones_like(w).mul_(w).add_(x),
    "earlier_use_kept": lambda lib, x, w: _earlier_use(x, w),
}


def _earlier_use(x, w):
    y = x * 2
    z = y + w          # z's node saw y before the write: z keeps that history
    y.mul_(3)
    return z * 1.0 + y


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inplace_gradients_match_pytorch(device, name):
    torch = pytest.importorskip("torch")
    x, w = _leaves(pygpu, device)
    out = PROGRAMS[name](pygpu, x, w)
    out.sum().backward()
    tx, tw = _leaves(torch)
    tout = PROGRAMS[name](torch, tx, tw)
    tout.sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12)
    for mine, ref in ((x, tx), (w, tw)):
        if ref.grad is None:
            assert mine.grad is None
        else:
            np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=1e-12)


def test_inplace_becomes_the_grad_fn(device):
    x, _ = _leaves(pygpu, device)
    y = x * 2
    mul = y.grad_fn
    assert y.add_(1) is y
    assert y.grad_fn is not mul and not y.is_leaf and y.requires_grad
    assert y.grad_fn.next_functions[0][0] is mul  # PyTorch's (fn, index) pairs


def _saved_then_written(lib, x, w):
    y = x.exp()        # exp's backward reads its output
    y.add_(1)
    return y


def _input_written_under_no_grad(lib, x, w):
    y = x * w          # mul's backward reads both operands
    with lib.no_grad():
        w.mul_(2)      # an optimizer step between forward and backward
    return y


def _written_twice(lib, x, w):
    h = x * 1
    y = h * w          # saves h
    h.add_(1)
    h.add_(1)
    return y


@pytest.mark.parametrize("program,now,then", [
    (_saved_then_written, 1, 0), (_input_written_under_no_grad, 1, 0), (_written_twice, 2, 0),
])
def test_backward_refuses_a_modified_saved_tensor_with_pytorchs_message(device, program, now,
                                                                          then):
    pattern = VERSION_ERROR.format(now=now, then=then)
    x, w = _leaves(pygpu, device)
    y = program(pygpu, x, w)
    with pytest.raises(RuntimeError, match=pattern):
        y.sum().backward()
    torch = pytest.importorskip("torch")
    tx, tw = _leaves(torch)
    ty = program(torch, tx.float(), tw.detach().float().requires_grad_())
    with pytest.raises(RuntimeError, match=pattern):
        ty.sum().backward()


def test_version_count_follows_pytorchs_version(device):
    torch = pytest.importorskip("torch")
    for lib in (pygpu, torch):
        y = to_device(X, device) * 2 if lib is pygpu else torch.tensor(X) * 2
        seen = [y._version]
        y.add_(1)
        v = y[1:]
        v.mul_(2)       # a view shares the counter
        y.exp_()
        seen += [y._version,
                 v._version]
        if lib is pygpu:
            mine = seen
    assert mine == seen == [0, 3, 3]


def test_inplace_on_a_leaf_that_requires_grad_is_refused(device):
    x, w = _leaves(pygpu, device)
    for call in (lambda: x.add_(1), lambda: x.mul_(w), lambda: x.sigmoid_(),
                 lambda: x.copy_(w), lambda: x.__setitem__(0, 1.0)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation."):
            call()


# ---- views: a write through a view rebases its base (PyTorch's CopySlices) ----------------

def _view_then_written(lib, x, w):
    y = x * 2
    y[1:].mul_(w[1:])          # the view's write becomes y's history
    return y


def _base_written_then_view_used(lib, x, w):
    y = x * 2
    v = y[1:]
    y.mul_(w)                  # the view made before sees the write (regenerated history)
    return v * w[1:] + y[:2].sum()


def _view_of_plain_base(lib, x, w):
    out = lib.zeros(2, 3, dtype=x.dtype) if lib is not pygpu else \
        pygpu.zeros((2, 3), dtype=x.dtype, device=x.device)
    row = out[1]
    row.copy_(x * w)           # a view of a tensor with no history: out gets one
    out[0, 1:].add_(w[1:])
    return out * out


def _view_made_before_base_had_history(lib, x, w):
    out = lib.zeros(3, dtype=x.dtype) if lib is not pygpu else \
        pygpu.zeros(3, dtype=x.dtype, device=x.device)
    v = out[:2]
    out[1:] = x[1:] * w[1:]    # out gains a history after v was made
    return v * x[:2]


def _chained_views(lib, x, w):
    y = (x * w).reshape(3, 1) * 1.0
    y.t()[0, 1:].exp_()        # a view of a view, written: the root base is rebased
    return y.sum(1) * x


def _inplace_ops_on_views(lib, x, w):
    y = x.exp()
    y = y * 1                  # (exp's backward reads its output, which is written below)
    y[:2].sigmoid_()
    y = y * 1
    y[1:] += w[1:] * x[1:]
    y[0] = w[0] * 3
    return y * w


VIEW_PROGRAMS = {f.__name__[1:]: f for f in (
    _view_then_written, _base_written_then_view_used, _view_of_plain_base,
    _view_made_before_base_had_history, _chained_views, _inplace_ops_on_views)}


@pytest.mark.parametrize("name", sorted(VIEW_PROGRAMS))
def test_writes_through_views_match_pytorch(device, name):
    torch = pytest.importorskip("torch")
    x, w = _leaves(pygpu, device)
    out = VIEW_PROGRAMS[name](pygpu, x, w)
    out.sum().backward()
    tx, tw = _leaves(torch)
    tout = VIEW_PROGRAMS[name](torch, tx, tw)
    tout.sum().backward()
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-12)
    for mine, ref in ((x, tx), (w, tw)):
        if ref.grad is None:
            assert mine.grad is None
        else:
            np.testing.assert_allclose(mine.grad.cpu().numpy(), ref.grad.numpy(), rtol=1e-12)


def test_view_bases_and_grad_fns_follow_pytorch(device):
    torch = pytest.importorskip("torch")
    for lib in (pygpu, torch):
        x = (to_device(X, device) if lib is pygpu else torch.tensor(X)).requires_grad_()
        out = lib.zeros(2, 3, dtype=x.dtype) if lib is torch else \
            pygpu.zeros((2, 3), dtype=x.dtype, device=device)
        row = out[0]
        assert row._base is out and out._base is None and x._base is None
        assert row[1:]._base is out  # the root, not the intermediate view
        assert not row.requires_grad
        out[1] = x
        names = [type(out.grad_fn).__name__ if lib is torch else repr(out.grad_fn)]
        assert row.requires_grad  # a view of a base that now requires grad does too
        assert row.grad_fn is not None or lib is pygpu  # (torch regenerates it on access)
        row.copy_(x * 2)
        names.append(type(out.grad_fn).__name__ if lib is torch else repr(out.grad_fn))
        if lib is pygpu:
            mine = names
        else:
            theirs = names
    assert mine[0].startswith("<CopySlices") and theirs[0] == "CopySlices"
    assert mine[1].startswith("<CopySlices") and theirs[1] == "CopySlices"


def test_pytorchs_refusals_for_leaves_and_their_views(device):
    torch = pytest.importorskip("torch")
    for lib in (pygpu, torch):
        x, w = _leaves(lib, device) if lib is pygpu else _leaves(torch)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad "
                                               "is being used in an in-place operation."):
            x[1:].mul_(2)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad "
                                               "is being used in an in-place operation."):
            x[:2].copy_(w[:2])
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation."):
            x.clamp_(0, 1)


def test_clamp_on_a_non_leaf_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    x, w = _leaves(pygpu, device)
    y = x * w
    y.clamp_(-0.4, 0.3)
    (y * x).sum().backward()
    tx, tw = _leaves(torch)
    ty = tx * tw
    ty.clamp_(-0.4, 0.3)
    (ty * tx).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-12)


def _versions(lib, device):
    t = to_device(X, device) if lib is pygpu else torch_tensor(lib, X)
    seen = [t._version]
    t[0] = 5.0
    seen.append(t._version)
    t[1:].copy_(t[:2] * 1)
    seen.append(t._version)
    v = t.view(3)
    v.fill_(1.0)
    seen += [t._version, v._version]
    with lib.no_grad():
        t.mul_(2)
    seen.append(t._version)
    t.masked_fill_(t > 1, 0.5)
    seen.append(t._version)
    d = t.detach()
    d.add_(1)
    seen += [t._version, d._version]
    fresh = t + 1
    seen.append(fresh._version)
    return seen


def torch_tensor(torch, a):
    return torch.tensor(a)


def test_version_counter_values_match_pytorch(device):
    torch = pytest.importorskip("torch")
    assert _versions(pygpu, device) == _versions(torch, device)


def test_version_error_names_the_tensor_and_versions_as_pytorch(device):
    torch = pytest.importorskip("torch")
    msgs = []
    for lib in (pygpu, torch):
        x, w = _leaves(lib, device) if lib is pygpu else _leaves(torch)
        y = x.sigmoid()        # its backward reads y
        z = y * 3
        y[0] = 1.0             # version 1
        y.add_(1)              # version 2
        with pytest.raises(RuntimeError) as err:
            z.sum().backward() if False else (y.sum() + z.sum()).backward()
        msgs.append(str(err.value))
    for m in msgs:
        assert "is at version 2; expected version 0 instead" in m
        assert "which is output 0 of Sigmoid," in m


def test_saved_view_written_through_its_base_fails_as_pytorch(device):
    torch = pytest.importorskip("torch")
    pattern = VERSION_ERROR.format(now=1, then=0).replace(r"\[3\]", r"\[2\]")
    for lib in (pygpu, torch):
        x, w = _leaves(lib, device) if lib is pygpu else _leaves(torch)
        y = x * 1
        v = y[1:]
        z = v * w[1:]          # saves v (for w's gradient)
        y.mul_(2)              # writes v's memory
        with pytest.raises(RuntimeError, match=pattern):
            z.sum().backward()


def test_no_check_without_autograd(device):
    y = to_device(X, device)
    y.add_(1).mul_(y)
    np.testing.assert_allclose(y.numpy(), (X + 1) ** 2)
