# test_random_state.py - random state as PyTorch has it (issue 43, item 4): torch.Generator
# (manual_seed, seed, initial_seed, get_state/set_state, device) accepted wherever PyTorch
# takes generator=, get_rng_state/set_rng_state, random.fork_rng, and samplers that draw
# lazily. A Generator's stream is pygpu's Philox stream (the numbers manual_seed gives on a
# device), on every device; the distributions are checked against torch's samples, the
# signatures by calling torch the same way, the errors against torch's type and words.
import math
import tracemalloc
import warnings

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.utils.data import (DataLoader, RandomSampler, SubsetRandomSampler, TensorDataset,
                              WeightedRandomSampler, random_split)

torch = pytest.importorskip("torch")


def test_a_generator_draws_the_stream_manual_seed_gives(device):
    g = pygpu.Generator(device=pygpu.device(device).type).manual_seed(11)
    a = pygpu.rand(5, device=device, generator=g)
    b = pygpu.randn(3, 2, device=device, generator=g, dtype=pygpu.float64)
    pygpu.manual_seed(11)
    ref_a = pygpu.rand(5, device=device)
    ref_b = pygpu.randn(3, 2, device=device, dtype=pygpu.float64)
    np.testing.assert_array_equal(a.numpy(), ref_a.numpy())
    np.testing.assert_array_equal(b.numpy(), ref_b.numpy())
    # and the same numbers on the cpu: Philox is counter-based, one stream on every device
    cpu = pygpu.rand(5, generator=pygpu.Generator().manual_seed(11))
    np.testing.assert_array_equal(a.numpy(), cpu.numpy())


def test_a_generator_leaves_the_default_stream_alone(device):
    pygpu.manual_seed(5)
    first = pygpu.rand(4, device=device).numpy()
    pygpu.manual_seed(5)
    g = pygpu.Generator(pygpu.device(device).type).manual_seed(99)
    pygpu.rand(1000, device=device, generator=g)
    np.testing.assert_array_equal(pygpu.rand(4, device=device).numpy(), first)


def test_generator_state_round_trips_and_clones():
    g = pygpu.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed()  # PyTorch's default seed
    assert g.manual_seed(3) is g and g.initial_seed() == 3 and g.device == "cpu"
    pygpu.rand(7, generator=g)
    state = g.get_state()
    x = pygpu.randn(6, generator=g).numpy()
    clone = g.clone_state()
    assert g.set_state(state) is g
    np.testing.assert_array_equal(pygpu.randn(6, generator=g).numpy(), x)
    np.testing.assert_array_equal(pygpu.randn(6, generator=clone).numpy(),
                                  pygpu.randn(6, generator=g).numpy())
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2 ** 64
    assert pygpu.Generator().manual_seed(-1).initial_seed() == \
        torch.Generator().manual_seed(-1).initial_seed() == 2 ** 64 - 1
    g2 = pygpu.Generator().set_state(state)  # a state moves between generators
    np.testing.assert_array_equal(pygpu.randn(6, generator=g2).numpy(), x)


def test_seed_errors_match_torch():
    for bad in (2 ** 64, -2 ** 63 - 1):
        with pytest.raises(ValueError) as theirs:
            torch.manual_seed(bad)
        with pytest.raises(type(theirs.value), match="Overflow when unpacking long long"):
            pygpu.manual_seed(bad)
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            pygpu.Generator().manual_seed(bad)
    with pytest.raises(RuntimeError):
        pygpu.Generator().set_state(pygpu.zeros(3))
    with pytest.raises(TypeError):
        pygpu.Generator().set_state(b"0123456789abcdef")


def test_a_generator_of_another_device_type_is_refused():
    g = pygpu.Generator()  # cpu
    with pytest.raises(RuntimeError, match="Expected a 'sim' device type for generator but "
                                           "found 'cpu'"):
        pygpu.rand(3, device="sim", generator=g)
    with pytest.raises(RuntimeError, match="device type for generator"):
        pygpu.empty(3, device="sim").normal_(generator=g)
    with pytest.raises(TypeError, match="torch.Generator"):
        pygpu.rand(3, generator=5)


