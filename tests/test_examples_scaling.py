"""Smoke tests of examples/solver_scaling.py and examples/drive_engine.py at ``--quick`` size."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import ModuleType

import pytest
from _examples import PNG, load_example


@pytest.fixture(scope="module")
def scaling_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scaling")
    assert load_example("solver_scaling").main(["--quick", "--out", str(out)]) == 0
    return out


def test_scaling_writes_every_output(scaling_out: Path) -> None:
    for name in ("solver_scaling.csv", "solver_scaling.md", "solver_scaling.png"):
        assert (scaling_out / name).stat().st_size > 0
    assert (scaling_out / "solver_scaling.png").read_bytes()[:8] == PNG


def test_scaling_rows_cover_every_size_and_method(scaling_out: Path) -> None:
    mod = load_example("solver_scaling")
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
    mod = load_example("solver_scaling")
    rows = mod.run([64, 4096], 1, ["fast"], exact_limit=1.0, budget=1e-9)
    assert [(r["jobs"], r["status"]) for r in rows][1] == (4096, "skipped")
    assert "skipped" in mod.table(rows, 1.0, 1e-9)


@pytest.fixture(scope="module")
def drive(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, Path]:
    out = tmp_path_factory.mktemp("drive")
    mod = load_example("drive_engine")
    assert mod.main(["--quick", "--out", str(out)]) == 0
    return mod, out


def test_drive_engine_outputs_and_invariants(drive: tuple[ModuleType, Path]) -> None:
    mod, out = drive
    log = json.loads((out / "log.json").read_text())
    assert 8 <= len(log) <= 10
    assert any(rec["event"] == "restart" for rec in log)
    assert any(rec["stragglers"] for rec in log)
    arrivals = {j["id"]: j["arrival"] for j in mod.JOBS}
    seen_done: set[str] = set()
    for rec in log:
        assert rec["status"] == "heuristic"
        assert all(d >= 0 for d in rec["deficits"].values())
        assert set(rec["deficits"]) == set(rec["active"])
        assert all(arrivals[j] <= rec["round"] for j in rec["active"])
        assert not seen_done & set(rec["active"]), "a finished job came back"
        seen_done |= set(rec["finished"])
        used: dict[str, int] = {}
        placed: list[str] = []
        for p in rec["placements"]:
            used[p["gpu"]] = used.get(p["gpu"], 0) + p["gpus"]
            placed += p["jobs"]
        assert all(used[g] <= mod.CLUSTER[g] for g in used)
        assert len(placed) == len(set(placed)) and set(placed) <= set(rec["active"])
        for j in rec["stragglers"]:  # a straggler got less than planned and is owed for it
            assert rec["delivered_progress"][j] < rec["planned_progress"][j]
    assert seen_done == {j["id"] for j in mod.JOBS}
    # the saved state is the engine after the last round
    state = json.loads((out / "state.json").read_text())
    assert state["round_index"] == len(log)
    assert state["deficits"] == pytest.approx(log[-1]["deficits"])


def test_drive_engine_deficit_update_matches_spec(drive: tuple[ModuleType, Path]) -> None:
    mod, out = drive
    log = json.loads((out / "log.json").read_text())
    prev: dict[str, float] = {}
    for rec in log:
        for j, d in rec["deficits"].items():
            rho = rec["delivered_progress"].get(j, rec["planned_progress"][j])
            assert d == pytest.approx(max(0.0, prev.get(j, 0.0) + (1 - mod.EPSILON) - rho), abs=1e-12)
        prev = rec["deficits"]


def test_drive_engine_restart_changes_nothing(drive: tuple[ModuleType, Path], tmp_path: Path) -> None:
    mod, out = drive
    with_restart = json.loads((out / "log.json").read_text())
    for restart_at in (None, 0, 7):
        other = mod.run(10, tmp_path / str(restart_at), restart_at=restart_at)
        assert [r["deficits"] for r in other] == [r["deficits"] for r in with_restart]
        assert [r["placements"] for r in other] == [r["placements"] for r in with_restart]
