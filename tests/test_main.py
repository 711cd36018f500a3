# test_main.py - the main job, `python -m pygpu`: its --json schema, its table, the
# crossover line, the MLP training's heavy and light requests, --plot, and its errors.
# Sizes and steps are kept small here; the job's own defaults are timed in the README.
import json

import pytest

import pygpu
from pygpu.tools import main_job

FAST = ["-n", "32,64", "--number", "2", "--steps", "2"]
# the tests of sim's output name sim:0: the default is cuda:0 where a GPU is present
# (the first H200 run, and the emulated device); test_the_default_device checks the choice
SIM = FAST + ["--device", "sim:0"]


SPREAD_LIMIT = main_job.UNSTABLE_SPREAD  # the job's own, before the fixture below lifts it
RATIO_LIMIT = main_job.SIM_RATIO_LIMIT


@pytest.fixture(autouse=True)
def quick_calibration(tmp_path, monkeypatch, link_model_off):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # the spread rule is tested on a fake clock below; the tests that time for real must not
    # depend on how loaded the machine is (a loaded one would re-measure, then mark rows)
    monkeypatch.setattr(main_job, "UNSTABLE_SPREAD", float("inf"))
    monkeypatch.setattr(main_job, "SIM_RATIO_LIMIT", float("inf"))
    monkeypatch.setattr(main_job, "CAL_MAX_BYTES", 16 << 10)
    monkeypatch.setattr(main_job, "CAL_MATMUL_NS", (16, 32, 64))


def run_json(capsys, *extra):
    assert main_job.main(FAST + ["--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


# (key path, type) the --json output promises
SCHEMA = [
    (("pygpu",), str), (("device",), str), (("link",), str), (("sim_link_model",), dict),
    (("profile", "name"), str), (("profile", "measured"), bool), (("profile", "source"), str),
    (("rows",), list), (("crossover", "measured_n"), (int, type(None))),
    (("crossover", "measured_after"), (int, type(None))),
    (("crossover", "predicted_n"), (int, type(None))), (("training", "steps"), int),
    (("training", "heavy"), list), (("training", "light"), dict), (("training", "verdict"), str),
    (("training", "loss"), float), (("seconds",), float),
]
ROW_SCHEMA = [("n", int), ("numpy_s", float), ("resident_s", float), ("round_trip_s", float),
              ("numpy_spread", float), ("resident_spread", float), ("round_trip_spread", float),
              ("numpy_calls", int), ("resident_calls", int), ("round_trip_calls", int),
              ("numpy_blocks", list), ("resident_blocks", list), ("round_trip_blocks", list),
              ("attempts", int), ("unstable", bool), ("doubt", (str, type(None))),
              ("predicted_resident_s", float), ("predicted_round_trip_s", float),
              ("speedup_resident", float), ("speedup_round_trip", float),
              ("resident_transfers", dict), ("round_trip_transfers", dict)]


@pytest.mark.parametrize("path, typ", SCHEMA, ids=[".".join(p) for p, _ in SCHEMA])
def test_json_schema(capsys, path, typ):
    out = run_json(capsys, "--profile", "h100_pcie", "--device", "sim:0")
    for key in path:
        out = out[key]
    assert isinstance(out, typ)


def test_json_rows_count_the_transfers(capsys):
    out = run_json(capsys, "--profile", "a100_pcie")
    assert out["device"] == "sim:0" or out["device"] == "cuda:0"
    assert out["profile"] == {"name": "NVIDIA A100 PCIe 80GB (datasheet)", "measured": False,
                              "source": pygpu.cost.load_profile("a100_pcie").source}
    assert [r["n"] for r in out["rows"]] == [32, 64]
    for row in out["rows"]:
        for key, typ in ROW_SCHEMA:
            assert isinstance(row[key], typ), key
        nb = 4 * row["n"] ** 2
        assert row["round_trip_transfers"] == {"h2d_count": 2, "h2d_bytes": 2 * nb,
                                               "d2h_count": 1, "d2h_bytes": nb}
        assert row["resident_transfers"] == {"h2d_count": 0, "h2d_bytes": 0, "d2h_count": 0,
                                             "d2h_bytes": 0}
        assert row["speedup_round_trip"] == pytest.approx(row["numpy_s"] / row["round_trip_s"])
    tr = out["training"]
    assert [h["direction"] for h in tr["heavy"]] == ["h2d", "d2h"]  # weights up, weights down
    assert all(h["nbytes"] > 1 << 20 and "mlp_demo.py" in h["call_site"] for h in tr["heavy"])
    assert tr["h2d_count"] == 4 + 2 * 2  # the weights (w1 b1 w2 b2), then x and y per step
    assert set(tr["light"]["by_kind"]) == {"h2d explicit", "d2h item"}  # batches up, loss back
    assert tr["implicit"] == {"item": 2}  # the epoch's loss and accuracy, read once each


def test_the_default_device(monkeypatch):
    for present, want in ((True, "cuda:0"), (False, "sim:0")):
        monkeypatch.setattr(pygpu.cuda, "is_available", lambda: present)
        dev, link = main_job.choose_device(None)
        assert dev == want
        assert ("no GPU here: simulated" in link) == (not present)
    assert main_job.choose_device("sim:0")[1].startswith("simulated, with the sim link model")


def test_the_table_the_crossover_and_the_training(capsys):
    assert main_job.main(SIM) == 0
    out = capsys.readouterr().out
    assert "sim link model on: 10 us + 16 GB/s" in out
    assert "prediction: sim:0 (simulated) (measured here)" in out
    assert "crossover (round trip beats NumPy): measured" in out and "predicted" in out
    assert "heavy request: h2d" in out and "heavy request: d2h" in out and "light requests:" in out
    table = [ln for ln in out.splitlines() if ln.strip(" !").startswith(("32 ", "64 "))]
    assert len(table) == 2 and all("h2d 2 (" in ln and "d2h 1 (" in ln for ln in table)
    assert pygpu.cost.cached_profile("sim:0") is not None  # calibrated once, then cached


def test_the_ci_invocation_still_works(capsys):
    assert main_job.main(["-n", "64", "--number", "5", "--steps", "1"]) == 0
    assert "64" in capsys.readouterr().out


def test_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "main.png"
    run_json(capsys, "--profile", "h100_pcie", "--plot", str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch, capsys, tmp_path):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SystemExit) as info:
        main_job.main(FAST + ["--plot", str(tmp_path / "x.png")])
    assert info.value.code == 2
    assert "pip install matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("argv, message", [
    (["-n", "0"], "positive"), (["--number", "0"], "positive"), (["--steps", "-1"], "non-negative"),
    (["--device", "cpu"], "compares a device"), (["--profile", "no_such_gpu"], "datasheet"),
    (["-n", "abc"], "invalid"),
])
def test_bad_options_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        main_job.main(argv)
    assert info.value.code == 2 and message in capsys.readouterr().err


