"""pygpu.linalg: torch.linalg's functions.

The factorizations (LU, solve, inv, det, slogdet, cholesky, qr, svd, eigh, lstsq) are one
LINALG node each (csrc/core/pg_ops_linalg.c; the sub-ops are LINALG rows of
csrc/core/pg_subops.def), run where the data is when the device's backend has the node:
LAPACK from the OpenBLAS pygpu links on cpu and on sim's worker (the CPU backend's
cpu_linalg.c), cuSOLVER on cuda (csrc/backends/cuda/cuda_cusolver.c, loaded on the first
factorization). Each reads the info back to raise PyTorch's error (on sim and cuda, one
counted implicit transfer of 8 bytes per matrix, as PyTorch's cuda linalg synchronizes on
its info). Where the backend declines the node (lstsq on cuda: cuSOLVER has no gelsd; cuda
without a loadable cuSOLVER), its operands are moved to the cpu and the result back, two
counted, explicit transfers (pygpu.stats() shows them). The norms,
matrix_power, multi_dot, vecdot, cross and diagonal are compositions of device ops and
run where the data is.

Gradients, PyTorch's formulas (autograd Functions here): solve, inv, det, slogdet,
logdet, cholesky, eigh (values and vectors), eigvalsh, svdvals (and svd's S), the norms;
qr, svd's U and Vh, lstsq and pinv are not differentiable in pygpu (their backward
raises, naming the op)."""
import collections
import math

from .. import _C
from .._tensor import create as _create
from ..autograd.function import Function, fused_backward
from ..autograd.grad_mode import is_grad_enabled

Tensor = _C.Tensor

