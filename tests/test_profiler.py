# test_profiler.py - pygpu.profiler on every device (cpu, sim, and cuda when present, the
# emulated device included): torch.profiler's API, one event per op with its device,
# shapes, dtypes, host and device time, transfers with their bytes, the table, the Chrome
# trace, record_function and the schedule's windows. The kernel choices on cuda are
# asserted on the emulated device in tests/test_profiler_kernels.py.
import json

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                            schedule, tensorboard_trace_handler)

from _helpers import to_device

BOTH = [ProfilerActivity.CPU, ProfilerActivity.CUDA]


def _norm(device):
    return "cpu" if device == "cpu" else str(pygpu.device(device))


def test_one_event_per_op_with_shapes_dtypes_and_times(device):
    x = to_device(np.arange(12, dtype=np.float32).reshape(3, 4), device)
    with profile(activities=BOTH, record_shapes=True) as prof:
        y = (x * 2.0 + x).sum(axis=1)
    ops = [e for e in prof.events() if e.kind == "op"]
    assert [e.name for e in ops] == ["multiply", "add", "sum"]
    for e in ops:
        assert e.device == _norm(device)
        assert e.cpu_time_total >= 0
        assert e.device_time_total is not None and e.device_time_total >= 0, e
        assert e.input_dtypes[-1] == "float32"
    assert ops[1].input_shapes == [[3, 4], [3, 4], [3, 4]]  # x * 2 + x: two inputs, the output
    assert ops[2].input_shapes[0] == [3, 4]
    np.testing.assert_allclose(y.numpy(), (np.arange(12).reshape(3, 4) * 3).sum(1))
    # outside the profile nothing is recorded
    (x + 1).sum()
    assert len([e for e in prof.events() if e.kind == "op"]) == 3


def test_transfers_are_events_with_their_bytes(device):
    a = np.ones((16, 8), dtype=np.float64)
    with profile(activities=BOTH, record_shapes=True) as prof:
        t = pygpu.tensor(a).to(device)
        back = t.numpy()
    assert back.sum() == 128
    copies = [e for e in prof.events() if e.kind == "copy"]
    if device == "cpu":
        assert copies == []  # nothing crossed a link
        return
    h2d = [e for e in copies if e.name == "Memcpy HtoD"]
    d2h = [e for e in copies if e.name == "Memcpy DtoH"]
    assert [e.h2d_bytes for e in h2d] == [a.nbytes] and [e.d2h_bytes for e in d2h] == [a.nbytes]
    assert h2d[0].input_shapes == [[16, 8]] and h2d[0].input_dtypes == ["float64"]
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["Memcpy HtoD"].h2d_bytes == a.nbytes


def test_table_sorts_and_names_its_columns(device):
    x = to_device(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32), device)
    with profile(activities=BOTH, record_shapes=True) as prof:
        for _ in range(3):
            x = (x @ x).tanh()
    avg = prof.key_averages()
    rows = {r.key: r for r in avg}
    assert rows["matmul"].count == 3 and rows["tanh"].count == 3
    text = avg.table(sort_by="cpu_time_total", row_limit=5)
    assert "Name" in text and "# of Calls" in text and "CPU total" in text
    assert ("Self CUDA" in text) == device.startswith("cuda")
    by_calls = prof.key_averages(group_by_input_shape=True).table(sort_by="count")
    assert "[[64, 64], [64, 64]]" in by_calls  # Input Shapes column (tanh's input and output)
    with pytest.raises(ValueError, match="sort_by"):
        avg.table(sort_by="speed")


def test_chrome_trace_is_trace_event_json(device, tmp_path):
    x = to_device(np.ones((8, 8), dtype=np.float32), device)
    with profile(activities=BOTH) as prof:
        with record_function("my block"):
            y = (x + 1).relu()
        y.numpy()
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    trace = json.loads(open(path).read())
    events = trace["traceEvents"]
    assert events and all(e["ph"] == "X" and e["dur"] > 0 and e["ts"] >= 0 for e in events)
    names = {e["name"] for e in events}
    assert {"add", "relu", "my block"} <= names
    user = [e for e in events if e["cat"] == "user_annotation"]
    assert [e["name"] for e in user] == ["my block"]
    ops = [e for e in events if e["cat"] == "cpu_op"]
    assert all(e["args"]["device"] == _norm(device) for e in ops)
    # the device's work on a lane of its own (cuda: each kernel; cpu and sim: the op)
    lanes = [e for e in events if e["cat"] == "kernel"]
    assert lanes and all(str(e["pid"]).startswith(_norm(device)) for e in lanes)
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["my block"].count == 1 and rows["my block"].cpu_time_total > 0


def test_schedule_records_the_active_steps(device, tmp_path):
    sched = schedule(wait=1, warmup=1, active=2, repeat=2)
    assert [sched(i) for i in range(9)] == [
        ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.WARMUP,
        ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE]
    windows = []

    def ready(prof):
        windows.append(sorted({int(e.input_shapes[0][0]) for e in prof.events()
                               if e.name == "exp"}))

    with profile(activities=BOTH, record_shapes=True, schedule=sched, on_trace_ready=ready) as p:
        for step in range(10):
            to_device(np.zeros(step + 1, dtype=np.float32), device).exp()
            p.step()
    # each window holds its two active steps' ops (shapes step + 1), not the warm-up's
    assert windows == [[3, 4], [7, 8]]
    handler_dir = tmp_path / "tb"
    with profile(schedule=schedule(wait=0, warmup=0, active=1, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(handler_dir))) as p:
        for _ in range(2):
            to_device(np.ones(3), device).neg()
            p.step()
    (written,) = handler_dir.iterdir()
    assert json.loads(written.read_text())["traceEvents"]


def test_a_training_step_shows_its_fused_ops(device):
    pygpu.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1)
    x = to_device(np.random.default_rng(1).standard_normal((8, 20)).astype(np.float32), device)
    yt = to_device(np.arange(8) % 4, device)
    with profile(activities=BOTH) as prof:
        opt.zero_grad()
        nn.CrossEntropyLoss()(model(x), yt).backward()
        opt.step()
    names = [e.name for e in prof.events()]
    assert names.count("linear") == 2 and names.count("linear_backward") == 2, names
    assert all(e.device == _norm(device) for e in prof.events() if e.kind == "op")


def test_activities_and_errors():
    x = pygpu.ones(4)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        x.neg()
    (e,) = prof.events()
    assert e.device_time_total is None and e.cpu_time_total >= 0
    with pytest.raises(TypeError, match="ProfilerActivity"):
        profile(activities=["cuda"])
    with pytest.raises(ValueError, match="active"):
        schedule(wait=1, warmup=0, active=0)
    with profile():
        with pytest.raises(RuntimeError, match="another profile"):
            with profile():
                pass
    with pytest.warns(UserWarning, match="profile_memory"):
        profile(profile_memory=True)
