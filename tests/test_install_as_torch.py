# test_install_as_torch.py - pygpu.install_as_torch() (issue 46, item 3): after it, `import
# torch` and every torch.* submodule resolve to pygpu, in user code and inside libraries from
# PyPI that build on torch: einops (functions and einops.layers.torch), mlp-mixer-pytorch and
# perceiver-pytorch. Each library's model is built and run under pygpu in a subprocess (the
# real torch is installed in this venv, and this process has imported it), its state_dict,
# input, output and gradients saved with torch.save (pygpu's, PyTorch's file format); here
# the real torch loads them into the same library's model and must agree.
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("einops")


def _env():
    import pygpu  # the checkout under test, wherever the subprocess runs
    root = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def _run(code, tmp_path=None):
    prelude = "import pygpu\npygpu.install_as_torch()\n"
    out = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path, env=_env())
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_torch_and_its_submodules_are_pygpus():
    out = _run("""
        import torch, torch.nn as nn, torch.nn.functional as F, torch.optim.lr_scheduler as S
        from torch.utils.data import DataLoader, Dataset
        from torch.nn import Module
        print(torch is pygpu, F is pygpu.nn.functional, S is pygpu.optim.lr_scheduler,
              DataLoader is pygpu.utils.data.DataLoader, Module is pygpu.nn.Module,
              torch.Tensor is pygpu.Tensor)
        try:
            import torch.no_such_module
        except ModuleNotFoundError as e:
            print("refused:", e)
    """)
    lines = out.splitlines()
    assert lines[0] == "True True True True True True"
    assert "torch.no_such_module" in lines[1] and "pygpu.no_such_module" in lines[1]


def test_it_refuses_once_the_real_torch_is_imported():
    out = subprocess.run([sys.executable, "-c", "import torch, pygpu\npygpu.install_as_torch()"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode != 0 and "already imported" in out.stderr and "first" in out.stderr


def test_a_library_class_subclassing_torch_nn_module_is_a_pygpu_module():
    out = _run("""
        import torch
        from torch import nn

        class Residual(nn.Module):  # as a library writes it
            def __init__(self, fn):
                super().__init__()
                self.fn = fn
            def forward(self, x):
                return self.fn(x) + x

        m = nn.Sequential(Residual(nn.Linear(4, 4)), nn.GELU(), nn.Linear(4, 2))
        print(isinstance(m[0], pygpu.nn.Module), len(list(m.parameters())),
              tuple(m(torch.randn(3, 4)).shape))
    """)
    assert out.strip() == "True 4 (3, 2)"


LIBRARIES = {
    "einops": ("""
        from torch import nn
        from einops.layers.torch import Rearrange, Reduce
        from einops import rearrange
        def build():
            return nn.Sequential(Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2),
                                 nn.Linear(12, 16), nn.GELU(), Reduce("b n d -> b d", "mean"),
                                 nn.Linear(16, 3))
        def forward(model, x):
            return rearrange(model(x), "b k -> k b")
        """, (2, 3, 4, 4)),
    "mlp_mixer_pytorch": ("""
        from mlp_mixer_pytorch import MLPMixer
        def build():
            return MLPMixer(image_size=8, channels=3, patch_size=4, dim=16, depth=2,
                            num_classes=5)
        def forward(model, x):
            return model(x)
        """, (2, 3, 8, 8)),
    "perceiver_pytorch": ("""
        from perceiver_pytorch import Perceiver
        def build():
            return Perceiver(input_channels=3, input_axis=2, num_freq_bands=4, max_freq=10.0,
                             depth=2, num_latents=8, latent_dim=16, cross_heads=1,
                             latent_heads=2, cross_dim_head=8, latent_dim_head=8,
                             num_classes=4, attn_dropout=0.0, ff_dropout=0.0,
                             weight_tie_layers=False)
        def forward(model, x):
            return model(x)
        """, (2, 6, 6, 3)),
}


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_a_library_runs_on_pygpu_and_agrees_with_torch(tmp_path, lib):
    pytest.importorskip(lib)
    source, shape = LIBRARIES[lib]
    _run(textwrap.dedent(source) + textwrap.dedent(f"""
        import torch
        torch.manual_seed(0)
        model = build().eval()
        x = torch.randn{shape}
        out = forward(model, x)
        out.square().sum().backward()
        grads = {{k: p.grad for k, p in model.named_parameters()}}
        torch.save({{"state": model.state_dict(), "x": x, "out": out.detach(), "grads": grads}},
                   "run.pt")
    """), tmp_path)
    run = torch.load(tmp_path / "run.pt", weights_only=True)
    ns = {}
    exec(textwrap.dedent(source), ns)  # the same library, on the real torch, in this process
    model = ns["build"]().eval()
    model.load_state_dict(run["state"])
    x = run["x"].clone()
    out = ns["forward"](model, x)
    np.testing.assert_allclose(run["out"].numpy(), out.detach().numpy(), rtol=1e-4, atol=1e-5)
    out.square().sum().backward()
    for k, p in model.named_parameters():
        np.testing.assert_allclose(run["grads"][k].numpy(), p.grad.numpy(), rtol=1e-3, atol=1e-5,
                                   err_msg=k)
