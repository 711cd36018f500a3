# test_cuda_emulated_ordering.py - issue 29's ordering defects 4, 5 and 8, on the emulated
# device (tests/cuda_emu/): the real plugin's host code and kernels over a stand-in runtime
# whose streams run on threads of their own. Each test widens the window its defect needs
# (PYGPU_CUDA_EMU_DELAY_US delays every stream item; pg_emu_set_call_delay_us makes each
# enqueueing call sleep on the host, so another thread's calls land inside it) and failed
# on the emulated device before its fix. Each runs in a fresh interpreter whose pygpu loads
# the emulated plugin (tests/cuda_emu/harness.py).
import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu"))
import harness  # noqa: E402

pytestmark = pytest.mark.skipif(harness.skip_reason() is not None,
                                reason=str(harness.skip_reason()))


@pytest.fixture(scope="module")
def plugin():
    return harness.build("current")


def _run(plugin, code, **env):
    r = harness.run(plugin, textwrap.dedent(code), **env)
    assert r.returncode == 0, f"on the emulated device:\n{r.stdout}\n{r.stderr}"
    return r.stdout


# A DLPack producer of CUDA memory, written with ctypes: its memory comes from the
# emulated runtime (as another library's cudaMalloc), and its deleter hands the memory
# back at once, as PyTorch's caching allocator does: the producer's next kernel may write
# it right away. Here the deleter fills it with 0xFF bytes (NaN), as that kernel would.
PRODUCER = """
import ctypes
import numpy as np
from pygpu import cuda

rt = ctypes.CDLL(cuda.PLUGIN)
rt.pg_emu_device_malloc.restype = ctypes.c_void_p
rt.pg_emu_device_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
CAPSULE_NAME = b"dltensor"
KDLCUDA, KDLFLOAT = 2, 2


class Producer:
    \"\"\"n float32 values on emulated cuda:0, handed out through a legacy DLPack capsule.\"\"\"

    def __init__(self, values):
        values = np.ascontiguousarray(values, dtype=np.float32)
        self.nbytes = values.nbytes
        self.ptr = rt.pg_emu_device_malloc(self.nbytes, 0)
        ctypes.memmove(self.ptr, values.ctypes.data, self.nbytes)
        self.shape = (ctypes.c_int64 * 1)(values.size)
        self.deleted = False
        self.deleter = DELETER(self._delete)
        self.managed = DLManagedTensor()
        self.managed.dl_tensor = DLTensor(self.ptr, DLDevice(KDLCUDA, 0), 1,
                                          DLDataType(KDLFLOAT, 32, 1), self.shape, None, 0)
        self.managed.deleter = self.deleter

    def _delete(self, managed):
        # the producer reuses its memory at once: 0xFF bytes are NaN as float32
        ctypes.memset(self.ptr, 0xFF, self.nbytes)
        self.deleted = True

    def __dlpack_device__(self):
        return (KDLCUDA, 0)

    def __dlpack__(self, stream=None, max_version=None, **kw):
        return ctypes.pythonapi.PyCapsule_New(ctypes.addressof(self.managed), CAPSULE_NAME, None)
"""


def test_dlpack_import_waits_for_its_kernels_before_the_deleter(plugin):
    """Defect 4: the storage of a CUDA tensor imported through DLPack called the producer's
    deleter as soon as its last reference went, while a kernel queued on the compute
    stream still read the memory: the producer had it back (and may have written it)
    before pygpu's read. The release now waits for the storage's pending work first."""
    _run(plugin, PRODUCER + """
import pygpu
n = 1 << 14
prod = Producer(np.ones(n, dtype=np.float32))
y = pygpu.from_dlpack(prod)
assert y.device.type == "cuda" and y.shape == (n,)
busy = pygpu.ones((64,), device="cuda")
for _ in range(30):            # keep the compute stream busy: the read below runs late
    busy = busy * 1.0
total = (y * 2.0).sum()        # queued: reads the producer's memory
del y                          # the last reference: the producer gets its memory back
assert prod.deleted, "the deleter was not called when the last reference went"
got = total.item()
assert got == 2.0 * n, f"the kernel read {got}: the producer had its memory back before it ran"
print("ok")
""", PYGPU_CUDA_EMU_DELAY_US=2000)


