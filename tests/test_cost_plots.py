# test_cost_plots.py - python -m pygpu.tools.plot_benchmarks: pytest-benchmark JSON in, PNG out.
import json

import pytest

from pygpu.tools import plot_benchmarks


def _run(tmp_path, benchmarks):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"benchmarks": benchmarks}))
    return path


def _bench(name, group, median, n=None):
    return {"name": name, "group": group, "stats": {"median": median},
            "extra_info": {} if n is None else {"n": n}}


def test_seed_groups_become_lines_and_others_bars(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rows = [_bench(f"test_{m}[n{n}]", f"seed: matmul n={n}", t * n, n)
            for n in (64, 200) for m, t in (("numpy", 1e-6), ("resident", 2e-6), ("round_trip", 5e-6))]
    rows.append(_bench("test_sim_add", "add 100 float32", 3e-6))
    run = _run(tmp_path, rows)
    assert sorted(plot_benchmarks.load([run]))[:1] == [("add 100 float32", "sim_add", None, 3e-6)]
    out = tmp_path / "bench.png"
    assert plot_benchmarks.main([str(run), "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG" and "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("content, message", [("{", "cannot read"), ('{"x": 1}', "not pytest-benchmark"),
                                              ('{"benchmarks": []}', "no benchmarks")])
def test_bad_input_says_what_is_wrong(tmp_path, content, message):
    pytest.importorskip("matplotlib")
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SystemExit, match=message):
        plot_benchmarks.main([str(path), "-o", str(tmp_path / "x.png")])