_slogdet_t = collections.namedtuple("slogdet", ["sign", "logabsdet"])
_eigh_t = collections.namedtuple("eigh", ["eigenvalues", "eigenvectors"])
_qr_t = collections.namedtuple("qr", ["Q", "R"])
_svd_t = collections.namedtuple("svd", ["U", "S", "Vh"])
_lstsq_t = collections.namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])
_lu_factor_t = collections.namedtuple("lu_factor", ["LU", "pivots"])
_inv_ex_t = collections.namedtuple("linalg_inv_ex", ["inverse", "info"])
_cholesky_ex_t = collections.namedtuple("linalg_cholesky_ex", ["L", "info"])


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a factorization failed on its input (singular, not
    positive-definite)."""


def _check(op, A, ndim=2):
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(A).__name__}")
    if not A.dtype.is_floating_point or A.dtype.name in ("float16", "bfloat16"):
        raise TypeError(f"{op}: Expected a floating point tensor as input (float32 or "
                        f"float64). Got {A.dtype} on {A.device}")
    if A.ndim < ndim:
        raise RuntimeError(f"{op}: The input tensor A must have at least {ndim} dimensions.")


def _lapack(op, A, B=None, flag=0, param=0.0, check=True):
    """One LINALG node (op: a LINALG row's ID, "CHOLESKY") on A's device where its backend
    has the node, else on the cpu (the operands moved there, counted, and the results back).
    Its outputs; with check=False, LAPACK's info (int64, per matrix) last, unchecked."""
    dev = A.device
    here = _C._has_node("LINALG", A, op, B)  # the backend answers per sub-op, not the device type
    a = A.detach() if here else A.detach().to("cpu")
    b = None if B is None else B.detach().to(a.device).to(A.dtype)
    try:
        outs = _C._linalg(op, a, b, flag, float(param), check)
    except RuntimeError as e:
        raise LinAlgError(str(e)) from None
    outs = outs if not check else outs[:-1]
    if here:
        return outs
    return tuple(o.to(dev) for o in outs)


def _mT(x):
    return x.transpose(-2, -1)


def _square(op, A):
    _check(op, A)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _sum_to(g, shape):
    """g summed over the batch axes broadcasting added, back to `shape`."""
    from ..autograd.rules import unbroadcast
    return unbroadcast(g, tuple(shape))


# ---- inverse and solve ---------------------------------------------------------------------

class _Inv(Function):
    @staticmethod
    def forward(ctx, A, info=None):
        """info: None (a singular matrix raises), or a list that receives LAPACK's info."""
        Y, *rest = _lapack("INV", A, check=info is None)
        if info is not None:
            info.append(rest[0])
        ctx.save(Y)
        return Y

    @staticmethod
    def backward(ctx, g):
        (Y,) = ctx.saved
        Yt = _mT(Y)
        return -(Yt @ g @ Yt), None


def inv(A, *, out=None):
    _square("linalg.inv", A)
    return _into(_Inv.apply(A), out)


def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): info per matrix is LAPACK's (0, or the 1-based index of U's zero
    diagonal element), as int32; a singular matrix's inverse is whatever LAPACK left, the
    other matrices of the batch are inverted (PyTorch's semantics)."""
    if check_errors:
        return _out_of(_inv_ex_t(inv(A), _info_zeros(A)), out)
    _square("linalg.inv", A)
    box = []
    inverse = _Inv.apply(A, box)
    return _out_of(_inv_ex_t(inverse, box[0].to("int32")), out)


def _info_zeros(A):
    from .._tensor.create import zeros
    return zeros(tuple(A.shape[:-2]), dtype="int32", device=A.device)


class _Solve(Function):
    @staticmethod
    def forward(ctx, A, B):
        (X,) = _lapack("SOLVE", A, B)
        ctx.save(A, X)
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved
        gB = _Solve.apply(_mT(A).contiguous(), g)
        gA = -(gB @ _mT(X))
        return gA, gB


def solve(A, B, *, left=True, out=None):
    """X with A X = B (left=False: X A = B). B may be a vector (.., n) or matrices
    (.., n, k); the batch axes broadcast."""
    _square("linalg.solve", A)
    _check("linalg.solve", B, 1)
    if not left:
        return _into(_mT(solve(_mT(A), _mT(B))), out)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.unsqueeze(-1) if vector else B
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = "
                           f"B ({A.shape[-2]}x{A.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    batch = _broadcast_batch(A.shape[:-2], b.shape[:-2])
    Ab = A.expand(*batch, *A.shape[-2:]) if tuple(A.shape[:-2]) != batch else A
    bb = b.expand(*batch, *b.shape[-2:]) if tuple(b.shape[:-2]) != batch else b
    if b.dtype != A.dtype:
        bb = bb.to(A.dtype)
    X = _Solve.apply(Ab.contiguous() if Ab is not A else A, bb.contiguous() if bb is not b else bb)
    return _into(X.squeeze(-1) if vector else X, out)


def _broadcast_batch(a, b):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"linalg: the batch dimensions {a} and {b} do not broadcast")
        out.append(max(x, y) if x and y else 0)
    return tuple(out)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """A triangular system, solved as a general one (LAPACK's gesv on the triangle)."""
    T = A.triu() if upper else A.tril()
    if unitriangular:
        from .._tensor.shape import diagonal
        T = T - _diag_embed(diagonal(T, 0, -2, -1)) + _eye_like(T)
    return solve(T, B, left=left, out=out)


def _eye_like(A):
    from .._tensor.create import eye
    return eye(A.shape[-1], dtype=A.dtype, device=A.device)


def _diag_embed(d):
    from .._tensor.shape import diag_embed
    return diag_embed(d)


# ---- determinants ----------------------------------------------------------------------------

