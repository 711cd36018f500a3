# test_torchrun.py - a program of the shape of PyTorch's torchrun tutorial (pytorch/examples,
# distributed/ddp-tutorial-series/multinode.py: set_device(LOCAL_RANK), init_process_group("nccl")
# with env://, a Trainer wrapping DDP(model, device_ids=[local_rank]), a DistributedSampler, a
# snapshot saved by rank 0 and resumed from) run under `python -m pygpu.distributed.run`, as
# torchrun runs it: on two emulated GPUs with the NCCL stand-in (tests/cuda_emu), and on two sim
# devices over MPI. Its weights must equal one process training on the global batch, and a second
# launch must resume from the snapshot. The tutorial itself is in the corpus (ex_ddp_multinode).
# Also: a rank that dies without an exception ends the job, with a non-zero exit, not a hang.
import json
import os
import sys

import numpy as np
import pytest

from _mpi import launch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu"))
import harness  # noqa: E402

TRAINER = """
import json, os
import numpy as np
import pygpu as torch
import pygpu.nn.functional as F
from pygpu.utils.data import Dataset, DataLoader
from pygpu.utils.data.distributed import DistributedSampler
from pygpu.nn.parallel import DistributedDataParallel as DDP
from pygpu.distributed import init_process_group, destroy_process_group

KIND = "{kind}"


class MyTrainDataset(Dataset):
    def __init__(self, size):
        rng = np.random.default_rng(0)
        self.data = [(torch.tensor(rng.standard_normal(20)), torch.tensor(rng.standard_normal(1)))
                     for _ in range(size)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


def ddp_setup():
    getattr(torch, KIND).set_device(int(os.environ["LOCAL_RANK"]))
    init_process_group(backend="nccl" if KIND == "cuda" else "mpi")


class Trainer:
    def __init__(self, model, train_data, optimizer, snapshot_path):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.model = model.to(self.local_rank)
        self.train_data, self.optimizer = train_data, optimizer
        self.epochs_run, self.snapshot_path = 0, snapshot_path
        if os.path.exists(snapshot_path):
            snapshot = torch.load(snapshot_path, map_location=f"{{KIND}}:{{self.local_rank}}")
            self.model.load_state_dict(snapshot["MODEL_STATE"])
            self.epochs_run = snapshot["EPOCHS_RUN"]
            print(f"Resuming training from snapshot at Epoch {{self.epochs_run}}")
        self.model = DDP(self.model, device_ids=[self.local_rank])

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            source, targets = source.to(self.local_rank), targets.to(self.local_rank)
            self.optimizer.zero_grad()
            F.mse_loss(self.model(source), targets).backward()
            self.optimizer.step()

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.global_rank == 0:
                torch.save({{"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch + 1}},
                           self.snapshot_path)


def main(total_epochs):
    ddp_setup()
    torch.manual_seed(0)
    model = torch.nn.Linear(20, 1).to(torch.float64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = DataLoader(MyTrainDataset(64), batch_size=8, shuffle=False,
                      sampler=DistributedSampler(MyTrainDataset(64), shuffle=False))
    trainer = Trainer(model, data, optimizer, "snapshot.pt")
    trainer.train(total_epochs)
    w = trainer.model.module.weight
    print("JSON " + json.dumps({{"rank": int(os.environ["RANK"]), "weight": w.cpu().tolist(),
                                "device": str(w.device), "env": {{k: os.environ[k] for k in
                                ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}}}}))
    destroy_process_group()


if __name__ == "__main__":
    import sys
    main(int(sys.argv[1]))
"""


def _reference(epochs):
    """One process, the global batch: the two ranks' 8 rows each are its 16."""
    import pygpu
    from pygpu.nn import functional as F
    pygpu.manual_seed(0)
    model = pygpu.nn.Linear(20, 1).to(pygpu.float64)
    opt = pygpu.optim.SGD(model.parameters(), lr=0.05)
    rng = np.random.default_rng(0)
    rows = [(rng.standard_normal(20), rng.standard_normal(1)) for _ in range(64)]
    # DistributedSampler without shuffling: rank r takes rows r, r + 2, ...; its k-th batch is
    # rows 16k + r, 16k + r + 2, ... so the global batch k is rows 16k .. 16k + 15
    for _ in range(epochs):
        for k in range(4):
            x = pygpu.tensor(np.stack([rows[16 * k + i][0] for i in range(16)]))
            y = pygpu.tensor(np.stack([rows[16 * k + i][1] for i in range(16)]))
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
    return model.weight.detach().numpy()


