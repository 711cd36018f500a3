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
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
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
        seen = [y._version_count if lib is pygpu else y._version]
        y.add_(1)
        v = y[1:]
        v.mul_(2)       # a view shares the counter
        y.exp_()
        seen += [y._version_count if lib is pygpu else y._version,
                 v._version_count if lib is pygpu else v._version]
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


def test_what_pygpu_refuses_instead_of_rebasing_views(device):
    x, w = _leaves(pygpu, device)
    y = x * 2
    v = y[1:]
    with pytest.raises(RuntimeError, match="view .*clone"):
        v.add_(1)                 # would need y's history rebased (PyTorch's CopySlices)
    base = to_device(np.zeros(3), device)
    part = base[1:]
    with pytest.raises(RuntimeError, match="shares its memory"):
        part.mul_(w[1:])          # base would miss w's gradient
    y.mul_(2)                     # writing the base after the view was made
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        v.sum().backward()        # v's history is stale: refused, not wrong
    y.sum().backward()            # y's own history is right
    np.testing.assert_allclose(x.grad.numpy(), 4.0)
    h = x * 2
    with pytest.raises(RuntimeError, match="clamp_: pygpu records no gradient"):
        h.clamp_(0, 1)


def test_no_check_without_autograd(device):
    y = to_device(X, device)
    y.add_(1).mul_(y)
    np.testing.assert_allclose(y.numpy(), (X + 1) ** 2)
