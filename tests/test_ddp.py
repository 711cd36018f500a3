# test_ddp.py - DistributedDataParallel under `mpirun -np 2` (through pygpu.distributed.run, with
# a timeout): equivalence with single-process training on the global batch, the ring formula for
# the gradient all-reduce, no_sync, buckets, and a clear error when ranks build different models.
import json

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.distributed import ring_bytes

from _mpi import launch

TRAIN = """
import json, os, sys, numpy as np, pygpu, pygpu.distributed as dist
from pygpu import nn
device = sys.argv[1]
dist.init_process_group(init_method="env://")
r, p = dist.get_rank(), dist.get_world_size()
pygpu.manual_seed(1 + r)   # different on purpose: DDP broadcasts rank 0's weights
model = nn.MLP([12, 16, 4]).to(pygpu.float64).to(device)
ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=float(sys.argv[2]))
opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
rng = np.random.default_rng(0)
loss_fn = nn.CrossEntropyLoss()
dist.reset_stats()
role0 = pygpu.stats().by_role.get("grad_reduce", {}).get("bytes", 0)
for step in range(3):
    x = rng.standard_normal((16, 12)); y = rng.integers(0, 4, 16)
    mine = slice(8 * r, 8 * r + 8)
    opt.zero_grad()
    loss = loss_fn(ddp(pygpu.tensor(x[mine], device=device)), pygpu.tensor(y[mine], device=device))
    loss.backward()
    opt.step()
after_sync = dist.stats()
pygpu.synchronize()
staged_role = pygpu.stats().by_role.get("grad_reduce", {}).get("bytes", 0) - role0
with ddp.no_sync():
    loss = loss_fn(ddp(pygpu.tensor(x[mine], device=device)), pygpu.tensor(y[mine], device=device))
    loss.backward()
print("JSON " + json.dumps({"rank": r, "params": [q.numpy().tolist() for q in model.parameters()],
                            "stats": after_sync, "after_no_sync": dist.stats(),
                            "buckets": ddp.bucket_sizes, "staged_role": staged_role}))
"""


def _reference():
    pygpu.manual_seed(1)
    model = nn.MLP([12, 16, 4]).to(pygpu.float64)
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(3):
        x = rng.standard_normal((16, 12))
        y = rng.integers(0, 4, 16)
        opt.zero_grad()
        loss_fn(model(pygpu.tensor(x)), pygpu.tensor(y)).backward()
        opt.step()
    return model


def _rows(proc):
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line[5:]) for line in proc.stdout.splitlines() if line.startswith("JSON ")]
    return sorted(rows, key=lambda r: r["rank"])


@pytest.mark.parametrize("where", ["cpu", "sim:0"])
def test_ddp_matches_single_process_training_on_the_global_batch(tmp_path, where):
    proc = launch(tmp_path, TRAIN, args=[where, "25"])
    rows = _rows(proc)
    ref = _reference()
    for row in rows:
        for got, want in zip(row["params"], ref.parameters()):
            np.testing.assert_allclose(np.array(got), want.numpy(), rtol=1e-10, atol=1e-12)
    # the gradient all-reduce moves exactly the ring's bytes for the parameter bytes, per rank
    nelem = sum(p.numel() for p in ref.parameters())
    for row in rows:
        st = row["stats"]
        # one bucket (25 MB cap), three steps; after the first, rank 0's order of arrival
        assert st["calls"] == {"all_reduce": 3, "broadcast_object_list": 1}
        reduced = st["by_call"]["all_reduce"]
        assert reduced["sent"] == reduced["recv"] == 3 * ring_bytes(8, nelem, 2)[row["rank"]]
        staged = 3 * nelem * 8 if where != "cpu" else 0
        assert st["d2h_bytes"] == st["h2d_bytes"] == staged
        assert row["staged_role"] == 2 * staged  # pygpu.stats().by_role: grad_reduce
        assert row["after_no_sync"] == st  # no_sync(): nothing reduced, nothing moved


def test_small_buckets_split_in_reverse_order(tmp_path):
    proc = launch(tmp_path, TRAIN, args=["cpu", "0.001"])  # ~1 KiB buckets
    rows = _rows(proc)
    ref = _reference()
    sizes = [p.nbytes for p in ref.parameters()]
    assert len(rows[0]["buckets"]) > 1
    assert sum(rows[0]["buckets"]) == sum(sizes)
    # the last layer's bias is in the first bucket (reverse order of registration)
    assert rows[0]["buckets"][0] >= sizes[-1]
    # one bucket in the first iteration (PyTorch's: rebuilt in arrival order after it)
    assert rows[0]["stats"]["calls"]["all_reduce"] == 1 + 2 * len(rows[0]["buckets"])
    for got, want in zip(rows[0]["params"], ref.parameters()):
        np.testing.assert_allclose(np.array(got), want.numpy(), rtol=1e-10, atol=1e-12)


