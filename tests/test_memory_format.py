# test_memory_format.py - memory formats (pygpu/_tensor/memory_format.py) against torch on
# every device: the type and its values (pickled, repr, no new instances), contiguous and
# is_contiguous with a format, the strides of empty/empty_like/zeros_like/.../clone/to in
# each format and under preserve_format (dense permuted inputs keep their order, strided
# ones get torch's inferred order), nn.Module.to(memory_format=), dim_order with its
# ambiguity checks, gradients through a format change, and the errors torch raises.
import pickle

import numpy as np
import pytest
import torch

import pygpu

from _helpers import to_device

FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")


def _pair(device, shape=(2, 3, 4, 5)):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    return to_device(a, device), torch.tensor(a)


def _views(x):
    """A contiguous tensor's views torch and pygpu must lay out alike: permutations, a
    channels_last one, a slice with a gap, an expanded one."""
    yield x
    yield x.permute(0, 2, 3, 1)
    yield x.permute(0, 3, 1, 2)
    yield x.transpose(2, 3)
    yield x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # channels_last
    yield x[:, :, ::2]
    yield x.permute(1, 0, 2, 3)[:, :, 1:3]
    yield x[:1].expand(3, 3, 4, 5)


def test_the_type_and_its_values():
    for name in FORMATS:
        fmt = getattr(pygpu, name)
        assert isinstance(fmt, pygpu.memory_format)
        assert repr(fmt) == repr(getattr(torch, name))
        assert pickle.loads(pickle.dumps(fmt)) is fmt
    assert pygpu.legacy_contiguous_format is pygpu.contiguous_format
    with pytest.raises(TypeError, match="cannot create 'torch.memory_format' instances"):
        pygpu.memory_format()