def test_a_write_waits_for_a_peer_read_recorded_beside_another_read(plugin):
    """Defect 5: a storage kept one read slot per queue role, shared by every device's
    compute stream. Two threads copying the same cuda:0 tensor at once, one to cuda:1
    (a peer read on cuda:1's compute stream) and one within cuda:0 (a read on cuda:0's),
    each ordered itself before the other had recorded its read; the later record took
    the shared slot and the peer read was forgotten. A later write on cuda:0 then did
    not wait for the peer copy, which read the new values. Slots are now per queue."""
    _run(plugin, """
        import ctypes, threading, time
        import numpy as np, pygpu
        from pygpu import cuda
        rt = ctypes.CDLL(cuda.PLUGIN)
        n = 1 << 12
        src = pygpu.tensor(np.arange(n, dtype=np.float32), device="cuda:0")
        local = pygpu.zeros((n,), device="cuda:0")
        busy = pygpu.ones((64,), device="cuda:1")
        for _ in range(80):           # cuda:1's compute stream: the peer copy runs late
            busy = busy * 1.0
        out = {}

        def peer():                   # a read of src on cuda:1's compute stream
            out["peer"] = src.to("cuda:1", non_blocking=True)

        def same_device():            # a read of src on cuda:0's compute stream
            local.copy_(src, non_blocking=True)

        rt.pg_emu_set_call_delay_us(100000)  # each enqueueing call takes 0.1 s on the host
        a = threading.Thread(target=peer)
        b = threading.Thread(target=same_device)
        a.start()
        time.sleep(0.03)              # b orders itself while a is inside its copy call
        b.start()
        a.join()
        b.join()
        rt.pg_emu_set_call_delay_us(0)
        src.mul_(0.0)                 # a write on cuda:0: must wait for both reads
        got = out["peer"].cpu().numpy()
        np.testing.assert_array_equal(local.cpu().numpy(), np.arange(n, dtype=np.float32))
        assert got[1] == 1.0 and got[-1] == n - 1, (
            f"the peer copy read {got[:4]}...: the write on cuda:0 did not wait for it")
        print("ok")
    """, PYGPU_CUDA_EMU_DELAY_US=5000)


# The NCCL group pygpu.distributed makes, over one rank (an MPI communicator of one,
# stood in for: a rank, a size and a broadcast), on emulated cuda:0.
ONE_RANK = """
import numpy as np, pygpu
from pygpu import cuda
from pygpu.distributed._nccl import NcclGroup


class OneRank:
    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1

    def bcast(self, value, root=0):
        return value


group = NcclGroup(OneRank(), 0)
"""


def test_nccl_collectives_on_one_communicator_are_serialized(plugin):
    """Defect 8: nothing serialized the collectives on one communicator, whose NCCL calls
    are not thread-safe (DDP's communication thread against an all_reduce of the main
    thread). The emulated NCCL refuses two threads inside a call on one communicator at
    once (ncclInvalidUsage); the communicator's lock keeps them apart."""
    _run(plugin, ONE_RANK + """
import ctypes, threading
rt = ctypes.CDLL(cuda.PLUGIN)
rt.pg_emu_set_call_delay_us(3000)   # each collective's enqueue takes 3 ms on the host
errors = []

def worker(k):
    try:
        for i in range(15):
            t = pygpu.full((256,), float(k * 100 + i), device="cuda:0")
            group.all_reduce(t, "sum")
            got = t.cpu().numpy()
            assert (got == k * 100 + i).all(), got[:4]
    except Exception as e:  # noqa: BLE001 - reported below
        errors.append(f"thread {k}: {e!r}")

threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
for th in threads:
    th.start()
for th in threads:
    th.join()
rt.pg_emu_set_call_delay_us(0)
assert not errors, errors
group.close()
print("ok")
""")


def test_nccl_collective_waits_on_the_device_not_the_host(plugin):
    """Defect 8: before each collective (each DDP bucket) the caller waited on the host
    for the tensor's pending writes, which syncs the whole compute stream. The comm stream
    now waits on the device, through an event, for the compute stream, every user stream
    and the copy stream. No host sync is counted, and the result is right while the
    producing kernels and a non-blocking upload are still queued."""
    _run(plugin, ONE_RANK + """
rng = np.random.default_rng(0)
x = rng.standard_normal(4096).astype(np.float32)
t = pygpu.tensor(x, device="cuda:0")
busy = pygpu.ones((64,), device="cuda:0")
for _ in range(20):                   # the compute stream is busy...
    busy = busy * 1.0
t = t * 2.0                           # ...and the bucket's last write runs late
host = pygpu.tensor(np.full(4096, 3.0, dtype=np.float32)).pin_memory()
u = host.to("cuda:0", non_blocking=True)   # written on the copy stream
before = pygpu.stats()
group.all_reduce(t, "sum")
group.all_reduce(u, "sum")
d = pygpu.stats() - before
assert d.syncs == 0, f"{d.syncs} host syncs for two collectives: each waited on the host"
np.testing.assert_array_equal(t.cpu().numpy(), x * 2.0)
np.testing.assert_array_equal(u.cpu().numpy(), np.full(4096, 3.0, dtype=np.float32))
group.close()
print("ok")
""", PYGPU_CUDA_EMU_DELAY_US=2000)
