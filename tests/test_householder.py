# test_householder.py - LAPACK's compact QR as PyTorch exposes it (torch.geqrf, orgqr,
# ormqr, linalg.householder_product: pygpu/linalg/_householder.py) and torch.lobpcg
# (pygpu/linalg/_lobpcg.py) against torch on every device: tall, wide, square and batched
# matrices, every side and transpose of ormqr, orgqr's gradient; lobpcg's largest and
# smallest eigenpairs, with and without B, against torch's and LAPACK's; PyTorch's errors.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

rng = np.random.default_rng(11)
SHAPES = [(5, 3), (3, 5), (2, 4, 4), (4, 1)]


def P(t, device, grad=False):
    a = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    return pygpu.tensor(a, device=device, requires_grad=grad)


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_geqrf_is_lapacks(device, shape):
    A = torch.tensor(rng.standard_normal(shape))
    a, tau = torch.geqrf(A)
    pa, ptau = pygpu.geqrf(P(A, device))
    np.testing.assert_allclose(pa.numpy(), a.numpy(), atol=1e-13)
    np.testing.assert_allclose(ptau.numpy(), tau.numpy(), atol=1e-13)
    pa2, ptau2 = P(A, device).geqrf()
    np.testing.assert_allclose(pa2.numpy(), a.numpy(), atol=1e-13)


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_orgqr_and_ormqr_match_torch(device, shape):
    a, tau = torch.geqrf(torch.tensor(rng.standard_normal(shape)))
    if shape[-2] >= shape[-1]:
        np.testing.assert_allclose(pygpu.orgqr(P(a, device), P(tau, device)).numpy(),
                                   torch.orgqr(a, tau).numpy(), atol=1e-13)
        np.testing.assert_allclose(
            pygpu.linalg.householder_product(P(a, device), P(tau, device)).numpy(),
            torch.linalg.householder_product(a, tau).numpy(), atol=1e-13)
    m = shape[-2]
    for left in (True, False):
        for transpose in (False, True):
            c = rng.standard_normal(shape[:-2] + ((m, 2) if left else (2, m)))
            ref = torch.ormqr(a, tau, torch.tensor(c), left, transpose)
            out = P(a, device).ormqr(P(tau, device), P(c, device), left, transpose)
            np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-13)


def test_orgqr_gradient(device):
    a, tau = torch.geqrf(torch.tensor(rng.standard_normal((5, 3))))
    a.requires_grad_()
    tau.requires_grad_()
    g = rng.standard_normal((5, 3))
    torch.orgqr(a, tau).backward(torch.tensor(g))
    pa, pt = P(a, device, True), P(tau, device, True)
    pygpu.orgqr(pa, pt).backward(P(g, device))
    np.testing.assert_allclose(pa.grad.numpy(), a.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(pt.grad.numpy(), tau.grad.numpy(), atol=1e-12)


def test_householder_errors():
    a, tau = pygpu.geqrf(pygpu.tensor(rng.standard_normal((3, 5))))
    with pytest.raises(RuntimeError, match=r"input.shape\[-2\] must be greater than or equal"):
        pygpu.orgqr(a, tau)
    with pytest.raises(RuntimeError, match=r"input.shape\[-2\] must be greater than or equal"):
        torch.orgqr(torch.zeros(3, 5, dtype=torch.float64), torch.zeros(3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=r"other.shape\[-2\] must be equal"):
        pygpu.ormqr(a, tau, pygpu.zeros(4, 2, dtype=pygpu.float64))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        pygpu.geqrf(pygpu.zeros(3))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("generalized", [False, True])
def test_lobpcg_finds_the_extreme_eigenpairs(device, largest, generalized):
    M = rng.standard_normal((30, 30))
    A = M @ M.T + 0.1 * np.eye(30)
    Bm = rng.standard_normal((30, 30))
    B = Bm @ Bm.T / 30 + np.eye(30) if generalized else None
    tE, tX = torch.lobpcg(torch.tensor(A), k=3, B=None if B is None else torch.tensor(B),
                          largest=largest)
    E, X = pygpu.lobpcg(P(A, device), k=3, B=None if B is None else P(B, device),
                        largest=largest)
    assert tuple(E.shape) == (3,) and tuple(X.shape) == (30, 3)
    np.testing.assert_allclose(E.numpy(), tE.numpy(), rtol=1e-9)
    # the same eigenvectors up to sign, B-orthonormal
    Bn = np.eye(30) if B is None else B
    np.testing.assert_allclose(np.abs(X.numpy().T @ Bn @ tX.numpy()), np.eye(3), atol=1e-8)
    # LAPACK's eigenvalues of the (generalized) problem
    L = np.linalg.cholesky(Bn)
    Li = np.linalg.inv(L)
    w = np.linalg.eigvalsh(Li @ A @ Li.T)
    want = w[::-1][:3] if largest else w[:3]
    np.testing.assert_allclose(E.numpy(), want, rtol=1e-9)


def test_lobpcg_errors():
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested"):
        pygpu.lobpcg(pygpu.eye(5, dtype=pygpu.float64), k=2)
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested"):
        torch.lobpcg(torch.eye(5, dtype=torch.float64), k=2)