def lu_factor(A, *, pivot=True, out=None):
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    if bool((info > 0).any()):
        raise LinAlgError("linalg.lu_factor: The factorization could not be completed because "
                          "the input matrix is singular (a zero pivot in U).")
    return _lu_factor_t(LU, piv)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    _square("linalg.lu_factor", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the cpu")
    LU, piv, info = _lapack("LU", A, check=False)  # info > 0 (a singular U) is a result
    return collections.namedtuple("lu_factor_ex", ["LU", "pivots", "info"])(LU, piv, info)


def _sign_logabs(A):
    """(sign, log|det|) from the LU factors (no gradient); a singular A has a zero pivot."""
    LU, piv, _ = _lapack("LU", A, check=False)
    from .._tensor.shape import diagonal
    from .._tensor.create import arange
    d = diagonal(LU, 0, -2, -1)
    n = A.shape[-1]
    swaps = (piv != arange(1, n + 1, device=piv.device)).astype(d.dtype)
    neg = (d < 0).astype(d.dtype).sum(-1) + swaps.sum(-1)
    sign = 1.0 - 2.0 * (neg - 2.0 * _C.floor(neg * 0.5))
    logabs = _C.log(d.abs()).sum(-1)
    sign = _C.where(logabs == float("-inf"), 0.0, sign)
    return sign, logabs


class _LogAbsDet(Function):
    @staticmethod
    def forward(ctx, A):
        sign, logabs = _sign_logabs(A)
        ctx.A = A
        return logabs

    @staticmethod
    def backward(ctx, g):
        return (g.unsqueeze(-1).unsqueeze(-1) * _mT(inv(ctx.A)),)


class _Det(Function):
    @staticmethod
    def forward(ctx, A):
        sign, logabs = _sign_logabs(A)
        d = sign * _C.exp(logabs)
        ctx.A, ctx.d = A, d
        return d

    @staticmethod
    def backward(ctx, g):
        return ((g * ctx.d).unsqueeze(-1).unsqueeze(-1) * _mT(inv(ctx.A)),)


def det(A, *, out=None):
    _square("linalg.det", A)
    return _into(_Det.apply(A), out)


def slogdet(A, *, out=None):
    _square("linalg.slogdet", A)
    sign, _ = _sign_logabs(A.detach())
    return _slogdet_t(sign, _LogAbsDet.apply(A))


def logdet(A):
    """log(det(A)): NaN where det(A) < 0, -inf where it is 0 (torch.logdet)."""
    s = slogdet(A)
    return _C.where(s.sign < 0, float("nan"), s.logabsdet)


# ---- Cholesky ------------------------------------------------------------------------------

class _Cholesky(Function):
    @staticmethod
    def forward(ctx, A, upper, info=None):
        """info: None (a failed factorization raises), or a list that receives LAPACK's info."""
        L, *rest = _lapack("CHOLESKY", A, flag=int(upper), check=info is None)
        if info is not None:
            info.append(rest[0])
        ctx.upper = upper
        ctx.save(L)
        return L

    @staticmethod
    def backward(ctx, g):
        (L,) = ctx.saved
        if ctx.upper:  # A = U^T U: the lower factor is U^T
            L, g = _mT(L), _mT(g)
        # gA = L^-T Phi(L^T gL) L^-1, symmetrized (Phi: the lower triangle, half diagonal)
        P = _mT(L) @ g
        P = P.tril() - 0.5 * _diag_embed(_diag(P))
        Linv = inv(L)
        S = _mT(Linv) @ P @ Linv
        return 0.5 * (S + _mT(S)), None, None


def _diag(x):
    from .._tensor.shape import diagonal
    return diagonal(x, 0, -2, -1)


def cholesky(A, *, upper=False, out=None):
    _square("linalg.cholesky", A)
    return _into(_Cholesky.apply(A, bool(upper)), out)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): info per matrix is LAPACK's (0, or the order of the leading minor that is
    not positive-definite), as int32; a failed matrix's L is LAPACK's partial factor
    (cuSOLVER's on cuda), the other matrices of the batch are factored (PyTorch's semantics,
    no sync on the device)."""
    if check_errors:
        return _out_of(_cholesky_ex_t(cholesky(A, upper=upper), _info_zeros(A)), out)
    _square("linalg.cholesky", A)
    box = []
    L = _Cholesky.apply(A, bool(upper), box)
    return _out_of(_cholesky_ex_t(L, box[0].to("int32")), out)


# ---- QR, SVD, eigh ---------------------------------------------------------------------------

def _no_grad_output(op, t, *inputs):
    """t with a backward that raises: pygpu does not differentiate `op`."""
    if not (is_grad_enabled() and any(isinstance(x, Tensor) and x.requires_grad for x in inputs)):
        return t
    return _NotDifferentiable.apply(inputs[0], t, op)


class _NotDifferentiable(Function):
    @staticmethod
    def forward(ctx, A, t, op):
        ctx.op = op
        return t.clone()

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError(f"the derivative of {ctx.op} is not implemented in pygpu "
                                  "(docs/pytorch.md lists the differentiable linalg functions)")


def qr(A, mode="reduced", *, out=None):
    _check("linalg.qr", A)
    modes = {"reduced": 0, "complete": 1, "r": 2}
    if mode not in modes:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    Q, R = _lapack("QR", A, flag=modes[mode])
    return _qr_t(_no_grad_output("linalg.qr", Q, A), _no_grad_output("linalg.qr", R, A))


class _SvdVals(Function):
    @staticmethod
    def forward(ctx, A, full):
        U, S, Vh = _lapack("SVD", A, flag=0)
        ctx.save(U, Vh)
        return S

    @staticmethod
    @fused_backward  # U, V are constants here: no second derivative
    def backward(ctx, g):
        U, Vh = ctx.saved
        return (U * g.unsqueeze(-2)) @ Vh, None


def svd(A, full_matrices=True, *, driver=None, out=None):
    _check("linalg.svd", A)
    U, S, Vh = _lapack("SVD", A, flag=1 if full_matrices else 0)
    if is_grad_enabled() and A.requires_grad:
        S = _SvdVals.apply(A, False)
    return _svd_t(_no_grad_output("linalg.svd (U)", U, A), S,
                  _no_grad_output("linalg.svd (Vh)", Vh, A))


def svdvals(A, *, driver=None, out=None):
    _check("linalg.svdvals", A)
    if is_grad_enabled() and A.requires_grad:
        return _SvdVals.apply(A, False)
    return _lapack("SVD", A, flag=2)[1]


class _EighVals(Function):
    @staticmethod
    def forward(ctx, A, upper):
        w, V = _lapack("EIGH", A, flag=int(upper))
        ctx.save(V)
        return w

    @staticmethod
    @fused_backward  # U, V are constants here: no second derivative
    def backward(ctx, g):
        (V,) = ctx.saved
        return (V * g.unsqueeze(-2)) @ _mT(V), None


class _EighVecs(Function):
    @staticmethod
    def forward(ctx, A, upper):
        w, V = _lapack("EIGH", A, flag=int(upper))
        ctx.save(w, V)
        return V

    @staticmethod
    @fused_backward  # U, V are constants here: no second derivative
    def backward(ctx, g):
        w, V = ctx.saved
        # gA = V (F o (V^T gV)) V^T with F_ij = 1 / (w_j - w_i) off the diagonal, symmetrized
        diff = w.unsqueeze(-2) - w.unsqueeze(-1)
        eye = _eye_like(V).astype(diff.dtype)
        F = _C.where(eye > 0, 0.0, 1.0 / _C.where(eye > 0, 1.0, diff))
        inner = F * (_mT(V) @ g)
        gA = V @ inner @ _mT(V)
        return 0.5 * (gA + _mT(gA)), None


def eigh(A, UPLO="L", *, out=None):
    _square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    upper = UPLO == "U"
    if is_grad_enabled() and A.requires_grad:
        return _eigh_t(_EighVals.apply(A, upper), _EighVecs.apply(A, upper))
    w, V = _lapack("EIGH", A, flag=int(upper))
    return _eigh_t(w, V)


def eigvalsh(A, UPLO="L", *, out=None):
    _square("linalg.eigvalsh", A)
    if is_grad_enabled() and A.requires_grad:
        return _EighVals.apply(A, UPLO == "U")
    return _lapack("EIGH", A, flag=int(UPLO == "U"))[0]


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of A X = B (LAPACK's gelsd for every driver name);
    residuals as PyTorch's: the squared residual norms when m > n and A has full rank,
    else empty."""
    _check("linalg.lstsq", A)
    vector = B.ndim == A.ndim - 1
    b = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if rcond is None:
        rcond = -1.0  # LAPACK's machine precision
    batch = _broadcast_batch(A.shape[:-2], b.shape[:-2])
    Ab = A.expand(*batch, m, n).contiguous()
    bb = b.expand(*batch, *b.shape[-2:]).contiguous()
    X, rank, S = _lapack("LSTSQ", Ab, bb, param=rcond)
    X = _no_grad_output("linalg.lstsq", X, A, B)
    from .._tensor.create import empty
    if m > n and bool((rank == n).all()):
        res = ((Ab @ X - bb) ** 2).sum(-2)
    else:
        res = empty((0,), dtype=A.dtype, device=A.device)
    return _lstsq_t(X.squeeze(-1) if vector else X, res, rank, S)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None, rcond=None):
    """The pseudo-inverse through the SVD: singular values at or below max(atol, rtol *
    the largest) are dropped (rtol defaults to eps * max(m, n) when atol is not given)."""
    _check("linalg.pinv", A)
    import numpy as np
    U, S, Vh = svd(A.detach(), full_matrices=False)
    if rcond is not None:
        rtol = rcond
    if rtol is None:
        rtol = 0.0 if atol is not None else np.finfo(A.dtype.name).eps * max(A.shape[-2:])
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S
    cut = _C.maximum(smax * float(rtol), float(atol or 0.0))
    keep = S > cut
    inv_s = _C.where(keep, 1.0 / _C.where(keep, S, 1.0), 0.0)
    P = (_mT(Vh) * inv_s.unsqueeze(-2)) @ _mT(U)
    return _into(_no_grad_output("linalg.pinv", P, A), out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None, tol=None):
    import numpy as np
    S = svdvals(A.detach())
    if tol is not None:
        atol = tol
    if rtol is None:
        rtol = 0.0 if atol is not None else np.finfo(A.dtype.name).eps * max(A.shape[-2:])
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S
    cut = _C.maximum(smax * float(rtol), float(atol or 0.0))
    return (S > cut).astype("int64").sum(-1)


