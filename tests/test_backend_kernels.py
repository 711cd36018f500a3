# test_backend_kernels.py - torch's names for other backends' kernels (cudnn_*, miopen_*,
# mkldnn_*) and native_batch_norm (pygpu/_tensor/backend_kernels.py) against torch on every
# device. Where torch's CPU build runs the kernel (mkldnn_convolution, native_batch_norm, the
# mkldnn pools on an MKLDNN-layout copy) it is the oracle itself; where it does not (cudnn_*,
# miopen_*: no CPU kernel), the oracle is torch's generic op of the same math with the same
# arguments (torch.convolution, grid_sampler, affine_grid_generator, native_batch_norm).
# Values and gradients; ATen's argument types and errors.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

rng = np.random.default_rng(43)


def P(a, device, grad=False):
    return pygpu.tensor(np.asarray(a), device=device, requires_grad=grad)


def close(p, t, tol=1e-10):
    np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


X = rng.standard_normal((2, 4, 7, 6))
W = rng.standard_normal((6, 2, 3, 3))  # groups=2
B = rng.standard_normal(6)
WT = rng.standard_normal((4, 3, 3, 3))  # transposed, groups=2: 6 output channels
Z = rng.standard_normal((2, 6, 7, 6))


def test_mkldnn_convolution_is_torchs_own(device):
    f32 = np.float32
    for x, w, b, pad, st, dil in ((X, W, B, [1, 0], [1, 2], [1, 1]),
                                  (X[:, :, 0], W[:, :, 0], None, [2], [1], [2])):
        args = (pad, st, dil, 2)
        tb = None if b is None else torch.tensor(b, dtype=torch.float32)
        ref = torch.mkldnn_convolution(torch.tensor(x, dtype=torch.float32),
                                       torch.tensor(w, dtype=torch.float32), tb, *args)
        out = pygpu.mkldnn_convolution(P(x.astype(f32), device), P(w.astype(f32), device),
                                       None if b is None else P(b.astype(f32), device), *args)
        close(out, ref, 1e-5)
    with pytest.raises(RuntimeError, match="expects float"):  # oneDNN has no float64
        pygpu.mkldnn_convolution(P(X, device), P(W, device), None, [1, 1], [1, 1], [1, 1], 2)


def test_cudnn_and_miopen_convolutions_are_torch_convolution(device):
    tx, tw, tb = torch.tensor(X), torch.tensor(W), torch.tensor(B)
    ref = torch.convolution(tx, tw, None, [2, 1], [1, 1], [1, 2], False, [0, 0], 2)
    close(pygpu.cudnn_convolution(P(X, device), P(W, device), [1, 1], [2, 1], [1, 2], 2,
                                  False, False, True), ref)
    ref = torch.convolution(tx, tw, tb, [2, 1], [1, 1], [1, 2], False, [0, 0], 2)
    for fn in (pygpu.miopen_convolution, pygpu.miopen_depthwise_convolution):
        close(fn(P(X, device), P(W, device), P(B, device), [1, 1], [2, 1], [1, 2], 2, False,
                 False), ref)
    twt = torch.tensor(WT)
    ref = torch.convolution(tx, twt, None, [2, 2], [1, 0], [1, 1], True, [1, 0], 2)
    close(pygpu.cudnn_convolution_transpose(P(X, device), P(WT, device), [1, 0], [1, 0],
                                            [2, 2], [1, 1], 2, False, False, True), ref)
    ref = torch.convolution(tx, twt, tb, [2, 2], [1, 0], [1, 1], True, [1, 0], 2)
    close(pygpu.miopen_convolution_transpose(P(X, device), P(WT, device), P(B, device), [1, 0],
                                             [1, 0], [2, 2], [1, 1], 2, False, False), ref)


@pytest.mark.parametrize("prefix", ["cudnn", "miopen"])
def test_fused_relu_convolutions(device, prefix):
    tx, tw, tb, tz = (torch.tensor(a) for a in (X, W, B, Z))
    conv = torch.convolution(tx, tw, tb, [1, 1], [1, 1], [1, 1], False, [0, 0], 2)
    relu = getattr(pygpu, f"{prefix}_convolution_relu")
    close(relu(P(X, device), P(W, device), P(B, device), [1, 1], [1, 1], [1, 1], 2),
          torch.relu(conv))
    add_relu = getattr(pygpu, f"{prefix}_convolution_add_relu")
    for alpha in (None, 0.5):
        ref = torch.relu(conv + (1.0 if alpha is None else alpha) * tz)
        close(add_relu(P(X, device), P(W, device), P(Z, device), alpha, P(B, device), [1, 1],
                       [1, 1], [1, 1], 2), ref)
    with pytest.raises(RuntimeError, match="z of shape"):
        add_relu(P(X, device), P(W, device), P(Z[:, :, :3], device), None, None, [1, 1],
                 [1, 1], [1, 1], 2)


def test_convolution_gradients_flow(device):
    px, pw = P(X, device, True), P(W, device, True)
    tx, tw = torch.tensor(X, requires_grad=True), torch.tensor(W, requires_grad=True)
    g = rng.standard_normal((2, 6, 7, 6))
    pygpu.cudnn_convolution(px, pw, [1, 1], [1, 1], [1, 1], 2, False, False,
                            False).backward(P(g, device))
    torch.convolution(tx, tw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 2).backward(
        torch.tensor(g))
    close(px.grad, tx.grad)
    close(pw.grad, tw.grad)


