# test_cost.py - pygpu.cost: calibration, profiles, predict, explain, transfer_budget,
# and the call-site / round-trip records of track(call_sites=True) they read.
#
# Accuracy tests run on sim with the link model set to 10 us + 16 GB/s. Calibration
# there uses sizes up to 256 KiB: the sizes at which the simulated link, not this
# host's memcpy (~7 GB/s for large blocks), sets the time. Tests that assert on
# wall-clock are marked `timing` (skipped under sanitizers). Every test points the
# profile cache at its own tmp dir.
import json

import numpy as np
import pytest

import pygpu
from pygpu import cost

LINK = dict(latency_us=10.0, h2d_gbps=16.0, d2h_gbps=16.0)
SMALL_CAL = dict(max_bytes=256 << 10, matmul_ns=(32, 64, 128))


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "pygpu"


@pytest.fixture
def link_on(link_model_off):
    pygpu.sim.configure(**LINK)
    yield LINK


@pytest.fixture
def one_blas_thread():
    """On a loaded 2-core machine, BLAS threads spinning after a matmul starve the sim's
    copy thread, and the measured link time is then the scheduler's, not the link's."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1):
        yield


@pytest.fixture(scope="module")
def sim_profile():
    """A calibration of sim:0 under the link model (not cached: module-wide)."""
    pygpu.sim.configure(**LINK)
    try:
        return cost.calibrate("sim:0", cache=False, **SMALL_CAL)
    finally:
        pygpu.sim.configure()


# ---- calibration ---------------------------------------------------------------------
@pytest.mark.timing
@pytest.mark.parametrize("kind", ["h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned"])
def test_calibration_recovers_the_link_model(sim_profile, kind):
    ln = sim_profile.links[kind]
    assert ln.latency_s == pytest.approx(10e-6, rel=0.10), str(ln)
    assert ln.bandwidth_bps == pytest.approx(16e9, rel=0.10), str(ln)
    assert ln.fit_error < 0.10


def test_calibration_measures_the_device(sim_profile):
    p = sim_profile
    assert p.measured and p.device == "sim:0" and p.meta["sim_link"]["latency_us"] == 10.0
    assert [n for n, _ in p.matmul_gflops] == [32, 64, 128]
    assert all(g > 0 for _, g in p.matmul_gflops + p.host_matmul_gflops)
    gf = [g for _, g in p.matmul_gflops]
    assert gf == sorted(gf)  # throughput is kept non-decreasing in n
    assert p.launch_overhead_s > 0 and p.enqueue_overhead_s > 0 and p.elementwise_gbps > 0
    assert p.transfer_overhead_s >= 0


def test_calibrate_caches_per_device_and_link_and_recalibrate_refreshes(cache_in_tmp, link_on,
                                                                          monkeypatch):
    first = cost.calibrate("sim:0", max_bytes=1024, matmul_ns=(16,))
    files = list(cache_in_tmp.glob("profile-sim0-*.json"))
    assert len(files) == 1 and "10us" in files[0].name
    calls = []
    real = cost.calibrate.__globals__["_measure"]
    monkeypatch.setitem(cost.calibrate.__globals__, "_measure",
                        lambda *a: calls.append(a) or real(*a))
    again = cost.calibrate("sim:0", max_bytes=1024, matmul_ns=(16,))
    assert calls == [] and again.as_dict() == first.as_dict()  # from the cache
    cost.recalibrate("sim:0", max_bytes=1024, matmul_ns=(16,))
    assert len(calls) == 1
    pygpu.sim.configure()  # another link setting is another cache entry
    assert cost.cached_profile("sim:0") is None


def test_a_damaged_cache_file_is_measured_again(cache_in_tmp, link_on):
    cost.calibrate("sim:0", max_bytes=64, matmul_ns=(16,))
    (path,) = cache_in_tmp.glob("profile-sim0-*.json")
    path.write_text("{not json")
    assert cost.cached_profile("sim:0") is None
    assert cost.calibrate("sim:0", max_bytes=64, matmul_ns=(16,)).measured


@pytest.mark.parametrize("name, error", [("cpu", ValueError), ("sim:99", Exception),
                                         ("tpu:0", ValueError)])
def test_calibrate_rejects_devices_without_a_link(name, error):
    with pytest.raises(error):
        cost.calibrate(name, max_bytes=64)


@pytest.mark.parametrize("lat, bw, noise", [(10e-6, 16e9, 0.0), (2e-6, 50e9, 0.0), (30e-6, 5e9, 0.05)])
def test_fit_link(lat, bw, noise):
    rng = np.random.default_rng(0)
    sizes = [4 ** k for k in range(1, 15)]
    pts = [(s, (lat + s / bw) * (1 + noise * rng.uniform(-1, 1))) for s in sizes]
    ln = cost.fit_link(pts)
    tol = 1e-6 if noise == 0 else 0.15
    assert ln.latency_s == pytest.approx(lat, rel=tol)
    assert ln.bandwidth_bps == pytest.approx(bw, rel=tol)
    assert ln.fit_error <= noise * 2.5 + 1e-9


# ---- profiles ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["h100_pcie", "a100_pcie", "h100_sxm"])
def test_datasheet_profiles(name, tmp_path):
    p = cost.load_profile(name)
    assert not p.measured and "datasheet" in p.source.lower() and p.notes
    assert set(p.links) == {"h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned"}
    assert p.link("h2d", pinned=True).bandwidth_bps > p.link("h2d").bandwidth_bps
    t200 = p.round_trip_matmul_seconds(200)
    assert 10e-6 < t200 < 1e-3  # tens of microseconds: the link dominates a 200x200 round trip
    p.save(tmp_path / "p.json")
    assert cost.load_profile(tmp_path / "p.json").as_dict() == p.as_dict()
    host = cost.DeviceProfile("host", "cpu", True, "test", p.links,
                              host_matmul_gflops=[[64, 20.0], [4096, 50.0]])
    n = cost.crossover_n(p, host=host)
    assert n is not None and p.round_trip_matmul_seconds(n) < host.host_matmul_seconds(n)


def test_the_a100_link_is_slower_than_the_h100s():
    a, h = cost.load_profile("a100_pcie"), cost.load_profile("h100-pcie")
    assert a.transfer_seconds("h2d", 1 << 30) > h.transfer_seconds("h2d", 1 << 30)


@pytest.mark.parametrize("content, message", [
    (None, "no profile"), ("{not json", "not a DeviceProfile"),
    ('{"name": "x", "links": {}}', "links"),
])
def test_bad_profiles_say_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=message):
        cost.load_profile(str(path) if content is not None else "no_such_gpu")


def test_crossover_needs_host_figures_for_a_datasheet_profile():
    with pytest.raises(ValueError, match="host"):
        cost.crossover_n("h100_pcie")


# ---- call sites and round trips -------------------------------------------------------
def _round_trip_scenario(a):
    d = pygpu.tensor(a, device="sim:0")
    back = d.to("cpu")
    return back.to("sim:0")  # the same bytes, back where they were


def _changed_scenario(a):
    d = pygpu.tensor(a, device="sim:0")
    back = (d * 2).to("cpu")
    return back.to("sim:0")  # other bytes: not a round trip


def _reupload_scenario(a):
    pygpu.tensor(a, device="sim:0")
    return pygpu.tensor(a, device="sim:0")  # sent twice, never brought back


@pytest.mark.parametrize("scenario, flags", [
    (_round_trip_scenario, [(False, False), (False, False), (True, True)]),
    (_changed_scenario, [(False, False), (False, False), (False, False)]),
    (_reupload_scenario, [(False, False), (False, True)]),
])
def test_round_trips_are_flagged(scenario, flags, rng):
    a = rng.standard_normal((50, 50)).astype(np.float32)
    with pygpu.track(call_sites=True) as t:
        scenario(a)
    assert [(x.round_trip, x.resend) for x in t.transfers_log] == flags
    assert all(x.call_site.startswith("test_cost.py:") for x in t.transfers_log)
    assert [x.nbytes for x in t.transfers_log] == [a.nbytes] * len(flags)


@pytest.mark.parametrize("action, trigger", [
    (lambda d: d.sum().item(), "item"), (lambda d: repr(d), "repr"),
    (lambda d: d.tolist(), "tolist"), (lambda d: np.asarray(d), "array"),
    (lambda d: d.cpu(), "explicit"),
])
def test_call_sites_name_the_line_and_trigger(action, trigger):
    d = pygpu.ones(3, device="sim:0")
    with pygpu.track(call_sites=True) as t:
        action(d)
    (x,) = [x for x in t.transfers_log if x.direction == "d2h"]
    assert x.trigger == trigger and x.implicit == (trigger != "explicit")
    assert x.call_site.startswith("test_cost.py:") and x.src == "sim:0" and x.dst == "cpu"


def test_call_sites_are_off_by_default_and_after_the_block():
    d = pygpu.ones(3, device="sim:0")
    with pygpu.track() as plain:
        d.cpu()
    assert plain.transfers_log is None and plain.d2h_count == 1
    with pygpu.track(call_sites=True) as outer:
        with pygpu.track(call_sites=True) as inner:
            d.cpu()
        d.cpu()
    d.cpu()  # after both blocks: recorded by neither
    assert len(inner.transfers_log) == 1 and len(outer.transfers_log) == 2


def test_a_broken_callback_does_not_fail_the_transfer(monkeypatch):
    import sys
    d = pygpu.ones(3, device="sim:0")
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type))
    pygpu._C._set_transfer_callback(lambda *a: 1 / 0)
    try:
        assert d.cpu().tolist() == [1.0, 1.0, 1.0]
    finally:
        pygpu._C._set_transfer_callback(None)
    assert seen == [ZeroDivisionError]
    with pytest.raises(TypeError, match="callable"):
        pygpu._C._set_transfer_callback(42)


# ---- predict -------------------------------------------------------------------------
def _seed_round_trip(a_np, b_np):
    (pygpu.tensor(a_np, device="sim:0") @ pygpu.tensor(b_np, device="sim:0")).to("cpu")


def _measured_link_seconds(fn, runs):
    """(last track record, link time of its transfers): each transfer's time is the best of
    `runs` identical runs, since on a loaded machine a preempted copy thread only adds time."""
    per_run = []
    for _ in range(runs):
        with pygpu.track(call_sites=True) as t:
            fn()
        per_run.append([x.link_seconds for x in t.transfers_log])
    assert len({len(r) for r in per_run}) == 1
    return t, sum(min(col) for col in zip(*per_run))


@pytest.mark.timing
def test_predicted_transfer_time_of_the_200x200_round_trip(sim_profile, link_on, rng,
                                                            one_blas_thread):
    a = rng.standard_normal((200, 200), dtype=np.float32)
    t, measured = _measured_link_seconds(lambda: _seed_round_trip(a, a), runs=5)
    p = cost.predict(t, sim_profile)
    assert p.transfer_seconds == pytest.approx(measured, rel=0.25), (str(p), measured)
    exact = 3 * 10e-6 + 3 * 160000 / 16e9  # what the link model is set to
    assert p.transfer_seconds == pytest.approx(exact, rel=0.10)


@pytest.mark.timing
def test_predicted_transfer_time_of_a_training_epoch(sim_profile, link_on, one_blas_thread):
    from pygpu.tools import mlp_demo
    x, y = mlp_demo.make_data(6 * 64)
    trainer = mlp_demo.make_trainer("sim:0")  # the weights resident, as between epochs

    def one_epoch():  # prefetch=0: blocking copies, whose link time the trace can see
        trainer.fit(x, y, epochs=1, batch_size=64, shuffle=False, prefetch=0, progress=False)
    t, measured = _measured_link_seconds(one_epoch, runs=7)
    assert t.h2d_count == 12 and t.d2h_count == 2  # x, y per step; loss and accuracy per epoch
    p = cost.predict(t, sim_profile)
    assert p.transfer_seconds == pytest.approx(measured, rel=0.25), (str(p), measured)


def test_predict_from_counters_alone_equals_per_transfer_pricing(rng):
    prof = cost.load_profile("a100_pcie")
    a = rng.standard_normal((64, 64), dtype=np.float32)
    with pygpu.track(call_sites=True) as detailed:
        _seed_round_trip(a, a)
    p1 = cost.predict(detailed, prof)
    from pygpu.cost.record import Record
    plain = Record(detailed.stats, detailed.wall_seconds, None, "sim:0")
    p2 = cost.predict(plain, prof)
    assert p1.transfer_seconds == pytest.approx(p2.transfer_seconds, rel=1e-9)
    nb = a.nbytes
    expect = 2 * prof.transfer_seconds("h2d", nb) + prof.transfer_seconds("d2h", nb)
    assert p1.transfer_seconds == pytest.approx(expect, rel=1e-9)
    assert p1.compute_seconds >= prof.launch_overhead_s  # at least the matmul's launch


def test_predict_runs_a_function_and_rejects_other_things(rng):
    a = rng.standard_normal((32, 32), dtype=np.float32)
    p = cost.predict(lambda: _seed_round_trip(a, a), "h100_pcie", flops=2 * 32 ** 3)
    assert p.h2d_seconds > 0 and p.d2h_seconds > 0 and p.compute_seconds > 0
    assert json.dumps(p.as_dict())
    with pytest.raises(TypeError, match="track"):
        cost.predict(42, "h100_pcie")


@pytest.mark.timing
def test_crossover_predicted_from_the_profile_matches_sim(link_on, rng, one_blas_thread):
    """Where the model is clear about which is faster (by 25% or more), sim agrees."""
    checked = 0
    if True:
        prof = cost.calibrate("sim:0", cache=False, max_bytes=256 << 10, matmul_ns=(32, 64, 128, 256))
        for n in (32, 64, 128, 256):
            a = rng.standard_normal((n, n), dtype=np.float32)
            da, db = pygpu.from_numpy(a), pygpu.from_numpy(a)

            def rt():
                (da.to("sim:0") @ db.to("sim:0")).to("cpu")
            rt()
            t_rt = min(_timed(rt) for _ in range(7))
            t_np = min(_timed(lambda: a @ a) for _ in range(7))
            ratio = prof.round_trip_matmul_seconds(n) / prof.host_matmul_seconds(n)
            if ratio > 1.25:
                assert t_rt > t_np, (n, ratio, t_rt, t_np)
                checked += 1
            elif ratio < 0.8:
                assert t_rt < t_np, (n, ratio, t_rt, t_np)
                checked += 1
        pred = cost.crossover_n(prof, lo=32, hi=256)
    assert checked >= 2
    if pred is not None:  # the predicted crossover is where sim's round trip wins
        a = rng.standard_normal((pred, pred), dtype=np.float32)
        assert prof.round_trip_matmul_seconds(pred) < prof.host_matmul_seconds(pred)


def _timed(fn):
    import time
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ---- explain -------------------------------------------------------------------------
def _rest_api_run(steps):
    w = np.ones((512, 1024), np.float32)  # 2 MiB: a heavy request
    wd = pygpu.tensor(w, device="sim:0")
    x_np = np.ones((8, 512), np.float32)
    losses = []
    for _ in range(steps):
        x = pygpu.tensor(x_np, device="sim:0")  # the same batch every step: re-uploads
        losses.append((x @ wd).sum().item())
    return wd.numpy(), losses


def test_explain_reports_the_rest_api_view(link_on, capsys):
    with pygpu.track(call_sites=True) as t:
        _rest_api_run(steps=5)
    rep = cost.explain(t, steps=5, top=3)
    out = capsys.readouterr().out
    assert out.strip() == rep.text
    assert rep.profile == "sim link model" and rep.modelled_transfer_seconds > 0
    assert [(r.direction, r.nbytes, r.transfers) for r in rep.heavy] == \
        [("h2d", 2 << 20, 1), ("d2h", 2 << 20, 1)]
    assert all(r.call_site.startswith("test_cost.py:") for r in rep.heavy)
    assert rep.light["requests"] == 10 and rep.light["by_kind"] == {"h2d explicit": 5, "d2h item": 5}
    assert rep.bytes["h2d"] == (2 << 20) + 5 * 8 * 512 * 4 and rep.counts["d2h"] == 6
    assert rep.implicit[0]["trigger"] == "item" and rep.implicit[0]["count"] == 5
    assert rep.resends and rep.resends[0]["count"] == 4 and not rep.round_trips
    assert "resident" in rep.verdict and "/step" in rep.verdict and "test_cost.py:" in rep.verdict
    assert rep.saving_seconds == pytest.approx(4 * (10e-6 + 16384 / 16e9), rel=1e-6)
    assert 0 <= rep.transfer_share <= 1.5
    assert json.loads(json.dumps(rep.as_dict()))["verdict"] == rep.verdict
    for part in ("heavy requests", "light requests", "implicit transfers", "re-uploads", "verdict"):
        assert part in rep.text


def test_explain_without_call_sites_or_profile(link_model_off):
    with pygpu.track() as t:
        pygpu.ones(4, device="sim:0").cpu()
    rep = cost.explain(t, quiet=True)
    assert rep.profile is None and rep.modelled_transfer_seconds is None
    assert "call_sites=True" in rep.text and "calibrate" in rep.text and rep.heavy == []


def test_explain_flags_round_trips_in_its_verdict(link_on, rng):
    a = rng.standard_normal((100, 100)).astype(np.float32)
    with pygpu.track(call_sites=True) as t:
        for _ in range(3):
            _round_trip_scenario(a)
    rep = cost.explain(t, "h100_pcie", quiet=True)
    assert rep.round_trips and "round trips" in rep.verdict and not rep.heavy


# ---- transfer_budget -----------------------------------------------------------------
def test_a_run_within_budget_passes():
    with pygpu.transfer_budget(h2d_count=1, d2h_count=1, h2d_bytes=16, d2h_bytes=16) as t:
        d = pygpu.tensor([1.0, 2.0], device="sim:0")
        d.cpu()
    assert t.h2d_count == 1


@pytest.mark.parametrize("limits, body, broken", [
    (dict(h2d_count=1), lambda: [pygpu.ones(2).to("sim:0") for _ in range(3)], "h2d_count 3 > 1"),
    (dict(d2h_bytes=4), lambda: pygpu.ones(8, device="sim:0").cpu(), "d2h_bytes 32 > 4"),
    ({}, lambda: pygpu.ones(2, device="sim:0").sum().item(), "implicit 1 > 0"),
])
def test_exceeding_the_budget_raises_with_the_explain_report(limits, body, broken):
    with pytest.raises(pygpu.TransferBudgetError) as info:
        with pygpu.transfer_budget(**limits):
            body()
    msg = str(info.value)
    assert msg.startswith("transfer budget exceeded: " + broken)
    assert "pygpu.cost.explain" in msg and "test_cost.py:" in msg and "verdict" in msg
    assert isinstance(info.value, AssertionError) and info.value.report.verdict in msg


def test_the_budget_lets_the_blocks_own_error_through():
    with pytest.raises(KeyError):
        with pygpu.transfer_budget(h2d_count=0):
            pygpu.ones(2).to("sim:0")
            raise KeyError("mine")


@pytest.mark.parametrize("bad", [dict(h2d_count=-1), dict(d2h_bytes=1.5), dict(implicit=True)])
def test_budget_arguments_are_checked(bad):
    with pytest.raises(ValueError, match="non-negative int"):
        pygpu.transfer_budget(**bad)


def test_explain_a_trainer_run_shows_two_heavy_requests_and_light_ones(link_on):
    from pygpu.tools import mlp_demo
    with pygpu.track(call_sites=True) as t:
        mlp_demo.train("sim:0", steps=4, prefetch=0)
    rep = cost.explain(t, steps=4, quiet=True)
    assert [r.direction for r in rep.heavy] == ["h2d", "d2h"]  # weights in, weights out
    assert all("mlp_demo.py:" in r.call_site and r.transfers == 4 for r in rep.heavy)
    assert rep.light["by_kind"] == {"h2d explicit": 4, "d2h item": 1}  # (x, y) per step; reads
    assert rep.light["transfers"] == 4 * 2 + 2 and not rep.round_trips


# ---- calibration is robust to outliers

def test_calibration_takes_the_median_of_repeats_and_rejects_outliers():
    from pygpu.cost.calibrate import robust_median
    # one repeat descheduled for 5 ms among 20 us copies: the median is the copies'
    assert robust_median([20e-6, 21e-6, 19e-6, 5e-3, 20e-6, 20.5e-6, 19.5e-6]) == pytest.approx(20e-6, rel=0.03)
    # a whole size measured while the machine was busy (the loaded calibration
    # came out 14% low): the fit through the other sizes still recovers 10 us + 16 GB/s
    sizes = [4 ** k for k in range(1, 13)]
    pts = [(b, 10e-6 + b / 16e9) for b in sizes]
    pts[8] = (pts[8][0], pts[8][1] * 1.6)
    pts[10] = (pts[10][0], pts[10][1] * 1.4)
    ln = pygpu.cost.fit_link(pts)
    assert ln.latency_s == pytest.approx(10e-6, rel=0.02) and ln.bandwidth_bps == pytest.approx(16e9, rel=0.02)
    assert ln.fit_error < 0.01