# ---- compositions that run on the device ---------------------------------------------------

def matrix_power(A, n):
    _square("linalg.matrix_power", A)
    n = int(n)
    if n < 0:
        return matrix_power(inv(A), -n)
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result if result is not None else _eye_like(A).expand(*A.shape).contiguous()


def multi_dot(tensors, *, out=None):
    if len(tensors) < 2:
        raise RuntimeError("multi_dot(): expected at least 2 tensors but got "
                           f"{len(tensors)}")
    out_t = tensors[0]
    for t in tensors[1:]:
        out_t = out_t @ t
    return _into(out_t, out)


def vecdot(x, y, *, dim=-1, out=None):
    return _into((x * y).sum(dim), out)


def cross(input, other, *, dim=-1, out=None):
    from .._tensor.shape import cross as _cross
    return _into(_cross(input, other, dim), out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    from .._tensor.shape import diagonal as _diagonal
    return _diagonal(A, offset, dim1, dim2)


def matmul(input, other, *, out=None):
    return _into(input @ other, out)


# ---- norms ------------------------------------------------------------------------------------

def _dims(x, dim):
    if dim is None:
        return tuple(range(x.ndim))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(d % x.ndim if x.ndim else 0 for d in dim)


def _keep(t, x, dims, keepdim):
    """t reduced with keepdim=True -> the requested shape."""
    if keepdim:
        return t
    shape = tuple(n for i, n in enumerate(x.shape) if i not in dims)
    return t.reshape(shape)


class _VectorNorm(Function):
    """||x||_ord over dims, with PyTorch's subgradients: 0 where the norm is 0, ties of the
    inf-norm sharing the gradient."""
    @staticmethod
    def forward(ctx, x, ord, dims):
        a = x.abs()
        if ord == math.inf:
            n = a.amax(dims, keepdim=True)
        elif ord == -math.inf:
            n = a.amin(dims, keepdim=True)
        elif ord == 0:
            n = (a != 0).astype(x.dtype).sum(dims, keepdim=True)
        elif ord == 1:
            n = a.sum(dims, keepdim=True)
        elif ord == 2:
            n = (x * x).sum(dims, keepdim=True).sqrt()
        else:
            n = _C.pow(_C.pow(a, float(ord)).sum(dims, keepdim=True), 1.0 / ord)
        ctx.save(x, n)
        ctx.ord, ctx.dims = ord, dims
        return n

    @staticmethod
    def backward(ctx, g):
        x, n = ctx.saved
        ord = ctx.ord
        if ord == 0:
            return g * 0.0 * x, None, None
        if ord in (math.inf, -math.inf):
            hit = (x.abs() == n).astype(x.dtype)
            count = hit.sum(ctx.dims, keepdim=True)
            return g * _C.sign(x) * hit / count, None, None
        if ord == 1:
            return g * _C.sign(x), None, None
        safe = _C.where(n == 0, 1.0, n)
        if ord == 2:
            d = x / safe
        else:
            d = _C.sign(x) * _C.pow(x.abs(), float(ord) - 1.0) / _C.pow(safe, float(ord) - 1.0)
        return g * _C.where(n == 0, 0.0, d), None, None


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    if dtype is not None:
        x = x.to(dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {x.dtype}")
    ord = float(ord)
    dims = _dims(x, dim)
    if x.ndim == 0:
        return _into(_VectorNorm.apply(x.reshape(1), ord, (0,)).reshape(()), out)
    n = _VectorNorm.apply(x, ord, dims)
    return _into(_keep(n, x, dims, keepdim), out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    if dtype is not None:
        A = A.to(dtype)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    d0, d1 = (d % A.ndim for d in dim)
    if ord == "fro":
        return _into(vector_norm(A, 2, (d0, d1), keepdim), out)
    if ord in ("nuc", 2, -2):
        B = A.movedim((d0, d1), (-2, -1))
        s = svdvals(B)
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
        return _into(r, out)
    if ord in (1, -1, math.inf, -math.inf):
        across, keep = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(across, keepdim=True)
        r = s.amax(keep, keepdim=True) if ord > 0 else s.amin(keep, keepdim=True)
        return _into(_keep(r, A, (d0, d1), keepdim), out)
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.norm: a vector norm over dim (one axis, or the whole tensor when ord is
    None), a matrix norm over two axes (dim a pair, or a 2-D input with ord given)."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim or (-2, -1), keepdim,
                           dtype=dtype, out=out)
    if ord is None:
        ord = 2
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: ord {ord!r} needs a matrix (two dims)")
    if dim is None and A.ndim > 1 and ord is not None:
        return vector_norm(A.reshape(-1), ord, 0, False, dtype=dtype, out=out)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of x1 (.., P, M) and x2 (.., R, M)."""
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return vector_norm(diff, p, -1)


def cond(A, p=None, *, out=None):
    if p is None or p == 2:
        s = svdvals(A)
        return _into(s.amax(-1) / s.amin(-1), out)
    return _into(matrix_norm(A, p) * matrix_norm(inv(A), p), out)


def _into(r, out):
    if out is None:
        return r
    return out.copy_(r)


# ---- the torch.* and Tensor spellings of the same functions ------------------------------------

_svd_old_t = collections.namedtuple("svd", ["U", "S", "V"])


def _svd_old(A, some=True, compute_uv=True):
    """torch.svd: V (not Vh), reduced when some=True."""
    U, S, Vh = svd(A, full_matrices=not some)
    return _svd_old_t(U, S, _mT(Vh))


def _cholesky_old(A, upper=False):
    return cholesky(A, upper=upper)


def _qr_old(A, some=True):
    return qr(A, "reduced" if some else "complete")


def matrix_exp(A):
    """exp(A) of each square matrix of A (..., n, n): scaling and squaring, A / 2**s with
    norm at most 1/2 through a degree-18 Taylor polynomial (Horner's rule), squared s times.
    Made of matmuls, so autograd gives its gradient (and higher ones)."""
    _square("linalg.matrix_exp", A)
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return A.clone()
    from .._tensor.create import eye
    norm = float(A.detach().abs().sum(-2).max().item())  # the 1-norm's bound over the batch
    s = 0
    if norm > 0.5 and math.isfinite(norm):
        s = min(int(math.ceil(math.log2(norm / 0.5))), 1024)
    X = A * (2.0 ** -s)
    I = eye(n, dtype=A.dtype, device=A.device).expand(*A.shape)
    E = I
    for k in range(18, 0, -1):
        E = I + (X @ E) * (1.0 / k)
    for _ in range(s):
        E = E @ E
    return E


def _approximate_basis(A, q, niter, M):
    """Halko et al.'s randomized range finder: Q (..., m, q) with orthonormal columns whose
    span approximates A's range, after niter power iterations (torch._lowrank's
    get_approximate_basis); M is subtracted from A where given."""
    from .._tensor.create import randn
    n = A.shape[-1]
    R = randn(n, q, dtype=A.dtype, device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = qr(X).Q
    for _ in range(niter):
        X = _mT(A) @ Q if M is None else _mT(A) @ Q - _mT(M) @ Q
        Q = qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = qr(X).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    m, n = A.shape[-2:]
    if m < n:  # the range finder on the taller side
        U, S, V = _svd_lowrank(_mT(A), q, niter, None if M is None else _mT(M))
        return V, S, U
    Q = _approximate_basis(A, q, niter, M)
    B = _mT(Q) @ A if M is None else _mT(Q) @ A - _mT(Q) @ M
    U, S, Vh = svd(B, full_matrices=False)
    return Q @ U, S, _mT(Vh)


def svd_lowrank(A, q=6, niter=2, M=None):
    """torch.svd_lowrank: (U, S, V) of rank q approximating A (or A - M) by a randomized
    range finder with niter power iterations; A ~ U diag(S) V^T."""
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if niter is None:
        niter = 2
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """torch.pca_lowrank: svd_lowrank of A with each column's mean taken out (center)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(axis=-2, keepdims=True), q, niter, None)


# ---- compositions of the factorizations (lu, lu_solve, solve_ex, tensorinv, tensorsolve,
# vander): PyTorch's signatures, result names and errors; their gradients are those of the
# ops they are made of (solve's, matmul's); lu's factors come from lu_factor (no gradient)

def _lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) from the packed LU factors and LAPACK's 1-based pivots: A = P @ L @ U."""
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    L = U = P = None
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + _create.eye(m, k, dtype=LU_data.dtype,
                                                       device=LU_data.device)
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        import numpy as np
        piv = LU_pivots.detach().cpu().numpy().astype(np.int64) - 1
        batch = piv.shape[:-1]
        perms = np.tile(np.arange(m), batch + (1,)).reshape(-1, m)
        flat = piv.reshape(-1, piv.shape[-1])
        for b in range(flat.shape[0]):  # LAPACK's row swaps, in order (k per matrix)
            for i, j in enumerate(flat[b]):
                perms[b, i], perms[b, j] = perms[b, j], perms[b, i]
        eye = np.eye(m)
        mats = np.stack([eye[:, p] for p in perms]).reshape(batch + (m, m))
        P = _create.tensor(mats, dtype=LU_data.dtype, device=LU_data.device)
    return P, L, U


_lu_t = collections.namedtuple("lu", ["P", "L", "U"])
_solve_ex_t = collections.namedtuple("linalg_solve_ex", ["result", "info"])


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U (partial pivoting, LAPACK's getrf)."""
    LU, piv = lu_factor(A, pivot=pivot)
    P, L, U = _lu_unpack(LU, piv)
    return _out_of(_lu_t(P, L, U), out)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (left=False: X A = B; adjoint: A^H in A's place), A given by
    lu_factor's (LU, pivots)."""
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
    P, L, U = _lu_unpack(LU, pivots)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _out_of(lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT
                       if not LU.dtype.is_complex else
                       lu_solve(LU, pivots, B.mH, left=True, adjoint=not adjoint).mH, out)
    if adjoint:  # A^H = U^H L^H P^T
        y = solve_triangular(U.mH, B, upper=False)
        z = solve_triangular(L.mH, y, upper=True, unitriangular=True)
        return _out_of(P @ z, out)
    y = solve_triangular(L, P.mT @ B, upper=False, unitriangular=True)
    return _out_of(solve_triangular(U, y, upper=True), out)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(X, info): solve's result, and LAPACK's info (0, or the singular pivot's 1-based
    index) instead of an error unless check_errors. For a singular A the result is NaN
    (PyTorch's holds whatever getrs left, infinities)."""
    LU, piv, info = lu_factor_ex(A)
    info = info.to("int32")  # LAPACK's integer, as PyTorch returns it
    if check_errors and bool((info > 0).any()):
        raise LinAlgError("linalg.solve_ex: The solver failed because the input matrix is "
                             "singular.")
    if bool((info > 0).any()):
        nan = _create.full(tuple(B.shape), float("nan"), dtype=A.dtype, device=A.device)
        return _out_of(_solve_ex_t(nan, info), out)
    return _out_of(_solve_ex_t(solve(A, B, left=left), info), out)


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
    return _out_of(inv(A.reshape(rows, cols)).reshape(out_shape), out)


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
    X = solve(A.reshape(rows, cols), B.reshape(rows))
    return _out_of(X.reshape(res_shape), out)


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


def _out_of(result, out):
    if out is None:
        return result
    if isinstance(result, tuple):
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return out
    return out.resize_(result.shape).copy_(result)


METHODS = {"det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inv,
           "pinverse": lambda A, rcond=1e-15: pinv(A, rcond=rcond), "matrix_power": matrix_power,
           "cholesky": _cholesky_old, "svd": _svd_old, "qr": _qr_old, "matrix_exp": matrix_exp}
FUNCTIONS = dict(METHODS, cdist=cdist, svd_lowrank=svd_lowrank, pca_lowrank=pca_lowrank)

from ._householder import householder_product  # noqa: E402 - orgqr's torch.linalg name


def __getattr__(name):
    raise AttributeError(f"pygpu.linalg has no {name!r} (docs/pytorch.md lists what it has)")
