# test_tensor_surface_views.py - PyTorch's view methods and tensor information on pygpu.
#
# Each view is checked three ways on every device: its values and shape against PyTorch
# (or NumPy where torch is absent), that it shares memory with its base (a write through
# the base is seen through the view and the reverse), and that making it moves no byte
# between host and device (pygpu.stats() counts no transfer on sim). Backward rules are
# checked against finite differences with tests/test_autograd.py's gradcheck. The dtype
# and info methods (dim, stride, element_size, float(), type(), ...) are compared with
# PyTorch's answers, including the errors.
import numpy as np
import pytest

import pygpu

from _helpers import to_device, to_numpy
from test_autograd import gradcheck

A = np.arange(24.0).reshape(2, 3, 4)

# name, pygpu/torch call (same spelling for both), view of a 2x3x4 tensor
VIEWS = [
    ("view", lambda t: t.view(6, 4)),
    ("view_minus1", lambda t: t.view(-1)),
    ("view_tuple", lambda t: t.view((4, -1))),
    ("view_as", lambda t: t.view_as(t.view(3, 8))),
    ("permute", lambda t: t.permute(2, 0, 1)),
    ("permute_tuple", lambda t: t.permute((1, 2, 0))),
    ("transpose_2", lambda t: t.transpose(0, 2)),
    ("transpose_neg", lambda t: t.transpose(-1, -2)),
    ("mT", lambda t: t.mT),
    ("unsqueeze0", lambda t: t.unsqueeze(0)),
    ("unsqueeze_end", lambda t: t.unsqueeze(-1)),
    ("unsqueeze_mid", lambda t: t.unsqueeze(2)),
    ("squeeze_none", lambda t: t.unsqueeze(1).squeeze()),
    ("squeeze_dim", lambda t: t.unsqueeze(1).squeeze(1)),
    ("squeeze_keeps_non1", lambda t: t.squeeze(0)),
    ("flatten", lambda t: t.flatten()),
    ("flatten_1", lambda t: t.flatten(1)),
    ("flatten_0_1", lambda t: t.flatten(0, 1)),
    ("unflatten", lambda t: t.unflatten(2, (2, 2))),
    ("unflatten_minus1", lambda t: t.unflatten(1, (-1, 1))),
    ("expand", lambda t: t[:, :1].expand(2, 5, 4)),
    ("expand_minus1", lambda t: t[:1].expand(3, -1, -1, -1)),
    ("expand_as", lambda t: t[0, 0].expand_as(t)),
    ("narrow", lambda t: t.narrow(2, 1, 2)),
    ("narrow_neg_start", lambda t: t.narrow(1, -2, 2)),
    ("select", lambda t: t.select(1, -1)),
    ("split0", lambda t: t.split(2, dim=2)[1]),
    ("split_sizes", lambda t: t.split([1, 3], 2)[1]),
    ("chunk", lambda t: t.chunk(3, 1)[2]),
    ("unbind", lambda t: t.unbind(1)[1]),
    ("t_of_matrix", lambda t: t[0].t()),
    ("view_of_permute", lambda t: t.permute(1, 0, 2).view(3, 2, 2, 2)),
    ("movedim", lambda t: t.movedim(0, -1)),
]
IDS = [v[0] for v in VIEWS]


def _torch_or_numpy():
    try:
        import torch
        return torch
    except ImportError:
        return None


@pytest.mark.parametrize("name,fn", VIEWS, ids=IDS)
def test_view_matches_torch(name, fn, device):
    torch = pytest.importorskip("torch")
    expected = fn(torch.tensor(A)).contiguous().numpy()
    got = fn(to_device(A, device))
    assert tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(to_numpy(got), expected)


@pytest.mark.parametrize("name,fn", VIEWS, ids=IDS)
def test_view_shares_memory_both_ways(name, fn):
    a = A.copy()
    base = pygpu.from_numpy(a)
    v = fn(base)
    a *= -1.0  # a write to the base's memory is seen through the view
    torch = _torch_or_numpy()
    if torch is not None:
        np.testing.assert_array_equal(to_numpy(v), fn(torch.tensor(a)).numpy())
    if v.numel():
        before = a.copy()
        v[...] = 7.0  # and a write through the view lands in the base's memory
        assert (a == 7.0).sum() >= 1
        assert (a != before).sum() >= 1


@pytest.mark.parametrize("name,fn", VIEWS, ids=IDS)
def test_view_on_sim_moves_no_bytes(name, fn):
    t = to_device(A, "sim")
    pygpu.synchronize()
    before = pygpu.stats()
    v = fn(t)
    after = pygpu.stats()
    assert v.device == t.device
    for field in ("h2d_bytes", "d2h_bytes", "d2d_bytes", "transfer_count", "implicit_count"):
        assert getattr(after, field) == getattr(before, field), field
    if name not in ("flip",):  # every view in VIEWS launches nothing either
        assert after.ops == before.ops, name


