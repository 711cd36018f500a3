"""The cost model on a cluster: what a training step costs on N devices, from the bytes each
collective moves, the links they cross and the measured compute time.

Each collective is priced by the alpha-beta model (Thakur, Rabenseifner and Gropp,
"Optimization of Collective Communication Operations in MPICH"), with NCCL's per-call term
(its tuning model, src/graph/tuning.cc: a base latency per collective plus a latency per step):

    seconds = call + steps(algorithm, p) alpha + factor(algorithm, p) n beta

call is paid once per collective (the launch: NCCL's kernel, MPI's and pygpu's Python around
the call), alpha once per message step of the algorithm, beta = 1 / bandwidth per byte (n: the
bytes of the whole tensor, factor n: the bytes on the algorithm's critical path, what the
busiest rank sends or receives one after another). ALGORITHMS is the table of steps and factors:

    all-reduce, ring                  2 (p-1) steps, 2 (p-1)/p n
    all-reduce, binomial tree         2 log2(p) steps, 2 log2(p) n    (reduce, then broadcast)
    all-reduce, halving-doubling      2 log2(p) steps, 2 (p-1)/p n    (Rabenseifner)
    reduce-scatter, all-gather (ring) (p-1) steps, (p-1)/p n
    all-gather, linear                (p-1) steps, (p-1)/p n          (every block to every rank)
    reduce-scatter, reduce + scatter  log2(p) + p-1 steps, (log2(p) + (p-1)/p) n
                                      (a binomial reduce of the whole tensor to rank 0, then
                                      rank 0 sends each rank its block)
    broadcast, binomial tree          log2(p) steps, log2(p) n
    broadcast, pipelined ring         (p-1) steps, n
    broadcast, linear                 (p-1) steps, (p-1) n            (the root sends to each)

A link's transport says which algorithm runs. NCCL picks the cheapest for the size (its
tuner), and so does "best" on a link of transport "nccl". Open MPI does not: its non-blocking
collectives (coll/libnbc, which pygpu's MPI_I* calls reach) run fixed schedules, OPEN_MPI's
table (from Open MPI 5.0's nbc_i*.c): MPI_Ibcast linear up to 4 ranks, binomial above;
MPI_Iallgather linear; MPI_Ireduce_scatter_block a binomial reduce of the WHOLE tensor to rank
0 and a linear scatter (log2(p) + (p-1)/p times the ring's bytes: 3x at 2 ranks, 3.7x at 4);
MPI_Iallreduce in place binomial; and pygpu's own ring for float all-reduces from 256 KiB
(distributed/collectives.py's RING_SIZES). On a cluster of nodes of g
devices the all-reduce is hierarchical, as NCCL's: a reduce-scatter inside each node, an
all-reduce of 1/g of the bytes between the nodes, an all-gather inside the node again (one
call: call is paid once).

A link is datasheet figures (profiles/links/*.json: NVLink, PCIe, InfiniBand, Ethernet, each
naming its sources), like the DeviceProfiles of profiles/*.json, or fitted to collectives
measured on this machine (fit_link: call, alpha and bandwidth by least squares, for all
kinds together and, given several sizes of a kind, for that kind alone: LinkProfile.kinds).

A training step on N devices (StepModel.predict) is the compute plus the collectives the
strategy makes (StepModel.collectives: the calls pygpu's wrappers make, which dist.stats()
counts), each priced as above, less what hides behind backward:
    DDP    one all-reduce per gradient bucket; all but the last hide behind backward (the
           Reducer launches each as soon as it is full)
    ZeRO   DDP's, plus one broadcast per parameter from the rank that updated it, after the
           step (not hidden); each rank runs the optimizer on its share only
    FSDP   per unit: an all-gather of its parameters before its forward and again before its
           backward (pygpu gathers each unit when it runs: not hidden), and a reduce-scatter of
           its gradients, hidden behind the rest of backward but for the last unit's, and but
           for its read out of the gradient when its device tensors stage through the host
           (the next unit's all-gather, a blocking call, posts after it: "held")
Gradient accumulation over k micro-batches reduces once per k of them. Where ranks share a
host's cores (HostShare: sim devices are threads on the host), the ranks run in lock step and
the step is the sum of its phases, each the longer of its links' time and its CPU over the
cores. Throughput is global samples per second; the scaling efficiency is throughput(N) /
(N throughput(1))."""
import glob
import json
import math
import os
from dataclasses import asdict, dataclass, field


