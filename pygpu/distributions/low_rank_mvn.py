"""LowRankMultivariateNormal: N(loc, W W^T + diag(D)) with W (n x m, m << n) the cov_factor
and D the cov_diag, as torch.distributions: log_prob and entropy through the m x m
capacitance matrix I + W^T D^-1 W (Woodbury and the matrix determinant lemma), so nothing
n x n is factorized; rsample as loc + W eps_m + sqrt(D) eps_n."""

from .. import _C
from . import constraints
from .distribution import LOG_2PI, Distribution, as_tensor, sample_normal


def _mv(M, v):
    """M @ v over the batch axes (v a batch of vectors)."""
    return (M @ v.unsqueeze(-1)).squeeze(-1)


def _capacitance_tril(W, D):
    """cholesky(I + W^T D^-1 W) (..., m, m)."""
    from .. import linalg
    from .._tensor import create
    m = W.shape[-1]
    Wt_Dinv = W.transpose(-2, -1) / D.unsqueeze(-2)
    K = Wt_Dinv @ W + create.eye(m, dtype=W.dtype, device=W.device)
    return linalg.cholesky(K)


def _mahalanobis(L, x):
    """|L^-1 x|^2 over the last axis, L broadcast against x's batch."""
    from .. import linalg
    from .distribution import _broadcast_shape
    shape = _broadcast_shape(tuple(x.shape[:-1]), tuple(L.shape[:-2]))
    Lb = L.expand(*(shape + tuple(L.shape[-2:])))
    xb = x.expand(*(shape + tuple(x.shape[-1:])))
    y = linalg.solve_triangular(Lb, xb.unsqueeze(-1), upper=False).squeeze(-1)
    return (y * y).sum(-1)


class LowRankMultivariateNormal(Distribution):
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        loc = as_tensor(loc)
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.ndim < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        from .distribution import broadcast_all
        loc_, self.cov_factor, cov_diag_ = broadcast_all(loc.unsqueeze(-1), cov_factor,
                                                         cov_diag.unsqueeze(-1))
        self.loc = loc_.select(-1, 0)
        self.cov_diag = cov_diag_.select(-1, 0)
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(tuple(self.loc.shape[:-1]), event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.loc = self.loc.expand(*(batch_shape + self._event_shape))
        new.cov_diag = self.cov_diag.expand(*(batch_shape + self._event_shape))
        new.cov_factor = self.cov_factor.expand(*(batch_shape + tuple(self.cov_factor.shape[-2:])))
        new._batch_shape = batch_shape
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return ((W * W).sum(-1) + D).expand(*(self._batch_shape + self._event_shape))

    @property
    def covariance_matrix(self):
        from .._tensor.shape import diag_embed
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        cov = W @ W.transpose(-2, -1) + diag_embed(D)
        return cov.expand(*(self._batch_shape + self._event_shape + self._event_shape))

    @property
    def scale_tril(self):
        from .. import linalg
        return linalg.cholesky(self.covariance_matrix)

    @property
    def precision_matrix(self):
        from .. import linalg
        return linalg.inv(self.covariance_matrix)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        eps_W = sample_normal(shape[:-1] + tuple(W.shape[-1:]), self.loc)
        eps_D = sample_normal(shape, self.loc)
        return self.loc + _mv(W, eps_W) + _C.sqrt(D) * eps_D

    def _log_det(self):
        from .._tensor.shape import diagonal
        L = self._capacitance_tril
        return (2 * _C.log(diagonal(L, 0, -2, -1)).sum(-1)
                + _C.log(self._unbroadcasted_cov_diag).sum(-1))

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        diff = value - self.loc
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        Wt_Dinv = W.transpose(-2, -1) / D.unsqueeze(-2)
        term1 = (diff * diff / D).sum(-1)
        term2 = _mahalanobis(self._capacitance_tril, _mv(Wt_Dinv, diff))
        return -0.5 * (self._event_shape[0] * LOG_2PI + self._log_det() + term1 - term2)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + LOG_2PI) + self._log_det())
        return H.expand(*self._batch_shape) if self._batch_shape else H


