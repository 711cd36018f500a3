# test_conv_bn_fold.py - nn.Sequential's Conv2d + BatchNorm2d (+ ReLU / ReLU6) folded into one
# convolution in inference (pygpu/nn/_fold.py, issue 45): against torch's unfolded layers to
# float32 rounding (depthwise, strided, padding modes, with and without biases and affine
# parameters, odd channels, a non-contiguous input, 1 and 2 threads); no batch_norm node runs;
# not folded where its output could be seen or a gradient is wanted (hooks, grad mode, train);
# the folded weight follows every change of its sources (optimizer steps, .data =, in-place
# writes to the running statistics, .double()); the state_dict is untouched.
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.profiler import profile

torch = pytest.importorskip("torch")

# (conv kwargs, batch norm affine, activation)
CASES = [
    (dict(in_channels=5, out_channels=7, kernel_size=3, padding=1), True, "ReLU"),
    (dict(in_channels=6, out_channels=6, kernel_size=3, padding=1, groups=6, bias=False), True,
     "ReLU6"),
    (dict(in_channels=4, out_channels=9, kernel_size=1, stride=2, bias=False), False, None),
    (dict(in_channels=3, out_channels=5, kernel_size=3, padding=1, padding_mode="reflect"), True,
     "ReLU6"),
    (dict(in_channels=8, out_channels=13, kernel_size=(3, 1), stride=(2, 1), padding=(1, 0)),
     True, None),
]


def _pair(kw, affine, act, seed=0):
    """pygpu's and torch's Sequential with the same weights and running statistics (after a
    training step, so away from 0 and 1)."""
    mods = [nn.Conv2d(**kw), nn.BatchNorm2d(kw["out_channels"], affine=affine)]
    tmods = [torch.nn.Conv2d(**kw), torch.nn.BatchNorm2d(kw["out_channels"], affine=affine)]
    if act:
        mods.append(getattr(nn, act)())
        tmods.append(getattr(torch.nn, act)())
    ours, ref = nn.Sequential(*mods), torch.nn.Sequential(*tmods)
    x = np.random.default_rng(seed).standard_normal((4, kw["in_channels"], 9, 8)) * 3
    ours.train()
    ours(pygpu.tensor(x.astype(np.float32))).sum().backward()
    if affine:
        with pygpu.no_grad():
            ours[1].weight.copy_(pygpu.tensor(np.linspace(-2, 2, kw["out_channels"])
                                              .astype(np.float32)))
    _sync(ours, ref)
    return ours.eval(), ref.eval()


def _sync(ours, ref):
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})


def _check(ours, ref, x, rtol=1e-4):
    with pygpu.no_grad():
        y = ours(pygpu.tensor(x) if isinstance(x, np.ndarray) else x)
    with torch.no_grad():
        want = ref(torch.tensor(np.ascontiguousarray(
            x if isinstance(x, np.ndarray) else x.numpy())))
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=rtol, atol=rtol * 10)
    return y


@pytest.mark.parametrize("kw,affine,act", CASES, ids=range(len(CASES)))
def test_folded_matches_torch(kw, affine, act):
    ours, ref = _pair(kw, affine, act)
    before = {k: v.numpy().copy() for k, v in ours.state_dict().items()}
    x = (np.random.default_rng(1).standard_normal((3, kw["in_channels"], 11, 10)) * 2)
    y = _check(ours, ref, x.astype(np.float32))
    if act == "ReLU6":
        assert (y.numpy() <= 6).all()
    assert ours.__dict__.get("_folded"), "the pair was not folded"
    for k, v in ours.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)


def test_no_batch_norm_node_runs():
    ours, _ = _pair(*CASES[0])
    x = pygpu.randn(2, 5, 8, 8)
    with pygpu.no_grad(), profile() as prof:
        ours(x)
    names = [e.name for e in prof.events()]
    assert "batch_norm" not in names and "conv2d" in names, names


def test_non_contiguous_input_and_threads():
    ours, ref = _pair(*CASES[1])
    x = np.random.default_rng(2).standard_normal((3, 6, 10, 12)).astype(np.float32)
    px = pygpu.tensor(x).transpose(2, 3)
    assert not px.is_contiguous()
    before = pygpu.get_num_threads()
    try:
        runs = []
        for n in (1, 2):
            pygpu.set_num_threads(n)
            runs.append(_check(ours, ref, px).numpy())
    finally:
        pygpu.set_num_threads(before)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-6, atol=1e-6)


def test_not_folded_with_a_gradient_hooks_or_in_training():
    ours, ref = _pair(*CASES[0])
    x = np.random.default_rng(3).standard_normal((2, 5, 6, 6)).astype(np.float32)
    px = pygpu.tensor(x, requires_grad=True)
    y = ours(px)  # grad mode: the gradient flows through the unfolded layers
    assert not ours.__dict__.get("_folded")
    tx = torch.tensor(x, requires_grad=True)
    ty = ref(tx)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    seen = []
    ours[0].register_forward_hook(lambda m, i, o: seen.append(o.shape))
    with pygpu.no_grad(), profile() as prof:
        ours(pygpu.tensor(x))
    assert seen == [(2, 7, 6, 6)] and "batch_norm" in [e.name for e in prof.events()]
    assert not ours.__dict__.get("_folded")
    ours[0]._forward_hooks.clear()
    ours.train()
    with pygpu.no_grad():
        ours(pygpu.tensor(x))  # training: the batch's statistics, not folded
    assert not ours.__dict__.get("_folded")


def test_the_fold_follows_its_sources():
    """An optimizer step in training, new data, in-place writes to the running statistics
    and a dtype change: each evaluation after them agrees with torch's."""
    ours, ref = _pair(*CASES[0])
    x = np.random.default_rng(4).standard_normal((2, 5, 7, 7)).astype(np.float32)
    _check(ours, ref, x)
    opt = pygpu.optim.SGD(ours.parameters(), lr=0.5, momentum=0.9)
    ours.train()
    ours(pygpu.tensor(x)).square().sum().backward()
    opt.step()
    ours.eval()
    _sync(ours, ref)
    _check(ours, ref, x)
    ours[0].weight.data = ours[0].weight.data * 0.5
    _sync(ours, ref)
    _check(ours, ref, x)
    with pygpu.no_grad():
        ours[1].running_var.mul_(3.0)
        ours[1].running_mean.add_(1.0)
    _sync(ours, ref)
    _check(ours, ref, x)
    ours.double()
    ref.double()
    _check(ours, ref, x.astype(np.float64), rtol=1e-10)


def test_a_captured_graph_replays_the_parameters_it_reads():
    """Under a node-graph capture the fold's nodes are captured with the convolution, so a
    replay after the parameters are written in place (same storage, the compile guard's key
    unchanged) follows them; a cached folded weight would replay the old values."""
    ours, ref = _pair(*CASES[0])
    x = np.random.default_rng(5).standard_normal((2, 5, 6, 6)).astype(np.float32)
    px = pygpu.tensor(x)
    with pygpu.no_grad():
        ours(px)  # warm: the cache holds a fold
        g = pygpu.cpu.Graph()
        with pygpu.cpu.graph(g):
            y = ours(px)
        ours[0].weight.mul_(-0.5)
        ours[1].running_mean.add_(2.0)
    g.replay()
    _sync(ours, ref)
    with torch.no_grad():
        want = ref(torch.tensor(x)).numpy()
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-3)
    with pygpu.no_grad():
        np.testing.assert_allclose(ours(px).numpy(), want, rtol=1e-4, atol=1e-3)
