# test_distributed.py - pygpu.distributed: collectives over MPI, counted; the launcher;
# DistributedSampler. Multi-process tests run `python -m pygpu.distributed.run` with a
# timeout; results are printed as JSON lines by each rank and checked here.
import json
import os

import numpy as np
import pytest

import pygpu
from pygpu.distributed import ring_bytes, ring_chunks
from pygpu.data import DistributedSampler
from pygpu.distributed.run import canonical_argv, mpirun_command

from _mpi import launch


def rank_lines(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line[5:]) for line in proc.stdout.splitlines() if line.startswith("JSON ")]
    return sorted(rows, key=lambda r: r["rank"])


@pytest.mark.parametrize("n,p", [(10, 2), (10, 3), (7, 4), (3, 5), (1000, 2)])
def test_ring_chunks_cover_everything_once(n, p):
    bounds = ring_chunks(n, p)
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    assert max(b - a for a, b in bounds) - min(b - a for a, b in bounds) <= 1


def test_ring_bytes_is_the_ring_formula():
    # even split: each rank sends 2 (p-1)/p of the buffer
    for p in (2, 4, 8):
        n = 1024 * p
        assert ring_bytes(4, n, p) == [2 * (p - 1) * (n // p) * 4] * p
    assert ring_bytes(4, 100, 1) == [0]


def test_long_lines_of_many_ranks_arrive_whole(tmp_path):
    """The first H200 run (16 cores) saw two ranks' JSON lines interleaved past about 2 KB:
    each rank's stdout goes to a file of its own (tests/_mpi.py), read back in rank order."""
    proc = launch(tmp_path, """
        import json, os
        r = int(os.environ["RANK"])
        for k in range(3):
            print("JSON " + json.dumps({"rank": r, "k": k, "pad": [r * 1000 + i for i in range(6000)]}))
    """, nproc=4)
    rows = rank_lines(proc)
    assert [(row["rank"], row["k"]) for row in rows] == [(r, k) for r in range(4) for k in range(3)]
    assert all(row["pad"] == [row["rank"] * 1000 + i for i in range(6000)] for row in rows)


def test_sim_collectives_show_in_the_role_counters(tmp_path):
    proc = launch(tmp_path, """
        import json, numpy as np, pygpu, pygpu.distributed as dist
        dist.init_process_group()
        t = pygpu.ones(256, device="sim:0")
        with pygpu.track() as tr:
            dist.all_reduce(t)
        print("JSON " + json.dumps({"rank": dist.get_rank(), "roles": tr.by_role,
                                    "h2d": tr.h2d_bytes, "d2h": tr.d2h_bytes}))
    """)
    for row in rank_lines(proc):
        assert row["h2d"] == row["d2h"] == 1024
        assert row["roles"]["collective"]["bytes"] == 2048


def test_launcher_sets_torchrun_variables(tmp_path):
    proc = launch(tmp_path, """
        import json, os
        print("JSON " + json.dumps({k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
                                   | {"rank": int(os.environ["RANK"])}))
    """)
    rows = rank_lines(proc)
    assert [(r["RANK"], r["LOCAL_RANK"], r["WORLD_SIZE"]) for r in rows] == [("0", "0", "2"), ("1", "1", "2")]


def test_a_rank_that_raises_ends_the_job_naming_it(tmp_path):
    # a job that hung instead of ending would pass launch's timeout: subprocess raises
    # TimeoutExpired and the test fails (no wall-clock assertion of its own)
    proc = launch(tmp_path, """
        import pygpu, pygpu.distributed as dist
        dist.init_process_group()
        if dist.get_rank() == 1:
            raise ValueError("rank one fails on purpose")
        t = pygpu.ones(4)
        dist.all_reduce(t)   # rank 0 would wait here forever for rank 1
        dist.barrier()
    """, timeout=60)
    assert proc.returncode != 0
    assert "rank 1 of 2" in proc.stderr and "rank one fails on purpose" in proc.stderr


def test_init_twice_and_uninitialized_are_clear_errors():
    import pygpu.distributed as dist
    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    with pytest.raises(dist.DistributedError, match="init_process_group"):
        dist.get_rank()
    with pytest.raises(ValueError, match="backend"):
        dist.init_process_group(backend="gloo")
    with pytest.raises(ValueError, match="init_method"):
        dist.init_process_group(init_method="tcp://127.0.0.1:1234")


def test_backend_none_chooses_by_the_device_type_reduced():
    from pygpu.distributed import choose_backend, check_distinct_devices, DistributedError
    assert choose_backend(None, False) == "mpi"
    assert choose_backend(None, True) == "cpu:mpi,sim:mpi,cuda:nccl"  # cpu/sim stay on MPI
    assert choose_backend("nccl", True) == "nccl" and choose_backend("mpi", True) == "mpi"
    with pytest.raises(ValueError, match="None to choose"):
        choose_backend("gloo", True)
    check_distinct_devices([("a", 0), ("a", 1), ("b", 0)])
    with pytest.raises(DistributedError, match=r"ranks 0 and 2 both use cuda:1 on a.*set_device\(local_rank\)"):
        check_distinct_devices([("a", 1), ("b", 1), ("a", 1)])


def test_a_gpu_host_keeps_cpu_and_sim_on_mpi_and_nccl_ranks_need_set_device(tmp_path):
    # a GPU host, faked: cuda "is available"; sim tensors must still go over MPI (no NCCL made),
    # and NCCL refuses two local ranks that never called set_device (both on cuda:0)
    proc = launch(tmp_path, """
        import json, pygpu, pygpu.distributed as dist
        pygpu.cuda.is_built = pygpu.cuda.is_available = lambda: True
        g = dist.init_process_group()
        t = pygpu.ones(8, device="sim:0")
        dist.all_reduce(t)
        pygpu.cuda.current_device = lambda: 0   # neither rank called set_device(local_rank)
        try:
            dist._nccl_for(g)
            err = None
        except dist.DistributedError as e:
            err = str(e)
        print("JSON " + json.dumps({"rank": dist.get_rank(), "backend": dist.get_backend(),
                                    "sum": t.tolist()[0], "nccl": g.nccl is not None, "err": err}))
    """)
    for row in rank_lines(proc):
        assert row["backend"] == "cpu:mpi,sim:mpi,cuda:nccl" and row["sum"] == 2.0
        assert not row["nccl"]
        assert "ranks 0 and 1 both use cuda:0" in row["err"] and "set_device(local_rank)" in row["err"]


def test_launcher_command_has_what_open_mpi_needs_here():
    cmd = mpirun_command(2, ["train.py", "--lr", "0.1"], mpirun="mpirun")
    assert cmd[:3] == ["mpirun", "-np", "2"]
    assert "--oversubscribe" in cmd
    if os.geteuid() == 0:
        assert "--allow-run-as-root" in cmd
    assert cmd[-5:] == ["-m", "pygpu.distributed.bootstrap", "train.py", "--lr", "0.1"][-5:]
    two = mpirun_command(2, ["t.py"], hostfile="hosts", nnodes=2, mpirun="mpirun")
    assert two[:3] == ["mpirun", "-np", "4"] and "--hostfile" in two


def test_launch_passes_local_rank_and_use_env_turns_it_off(tmp_path):
    import subprocess, sys
    from _mpi import PKG_ROOT, require_mpi
    require_mpi()
    script = tmp_path / "job.py"
    script.write_text("import argparse, json, os\n"
                      "p = argparse.ArgumentParser(); p.add_argument('--local_rank', type=int, default=-1)\n"
                      "p.add_argument('--lr', type=float); a = p.parse_args()\n"
                      "print('JSON ' + json.dumps({'rank': int(os.environ['RANK']), 'arg': a.local_rank,\n"
                      "      'env': os.environ['LOCAL_RANK'], 'lr': a.lr}))\n")
    env = dict(os.environ, PYTHONPATH=PKG_ROOT, OMPI_MCA_rmaps_base_oversubscribe="1")
    rows = {}
    for flag in ([], ["--use-env"]):
        proc = subprocess.run([sys.executable, "-m", "pygpu.distributed.launch", "--nproc-per-node=2",
                               *flag, str(script), "--lr", "0.5"], capture_output=True, text=True,
                              env=env, timeout=120, cwd=str(tmp_path))
        rows[bool(flag)] = rank_lines(proc)
    assert [(r["arg"], r["env"], r["lr"]) for r in rows[False]] == [(0, "0", 0.5), (1, "1", 0.5)]
    assert [(r["arg"], r["env"]) for r in rows[True]] == [(-1, "0"), (-1, "1")]


def test_each_launcher_flag_has_one_spelling_and_aliases_still_work(capsys):
    from pygpu.distributed import launch, run
    for mod in (run, launch):
        with pytest.raises(SystemExit):
            mod.main(["--help"])
        text = capsys.readouterr().out
        assert "--nproc_per_node" in text and "--nproc-per-node" not in text
        assert "--use_env" not in text
    # an abbreviation names one flag; the alias is rewritten only before the script
    assert canonical_argv(["--nproc-per-node", "2", "t.py", "--nproc-per-node", "x"]) == \
        ["--nproc_per_node", "2", "t.py", "--nproc-per-node", "x"]
    assert canonical_argv(["--use_env", "--nnodes", "1", "t.py"]) == ["--use-env", "--nnodes", "1", "t.py"]
    for argv in (["--nproc", "3"], ["--nproc-per-node", "3"], ["--nproc_per_node=3"]):
        assert run.main(argv + ["--dry-run", "t.py", "--x"]) == 0
        cmd = capsys.readouterr().out.split()
        assert cmd[cmd.index("-np") + 1] == "3" and cmd[-2:] == ["t.py", "--x"]
    assert launch.main(["--nproc", "2", "--dry-run", "t.py"]) == 0
    assert "--local-rank-arg t.py" in capsys.readouterr().out
    assert launch.main(["--nproc", "2", "--use_env", "--dry-run", "t.py"]) == 0
    assert "--local-rank-arg" not in capsys.readouterr().out


def test_distributed_sampler_is_reachable_where_pytorch_users_look():
    import pygpu.data
    import pygpu.data.distributed
    import pygpu.distributed.sampler
    assert (pygpu.data.DistributedSampler is pygpu.data.distributed.DistributedSampler
            is pygpu.distributed.sampler.DistributedSampler)


# -- DistributedSampler -----------------------------------------------------------------------
@pytest.mark.parametrize("n,p,drop_last", [(10, 2, False), (10, 3, False), (10, 3, True), (7, 4, False)])
def test_sampler_partitions_the_data(n, p, drop_last):
    shares = [list(DistributedSampler(n, num_replicas=p, rank=r, seed=3, drop_last=drop_last))
              for r in range(p)]
    assert len({len(s) for s in shares}) == 1
    flat = [i for s in shares for i in s]
    if drop_last:
        assert len(flat) == (n // p) * p and len(set(flat)) == len(flat)
    else:
        assert set(flat) == set(range(n)) and len(flat) == -(-n // p) * p


def test_sampler_epochs_reshuffle_identically_on_every_rank():
    a = DistributedSampler(100, num_replicas=2, rank=0, seed=1)
    b = DistributedSampler(100, num_replicas=2, rank=1, seed=1)
    first = list(a) + list(b)
    a.set_epoch(1)
    b.set_epoch(1)
    second = list(a) + list(b)
    assert sorted(first) == sorted(second) == list(range(100))
    assert first != second
    assert list(DistributedSampler(10, 2, 0, shuffle=False)) == [0, 2, 4, 6, 8]


def test_sampler_needs_a_group_or_explicit_rank():
    with pytest.raises((RuntimeError, ValueError)):
        DistributedSampler(10, num_replicas=2, rank=2)


# -- NCCL (cuda tensors): loading is tested everywhere the plugin is built; the collectives
#    themselves run where GPUs exist. CI installs nvidia-nccl-cu13 and sets PYGPU_REQUIRE_NCCL=1.
def _nccl_or_skip():
    from pygpu.distributed import _nccl
    try:
        return _nccl, _nccl.version()
    except _nccl.NcclUnavailable as e:
        if os.environ.get("PYGPU_REQUIRE_NCCL") == "1":
            raise
        pytest.skip(f"NCCL unavailable: {e}")


def test_nccl_loads_through_the_cuda_plugin():
    _nccl, version = _nccl_or_skip()
    assert version >= 21000, version  # NCCL 2.10 or newer (major*10000 + minor*100 + patch)


def test_nccl_unique_id_needs_no_gpu():
    _nccl, _ = _nccl_or_skip()
    uid = pygpu._C._cuda_nccl_unique_id()
    assert len(uid) == 128 and uid != bytes(128)


def test_nccl_load_failure_names_the_library(tmp_path):
    if not pygpu.cuda.is_built():
        pytest.skip("the CUDA plugin is not built")
    bogus = tmp_path / "libnccl.so.2"
    bogus.write_bytes(b"not a library")
    # a fresh process: the plugin keeps the first NCCL it loaded
    import subprocess, sys
    code = ("import pygpu; pygpu.cuda._load(True)\n"
            f"try: pygpu._C._cuda_nccl_load({str(bogus)!r}); print(0, '')\n"
            "except pygpu.DeviceUnavailableError as e: print(-1, e)")
    from _mpi import PKG_ROOT
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=PKG_ROOT), cwd=PKG_ROOT)
    assert out.returncode == 0, out.stderr
    rc, msg = out.stdout.split(" ", 1)
    assert rc == "-1" and "NCCL could not be loaded" in msg and "nvidia-nccl-cu13" in msg


@pytest.mark.skipif(not pygpu.cuda.is_available() or pygpu.cuda.device_count() < 2,
                    reason="NCCL collectives need two GPUs")
def test_nccl_all_reduce_on_two_gpus(tmp_path):
    proc = launch(tmp_path, """
        import json, os, numpy as np, pygpu, pygpu.distributed as dist
        pygpu.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group(backend="nccl", init_method="env://")
        r = dist.get_rank()
        t = pygpu.tensor(np.arange(1000, dtype=np.float32) * (r + 1), device=f"cuda:{r}")
        dist.all_reduce(t)
        print("JSON " + json.dumps({"rank": r, "first": t[:3].tolist()}))
    """)
    for row in rank_lines(proc):
        assert row["first"] == [0.0, 3.0, 6.0]