def _kind_env(kind):
    if kind == "sim":
        return {}
    if harness.skip_reason() is not None:
        pytest.skip(harness.skip_reason())
    plugin = harness.build("current")
    return {"PYGPU_CUDA_BACKEND_SO": plugin, "PYGPU_NCCL_LIBRARY": plugin}


@pytest.mark.parametrize("kind", ["cuda", "sim"])
def test_the_tutorials_shape_runs_under_the_launcher_and_resumes(tmp_path, kind):
    env = _kind_env(kind)
    script = TRAINER.format(kind=kind)
    first = launch(tmp_path, script, nproc=2, timeout=300, env=env, args=["1"])
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-3000:]
    assert (tmp_path / "snapshot.pt").exists()
    second = launch(tmp_path, script, nproc=2, timeout=300, env=env, args=["2"])
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-3000:]
    assert second.stdout.count("Resuming training from snapshot at Epoch 1") == 2
    rows = sorted((json.loads(l[5:]) for l in second.stdout.splitlines() if l.startswith("JSON ")),
                  key=lambda r: r["rank"])
    assert [r["device"] for r in rows] == [f"{kind}:0", f"{kind}:1"]
    assert [r["env"]["LOCAL_RANK"] for r in rows] == ["0", "1"]
    assert all(r["env"]["WORLD_SIZE"] == "2" and r["env"]["MASTER_PORT"] for r in rows)
    want = _reference(2)
    for r in rows:
        np.testing.assert_allclose(np.array(r["weight"]), want, rtol=1e-10, atol=1e-12)


def test_a_rank_that_dies_without_an_exception_ends_the_job(tmp_path):
    # rank 1 leaves at once with status 3; rank 0 waits in an all-reduce that can never
    # complete. Open MPI ends the job when a rank exits without MPI_Finalize; the launcher
    # returns non-zero (a hang would trip launch's timeout and fail the test)
    proc = launch(tmp_path, """
        import os, pygpu, pygpu.distributed as dist
        dist.init_process_group(init_method="env://")
        if dist.get_rank() == 1:
            os._exit(3)
        dist.all_reduce(pygpu.ones(4))
    """, timeout=90)
    assert proc.returncode != 0


def test_multiprocessing_spawn_runs_fn_in_each_rank(tmp_path):
    """PyTorch's multi-GPU tutorial starts its ranks with mp.spawn(main, args, nprocs) and
    init_process_group(rank=rank, world_size=world_size): the processes are an MPI job, so
    that call finds them; a process that raises makes spawn raise, naming its error."""
    import subprocess
    from _mpi import PKG_ROOT, require_mpi
    require_mpi()
    script = tmp_path / "spawned.py"
    script.write_text(
        "import os, sys\n"
        "import pygpu as torch\n"
        "import pygpu.multiprocessing as mp\n"
        "from pygpu.distributed import init_process_group, destroy_process_group, all_reduce\n"
        "def main(rank, world_size, scale):\n"
        "    init_process_group(backend='mpi', rank=rank, world_size=world_size)\n"
        "    if scale < 0 and rank == 1:\n"
        "        raise ValueError('rank one fails on purpose')\n"
        "    t = torch.full((2,), float(rank + 1) * scale)\n"
        "    all_reduce(t)\n"
        "    print(f'rank {rank}: {t.tolist()}', flush=True)\n"
        "    destroy_process_group()\n"
        "if __name__ == '__main__':\n"
        "    try:\n"
        "        mp.spawn(main, args=(2, float(sys.argv[1])), nprocs=2)\n"
        "        print('spawn returned')\n"
        "    except mp.ProcessRaisedException as e:\n"
        "        print('raised:', 'rank one fails on purpose' in str(e))\n")
    env = dict(os.environ, PYTHONPATH=PKG_ROOT, OMPI_MCA_rmaps_base_oversubscribe="1")
    for scale, want in (("10", ["rank 0: [30.0, 30.0]", "rank 1: [30.0, 30.0]", "spawn returned"]),
                        ("-1", ["raised: True"])):
        out = subprocess.run([sys.executable, str(script), scale], capture_output=True, text=True,
                             env=env, timeout=120, cwd=str(tmp_path))
        assert out.returncode == 0, out.stderr[-2000:]
        for line in want:
            assert line in out.stdout, out.stdout + out.stderr[-2000:]
