# test_lazy_modules.py - lazy modules (pygpu/nn/lazy.py) and their tensors-to-be
# (UninitializedParameter/UninitializedBuffer, pygpu/nn/parameter.py), and nn.Buffer, against
# torch as the oracle on every device: the first call materializes the parameters with the
# eager layer's shapes and initialisation and the module becomes that layer; state_dict
# before it holds the uninitialised objects; load_state_dict before it takes the
# checkpoint's shapes; using an uninitialised parameter raises PyTorch's ValueError.
import copy

import numpy as np
import pytest

import pygpu
from pygpu import nn

torch = pytest.importorskip("torch")

rng = np.random.default_rng(7)

# (ours, theirs, constructor arguments, input shape, the eager class)
LAZY = [
    ("LazyLinear", (5,), (3, 4), "Linear"),
    ("LazyLinear", (5, False), (2, 3, 7), "Linear"),
    ("LazyConv1d", (6, 3), (2, 4, 9), "Conv1d"),
    ("LazyConv2d", (6, 3), (2, 4, 7, 6), "Conv2d"),
    ("LazyConv2d", (6, (3, 2), 1, 1, 1, 2), (2, 4, 7, 6), "Conv2d"),
    ("LazyConv3d", (4, 2), (2, 3, 4, 5, 4), "Conv3d"),
    ("LazyConv2d", (6, 3), (4, 7, 6), "Conv2d"),  # unbatched: channels from axis 0
    ("LazyConvTranspose1d", (3, 3, 2), (2, 4, 5), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (4, 3, 2, 1, 1, 2), (2, 4, 5, 4), "ConvTranspose2d"),
    ("LazyConvTranspose3d", (3, 2), (1, 2, 3, 3, 3), "ConvTranspose3d"),
    ("LazyBatchNorm1d", (), (6, 5), "BatchNorm1d"),
    ("LazyBatchNorm2d", (), (3, 5, 4, 4), "BatchNorm2d"),
    ("LazyBatchNorm3d", (), (2, 5, 3, 3, 2), "BatchNorm3d"),
    ("LazyInstanceNorm1d", (), (2, 5, 6), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (1e-5, 0.1, True, True), (2, 5, 4, 4), "InstanceNorm2d"),
    ("LazyInstanceNorm3d", (), (2, 5, 3, 3, 2), "InstanceNorm3d"),
]


@pytest.mark.parametrize("name,args,shape,eager", LAZY,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LAZY)])
def test_first_call_materializes_as_torch_does(device, name, args, shape, eager):
    ours = getattr(nn, name)(*args, device=device, dtype=pygpu.float64)
    theirs = getattr(torch.nn, name)(*args, dtype=torch.float64)
    assert ours.has_uninitialized_params() == theirs.has_uninitialized_params()
    ours_keys, theirs_keys = ours.state_dict(), theirs.state_dict()
    assert list(ours_keys) == list(theirs_keys)
    for k, v in theirs_keys.items():  # uninitialised entries stay uninitialised objects
        assert isinstance(ours_keys[k], nn.UninitializedParameter) == \
            isinstance(v, torch.nn.UninitializedParameter)
        assert isinstance(ours_keys[k], nn.UninitializedBuffer) == \
            isinstance(v, torch.nn.UninitializedBuffer)
    x = rng.standard_normal(shape)
    y = ours(pygpu.tensor(x, device=device))
    theirs(torch.tensor(x))
    assert type(ours) is getattr(nn, eager) and type(theirs) is getattr(torch.nn, eager)
    assert not ours.has_uninitialized_params() if hasattr(ours, "has_uninitialized_params") \
        else True
    sd_o, sd_t = ours.state_dict(), theirs.state_dict()
    assert list(sd_o) == list(sd_t)
    for k in sd_t:
        assert tuple(sd_o[k].shape) == tuple(sd_t[k].shape), k
        assert sd_o[k].dtype == getattr(pygpu, str(sd_t[k].dtype).split(".")[1]), k
        assert pygpu.device(sd_o[k].device).type == pygpu.device(device).type
    # with torch's values the two layers agree, forward and backward
    ours.load_state_dict({k: pygpu.tensor(v.detach().numpy(), device=device)
                          for k, v in sd_t.items()})
    xp = pygpu.tensor(x, device=device).requires_grad_()
    xt = torch.tensor(x, requires_grad=True)
    ours.eval(), theirs.eval()
    yo, yt = ours(xp), theirs(xt)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-7, atol=1e-9)
    yo.sum().backward(), yt.sum().backward()
    np.testing.assert_allclose(xp.grad.numpy(), xt.grad.numpy(), rtol=1e-7, atol=1e-9)
    for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-7, atol=1e-9,
                                   err_msg=n)
    assert y is not None


