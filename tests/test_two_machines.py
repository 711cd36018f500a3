# test_two_machines.py - DDP across two "machines": two network namespaces on this host joined by
# a veth pair, each with its own address. Started two ways: mpirun started in the first one
# reaching the second over TCP (a launch agent stands in for ssh), and torchrun's way, a launcher
# on each machine with its --node_rank, meeting at --master_addr (no ssh at all). Each "machine" also gets its own hostname (a UTS
# namespace): Open MPI takes two processes with one hostname to share a node. Needs root,
# `ip netns` and `unshare`; skipped where not allowed.
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

import pygpu

from _mpi import PKG_ROOT, require_mpi

SUBNET = "10.77.{}.0/24"


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


@pytest.fixture
def two_hosts(tmp_path):
    require_mpi()
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        pytest.skip("needs root, iproute2 and unshare to make network namespaces")
    tag = uuid.uuid4().hex[:6]
    a, b = f"pgA{tag}", f"pgB{tag}"
    net = int(tag[:2], 16) % 200 + 20
    addr = {a: f"10.77.{net}.1", b: f"10.77.{net}.2"}
    try:
        _ip("netns", "add", a)
    except subprocess.CalledProcessError as e:
        pytest.skip(f"network namespaces not permitted here: {e.stderr.strip()}")
    try:
        _ip("netns", "add", b)
        _ip("link", "add", f"va{tag}", "type", "veth", "peer", "name", f"vb{tag}")
        for ns, dev in ((a, f"va{tag}"), (b, f"vb{tag}")):
            _ip("link", "set", dev, "netns", ns)
            _ip("-n", ns, "addr", "add", f"{addr[ns]}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        agent = tmp_path / "netns-agent"
        agent.write_text("#!/bin/sh\n# ssh stand-in: run a command inside the named host's namespace\n"
                         f"host=$1; shift\ncase \"$host\" in {addr[a]}) ns={a};; {addr[b]}) ns={b};; "
                         "*) echo \"unknown host $host\" >&2; exit 255;; esac\n"
                         "exec ip netns exec \"$ns\" unshare --uts /bin/sh -c \"hostname $ns; $*\"\n")
        agent.chmod(0o755)
        hostfile = tmp_path / "hostfile"
        hostfile.write_text(f"{addr[a]} slots=1\n{addr[b]} slots=1\n")
        yield {"ns": a, "agent": str(agent), "hostfile": str(hostfile), "network": SUBNET.format(net),
               "nodes": [(a, addr[a]), (b, addr[b])]}
    finally:
        _ip("netns", "del", a, check=False)
        _ip("netns", "del", b, check=False)


def test_ddp_across_two_network_namespaces(tmp_path, two_hosts):
    script = tmp_path / "job.py"
    script.write_text(
        "import json, os, numpy as np, pygpu, pygpu.distributed as dist\n"
        "from pygpu import nn\n"
        "dist.init_process_group(init_method='env://')\n"
        "r = dist.get_rank()\n"
        "pygpu.manual_seed(r)\n"
        "model = nn.MLP([8, 16, 3]).to(pygpu.float64)\n"
        "ddp = nn.parallel.DistributedDataParallel(model)\n"
        "x = np.random.default_rng(r).standard_normal((4, 8))\n"
        "nn.CrossEntropyLoss()(ddp(pygpu.tensor(x)), pygpu.tensor(np.array([0, 1, 2, 0]))).backward()\n"
        "addrs = [w for w in os.popen('ip -4 -o addr show').read().split() if w.startswith('10.77.')]\n"
        "print('JSON ' + json.dumps({'rank': r, 'addr': addrs, 'grad': model.parameters().__next__()"
        ".grad.numpy().ravel()[:4].tolist(), 'net': dist.stats()['net_sent']}))\n")
    env = dict(os.environ, PYTHONPATH=PKG_ROOT, PYTHONUNBUFFERED="1")
    launch = [sys.executable, "-m", "pygpu.distributed.run", "--nnodes", "2", "--nproc_per_node", "1",
              "--hostfile", two_hosts["hostfile"], "--launch-agent", two_hosts["agent"],
              "--network", two_hosts["network"], str(script)]
    ns = two_hosts["ns"]
    cmd = ["ip", "netns", "exec", ns, "unshare", "--uts", "/bin/sh", "-c",
           f"hostname {ns} && exec " + " ".join(launch)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = sorted((json.loads(l[5:]) for l in proc.stdout.splitlines() if l.startswith("JSON ")),
                  key=lambda r: r["rank"])
    assert len(rows) == 2
    assert rows[0]["addr"] != rows[1]["addr"]          # each rank on its own "machine"
    assert rows[0]["grad"] == rows[1]["grad"]          # gradients averaged across them
    assert rows[0]["net"] > rows[1]["net"] > 0            # rank 0 also sent the initial broadcast


NODE_SCRIPT = (
    "import json, os, socket, numpy as np, pygpu, pygpu.distributed as dist\n"
    "from pygpu import nn\n"
    "dist.init_process_group(init_method='env://')\n"
    "r = dist.get_rank()\n"
    "pygpu.manual_seed(r)\n"
    "model = nn.MLP([8, 16, 3]).to(pygpu.float64)\n"
    "ddp = nn.parallel.DistributedDataParallel(model)\n"
    "x = np.random.default_rng(r).standard_normal((4, 8))\n"
    "nn.CrossEntropyLoss()(ddp(pygpu.tensor(x)), pygpu.tensor(np.array([0, 1, 2, 0]))).backward()\n"
    "env = {k: os.environ[k] for k in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE',\n"
    "                                  'GROUP_RANK', 'MASTER_ADDR', 'MASTER_PORT')}\n"
    "print('JSON ' + json.dumps({'rank': r, 'host': socket.gethostname(), 'env': env,\n"
    "      'grad': model.parameters().__next__().grad.numpy().ravel()[:4].tolist()}), flush=True)\n"
    "if os.environ.get('FAIL') and r == 1:\n"
    "    raise RuntimeError('rank one fails on purpose')\n"
    "dist.barrier()\n")


def _node(ns, cmd, env, cwd):
    return subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "--uts", "/bin/sh", "-c",
                             f"hostname {ns} && exec " + " ".join(cmd)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


@pytest.mark.parametrize("fail", [False, True])
def test_torchrun_start_with_a_launcher_on_each_machine(tmp_path, two_hosts, fail):
    """torchrun's multi-machine command, run on each machine with its --node_rank: they meet at
    node 0's address and node 0's mpirun reaches the other through its launcher. A rank that
    raises on the second machine ends both launchers with a non-zero exit."""
    script = tmp_path / "job.py"
    script.write_text(NODE_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PKG_ROOT, PYTHONUNBUFFERED="1", **({"FAIL": "1"} if fail else {}))
    (ns0, addr0), (ns1, _) = two_hosts["nodes"]
    port = 29400 + os.getpid() % 500
    common = [sys.executable, "-m", "pygpu.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
              "--master-addr", addr0, "--master-port", str(port), "--network", two_hosts["network"]]
    procs = [_node(ns0, common + ["--node-rank", "0", str(script)], env, str(tmp_path)),
             _node(ns1, common + ["--node-rank", "1", str(script)], env, str(tmp_path))]
    outs = [p.communicate(timeout=150) for p in procs]
    codes = [p.returncode for p in procs]
    if fail:
        assert codes[0] != 0 and codes[1] != 0, outs
        assert "rank one fails on purpose" in outs[0][0] + outs[0][1]
        return
    assert codes == [0, 0], outs
    rows = sorted((json.loads(l[5:]) for l in outs[0][0].splitlines() if l.startswith("JSON ")),
                  key=lambda r: r["rank"])
    assert [r["host"] for r in rows] == [ns0, ns1]          # one rank on each machine
    assert [r["env"]["GROUP_RANK"] for r in rows] == ["0", "1"]
    assert all(r["env"]["WORLD_SIZE"] == "2" and r["env"]["LOCAL_RANK"] == "0" for r in rows)
    assert all(r["env"]["MASTER_ADDR"] == addr0 and r["env"]["MASTER_PORT"] == str(port) for r in rows)
    assert rows[0]["grad"] == rows[1]["grad"]               # gradients averaged across them
