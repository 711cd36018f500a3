# test_utils_checkpoint.py - torch.utils.checkpoint against torch's: the same gradients as
# without checkpointing (dropout's masks replayed from the forward's RNG state), less memory
# kept between forward and backward, checkpoint_sequential, and torch's warnings and errors.
import numpy as np
import pytest

import pygpu
import pygpu.nn as nn
from pygpu.utils.checkpoint import checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch")
import torch.utils.checkpoint  # noqa: E402



def _mlp(lib, width=16, depth=4, p=0.0):
    layers = []
    for _ in range(depth):
        layers += [lib.nn.Linear(width, width), lib.nn.Tanh(), lib.nn.Dropout(p)]
    return lib.nn.Sequential(*layers)


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_equal_torch_and_the_plain_run(device, reentrant):
    rng = np.random.default_rng(0)
    ours, ref = _mlp(pygpu).to(device), _mlp(torch)
    ref.load_state_dict({k: torch.tensor(v.cpu().numpy()) for k, v in ours.state_dict().items()})
    x = rng.standard_normal((5, 16)).astype(np.float32)
    xo = pygpu.tensor(x, device=device, requires_grad=True)
    xr = torch.tensor(x, requires_grad=True)
    yo = checkpoint(ours, xo, use_reentrant=reentrant)
    yr = torch.utils.checkpoint.checkpoint(ref, xr, use_reentrant=reentrant)
    assert yo.grad_fn is not None
    (yo * yo).sum().backward()
    (yr * yr).sum().backward()
    np.testing.assert_allclose(xo.grad.cpu().numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (n, p), q in zip(ours.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=n)


def test_dropout_masks_are_replayed_and_rng_state_is_left_as_after_the_forward():
    m = _mlp(pygpu, p=0.5)
    x = pygpu.randn(4, 16, requires_grad=True)
    pygpu.manual_seed(3)
    y = checkpoint(m, x, use_reentrant=False)
    after_forward = pygpu.get_rng_state()
    y.sum().backward()
    assert (pygpu.get_rng_state() == after_forward).all()  # the recompute forked the RNG
    g = [p.grad.clone() for p in m.parameters()] + [x.grad.clone()]
    m.zero_grad()
    x.grad = None
    pygpu.manual_seed(3)
    m(x).sum().backward()
    for a, b in zip(g, [p.grad for p in m.parameters()] + [x.grad]):
        assert (a == b).all()


def test_non_reentrant_gives_parameters_gradients_without_an_input_that_requires_grad():
    m = nn.Linear(3, 2)
    x = pygpu.ones(4, 3)  # no grad
    checkpoint(m, x, use_reentrant=False).sum().backward()
    assert m.weight.grad is not None and float(m.weight.grad.sum()) == pytest.approx(24.0)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(m, x, use_reentrant=True)  # torch's reentrant form: no graph
    assert y.grad_fn is None


def test_checkpoint_keeps_less_memory_between_forward_and_backward():
    def held(ckpt):
        pygpu.manual_seed(0)
        m = _mlp(pygpu, width=256, depth=8)
        x = pygpu.randn(512, 256, requires_grad=True)
        base = pygpu.cpu.memory_allocated()
        y = checkpoint(m, x, use_reentrant=False) if ckpt else m(x)
        kept = pygpu.cpu.memory_allocated() - base
        y.sum().backward()
        return kept
    plain, ckpt = held(False), held(True)
    assert ckpt * 4 < plain  # 16 activations of 512 KiB kept without, the output with


def test_checkpoint_sequential_equals_the_plain_run():
    m = _mlp(pygpu, depth=6)
    x = pygpu.randn(3, 16, requires_grad=True)
    y = checkpoint_sequential(m, 3, x, use_reentrant=False)
    y.sum().backward()
    g = x.grad.clone()
    x.grad = None
    m(x).sum().backward()
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_torchs_warnings_and_errors():
    m = nn.Linear(2, 2)
    x = pygpu.ones(1, 2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(m, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda a, scale: a * scale, x, use_reentrant=True, scale=2.0)
    y = checkpoint(lambda a, scale: a * scale, x, use_reentrant=False, scale=2.0)
    y.sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0]]
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(m, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(m, x, use_reentrant=False, determinism_check="strict")
    with pygpu.no_grad():  # no graph wanted: fn simply runs
        assert checkpoint(m, x, use_reentrant=False).grad_fn is None
