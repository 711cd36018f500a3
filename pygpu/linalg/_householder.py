"""QR in LAPACK's compact form, as PyTorch exposes it: torch.geqrf (the Householder
reflectors and their scales, LAPACK's ?geqrf), torch.orgqr and
torch.linalg.householder_product (Q from them, ?orgqr), torch.ormqr (Q or Q^T applied to a
matrix without forming Q, ?ormqr); real float32/float64, batched over leading dims.

Each is a loop over the k reflectors (not over elements), every step a few device ops over
the whole batch: geqrf follows LAPACK's dlarfg (beta = -sign(alpha) * ||(alpha, x)||,
tau = (beta - alpha) / beta, v = x / (alpha - beta); tau = 0 where x is zero), so its
results are LAPACK's to rounding. H_i = I - tau_i v_i v_i^T is applied as a rank-1 update
C - tau v (v^T C) with v_i zero above row i and 1 at it, out of place: autograd
differentiates orgqr and ormqr through it (PyTorch's have gradients; its geqrf has none,
nor has this one: it runs on detached values)."""
from .. import _C
from .._dtype import float32, float64
from .._tensor import create as _tensor_create

Tensor = _C.Tensor


def _check_real(fn, *ts):
    for t in ts:
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): expected Tensor arguments, got {type(t).__name__}")
        if t.dtype not in (float32, float64):
            raise RuntimeError(f"{fn}: pygpu supports float32 and float64 here, got {t.dtype}")


def _reflector(A, tau, i):
    """v_i (..., m, 1): 0 above row i, 1 at row i, A's column i below; tau_i (..., 1, 1)."""
    m = A.shape[-2]
    rows = _tensor_create.arange(m, device=A.device).reshape(m, 1)
    below = (rows > i).astype(A.dtype)
    at = (rows == i).astype(A.dtype)
    v = A[..., :, i:i + 1] * below + at
    return v, tau[..., i:i + 1].unsqueeze(-1)


def geqrf(input):
    """(a, tau): LAPACK's ?geqrf of input (..., m, n). R is a's upper triangle; below the
    diagonal, column i holds reflector i's v (its leading 1 implied); tau (..., min(m, n))."""
    _check_real("geqrf", input)
    if input.ndim < 2:
        raise RuntimeError(f"torch.geqrf: input must have at least 2 dimensions. Got "
                           f"{input.ndim}")
    m, n = input.shape[-2], input.shape[-1]
    k = min(m, n)
    a = input.detach().clone()
    taus = []
    rows = _tensor_create.arange(m, device=a.device).reshape(m, 1)
    for i in range(k):
        alpha = a[..., i:i + 1, i:i + 1]  # (..., 1, 1)
        x = a[..., i + 1:, i:i + 1]
        xnorm = (x * x).sum(-2, keepdim=True).sqrt() if m > i + 1 else alpha * 0.0
        norm = (alpha * alpha + xnorm * xnorm).sqrt()
        sign = _C.where(alpha < 0, -1.0, 1.0).astype(a.dtype)
        beta = -sign * norm
        trivial = xnorm == 0
        safe_beta = _C.where(trivial, 1.0, beta).astype(a.dtype)
        tau = _C.where(trivial, 0.0, (beta - alpha) / safe_beta).astype(a.dtype)
        scale = _C.where(trivial, 0.0, 1.0 / _C.where(trivial, 1.0, alpha - beta)).astype(
            a.dtype)
        col = a[..., :, i:i + 1]
        below = (rows > i).astype(a.dtype)
        at = (rows == i).astype(a.dtype)
        v = col * below * scale + at  # (..., m, 1)
        # the new column i: beta at the diagonal (alpha where H is I), v below
        new_diag = _C.where(trivial, alpha, beta).astype(a.dtype)
        new_col = col * (1.0 - below - at) + at * new_diag + v * below
        rest = a[..., :, i + 1:]
        if rest.shape[-1]:
            rest = rest - v * (tau * (v.transpose(-2, -1) @ rest))
        a = _cat_cols(a[..., :, :i], new_col, rest)
        taus.append(tau.reshape(*tau.shape[:-2], 1))
    from .._tensor.join import cat
    tau = cat(taus, -1) if taus else _tensor_create.zeros((*input.shape[:-2], 0),
                                                          dtype=input.dtype,
                                                          device=input.device)
    return a, tau


def _cat_cols(left, mid, right):
    from .._tensor.join import cat
    parts = [p for p in (left, mid, right) if p.shape[-1]]
    return cat(parts, -1)


def _check_tau(fn, A, tau):
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if tau.ndim != A.ndim - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{fn}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.shape[-1] > A.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")


def householder_product(A, tau, *, out=None):
    """torch.linalg.householder_product: the first n columns of H_0 H_1 ... H_{k-1}, the
    reflectors' vectors in A's (..., m, n) columns below the diagonal, their scales tau
    (..., k)."""
    _check_real("householder_product", A, tau)
    fn = "torch.linalg.householder_product"
    _check_tau(fn, A, tau)
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    Q = _tensor_create.eye(m, n, dtype=A.dtype, device=A.device).expand(*A.shape).contiguous()
    for i in reversed(range(tau.shape[-1])):
        v, t = _reflector(A, tau, i)
        Q = Q - v * (t * (v.transpose(-2, -1) @ Q))
    if out is not None:
        return out.copy_(Q)
    return Q


def orgqr(input, input2):
    """torch.orgqr(input, tau): householder_product(input, tau) (LAPACK's ?orgqr)."""
    return householder_product(input, input2)


def ormqr(input, input2, input3, left=True, transpose=False):
    """torch.ormqr(input, tau, other, left=True, transpose=False): Q @ other (left) or
    other @ Q, with Q^T for transpose, Q (m, m) the product of input's reflectors (input
    (..., m, k') and tau (..., k) as geqrf returns them), never formed (LAPACK's ?ormqr)."""
    tau, C = input2, input3
    _check_real("ormqr", input, tau, C)
    fn = "torch.ormqr"
    _check_tau(fn, input, tau)
    if C.ndim < 2:
        raise RuntimeError(f"{fn}: other must have at least 2 dimensions.")
    m = input.shape[-2]
    if (C.shape[-2] if left else C.shape[-1]) != m:
        which = "other.shape[-2]" if left else "other.shape[-1]"
        raise RuntimeError(f"{fn}: {which} must be equal to input.shape[-2]")
    k = tau.shape[-1]
    # Q C = H_0 (... (H_{k-1} C)); Q^T C from H_0 first; C Q from H_0 first; C Q^T from H_{k-1}
    order = range(k) if left == bool(transpose) else reversed(range(k))
    for i in order:
        v, t = _reflector(input, tau, i)
        if left:
            C = C - v * (t * (v.transpose(-2, -1) @ C))
        else:
            C = C - (C @ v) * t * v.transpose(-2, -1)
    return C


METHODS = {"geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr}
FUNCTIONS = dict(METHODS)
