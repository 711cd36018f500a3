"""The cost model on a cluster: what a training step costs on N devices, from the bytes each
collective moves, the links they cross and the measured compute time.

Each collective is priced by the alpha-beta model (Thakur, Rabenseifner and Gropp,
"Optimization of Collective Communication Operations in MPICH"): a message costs a latency
alpha plus its bytes over the link's bandwidth (beta = 1 / bandwidth), and each algorithm
sends a known number of messages of known sizes:

    all-reduce, ring                  2 (p-1) alpha + 2 (p-1)/p n beta
    all-reduce, binomial tree         2 log2(p) (alpha + n beta)       (reduce, then broadcast)
    all-reduce, halving-doubling      2 log2(p) alpha + 2 (p-1)/p n beta   (Rabenseifner)
    reduce-scatter, all-gather (ring) (p-1) alpha + (p-1)/p n beta
    broadcast, binomial tree          log2(p) (alpha + n beta)

(n: the bytes of the whole tensor). An MPI or NCCL picks the cheapest for the size: best()
does too. On a cluster of nodes of g devices the all-reduce is hierarchical, as NCCL's: a
reduce-scatter inside each node, an all-reduce of 1/g of the bytes between the nodes, an
all-gather inside the node again.

A link is datasheet figures (LINKS: NVLink, PCIe, InfiniBand, Ethernet), like the
DeviceProfiles of profiles/*.json, or fitted from measured collective times (fit_link).

A training step on N devices (StepModel.predict):
    DDP    compute + the gradient all-reduce, less what hides behind backward (all buckets but
           the last: the Reducer launches each as soon as it is full)
    ZeRO   DDP's, plus an all-gather of the parameters after the step (each rank updated its
           share); the optimizer's own time is divided by N
    FSDP   an all-gather of the parameters before the forward and again before the backward
           (pygpu gathers each unit when it runs: not hidden), and a reduce-scatter of the
           gradients, hidden behind the rest of backward but for the last unit's
Gradient accumulation over k micro-batches reduces once per k of them. Throughput is global
samples per second; the scaling efficiency is throughput(N) / (N throughput(1))."""
import json
import math
from dataclasses import asdict, dataclass, field


@dataclass
class LinkProfile:
    """One link between devices: seconds for a message = alpha_s + bytes / bandwidth_bps."""
    name: str
    alpha_s: float
    bandwidth_bps: float        # bytes per second, one direction
    source: str = ""
    measured: bool = False

    def seconds(self, nbytes, messages=1):
        return messages * self.alpha_s + nbytes / self.bandwidth_bps


# Datasheet figures (one direction, per device), and a typical message latency for each.
LINKS = {
    "nvlink": LinkProfile("NVLink 4 (H100 SXM)", 3e-6, 450e9,
                          "NVIDIA H100 datasheet: 900 GB/s bidirectional NVLink per GPU; ~3 us "
                          "per NCCL message"),
    "pcie": LinkProfile("PCIe Gen5 x16", 5e-6, 64e9,
                        "PCI-SIG Gen5 x16: 128 GB/s bidirectional; ~5 us per message"),
    "infiniband": LinkProfile("InfiniBand NDR 400", 5e-6, 50e9,
                              "NVIDIA ConnectX-7 NDR: 400 Gb/s per port; ~5 us per NCCL message"),
    "ethernet": LinkProfile("Ethernet 100 GbE (TCP)", 25e-6, 12.5e9,
                            "IEEE 802.3 100GBASE: 100 Gb/s; ~25 us per TCP message"),
}


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
def all_reduce_time(nbytes, p, link, algorithm="best"):
    """Seconds of an all-reduce of nbytes over p ranks on `link` (ring, tree, rhd, or best)."""
    if p <= 1:
        return 0.0
    a, b = link.alpha_s, 1.0 / link.bandwidth_bps
    t = {"ring": 2 * (p - 1) * a + 2 * (p - 1) / p * nbytes * b,
         "tree": 2 * _log2(p) * (a + nbytes * b),
         "rhd": 2 * _log2(p) * a + 2 * (p - 1) / p * nbytes * b}
    return min(t.values()) if algorithm == "best" else t[algorithm]


def shard_time(nbytes, p, link):
    """A ring reduce-scatter or all-gather of a tensor of nbytes (whole) over p ranks."""
    if p <= 1:
        return 0.0
    return (p - 1) * link.alpha_s + (p - 1) / p * nbytes / link.bandwidth_bps


def broadcast_time(nbytes, p, link):
    if p <= 1:
        return 0.0
    return _log2(p) * (link.alpha_s + nbytes / link.bandwidth_bps)


# -- on a cluster -----------------------------------------------------------------------------
def cluster_all_reduce(nbytes, n, cluster, algorithm="best"):
    """Hierarchical all-reduce over n devices (NCCL's shape when there are several nodes)."""
    g = min(n, cluster.devices_per_node)
    nodes = math.ceil(n / g)
    if nodes == 1:
        return all_reduce_time(nbytes, n, cluster.intra, algorithm)
    inter = LinkProfile(cluster.inter.name, cluster.inter.alpha_s, cluster.inter.bandwidth_bps * g)
    return (2 * shard_time(nbytes, g, cluster.intra)
            + all_reduce_time(nbytes / g, nodes, inter, algorithm))


