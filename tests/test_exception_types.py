# test_exception_types.py - PyTorch's exception types, case by case against torch (issue 43,
# item 6): RuntimeError for shape, dtype, device and view errors, IndexError for indices out
# of range (on every device: an index tensor's values live on the device, so sim and cuda
# raise at the next read, as pygpu.AsyncIndexError), TypeError for arguments of the wrong
# kind. pygpu's classes subclass both PyTorch's type and the one pygpu raised before
# (ShapeError is a ValueError, DTypeError a TypeError, ...), so both `except` clauses work;
# where PyTorch has the case, the message carries PyTorch's words.
import numpy as np
import pytest
import torch

import pygpu


def _raised(fn):
    try:
        fn()
    except Exception as e:  # compared below
        return e
    return None


CASES = [  # (id, call(lib), a fragment of PyTorch's message both must contain, or None)
    ("broadcast", lambda m: m.ones(2, 3) + m.ones(4),
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("matmul_inner", lambda m: m.ones(2, 3) @ m.ones(4, 5),
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("matmul_batch", lambda m: m.ones(2, 3, 4) @ m.ones(3, 4, 5),
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    ("matmul_0d", lambda m: m.ones(()) @ m.ones(3),
     "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    ("dot_sizes", lambda m: m.matmul(m.ones(3), m.ones(4)),
     "inconsistent tensor size, expected tensor [3] and src [4]"),
    ("view_stride", lambda m: m.ones(2, 3).transpose(0, 1).view(6),
     "view size is not compatible with input tensor's size and stride"),
    ("view_size", lambda m: m.ones(2, 3).view(5), None),
    ("reshape_size", lambda m: m.ones(2, 3).reshape(5),
     "shape '[5]' is invalid for input of size 6"),
    ("reshape_infer", lambda m: m.ones(6).reshape(-1, 4),
     "shape '[-1, 4]' is invalid for input of size 6"),
    ("reshape_two_unknowns", lambda m: m.ones(6).reshape(-1, -1),
     "only one dimension can be inferred"),
    ("bool_of_many", lambda m: bool(m.ones(2)),
     "Boolean value of Tensor with more than one value is ambiguous"),
    ("as_strided_lengths", lambda m: m.ones(6).as_strided((2, 3), (3,)),
     "mismatch in length of strides and shape"),
    ("grad_of_another_size", lambda m: setattr(m.ones(3, requires_grad=True), "grad", m.ones(4)),
     "attempting to assign a gradient of size '[4]' to a tensor of size '[3]'"),
    ("cat_sizes", lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]),
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for "
     "tensor number 1 in the list"),
    ("cat_empty", lambda m: m.cat([]), "expected a non-empty list of Tensors"),
    ("cat_0d", lambda m: m.cat([m.ones(()), m.ones(())]),
     "zero-dimensional tensor (at position 0) cannot be concatenated"),
    ("stack_sizes", lambda m: m.stack([m.ones(2), m.ones(3)]), "stack expects each tensor"),
    ("expand", lambda m: m.ones(2, 3).expand(4, 3), None),
    ("where_shapes", lambda m: m.where(m.ones(2, dtype=m.bool), m.ones(3), m.ones(2)), None),
    ("setitem_shape", lambda m: m.ones(3).__setitem__(slice(None), m.ones(4)), None),
    ("copy_shape", lambda m: m.zeros(3).copy_(m.ones(4)), None),
    ("masked_fill_shape", lambda m: m.ones(3).masked_fill(m.ones(4, dtype=m.bool), 0.0), None),
    ("negative_size", lambda m: m.zeros(-1), None),
    ("arange_step", lambda m: m.arange(0, 10, 0), "step must be nonzero"),
    ("item_of_many", lambda m: m.ones(3).item(), None),
    ("bool_subtract", lambda m: m.ones(3, dtype=m.bool) - m.ones(3, dtype=m.bool), None),
    ("int_add_float_in_place", lambda m: m.ones(3, dtype=m.int64).add_(m.ones(3) * 0.5),
     "can't be cast to the desired output type"),
    ("uniform_range", lambda m: m.ones(3).uniform_(1.0, 0.0), "uniform_ expects to return"),
    ("normal_std", lambda m: m.ones(3).normal_(0.0, -1.0), "normal expects std >= 0.0"),
    ("bmm_rank", lambda m: m.bmm(m.ones(3, 3), m.ones(3, 3, 3)), "batch1 must be a 3D tensor"),
    ("einsum_sizes", lambda m: m.einsum("ij,jk->ik", m.ones(2, 3), m.ones(4, 5)),
     "einsum(): subscript j has size 4 for operand 1 which does not broadcast"),
    ("numpy_requires_grad", lambda m: m.ones(3, requires_grad=True).numpy(),
     "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."),
    ("backward_non_scalar", lambda m: m.ones(3, requires_grad=True).mul(2).backward(),
     "grad can be implicitly created only for scalar outputs"),
    ("leaf_in_place", lambda m: m.ones(3, requires_grad=True).add_(1),
     "a leaf Variable that requires grad is being used in an in-place operation"),
    ("narrow", lambda m: m.ones(3).narrow(0, 2, 5), "start (2) + length (5) exceeds dimension"),
    ("embedding_weight_rank", lambda m: m.nn.functional.embedding(m.tensor([0]), m.ones(4)),
     "'weight' must be 2-D"),
    ("embedding_float_indices",
     lambda m: m.nn.functional.embedding(m.tensor([1.0]), m.ones(4, 2)),
     "Expected tensor for argument #1 'indices' to have one of the following scalar types"),
    ("linear_shapes", lambda m: m.nn.functional.linear(m.ones(2, 3), m.ones(4, 5)), None),
    ("conv_channels", lambda m: m.nn.functional.conv2d(m.ones(1, 3, 5, 5), m.ones(2, 4, 3, 3)),
     "Given groups=1, weight of size [2, 4, 3, 3], expected input[1, 3, 5, 5]"),
    # IndexError
    ("index_int", lambda m: m.ones(3)[5], "index 5 is out of bounds for dimension 0 with size 3"),
    ("index_list", lambda m: m.ones(3)[[5]], "index 5 is out of bounds for dimension 0 with size 3"),
    ("index_tensor", lambda m: m.ones(3)[m.tensor([5])], None),
    ("index_select", lambda m: m.ones(3).index_select(0, m.tensor([5])),
     "index out of range in self"),
    ("index_add_", lambda m: m.zeros(3).index_add_(0, m.tensor([5]), m.ones(1)),
     "index out of range in self"),
    ("embedding_index", lambda m: m.nn.functional.embedding(m.tensor([5]), m.ones(4, 2)),
     "index out of range in self"),
    ("embedding_negative", lambda m: m.nn.Embedding(4, 2)(m.tensor([-1])),
     "index out of range in self"),
    ("dim_out_of_range", lambda m: m.ones(3).sum(5), None),
    ("transpose_dim", lambda m: m.ones(3).transpose(0, 3), None),
    ("float_index", lambda m: m.ones(3)[m.tensor([0.5])],
     "tensors used as indices must be long"),
    ("cross_entropy_target", lambda m: m.nn.functional.cross_entropy(m.ones(2, 3),
                                                                      m.tensor([0, 5])), None),
    # gather and scatter: PyTorch raises RuntimeError, pygpu an IndexOutOfRangeError (both)
    ("gather_index", lambda m: m.ones(3).gather(0, m.tensor([5])),
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("scatter_index", lambda m: m.zeros(3).scatter_(0, m.tensor([5]), m.ones(1)),
     "index 5 is out of bounds for dimension 0 with size 3"),
    # TypeError
    ("exp_of_str", lambda m: m.exp("x"), None),
    ("add_str", lambda m: m.ones(3) + "x", None),
    ("reshape_str", lambda m: m.ones(4).reshape("a"), None),
    ("sum_str", lambda m: m.ones(3).sum("a"), None),
    ("zeros_str", lambda m: m.zeros("a"), None),
    ("einsum_operand", lambda m: m.einsum("ij,jk->ik", m.ones(2, 3), "x"), None),
]


@pytest.mark.parametrize("call,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_exception_type_is_pytorchs(call, fragment):
    theirs, ours = _raised(lambda: call(torch)), _raised(lambda: call(pygpu))
    assert theirs is not None, "torch accepts this case: it does not belong here"
    assert ours is not None, f"pygpu accepted what torch refuses with {theirs!r}"
    assert isinstance(ours, type(theirs)), (f"torch raises {type(theirs).__name__}, pygpu "
                                            f"{type(ours).__mro__}")
    if fragment is not None:
        assert fragment in str(theirs), f"torch's words changed: {theirs}"
        assert fragment in str(ours), f"pygpu's message lacks PyTorch's words: {ours}"


def test_the_classes_keep_the_old_types_too():
    assert issubclass(pygpu.ShapeError, ValueError) and issubclass(pygpu.ShapeError, RuntimeError)
    assert issubclass(pygpu.DTypeError, TypeError) and issubclass(pygpu.DTypeError, RuntimeError)
    assert issubclass(pygpu.InvalidValueError, ValueError)
    assert issubclass(pygpu.InvalidValueError, RuntimeError)
    assert issubclass(pygpu.IndexOutOfRangeError, IndexError)
    assert issubclass(pygpu.AsyncIndexError, pygpu.AsyncOpError)
    assert issubclass(pygpu.AsyncIndexError, IndexError)
    with pytest.raises(ValueError):  # code written for pygpu's earlier types keeps working
        pygpu.ones(2, 3) + pygpu.ones(4)
    with pytest.raises(TypeError):
        pygpu.ones(3, dtype=pygpu.bool) - pygpu.ones(3, dtype=pygpu.bool)


@pytest.mark.parametrize("what", ["index_select", "gather", "embedding", "getitem"])
def test_an_index_out_of_range_is_an_index_error_on_every_device(device, what):
    """On an asynchronous device the index values are read by the kernel: the IndexError
    (pygpu.AsyncIndexError on sim and cuda) comes at the next read of the result or the next
    synchronize, as PyTorch's CUDA error does, and the device keeps working."""
    x = pygpu.ones(4, 2, device=device)
    idx = pygpu.tensor([1, 7], device=device)
    ops = {"index_select": lambda: x.index_select(0, idx),
           "gather": lambda: x.gather(0, pygpu.tensor([[1, 0], [7, 0]], device=device)),
           "embedding": lambda: pygpu.nn.functional.embedding(idx, x),
           "getitem": lambda: x[idx]}
    with pytest.raises(IndexError, match="out of (range|bounds)"):
        out = ops[what]()
        (out * 2.0).sum().item()  # the read (a later op inherits the failure)
    pygpu.synchronize()  # delivered once: nothing left to raise
    assert x.sum().item() == 8.0


def test_a_pending_index_failure_raises_at_synchronize():
    x = pygpu.ones(4, 2, device="sim:0")
    x.index_select(0, pygpu.tensor([9], device="sim:0"))  # never read
    with pytest.raises(pygpu.AsyncIndexError, match="index 9 is out of bounds"):
        pygpu.synchronize()


def test_numpy_force_reads_a_tensor_that_requires_grad(device):
    t = pygpu.tensor([1.0, 2.0], device=device).requires_grad_()
    np.testing.assert_array_equal(t.numpy(force=True), [1.0, 2.0])
    np.testing.assert_array_equal(t.detach().numpy(), [1.0, 2.0])
    with pytest.raises(TypeError):
        t.numpy(True)  # force is keyword-only, as PyTorch's
