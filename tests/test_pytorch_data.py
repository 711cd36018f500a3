# test_pytorch_data.py - pygpu.data with torch.utils.data's interface: the Dataset protocol,
# TensorDataset/Subset/ConcatDataset/random_split, DataLoader(dataset, ...) with samplers,
# batch samplers, default_collate over tuples/dicts/numbers/arrays/tensors (checked against
# torch's where installed), num_workers threads, and the TensorDataset fast path (batches
# sliced in one op and prefetched to the device, counted as the array loader's are).
import collections

import numpy as np
import pytest

import pygpu
from pygpu.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                              IterableDataset, RandomSampler, SequentialSampler, Subset,
                              TensorDataset, default_collate, random_split)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return np.full(3, i, np.float32), i * i


def _xy(n=10):
    return (pygpu.tensor(np.arange(n * 2, dtype=np.float32).reshape(n, 2)),
            pygpu.tensor(np.arange(n, dtype=np.int64)))


def test_pygpu_utils_data_is_pygpu_data():
    import pygpu.utils.data as ud
    assert ud is pygpu.data and pygpu.utils.data.DataLoader is pygpu.data.DataLoader


def test_tensor_dataset_items_and_errors():
    X, y = _xy()
    ds = TensorDataset(X, y)
    assert len(ds) == 10
    x3, y3 = ds[3]
    assert x3.tolist() == [6.0, 7.0] and y3.item() == 3
    with pytest.raises(ValueError, match="same first dimension"):
        TensorDataset(X, pygpu.zeros(3))
    with pytest.raises(TypeError, match="pygpu.Tensor or a NumPy array"):
        TensorDataset([1, 2, 3])


def test_subset_concat_and_add():
    a, b = Squares(3), Squares(4)
    c = a + b
    assert isinstance(c, ConcatDataset) and len(c) == 7
    assert c[3][1] == 0 and c[6][1] == 9 and c[-1][1] == 9
    with pytest.raises(IndexError, match="out of range"):
        c[7]
    s = Subset(b, [3, 1])
    assert len(s) == 2 and s[0][1] == 9 and s[1][1] == 1


@pytest.mark.parametrize("lengths,expect", [([0.7, 0.3], [7, 3]), ([0.5, 0.25, 0.25], [6, 2, 2]),
                                            ([6, 4], [6, 4])])
def test_random_split_lengths_and_disjoint(lengths, expect):
    parts = random_split(Squares(10), lengths, generator=0)
    assert [len(p) for p in parts] == expect
    idx = sorted(i for p in parts for i in p.indices)
    assert idx == list(range(10))
    again = random_split(Squares(10), lengths, generator=0)
    assert [p.indices for p in parts] == [p.indices for p in again]  # seeded: reproducible
    with pytest.raises(ValueError, match="does not equal the length"):
        random_split(Squares(10), [3, 3])


def test_random_split_matches_torchs_lengths():
    torch = pytest.importorskip("torch")
    for lengths in ([0.7, 0.3], [0.33, 0.33, 0.34], [0.1] * 10, [0.25, 0.75]):
        ours = [len(p) for p in random_split(Squares(23), lengths, generator=1)]
        ref = [len(p) for p in torch.utils.data.random_split(
            range(23), lengths, generator=torch.Generator().manual_seed(1))]
        assert ours == ref, lengths


def test_dataloader_over_a_generic_dataset_batches_and_len():
    loader = DataLoader(Squares(10), batch_size=4)
    assert len(loader) == 3 and loader.dataset.n == 10
    batches = list(loader)
    xb, yb = batches[0]
    assert xb.shape == (4, 3) and xb.dtype == pygpu.float32
    assert yb.tolist() == [0, 1, 4, 9] and yb.dtype == pygpu.int64
    assert batches[-1][1].tolist() == [64, 81]
    assert len(DataLoader(Squares(10), batch_size=4, drop_last=True)) == 2
    assert len(list(DataLoader(Squares(10), 4, drop_last=True))) == 2


def test_shuffle_visits_every_sample_once_and_generator_is_reproducible():
    seen = [int(v) for _, yb in DataLoader(Squares(12), 5, True, generator=3)
            for v in yb.tolist()]
    assert sorted(seen) == sorted(i * i for i in range(12)) and seen != sorted(seen)
    a = [yb.tolist() for _, yb in DataLoader(Squares(12), 5, shuffle=True, generator=7)]
    b = [yb.tolist() for _, yb in DataLoader(Squares(12), 5, shuffle=True, generator=7)]
    assert a == b


def test_samplers_batch_sampler_and_unbatched():
    ds = Squares(7)
    loader = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), 3, False))
    assert [yb.tolist() for _, yb in loader] == [[0, 1, 4], [9, 16, 25], [36]]
    assert len(loader) == 3
    loader = DataLoader(ds, sampler=[6, 0], batch_size=2)
    assert [yb.tolist() for _, yb in loader] == [[36, 0]]
    one = list(DataLoader(ds, batch_size=None))
    assert len(one) == 7 and one[2][1] == 4 and isinstance(one[2][0], pygpu.Tensor)
    assert sorted(RandomSampler(ds, generator=1)) == list(range(7))
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, batch_size=2, batch_sampler=[[0]])
    with pytest.raises(ValueError, match="shuffle=True or a sampler"):
        DataLoader(ds, shuffle=True, sampler=[0])