@dataclass
class LinkProfile:
    """One link between devices: alpha_s per message step, bandwidth_bps (bytes per second, one
    direction), call_s per collective call (see the module's formula). transport: which
    algorithm a collective runs ("nccl": the cheapest, "open_mpi": OPEN_MPI's table). kinds:
    {collective kind: [call_s, alpha_s, bandwidth_bps]} fitted for that kind alone, in place
    of the three shared ones (fit_link(..., per_kind=True))."""
    name: str
    alpha_s: float
    bandwidth_bps: float
    source: str = ""
    measured: bool = False
    call_s: float = 0.0
    transport: str = "nccl"
    kinds: dict = field(default_factory=dict)

    def seconds(self, nbytes, messages=1):
        """Point to point: `messages` messages carrying nbytes in all (no per-call term)."""
        return messages * self.alpha_s + nbytes / self.bandwidth_bps

    def terms(self, kind):
        """(call_s, alpha_s, bandwidth_bps) for collectives of `kind`."""
        if kind in self.kinds:
            return tuple(float(v) for v in self.kinds[kind])
        return self.call_s, self.alpha_s, self.bandwidth_bps


_LINK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles", "links")


def _load_links():
    out = {}
    for path in sorted(glob.glob(os.path.join(_LINK_DIR, "*.json"))):
        with open(path) as f:
            row = json.load(f)
        out[os.path.splitext(os.path.basename(path))[0]] = LinkProfile(
            row["name"], float(row["alpha_s"]), float(row["bandwidth_bps"]), row["source"],
            call_s=float(row.get("call_s", 0.0)), transport=row.get("transport", "nccl"))
    return out


# Datasheet figures, one file each (profiles/links/<name>.json, with their sources).
LINKS = _load_links()


@dataclass
class Cluster:
    """devices_per_node devices joined by `intra`, nodes joined by `inter` (one link per
    device: a node's g NICs together carry g times the bandwidth)."""
    name: str
    intra: LinkProfile
    inter: LinkProfile
    devices_per_node: int = 8


CLUSTERS = {
    "nvlink": Cluster("8 GPUs per node over NVLink, nodes over InfiniBand NDR",
                      LINKS["nvlink"], LINKS["infiniband"], 8),
    "pcie": Cluster("8 GPUs per node over PCIe Gen5, nodes over InfiniBand NDR",
                    LINKS["pcie"], LINKS["infiniband"], 8),
    "infiniband": Cluster("1 GPU per node, nodes over InfiniBand NDR",
                          LINKS["infiniband"], LINKS["infiniband"], 1),
    "ethernet": Cluster("1 GPU per node, nodes over 100 GbE",
                        LINKS["ethernet"], LINKS["ethernet"], 1),
}


def _log2(p):
    return math.ceil(math.log2(p)) if p > 1 else 0


