# test_multiprocessing.py - pygpu tensors across processes (issue 43, item 5), as PyTorch's:
# torch.multiprocessing's Queue/Process with shared-memory cpu tensors passed by file
# descriptor (fork, spawn, forkserver), spawn()/start_processes with the child's failure
# raised in the parent, DataLoader(num_workers > 0) with real worker processes (order,
# get_worker_info, worker_init_fn, seeds, persistent_workers, prefetch_factor, an
# IterableDataset's shares, a worker's exception with its traceback, timeout, a dead
# worker), Hogwild training (examples/mnist_hogwild.py), and a child forked while sim
# works. The functions the children run are at module level: 'spawn' imports this file.
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import pygpu
import pygpu.multiprocessing as mp
from pygpu.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

from _mpi import PKG_ROOT

torch = pytest.importorskip("torch")

METHODS = ["fork", "spawn", "forkserver"]


def _exchange(inq, outq, shared, done):
    shared.add_(1)  # a tensor given to the Process: shared when it was pickled (spawn)
    x = inq.get()
    x.mul_(10)  # a tensor received on a queue: the sender's memory
    outq.put((pygpu.arange(6.0).reshape(2, 3).t(), pygpu.nn.Parameter(pygpu.ones(2))))
    done.wait()  # the sender stays until the receiver has the tensors (as PyTorch's)


@pytest.mark.parametrize("method", METHODS)
def test_queue_and_process_share_cpu_tensors(method):
    ctx = mp.get_context(method)
    shared, x = pygpu.zeros(3), pygpu.ones(2)
    inq, outq, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_exchange, args=(inq, outq, shared, done))
    p.start()
    inq.put(x)
    y, param = outq.get(timeout=120)
    done.set()
    p.join(60)
    assert p.exitcode == 0
    assert x.tolist() == [10.0, 10.0] and x.is_shared()
    # fork copies the parent's memory: an unshared tensor is the child's own copy there
    assert shared.tolist() == ([0.0] * 3 if method == "fork" else [1.0] * 3)
    assert y.stride() == (1, 3) and y.tolist() == [[0, 3], [1, 4], [2, 5]] and y.is_shared()
    assert isinstance(param, pygpu.nn.Parameter) and param.requires_grad


def test_a_non_leaf_that_requires_grad_is_refused_as_torch_refuses_it():
    for m, mpm in ((pygpu, mp), (torch, torch.multiprocessing)):
        q = mpm.get_context("fork").SimpleQueue()
        y = m.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor "
                                               "which requires_grad"):
            q.put(y)
        q.put(y.detach())
        assert q.get().tolist() == [2.0, 2.0]


def test_device_tensors_travel_by_value():
    q = mp.get_context("fork").SimpleQueue()
    s = pygpu.arange(4.0, device="sim")
    q.put(s)
    got = q.get()
    assert got.device == s.device and got.tolist() == s.tolist()
    got += 1
    assert s.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    assert mp.Pool is not None and mp.Queue is not None and mp.cpu_count() >= 1


def _write_rank(i, t):
    t[i] = i + 100


def _fail_on_one(i):
    if i == 1:
        raise ValueError("boom in child 1")


def _exit_with_three(i):
    os._exit(3)


def test_spawn_runs_fn_per_rank_and_raises_the_childs_failure():
    t = pygpu.zeros(4).share_memory_()
    assert mp.spawn(_write_rank, args=(t,), nprocs=3) is None
    assert t.tolist() == [100.0, 101.0, 102.0, 0.0]
    with pytest.raises(mp.ProcessRaisedException) as err:
        mp.start_processes(_fail_on_one, nprocs=2, start_method="fork")
    assert err.value.error_index == 1
    assert "-- Process 1 terminated with the following error:" in str(err.value)
    assert "ValueError: boom in child 1" in str(err.value)
    context = mp.start_processes(_exit_with_three, nprocs=1, join=False, start_method="fork")
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        while not context.join():
            pass


