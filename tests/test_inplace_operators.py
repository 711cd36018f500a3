# test_inplace_operators.py - x += y (and -=, *=, /=, **=, &=, |=, ^=) are in place, as in
# PyTorch: the same object and memory afterwards (a view's base sees the write), the dtype
# rules of add_ & co., and under autograd the same history as x.add_(y). Checked against
# torch where it is installed.
import operator

import numpy as np
import pytest

import pygpu

from _helpers import to_device

OPS = [("+=", operator.iadd), ("-=", operator.isub), ("*=", operator.imul),
       ("/=", operator.itruediv), ("**=", operator.ipow)]


@pytest.mark.parametrize("name,op", OPS)
@pytest.mark.parametrize("tensor_operand", [True, False])
def test_augmented_assignment_is_in_place(device, name, op, tensor_operand):
    base = to_device(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32), device)
    x = base[1:3]                                   # a view: the base must see the write
    storage = pygpu._C._same_storage
    other = to_device(np.array([2.0, 0.5], dtype=np.float32), device) if tensor_operand else 2.0
    y = op(x, other)
    assert y is x and storage(y, base)
    ref = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    view = ref[1:3]
    view[...] = op(view.copy(), other.numpy() if tensor_operand else 2.0)
    np.testing.assert_allclose(base.numpy(), ref, rtol=1e-6)
    torch = pytest.importorskip("torch")
    tb = torch.tensor([1.0, 2.0, 3.0, 4.0])
    tx = tb[1:3]
    ty = op(tx, torch.tensor([2.0, 0.5]) if tensor_operand else 2.0)
    assert ty is tx
    np.testing.assert_allclose(base.numpy(), tb.numpy(), rtol=1e-6)


def test_bitwise_augmented_assignment(device):
    m = to_device(np.array([True, False, True]), device)
    alias = m
    m &= to_device(np.array([True, True, False]), device)
    m |= to_device(np.array([False, True, False]), device)
    m ^= to_device(np.array([True, False, False]), device)
    assert m is alias
    assert m.tolist() == [False, True, False]


def test_augmented_assignment_keeps_self_dtype(device):
    torch = pytest.importorskip("torch")
    i = to_device(np.array([1, 2, 3]), device)
    i += 2
    assert i.dtype == pygpu.int64 and i.tolist() == [3, 4, 5]
    for lib_int in (i, torch.tensor([3, 4, 5])):
        with pytest.raises((TypeError, RuntimeError), match="can't be cast to the desired "
                                                            "output type"):
            lib_int /= 2                            # float result into an int64 tensor


def test_augmented_assignment_under_autograd_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    w0 = np.array([0.5, -1.5, 2.0])

    def program(w):
        h = w * 2
        h += w
        h *= w
        h -= 1.0
        h /= 3.0
        return h

    w = to_device(w0, device).requires_grad_()
    program(w).sum().backward()
    tw = torch.tensor(w0, requires_grad=True)
    program(tw).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w += 1


def test_other_right_operands_are_left_to_python(device):
    x = to_device(np.zeros(2), device)
    with pytest.raises(TypeError):
        x += [1, 2]
    alias = x
    x += np.float64(1.5)  # a NumPy float64 is a Python float: in place too
    assert x is alias
    np.testing.assert_allclose(x.numpy(), 1.5)
