"""Smoke tests of the benchmark scripts at tiny sizes: they run and write what docs/performance.md cites."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_round_quick(tmp_path) -> None:
    assert load("bench_round").main(["--quick", "--out", str(tmp_path)]) == 0
    with open(tmp_path / "bench_round.csv") as f:
        rows = list(csv.DictReader(f))
    modes = {(r["jobs"], r["mode"]) for r in rows}
    assert {("64", m) for m in ("fast", "lp", "exact", "plain-round")} <= modes
    for r in rows:
        if r["mode"] == "fast" and r["value_loss"]:
            assert -1e-9 <= float(r["value_loss"]) <= 0.02  # the quality target
    assert "Speed-up of `fast` over `exact`" in (tmp_path / "bench_round.md").read_text()


def test_bench_simulation_small(tmp_path) -> None:
    mod = load("bench_simulation")
    assert mod.main(["--jobs", "12", "--jobs-per-hour", "30", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "bench_simulation.md").read_text()
    assert "12 of 12 jobs finished" in text