def test_batch_sampler_matches_torch():
    torch = pytest.importorskip("torch")
    for drop in (False, True):
        ours = list(BatchSampler(range(10), 3, drop))
        ref = list(torch.utils.data.BatchSampler(range(10), 3, drop))
        assert ours == ref and len(BatchSampler(range(10), 3, drop)) == len(ref)


def test_default_collate_structures_match_torch():
    torch = pytest.importorskip("torch")
    Point = collections.namedtuple("Point", "x y")
    samples = [
        {"a": np.float32(1.5), "b": [1, 2.5], "c": "s0", "d": Point(1, np.ones(2))},
        {"a": np.float32(2.5), "b": [3, 4.5], "c": "s1", "d": Point(2, np.zeros(2))},
    ]
    ours, ref = default_collate(samples), torch.utils.data.default_collate(samples)

    def same(o, r):
        if isinstance(r, torch.Tensor):
            assert isinstance(o, pygpu.Tensor) and o.shape == tuple(r.shape)
            assert str(o.dtype).split(".")[-1] == str(r.dtype).split(".")[-1]
            np.testing.assert_array_equal(o.numpy(), r.numpy())
        elif isinstance(r, dict):
            assert type(o) is type(r) and list(o) == list(r)
            for k in r:
                same(o[k], r[k])
        elif isinstance(r, (list, tuple)):
            assert type(o) is type(r) and len(o) == len(r)
            for a, b in zip(o, r):
                same(a, b)
        else:
            assert o == r
    same(ours, ref)
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([np.ones(2), np.ones(3)])


def test_collate_of_pygpu_tensors_on_a_device(device):
    xs = [pygpu.tensor(np.full(2, i, np.float32), device=device) for i in range(3)]
    out = default_collate(xs)
    assert out.shape == (3, 2) and str(out.device) == str(pygpu.device(device))
    assert out.numpy()[:, 0].tolist() == [0.0, 1.0, 2.0]


def test_num_workers_keep_order():
    # the workers are processes (tests/test_multiprocessing.py checks them in depth)
    loader = DataLoader(Squares(20), batch_size=3, num_workers=2, prefetch_factor=3)
    ys = [v for _, yb in loader for v in yb.tolist()]
    assert ys == [i * i for i in range(20)]
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(Squares(2), num_workers=-1)


def test_iterable_dataset_is_batched_in_order():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(Stream(), shuffle=True)


# ---- the TensorDataset fast path ------------------------------------------------------------

def test_tensor_dataset_takes_the_fast_path_and_yields_lists(device):
    X, y = _xy(23)
    loader = DataLoader(TensorDataset(X, y), batch_size=4, shuffle=True, generator=5,
                        device=device)
    assert loader._mode == "tensors"
    batches = list(loader)
    assert len(batches) == len(loader) == 6
    for xb, yb in batches:
        assert isinstance(xb, pygpu.Tensor) and str(xb.device) == str(pygpu.device(device))
        np.testing.assert_array_equal(xb.numpy(), X.numpy()[yb.numpy()])
    seen = np.concatenate([b[1].numpy() for b in batches])
    assert sorted(seen.tolist()) == list(range(23))
    assert isinstance(batches[0], list)  # PyTorch's default_collate gives a list


def test_tensor_dataset_batches_are_pinned_async_copies_on_sim(fresh_stats):
    X, y = _xy(32)
    loader = DataLoader(TensorDataset(X, y), batch_size=8, device="sim", prefetch=2)
    list(loader)  # the first epoch allocates the staging ring
    pygpu.synchronize()
    with pygpu.track() as t:
        out = list(loader)
        pygpu.synchronize()
    assert len(out) == 4
    assert t.h2d_count == 4 * 2  # four batches x (X, y): one copy each, no per-item copies
    assert t.h2d_bytes == X.nbytes + y.nbytes
    (pair,) = t.transfers
    assert pair["pinned"] == pair["async"] == pair["count"]
    assert t.per_device["cpu"]["allocs"] == 0  # the staging ring is reused
    np.testing.assert_array_equal(np.concatenate([o[1].numpy() for o in out]), np.arange(32))


def test_subset_of_a_tensor_dataset_keeps_the_fast_path(device):
    X, y = _xy(20)
    train, test = random_split(TensorDataset(X, y), [15, 5], generator=2)
    loader = DataLoader(test, batch_size=2, device=device)
    assert loader._mode == "tensors" and len(loader) == 3
    got = [v for _, yb in loader for v in yb.tolist()]
    assert got == test.indices
    ref = [DataLoader(test, batch_size=2, collate_fn=default_collate)]  # generic path
    assert ref[0]._mode == "dataset"
    assert [v for _, yb in ref[0] for v in yb.tolist()] == got


def test_old_array_call_style_still_works():
    X, y = np.ones((6, 2), np.float32), np.arange(6)
    xb, yb = next(iter(DataLoader(X, y, 4)))
    assert xb.shape == (4, 2) and yb.tolist() == [0, 1, 2, 3]
    xb = next(iter(DataLoader(X, 4)))  # a tensor as the dataset: rows, batched (PyTorch)
    assert xb.shape == (4, 2)
