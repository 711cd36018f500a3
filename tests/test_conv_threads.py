# test_conv_threads.py - convolution's split over the cpu device's pool (issue 45), against
# torch at 1, 2 and 3 threads: the even chunks of small output planes (a batch that the
# unrolled input's size cap once cut into 28 + 4 samples), the weight gradient's partial sums
# (summed over the pool in task order), odd batches and channels, batch 1, stride 2 and
# groups; and PYGPU_NODE_BUSY's table (csrc/backends/cpu/cpu_busy.c).
import os
import subprocess
import sys

import numpy as np
import pytest

import pygpu
from pygpu.nn import functional as F
from _helpers import check_against_torch

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(45)

# (name, x shape, w shape, kwargs); float64, so the unrolled input's cap (8 MiB a thread)
# binds at K = 256 * 9, 4 x 4 outputs: 28 samples a chunk before the chunks were evened
CASES = [
    ("few-chunks-odd-batch", (33, 256, 4, 4), (4, 256, 3, 3), dict(padding=1)),
    ("few-chunks-batch-32", (32, 256, 4, 4), (3, 256, 3, 3), dict(padding=1)),
    ("odd-channels-stride-2", (5, 7, 9, 9), (3, 7, 3, 3), dict(stride=2, padding=1)),
    ("batch-1", (1, 6, 8, 8), (5, 6, 3, 3), dict(padding=1)),
    ("groups-2", (6, 8, 6, 6), (6, 4, 3, 3), dict(groups=2, padding=1)),
    ("groups-3-1x1", (7, 9, 5, 5), (6, 3, 1, 1), dict(groups=3)),
]


@pytest.fixture
def threads():
    before = pygpu.get_num_threads()
    yield pygpu.set_num_threads
    pygpu.set_num_threads(before)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("name,xs,ws,kw", CASES, ids=[c[0] for c in CASES])
def test_conv2d_and_its_gradients_match_torch_at_each_thread_count(threads, n, name, xs, ws,
                                                                    kw):
    threads(n)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    b = rng.standard_normal(ws[0])
    check_against_torch("cpu", lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw),
                        [x, w, b], rtol=1e-9, atol=1e-9)


def test_same_thread_count_gives_the_same_bits(threads):
    """The chunks and the weight gradient's partials depend on the shape and the thread
    count only, never on timing."""
    threads(2)
    x = pygpu.tensor(rng.standard_normal((33, 256, 4, 4)).astype(np.float32),
                     requires_grad=True)
    w = pygpu.tensor(rng.standard_normal((8, 256, 3, 3)).astype(np.float32),
                     requires_grad=True)
    runs = []
    for _ in range(3):
        x.grad = w.grad = None
        y = F.conv2d(x, w, padding=1)
        (y * y).sum().backward()
        runs.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert np.array_equal(a, b)


def test_node_busy_table_names_each_node_kind():
    code = ("import numpy as np, pygpu\n"
            "from pygpu.nn import functional as F\n"
            "pygpu.set_num_threads(2)\n"
            "x = pygpu.tensor(np.ones((32, 64, 16, 16), np.float32), requires_grad=True)\n"
            "w = pygpu.tensor(np.ones((64, 64, 3, 3), np.float32), requires_grad=True)\n"
            "F.conv2d(x, w, padding=1).sum().backward()\n")
    # pygpu's own kernels' split over the pool is what this checks (oneDNN's slices are
    # test_conv_dnnl.py's), so its own kernels are pinned
    env = dict(os.environ, PYGPU_NODE_BUSY="2", PYGPU_CONV="own")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0].startswith("pygpu busy cores per node kind (cpu device, 2 threads")
    rows = {ln.split()[0] + " " + ln.split()[1]: ln.split() for ln in lines[2:]}
    for key in ("conv2d 32x64x16x16", "conv2d_weight_backward 64x64x3x3",
                "conv2d_input_backward 32x64x16x16"):
        calls, serial, cpu, crit, cores, idle = rows[key][2:8]
        assert int(calls) == 1 and int(serial) == 0  # each ran on the pool
        assert float(cpu) > 0 and 0 < float(cores) <= 2.0
        assert abs(2 * float(crit) - float(cpu) - float(idle)) < 0.2
    assert lines[-1].startswith("all nodes")
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert quiet.returncode == 0 and "busy cores" not in quiet.stderr
