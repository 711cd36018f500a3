"""same_random.py - one random stream for both runs of a corpus program, so that a program
run under pygpu and the same program run under torch draw the same numbers and their
printed results can be compared.

pygpu's generator (Philox on each device) and torch's (mt19937 on the cpu) give the same
distributions but not the same numbers. For a comparison run, install(lib) replaces every
source of randomness a program reaches, in whichever library it runs on, with draws from
one NumPy stream (PCG64, seed 1234) taken in float64 and cast to the dtype asked for:
  torch: rand, randn, randint, randperm, rand_like, randn_like, Tensor.uniform_/normal_/
         bernoulli_ (nn.init's draws), nn.init.trunc_normal_, F.dropout's and
         F.dropout1d/2d/3d's masks,
         multinomial (torch.distributions.Categorical's draws), RandomSampler's order;
  pygpu: _tensor_create.rand/randn, wherever a pygpu module bound them (every draw pygpu makes
         goes through them: factories, nn.init, layers' initialisation, dropout, randint,
         randperm), multinomial and nn.init.trunc_normal_ wherever bound (Categorical's
         draws; pygpu redraws out-of-range values, torch inverts the CDF: both are given
         torch's way), RandomSampler's order;
  both:  Python's random and NumPy's global generator are seeded.
Each replacement draws exactly as the library's own code uses the numbers (uniform_ is
a + (b - a) u, dropout keeps u >= p, randint floors (high - low) u, randperm sorts u,
multinomial inverts the CDF at u), so the two runs see equal values.

A RandomSampler draws from a stream of its own (PCG64, seed 4321), so that when its draws
come (all at once, or lazily, 32 at a time as torch's do) cannot shift the other draws of a
program. torch's sampler is given its own lazy structure back (chunks of 32 indices with
replacement, a permutation per pass without); pygpu's keeps its own code and is only handed
a NumPy-like generator on that stream, so that what it does with it (an eager draw of
num_samples indices, say) stays what is tested.
This is a test harness: the shipped pygpu knows nothing of it.
"""
import random
import statistics
import sys

import numpy as np

_rng = np.random.Generator(np.random.PCG64(1234))
_sampler_rng = np.random.Generator(np.random.PCG64(4321))


def _shape(args, size=None):
    if size is not None:
        args = (size,)
    if len(args) == 1 and isinstance(args[0], (tuple, list)) or (
            len(args) == 1 and type(args[0]).__name__ == "Size"):
        return tuple(int(s) for s in args[0])
    return tuple(int(s) for s in args)


def uniform(shape):
    return _rng.random(shape)


def normal(shape):
    return _rng.standard_normal(shape)


def permutation(n):
    return np.argsort(uniform(n), kind="stable")


def draw_multinomial(probs, num_samples, replacement):
    """Category indices per row of (unnormalized) weights `probs` (a NumPy array, 1-D or
    2-D): each draw inverts the row's CDF at one u; without replacement a drawn category's
    weight is zeroed before the next draw (torch's sequential definition)."""
    p = np.array(probs, dtype=np.float64, copy=True)
    one = p.ndim == 1
    p = p.reshape(1, -1) if one else p
    out = np.empty((p.shape[0], num_samples), dtype=np.int64)
    for j in range(num_samples):
        u = uniform(p.shape[0])
        cdf = np.cumsum(p, axis=1)
        pick = (cdf <= (u * cdf[:, -1])[:, None]).sum(axis=1)
        pick = np.minimum(pick, p.shape[1] - 1)
        out[:, j] = pick
        if not replacement:
            p[np.arange(p.shape[0]), pick] = 0.0
    return out.reshape(-1) if one else out


def truncated_normal(shape, mean, std, a, b):
    """N(mean, std) restricted to [a, b] as torch.nn.init.trunc_normal_ draws it: one u per
    element, mapped through the normal's inverse CDF between the bounds' CDF values."""
    nd = statistics.NormalDist(mean, std)
    lo, hi = nd.cdf(a), nd.cdf(b)
    q = lo + (hi - lo) * uniform(shape)
    x = np.vectorize(nd.inv_cdf, otypes=[np.float64])(np.clip(q, 1e-300, 1 - 1e-16))
    return np.clip(x, a, b)