def test_is_contiguous_and_contiguous(device):
    x, t = _pair(device)
    for xv, tv in zip(_views(x), _views(t)):
        for name in FORMATS:
            assert xv.is_contiguous(memory_format=getattr(pygpu, name)) == \
                tv.is_contiguous(memory_format=getattr(torch, name)), (tv.stride(), name)
        for name in ("contiguous_format", "channels_last"):
            y, u = xv.contiguous(memory_format=getattr(pygpu, name)), \
                tv.contiguous(memory_format=getattr(torch, name))
            assert y.stride() == u.stride(), (tv.stride(), name)
            np.testing.assert_array_equal(y.numpy(), u.numpy())
    cl = x.contiguous(memory_format=pygpu.channels_last)
    assert cl.contiguous(memory_format=pygpu.channels_last) is cl
    assert not x.is_contiguous(memory_format=pygpu.channels_last_3d)  # a rank mismatch: False
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        x[0].contiguous(memory_format=pygpu.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        x.contiguous(memory_format=pygpu.channels_last_3d)
    with pytest.raises(TypeError):
        x.contiguous(memory_format="channels_last")


def test_empty_with_a_format(device):
    for name, shape in (("channels_last", (2, 3, 4, 5)), ("channels_last_3d", (2, 3, 4, 5, 6)),
                        ("contiguous_format", (2, 3))):
        e = pygpu.empty(*shape, memory_format=getattr(pygpu, name), device=device)
        assert e.stride() == torch.empty(*shape, memory_format=getattr(torch, name)).stride()
        assert e.device.type == device.split(":")[0]
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        pygpu.empty(2, 3, memory_format=pygpu.channels_last)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        pygpu.empty(2, 3, 4, 5, memory_format=pygpu.preserve_format)


@pytest.mark.parametrize("factory", ["empty_like", "zeros_like", "ones_like", "rand_like",
                                     "randn_like", "clone"])
def test_like_and_clone_lay_out_as_torch(device, factory):
    x, t = _pair(device)
    for xv, tv in zip(_views(x), _views(t)):
        for name in ("preserve_format", "contiguous_format", "channels_last"):
            y = getattr(pygpu, factory)(xv, memory_format=getattr(pygpu, name))
            u = getattr(torch, factory)(tv, memory_format=getattr(torch, name))
            assert y.stride() == u.stride(), (factory, tv.stride(), name)
            assert y.shape == tuple(u.shape)
            if factory in ("zeros_like", "ones_like", "clone"):
                np.testing.assert_array_equal(y.numpy(), u.numpy())
        assert getattr(pygpu, factory)(xv).stride() == getattr(torch, factory)(tv).stride()
    assert pygpu.full_like(x, 2.0, memory_format=pygpu.channels_last).stride() == \
        torch.full_like(t, 2.0, memory_format=torch.channels_last).stride()
    assert pygpu.randint_like(x, 5, memory_format=pygpu.channels_last).stride() == \
        torch.randint_like(t, 5, memory_format=torch.channels_last).stride()
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        getattr(pygpu, factory)(x[0], memory_format=pygpu.channels_last)


def test_to_keeps_or_sets_the_format(device):
    x, t = _pair(device)
    cl, tcl = x.contiguous(memory_format=pygpu.channels_last), \
        t.contiguous(memory_format=torch.channels_last)
    assert cl.to(pygpu.float64).stride() == tcl.to(torch.float64).stride()
    assert cl.to(pygpu.float64).dtype == pygpu.float64
    assert cl.to(memory_format=pygpu.channels_last) is cl
    assert cl.to(memory_format=pygpu.preserve_format) is cl
    assert x.to(memory_format=pygpu.contiguous_format) is x
    for xv, tv in zip(_views(x), _views(t)):
        for name in FORMATS[:2]:
            y = xv.to(memory_format=getattr(pygpu, name))
            u = tv.to(memory_format=getattr(torch, name))
            assert y.stride() == u.stride(), (tv.stride(), name)
            np.testing.assert_array_equal(y.numpy(), u.numpy())
        assert xv.to(pygpu.float64).stride() == tv.to(torch.float64).stride()
    if device != "cpu":  # across devices, the layout travels too
        assert cl.to("cpu").stride() == tcl.stride()
        np.testing.assert_array_equal(cl.to("cpu").numpy(), tcl.numpy())


def test_module_to_channels_last(device):
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                             torch.nn.Linear(3, 2))
    pm = pygpu.nn.Sequential(pygpu.nn.Conv2d(3, 4, 3), pygpu.nn.BatchNorm2d(4),
                             pygpu.nn.Linear(3, 2)).to(device)
    tm.to(memory_format=torch.channels_last)
    assert pm.to(memory_format=pygpu.channels_last) is pm
    for (name, p), (_, q) in zip(pm.named_parameters(), tm.named_parameters()):
        assert p.stride() == q.stride(), name
        assert p.requires_grad
    assert pm[0].weight.is_contiguous(memory_format=pygpu.channels_last)


def test_channels_last_values_through_a_conv_block(device):
    """A channels_last input gives the same values as a contiguous one through conv,
    batch_norm, relu, pooling and add (pygpu returns them contiguous: docs/tensors.md)."""
    x, t = _pair(device, (2, 3, 8, 8))
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    w = to_device(conv.weight.detach().numpy(), device)
    b = to_device(conv.bias.detach().numpy(), device)
    F, TF = pygpu.nn.functional, torch.nn.functional

    def block(F, x, w, b):
        y = F.conv2d(x, w, b, padding=1)
        y = F.batch_norm(y, None, None, training=True)
        return F.max_pool2d(F.relu(y), 2) + 1.0

    xl = x.contiguous(memory_format=pygpu.channels_last)
    tl = t.contiguous(memory_format=torch.channels_last)
    want = block(TF, tl, conv.weight, conv.bias).detach().numpy()
    np.testing.assert_allclose(block(F, xl, w, b).numpy(), want, rtol=1e-4, atol=1e-5)


