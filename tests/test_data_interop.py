# test_data_interop.py - the DataLoader and other sources' samples (issue 46, item 5): NumPy
# arrays of every dtype (uint8 images included) collate, kept exactly where pygpu holds the
# dtype and widened exactly where it does not yet; PyTorch datasets (a torchvision-style
# Dataset yielding torch tensors or arrays, TensorDataset, IterableDataset) feed pygpu's
# DataLoader unchanged, torch tensors crossing through DLPack without a copy.
import numpy as np
import pytest

import pygpu
from pygpu.data import DataLoader, default_collate

torch = pytest.importorskip("torch")

NUMPY_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64"]


def _held(name):
    try:
        pygpu._dtype.to_dtype(np.dtype(name))
        return True
    except TypeError:
        return False


@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_arrays_of_every_dtype_collate(name):
    rng = np.random.default_rng(0)
    samples = [(rng.integers(0, 2 if name == "bool" else 100, (3, 4, 4)).astype(name), i)
               for i in range(5)]
    images, labels = default_collate(samples)
    expected = np.stack([s[0] for s in samples])
    assert tuple(images.shape) == (5, 3, 4, 4) and labels.tolist() == list(range(5))
    if _held(name):
        assert images.dtype == pygpu._dtype.to_dtype(np.dtype(name))  # kept exactly
    else:
        assert images.dtype in (pygpu.int64, pygpu.float64)  # widened exactly, until held
    np.testing.assert_array_equal(images.numpy().astype(np.float64), expected.astype(np.float64))


def test_bfloat16_arrays_collate():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3)
    batch = default_collate([a, a])
    assert batch.dtype is pygpu.bfloat16 and batch.float().numpy()[1].tolist() == [[0, 1, 2],
                                                                                   [3, 4, 5]]


def test_uint8_images_through_the_array_path_and_a_dataset():
    X = np.random.default_rng(1).integers(0, 256, (10, 1, 4, 4), dtype=np.uint8)
    y = np.arange(10) % 3
    (xb, yb), = [next(iter(DataLoader(X, y, batch_size=10)))]
    np.testing.assert_array_equal(xb.numpy(), X)

    class Images(pygpu.data.Dataset):
        def __len__(self):
            return len(X)

        def __getitem__(self, i):
            return X[i], int(y[i])
    xb, yb = next(iter(DataLoader(Images(), batch_size=4)))
    np.testing.assert_array_equal(xb.numpy(), X[:4])
    assert yb.dtype is pygpu.int64


class TorchVisionStyle(torch.utils.data.Dataset):
    """As torchvision's datasets yield: (image tensor, int label), or arrays."""

    def __init__(self, n=12, as_uint8=False, as_numpy=False):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (n, 3, 8, 8), generator=g, dtype=torch.uint8)
        self.as_uint8, self.as_numpy = as_uint8, as_numpy

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img = self.images[i] if self.as_uint8 else self.images[i].float() / 255
        return (img.numpy() if self.as_numpy else img), i % 4


@pytest.mark.parametrize("as_uint8, as_numpy", [(False, False), (True, False), (False, True),
                                                (True, True)])
def test_a_torch_dataset_feeds_pygpu_unchanged(as_uint8, as_numpy):
    ds = TorchVisionStyle(as_uint8=as_uint8, as_numpy=as_numpy)
    ours = list(DataLoader(ds, batch_size=5))
    theirs = list(torch.utils.data.DataLoader(ds, batch_size=5))
    assert len(ours) == len(theirs) == 3
    for (xb, yb), (tx, ty) in zip(ours, theirs):
        assert isinstance(xb, pygpu.Tensor) and isinstance(yb, pygpu.Tensor)
        np.testing.assert_array_equal(xb.numpy(), tx.numpy())
        np.testing.assert_array_equal(yb.numpy(), ty.numpy())


def test_torch_tensors_cross_without_a_copy():
    ds = TorchVisionStyle()
    loader = DataLoader(ds, batch_size=None)  # samples as they are, converted
    img, label = next(iter(loader))
    src = ds[0][0]
    assert isinstance(img, pygpu.Tensor) and label == 0
    floats = torch.arange(12.0).reshape(3, 4)
    shared = pygpu.data.default_convert(floats)
    assert shared.data_ptr() == floats.data_ptr()  # one buffer: DLPack, no copy
    floats[0, 0] = 42.0
    assert shared[0, 0].item() == 42.0
    np.testing.assert_array_equal(img.numpy(), src.numpy())


def test_torch_tensor_and_iterable_datasets_and_training_from_them():
    X = torch.randn(64, 5, generator=torch.Generator().manual_seed(2))
    y = (X[:, 0] > 0).long()
    loader = DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16, shuffle=True,
                        generator=0)
    pygpu.manual_seed(0)
    model = pygpu.nn.Linear(5, 2)
    opt = pygpu.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(20):
        for xb, yb in loader:
            loss = pygpu.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    acc = (model(pygpu.from_dlpack(X)).argmax(1).numpy() == y.numpy()).mean()
    assert acc > 0.9

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter([torch.full((2,), float(i)) for i in range(5)])
    batches = list(DataLoader(Stream(), batch_size=2))
    assert [b.tolist() for b in batches] == [[[0, 0], [1, 1]], [[2, 2], [3, 3]], [[4, 4]]]
