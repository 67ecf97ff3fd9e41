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