def test_initialisation_follows_the_eager_layer():
    pygpu.manual_seed(0)
    m = nn.LazyLinear(200)
    m(pygpu.zeros(1, 400))
    bound = 1 / 20.0  # 1/sqrt(in_features)
    w = m.weight.detach().numpy()
    assert w.shape == (200, 400) and np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.mean()) < 0.1 * bound and w.std() > 0.5 * bound / np.sqrt(3)
    bn = nn.LazyBatchNorm2d()
    bn(pygpu.ones(2, 3, 2, 2))
    np.testing.assert_allclose(bn.weight.detach().numpy(), 1.0)
    np.testing.assert_allclose(bn.bias.detach().numpy(), 0.0)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1)  # one step of momentum from 0
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9)  # ... from 1 (variance 0)
    assert int(bn.num_batches_tracked.item()) == 1


def test_load_state_dict_before_the_first_call_takes_the_checkpoints_shapes(device):
    trained = nn.Linear(4, 3, device=device)
    lazy = nn.LazyLinear(3, device=device)
    result = lazy.load_state_dict(trained.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert isinstance(lazy, nn.LazyLinear) and not lazy.has_uninitialized_params()
    assert lazy.in_features == 4
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), trained.weight.detach().numpy())
    x = pygpu.tensor(rng.standard_normal((2, 4)).astype(np.float32), device=device)
    np.testing.assert_allclose(lazy(x).detach().numpy(), trained(x).detach().numpy())
    assert type(lazy) is nn.Linear
    # the same with torch: a lazy module's checkpoint goes into an uninitialised one too
    bn = nn.LazyBatchNorm1d()
    bn2 = nn.LazyBatchNorm1d()
    bn2.load_state_dict(bn.state_dict())  # both uninitialised: nothing to copy
    assert bn2.has_uninitialized_params()
    tbn = torch.nn.LazyBatchNorm1d()
    tbn.load_state_dict(torch.nn.LazyBatchNorm1d().state_dict())
    assert tbn.has_uninitialized_params()
    # an uninitialised checkpoint does not fit an initialised layer
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        nn.BatchNorm1d(3).load_state_dict(bn.state_dict())
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        torch.nn.BatchNorm1d(3).load_state_dict(tbn.state_dict())


def test_uninitialized_parameter_refuses_use_with_pytorchs_error():
    m = nn.LazyLinear(3)
    p = m.weight
    tp = torch.nn.LazyLinear(3).weight
    assert isinstance(p, nn.Parameter) and isinstance(tp, torch.nn.Parameter)
    assert isinstance(p, nn.UninitializedParameter)
    assert repr(p) == repr(tp) == "<UninitializedParameter>"
    for attempt in (lambda q: q.sum(), lambda q: q.numel()):
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            attempt(p)
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            attempt(tp)
    for q in (p, tp):
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
            q.shape
    q = p.materialize((2, 3))
    assert isinstance(q, nn.Parameter) and q.requires_grad and tuple(q.shape) == (2, 3)
    b = nn.UninitializedBuffer(dtype=pygpu.float64)
    t = b.materialize((4,))
    assert not isinstance(t, nn.Parameter) and t.dtype == pygpu.float64 and not t.requires_grad


def test_to_before_the_first_call_sets_the_device_and_dtype():
    m = nn.LazyConv2d(4, 3).to(pygpu.float64)
    m(pygpu.zeros(1, 2, 5, 5, dtype=pygpu.float64))
    assert m.weight.dtype == pygpu.float64 and tuple(m.weight.shape) == (4, 2, 3, 3)
    m = nn.LazyLinear(2).to("sim")
    m(pygpu.zeros(1, 3, device="sim"))
    assert m.weight.device.type == "sim"
    m = copy.deepcopy(nn.LazyLinear(2))
    assert m.has_uninitialized_params()
    m(pygpu.zeros(1, 3))
    assert type(m) is nn.Linear


def test_lazy_errors_match_torch():
    for ours, theirs in ((nn.LazyConv2d(4, 3), torch.nn.LazyConv2d(4, 3)),):
        with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\)"):
            ours(pygpu.zeros(2, 3))
        with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\)"):
            theirs(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(pygpu.zeros(1, 3, 5, 5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        torch.nn.LazyConv2d(4, 3, groups=2)(torch.zeros(1, 3, 5, 5))


def test_buffer_registers_itself(device):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.kept = nn.Buffer(pygpu.ones(3, device=device))
            self.scratch = nn.Buffer(pygpu.zeros(2, device=device), persistent=False)
            self.plain = pygpu.zeros(1, device=device)

    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.kept = torch.nn.Buffer(torch.ones(3))
            self.scratch = torch.nn.Buffer(torch.zeros(2), persistent=False)
            self.plain = torch.zeros(1)

    m, t = M(), T()
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert list(m.state_dict()) == list(t.state_dict()) == ["kept"]
    assert isinstance(m.kept, nn.Buffer) and not isinstance(m.plain, nn.Buffer)
    assert isinstance(m.kept, pygpu.Tensor) and not isinstance(m.kept, nn.Parameter)
    x = pygpu.ones(2, requires_grad=True)
    assert nn.Buffer(x).requires_grad and nn.Buffer(x).grad_fn is None
    assert tuple(nn.Buffer().shape) == tuple(torch.nn.Buffer().shape) == (0,)
    with pytest.raises(TypeError):
        nn.Buffer([1.0])
