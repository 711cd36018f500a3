"""torch.linalg's functions that are compositions of the LINALG node's factorizations
(lu, lu_solve, solve_ex, tensorinv, tensorsolve, vander), each with PyTorch's signature,
result names and errors. They run on whatever device the factorizations run on, and their
gradients are those of the ops they are made of (solve's, matmul's); linalg.lu's factors
come from lu_factor, which has no gradient here."""
import collections
import math

from .._tensor import create as _create

_lu_t = collections.namedtuple("lu", ["P", "L", "U"])
_solve_ex_t = collections.namedtuple("linalg_solve_ex", ["result", "info"])


def _linalg():
    from .. import linalg  # the package: this module is one of its files
    return linalg


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U (partial pivoting, LAPACK's getrf)."""
    from ._legacy import lu_unpack
    LU, piv = _linalg().lu_factor(A, pivot=pivot)
    P, L, U = lu_unpack(LU, piv)
    return _out(_lu_t(P, L, U), out)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (left=False: X A = B; adjoint: A^H in A's place), A given by
    lu_factor's (LU, pivots)."""
    from ._legacy import lu_unpack
    la = _linalg()
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError("linalg.lu_solve: Expected LU to be a square matrix or batch of "
                           f"square matrices, but got shape {tuple(LU.shape)}")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: Expected B to have at least 2 dimensions, but it "
                           f"has {B.ndim} dimensions instead")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError("linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    P, L, U = lu_unpack(LU, pivots)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _out(lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT
                    if not LU.dtype.is_complex else
                    lu_solve(LU, pivots, B.mH, left=True, adjoint=not adjoint).mH, out)
    if adjoint:  # A^H = U^H L^H P^T
        y = la.solve_triangular(U.mH, B, upper=False)
        z = la.solve_triangular(L.mH, y, upper=True, unitriangular=True)
        return _out(P @ z, out)
    y = la.solve_triangular(L, P.mT @ B, upper=False, unitriangular=True)
    return _out(la.solve_triangular(U, y, upper=True), out)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(X, info): solve's result, and LAPACK's info (0, or the singular pivot's 1-based
    index) instead of an error unless check_errors. For a singular A the result is NaN
    (PyTorch's holds whatever getrs left, infinities)."""
    la = _linalg()
    LU, piv, info = la.lu_factor_ex(A)
    info = info.to("int32")  # LAPACK's integer, as PyTorch returns it
    if check_errors and bool((info > 0).any()):
        raise la.LinAlgError("linalg.solve_ex: The solver failed because the input matrix is "
                             "singular.")
    if bool((info > 0).any()):
        nan = _create.full(tuple(B.shape), float("nan"), dtype=A.dtype, device=A.device)
        return _out(_solve_ex_t(nan, info), out)
    return _out(_solve_ex_t(la.solve(A, B, left=left), info), out)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A seen as a map from its last dims to its first `ind` dims."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape = tuple(A.shape[ind:]) + tuple(A.shape[:ind])
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {cols} != "
                           f"{rows}")
    return _out(_linalg().inv(A.reshape(rows, cols)).reshape(out_shape), out)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        keep = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(*keep, *dims)
    res_shape = tuple(A.shape[B.ndim:])
    rows, cols = math.prod(B.shape), math.prod(res_shape)
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but "
                           f"got {cols} != {rows}")
    X = _linalg().solve(A.reshape(rows, cols), B.reshape(rows))
    return _out(X.reshape(res_shape), out)


def vander(x, N=None):
    """The Vandermonde matrix with increasing powers: x^0, x^1, ..., x^(N-1) along the last
    dim (batched over x's leading dims)."""
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("linalg.vander: N must be greater than 1.")
    powers = _create.arange(n, device=x.device)
    if x.dtype.is_floating_point or x.dtype.is_complex:
        return x.unsqueeze(-1) ** powers.to(x.dtype)
    base = x.to("int64") if x.dtype.itemsize < 8 or not x.dtype.is_signed else x
    return base.unsqueeze(-1) ** powers


def _out(result, out):
    if out is None:
        return result
    if isinstance(result, tuple):
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return out
    return out.resize_(result.shape).copy_(result)