class SamplerStream:
    """The part of numpy.random.Generator pygpu's samplers use, on the samplers' stream."""

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if high is None:
            low, high = 0, low
        u = _sampler_rng.random(size)
        return (np.floor(u * (high - low)) + low).astype(dtype)

    def permutation(self, n):
        return np.argsort(_sampler_rng.random(n), kind="stable")

    def random(self, size=None):
        return _sampler_rng.random(size)


def install(lib):
    random.seed(0)
    np.random.seed(0)
    if lib == "torch":
        _install_torch()
    else:
        _install_pygpu()


def _install_pygpu():
    import pygpu
    from pygpu._tensor import create as _tensor_create
    from pygpu.data import sampler

    own_rand, own_randn = _tensor_create.rand, _tensor_create.randn

    def make(draw, own):
        def fn(*shape, size=None, dtype=None, device=None, requires_grad=False, generator=None):
            shp = _tensor_create._shape(_tensor_create._size_kw(shape, size), own.__name__)
            dt = _tensor_create._dt(dtype, pygpu.float32)
            t = pygpu.tensor(draw(shp), dtype=dt, device=_tensor_create._dev(device))
            return t.requires_grad_(True) if requires_grad else t
        fn.__name__ = own.__name__
        return fn

    def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
        idx = draw_multinomial(input.detach().to("cpu").numpy(), num_samples, replacement)
        t = pygpu.tensor(idx, dtype=pygpu.int64, device=input.device)
        return t if out is None else out.copy_(t)

    from pygpu.nn import init

    def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
        with pygpu.no_grad():
            values = truncated_normal(tuple(tensor.shape), mean, std, a, b)
            return tensor.copy_(pygpu.tensor(values, dtype=tensor.dtype, device=tensor.device))

    # every module that bound rand/randn/multinomial by name at its import (the recurrent
    # layers, the attention ops: `from ._tensor_create import rand`) gets the replacement too
    own_multinomial = getattr(pygpu, "multinomial", None)
    swap = {own_rand: make(uniform, own_rand), own_randn: make(normal, own_randn),
            init.trunc_normal_: trunc_normal_}
    if own_multinomial is not None:
        swap[own_multinomial] = multinomial
    for name, module in list(sys.modules.items()):
        if name == "pygpu" or name.startswith("pygpu."):
            for attr in ("rand", "randn", "multinomial", "trunc_normal_"):
                own = getattr(module, attr, None)
                if own in swap:
                    setattr(module, attr, swap[own])
    # Tensor.multinomial (pygpu/_tensor/random.py) calls pygpu.distributions.discrete's
    # multinomial at each call, replaced above: the method needs no swap of its own

    own_init = sampler.RandomSampler.__init__
    own_randperm, own_randint = sampler.randperm, sampler.randint

    def sampler_init(self, *args, **kwargs):
        own_init(self, *args, **kwargs)
        if self.generator is None and self.seed is None:
            self.generator = SamplerStream()  # its draws, on the samplers' stream

    def randperm(n, generator):
        if isinstance(generator, SamplerStream):
            return generator.permutation(n)
        return own_randperm(n, generator)

    def randint(n, size, generator):
        if isinstance(generator, SamplerStream):
            return generator.integers(0, n, size=size)
        return own_randint(n, size, generator)
    sampler.RandomSampler.__init__ = sampler_init
    sampler.randperm, sampler.randint = randperm, randint

    # The DataLoader's workers' base seed: torch draws it from its own generator, which the
    # shared streams leave alone, so pygpu's must not take a value from them either (it
    # would shift every later dropout mask by one draw)
    from pygpu.data import workers
    seeds = np.random.default_rng(2718)
    workers._base_seed = lambda generator: int(seeds.integers(2 ** 62))


