"""The short MLP training the main job (python -m pygpu) runs and explains.

A two-layer perceptron (784 -> 512 -> 10, softmax cross-entropy) trained with
SGD on synthetic MNIST-shaped data, written with pygpu's tensor ops and its
backward pass by hand (shapes in comments), so that the transfers are exactly
the REST-API pattern: the weights go to the device once (a heavy request), each
step sends a batch and reads back the loss (light requests), and the trained
weights come back once at the end (the second heavy request)."""
import numpy as np

import pygpu

IN, HIDDEN, OUT = 784, 512, 10


def make_data(n=2048, seed=0):
    """n MNIST-shaped samples (n, 784) float32 whose labels a linear map decides."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, IN), dtype=np.float32)
    w = rng.standard_normal((IN, OUT), dtype=np.float32)
    y = np.argmax(x @ w, axis=1)
    return x, y


def init_params(seed=0):
    rng = np.random.default_rng(seed)
    return {"w1": (rng.standard_normal((IN, HIDDEN)) / np.sqrt(IN)).astype(np.float32),   # (784, 512)
            "b1": np.zeros(HIDDEN, np.float32),                                            # (512,)
            "w2": (rng.standard_normal((HIDDEN, OUT)) / np.sqrt(HIDDEN)).astype(np.float32),  # (512, 10)
            "b2": np.zeros(OUT, np.float32)}                                               # (10,)


def to_device(params, device):
    """The weights, uploaded once: the first heavy request."""
    return {k: pygpu.tensor(v, device=device) for k, v in params.items()}


def epoch(p, x_all, onehot_all, batch=64, lr=0.1, on_step=None):
    """SGD over (x_all, onehot_all) in batches, p (device weights) updated in place of
    the dict; each step uploads a batch and reads the loss back (light requests)."""
    losses = []
    for s in range(len(x_all) // batch):
        sl = slice(s * batch, (s + 1) * batch)
        x = pygpu.tensor(x_all[sl], device=p["w1"].device)      # (B, 784) one batch up
        t = pygpu.tensor(onehot_all[sl], device=p["w1"].device)  # (B, 10)
        h_pre = x @ p["w1"] + p["b1"]                       # (B, 512)
        h = h_pre.relu()
        logits = h @ p["w2"] + p["b2"]                      # (B, 10)
        z = logits - logits.max(1, keepdims=True)
        e = z.exp()
        sm = e / e.sum(1, keepdims=True)                    # (B, 10) softmax
        loss = -(t * (sm + 1e-12).log()).sum() / batch
        g_logits = (sm - t) / batch                         # (B, 10) d loss / d logits
        g_w2 = h.T @ g_logits                               # (512, 10)
        g_b2 = g_logits.sum(0)                              # (10,)
        g_h = (g_logits @ p["w2"].T) * (h_pre > 0).astype(pygpu.float32)  # (B, 512)
        g_w1 = x.T @ g_h                                    # (784, 512)
        g_b1 = g_h.sum(0)                                   # (512,)
        for k, g in (("w1", g_w1), ("b1", g_b1), ("w2", g_w2), ("b2", g_b2)):
            p[k] = p[k] - g * lr
        losses.append(loss.item())                          # 4 bytes back, implicit
        if on_step:
            on_step()
    return losses


def train(device, steps=30, batch=64, lr=0.1, seed=0, on_step=None):
    """Train on `device`; returns (trained params as NumPy, losses per step)."""
    x_all, y_all = make_data(steps * batch, seed)
    onehot_all = np.eye(OUT, dtype=np.float32)[y_all]
    p = to_device(init_params(seed), device)                # heavy: weights up
    losses = epoch(p, x_all, onehot_all, batch, lr, on_step)
    trained = {k: v.numpy() for k, v in p.items()}         # heavy: weights down
    return trained, losses
