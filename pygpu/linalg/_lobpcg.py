"""torch.lobpcg: the k largest (or smallest) eigenpairs of a symmetric positive (semi-)
definite matrix A, or of the generalized problem A x = lambda B x, by LOBPCG (Knyazev's
locally optimal block preconditioned conjugate gradient), with PyTorch's signature,
defaults (n = k, niter 1000, tol = sqrt(eps of the dtype), largest=True) and checks.

Each iteration is block operations on the device: the residuals R = A X - B X diag(E) (with
the preconditioner iK applied), the basis [X, W, P] made B-orthonormal through the
eigendecomposition of its Gram matrix (directions that have converged to nothing are
dropped, so the basis stays well conditioned: the "ortho" method's purpose), and a
Rayleigh-Ritz step (linalg.eigh of the projected matrix) that keeps the n extreme Ritz
pairs. It stops when every wanted pair's relative residual
||R_i|| / (||X_i|| (||A|| + |E_i| ||B||)) is below tol. A is 2-d here (PyTorch's
documentation allows batches; its algorithm does not run them either)."""
from .. import _C
from .._dtype import float32, float64

Tensor = _C.Tensor


def _gram_basis(S, B, eps):
    """A B-orthonormal basis of span(S): S V diag(lambda^-1/2) over the Gram matrix's
    eigenpairs with lambda above eps times the largest."""
    from . import eigh
    BS = S if B is None else B @ S
    G = S.t() @ BS
    G = (G + G.t()) * 0.5
    lam, V = eigh(G)
    lam_l = lam.tolist()
    top = max(lam_l) if lam_l else 0.0
    keep = [i for i, v in enumerate(lam_l) if v > eps * top]
    from .._tensor.create import tensor
    idx = tensor(keep, device=S.device)
    V = V.index_select(1, idx)
    lam = lam.index_select(0, idx)
    return S @ (V * lam.rsqrt())


def _rayleigh_ritz(Q, A, n, largest):
    """(E (n,), C (q, n)): the n extreme eigenpairs of Q^T A Q, largest first if largest."""
    from . import eigh
    H = Q.t() @ (A @ Q)
    H = (H + H.t()) * 0.5
    E, C = eigh(H)  # ascending
    q = E.shape[0]
    if largest:
        from .._tensor.create import arange
        order = arange(q - 1, q - 1 - n, -1, device=Q.device)
    else:
        from .._tensor.create import arange
        order = arange(0, n, device=Q.device)
    return E.index_select(0, order), C.index_select(1, order)


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """(E, X): the k extreme eigenvalues (k,) of A (m, m) [in the metric B] and their
    eigenvectors (m, k). X (m, n) is the initial block (random normal when None), iK a
    preconditioner, tracker(state) is called after every iteration with a dict of the
    iteration's E, X, residual norms and count."""
    if not isinstance(A, Tensor):
        raise TypeError(f"lobpcg(): A must be a Tensor, got {type(A).__name__}")
    if A.dtype not in (float32, float64):
        raise ValueError(f"lobpcg: expected a float32 or float64 A, got {A.dtype}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix, got {list(A.shape)}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise ValueError(f"A and B must have the same shapes, got {list(A.shape)} and "
                         f"{list(B.shape)}")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"expected method to be 'basic' or 'ortho', got {method!r}")
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else int(k)
    n = (k if X is None else X.shape[-1]) if n is None else int(n)
    if m < 3 * n:
        raise ValueError(f"LPBPCG algorithm is not applicable when the number of A rows "
                         f"(={m}) is smaller than 3 x the number of requested eigenpairs "
                         f"(={n})")
    if X is None:
        from .._tensor.create import randn
        X = randn(m, n, dtype=A.dtype, device=A.device)
    elif X.ndim != 2 or X.shape[0] != m or X.shape[1] < k:
        raise ValueError(f"X must be (m, n) with n >= k: got {list(X.shape)} for m={m}, k={k}")
    n = X.shape[1]
    largest = True if largest is None else bool(largest)
    niter = 1000 if niter is None else int(niter)
    eps = 1.1920929e-07 if A.dtype is float32 else 2.220446049250313e-16
    tol = eps ** 0.5 if tol is None else float(tol)
    from . import matrix_norm
    A_norm = float(matrix_norm(A, 2).item())
    B_norm = 1.0 if B is None else float(matrix_norm(B, 2).item())
    Q = _gram_basis(X, B, eps)
    E, C = _rayleigh_ritz(Q, A, n, largest)
    X = Q @ C
    P = None
    from .._tensor.join import cat
    for it in range(niter):
        BX = X if B is None else B @ X
        R = A @ X - BX * E
        rnorm = (R * R).sum(0).sqrt()
        xnorm = (X * X).sum(0).sqrt()
        rerr = rnorm / (xnorm * (A_norm + E.abs() * B_norm))
        if tracker is not None:
            tracker({"iteration": it, "E": E, "X": X, "rerr": rerr})
        if bool((rerr[:k] < tol).all().item()):
            break
        W = R if iK is None else iK @ R
        S = cat([X, W] + ([] if P is None else [P]), 1)
        Q = _gram_basis(S, B, eps)
        E, C = _rayleigh_ritz(Q, A, n, largest)
        X_new = Q @ C
        # the new search direction: X_new's part outside the old X (Knyazev's P)
        BXo = X if B is None else B @ X
        P = X_new - X @ (BXo.t() @ X_new)
        X = X_new
    return E[:k], X[:, :k]


FUNCTIONS = {"lobpcg": lobpcg}
