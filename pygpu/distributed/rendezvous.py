"""torchrun's multi-machine start: every machine runs the same launcher command with its
--node_rank, and the machines meet at --master_addr:--master_port; MPI's own start-up
then runs the job.

    machine 0:  python -m pygpu.distributed.run --nnodes 2 --node_rank 0 --nproc_per_node 4 \
                    --master_addr 10.0.0.1 --master_port 29500 train.py
    machine 1:  the same with --node_rank 1

The launcher of node 0 (the leader) listens at master_addr:master_port. Each other
launcher (an agent) connects, says its node rank and slots, and waits. Once all nnodes
have joined, the leader writes a hostfile (each machine's address as the leader sees it,
in node-rank order, --nproc_per_node slots each) and runs mpirun over it. Where mpirun
would start its daemon on another machine through ssh, it runs this module's `exec` as
its launch agent instead: that connects back to the leader, which hands the command to
the agent of that machine, which runs it there and reports its output and exit status.
No ssh is needed, as with torchrun. When mpirun ends, the leader tells every agent its
exit status, and each launcher exits with it: a rank that fails ends the job on every
machine, with its error and a non-zero exit.

The wire protocol is lines of JSON over TCP, control only: the job's data moves over MPI.
The join waits at most --rdzv_conf timeout=SECONDS (default 300) for the other machines.

Internal entry (mpirun's launch agent):
    python -m pygpu.distributed.rendezvous exec ADDR PORT TOKEN HOST COMMAND..."""
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time


def _send(sock, obj):
    sock.sendall((json.dumps(obj) + "\n").encode())


def _lines(sock):
    """The JSON messages arriving on sock, one per line, until it closes."""
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)


def _connect(addr, port, timeout_s):
    """A connection to the leader, retried until timeout_s (it may not listen yet)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            sock = socket.create_connection((addr, port), timeout=10)
            sock.settimeout(None)  # then wait as long as the job runs
            return sock
        except OSError as e:
            if time.monotonic() > deadline:
                raise SystemExit(f"pygpu.distributed.run: could not reach the rendezvous at "
                                 f"{addr}:{port} within {timeout_s:.0f} s ({e}); is node 0's "
                                 "launcher running, and --master_addr its address?") from None
            time.sleep(0.5)


class Leader:
    """Node 0: the rendezvous server, and the relay of mpirun's remote commands."""

    def __init__(self, addr, port, nnodes, nproc, timeout_s):
        self.nnodes, self.nproc, self.timeout_s = nnodes, nproc, timeout_s
        self.token = os.urandom(8).hex()
        self.srv = socket.create_server(("", port), reuse_port=False)
        self.srv.settimeout(1.0)
        self.addr, self.port = addr, port
        self.agents = {}   # node rank -> (socket, address)
        self._pending = {}  # id(agent socket) -> the launch agent's connection it serves
        self._lock = threading.Lock()

    def join(self):
        """Wait for the nnodes - 1 agents; returns the hosts, in node-rank order."""
        deadline = time.monotonic() + self.timeout_s
        while len(self.agents) < self.nnodes - 1:
            if time.monotonic() > deadline:
                missing = sorted(set(range(1, self.nnodes)) - set(self.agents))
                raise SystemExit(f"pygpu.distributed.run: the rendezvous at {self.addr}:{self.port} "
                                 f"waited {self.timeout_s:.0f} s; node ranks {missing} never joined")
            try:
                conn, (peer, _) = self.srv.accept()
            except socket.timeout:
                continue
            conn.settimeout(None)
            hello = next(_lines(conn), None)
            if not hello or hello.get("kind") != "join":
                conn.close()
                continue
            rank = int(hello["node_rank"])
            problem = None
            if not 1 <= rank < self.nnodes or rank in self.agents:
                problem = f"node rank {rank} is taken or outside 1..{self.nnodes - 1}"
            elif int(hello["nproc"]) != self.nproc or int(hello["nnodes"]) != self.nnodes:
                problem = (f"--nproc_per_node/--nnodes ({hello['nproc']}, {hello['nnodes']}) differ "
                           f"from node 0's ({self.nproc}, {self.nnodes})")
            if problem:
                _send(conn, {"kind": "refused", "why": problem})
                conn.close()
                continue
            self.agents[rank] = (conn, peer)
        return [self.addr] + [self.agents[r][1] for r in range(1, self.nnodes)]

    def serve_execs(self):
        """Relay mpirun's launch-agent connections to the agent of the named host (a thread)."""
        def relay(conn):
            req = next(_lines(conn), None)
            if not req or req.get("token") != self.token:
                conn.close()
                return
            target = [s for r, (s, a) in self.agents.items() if a == req["host"]]
            if not target:
                _send(conn, {"kind": "exit", "code": 255, "err": f"no agent for {req['host']}"})
                conn.close()
                return
            agent = target[0]
            with self._lock:  # one daemon per machine: one command per agent at a time
                self._pending[id(agent)] = conn
                _send(agent, {"kind": "exec", "cmd": req["cmd"]})

        def loop():
            while True:
                try:
                    conn, _ = self.srv.accept()
                except socket.timeout:
                    continue
                except OSError:
                    return
                conn.settimeout(None)
                threading.Thread(target=relay, args=(conn,), daemon=True).start()
        threading.Thread(target=loop, name="pygpu-rdzv-exec", daemon=True).start()
        for rank, (sock, _) in self.agents.items():
            threading.Thread(target=self._from_agent, args=(sock,), daemon=True).start()

    def _from_agent(self, sock):
        """An agent's reports (its command's output and exit) go to the waiting exec."""
        for msg in _lines(sock):
            with self._lock:
                conn = self._pending.get(id(sock))
            if conn is None:
                continue
            try:
                _send(conn, msg)
                if msg.get("kind") == "exit":
                    conn.close()
                    with self._lock:
                        self._pending.pop(id(sock), None)
            except OSError:
                pass

    def finish(self, code):
        for sock, _ in self.agents.values():
            try:
                _send(sock, {"kind": "done", "code": code})
                sock.close()
            except OSError:
                pass
        self.srv.close()