VIEW_ERRORS = [  # (call, PyTorch's exception type)
    ("view_bad_size", lambda t: t.view(5, 5), RuntimeError),
    ("view_two_minus1", lambda t: t.view(-1, -1), RuntimeError),
    ("view_noncontiguous", lambda t: t.transpose(0, 2).view(24), RuntimeError),
    ("permute_wrong_count", lambda t: t.permute(0, 1), RuntimeError),
    ("permute_repeat", lambda t: t.permute(0, 0, 1), RuntimeError),
    ("unsqueeze_range", lambda t: t.unsqueeze(5), IndexError),
    ("transpose_range", lambda t: t.transpose(0, 3), IndexError),
    ("expand_bad", lambda t: t.expand(2, 3, 5), RuntimeError),
    ("expand_fewer", lambda t: t.expand(3, 4), RuntimeError),
    ("narrow_past_end", lambda t: t.narrow(2, 3, 2), RuntimeError),
    ("flatten_reversed", lambda t: t.flatten(2, 1), RuntimeError),
    ("t_of_3d", lambda t: t.t(), RuntimeError),
    ("split_bad_sizes", lambda t: t.split([1, 1], 2), RuntimeError),
    ("chunk_zero", lambda t: t.chunk(0), RuntimeError),
    ("select_range", lambda t: t.select(0, 2), IndexError),
]


@pytest.mark.parametrize("name,fn,exc", VIEW_ERRORS, ids=[e[0] for e in VIEW_ERRORS])
def test_view_errors_match_torch(name, fn, exc, device):
    torch = _torch_or_numpy()
    if torch is not None:
        with pytest.raises(exc):
            fn(torch.tensor(A))
    with pytest.raises(exc):
        fn(to_device(A, device))


def test_view_error_says_use_reshape():
    with pytest.raises(RuntimeError, match="reshape"):
        pygpu.tensor(A).transpose(0, 2).view(24)


def test_pygpu_transpose_permutation_still_works(device):
    t = to_device(A, device)
    assert t.transpose().shape == (4, 3, 2)
    assert t.transpose((2, 0, 1)).shape == (4, 2, 3)
    assert t.transpose(2, 0, 1).shape == (4, 2, 3)
    np.testing.assert_array_equal(to_numpy(t.transpose(1, 0, 2)), A.transpose(1, 0, 2))


def test_expand_is_stride_zero_and_split_chunk_unbind_count():
    t = pygpu.tensor(A)
    e = t[:, :1].expand(2, 5, 4)
    assert e.stride() == (12, 0, 1)
    assert len(t.split(3, 2)) == 2 and t.split(3, 2)[1].shape == (2, 3, 1)
    assert len(t.chunk(2, 1)) == 2 and [c.shape[1] for c in t.chunk(2, 1)] == [2, 1]
    assert len(t.unbind(2)) == 4


def test_as_strided_checks_the_storage_bounds():
    t = pygpu.tensor(np.arange(6.0))
    np.testing.assert_array_equal(to_numpy(t.as_strided((2, 2), (1, 2), 1)), [[1, 3], [2, 4]])
    with pytest.raises(ValueError, match="storage"):
        t.as_strided((3, 3), (3, 1))
    with pytest.raises(ValueError):
        t.as_strided((2,), (1,), -1)


def test_views_keep_the_base_alive():
    import gc
    v = pygpu.tensor(A).permute(2, 1, 0).unsqueeze(0).expand(3, 4, 3, 2).narrow(0, 1, 2)
    gc.collect()
    np.testing.assert_array_equal(to_numpy(v)[0], A.transpose(2, 1, 0))


# ---- autograd through views ---------------------------------------------------------------

GRAD_VIEWS = [
    ("view", lambda x: x.view(6, 4) * 1.0),
    ("view_as", lambda x: x.view_as(x.new_zeros(4, 6)) * 1.0),
    ("permute", lambda x: x.permute(2, 0, 1) * 1.0),
    ("transpose", lambda x: x.transpose(0, 2) * 1.0),
    ("mT", lambda x: x.mT * 1.0),
    ("unsqueeze", lambda x: x.unsqueeze(1) * 1.0),
    ("squeeze", lambda x: x[:, :1].squeeze(1) * 1.0),
    ("flatten", lambda x: x.flatten(1) * 1.0),
    ("unflatten", lambda x: x.unflatten(2, (2, 2)) * 1.0),
    ("expand", lambda x: x[:, :1].expand(2, 5, 4) * 1.0),
    ("narrow", lambda x: x.narrow(2, 1, 2) * 1.0),
    ("split", lambda x: x.split(3, 2)[0] * 2.0 + x.split(3, 2)[1].sum() * 1.0),
    ("chunk", lambda x: x.chunk(2, 1)[1] * 1.0),
    ("unbind", lambda x: x.unbind(0)[1] * x.unbind(0)[0]),
    ("select", lambda x: x.select(1, 2) * 1.0),
    ("flip", lambda x: x.flip(1) * 1.0),
]


