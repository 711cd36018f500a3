"""torch's linear-algebra names outside torch.linalg, as PyTorch 2 has them:

- the LU and Cholesky helpers: torch.lu (A_LU, pivots[, infos]), lu_solve, lu_unpack,
  cholesky_solve, cholesky_inverse, triangular_solve (solution, coefficient), all on
  pygpu.linalg's LAPACK factorizations and triangular solves, differentiable where those are;
- the norms frobenius_norm, nuclear_norm, norm_except_dim, and vander;
- chain_matmul (deprecated for linalg.multi_dot, which it calls);
- the functions PyTorch removed in 1.9 and keeps as names that raise (eig, symeig, solve,
  lstsq, matrix_rank): the same RuntimeError, in PyTorch's words, so a ported program fails
  where it would under PyTorch 2 and says what to call instead."""
import collections

from .. import _C, _dtype, linalg
from .._tensor import create as _tensor_create
from .._tensor.products import _want

Tensor = _C.Tensor

_LU_UNPACK_T = collections.namedtuple("lu_unpack", ["P", "L", "U"])
_TRI_SOLVE_T = collections.namedtuple("triangular_solve", ["solution", "cloned_coefficient"])

_REMOVED = {
    "eig": "This function was deprecated since version 1.9 and is now removed. "
           "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather "
           "than real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be "
           "replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, "
           "eigenvectors=True) should be replaced with:\nL_complex, V_complex = "
           "torch.linalg.eig(A)",
    "symeig": "This function was deprecated since version 1.9 and is now removed. The default "
              "behavior has changed from using the upper triangular portion of the matrix by "
              "default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, "
              "upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if "
              "upper else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be "
              "replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "solve": "This function was deprecated since version 1.9 and is now removed. `torch.solve` "
             "is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its "
             "arguments reversed and does not return the LU factorization.\n\nTo get the LU "
             "factorization see `torch.lu`, which can be used with `torch.lu_solve` or "
             "`torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = "
             "torch.linalg.solve(A, B)",
    "lstsq": "This function was deprecated since version 1.9 and is now removed. `torch.lstsq` "
             "is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has "
             "reversed arguments and does not return the QR decomposition in the returned tuple "
             "(although it returns other information about the problem).\n\nTo get the QR "
             "decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in "
             "`torch.lstsq` stored the residuals of the solution in the last m - n columns of "
             "the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in "
             "the field 'residuals' of the returned named tuple.\n\nThe unpacking of the "
             "solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be "
             "replaced with:\nX = torch.linalg.lstsq(A, B).solution",
    "matrix_rank": "This function was deprecated since version 1.9 and is now removed.\nPlease "
                   "use the `torch.linalg.matrix_rank` function instead. The parameter "
                   "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
}


def _removed(name):
    def fn(*args, **kwargs):
        raise RuntimeError(_REMOVED[name])
    fn.__name__ = name
    fn.__doc__ = f"Removed from PyTorch in 1.9: raises, as torch.{name} does."
    return fn


def lu(A, pivot=True, get_infos=False, out=None):
    """(A_LU, pivots) or (A_LU, pivots, infos): linalg.lu_factor_ex's packed factors."""
    LU, piv, info = linalg.lu_factor_ex(A, pivot=pivot)
    if not get_infos and bool((info > 0).any()):
        raise RuntimeError("torch.linalg.lu_factor: The factorization could not be completed "
                           "because the input matrix is singular.")
    return (LU, piv, info) if get_infos else (LU, piv)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) from the packed LU factors and LAPACK's 1-based pivots: A = P @ L @ U."""
    P, L, U = linalg._lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
    return _LU_UNPACK_T(P, L, U)


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """Solve A x = b from A's packed LU factors (torch.lu's)."""
    P, L, U = lu_unpack(LU_data, LU_pivots)
    y = linalg.solve_triangular(L, P.mT @ b, upper=False, unitriangular=True)
    x = linalg.solve_triangular(U, y, upper=True)
    return x if out is None else out.copy_(x)


def cholesky_solve(B, L, upper=False, *, out=None):
    """Solve A X = B with A = L L^T (or U^T U when upper) from its Cholesky factor."""
    if upper:
        y = linalg.solve_triangular(L.mT, B, upper=False)
        x = linalg.solve_triangular(L, y, upper=True)
    else:
        y = linalg.solve_triangular(L, B, upper=False)
        x = linalg.solve_triangular(L.mT, y, upper=True)
    return x if out is None else out.copy_(x)


def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of A = L L^T (or U^T U) from its Cholesky factor."""
    n = L.shape[-1]
    eye = _tensor_create.eye(n, dtype=L.dtype, device=L.device)
    x = cholesky_solve(eye.expand(*L.shape), L, upper)
    return x if out is None else out.copy_(x)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """(X, A.clone()) with A X = b (A^T X = b with transpose) for a triangular A."""
    M = A.mT if transpose else A
    x = linalg.solve_triangular(M, b, upper=upper != transpose, unitriangular=unitriangular)
    return _TRI_SOLVE_T(x, A.clone())


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """sqrt of the sum of squares over dim (a tuple of up to two axes)."""
    r = input.norm(2, dim, keepdim=keepdim) if isinstance(dim, int) or len(dim) == 1 else \
        (input * input).sum(tuple(dim), keepdim=keepdim).sqrt()
    return r if out is None else out.copy_(r)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of the singular values (over the last two axes, or dim)."""
    dims = (-2, -1) if dim is None or isinstance(dim, bool) else tuple(dim)
    if isinstance(dim, bool):
        keepdim = dim
    r = linalg.matrix_norm(input, "nuc", dims, keepdim)
    return r if out is None else out.copy_(r)


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm over every axis but dim (kept, size 1 elsewhere); dim=-1: of all."""
    if dim == -1:
        return v.norm(pow)
    d = dim % v.ndim
    axes = tuple(i for i in range(v.ndim) if i != d)
    return v.abs().pow(pow).sum(axes, keepdim=True).pow(1.0 / pow) if axes else v.abs()


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-d x: columns x**(N-1) ... x**0 (increasing: reversed)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    powers = _tensor_create.arange(n, device=x.device)
    if not increasing:
        powers = powers.flip(0)
    base = x if x.dtype.is_floating_point else x.astype(_dtype.int64)
    return base.unsqueeze(1) ** powers.astype(base.dtype).unsqueeze(0) if n else \
        _tensor_create.empty(x.shape[0], 0, dtype=base.dtype, device=x.device)


def chain_matmul(*matrices, out=None):
    """torch.chain_matmul (deprecated there for torch.linalg.multi_dot, which orders the
    products to cost least): the product of 2-D tensors."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        _want("chain_matmul", matrices[0], 2, "matrices[0]")
        r = matrices[0].clone()
    else:
        for k, t in enumerate(matrices):
            _want("chain_matmul", t, 2, f"matrices[{k}]")
        r = linalg.multi_dot(list(matrices))
    if out is not None:
        out.copy_(r)
        return out
    return r


METHODS = {"lu": lu, "lu_solve": lu_solve, "cholesky_solve": cholesky_solve,
           "cholesky_inverse": cholesky_inverse, "triangular_solve": triangular_solve,
           **{n: _removed(n) for n in ("eig", "symeig", "solve", "lstsq")}}
FUNCTIONS = dict(METHODS, lu_unpack=lu_unpack, frobenius_norm=frobenius_norm,
                 nuclear_norm=nuclear_norm, norm_except_dim=norm_except_dim, vander=vander,
                 chain_matmul=chain_matmul,
                 matrix_rank=_removed("matrix_rank"))