def _install_torch():
    import torch
    import torch.nn.functional as F
    from torch.utils.data import RandomSampler

    def tensor(values, dtype=None, device=None, requires_grad=False):
        t = torch.tensor(values, dtype=dtype or torch.get_default_dtype(), device=device)
        return t.requires_grad_(True) if requires_grad else t

    def rand(*shape, size=None, dtype=None, device=None, requires_grad=False, generator=None,
             out=None, **_):
        return tensor(uniform(_shape(shape, size)), dtype, device, requires_grad)

    def randn(*shape, size=None, dtype=None, device=None, requires_grad=False, generator=None,
              out=None, **_):
        return tensor(normal(_shape(shape, size)), dtype, device, requires_grad)

    def randint(low, high=None, size=None, *, dtype=None, device=None, requires_grad=False,
                generator=None, **_):
        if size is None and isinstance(high, (tuple, list, torch.Size)):
            low, high, size = 0, low, high
        elif high is None:
            low, high = 0, low
        u = uniform(_shape((), size))
        v = np.floor(u * float(high - low)).astype(np.int64) + int(low)
        return torch.tensor(v, dtype=dtype or torch.int64, device=device)

    def randperm(n, *, dtype=None, device=None, generator=None, **_):
        return torch.tensor(permutation(n), dtype=dtype or torch.int64, device=device)

    def like(draw):
        def fn(t, *, dtype=None, device=None, requires_grad=False, **_):
            return tensor(draw(tuple(t.shape)), dtype or t.dtype, device or t.device,
                          requires_grad)
        return fn

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        with torch.no_grad():
            return self.copy_(torch.tensor(uniform(tuple(self.shape)) * (b - a) + a))

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        with torch.no_grad():
            return self.copy_(torch.tensor(normal(tuple(self.shape)) * std + mean))

    def bernoulli_(self, p=0.5, *, generator=None):
        with torch.no_grad():
            return self.copy_(torch.tensor(uniform(tuple(self.shape)) < p))

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0.0:
            return input
        keep = torch.tensor(uniform(tuple(input.shape)), dtype=torch.float32) >= p
        return input * (keep.to(input.dtype) * (1.0 / (1.0 - p)))

    torch.rand, torch.randn, torch.randint, torch.randperm = rand, randn, randint, randperm
    torch.rand_like, torch.randn_like = like(uniform), like(normal)
    torch.Tensor.uniform_, torch.Tensor.normal_ = uniform_, normal_
    def feature_dropout(batched_when):
        # whole channels: one draw per (sample, channel), as pygpu's _feature_dropout
        def fn(input, p=0.5, training=True, inplace=False):
            if not training or p == 0.0:
                return input
            batched = batched_when(input.dim())
            x = input if batched else input.unsqueeze(0)
            shape = tuple(x.shape[:2]) + (1,) * (x.dim() - 2)
            keep = torch.tensor(uniform(shape), dtype=torch.float32) >= p
            out = x * (keep.to(x.dtype) * (1.0 / (1.0 - p)))
            return out if batched else out.squeeze(0)
        return fn

    torch.Tensor.bernoulli_ = bernoulli_
    F.dropout = dropout
    F.dropout1d = feature_dropout(lambda nd: nd == 3)
    F.dropout2d = feature_dropout(lambda nd: nd >= 2)  # torch takes a 2-D or 3-D input as (N, C, ...)
    F.dropout3d = feature_dropout(lambda nd: nd == 5)

    def sampler_iter(self):
        # torch's RandomSampler.__iter__, its draws on the samplers' stream
        n = len(self.data_source)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from (np.floor(_sampler_rng.random(32) * n)).astype(np.int64).tolist()
            yield from (np.floor(_sampler_rng.random(self.num_samples % 32) * n)
                        ).astype(np.int64).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from np.argsort(_sampler_rng.random(n), kind="stable").tolist()
            if self.num_samples % n:  # (torch draws a whole permutation for no tail too)
                yield from np.argsort(_sampler_rng.random(n), kind="stable").tolist()[
                    :self.num_samples % n]
    RandomSampler.__iter__ = sampler_iter

    def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
        idx = draw_multinomial(input.detach().cpu().double().numpy(), num_samples, replacement)
        t = torch.tensor(idx, dtype=torch.int64, device=input.device)
        return t if out is None else out.copy_(t)
    torch.multinomial = multinomial
    torch.Tensor.multinomial = multinomial

    def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
        with torch.no_grad():
            values = truncated_normal(tuple(tensor.shape), mean, std, a, b)
            return tensor.copy_(torch.tensor(values, dtype=tensor.dtype))
    torch.nn.init.trunc_normal_ = trunc_normal_