def test_gradient_through_a_format_change(device):
    x, t = _pair(device)
    x.requires_grad_(True)
    t.requires_grad_(True)
    wgt = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    (x.contiguous(memory_format=pygpu.channels_last) * to_device(wgt, device)).sum().backward()
    (t.contiguous(memory_format=torch.channels_last) * torch.tensor(wgt)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    y = x.clone(memory_format=pygpu.channels_last)
    assert y.requires_grad and y.is_contiguous(memory_format=pygpu.channels_last)


def test_dim_order(device):
    x, t = _pair(device)
    for xv, tv in zip(_views(x), _views(t)):
        assert xv.dim_order() == tv.dim_order(), tv.stride()
    ones = to_device(np.zeros((1, 2, 3, 4), np.float32), device)
    tones = torch.zeros(1, 2, 3, 4)
    for check in (True, [pygpu.contiguous_format, pygpu.channels_last]):
        tcheck = check if check is True else [torch.contiguous_format, torch.channels_last]
        try:
            want = tones.dim_order(ambiguity_check=tcheck)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="does not have unique dim order"):
                ones.dim_order(ambiguity_check=check)
        else:
            assert ones.dim_order(ambiguity_check=check) == want
    with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
        ones.dim_order(ambiguity_check="ILLEGAL")


ELEMENTWISE = [  # (name, f(lib, y, x, bias)): y channels_last, x contiguous, bias (1, C, 1, 1)
    ("relu", lambda lib, y, x, b: y.relu()),
    ("exp", lambda lib, y, x, b: y.exp()),
    ("neg", lambda lib, y, x, b: -y),
    ("gt", lambda lib, y, x, b: y > 0),
    ("y + bias", lambda lib, y, x, b: y + b),
    ("bias + y", lambda lib, y, x, b: b + y),
    ("y * 2", lambda lib, y, x, b: y * 2),
    ("2 - y", lambda lib, y, x, b: 2 - y),
    ("y + x", lambda lib, y, x, b: y + x),
    ("x + y", lambda lib, y, x, b: x + y),
    ("y * y", lambda lib, y, x, b: y * y),
    ("y.t-like", lambda lib, y, x, b: x.transpose(1, 3).exp()),
    ("size-1 dims", lambda lib, y, x, b: x[:, :1].transpose(0, 2).sigmoid()),
    ("a gap", lambda lib, y, x, b: x[:, :, ::2].exp()),
]


@pytest.mark.parametrize("name,fn", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_elementwise_ops_keep_the_lead_operands_layout(device, name, fn):
    """The output's strides are torch's: a dense lead operand's order is kept (csrc/core/
    pg_ops_elementwise.c computes in memory order), the values are torch's."""
    x, t = _pair(device)
    bias = np.arange(3, dtype=np.float32).reshape(1, 3, 1, 1)
    y = x.contiguous(memory_format=pygpu.channels_last)
    u = t.contiguous(memory_format=torch.channels_last)
    got = fn(pygpu, y, x, to_device(bias, device))
    want = fn(torch, u, t, torch.tensor(bias))
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_gradients_through_a_channels_last_block(device):
    x, t = _pair(device)
    x.requires_grad_(True)
    t.requires_grad_(True)
    wgt = np.linspace(-1, 1, 120, dtype=np.float32).reshape(2, 3, 4, 5)
    for lib, v, w in ((pygpu, x, to_device(wgt, device)), (torch, t, torch.tensor(wgt))):
        y = v.contiguous(memory_format=lib.channels_last)
        ((y.relu() * 2 + 1) * y.exp() * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5)


def test_clone_and_to_copy_a_dense_permuted_tensor(device):
    """A dense permuted tensor is contiguous in memory order: its clone must still be a copy
    (the bug a clone through contiguous() had: the clone shared the input's memory)."""
    x, _ = _pair(device)
    y = x.contiguous(memory_format=pygpu.channels_last)
    for copy in (y.clone(), y.to(pygpu.float32, copy=True), pygpu.clone(y)):
        assert copy.stride() == y.stride()
        copy.fill_(0.0)
        np.testing.assert_array_equal(y.numpy(), x.numpy())
