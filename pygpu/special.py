"""pygpu.special: torch.special's functions.

Most are rows of the op table (csrc/core/pg_ops.def) that list a `pygpu.special.<name>`
spelling: erf, erfc, erfinv, expit, gammaln, digamma/psi, i0, i0e, i1, i1e, ndtr, entr,
sinc, xlogy, xlog1py, zeta, log1p, expm1, exp2, round. They are taken from the table
here, so adding a spelling to a row adds it to this module. The rest compose those rows:
logit(eps), polygamma, multigammaln, ndtri, log_ndtr, softmax, log_softmax, logsumexp,
and gammainc/gammaincc (torch.igamma/igammac under their special names)."""
import math as _math

from . import _C
from ._tensor import math as _tensor_math
from ._ops import _softmax


def _from_table():
    out = {}
    for row in _C._op_table():
        own = getattr(_C, row[0], None)
        for q in row[3]:
            if q.startswith("pygpu.special.") and callable(own):
                out[q[len("pygpu.special."):]] = own
    return out


globals().update(_from_table())


def logit(input, eps=None):
    return _tensor_math.logit(input, eps)


def polygamma(n, input):
    return _tensor_math.polygamma(input, n)


def multigammaln(input, p):
    """log of the multivariate gamma function of dimension p."""
    return _tensor_math.mvlgamma(input, p)


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function P(input, other) (torch.igamma)."""
    return _into(out, _tensor_math.igamma(input, other))


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function Q(input, other) (torch.igammac)."""
    return _into(out, _tensor_math.igammac(input, other))


def _into(out, result):
    return result if out is None else out.copy_(result)


def ndtri(input):
    """The inverse of ndtr: sqrt(2) erfinv(2p - 1)."""
    return _C.erfinv(input * 2.0 - 1.0) * _math.sqrt(2.0)


def log_ndtr(input):
    """log(ndtr(x)) (through erfc, which keeps the left tail down to about -37 in float64)."""
    return _C.log(_C.special_ndtr(input))


def softmax(input, dim, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return _softmax.softmax(x, dim)


def log_softmax(input, dim, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return _softmax.log_softmax(x, dim)


def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim, keepdim)
