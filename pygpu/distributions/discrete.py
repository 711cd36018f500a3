"""The discrete families: Bernoulli, Categorical, OneHotCategorical, and torch.multinomial.
Parameters by probs or logits, as PyTorch's (logits of Categorical are normalized:
logits - logsumexp(logits)). Draws compare uniform numbers with cumulative
probabilities on the device (no host loop), from manual_seed's generator."""
from .. import _C
from .._tensor import create as _tensor_create
from .._ops._softmax import log_softmax
from . import constraints
from .exp_family import ExponentialFamily
from .distribution import Distribution, as_tensor, broadcast_all, sample_uniform

Tensor = _C.Tensor


def _clamp_probs(p):
    eps = 1.1920928955078125e-07 if p.dtype.name == "float32" else 2.220446049250313e-16
    return p.clamp(eps, 1.0 - eps)


class Bernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self.logits = _C.log(_clamp_probs(self.probs)) - _C.log1p(-_clamp_probs(self.probs))
        else:
            (self.logits,) = broadcast_all(logits)
            self.probs = _C.sigmoid(self.logits)
        super().__init__(tuple(self.probs.shape), validate_args=validate_args)

    def _param_names(self):
        return ("probs", "logits")

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = self.probs.detach().expand(*shape) if shape != tuple(self.probs.shape) else self.probs.detach()
        return (sample_uniform(shape, p) < p).to(p.dtype)

    def log_prob(self, value):
        value = as_tensor(value, self.logits)
        self._validate_sample(value)
        # -BCE with logits: value * logits - softplus(logits), stable for large |logits|
        l = self.logits
        softplus = _C.maximum(l, 0.0) + _C.log1p(_C.exp(-l.abs()))
        return value * l - softplus

    def entropy(self):
        l = self.logits
        softplus = _C.maximum(l, 0.0) + _C.log1p(_C.exp(-l.abs()))
        return softplus - self.probs * l

    def enumerate_support(self, expand=True):
        values = _tensor_create.tensor([0.0, 1.0], dtype=self.probs.dtype, device=self.probs.device)
        values = values.reshape((2,) + (1,) * len(self._batch_shape))
        return values.expand(*((2,) + self._batch_shape)) if expand else values

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        m = (self.probs >= 0.5).to(self.probs.dtype)
        return _C.where(self.probs == 0.5, float("nan"), m)

    @property
    def variance(self):
        return self.probs * (1.0 - self.probs)

    @property
    def param_shape(self):
        return tuple(self.probs.shape)

    @property
    def _natural_params(self):
        return (_C.log(self.probs / (1 - self.probs)),)

    def _log_normalizer(self, x):
        return _C.log1p(_C.exp(x))

    _mean_carrier_measure = 0


class Categorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            probs = as_tensor(probs)
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = _C.log(_clamp_probs(self.probs))
        else:
            logits = as_tensor(logits)
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = _C.exp(self.logits)
        self._num_events = self.probs.shape[-1]
        super().__init__(tuple(self.probs.shape[:-1]), validate_args=validate_args)

    def _param_names(self):
        return ("probs", "logits")

    @property
    def param_shape(self):
        return tuple(self.probs.shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    def sample(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        sample_shape = tuple(sample_shape)
        probs2d = self.probs.detach().reshape(-1, self._num_events)
        n = 1
        for s in sample_shape:
            n *= s
        draws = multinomial(probs2d, n, replacement=True)  # (B, n)
        out = draws.transpose(0, 1).reshape(sample_shape + self._batch_shape)
        return out

    def log_prob(self, value):
        value = as_tensor(value).to("int64")
        self._validate_sample(value)
        shape = _broadcast_batch(tuple(value.shape), self._batch_shape)
        logits = self.logits.expand(*(shape + (self._num_events,)))
        v = value.expand(*shape).unsqueeze(-1)
        return logits.gather(-1, v).squeeze(-1)

    def entropy(self):
        min_real = -3.4028234663852886e38 if self.logits.dtype.name == "float32" else -1.7976931348623157e308
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = _tensor_create.arange(self._num_events, device=self.probs.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(*((self._num_events,) + self._batch_shape)) if expand else values

    @property
    def mean(self):
        return _tensor_create.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                              device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean


def _broadcast_batch(a, b):
    from .distribution import _broadcast_shape
    return _broadcast_shape(a, b)


class OneHotCategorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,),
                         validate_args=validate_args)

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        idx = self._categorical.sample(sample_shape)
        k = self._categorical._num_events
        eye = _tensor_create.arange(k, device=idx.device)
        return (idx.unsqueeze(-1) == eye).to(self.probs.dtype)

    def log_prob(self, value):
        value = as_tensor(value, self.probs)
        self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        k = self._categorical._num_events
        values = _eye(k, self.probs)
        values = values.reshape((k,) + (1,) * len(self._batch_shape) + (k,))
        return values.expand(*((k,) + self._batch_shape + (k,))) if expand else values

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        k = self._categorical._num_events
        idx = self.probs.argmax(-1)
        return (idx.unsqueeze(-1) == _tensor_create.arange(k, device=idx.device)).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1.0 - self.probs)


def _eye(k, like):
    from .._tensor.create import eye
    return eye(k, dtype=like.dtype, device=like.device)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """torch.multinomial: num_samples category indices per row of (unnormalized) weights.
    With replacement: inverse-CDF draws; without: the Gumbel top-k (the same
    distribution as PyTorch's sequential draws)."""
    probs = input
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not probs.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{probs.dtype}")
    one = probs.ndim == 1
    p = probs.detach().reshape(1, -1) if one else probs.detach()
    k = p.shape[-1]
    if bool((p < 0).any()) or not bool(_C.isfinite(p).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if bool((p.sum(-1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and num_samples > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rows = p.shape[0]
    if replacement:
        cdf = p.cumsum(-1)
        cdf = cdf / cdf[:, -1:]
        u = sample_uniform((rows, num_samples), p, generator)
        idx = (cdf.unsqueeze(1) <= u.unsqueeze(-1)).to("int64").sum(-1)  # (rows, n)
        idx = idx.clamp(max=k - 1)
    else:
        u = sample_uniform((rows, k), p, generator).clamp(1e-20, 1.0)
        keys = _C.log(p) - _C.log(-_C.log(u))  # log p + Gumbel noise
        idx = keys.topk(num_samples, -1).indices
    idx = idx.reshape(-1) if one else idx
    return idx if out is None else out.copy_(idx)