def leader_run(addr, port, nnodes, nproc, timeout_s, make_cmd):
    """Node 0: rendezvous, then mpirun over every machine; returns mpirun's exit status."""
    leader = Leader(addr, port, nnodes, nproc, timeout_s)
    hosts = leader.join()
    with tempfile.NamedTemporaryFile("w", prefix="pygpu-hosts-", suffix=".txt", delete=False) as f:
        f.write("".join(f"{h} slots={nproc}\n" for h in hosts))
        hostfile = f.name
    agent = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "pygpu.distributed.rendezvous",
                                              "exec", addr, str(port), leader.token])
    leader.serve_execs()
    try:
        proc = subprocess.run(make_cmd(hostfile, agent))
        code = proc.returncode
    finally:
        os.unlink(hostfile)
    leader.finish(code)
    return code


def agent_run(addr, port, node_rank, nnodes, nproc, timeout_s):
    """Node k > 0: join, run what the leader hands over (mpirun's daemon for this machine),
    exit with the job's status."""
    sock = _connect(addr, port, timeout_s)
    _send(sock, {"kind": "join", "node_rank": node_rank, "nnodes": nnodes, "nproc": nproc,
                 "host": socket.gethostname()})
    children = []
    lock = threading.Lock()

    def run(cmd):
        proc = subprocess.Popen(["/bin/sh", "-c", cmd], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        children.append(proc)
        for line in proc.stdout:
            with lock:
                _send(sock, {"kind": "out", "text": line.decode(errors="replace")})
        code = proc.wait()
        with lock:
            _send(sock, {"kind": "exit", "code": code})

    code = 1
    try:
        for msg in _lines(sock):
            kind = msg.get("kind")
            if kind == "refused":
                raise SystemExit(f"pygpu.distributed.run: the rendezvous refused node rank "
                                 f"{node_rank}: {msg['why']}")
            if kind == "exec":
                threading.Thread(target=run, args=(msg["cmd"],), daemon=True).start()
            elif kind == "done":
                code = int(msg["code"])
                break
    finally:
        for proc in children:
            if proc.poll() is None:
                proc.terminate()
    return code


def _exec_main(argv):
    """mpirun's launch agent: `exec ADDR PORT TOKEN HOST CMD...` runs CMD on HOST (no colon in
    the agent's command: PRRTE reads one as a list of alternative agents)."""
    addr, port, token, host, cmd = argv[0], argv[1], argv[2], argv[3], argv[4:]
    sock = _connect(addr, int(port), 30)
    _send(sock, {"token": token, "host": host, "cmd": " ".join(cmd)})
    for msg in _lines(sock):
        if msg.get("kind") == "out":
            sys.stdout.write(msg["text"])
            sys.stdout.flush()
        elif msg.get("kind") == "exit":
            if msg.get("err"):
                sys.stderr.write(f"pygpu.distributed.rendezvous: {msg['err']}\n")
            return int(msg["code"])
    return 255


if __name__ == "__main__":
    if len(sys.argv) >= 6 and sys.argv[1] == "exec":
        sys.exit(_exec_main(sys.argv[2:]))
    raise SystemExit("usage: python -m pygpu.distributed.rendezvous exec ADDR PORT TOKEN HOST CMD...")