def test_default_generators_and_rng_state(device):
    pygpu.manual_seed(1)
    assert pygpu.initial_seed() == 1 and pygpu.default_generator.initial_seed() == 1
    assert pygpu.manual_seed(2) is pygpu.default_generator
    state = pygpu.get_rng_state()
    a = pygpu.rand(5).numpy()
    pygpu.set_rng_state(state)
    np.testing.assert_array_equal(pygpu.rand(5).numpy(), a)
    assert state.numel() * state.element_size() == 16  # seed and offset, as CUDA's Philox
    sim_state = pygpu.sim.get_rng_state(0)
    s = pygpu.rand(4, device="sim").numpy()
    pygpu.sim.set_rng_state(sim_state, 0)
    np.testing.assert_array_equal(pygpu.rand(4, device="sim").numpy(), s)
    states = pygpu.sim.get_rng_state_all()
    assert len(states) == pygpu.sim.device_count() == len(pygpu.sim.default_generators)
    pygpu.sim.set_rng_state_all(states)
    # the device's default generator, passed explicitly, is the device's own stream
    dev = pygpu.device(device)
    gen = pygpu.default_generator if dev.type == "cpu" else \
        getattr(pygpu, dev.type).default_generators[dev.index]
    pygpu.manual_seed(8)
    x = pygpu.rand(3, device=device).numpy()
    pygpu.manual_seed(8)
    np.testing.assert_array_equal(pygpu.rand(3, device=device, generator=gen).numpy(), x)


def test_fork_rng_puts_every_generator_back():
    pygpu.manual_seed(4)
    before_cpu, before_sim = pygpu.get_rng_state(), pygpu.sim.get_rng_state(1)
    with pygpu.random.fork_rng(devices=[1], device_type="sim"):
        pygpu.rand(10), pygpu.rand(10, device="sim:1")
    np.testing.assert_array_equal(pygpu.get_rng_state().numpy(), before_cpu.numpy())
    np.testing.assert_array_equal(pygpu.sim.get_rng_state(1).numpy(), before_sim.numpy())
    with pygpu.random.fork_rng(enabled=False):
        pygpu.rand(1)
    assert not np.array_equal(pygpu.get_rng_state().numpy(), before_cpu.numpy())
    with warnings.catch_warnings(record=True) as caught:  # all sim devices: PyTorch's warning
        warnings.simplefilter("always")
        pygpu.random._fork_rng_warned_already = False
        with pygpu.random.fork_rng(device_type="sim"):
            pass
    assert pygpu.sim.device_count() < 2 or "without explicitly specifying" in \
        str(caught[0].message)