# -- one collective on one link ---------------------------------------------------------------
# (kind, algorithm) -> (message steps, bytes on the critical path / n), as functions of p.
ALGORITHMS = {
    ("all_reduce", "ring"): (lambda p: 2 * (p - 1), lambda p: 2 * (p - 1) / p),
    ("all_reduce", "tree"): (lambda p: 2 * _log2(p), lambda p: 2 * _log2(p)),
    ("all_reduce", "rhd"): (lambda p: 2 * _log2(p), lambda p: 2 * (p - 1) / p),
    ("reduce_scatter", "ring"): (lambda p: p - 1, lambda p: (p - 1) / p),
    ("reduce_scatter", "reduce+scatter"): (lambda p: _log2(p) + p - 1,
                                           lambda p: _log2(p) + (p - 1) / p),
    ("all_gather", "ring"): (lambda p: p - 1, lambda p: (p - 1) / p),
    ("all_gather", "linear"): (lambda p: p - 1, lambda p: (p - 1) / p),
    ("broadcast", "tree"): (lambda p: _log2(p), lambda p: _log2(p)),
    ("broadcast", "ring"): (lambda p: p - 1, lambda p: 1.0),
    ("broadcast", "linear"): (lambda p: p - 1, lambda p: p - 1.0),
}
# The algorithm Open MPI 5.0's coll/libnbc runs for each non-blocking collective pygpu calls
# (nbc_ibcast.c, nbc_iallgather.c, nbc_ireduce_scatter_block.c, nbc_iallreduce.c at their
# defaults), and pygpu's own ring for float all-reduces from RING_FROM_BYTES
# (distributed/collectives.py's RING_SIZES): kind -> algorithm(p, nbytes).
RING_FROM_BYTES = 256 << 10
OPEN_MPI = {
    "all_reduce": lambda p, n: "ring" if n >= RING_FROM_BYTES else "tree",  # in place: binomial
    "broadcast": lambda p, n: "linear" if p <= 4 else "tree",
    "all_gather": lambda p, n: "linear",
    "reduce_scatter": lambda p, n: "reduce+scatter",
}
# transport -> its choice table (None: the cheapest algorithm, as NCCL's tuner picks)
TRANSPORTS = {"nccl": None, "open_mpi": OPEN_MPI}
# dist.stats()'s call names -> the kind priced above
KIND = {"all_reduce": "all_reduce", "broadcast": "broadcast", "all_gather": "all_gather",
        "all_gather_into_tensor": "all_gather", "reduce_scatter": "reduce_scatter",
        "reduce_scatter_tensor": "reduce_scatter"}


def algorithms(kind):
    return [a for k, a in ALGORITHMS if k == kind]


def steps_and_factor(kind, p, algorithm):
    steps, factor = ALGORITHMS[(kind, algorithm)]
    return steps(p), factor(p)


def transport_algorithm(kind, nbytes, p, link):
    """The algorithm link's transport runs for this collective (None: it picks the cheapest)."""
    table = TRANSPORTS[link.transport]
    return None if table is None else table[KIND.get(kind, kind)](p, nbytes)


def collective_time(kind, nbytes, p, link, algorithm="best", call=True):
    """Seconds of one collective `kind` of a tensor of nbytes (whole) over p ranks on `link`:
    call_s (if call) + steps alpha + factor nbytes / bandwidth, with the kind's own terms where
    the link has them; "best": the algorithm the link's transport runs (NCCL: the cheapest)."""
    if p <= 1:
        return 0.0
    kind = KIND.get(kind, kind)
    call_s, alpha, bw = link.terms(kind)

    def cost(a):
        s, f = steps_and_factor(kind, p, a)
        return s * alpha + f * nbytes / bw
    if algorithm == "best":
        algorithm = transport_algorithm(kind, nbytes, p, link)
    names = algorithms(kind) if algorithm in (None, "best") else [algorithm]
    return (call_s if call else 0.0) + min(cost(a) for a in names)


def best_algorithm(kind, nbytes, p, link):
    kind = KIND.get(kind, kind)
    chosen = transport_algorithm(kind, nbytes, p, link)
    if chosen is not None:
        return chosen
    return min(algorithms(kind), key=lambda a: collective_time(kind, nbytes, p, link, a))


def all_reduce_time(nbytes, p, link, algorithm="best"):
    """Seconds of an all-reduce of nbytes over p ranks on `link` (ring, tree, rhd, or best)."""
    return collective_time("all_reduce", nbytes, p, link, algorithm)


def shard_time(nbytes, p, link):
    """A ring reduce-scatter or all-gather of a tensor of nbytes (whole) over p ranks."""
    return collective_time("all_gather", nbytes, p, link, "ring")


def broadcast_time(nbytes, p, link, algorithm="tree"):
    return collective_time("broadcast", nbytes, p, link, algorithm)


# -- on a cluster -----------------------------------------------------------------------------
def _inter(cluster, g):
    i = cluster.inter
    return LinkProfile(i.name, i.alpha_s, i.bandwidth_bps * g, call_s=0.0, transport=i.transport,
                       kinds={k: [0.0, a, b * g] for k, (_, a, b) in i.kinds.items()})


