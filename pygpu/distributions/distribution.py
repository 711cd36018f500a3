"""Distribution: the base class of pygpu.distributions (torch.distributions' interface):
batch_shape, event_shape, sample / rsample(sample_shape), log_prob, entropy, mean,
variance, stddev, cdf/icdf where a family has them, expand. Random draws come from the
device's Philox generator, which pygpu.manual_seed seeds (pygpu.rand / randn)."""
import math

from .. import _C
from .._tensor import create as _tensor_create

Tensor = _C.Tensor


def as_tensor(x, like=None):
    """A number (or list) as a float tensor on like's device and dtype; a Tensor as it is."""
    if isinstance(x, Tensor):
        return x
    dtype = like.dtype if like is not None and like.dtype.is_floating_point else "float32"
    device = like.device if like is not None else None
    return _tensor_create.tensor(x, dtype=dtype, device=device)


def broadcast_all(*values):
    """Tensors (numbers become tensors of the first tensor's dtype and device) broadcast
    to one shape."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    ts = [as_tensor(v, like) for v in values]
    shape = ()
    for t in ts:
        shape = _broadcast_shape(shape, tuple(t.shape))
    return [t.expand(*shape) if tuple(t.shape) != shape else t for t in ts]


def _broadcast_shape(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"distributions: shapes {a} and {b} do not broadcast")
        out.append(max(x, y) if x and y else 0)
    return tuple(out)


class Distribution:
    has_rsample = False
    has_enumerate_support = False
    arg_constraints = {}
    support = None
    _lazy_params = ()  # parameters computed on first use (torch's lazy_property): not checked
    _validate_args = __debug__  # PyTorch's default: on unless python -O

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = bool(validate_args)
        if self._validate_args:
            self._check_parameters()

    @staticmethod
    def set_default_validate_args(value):
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def _check_parameters(self):
        """Each parameter set in __init__ (lazy ones are not) against its constraint, with
        torch's ValueError."""
        from . import constraints
        for param, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint) or not isinstance(constraint, constraints.Constraint):
                continue
            if param in self._lazy_params and param not in self.__dict__:
                continue
            value = getattr(self, param)
            if not isinstance(value, Tensor):
                continue
            valid = constraint.check(value)
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter {param} (Tensor of shape {tuple(value.shape)}) of "
                    f"distribution {self!r} to satisfy the constraint {constraint!r}, but found "
                    f"invalid values:\n{value}")

    def _validate_sample(self, value):
        """value against the event shape and the support, with torch's errors (a no-op
        unless validate_args)."""
        if not self._validate_args:
            return
        from . import constraints
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{tuple(value.shape)} vs {self._event_shape}.")
        actual_shape = tuple(value.shape)
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        support = self.support
        if not isinstance(support, constraints.Constraint) or constraints.is_dependent(support):
            return
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within "
                f"the support ({support!r}) of the distribution {self!r}, but found invalid "
                f"values:\n{value}")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape=()):
        """A draw without a gradient (rsample's, detached, where the family has one)."""
        from ..autograd.grad_mode import no_grad
        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample "
                                  "(rsample); use sample()")

    def sample_n(self, n):
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def prob(self, value):
        return _C.exp(self.log_prob(value))

    def entropy(self):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def perplexity(self):
        return _C.exp(self.entropy())

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return _C.sqrt(self.variance)

    def expand(self, batch_shape, _instance=None):
        """The same distribution with its parameters broadcast to batch_shape."""
        batch_shape = tuple(batch_shape)
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        for name in self._param_names():
            v = getattr(self, name, None)
            if isinstance(v, Tensor):
                extra = tuple(v.shape[len(self._batch_shape):])
                setattr(new, name, v.expand(*(batch_shape + extra)))
        new._batch_shape = batch_shape
        return new

    def _param_names(self):
        return tuple(self.arg_constraints)

    def __repr__(self):
        args = ", ".join(f"{k}: {tuple(getattr(self, k).shape) if isinstance(getattr(self, k, None), Tensor) and getattr(self, k).numel() > 1 else getattr(self, k, None)}"
                         for k in self.arg_constraints if k in self.__dict__)
        return f"{type(self).__name__}({args})"


def sample_uniform(shape, like, generator=None):
    """U(0, 1) draws of `shape` with like's dtype and device (Philox: manual_seed's, or the
    generator's)."""
    return _tensor_create.rand(*shape, dtype=like.dtype, device=like.device,
                               generator=generator) if shape else \
        _tensor_create.rand(1, dtype=like.dtype, device=like.device,
                            generator=generator).reshape(())


def sample_normal(shape, like):
    return _tensor_create.randn(*shape, dtype=like.dtype, device=like.device) if shape else \
        _tensor_create.randn(1, dtype=like.dtype, device=like.device).reshape(())


LOG_2PI = math.log(2 * math.pi)


def softplus(x):
    """log(1 + exp(x)), stable for large |x|; written with |x| (whose gradient at 0 is 0)
    rather than max(x, 0), so that its gradient at 0 is sigmoid(0) = 1/2 exactly."""
    return (x + x.abs()) * 0.5 + _C.log1p(_C.exp(-x.abs()))


def finfo_of(t):
    from .._dtype_info import finfo
    return finfo(t.dtype)


def clamp_probs(p):
    eps = finfo_of(p).eps
    return p.clamp(eps, 1.0 - eps)


def sum_rightmost(value, dim):
    """value summed over its dim rightmost axes (a number passes through)."""
    if dim == 0 or not isinstance(value, Tensor):
        return value
    for _ in range(dim):
        value = value.sum(-1)
    return value
