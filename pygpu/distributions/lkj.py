"""LKJCholesky: the LKJ distribution over the Cholesky factors of correlation matrices
(Lewandowski, Kurowicka and Joe, 2009), as torch.distributions.LKJCholesky: draws by the
onion method (a Beta-distributed squared radius per row times a uniform direction), log_prob
from the diagonal of the factor and the multivariate log-gamma normalizer."""
import math

from .. import _C
from .._tensor import create as _tensor_create
from . import constraints
from .continuous import Beta
from .distribution import Distribution, as_tensor, broadcast_all, finfo_of, sample_normal


class LKJCholesky(Distribution):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        c = self.concentration
        marginal_conc = c + 0.5 * (dim - 2)
        offset = _tensor_create.tensor([0.0] + list(range(dim - 1)), dtype=c.dtype, device=c.device)
        beta_conc1 = offset + 0.5  # (dim,)
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset  # (*batch, dim)
        self._beta = Beta(beta_conc1, beta_conc0, validate_args=False)
        super().__init__(tuple(c.shape), (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return LKJCholesky(self.dim, self.concentration.expand(*batch_shape), validate_args=False)

    def sample(self, sample_shape=()):
        from .._tensor.shape import diag_embed
        from ..autograd.grad_mode import no_grad
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        with no_grad():
            y = self._beta.sample(tuple(sample_shape)).unsqueeze(-1)  # (*S, *B, dim, 1)
            u_normal = sample_normal(self._extended_shape(sample_shape), y).tril(-1)
            norm = _C.sqrt((u_normal * u_normal).sum(-1, keepdim=True))
            # the first row is all zero: its direction is 0, not 0/0
            u_hypersphere = _C.where(norm == 0, 0.0, u_normal / _C.where(norm == 0, 1.0, norm))
            w = _C.sqrt(y) * u_hypersphere
            diag_elems = _C.sqrt((1 - (w * w).sum(-1)).clamp(min=finfo_of(w).tiny))
            return w + diag_embed(diag_elems)

    def log_prob(self, value):
        value = as_tensor(value, self.concentration)
        self._validate_sample(value)
        diag_elems = value.diagonal(0, -2, -1).narrow(-1, 1, self.dim - 1)
        order = _tensor_create.tensor(list(range(2, self.dim + 1)), dtype=value.dtype,
                                      device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * _C.log(diag_elems)).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = _C.lgamma(alpha) * dm1
        # mvlgamma(alpha - 1/2, dm1) = dm1 (dm1 - 1) / 4 log(pi) + sum_j lgamma(alpha - 1/2 - j/2)
        numerator = dm1 * (dm1 - 1) / 4 * math.log(math.pi)
        for j in range(dm1):
            numerator = numerator + _C.lgamma(alpha - 0.5 - 0.5 * j)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