def cluster_collective(kind, nbytes, n, cluster, algorithm="best"):
    """One collective over n devices of `cluster`; hierarchical when they span nodes (one call)."""
    kind = KIND.get(kind, kind)
    g = min(n, cluster.devices_per_node)
    nodes = math.ceil(n / g)
    if nodes == 1:
        return collective_time(kind, nbytes, n, cluster.intra, algorithm)
    call, inter = cluster.intra.terms(kind)[0], _inter(cluster, g)
    inside = lambda k, b: collective_time(k, b, g, cluster.intra, "best", call=False)
    between = lambda k, b: collective_time(k, b, nodes, inter, algorithm, call=False)
    if kind == "all_reduce":
        return call + 2 * inside("all_gather", nbytes) + between("all_reduce", nbytes / g)
    if kind in ("reduce_scatter", "all_gather"):
        return call + inside(kind, nbytes) + between(kind, nbytes / g)
    return call + between(kind, nbytes) + inside(kind, nbytes)  # broadcast: nodes, then inside


def cluster_all_reduce(nbytes, n, cluster, algorithm="best"):
    """Hierarchical all-reduce over n devices (NCCL's shape when there are several nodes)."""
    return cluster_collective("all_reduce", nbytes, n, cluster, algorithm)


def cluster_shard(nbytes, n, cluster):
    """Reduce-scatter (or all-gather) of a whole tensor of nbytes over n devices, hierarchical."""
    return cluster_collective("all_gather", nbytes, n, cluster)


# Host staging of a device tensor's collective (sim tensors go through host memory): kind ->
# (bytes across device links on the collective's critical path / n, transfers on it, bytes
# one rank copies / n, bytes a rank copies out before it can post / n), as functions of p.
# An all-reduce reads the tensor out and writes it back; an all-gather reads the shard and
# writes the whole; a reduce-scatter the reverse. A broadcast is one transfer on each rank
# but two in sequence: the root's read, then (after the wire) the others' write.
STAGING = {"all_reduce": (lambda p: 2.0, 2, lambda p: 2.0, lambda p: 1.0),
           "all_gather": (lambda p: 1 + 1 / p, 2, lambda p: 1 + 1 / p, lambda p: 1 / p),
           "reduce_scatter": (lambda p: 1 + 1 / p, 2, lambda p: 1 + 1 / p, lambda p: 1.0),
           "broadcast": (lambda p: 2.0, 2, lambda p: 1.0, lambda p: 1.0)}


