"""Wishart: the distribution of L A A^T L^T over positive definite matrices (Bartlett's
decomposition: A lower triangular, chi-distributed diagonal, normal below it), as
torch.distributions.Wishart, parametrized by df and one of covariance_matrix,
precision_matrix or scale_tril. rsample is differentiable in df (through Chi2's implicit
gradient) and in the scale."""
import math
import warnings

from .. import _C
from .._tensor import create as _tensor_create
from . import constraints
from .distribution import _broadcast_shape, as_tensor, finfo_of, sample_normal
from .exp_family import ExponentialFamily
from .location_scale import Chi2

_LOG_2 = math.log(2)


def _mvlgamma(x, p):
    """log of the multivariate gamma function of dimension p."""
    out = p * (p - 1) / 4 * math.log(math.pi)
    for j in range(p):
        out = out + _C.lgamma(x - 0.5 * j)
    return out


def _mvdigamma(x, p):
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    out = 0.0
    for j in range(p):
        out = out + _C.digamma(x - 0.5 * j)
    return out


class Wishart(ExponentialFamily):
    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky,
                       "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0
    _lazy_params = ("covariance_matrix", "precision_matrix", "scale_tril")

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        from .. import linalg
        if (covariance_matrix is not None) + (scale_tril is not None) + \
                (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        event_shape = tuple(param.shape[-2:])
        if isinstance(df, (int, float)):
            batch_shape = tuple(param.shape[:-2])
            self.df = _tensor_create.full(batch_shape, float(df), dtype=param.dtype,
                                          device=param.device)
        else:
            batch_shape = _broadcast_shape(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(*batch_shape)
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        if scale_tril is not None:
            L = scale_tril
        elif covariance_matrix is not None:
            L = linalg.cholesky(covariance_matrix)
        else:
            L = linalg.cholesky(linalg.inv(precision_matrix))
        self._unbroadcasted_scale_tril = L
        self._param_given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                             "precision_matrix": precision_matrix}
        for name, v in self._param_given.items():
            if v is not None:
                self.__dict__[name] = v.expand(*(batch_shape + event_shape))
        offsets = _tensor_create.arange(p, dtype=L.dtype, device=L.device)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - offsets, validate_args=False)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def _param_names(self):
        return ("df",) + tuple(n for n, v in self._param_given.items() if v is not None)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return Wishart(self.df.expand(*batch_shape),
                       scale_tril=self._unbroadcasted_scale_tril.expand(*(batch_shape + self._event_shape)),
                       validate_args=False)

    def __getattr__(self, name):
        # the parametrizations not given, computed on first use (torch's lazy properties)
        if name == "scale_tril":
            return self._unbroadcasted_scale_tril.expand(*(self._batch_shape + self._event_shape))
        if name == "covariance_matrix":
            L = self._unbroadcasted_scale_tril
            return (L @ L.transpose(-2, -1)).expand(*(self._batch_shape + self._event_shape))
        if name == "precision_matrix":
            from .. import linalg
            return linalg.inv(self.covariance_matrix)
        raise AttributeError(name)

    def _df_matrix(self):
        return self.df.reshape(self._batch_shape + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self._event_shape[-1] - 1
        factor = _C.where(factor <= 0, float("nan"), factor)
        return factor.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(0, -2, -1)
        return self._df_matrix() * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def rsample(self, sample_shape=()):
        """Bartlett's draw (torch retries singular draws; with df >= ndim they have
        probability 0, and this does not retry)."""
        from .._tensor.shape import diag_embed
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        p = self._event_shape[-1]
        chi = _C.sqrt(self._dist_chi2.rsample(tuple(sample_shape))).clamp(min=finfo_of(self.df).eps)
        below = sample_normal(tuple(sample_shape) + self._batch_shape + (p, p), self.df).tril(-1)
        noise = diag_embed(chi) + below
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def _half_log_det_scale(self):
        return _C.log(self._unbroadcasted_scale_tril.diagonal(0, -2, -1)).sum(-1)

    def log_prob(self, value):
        from .. import linalg
        value = as_tensor(value, self.df)
        self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        shape = _broadcast_shape(tuple(value.shape[:-2]), tuple(L.shape[:-2]))
        Lb = L.expand(*(shape + (p, p)))
        Vb = value.expand(*(shape + (p, p)))
        # trace(Sigma^-1 V) = trace(L^-T L^-1 V)
        M = linalg.solve_triangular(Lb, Vb, upper=False)
        X = linalg.solve_triangular(Lb.transpose(-2, -1), M, upper=True)
        trace = X.diagonal(0, -2, -1).sum(-1)
        logabsdet = linalg.slogdet(value).logabsdet
        return (-nu * (p * _LOG_2 / 2 + self._half_log_det_scale()) - _mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._half_log_det_scale())
                + _mvlgamma(nu / 2, p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        from .. import linalg
        nu, p = self.df, self._event_shape[-1]
        return (-0.5 * linalg.inv(self.covariance_matrix),
                0.5 * (nu - p - 1))

    def _log_normalizer(self, x, y):
        from .. import linalg
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p) \
            + _mvlgamma(y + (p + 1) / 2, p)