class _FakeClock:
    """time.perf_counter for time_per_call: each timed call lasts the next duration given."""

    def __init__(self, durations):
        self.durations, self.now, self.calls = list(durations), 0.0, 0

    def perf_counter(self):
        self.calls += 1
        if self.calls % 2 == 0:  # the end of a call
            self.now += self.durations.pop(0)
        return self.now


@pytest.mark.parametrize("durations, median, iqr", [
    ([1.0, 1.02, 0.98, 10.0, 1.01, 0.99, 1.0], 1.0, 0.02),  # one 10x outlier (a 440% spread was seen)
    ([1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0], 1.0, 1.0),        # two regimes
])
def test_a_block_is_the_median_of_its_repeats(monkeypatch, durations, median, iqr):
    clock = _FakeClock(durations)
    monkeypatch.setattr(main_job, "time", clock)
    med, spread, calls = main_job.time_per_call(lambda: None, max_calls=len(durations),
                                                budget_s=1e9)
    assert calls == len(durations)
    assert med == pytest.approx(median)
    assert spread == pytest.approx(iqr, abs=0.011)


def test_a_block_stops_at_its_time_budget_after_a_few_calls(monkeypatch):
    monkeypatch.setattr(main_job, "time", _FakeClock([0.2] * 50))
    med, spread, calls = main_job.time_per_call(lambda: None, max_calls=10, budget_s=0.25)
    assert calls == main_job.MIN_CALLS and med == pytest.approx(0.2) and spread == pytest.approx(0, abs=1e-9)


