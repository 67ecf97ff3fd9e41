"""Smoke tests of examples/drive_engine.py at ``--quick`` size."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from _examples import load_example


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
