"""Smoke tests of benchmarks/solver_scaling.py at ``--quick`` size."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from _examples import PNG, load_benchmark


@pytest.fixture(scope="module")
def scaling_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scaling")
    assert load_benchmark("solver_scaling").main(["--quick", "--out", str(out)]) == 0
    return out


def test_scaling_writes_every_output(scaling_out: Path) -> None:
    for name in ("solver_scaling.csv", "solver_scaling.md", "solver_scaling.png"):
        assert (scaling_out / name).stat().st_size > 0
    assert (scaling_out / "solver_scaling.png").read_bytes()[:8] == PNG


def test_scaling_rows_cover_every_size_and_method(scaling_out: Path) -> None:
    mod = load_benchmark("solver_scaling")
    with open(scaling_out / "solver_scaling.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(int(r["jobs"]), r["method"]) for r in rows} == {(n, m) for n in mod.QUICK_SIZES for m in mod.METHODS}
    for r in rows:
        if r["skipped"] == "1":
            assert r["status"] == "skipped" and r["seconds"] == ""
            continue
        assert float(r["seconds"]) > 0
        assert int(r["gpus"]) >= int(r["jobs"]) // 2 - 1
        expected = {"exact": {"optimal", "time_limit"}, "lp": {"optimal"}, "fast": {"heuristic"},
                    "gavel": {"optimal", "heuristic"}, "gavel-ss": {"optimal", "heuristic"}}[r["method"]]
        assert r["status"] in expected, r
        if r["method"] == "exact" and r["status"] == "optimal":
            assert float(r["mip_gap"]) <= 1e-6
    # the exact optimum is never beaten by an integer method on the same round
    for n in mod.QUICK_SIZES:
        by = {r["method"]: r for r in rows if int(r["jobs"]) == n and r["skipped"] == "0"}
        if by.get("exact", {}).get("status") == "optimal":
            best = float(by["exact"]["objective"])
            for m in ("fast", "gavel", "gavel-ss"):
                if m in by:
                    assert float(by[m]["objective"]) <= best + 1e-6 * max(1.0, abs(best))
            # and the section 3 relaxation bounds it from above
            assert float(by["lp"]["objective"]) >= best - 1e-6 * max(1.0, abs(best))


def test_scaling_table_has_one_line_per_size(scaling_out: Path) -> None:
    md = (scaling_out / "solver_scaling.md").read_text().splitlines()
    body = [line for line in md if line.startswith("| ") and line[2].isdigit()]
    assert [int(line.split("|")[1]) for line in body] == [64, 256, 1024]
    assert all("(optimal" in line or "(time_limit" in line for line in body)


def test_scaling_skips_beyond_budget(tmp_path: Path) -> None:
    mod = load_benchmark("solver_scaling")
    rows = mod.run([64, 4096], 1, ["fast"], exact_limit=1.0, budget=1e-9)
    assert [(r["jobs"], r["status"]) for r in rows][1] == (4096, "skipped")
    assert "skipped" in mod.table(rows, 1.0, 1e-9)
