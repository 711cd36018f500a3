# test_sync_batchnorm.py - nn.SyncBatchNorm and convert_sync_batchnorm: on 2 and 4 ranks with
# batches of different sizes per rank, the forward output, the input gradient, the weight and
# bias gradients (summed over ranks) and the running statistics equal PyTorch's BatchNorm2d on
# the whole batch in one process; a model converted with convert_sync_batchnorm and trained
# under DistributedDataParallel ends with the weights of one process training on the global batch.
import json

import numpy as np
import pytest

from _mpi import launch
from test_collectives import rank_rows

SIZES = {2: [3, 5], 4: [2, 3, 1, 4]}

SCRIPT = """
import json, numpy as np, pygpu, pygpu.distributed as dist
from pygpu import nn
dist.init_process_group(init_method="env://")
r, p = dist.get_rank(), dist.get_world_size()
sizes = SIZES
out = {"rank": r}
for dev in ("cpu", "sim:0"):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((n, 3, 4, 2)) for n in sizes]
    ws = [rng.standard_normal((n, 3, 4, 2)) for n in sizes]
    bn = nn.SyncBatchNorm(3, momentum=0.3).double().to(dev)
    with pygpu.no_grad():
        bn.weight.copy_(pygpu.tensor([0.5, 1.5, -1.0], device=dev))
        bn.bias.copy_(pygpu.tensor([0.1, -0.2, 0.3], device=dev))
    x = pygpu.tensor(xs[r], device=dev, requires_grad=True)
    y = bn(x)
    (y * pygpu.tensor(ws[r], device=dev)).sum().backward()
    out[dev] = {"y": y.cpu().tolist(), "dx": x.grad.cpu().tolist(), "dw": bn.weight.grad.cpu().tolist(),
                "db": bn.bias.grad.cpu().tolist(), "rm": bn.running_mean.cpu().tolist(),
                "rv": bn.running_var.cpu().tolist(), "nbt": int(bn.num_batches_tracked.item())}

# convert_sync_batchnorm under DDP, equal batches of 4: three SGD steps
pygpu.manual_seed(0)
model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(),
                      nn.Linear(3 * 5 * 5, 2)).double()
model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
out["converted"] = type(model[1]).__name__
ddp = nn.parallel.DistributedDataParallel(model)
opt = pygpu.optim.SGD(model.parameters(), lr=0.1)
rng = np.random.default_rng(1)
for step in range(3):
    X = rng.standard_normal((4 * p, 2, 5, 5)); Y = rng.standard_normal((4 * p, 2))
    mine = slice(4 * r, 4 * r + 4)
    opt.zero_grad()
    ((ddp(pygpu.tensor(X[mine])) - pygpu.tensor(Y[mine])) ** 2).mean().backward()
    opt.step()
out["ddp"] = {n: q.tolist() for n, q in model.state_dict().items()}
print("JSON " + json.dumps(out))
"""


def _full_batch(nproc):
    import torch
    sizes = SIZES[nproc]
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((n, 3, 4, 2)) for n in sizes]
    ws = [rng.standard_normal((n, 3, 4, 2)) for n in sizes]
    bn = torch.nn.BatchNorm2d(3, momentum=0.3).double()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([0.5, 1.5, -1.0]))
        bn.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    x = torch.tensor(np.concatenate(xs), requires_grad=True)
    y = bn(x)
    (y * torch.tensor(np.concatenate(ws))).sum().backward()
    cut = np.cumsum([0] + sizes)
    return ([(y[a:b].detach().numpy(), x.grad[a:b].numpy()) for a, b in zip(cut, cut[1:])],
            bn.weight.grad.numpy(), bn.bias.grad.numpy(), bn.running_mean.numpy(),
            bn.running_var.numpy())


def _ddp_reference(nproc):
    import torch
    torch.manual_seed(0)
    import pygpu
    from pygpu import nn
    pygpu.manual_seed(0)  # the ranks' initial weights (rank 0's, broadcast), rebuilt here
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(),
                          nn.Linear(3 * 5 * 5, 2)).double()
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(1)
    for _ in range(3):
        X, Y = rng.standard_normal((4 * nproc, 2, 5, 5)), rng.standard_normal((4 * nproc, 2))
        opt.zero_grad()
        ((model(pygpu.tensor(X)) - pygpu.tensor(Y)) ** 2).mean().backward()
        opt.step()
    return {n: q.numpy() for n, q in model.state_dict().items()}


@pytest.mark.parametrize("nproc", [2, 4])
def test_sync_batchnorm_is_one_process_batchnorm_over_the_global_batch(tmp_path, nproc):
    rows = rank_rows(launch(tmp_path, SCRIPT.replace("SIZES", repr(SIZES[nproc])), nproc=nproc,
                            timeout=300))
    slices, dw, db, rm, rv = _full_batch(nproc)
    for dev in ("cpu", "sim:0"):
        for row in rows:
            got = row[dev]
            y, dx = slices[row["rank"]]
            np.testing.assert_allclose(np.array(got["y"]), y, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(np.array(got["dx"]), dx, rtol=1e-9, atol=1e-11)
            np.testing.assert_allclose(got["rm"], rm, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(got["rv"], rv, rtol=1e-10, atol=1e-12)
            assert got["nbt"] == 1
        # weight and bias gradients stay each rank's own sums (DDP averages them): they add up
        np.testing.assert_allclose(sum(np.array(row[dev]["dw"]) for row in rows), dw, rtol=1e-9)
        np.testing.assert_allclose(sum(np.array(row[dev]["db"]) for row in rows), db, rtol=1e-9)
    ref = _ddp_reference(nproc)
    for row in rows:
        assert row["converted"] == "SyncBatchNorm"
        for name, want in ref.items():
            np.testing.assert_allclose(np.array(row["ddp"][name]), want, rtol=1e-9, atol=1e-11,
                                       err_msg=name)


def test_sync_batchnorm_alone_or_in_eval_is_batchnorm():
    import pygpu
    from pygpu import nn
    x = pygpu.tensor(np.random.default_rng(0).standard_normal((4, 3, 2)))
    sbn, bn = nn.SyncBatchNorm(3), nn.BatchNorm1d(3)
    np.testing.assert_allclose(sbn(x).detach().numpy(), bn(x).detach().numpy())  # no process group
    sbn.eval(), bn.eval()
    np.testing.assert_allclose(sbn(x).detach().numpy(), bn(x).detach().numpy())
    with pytest.raises(ValueError, match="expected at least 2D input"):
        sbn(pygpu.ones(3))
    conv = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 3)))
    assert isinstance(conv[0], nn.SyncBatchNorm) and isinstance(conv[1], nn.Linear)