class Squares(Dataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        info = get_worker_info()
        return (pygpu.tensor([float(i)]), i * i, info.id if info else -1, os.getpid(),
                float(np.random.random_sample()), float(pygpu.rand(1).item()))


class Failing(Squares):
    def __getitem__(self, i):
        if i == 7:
            raise KeyError("sample 7 is missing")
        return super().__getitem__(i)


class FailingNumbers(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 7:
            raise KeyError("sample 7 is missing")
        return i


class Slow(Squares):
    def __getitem__(self, i):
        time.sleep(5)
        return super().__getitem__(i)


class Dies(Squares):
    def __getitem__(self, i):
        os._exit(1)


class Shards(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        start, step = (info.id, info.num_workers) if info else (0, 1)
        return iter(range(start, 20, step))


def _note_worker(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2 and isinstance(info.dataset, Squares)
    np.random.seed(1000 + worker_id)


@pytest.mark.parametrize("context", [None, "spawn"])
def test_dataloader_workers_are_processes_that_keep_the_order(context):
    assert get_worker_info() is None
    loader = DataLoader(Squares(), batch_size=4, num_workers=2, worker_init_fn=_note_worker,
                        multiprocessing_context=context, prefetch_factor=3)
    batches = list(loader)
    xs = [int(v) for b in batches for v in b[0].flatten().tolist()]
    assert len(batches) == len(loader) == 6 and xs == list(range(23))
    assert batches[0][1].tolist() == [0, 1, 4, 9]
    workers = {int(w) for b in batches for w in b[2].tolist()}
    pids = {int(p) for b in batches for p in b[3].tolist()}
    assert workers == {0, 1} and len(pids) == 2 and os.getpid() not in pids
    assert batches[0][0].is_shared()  # handed over in shared memory
    numpy_draws = [v for b in batches for v in b[4].tolist()]
    assert len(set(numpy_draws)) == len(numpy_draws)  # each worker seeded its own


def test_worker_seeds_follow_the_loaders_generator():
    def draws(seed):
        loader = DataLoader(Squares(), batch_size=23, num_workers=2,
                            generator=pygpu.Generator().manual_seed(seed))
        return next(iter(loader))[5].tolist()
    assert draws(1) == draws(1) and draws(1) != draws(2)


def test_persistent_workers_stay_across_epochs_and_an_unfinished_epoch():
    loader = DataLoader(Squares(), batch_size=5, shuffle=True, num_workers=2,
                        persistent_workers=True, generator=pygpu.Generator().manual_seed(0))
    first = [int(v) for b in loader for v in b[0].flatten().tolist()]
    pids = [w.pid for w in loader._worker_pool.workers]
    it = iter(loader)
    next(it)
    del it  # an epoch left unfinished: its batches in flight are dropped
    second = [int(v) for b in loader for v in b[0].flatten().tolist()]
    assert sorted(first) == sorted(second) == list(range(23)) and first != second
    assert [w.pid for w in loader._worker_pool.workers] == pids
    loader._worker_pool.shutdown()


def test_an_iterable_dataset_gives_each_worker_its_share():
    got = [int(v) for b in DataLoader(Shards(), batch_size=3, num_workers=3) for v in b.tolist()]
    assert sorted(got) == list(range(20))
    assert sorted(int(v) for b in DataLoader(Shards(), batch_size=3) for v in b.tolist()) == \
        list(range(20))


def test_a_workers_exception_is_raised_here_with_its_traceback():
    with pytest.raises(KeyError) as err:
        list(DataLoader(Failing(), batch_size=4, num_workers=2))
    text = str(err.value)
    assert "Caught KeyError in DataLoader worker process" in text
    assert "sample 7 is missing" in text and "Traceback (most recent call last)" in text
    for m in (pygpu, torch):  # PyTorch's words
        with pytest.raises(KeyError) as err:
            list(m.utils.data.DataLoader(FailingNumbers(), batch_size=4, num_workers=2))
        assert str(err.value).startswith("Caught KeyError in DataLoader worker process 1.\n"
                                         "Original Traceback (most recent call last):")


def test_timeout_and_a_dead_worker_are_runtime_errors():
    with pytest.raises(RuntimeError, match="DataLoader timed out after 1 seconds"):
        list(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=1))
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly"):
        list(DataLoader(Dies(), batch_size=2, num_workers=1))


def _run_example(*args, timeout=600):
    env = dict(os.environ, PYTHONPATH=PKG_ROOT, PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, os.path.join(PKG_ROOT, "examples", "mnist_hogwild.py"),
                           *args], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=PKG_ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_hogwild_training_trains_the_shared_model(method):
    out = _run_example("--epochs", "1", "--start-method", method)
    assert "exit codes: [0, 0]" in out
    moved = float(out.split("shared weights moved by: ")[1].split()[0])
    assert moved > 1.0  # the children's updates reached the parent's memory
    accuracy = int(out.split("Accuracy: ")[1].split("/")[0])
    assert accuracy > 300  # of 512, ten classes: it learned (torch's run: about 470)


def test_hogwild_with_dataloader_workers_inside_the_processes():
    out = _run_example("--epochs", "1", "--num-processes", "2", "--num-workers", "1",
                       "--train-size", "256")
    assert "exit codes: [0, 0]" in out


def _child_after_sim_work(q, s):
    x = pygpu.randn(300, 300)
    q.put(("cpu", float((x @ x).sum().item())))
    y = pygpu.randn(50, 50, device="sim")
    q.put(("sim", float((y @ y).sum().item())))
    q.put(("queued before the fork", float(s.sum().item())))


def test_a_child_forked_while_sim_works_runs_cpu_and_sim():
    s = pygpu.randn(200, 200, device="sim")
    for _ in range(20):
        s = (s @ s).tanh()  # queued on sim's stream, running when the process forks
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_after_sim_work, args=(q, s))
    p.start()
    got = dict(q.get(timeout=120) for _ in range(3))
    p.join(60)
    assert p.exitcode == 0
    assert np.isfinite(got["cpu"]) and np.isfinite(got["sim"])
    assert got["queued before the fork"] == pytest.approx(float(s.sum().item()), rel=1e-5)