# (pygpu call, torch call, the distribution's mean, its standard deviation): each takes
# generator= the same way in both libraries, and draws the same distribution.
N = 200_000
SAMPLERS = [
    ("rand", lambda m, g: m.rand(N, generator=g), 0.5, math.sqrt(1 / 12)),
    ("randn", lambda m, g: m.randn(N, generator=g), 0.0, 1.0),
    ("randint", lambda m, g: m.randint(3, 10, (N,), generator=g), 6.0, math.sqrt(48 / 12)),
    ("randperm", lambda m, g: m.randperm(N, generator=g), (N - 1) / 2, None),
    ("rand_like", lambda m, g: m.rand_like(m.zeros(N), generator=g), 0.5, None),
    ("randn_like", lambda m, g: m.randn_like(m.zeros(N), generator=g), 0.0, 1.0),
    ("randint_like", lambda m, g: m.randint_like(m.zeros(N), 4, generator=g), 1.5, None),
    ("normal(t, t)", lambda m, g: m.normal(m.full((N,), 2.0), m.full((N,), 3.0), generator=g),
     2.0, 3.0),
    ("normal(f, f, size)", lambda m, g: m.normal(-1.0, 0.5, (N,), generator=g), -1.0, 0.5),
    ("bernoulli", lambda m, g: m.bernoulli(m.full((N,), 0.3), generator=g), 0.3,
     math.sqrt(0.21)),
    ("bernoulli(p)", lambda m, g: m.zeros(N).bernoulli(0.7, generator=g), 0.7, None),
    ("multinomial", lambda m, g: m.multinomial(m.tensor([1.0, 2.0, 7.0]), N, True,
                                               generator=g).double(), 1.6, None),
    ("uniform_", lambda m, g: m.empty(N).uniform_(-2, 4, generator=g), 1.0, math.sqrt(3.0)),
    ("normal_", lambda m, g: m.empty(N).normal_(5, 2, generator=g), 5.0, 2.0),
    ("bernoulli_", lambda m, g: m.empty(N).bernoulli_(0.25, generator=g), 0.25, None),
    ("bernoulli_(tensor)", lambda m, g: m.empty(N).bernoulli_(m.full((N,), 0.6), generator=g),
     0.6, None),
    ("random_", lambda m, g: m.empty(N).random_(10, generator=g), 4.5, math.sqrt(99 / 12)),
    ("random_(from, to)", lambda m, g: m.empty(N, dtype=m.int64).random_(-3, 3, generator=g)
     .double(), -0.5, None),
    ("exponential_", lambda m, g: m.empty(N).exponential_(2.0, generator=g), 0.5, 0.5),
    ("log_normal_", lambda m, g: m.empty(N).log_normal_(0.0, 0.5, generator=g),
     math.exp(0.125), None),
    ("geometric_", lambda m, g: m.empty(N).geometric_(0.25, generator=g), 4.0, None),
    ("poisson", lambda m, g: m.poisson(m.full((N,), 4.0), generator=g), 4.0, 2.0),
    ("poisson (PTRS)", lambda m, g: m.poisson(m.full((N,), 30.0), generator=g), 30.0,
     math.sqrt(30.0)),
    ("binomial", lambda m, g: m.binomial(m.full((N,), 20.0), m.full((N,), 0.3), generator=g),
     6.0, math.sqrt(4.2)),
    ("binomial (BTRS)", lambda m, g: m.binomial(m.full((N,), 100.0), m.full((N,), 0.6),
                                                 generator=g), 60.0, math.sqrt(24.0)),
    ("cauchy_ (median)", lambda m, g: m.empty(N).cauchy_(1.0, 2.0, generator=g).sort()[0][N // 2],
     None,
     None),
]


@pytest.mark.parametrize("name,draw,mean,std", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_every_sampler_takes_a_generator_and_draws_torchs_distribution(name, draw, mean, std):
    ours = draw(pygpu, pygpu.Generator().manual_seed(0))
    again = draw(pygpu, pygpu.Generator().manual_seed(0))
    np.testing.assert_array_equal(ours.numpy(), again.numpy())  # the generator decides
    theirs = draw(torch, torch.Generator().manual_seed(0)).double().numpy()
    o = ours.double().numpy()
    assert o.shape == theirs.shape and ours.dtype.name == str(
        draw(torch, torch.Generator()).dtype).replace("torch.", "")
    if mean is None:  # cauchy: the median is 1 (no mean)
        assert abs(float(o) - 1.0) < 0.05 and abs(float(theirs) - 1.0) < 0.05
        return
    tol = 4 * (std or np.std(theirs)) / math.sqrt(N) + 1e-12
    assert abs(o.mean() - mean) < tol and abs(theirs.mean() - mean) < tol
    if std is not None:
        assert abs(o.std() - std) < 0.01 * std and abs(theirs.std() - std) < 0.01 * std


def test_samplers_take_a_generator_on_the_device(device):
    kind = pygpu.device(device).type
    g = pygpu.Generator(kind).manual_seed(3)
    x = pygpu.empty(1000, device=device).exponential_(generator=g)
    y = pygpu.randperm(50, device=device, generator=g)
    pygpu.manual_seed(3)
    np.testing.assert_array_equal(x.numpy(), pygpu.empty(1000, device=device).exponential_()
                                  .numpy())
    np.testing.assert_array_equal(y.numpy(), pygpu.randperm(50, device=device).numpy())


def test_random_range_and_kinds_match_torch():
    assert set(pygpu.empty(1000, dtype=pygpu.bool).random_().tolist()) == {False, True}
    ints = pygpu.empty(5000, dtype=pygpu.int64).random_().numpy()
    assert ints.min() >= 0 and ints.max() > 2 ** 60  # the whole int64 range
    f = pygpu.empty(5000).random_().numpy()
    assert f.min() >= 0 and f.max() <= 2 ** 24 and f.max() > 2 ** 23 and (f == np.floor(f)).all()
    assert (pygpu.empty(2000, dtype=pygpu.int64).geometric_(0.5).numpy() >= 1).all()


@pytest.mark.parametrize("call", [
    lambda m: m.empty(3).uniform_(1, 0),
    lambda m: m.empty(3).normal_(0, -1),
    lambda m: m.empty(3).bernoulli_(1.5),
    lambda m: m.empty(3).exponential_(0),
    lambda m: m.empty(3).geometric_(0),
    lambda m: m.empty(3).log_normal_(1, 0),
    lambda m: m.empty(3).cauchy_(0, 0),
    lambda m: m.empty(3).random_(5, 2),
    lambda m: m.empty(3, dtype=m.int64).uniform_(),
    lambda m: m.empty(3, dtype=m.int64).exponential_(),
    lambda m: m.bernoulli(m.full((3,), 1.5)),
    lambda m: m.normal(m.zeros(2), m.ones(3)),
    lambda m: m.poisson(m.tensor([-1.0])),
], ids=["uniform_from_above_to", "normal_negative_std", "bernoulli_p_above_1", "exponential_0",
        "geometric_0", "log_normal_std_0", "cauchy_scale_0", "random_from_above_to",
        "uniform_int64", "exponential_int64", "bernoulli_probs_above_1", "normal_shapes",
        "poisson_negative_rate"])
def test_sampler_errors_match_torch(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(pygpu)
    assert str(theirs.value).split("(Could")[0].strip() in str(ours.value)


INITS = [
    ("uniform_", lambda m, t, g: m.nn.init.uniform_(t, -1, 3, generator=g), 1.0, 4 / math.sqrt(12)),
    ("normal_", lambda m, t, g: m.nn.init.normal_(t, 1, 2, generator=g), 1.0, 2.0),
    ("trunc_normal_", lambda m, t, g: m.nn.init.trunc_normal_(t, 0, 1, -1, 1, generator=g),
     0.0, 0.5380),
    ("trunc_normal_ (far tail)", lambda m, t, g: m.nn.init.trunc_normal_(t, 0, 1, 2, 3,
                                                                          generator=g),
     (math.exp(-2) - math.exp(-4.5)) / math.sqrt(2 * math.pi) /
     ((math.erf(3 / math.sqrt(2)) - math.erf(2 / math.sqrt(2))) / 2), None),
    ("xavier_uniform_", lambda m, t, g: m.nn.init.xavier_uniform_(t, 2.0, generator=g), 0.0,
     2 * math.sqrt(2 / (400 + 500))),
    ("xavier_normal_", lambda m, t, g: m.nn.init.xavier_normal_(t, generator=g), 0.0,
     math.sqrt(2 / 900)),
    ("kaiming_uniform_", lambda m, t, g: m.nn.init.kaiming_uniform_(t, math.sqrt(5),
                                                                    generator=g), 0.0,
     math.sqrt(2 / 6) / math.sqrt(400)),
    ("kaiming_normal_", lambda m, t, g: m.nn.init.kaiming_normal_(t, mode="fan_out",
                                                                  nonlinearity="relu",
                                                                  generator=g), 0.0,
     math.sqrt(2 / 500)),
    ("sparse_", lambda m, t, g: m.nn.init.sparse_(t, 0.5, 1.0, generator=g), 0.0,
     math.sqrt(0.5)),
]


@pytest.mark.parametrize("name,init,mean,std", INITS, ids=[i[0] for i in INITS])
def test_nn_init_takes_a_generator_and_matches_torch(name, init, mean, std, device):
    kind = pygpu.device(device).type
    w = pygpu.empty(500, 400, device=device)
    w2 = pygpu.empty(500, 400, device=device)
    assert init(pygpu, w, pygpu.Generator(kind).manual_seed(1)) is w
    init(pygpu, w2, pygpu.Generator(kind).manual_seed(1))
    np.testing.assert_array_equal(w.numpy(), w2.numpy())
    theirs = init(torch, torch.empty(500, 400), torch.Generator().manual_seed(1)).numpy()
    ours = w.numpy()
    n = ours.size
    for vals in (ours, theirs):
        assert abs(vals.mean() - mean) < 5 * (std or 0.3) / math.sqrt(n) + 1e-9
        if std is not None:
            assert abs(vals.std() - std) < 0.01 * std
    if name == "sparse_":
        assert ((ours == 0).sum(0) == 250).all() and ((theirs == 0).sum(0) == 250).all()


def test_orthogonal_eye_dirac_and_the_deprecated_spellings(device):
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        w = pygpu.empty(*shape, device=device)
        nn.init.orthogonal_(w, gain=2.0, generator=pygpu.Generator(pygpu.device(device).type))
        m = w.reshape(shape[0], -1).numpy().astype(np.float64)
        gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
        np.testing.assert_allclose(gram, 4 * np.eye(len(gram)), atol=1e-4)
    for shape, groups in [((6, 4, 3), 2), ((4, 4, 3, 5), 1), ((2, 3, 3, 3, 3), 1)]:
        ours, theirs = pygpu.empty(*shape), torch.empty(*shape)
        nn.init.dirac_(ours, groups), torch.nn.init.dirac_(theirs, groups)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    e = nn.init.eye_(pygpu.empty(3, 5, device=device))
    np.testing.assert_array_equal(e.numpy(), torch.nn.init.eye_(torch.empty(3, 5)).numpy())
    for old in ("uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
                "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"):
        args = {"constant": (0.5,), "sparse": (0.1,)}.get(old, ())
        shape = (2, 2, 3) if old == "dirac" else (4, 4)
        with pytest.warns(FutureWarning, match=f"`nn.init.{old}` is now deprecated in favor of "
                                               f"`nn.init.{old}_`"):
            getattr(nn.init, old)(pygpu.empty(*shape), *args)
    with pytest.warns(UserWarning, match="zero-element"):
        nn.init.kaiming_uniform_(pygpu.empty(0, 3))


def test_random_sampler_draws_from_its_generator_and_goes_on():
    ds = list(range(100))
    s = RandomSampler(ds, generator=pygpu.Generator().manual_seed(7))
    e1, e2 = list(s), list(s)
    assert sorted(e1) == ds and e1 != e2  # the stream goes on: a new order each pass
    g = pygpu.Generator().manual_seed(7)
    assert e1 == pygpu.randperm(100, generator=g).tolist()
    assert e2 == pygpu.randperm(100, generator=g).tolist()
    longer = list(RandomSampler(ds, num_samples=250, generator=pygpu.Generator().manual_seed(1)))
    assert len(longer) == 250 and sorted(longer[:100]) == ds and sorted(longer[100:200]) == ds
    rep = list(RandomSampler(range(5), replacement=True, num_samples=1000,
                             generator=pygpu.Generator().manual_seed(1)))
    assert len(rep) == 1000 and set(rep) == set(range(5))
    pygpu.manual_seed(3)
    a = list(RandomSampler(ds))
    pygpu.manual_seed(3)
    assert list(RandomSampler(ds)) == a  # without a generator: manual_seed decides
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(ds, replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(ds, num_samples=0)


def test_an_infinite_sampler_allocates_nothing_up_front():
    ds = TensorDataset(pygpu.arange(10).float(), pygpu.arange(10))
    tracemalloc.start()
    try:
        sampler = RandomSampler(ds, replacement=True, num_samples=int(1e10))
        it = iter(sampler)
        first = [next(it) for _ in range(100)]
        loader = DataLoader(ds, batch_size=4, sampler=sampler)
        batches = iter(loader)
        xb, yb = next(batches)
        next(batches)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak  # 1e10 indices would be 75 GiB
    assert len(sampler) == int(1e10) and len(loader) == int(1e10) // 4 + 0
    assert all(0 <= i < 10 for i in first) and xb.shape == (4,)
    np.testing.assert_array_equal(xb.numpy(), yb.numpy().astype(np.float32))
    generic = DataLoader(list(range(10)), batch_size=3, sampler=sampler)
    assert len(next(iter(generic))) == 3


def test_subset_and_weighted_samplers_and_random_split():
    idx = [10, 20, 30, 40, 50]
    a = list(SubsetRandomSampler(idx, generator=pygpu.Generator().manual_seed(2)))
    b = list(SubsetRandomSampler(idx, generator=pygpu.Generator().manual_seed(2)))
    assert a == b and sorted(a) == idx
    w = [0.1, 0.2, 0.7]
    draws = np.array(list(WeightedRandomSampler(w, 60000, generator=pygpu.Generator()
                                                .manual_seed(0))))
    ref = np.array(list(torch.utils.data.WeightedRandomSampler(w, 60000)))
    for k, p in enumerate(w):
        assert abs((draws == k).mean() - p) < 0.01 and abs((ref == k).mean() - p) < 0.01
    once = list(WeightedRandomSampler(w, 3, replacement=False))
    assert sorted(once) == [0, 1, 2]
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 1)
    parts = random_split(range(10), [0.5, 0.5], generator=pygpu.Generator().manual_seed(42))
    again = random_split(range(10), [0.5, 0.5], generator=pygpu.Generator().manual_seed(42))
    assert [list(p) for p in parts] == [list(p) for p in again]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))


def test_dataloader_shuffles_from_its_generator():
    ds = TensorDataset(pygpu.arange(20).float())

    def epochs(loader):
        return [[int(v) for (xb,) in loader for v in xb.tolist()] for _ in range(2)]

    a = epochs(DataLoader(ds, batch_size=5, shuffle=True,
                          generator=pygpu.Generator().manual_seed(1)))
    b = epochs(DataLoader(ds, batch_size=5, shuffle=True,
                          generator=pygpu.Generator().manual_seed(1)))
    assert a == b and a[0] != a[1] and sorted(a[0]) == list(range(20))
    generic = epochs(DataLoader([(float(i),) for i in range(20)], batch_size=5, shuffle=True,
                                generator=pygpu.Generator().manual_seed(1)))
    assert generic == a  # the same sampler on either path