# -- a training step --------------------------------------------------------------------------
@dataclass
class StepModel:
    """What one device does per step at its batch: compute_s (forward + backward, measured),
    optimizer_s (the step), param_bytes (of the model: the gradients are as many), bucket_bytes
    (DDP's cap) or buckets (DDP's bucket sizes in bytes, when known), units (FSDP's) or
    unit_bytes (each unit's padded bytes, in forward order), tensors (parameter tensors) or
    param_sizes (each one's bytes: ZeRO broadcasts each), optimizer_share (the largest share of
    the optimizer's work one rank runs under ZeRO or FSDP; None: 1/N), staging (a LinkProfile
    between device and host that a device tensor's collective crosses, e.g. the sim link model,
    or None), backward_fraction (of compute_s), host (a HostShare: ranks that share a host's
    cores, or None: a device each, as on a GPU cluster)."""
    compute_s: float
    param_bytes: float
    optimizer_s: float = 0.0
    batch_per_device: int = 1
    bucket_bytes: float = 25 * 2**20
    units: int = 1
    backward_fraction: float = 2.0 / 3.0
    staging: LinkProfile = None
    optimizer_state_per_param: float = 2.0   # Adam: two moments
    buckets: list = None
    unit_bytes: list = None
    tensors: int = 1
    param_sizes: list = None
    optimizer_share: float = None
    host: "HostShare" = None
    meta: dict = field(default_factory=dict)

    def _buckets(self):
        if self.buckets:
            return [float(b) for b in self.buckets]
        nb = max(1, math.ceil(self.param_bytes / self.bucket_bytes))
        return [self.param_bytes / nb] * nb

    def _units(self):
        if self.unit_bytes:
            return [float(b) for b in self.unit_bytes]
        u = max(1, self.units)
        return [self.param_bytes / u] * u

    def _params(self):
        if self.param_sizes:
            return [float(b) for b in self.param_sizes]
        t = max(1, self.tensors)
        return [self.param_bytes / t] * t

    def collectives(self, strategy):
        """The collectives of one step, in order: [(dist call name, bytes of the whole tensor,
        when)], when = "forward"/"backward-gather"/"after" (exposed) or "backward" (launched
        during backward, hidden behind what remains of it)."""
        if strategy in ("ddp", "zero"):
            out = [("all_reduce", b, "backward") for b in self._buckets()]
            if strategy == "zero":
                out += [("broadcast", b, "after") for b in self._params()]
            return out
        if strategy == "fsdp":
            units = self._units()
            out = [("all_gather_into_tensor", b, "forward") for b in units]
            for b in reversed(units):  # backward runs the units in reverse
                out += [("all_gather_into_tensor", b, "backward-gather"),
                        ("reduce_scatter_tensor", b, "backward")]
            return out
        raise ValueError(f"strategy {strategy!r}: ddp, zero or fsdp")

    def collective_counts(self, strategy):
        """{dist call name: calls per step}: what dist.stats()["calls"] counts in one step."""
        counts = {}
        for name, _, _ in self.collectives(strategy):
            counts[name] = counts.get(name, 0) + 1
        return counts

    def staged_bytes(self, name, nbytes, n):
        """Bytes one rank's device tensor moves between device and host in a collective (0
        without staging)."""
        return 0.0 if self.staging is None else STAGING[KIND[name]][2](n) * nbytes

    def _stage(self, name, nbytes, n):
        """Host staging of a device tensor's collective (sim): its bytes across the device link."""
        if self.staging is None:
            return 0.0
        path, transfers, _, _ = STAGING[KIND[name]]
        return self.staging.seconds(path(n) * nbytes, transfers)

    def _stage_out(self, name, nbytes, n):
        """The staging a collective of device tensors does before it posts: its read out."""
        if self.staging is None:
            return 0.0
        return self.staging.seconds(STAGING[KIND[name]][3](n) * nbytes, 1)

    def collective_seconds(self, name, nbytes, n, cluster, algorithm="best"):
        return cluster_collective(name, nbytes, n, cluster, algorithm) + self._stage(name, nbytes, n)

    def predict(self, n, cluster, strategy="ddp", accumulate=1, algorithm="best"):
        """{step_s, comm_s, exposed_s, calls, throughput, ...} on n devices."""
        bwd = self.compute_s * self.backward_fraction
        compute = accumulate * self.compute_s
        calls = self.collectives(strategy)
        opt = self.optimizer_s
        if strategy in ("zero", "fsdp") and n > 1:
            opt *= self.optimizer_share if self.optimizer_share is not None else 1.0 / n
        calls = calls if n > 1 else []
        cost = [(name, b, when, self.collective_seconds(name, b, n, cluster, algorithm))
                for name, b, when in calls]
        hidden = [t for _, _, when, t in cost if when == "backward"]
        comm = sum(t for *_, t in cost)
        tail = max(hidden[-1], sum(hidden) - bwd) if hidden else 0.0  # the last one launched
        # A collective called during backward posts in its turn, after its staging out (a
        # device tensor's read to the host); a blocking collective called next, still in
        # backward (FSDP's next unit's all-gather), waits for that turn, so the read out is
        # exposed (the last one's is in the tail: backward ends waiting for all of it).
        last = max((i for i, c in enumerate(cost) if c[2] == "backward"), default=-1)
        held = sum(self._stage_out(name, b, n)
                   for i, ((name, b, when, _), nxt) in enumerate(zip(cost, cost[1:]))
                   if when == "backward" and nxt[2] != "backward" and i < last)
        exposed = sum(t for _, _, when, t in cost if when != "backward") + tail + held
        links = compute + exposed + opt
        step, host_s = links, 0.0
        if self.host is not None:  # the ranks' CPU work, on the cores they share
            h = self.host
            host_s = h.seconds(self, calls, n, opt, accumulate)
            # lock-step phases, each the longer of its links' time and the ranks' CPU in it
            # over the cores: forward+backward (with the collectives hidden in it), the waits
            # for the read outs held (the device done, the next call blocked: no CPU), the
            # wait for the last hidden collective, each exposed collective, the optimizer
            call_cpu = lambda name, b: h.call_cpu_s + h.byte_cpu_s * self.staged_bytes(name, b, n)
            in_bwd = [call_cpu(name, b) for name, b, when, _ in cost if when == "backward"]
            fb_cpu = accumulate * (h.cpu_s - self.optimizer_s) + sum(in_bwd[:-1])
            step = (max(compute, fb_cpu / h.cores_per_rank) + held
                    + (max(tail, in_bwd[-1] / h.cores_per_rank) if in_bwd else 0.0)
                    + sum(max(t, call_cpu(name, b) / h.cores_per_rank)
                          for name, b, when, t in cost if when != "backward")
                    + max(opt, opt / h.cores_per_rank))
        bound = "host" if step > links * (1 + 1e-12) else "links"
        samples = n * self.batch_per_device * accumulate
        return {"devices": n, "strategy": strategy, "step_s": step, "compute_s": compute,
                "comm_s": comm, "exposed_s": exposed, "optimizer_s": opt, "host_s": host_s,
                "links_s": links, "bound": bound, "calls": len(calls),
                "throughput": samples / step}

    def memory_bytes(self, n, strategy="ddp"):
        """Parameters, gradients and optimizer state one device holds."""
        P, s = float(self.param_bytes), self.optimizer_state_per_param
        if strategy == "ddp":
            return P * (2 + s)
        if strategy == "zero":
            return P * 2 + P * s / n
        return P * (2 + s) / n + 2 * max(self._units())  # fsdp: shards + one unit whole

    def scaling(self, cluster, strategy="ddp", devices=None, accumulate=1):
        """[prediction + efficiency] for each device count (1 to 1,024 in powers of two)."""
        devices = devices or [2 ** k for k in range(11)]
        one = self.predict(1, cluster, strategy, accumulate)["throughput"]
        out = []
        for n in devices:
            row = self.predict(n, cluster, strategy, accumulate)
            row["efficiency"] = row["throughput"] / (n * one)
            row["comm_share"] = row["exposed_s"] / row["step_s"]
            out.append(row)
        return out