@pytest.mark.parametrize("name,fn", GRAD_VIEWS, ids=[g[0] for g in GRAD_VIEWS])
def test_view_backward_matches_finite_differences(name, fn, device):
    gradcheck(fn, [np.random.default_rng(3).standard_normal((2, 3, 4))], device)


def test_view_grad_fn_names_the_view():
    x = pygpu.ones((2, 3)).requires_grad_()
    assert "View" in repr(x.t().view(3, 2, 1).grad_fn)  # a contiguous view is the C reshape's
    assert "ViewBackward0" in repr(x.view(6).grad_fn)  # PyTorch's name for it
    assert "Expand" in repr(x.unsqueeze(0).expand(2, 2, 3).grad_fn)


# ---- information and dtype methods --------------------------------------------------------

INFO = [
    ("dim", lambda t: t.dim()),
    ("ndimension", lambda t: t.ndimension()),
    ("stride", lambda t: tuple(t.stride())),
    ("stride_1", lambda t: t.stride(1)),
    ("stride_neg", lambda t: t.stride(-1)),
    ("stride_of_T", lambda t: tuple(t.transpose(0, 2).stride())),
    ("element_size", lambda t: t.element_size()),
    ("storage_offset", lambda t: t[1, 2].storage_offset()),
    ("nelement", lambda t: t.nelement()),
    ("is_floating_point", lambda t: t.is_floating_point()),
    ("long_is_fp", lambda t: t.long().is_floating_point()),
]


@pytest.mark.parametrize("name,fn", INFO, ids=[i[0] for i in INFO])
def test_info_matches_torch(name, fn, device):
    torch = pytest.importorskip("torch")
    assert fn(to_device(A, device)) == fn(torch.tensor(A))


CONVERSIONS = [("float", "float32"), ("double", "float64"), ("half", "float16"),
               ("bfloat16", "bfloat16"), ("long", "int64"), ("bool", "bool")]


@pytest.mark.parametrize("method,dtype", CONVERSIONS)
def test_dtype_conversion_methods(method, dtype, device):
    t = to_device(np.array([[1.5, -2.0], [0.0, 3.25]]), device)
    out = getattr(t, method)()
    assert out.dtype == getattr(pygpu, dtype if dtype != "bool" else "bool_")
    torch = _torch_or_numpy()
    if torch is not None:
        ref = getattr(torch.tensor([[1.5, -2.0], [0.0, 3.25]], dtype=torch.float64), method)()
        np.testing.assert_array_equal(to_numpy(out.float()), ref.float().numpy())


def test_conversion_to_the_same_dtype_returns_self():
    t = pygpu.ones(3)
    assert t.float() is t
    assert t.type(pygpu.float32) is t


def test_int_casts_to_int32():
    assert pygpu.tensor([1.7, -2.5]).int().tolist() == [1, -2]
    assert pygpu.ones(3).int().dtype is pygpu.int32


def test_type_strings_and_conversions(device):
    t = to_device(np.ones(3), device)
    prefix = "torch." if device == "cpu" else f"torch.{pygpu.device(device).type}."
    assert t.type() == prefix + "DoubleTensor"
    assert t.float().type() == prefix + "FloatTensor"
    assert t.long().type() == prefix + "LongTensor"
    assert t.type("torch.FloatTensor").dtype == pygpu.float32
    assert t.type(pygpu.int64).dtype == pygpu.int64
    assert t.type_as(to_device(np.ones(2, np.int64), device)).dtype == pygpu.int64
    assert t.type("torch.IntTensor").dtype == pygpu.int32
    with pytest.raises(ValueError, match="invalid type"):
        t.type("torch.NotATensor")


def test_type_strings_match_torch_on_cpu():
    torch = pytest.importorskip("torch")
    for name in ("float32", "float64", "float16", "bfloat16", "int64", "bool"):
        ours = pygpu.ones(2, dtype=getattr(pygpu, name if name != "bool" else "bool_")).type()
        assert ours == torch.ones(2, dtype=getattr(torch, name)).type()


def test_float_conversion_is_differentiable(device):
    x = to_device(np.array([1.0, 2.0]), device).requires_grad_()
    y = (x.float() * 3.0).sum()
    y.backward()
    np.testing.assert_array_equal(to_numpy(x.grad), [3.0, 3.0])
    assert x.grad.dtype == pygpu.float64


@pytest.mark.parametrize("call", [lambda t: t.repeat(2, 1, 3), lambda t: t.repeat(2, 2, 1, 1),
                                  lambda t: t.tile((2,)), lambda t: t[0].repeat(1, 0)],
                         ids=["repeat_3d", "repeat_4d", "tile_1", "repeat_0"])
def test_repeat_and_tile_match_torch(call, device):
    torch = pytest.importorskip("torch")
    ref = call(torch.tensor(A))
    got = call(to_device(A, device))
    assert tuple(got.shape) == tuple(ref.shape)
    np.testing.assert_array_equal(to_numpy(got), ref.numpy())


def test_repeat_backward(device):
    gradcheck(lambda x: x.repeat(2, 1, 2), [np.random.default_rng(4).standard_normal((2, 3))], device)