def cluster_shard(nbytes, n, cluster):
    """Reduce-scatter (or all-gather) of a whole tensor of nbytes over n devices, hierarchical."""
    g = min(n, cluster.devices_per_node)
    nodes = math.ceil(n / g)
    if nodes == 1:
        return shard_time(nbytes, n, cluster.intra)
    inter = LinkProfile(cluster.inter.name, cluster.inter.alpha_s, cluster.inter.bandwidth_bps * g)
    return shard_time(nbytes, g, cluster.intra) + shard_time(nbytes / g, nodes, inter)


# -- a training step --------------------------------------------------------------------------
@dataclass
class StepModel:
    """What one device does per step at its batch: compute_s (forward + backward, measured),
    optimizer_s (the step), param_bytes (of the model: the gradients are as many), bucket_bytes
    (DDP's cap), units (FSDP's), staging (a LinkProfile between device and host each reduced
    byte crosses twice, e.g. the sim link model, or None), backward_fraction (of compute_s)."""
    compute_s: float
    param_bytes: float
    optimizer_s: float = 0.0
    batch_per_device: int = 1
    bucket_bytes: float = 25 * 2**20
    units: int = 1
    backward_fraction: float = 2.0 / 3.0
    staging: LinkProfile = None
    optimizer_state_per_param: float = 2.0   # Adam: two moments
    buckets: list = None                     # DDP's bucket sizes in bytes, when known
    meta: dict = field(default_factory=dict)

    def _stage(self, nbytes, messages=1):
        """Host staging of a device tensor's collective (sim): nbytes cross the device link
        in `messages` transfers (a reduction: out and back, 2 nbytes in 2 transfers)."""
        return 0.0 if self.staging is None else self.staging.seconds(nbytes, messages)

    def _buckets(self):
        if self.buckets:
            return [float(b) for b in self.buckets]
        nb = max(1, math.ceil(self.param_bytes / self.bucket_bytes))
        return [self.param_bytes / nb] * nb

    def predict(self, n, cluster, strategy="ddp", accumulate=1, algorithm="best"):
        """{step_s, comm_s, exposed_s, throughput, efficiency's ingredients} on n devices."""
        P = float(self.param_bytes)
        fwd = self.compute_s * (1 - self.backward_fraction)
        bwd = self.compute_s * self.backward_fraction
        compute = accumulate * self.compute_s
        opt = self.optimizer_s
        if strategy in ("ddp", "zero"):
            each = [cluster_all_reduce(b, n, cluster, algorithm) + self._stage(2 * b, 2)
                    for b in self._buckets()]
            reduce, last = sum(each), each[-1]
            comm, exposed = reduce, max(last, reduce - bwd)
            if strategy == "zero":  # each rank's updated share to every rank
                gather = cluster_shard(P, n, cluster) + self._stage(P + P / n, 2)
                comm, exposed = comm + gather, exposed + gather
                opt = opt / n
        elif strategy == "fsdp":
            u = max(1, self.units)
            one = cluster_shard(P / u, n, cluster) + self._stage(P / u * (1 + 1 / n), 2)
            gather = scatter = u * one
            comm = 2 * gather + scatter
            exposed = 2 * gather + max(one, scatter - bwd)
            opt = opt / n
        else:
            raise ValueError(f"strategy {strategy!r}: ddp, zero or fsdp")
        if n <= 1:
            comm = exposed = 0.0
        step = compute + exposed + opt
        samples = n * self.batch_per_device * accumulate
        return {"devices": n, "strategy": strategy, "step_s": step, "compute_s": compute,
                "comm_s": comm, "exposed_s": exposed, "optimizer_s": opt,
                "throughput": samples / step}

    def memory_bytes(self, n, strategy="ddp"):
        """Parameters, gradients and optimizer state one device holds."""
        P, s = float(self.param_bytes), self.optimizer_state_per_param
        if strategy == "ddp":
            return P * (2 + s)
        if strategy == "zero":
            return P * 2 + P * s / n
        return P * (2 + s) / n + 2 * P / max(1, self.units)  # fsdp: shards + one unit whole

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


def communication_dominates(rows):
    """The first device count whose exposed communication exceeds its compute (or None)."""
    for row in rows:
        if row["exposed_s"] > row["compute_s"]:
            return row["devices"]
    return None


def fit_link(points, name="measured"):
    """A LinkProfile from measured ring all-reduce times: points [(p, nbytes, seconds)], least
    squares of seconds = 2 (p-1) alpha + 2 (p-1)/p n beta. Returns the link and the largest
    relative residual."""
    import numpy as np
    A = np.array([[2 * (p - 1), 2 * (p - 1) / p * n] for p, n, _ in points], dtype=float)
    y = np.array([t for _, _, t in points], dtype=float)
    w = 1.0 / y  # relative error: small messages count as much as large ones
    (alpha, beta), *_ = np.linalg.lstsq(A * w[:, None], y * w, rcond=None)
    alpha, beta = max(float(alpha), 1e-9), max(float(beta), 1e-15)
    link = LinkProfile(name, alpha, 1.0 / beta, "fitted to measured ring all-reduce times",
                       measured=True)
    pred = A @ np.array([alpha, beta])
    return link, float(np.max(np.abs(pred - y) / y))


def save_link(link, path):
    with open(path, "w") as f:
        json.dump(asdict(link), f, indent=1)


def load_link(name_or_path):
    if name_or_path in LINKS:
        return LINKS[name_or_path]
    with open(name_or_path) as f:
        return LinkProfile(**json.load(f))
