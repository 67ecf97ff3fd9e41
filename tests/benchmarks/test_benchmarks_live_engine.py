"""benchmarks/live_engine.py: the three engines get the same calls, and the kept LP finds each cold optimum."""

from __future__ import annotations

import csv

from tests._examples import load_benchmark

live_engine = load_benchmark("live_engine")


def test_quick_run_writes_the_table_with_equal_lp_optima(tmp_path):
    assert live_engine.main(["--quick", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "live_engine.csv")))
    assert [r["call"] for r in rows] == ["cold", "round", "event"]
    assert [int(r["calls"]) for r in rows] == [1, 2, 4]
    for r in rows:
        assert float(r["lp_difference"]) <= 1e-7  # the kept LP's optimum is the cold one
        assert float(r["incremental_ms"]) > 0 and float(r["full_ms"]) > 0 and float(r["priced_ms"]) > 0
        assert abs(float(r["ratio"]) - float(r["incremental_ms"]) / float(r["full_ms"])) < 0.01
    assert int(rows[0]["iterations"]) > 0
    text = (tmp_path / "live_engine.md").read_text()
    assert "| 256 | 128 | event | 4 |" in text


live_round_parts = load_benchmark("live_round_parts")


def test_parts_quick_run_times_every_part_and_restores_the_library(tmp_path):
    from fairshare.engine_rounds import KeptRound
    from fairshare.solvers.highs import IncrementalLP

    before = (KeptRound.problem, KeptRound.sync, IncrementalLP.run)
    assert live_round_parts.main(["--quick", "--out", str(tmp_path)]) == 0
    assert (KeptRound.problem, KeptRound.sync, IncrementalLP.run) == before  # the timers are gone
    text = (tmp_path / "live_round_parts.md").read_text()
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| part"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0].replace("&nbsp;", "").strip()] = [float(c) for c in cells[1:]]
    for part in ("plan", "sync", "problem", "KeptLP.solve", "HiGHS run", "from_columns"):
        assert all(v > 0 for v in rows[part]), part
    assert all(p >= k for p, k in zip(rows["plan"], rows["KeptLP.solve"]))  # a part takes less than the whole
    assert all(v >= 1 for v in rows["dual simplex iterations"])
    assert float(text.rsplit("optima: ", 1)[1].rstrip(".\n")) < 1e-6  # every variant reaches the same optimum