@pytest.mark.parametrize("durations, median, spread", [
    ([1.0, 1.0, 1.0, 1.02, 1.0, 1.0, 1.0, 0.98, 1.0], 1.0, 0.0),  # three blocks agree
    ([1.0, 1.0, 9.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 1.0, 0.0),    # one slow call: its block's median shrugs
    ([1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0], 1.0, 1.0),    # a whole block at twice the time
    ([16.0, 16.0, 16.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 1.0, 15.0),  # issue 46's NumPy at n = 128
])
def test_a_figure_is_three_blocks_and_their_run_to_run_spread(monkeypatch, durations, median,
                                                              spread):
    monkeypatch.setattr(main_job, "time", _FakeClock(durations))
    fig = main_job.time_figure(lambda: None, max_calls=9, budget_s=1e9)
    assert fig["calls"] == 9 and len(fig["blocks"]) == main_job.BLOCKS == 3
    assert fig["s"] == pytest.approx(median)
    assert fig["spread"] == pytest.approx(spread, abs=0.03)


@pytest.fixture
def spread_rule(monkeypatch):
    """The job's own threshold (quick_calibration lifts it for the tests that time for real)."""
    monkeypatch.setattr(main_job, "UNSTABLE_SPREAD", SPREAD_LIMIT)
    monkeypatch.setattr(main_job, "SIM_RATIO_LIMIT", RATIO_LIMIT)
    assert main_job.MAX_ATTEMPTS == 3


def _fake_rows(spreads):
    """measure_size's `measure`: each call returns a row whose figures spread as given."""
    it = iter(spreads)

    def measure(n, dev, number, rng):
        sp = next(it)
        return {"n": n, "numpy_spread": 0.01, "resident_spread": sp, "round_trip_spread": 0.02,
                "tag": sp}
    return measure


@pytest.mark.parametrize("spreads, attempts, kept, unstable", [
    ([0.05], 1, 0.05, False),             # settled at once: measured once
    ([0.9, 0.1], 2, 0.1, False),          # wide, measured again, settled
    ([0.9, 0.4, 0.6], 3, 0.4, True),      # never settled: the narrowest kept, marked unstable
])
def test_a_wide_row_is_measured_again_then_marked(spread_rule, spreads, attempts, kept,
                                                  unstable):
    row = main_job.measure_size(64, "sim:0", 10, None, measure=_fake_rows(spreads))
    assert (row["attempts"], row["tag"], row["unstable"]) == (attempts, kept, unstable)


@pytest.mark.parametrize("numpy_ms, dev, doubt", [
    (1.0, "sim:0", None),             # NumPy and sim alike: the same CPU
    (2.5, "sim:0", None),             # NumPy's pool against sim's one thread: within reason
    (16.0, "sim:0", "16x apart"),     # issue 46: NumPy held at 16 ms in every block
    (16.0, "cuda:0", None),           # a real GPU may well be 16x faster
])
def test_on_sim_numpy_and_the_device_far_apart_is_doubted(spread_rule, numpy_ms, dev, doubt):
    row = {"numpy_s": numpy_ms * 1e-3, "resident_s": 1e-3, "numpy_spread": 0.05,
           "resident_spread": 0.05, "round_trip_spread": 0.05}
    got = main_job.row_doubt(row, dev)
    assert (got is None) if doubt is None else (doubt in got and "starved" in got)


def test_a_row_stuck_slow_in_every_block_is_measured_again_then_marked(spread_rule):
    def stuck(n, dev, number, rng):  # tight blocks, but NumPy 16x the device
        return {"n": n, "numpy_s": 16e-3, "resident_s": 1e-3, "numpy_spread": 0.02,
                "resident_spread": 0.02, "round_trip_spread": 0.02}
    row = main_job.measure_size(128, "sim:0", 10, None, measure=stuck)
    assert row["attempts"] == 3 and row["unstable"] and "16x apart" in row["doubt"]


def _row(n, sp, unstable=False, numpy_s=1e-3, round_trip_s=2e-3):
    return {"n": n, "numpy_s": numpy_s, "resident_s": 1e-3, "round_trip_s": round_trip_s,
            "numpy_spread": 0.02, "resident_spread": sp, "round_trip_spread": 0.05,
            "predicted_resident_s": 1e-3, "predicted_round_trip_s": 2e-3,
            "speedup_resident": 1.0, "speedup_round_trip": numpy_s / round_trip_s,
            "attempts": 3 if unstable else 1, "unstable": unstable,
            "round_trip_transfers": {"h2d_count": 2, "h2d_bytes": 1, "d2h_count": 1, "d2h_bytes": 1}}


def test_an_unstable_row_is_flagged_not_printed_as_figures(spread_rule, capsys):
    rows = [_row(64, 0.04), _row(128, 0.40, unstable=True, numpy_s=16e-3)]
    res = {"pygpu": "x", "device": "sim:0", "link": "l", "rows": rows,
           "crossover": {"measured_n": None, "measured_after": None, "predicted_n": None}}
    main_job.print_table(res, pygpu.cost.load_profile("h100_pcie"))
    lines = capsys.readouterr().out.splitlines()
    r64 = next(ln for ln in lines if ln.strip(" !").startswith("64 "))
    r128 = next(ln for ln in lines if ln.strip(" !").startswith("128 "))
    assert not r64.startswith("!") and "±4%" in r64 and "±2%" in r64 and "1.00x" in r64
    assert r128.startswith("!") and "unstable, not a figure" in r128 and "after 3 measurements" in r128
    assert "x |" not in r128 and "16.000" not in r128 and "8.00x" not in r128  # no figure at all
    assert any("1 row(s) marked ! never settled" in ln for ln in lines)


def test_the_crossover_leaves_unstable_rows_out():
    rows = [_row(64, 0.0), _row(128, 0.9, unstable=True, numpy_s=16e-3), _row(200, 0.0),
            _row(512, 0.0, numpy_s=3e-3)]
    assert main_job.measured_crossover(rows) == (512, 200)


def test_blas_threads_limits_both_pools(capsys):
    from threadpoolctl import threadpool_info  # a dependency of pygpu: setup.py's BASE_REQUIRES
    assert main_job.main(SIM + ["--blas-threads", "1"]) == 0
    assert "BLAS threads limited to 1" in capsys.readouterr().out
    # pygpu's OpenBLAS (scipy_openblas32) is one of the pools threadpoolctl sees
    assert any("scipy_openblas" in (p.get("filepath") or "") for p in threadpool_info())