def test_ranks_with_different_models_get_an_error_not_a_hang(tmp_path):
    proc = launch(tmp_path, """
        import pygpu, pygpu.distributed as dist
        from pygpu import nn
        dist.init_process_group()
        width = 16 if dist.get_rank() == 0 else 17
        nn.parallel.DistributedDataParallel(nn.MLP([4, width, 2]))
    """, timeout=60)
    assert proc.returncode != 0
    assert "layers.0.weight" in proc.stderr and "rank 1" in proc.stderr


def test_device_ids_follow_pytorch_convention():
    from pygpu.nn.parallel.distributed import _check_device_ids
    model = nn.MLP([4, 3]).to("sim:1")
    assert [str(d) for d in _check_device_ids(model, [1], 1)] == ["sim:1"]  # an index of sim devices
    assert [str(d) for d in _check_device_ids(model, ["sim:1"], None)] == ["sim:1"]
    assert _check_device_ids(model, None, None) is None
    with pytest.raises(ValueError, match=r"module.to\('sim:0'\)"):
        _check_device_ids(model, [0], None)
    with pytest.raises(ValueError, match="exactly one device"):
        _check_device_ids(model, [0, 1], None)
    with pytest.raises(ValueError, match="module is on the cpu"):
        _check_device_ids(nn.MLP([4, 3]), [0], None)


def test_bucket_reduces_on_the_device_with_no_host_staging():
    """DDP's buckets are packed on the device and handed to one asynchronous all_reduce (NCCL's
    for cuda tensors). A stand-in for it (averaging with a rank whose gradients are 5x ours gives
    3x ours) runs the communicator through the Reducer on sim tensors: no byte crosses to the
    host, and the result is in .grad when backward returns."""
    from pygpu.distributed import ReduceOp
    from pygpu.distributed._work import completed
    from pygpu.nn.parallel.comm import ProcessGroupComm
    from pygpu.nn.parallel.reducer import Reducer

    class Group:
        def rank(self):
            return 0

        def size(self):
            return 2

    calls = []

    def fake_all_reduce(t, op, group=None, async_op=False):
        assert t.device.type == "sim" and t.is_contiguous() and op == ReduceOp.AVG and async_op
        calls.append(t.numel())
        t.copy_(t * 3.0)
        return completed("all_reduce", [t])

    def grads(reduced):
        pygpu.manual_seed(0)
        model = nn.MLP([6, 8, 3]).to(pygpu.float64).to("sim:0")
        params = list(model.parameters())
        reducer = Reducer(params, ProcessGroupComm(Group(), all_reduce=fake_all_reduce), 25 * 2**20,
                          ddp=True) if reduced else None
        x = pygpu.randn(5, 6, dtype=pygpu.float64, device="sim:0")
        y = pygpu.tensor(np.arange(5) % 3, device="sim:0")
        with pygpu.track() as t:
            nn.CrossEntropyLoss()(model(x), y).backward()
            pygpu.synchronize()
        if reducer is not None:
            reducer.close()
        return [p.grad.numpy() for p in model.parameters()], t

    ref, _ = grads(False)
    got, t = grads(True)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, 3 * b, rtol=1e-12)
    assert calls == [sum(a.size for a in ref)]  # one bucket, all of it, on the device
    assert t.h2d_bytes == 0 and t.d2h_bytes == 0


def test_a_temporary_wrapper_still_averages_the_gradients(tmp_path):
    # `loss_fn(DDP(model)(x), y).backward()`: the graph holds the wrapper, and so its Reducer,
    # until backward has returned (closing it with the wrapper skipped the all-reduce, silently)
    proc = launch(tmp_path, """
        import json, numpy as np, pygpu, pygpu.distributed as dist
        from pygpu import nn
        dist.init_process_group(init_method="env://")
        r = dist.get_rank()
        pygpu.manual_seed(1 + r)
        model = nn.MLP([12, 16, 4]).to(pygpu.float64)
        rng = np.random.default_rng(0)
        x = rng.standard_normal((16, 12)); y = rng.integers(0, 4, 16)
        mine = slice(8 * r, 8 * r + 8)
        nn.CrossEntropyLoss()(nn.parallel.DistributedDataParallel(model)(
            pygpu.tensor(x[mine])), pygpu.tensor(y[mine])).backward()
        print("JSON " + json.dumps({"rank": r, "params": [q.grad.numpy().tolist()
                                                          for q in model.parameters()]}))
    """)
    rows = _rows(proc)
    pygpu.manual_seed(1)
    ref = nn.MLP([12, 16, 4]).to(pygpu.float64)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 12)), rng.integers(0, 4, 16)
    nn.CrossEntropyLoss()(ref(pygpu.tensor(x)), pygpu.tensor(y)).backward()
    for row in rows:
        for got, want in zip(row["params"], ref.parameters()):
            np.testing.assert_allclose(np.array(got), want.grad.numpy(), rtol=1e-10, atol=1e-12)