@dataclass
class HostShare:
    """Ranks that share one host's cores (the sim devices of this machine: each rank's device
    is threads on the host): no stretch of the step takes less than the CPU work every rank
    does in it over the cores there are. The ranks run in lock step (each exposed collective
    waits for all of them), so StepModel.predict prices each phase (forward+backward, each
    exposed collective, the optimizer) as the longer of its links' time and its CPU over the
    cores, and adds them: the cores a collective leaves idle cannot run the compute of
    another phase. seconds() is the whole step's CPU over the cores (the bound without
    phases). cpu_s: one rank's CPU seconds per step apart from its collectives (one
    process's, measured); call_cpu_s and byte_cpu_s: the CPU a collective costs per call and
    per byte staged (fitted to measured collectives); cores_per_rank: the cores over the ranks."""
    cpu_s: float
    cores_per_rank: float
    call_cpu_s: float = 0.0
    byte_cpu_s: float = 0.0

    def seconds(self, model, calls, n, optimizer_s, accumulate=1):
        """The ranks' CPU work per step over the cores each has: cpu_s (which holds one whole
        optimizer step, model.optimizer_s) less the optimizer a rank does not run when
        sharded (optimizer_s: what it runs), plus each collective's call and staged bytes."""
        cpu = (accumulate * (self.cpu_s - model.optimizer_s) + optimizer_s
               + sum(self.call_cpu_s + self.byte_cpu_s * model.staged_bytes(name, b, n)
                     for name, b, _ in calls))
        return cpu / self.cores_per_rank  # a lower bound: the work packed on every core


def own_cpu(cpu_s, collectives_cpu_s, floor=0.0):
    """A strategy's own CPU per step (HostShare.cpu_s) from a run of it on one rank: that
    run's CPU per step (cpu_s) less its collectives' there (collectives_cpu_s: measured, the
    thread they run on), which the model charges per call at every size; no less than `floor`
    (the plain model's: a wrapper only adds work)."""
    return max(floor, cpu_s - collectives_cpu_s)


