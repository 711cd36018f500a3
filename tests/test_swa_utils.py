# test_swa_utils.py - torch.optim.swa_utils against torch's: SWA's running mean and an EMA
# of a model's weights step by step, buffers averaged or copied, update_bn's statistics,
# SWALR's schedule, and an averaged model's state_dict crossing to torch.
import numpy as np
import pytest

import pygpu
from pygpu.optim import swa_utils

torch = pytest.importorskip("torch")
import torch.optim.swa_utils  # noqa: E402


def _pair():
    ours = pygpu.nn.Sequential(pygpu.nn.Linear(3, 4), pygpu.nn.BatchNorm1d(4),
                               pygpu.nn.Linear(4, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                              torch.nn.Linear(4, 2))
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return ours, ref


def _nudge(model, lib, seed):
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            p.add_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    model(lib.tensor(rng.standard_normal((5, 3)).astype(np.float32)))  # moves the BN stats


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_avg_fn", "swa_buffers"])
def test_averaged_model_equals_torch_step_by_step(kind, tmp_path):
    ours, ref = _pair()
    kw_o, kw_r = {}, {}
    if kind == "ema":
        kw_o["multi_avg_fn"] = swa_utils.get_ema_multi_avg_fn(0.9)
        kw_r["multi_avg_fn"] = torch.optim.swa_utils.get_ema_multi_avg_fn(0.9)
    elif kind == "ema_avg_fn":
        kw_o["avg_fn"] = swa_utils.get_ema_avg_fn(0.8)
        kw_r["avg_fn"] = torch.optim.swa_utils.get_ema_avg_fn(0.8)
    elif kind == "swa_buffers":
        kw_o["use_buffers"] = kw_r["use_buffers"] = True
    avg_o, avg_r = swa_utils.AveragedModel(ours, **kw_o), torch.optim.swa_utils.AveragedModel(
        ref, **kw_r)
    for step in range(4):
        _nudge(ours, pygpu, step)
        _nudge(ref, torch, step)
        avg_o.update_parameters(ours)
        avg_r.update_parameters(ref)
    so, sr = avg_o.state_dict(), avg_r.state_dict()
    assert list(so) == list(sr)
    for k in sr:
        np.testing.assert_allclose(so[k].numpy(), sr[k].numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=k)
    pygpu.save(so, tmp_path / "avg.pt")
    avg_r.load_state_dict(torch.load(tmp_path / "avg.pt"))


def test_update_bn_equals_torch():
    ours, ref = _pair()
    data = [np.random.default_rng(i).standard_normal((6, 3)).astype(np.float32)
            for i in range(3)]
    swa_utils.update_bn([(pygpu.tensor(d), 0) for d in data], ours)
    torch.optim.swa_utils.update_bn([(torch.tensor(d), 0) for d in data], ref)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(ours[1], name).numpy(),
                                   getattr(ref[1], name).numpy(), rtol=1e-5)
    assert ours[1].momentum == 0.1 and ours.training


@pytest.mark.parametrize("kw", [dict(anneal_epochs=3), dict(anneal_epochs=4,
                                                            anneal_strategy="linear"),
                                dict(anneal_epochs=0)])
def test_swalr_equals_torch(kw):
    po = pygpu.optim.SGD([pygpu.zeros(1).requires_grad_()], lr=0.5)
    pr = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
    so, sr = swa_utils.SWALR(po, swa_lr=0.05, **kw), torch.optim.swa_utils.SWALR(
        pr, swa_lr=0.05, **kw)
    for _ in range(8):
        po.step()
        pr.step()
        so.step()
        sr.step()
        assert so.get_last_lr() == pytest.approx(sr.get_last_lr(), rel=1e-12)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        swa_utils.SWALR(po, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="Invalid decay value"):
        swa_utils.get_ema_avg_fn(1.5)
