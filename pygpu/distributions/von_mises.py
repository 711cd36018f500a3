"""VonMises: the circular normal on [-pi, pi), as torch.distributions.VonMises. log I0 and
I1 come from pygpu.special's exponentially scaled Bessel functions (torch uses polynomial
fits, good to about 1e-7); draws by Best and Fisher's (1979) rejection sampler, rounds
vectorized on the device like gamma_sampling's."""
import math

from .. import _C
from .._tensor import create as _tensor_create
from . import constraints
from .distribution import Distribution, as_tensor, broadcast_all, sample_uniform


def _log_i0(x):
    from ..special import i0e
    return _C.log(i0e(x)) + x


def _log_i1(x):
    from ..special import i1e
    return _C.log(i1e(x)) + x


class VonMises(Distribution):
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.interval(-math.pi, math.pi)
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        k = self.concentration
        tau = 1 + _C.sqrt(1 + 4 * k ** 2)
        rho = (tau - _C.sqrt(2 * tau)) / (2 * k)
        # second-order Taylor expansion around 0 for small kappa, as torch's
        self._proposal_r = _C.where(k < 1e-5, 1 / k + k, (1 + rho ** 2) / (2 * rho))
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        return (self.concentration * _C.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_i0(self.concentration))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        like = self.loc.detach()
        k = self.concentration.detach().expand(*shape)
        r = self._proposal_r.detach().expand(*shape)
        x = _tensor_create.zeros(shape, dtype=like.dtype, device=like.device)
        done = _tensor_create.zeros(shape, dtype="bool", device=like.device)
        for _ in range(1000):
            u1, u2, u3 = (sample_uniform(shape, like) for _ in range(3))
            z = _C.cos(math.pi * u1)
            f = (1 + r * z) / (r + z)
            c = k * (r - f)
            accept = (((c * (2 - c) - u2) > 0) | (_C.log(c / u2) + 1 - c >= 0)) & ~done
            x = _C.where(accept, _C.sign(u3 - 0.5) * _C.acos(f.clamp(-1.0, 1.0)), x)
            done = done | accept
            if bool(done.all()):
                break
        else:
            raise RuntimeError("VonMises.sample: the rejection sampler did not converge")
        return (x + math.pi + self.loc.detach()) % (2 * math.pi) - math.pi

    def expand(self, batch_shape, _instance=None):
        return VonMises(self.loc.expand(*batch_shape), self.concentration.expand(*batch_shape),
                        validate_args=False)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 1 - _C.exp(_log_i1(self.concentration) - _log_i0(self.concentration))
