# test_einops_backend.py - einops on pygpu tensors without aliasing torch (issue 46, item 4):
# einops finds pygpu's backend on its own, whichever of the two is imported first, and its
# functions give torch's values and gradients on the same inputs.
import subprocess
import sys

import numpy as np
import pytest

import pygpu

einops = pytest.importorskip("einops")
torch = pytest.importorskip("torch")

CASES = [
    ("rearrange", ("b c h w -> b (h w) c",), {}),
    ("rearrange", ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)",), {"p1": 2, "p2": 2}),
    ("reduce", ("b c h w -> b c", "mean"), {}),
    ("reduce", ("b c h w -> b h w", "max"), {}),
    ("reduce", ("b c (h 2) (w 2) -> b c h w", "sum"), {}),
    ("reduce", ("b c h w -> c", "min"), {}),
    ("repeat", ("b c h w -> b c h w r",), {"r": 3}),
    ("repeat", ("b c h w -> b (c r) h w",), {"r": 2}),
]


@pytest.mark.parametrize("fn, args, lengths", CASES, ids=lambda c: str(c))
def test_einops_functions_match_torch_with_gradients(device, fn, args, lengths):
    a = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    x = pygpu.tensor(a, device=device).requires_grad_()
    t = torch.tensor(a, requires_grad=True)
    y = getattr(einops, fn)(x, *args, **lengths)
    ty = getattr(einops, fn)(t, *args, **lengths)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6, atol=1e-6)
    w = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(np.float32)
    (y * pygpu.tensor(w, device=device)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_einsum_pack_unpack_and_the_backend_is_pygpus():
    a = np.random.default_rng(2).standard_normal((2, 3, 5)).astype(np.float32)
    x = pygpu.tensor(a).requires_grad_()
    y = einops.einsum(x, x, "b i d, b j d -> b i j")
    np.testing.assert_allclose(y.detach().numpy(), np.einsum("bid,bjd->bij", a, a), rtol=1e-5, atol=1e-5)
    y.sum().backward()
    assert x.grad.shape == x.shape
    packed, ps = einops.pack([x, pygpu.ones(2, 4)], "b *")
    assert tuple(packed.shape) == (2, 19)
    back = einops.unpack(packed, ps, "b *")
    np.testing.assert_array_equal(back[0].detach().numpy(), a)
    from einops._backends import get_backend
    assert get_backend(x).framework_name == "pygpu"


def test_einops_layers_as_pygpu_modules_train():
    layers = einops._backends.get_backend(pygpu.ones(1)).layers()
    pygpu.manual_seed(0)
    model = pygpu.nn.Sequential(
        layers.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2),
        pygpu.nn.Linear(12, 8), layers.Reduce("b n d -> b d", "mean"),
        layers.EinMix("b d -> b k", weight_shape="d k", bias_shape="k", d=8, k=2))
    x = pygpu.randn(4, 3, 4, 4)
    loss = model(x).square().mean()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    assert len(list(model.parameters())) == 4


@pytest.mark.parametrize("first", ["einops", "pygpu"])
def test_found_whichever_is_imported_first(first):
    other = "pygpu" if first == "einops" else "einops"
    code = (f"import {first}, {other}\nimport pygpu, einops\n"
            "x = pygpu.arange(6.0).reshape(2, 3)\n"
            "print(einops.rearrange(x, 'a b -> b a').tolist())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]"
