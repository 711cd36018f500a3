# test_linalg_composed.py - torch.linalg's lu, lu_solve, solve_ex, tensorinv, tensorsolve and
# vander against torch's, on cpu and sim (they are compositions of the LINALG node's
# factorizations), with gradients where torch has them through solve.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4, 4))
B = RNG.standard_normal((3, 4, 2))


def _ours(x, device):
    return pygpu.tensor(x, device=device)


def test_lu_and_lu_solve_equal_torch(device):
    P, L, U = pygpu.linalg.lu(_ours(A, device))
    Pr, Lr, Ur = torch.linalg.lu(torch.tensor(A))
    for a, b in ((P, Pr), (L, Lr), (U, Ur)):
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), atol=1e-12)
    LU, piv = pygpu.linalg.lu_factor(_ours(A, device))
    LUr, pr = torch.linalg.lu_factor(torch.tensor(A))
    for left in (True, False):
        for adjoint in (False, True):
            b = B if left else B.transpose(0, 2, 1)
            x = pygpu.linalg.lu_solve(LU, piv, _ours(b, device), left=left, adjoint=adjoint)
            xr = torch.linalg.lu_solve(LUr, pr, torch.tensor(b), left=left, adjoint=adjoint)
            np.testing.assert_allclose(x.cpu().numpy(), xr.numpy(), atol=1e-12)
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        pygpu.linalg.lu_solve(LU, piv, _ours(B[:, :3], device))


def test_solve_ex_info_and_errors_as_torch(device):
    x, info = pygpu.linalg.solve_ex(_ours(A, device), _ours(B, device))
    xr, infor = torch.linalg.solve_ex(torch.tensor(A), torch.tensor(B))
    np.testing.assert_allclose(x.cpu().numpy(), xr.numpy(), atol=1e-12)
    assert info.dtype == pygpu.int32 and info.tolist() == infor.tolist()
    S = np.ones((2, 2))
    _, info = pygpu.linalg.solve_ex(_ours(S, device), _ours(np.ones(2), device))
    assert int(info) == int(torch.linalg.solve_ex(torch.tensor(S), torch.ones(2, dtype=torch.float64)).info)
    with pytest.raises(pygpu.linalg.LinAlgError, match="The solver failed because the input "
                                                       "matrix is singular"):
        pygpu.linalg.solve_ex(_ours(S, device), _ours(np.ones(2), device), check_errors=True)


def test_tensorinv_tensorsolve_vander_equal_torch(device):
    T = RNG.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(pygpu.linalg.tensorinv(_ours(T, device), ind=2).cpu().numpy(),
                               torch.linalg.tensorinv(torch.tensor(T), ind=2).numpy(), atol=1e-10)
    with pytest.raises(RuntimeError, match="strictly positive integer for 'ind'"):
        pygpu.linalg.tensorinv(_ours(T, device), ind=0)
    A2, B2 = RNG.standard_normal((2, 3, 6)), RNG.standard_normal((2, 3))
    np.testing.assert_allclose(
        pygpu.linalg.tensorsolve(_ours(A2, device), _ours(B2, device)).cpu().numpy(),
        torch.linalg.tensorsolve(torch.tensor(A2), torch.tensor(B2)).numpy(), atol=1e-12)
    A3, B3 = RNG.standard_normal((6, 2, 3)), RNG.standard_normal((2, 3))
    np.testing.assert_allclose(
        pygpu.linalg.tensorsolve(_ours(A3, device), _ours(B3, device), dims=(0,)).cpu().numpy(),
        torch.linalg.tensorsolve(torch.tensor(A3), torch.tensor(B3), dims=(0,)).numpy(),
        atol=1e-12)
    x = RNG.standard_normal((2, 5))
    np.testing.assert_allclose(pygpu.linalg.vander(_ours(x, device), N=4).cpu().numpy(),
                               torch.linalg.vander(torch.tensor(x), N=4).numpy(), rtol=1e-14)
    vi = pygpu.linalg.vander(pygpu.tensor([1, 2, 3], dtype=pygpu.int32, device=device))
    vr = torch.linalg.vander(torch.tensor([1, 2, 3], dtype=torch.int32))
    assert vi.tolist() == vr.tolist() and str(vi.dtype) == str(vr.dtype)


def test_lu_solve_gradients_equal_torch():
    LU, piv = pygpu.linalg.lu_factor(pygpu.tensor(A))
    LUr, pr = torch.linalg.lu_factor(torch.tensor(A))
    b = pygpu.tensor(B, requires_grad=True)
    br = torch.tensor(B, requires_grad=True)
    (pygpu.linalg.lu_solve(LU, piv, b) ** 2).sum().backward()
    (torch.linalg.lu_solve(LUr, pr, br) ** 2).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), br.grad.numpy(), rtol=1e-10)
