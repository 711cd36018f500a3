# test_embedding.py - nn.Embedding / F.embedding as a gather with index checks and a
# scatter-add backward (issue 43), against torch on every device: values, gradients with
# duplicates, padding_idx, scale_grad_by_freq and max_norm, PyTorch's IndexError for an
# index out of range (negative ones too), and the torch.embedding spellings.
import numpy as np
import pytest
import torch

import pygpu

from _helpers import to_device, to_numpy

R = np.random.default_rng(7)


def _tables(V, D, device, dtype=np.float64):
    w = R.standard_normal((V, D)).astype(dtype)
    return to_device(w, device).requires_grad_(), torch.tensor(w, requires_grad=True)


def _idx(values, device):
    return pygpu.tensor(np.asarray(values), device=device), torch.tensor(np.asarray(values))


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"padding_idx": -1},
                                    {"scale_grad_by_freq": True},
                                    {"padding_idx": 0, "scale_grad_by_freq": True}],
                         ids=["plain", "padding", "negative_padding", "freq", "padding_freq"])
def test_embedding_matches_torch(device, kwargs):
    w, tw = _tables(6, 3, device)
    idx, tidx = _idx([[0, 2, 2, 5], [1, 0, 2, 3]], device)  # duplicates: their grads add
    out = pygpu.nn.functional.embedding(idx, w, **kwargs)
    ref = torch.nn.functional.embedding(tidx, tw, **kwargs)
    np.testing.assert_allclose(to_numpy(out), ref.detach().numpy(), rtol=0)
    g = R.standard_normal(tuple(ref.shape))
    out.backward(to_device(g, device))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(to_numpy(w.grad), tw.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_embedding_module_and_from_pretrained(device):
    torch.manual_seed(0)
    ref = torch.nn.Embedding(10, 4, padding_idx=3)
    m = pygpu.nn.Embedding(10, 4, padding_idx=3).to(device)
    m.weight.data.copy_(to_device(ref.weight.detach().numpy(), device))
    assert m.weight.requires_grad
    x, tx = _idx([[3, 1, 9], [0, 3, 3]], device)
    np.testing.assert_allclose(to_numpy(m(x)), ref(tx).detach().numpy(), rtol=0)
    m(x).sum().backward()
    ref(tx).sum().backward()
    np.testing.assert_allclose(to_numpy(m.weight.grad), ref.weight.grad.numpy(), rtol=1e-6)
    frozen = pygpu.nn.Embedding.from_pretrained(to_device(np.eye(3, dtype=np.float32), device))
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(to_numpy(frozen(pygpu.tensor([2, 0], device=device))),
                                  np.eye(3, dtype=np.float32)[[2, 0]])


def test_embedding_zero_d_and_empty_indices(device):
    w, tw = _tables(5, 2, device)
    np.testing.assert_array_equal(
        to_numpy(pygpu.nn.functional.embedding(pygpu.tensor(3, device=device), w)),
        torch.nn.functional.embedding(torch.tensor(3), tw).detach().numpy())
    empty = pygpu.nn.functional.embedding(pygpu.zeros((2, 0), dtype=pygpu.int64, device=device),
                                          w)
    assert tuple(empty.shape) == (2, 0, 2)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalizes_the_rows_looked_up(device, norm_type):
    w0 = R.standard_normal((6, 4)) * 3
    w, tw = to_device(w0, device), torch.tensor(w0)
    idx, tidx = _idx([0, 2, 2, 4], device)
    out = pygpu.nn.functional.embedding(idx, w, max_norm=1.5, norm_type=norm_type)
    ref = torch.nn.functional.embedding(tidx, tw, max_norm=1.5, norm_type=norm_type)
    np.testing.assert_allclose(to_numpy(out), ref.numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(w), tw.numpy(), rtol=1e-12)  # weight changed in place
    np.testing.assert_array_equal(to_numpy(w)[[1, 3, 5]], w0[[1, 3, 5]])  # others untouched


@pytest.mark.parametrize("bad", [[4], [-1], [0, 9]], ids=["past_end", "negative", "second"])
def test_embedding_index_out_of_range_is_pytorchs_index_error(device, bad):
    with pytest.raises(IndexError, match="index out of range in self"):
        torch.nn.functional.embedding(torch.tensor(bad), torch.ones(4, 2))
    w = pygpu.ones(4, 2, device=device)
    with pytest.raises(IndexError, match="index out of range in self"):
        out = pygpu.nn.functional.embedding(pygpu.tensor(bad, device=device), w)
        out.sum().item()  # sim and cuda: raised at the read (pygpu.AsyncIndexError)
    pygpu.synchronize()
    assert w.sum().item() == 8.0  # the device keeps working


def test_embedding_argument_errors_are_pytorchs():
    for lib in (torch, pygpu):
        with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
            lib.nn.functional.embedding(lib.tensor([1.0]), lib.ones(4, 2))
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            lib.nn.functional.embedding(lib.tensor([1]), lib.ones(4, 2), padding_idx=4)


def test_torch_embedding_spellings():
    w = R.standard_normal((5, 3))
    idx = [[1, 4], [0, 1]]
    ours = pygpu.embedding(pygpu.tensor(w), pygpu.tensor(idx))
    np.testing.assert_array_equal(to_numpy(ours),
                                  torch.embedding(torch.tensor(w), torch.tensor(idx)).numpy())
    pw, tw = pygpu.tensor(w * 4), torch.tensor(w * 4)
    pygpu.embedding_renorm_(pw, pygpu.tensor([1, 3]), 1.0, 2.0)
    torch.embedding_renorm_(tw, torch.tensor([1, 3]), 1.0, 2.0)
    np.testing.assert_allclose(to_numpy(pw), tw.numpy(), rtol=1e-12)


def test_the_backward_is_one_scatter_add_not_a_product(device):
    # the gradient of a 32k-row table costs the rows looked up, not rows x table
    from pygpu import profiler
    w = pygpu.zeros(32768, 8, device=device).requires_grad_()
    idx = pygpu.tensor(R.integers(0, 32768, 64), device=device)
    with profiler.profile() as prof:
        pygpu.nn.functional.embedding(idx, w).sum().backward()
    names = {r.key for r in prof.key_averages()}
    assert "matmul" not in names
    assert any("index" in n for n in names), names
