# test_fractional_max_pool.py - fractional max pooling (pygpu/nn/_fractional_pool.py) against
# torch as the oracle on every device: with the same random samples the windows, values,
# indices and gradients are torch's, in float64 and float32 (whose window starts are computed
# in float32, as PyTorch's), 2-d and 3-d, batched and unbatched, output_size and
# output_ratio; the modules; PyTorch's errors.
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(21)

CASES = [
    (2, (2, 3, 9, 11), 2, dict(output_size=(5, 4))),
    (2, (2, 3, 9, 11), (3, 2), dict(output_size=(4, 7))),
    (2, (2, 3, 9, 11), 2, dict(output_size=1)),
    (2, (2, 3, 10, 12), 2, dict(output_ratio=(0.5, 0.5))),
    (2, (3, 9, 11), (2, 3), dict(output_ratio=(0.6, 0.4))),
    (3, (2, 3, 7, 9, 8), (2, 3, 2), dict(output_size=(4, 5, 3))),
    (3, (2, 6, 7, 8), 2, dict(output_ratio=(0.5, 0.5, 0.5))),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n,shape,k,kw", CASES, ids=[f"{c[0]}d-{i}" for i, c in enumerate(CASES)])
def test_fractional_max_pool_matches_torch(device, dtype, n, shape, k, kw):
    x = rng.standard_normal(shape).astype(dtype)
    batch = shape[0] if len(shape) == n + 2 else 1
    s = rng.random((batch, shape[-n - 1], n)).astype(dtype)
    ours = F.fractional_max_pool2d if n == 2 else F.fractional_max_pool3d
    theirs = TF.fractional_max_pool2d if n == 2 else TF.fractional_max_pool3d
    px = pygpu.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    py, pi = ours(px, k, return_indices=True, _random_samples=pygpu.tensor(s, device=device),
                  **kw)
    ty, ti = theirs(tx, k, return_indices=True, _random_samples=torch.tensor(s), **kw)
    np.testing.assert_array_equal(py.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(pi.numpy(), ti.numpy())
    g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    (py * pygpu.tensor(g, device=device)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)  # sums of overlaps
    with_indices = F.fractional_max_pool2d_with_indices if n == 2 else \
        F.fractional_max_pool3d_with_indices
    y2, i2 = with_indices(px, k, _random_samples=pygpu.tensor(s, device=device), **kw)
    np.testing.assert_array_equal(i2.numpy(), ti.numpy())


def test_without_samples_each_call_draws_its_own():
    x = pygpu.tensor(rng.standard_normal((4, 8, 16, 16)))
    a, b = F.fractional_max_pool2d(x, 2, output_size=9), F.fractional_max_pool2d(x, 2,
                                                                                  output_size=9)
    assert tuple(a.shape) == (4, 8, 9, 9)
    assert not np.array_equal(a.numpy(), b.numpy())


def test_modules_and_errors_match_torch():
    s = rng.random((2, 3, 2))
    x = rng.standard_normal((2, 3, 9, 9))
    ours = nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True,
                                  _random_samples=pygpu.tensor(s))
    theirs = torch.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True,
                                          _random_samples=torch.tensor(s))
    for o, t in zip(ours(pygpu.tensor(x)), theirs(torch.tensor(x))):
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["_random_samples"]
    m3 = nn.FractionalMaxPool3d(2, output_size=(2, 3, 2))
    assert tuple(m3(pygpu.zeros(1, 2, 5, 6, 5)).shape) == (1, 2, 2, 3, 2)
    for cls in (nn.FractionalMaxPool2d, torch.nn.FractionalMaxPool2d):
        with pytest.raises(ValueError, match="requires specifying either an output size, or "
                                             "a pooling ratio"):
            cls(2)
        with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
            cls(2, output_size=3, output_ratio=0.5)
        with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
            cls(2, output_ratio=1.5)
    with pytest.raises(RuntimeError, match="fractional_max_pool2d\\(\\): pool height 3 too "
                                           "large relative to input height 4"):
        F.fractional_max_pool2d(pygpu.zeros(1, 1, 4, 4), 3, output_size=3)
    with pytest.raises(RuntimeError, match="pool time 3 too large relative to input time 4"):
        F.fractional_max_pool3d(pygpu.zeros(1, 1, 4, 4, 4), 3, output_size=3)
    with pytest.raises(ValueError, match="requires specifying either an output_size or an "
                                         "output_ratio"):
        F.fractional_max_pool2d(pygpu.zeros(1, 1, 4, 4), 2)
