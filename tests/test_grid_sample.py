# test_grid_sample.py - nn.functional.grid_sample and affine_grid (pygpu/nn/_grid_sample.py)
# against torch as the oracle on every device: every mode (bilinear, nearest, bicubic) and
# padding mode (zeros, border, reflection), with and without align_corners, in 2-d and 3-d;
# the values and the gradients for the input and for the grid in float64; the torch-level
# spellings (grid_sampler, grid_sampler_2d/3d, affine_grid_generator), the mode tables, a
# spatial transformer's affine_grid -> grid_sample chain with theta's gradient, and PyTorch's
# errors and warnings.
import itertools
import warnings

import numpy as np
import pytest

import pygpu
from pygpu.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(12)

CASES = [(n, mode, pad, ac) for n in (2, 3)
         for mode, pad, ac in itertools.product(("bilinear", "nearest", "bicubic"),
                                                ("zeros", "border", "reflection"), (False, True))
         if not (mode == "bicubic" and n == 3)]


@pytest.mark.parametrize("n,mode,pad,ac", CASES,
                         ids=[f"{n}d-{m}-{p}-{'ac' if a else 'noac'}" for n, m, p, a in CASES])
def test_grid_sample_matches_torch(device, n, mode, pad, ac):
    x = rng.standard_normal((2, 3) + ((5, 6) if n == 2 else (4, 5, 3)))
    g = rng.uniform(-1.3, 1.3, (2,) + ((4, 3) if n == 2 else (3, 2, 4)) + (n,))
    px = pygpu.tensor(x, device=device, requires_grad=True)
    pg = pygpu.tensor(g, device=device, requires_grad=True)
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    po, to = F.grid_sample(px, pg, mode, pad, ac), TF.grid_sample(tx, tg, mode, pad, ac)
    assert tuple(po.shape) == tuple(to.shape)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    w = rng.standard_normal(tuple(to.shape))
    (po * pygpu.tensor(w, device=device)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pg.grad.numpy(), tg.grad.numpy(), rtol=1e-9, atol=1e-11)
    modes = (F.GRID_SAMPLE_INTERPOLATION_MODES[mode], F.GRID_SAMPLE_PADDING_MODES[pad])
    np.testing.assert_allclose(
        pygpu.grid_sampler(px, pg, *modes, ac).detach().numpy(), to.detach().numpy(),
        rtol=1e-10, atol=1e-12)
    spelled = pygpu.grid_sampler_2d if n == 2 else pygpu.grid_sampler_3d
    np.testing.assert_allclose(spelled(px, pg, *modes, ac).detach().numpy(),
                               to.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_the_mode_tables_are_torchs():
    assert F.GRID_SAMPLE_INTERPOLATION_MODES == TF.GRID_SAMPLE_INTERPOLATION_MODES
    assert F.GRID_SAMPLE_PADDING_MODES == TF.GRID_SAMPLE_PADDING_MODES


@pytest.mark.parametrize("size", [(2, 3, 5, 4), (2, 3, 1, 4), (2, 1, 3, 4, 5)])
@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid_and_a_spatial_transformer_match_torch(device, size, ac):
    n = len(size) - 2
    theta = rng.standard_normal((size[0], n, n + 1)) * 0.5 + np.eye(n, n + 1)
    x = rng.standard_normal(size)
    pt = pygpu.tensor(theta, device=device, requires_grad=True)
    tt = torch.tensor(theta, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit-size grids with align_corners warn, as in torch
        pgrid, tgrid = F.affine_grid(pt, size, ac), TF.affine_grid(tt, size, ac)
    np.testing.assert_allclose(pgrid.detach().numpy(), tgrid.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(
        pygpu.affine_grid_generator(pt, size, ac).detach().numpy(),
        torch.affine_grid_generator(tt, size, ac).detach().numpy(), rtol=1e-12, atol=1e-14)
    po = F.grid_sample(pygpu.tensor(x, device=device), pgrid, align_corners=ac)
    to = TF.grid_sample(torch.tensor(x), tgrid, align_corners=ac)
    po.square().sum().backward()
    to.square().sum().backward()
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(pt.grad.numpy(), tt.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_errors_and_warnings_are_torchs():
    x, g = pygpu.zeros(1, 2, 3, 3), pygpu.zeros(1, 2, 2, 2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, g)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(pygpu.zeros(1, 2, 3), (1, 2, 3, 3))
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or "
                                         "'bicubic', but got: 'area'"):
        F.grid_sample(x, g, mode="area", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or "
                                         "'reflection'"):
        F.grid_sample(x, g, padding_mode="wrap", align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(x, pygpu.zeros(1, 2, 2, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(x, pygpu.zeros(2, 2, 2, 2), align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(pygpu.zeros(1, 1, 2, 2, 2), pygpu.zeros(1, 1, 1, 1, 3), mode="bicubic",
                      align_corners=False)
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape "
                                         "Nx2x3"):
        F.affine_grid(pygpu.zeros(1, 3, 4), (1, 2, 3, 3), align_corners=False)
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D"):
        F.affine_grid(pygpu.zeros(1, 2, 3), (1, 2, 3), align_corners=False)
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(pygpu.zeros(1, 2, 3, dtype=pygpu.int64), (1, 2, 3, 3),
                      align_corners=False)