def test_int_lists_are_atens_type():
    x, w = pygpu.tensor(X.astype(np.float32)), pygpu.tensor(W.astype(np.float32))
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        pygpu.mkldnn_convolution(x, w, None, 1, [1, 1], [1, 1], 2)
    with pytest.raises(TypeError):
        torch.mkldnn_convolution(torch.tensor(X, dtype=torch.float32),
                                 torch.tensor(W, dtype=torch.float32), None, 1, [1, 1], [1, 1], 2)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norms_match_native_batch_norm(device, training):
    x = rng.standard_normal((3, 4, 5))
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    rm, rv = rng.standard_normal(4), rng.uniform(0.5, 2, 4)
    ref_rm, ref_rv = torch.tensor(rm), torch.tensor(rv)
    ref = torch.native_batch_norm(torch.tensor(x), torch.tensor(w), torch.tensor(b), ref_rm,
                                  ref_rv, training, 0.1, 1e-5)
    for fn, n_out in ((pygpu.native_batch_norm, 3), (pygpu.cudnn_batch_norm, 4),
                      (pygpu.miopen_batch_norm, 3)):
        prm, prv = P(rm, device), P(rv, device)
        out = fn(P(x, device), P(w, device), P(b, device), prm, prv, training, 0.1, 1e-5)
        assert len(out) == n_out
        for o, r in zip(out[:3], ref):
            assert tuple(o.shape) == tuple(r.shape)
            close(o, r)
        close(prm, ref_rm)
        close(prv, ref_rv)
        if n_out == 4:  # cuDNN's reserve: uint8, empty (pygpu's node keeps no workspace)
            assert out[3].dtype == pygpu.uint8 and out[3].numel() == 0


def test_batch_norm_errors():
    x = pygpu.tensor(rng.standard_normal((3, 4, 5)))
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        pygpu.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(TypeError, match="weight"):
        pygpu.cudnn_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)


def test_cudnn_grid_sampler_and_affine_grid(device):
    theta = rng.standard_normal((2, 2, 3))
    ref = torch.affine_grid_generator(torch.tensor(theta), [2, 4, 5, 6], True)
    grid = pygpu.cudnn_affine_grid_generator(P(theta, device), 2, 4, 5, 6)
    close(grid, ref)
    x = rng.standard_normal((2, 4, 7, 6))
    px = P(x, device, True)
    tx = torch.tensor(x, requires_grad=True)
    out = pygpu.cudnn_grid_sampler(px, grid)
    tout = torch.grid_sampler(tx, ref, 0, 0, True)  # bilinear, zeros, align_corners
    close(out, tout)
    out.sum().backward()
    tout.sum().backward()
    close(px.grad, tx.grad)
    with pytest.raises(RuntimeError, match="expected 4D input"):
        pygpu.cudnn_grid_sampler(P(x[0], device), grid)
    with pytest.raises(RuntimeError, match="theta of size"):
        pygpu.cudnn_affine_grid_generator(P(theta, device), 3, 4, 5, 6)


def test_mkldnn_pools_are_torchs_own(device):
    x = rng.standard_normal((2, 3, 8, 9))
    mk = torch.tensor(x, dtype=torch.float32).to_mkldnn()
    px = P(x.astype(np.float32), device)
    ref = torch.mkldnn_max_pool2d(mk, [3, 3], [2, 2], [1, 1], [1, 1], True).to_dense()
    close(pygpu.mkldnn_max_pool2d(px, [3, 3], [2, 2], [1, 1], [1, 1], True), ref, 1e-6)
    ref = torch.mkldnn_max_pool2d(mk, [2, 3]).to_dense()  # stride [] = kernel
    close(pygpu.mkldnn_max_pool2d(px, [2, 3]), ref, 1e-6)
    x3 = rng.standard_normal((1, 2, 6, 5, 7)).astype(np.float32)
    ref = torch.mkldnn_max_pool3d(torch.tensor(x3).to_mkldnn(), [2, 2, 3], [1, 2, 2]).to_dense()
    close(pygpu.mkldnn_max_pool3d(P(x3, device), [2, 2, 3], [1, 2, 2]), ref, 1e-6)
    x = rng.standard_normal((2, 3, 8, 6)).astype(np.float32)
    ref = torch.mkldnn_adaptive_avg_pool2d(torch.tensor(x).to_mkldnn(), [4, 3]).to_dense()
    close(pygpu.mkldnn_adaptive_avg_pool2d(P(x, device), [4, 3]), ref, 1e-6)
    with pytest.raises(RuntimeError, match="not divisible"):
        torch.mkldnn_adaptive_avg_pool2d(torch.tensor(x).to_mkldnn(), [3, 3])
    with pytest.raises(RuntimeError, match="not divisible"):
        pygpu.mkldnn_adaptive_avg_pool2d(P(x, device), [3, 3])


def test_cudnn_is_acceptable(device):
    x = P(rng.standard_normal((2, 3)), device)
    assert pygpu.cudnn_is_acceptable(x) == pygpu.backends.cudnn.is_acceptable(x)
    if not device.startswith("cuda"):
        assert pygpu.cudnn_is_acceptable(x) is False
        assert torch.cudnn_is_acceptable(torch.zeros(2, 3)) is False