def fit_call_cpu(points):
    """(CPU seconds per call, per staged byte) from [(staged bytes, CPU seconds of one call)],
    least squares, neither negative."""
    import numpy as np
    A = np.array([[1.0, b] for b, _ in points])
    y = np.array([c for _, c in points])
    x, *_ = np.linalg.lstsq(A, y, rcond=None)
    if x[1] < 0:
        x = np.array([float(np.mean(y)), 0.0])
    elif x[0] < 0:
        x = np.array([0.0, float(np.dot(A[:, 1], y) / np.dot(A[:, 1], A[:, 1]))])
    return float(x[0]), float(x[1])


def communication_dominates(rows):
    """The first device count whose exposed communication exceeds its compute (or None)."""
    for row in rows:
        if row["exposed_s"] > row["compute_s"]:
            return row["devices"]
    return None


def _fit_terms(rows, y):
    """(call, alpha, beta) >= 0 by least squares of relative error over rows [1, steps, factor
    n] (a column that fits negative is dropped and the rest refitted)."""
    import numpy as np
    A, y = np.array(rows, dtype=float), np.array(y, dtype=float)
    w = 1.0 / y  # relative error: small messages count as much as large ones
    keep = [0, 1, 2]
    while True:
        x, *_ = np.linalg.lstsq(A[:, keep] * w[:, None], y * w, rcond=None)
        neg = [k for k, v in zip(keep, x) if v <= 0]
        if not neg or len(keep) == 1:
            break
        keep = [k for k in keep if k not in neg[:1]]
    coef = np.zeros(3)
    coef[keep] = np.maximum(x, 0.0)
    coef[2] = max(coef[2], 1e-15)
    return [float(c) for c in coef], A @ coef, y


def fit_link(points, name="measured", transport="nccl", per_kind=False):
    """A LinkProfile fitted to measured collective times. points: [(kind, algorithm, p,
    nbytes, seconds)] (kind a dist call name, algorithm one of ALGORITHMS' or "best": the one
    `transport` runs, for "nccl" the latency-bound one), or [(p, nbytes, seconds)] for ring
    all-reduces. Least squares of relative error of seconds = call + steps alpha + factor
    nbytes beta, none of the three negative. per_kind: each kind measured at two sizes or more
    also gets its own three (LinkProfile.kinds). Returns the link and the largest relative
    residual (of the terms each point is priced with)."""
    pts = [("all_reduce", "ring", *pt) if len(pt) == 3 else tuple(pt) for pt in points]
    probe = LinkProfile(name, 1.0, 1.0, transport=transport)
    rows, kinds = [], []
    for kind, algorithm, p, n, _ in pts:
        kind = KIND.get(kind, kind)
        if algorithm == "best":
            algorithm = transport_algorithm(kind, n, p, probe)
        if algorithm is None:  # the cheapest at these sizes' other fit: the latency-bound one
            algorithm = min(algorithms(kind), key=lambda a: steps_and_factor(kind, p, a)[0])
        s, f = steps_and_factor(kind, p, algorithm)
        rows.append([1.0, s, f * n])
        kinds.append(kind)
    y = [pt[-1] for pt in pts]
    (call, alpha, beta), pred, y = _fit_terms(rows, y)
    link = LinkProfile(name, alpha, 1.0 / beta, "fitted to collectives measured on this machine",
                       measured=True, call_s=call, transport=transport)
    if per_kind:
        for kind in sorted(set(kinds)):
            idx = [i for i, k in enumerate(kinds) if k == kind]
            if len({pts[i][3] for i in idx}) < 2:
                continue  # one size: its bandwidth is not determined apart from the call
            (c, a, b), kpred, _ = _fit_terms([rows[i] for i in idx], [y[i] for i in idx])
            link.kinds[kind] = [c, a, 1.0 / b]
            pred[idx] = kpred
    return link, float(max(abs(pred - y) / y))


def save_link(link, path):
    with open(path, "w") as f:
        json.dump(asdict(link), f, indent=1)


def load_link(name_or_path):
    if name_or_path in LINKS:
        return LINKS[name_or_path]
    with open(name_or_path) as f:
        return LinkProfile(**json.load(f))
