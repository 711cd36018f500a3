"""The short MLP training the main job (python -m pygpu, pygpu/tools/main_job.py) runs and explains.

A two-layer perceptron (pygpu.nn.MLP 784 -> 512 -> 10, cross-entropy, SGD)
trained by pygpu.Trainer on synthetic MNIST-shaped data, so that the transfers
are the REST-API pattern as the training stack really issues them: the weights
go to the device once (a heavy request), each step sends a batch (a light
request), the epoch's loss comes back as a few 4-byte reads, and the trained
weights come back once at the end (the second heavy request)."""
import numpy as np

import pygpu

SIZES = (784, 512, 10)


def make_data(n=2048, seed=0):
    """n MNIST-shaped samples: x (n, 784) float32, y (n,) int64 labels a linear map decides."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, SIZES[0]), dtype=np.float32)
    w = rng.standard_normal((SIZES[0], SIZES[-1]), dtype=np.float32)
    y = np.argmax(x @ w, axis=1).astype(np.int64)
    return x, y


def make_trainer(device, seed=0, lr=0.1, precision="32"):
    """A fresh MLP moved to `device` by its Trainer: the first heavy request.
    precision: "32", "bf16-mixed" or "16-mixed" (batches then travel as 16-bit)."""
    pygpu.manual_seed(seed)
    model = pygpu.nn.MLP(list(SIZES))
    opt = pygpu.optim.SGD(model.parameters(), lr=lr)
    return pygpu.Trainer(model, opt, pygpu.cross_entropy, device=device, precision=precision)


def train(device, steps=30, batch=64, seed=0, prefetch=2, progress=False, precision="32"):
    """Train for `steps` steps (one epoch) on `device`, bringing the weights back at
    the end (the second heavy request); returns the epoch's history record."""
    x, y = make_data(steps * batch, seed)
    trainer = make_trainer(device, seed, precision=precision)
    (record,) = trainer.fit(x, y, epochs=1, batch_size=batch, shuffle=False, prefetch=prefetch,
                            progress=progress, bring_back=True)
    return record
