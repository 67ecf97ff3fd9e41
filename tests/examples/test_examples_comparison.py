"""Smoke tests of examples/main_comparison.py and examples/gavel_crosscheck.py at ``--quick`` size."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pytest
from _examples import PNG, load_example, read_csv

from fairshare.sim.result import SimulationResult


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, Path]:
    out = tmp_path_factory.mktemp("main_comparison")
    mod = load_example("main_comparison")
    assert mod.main(["--quick", "--out", str(out)]) == 0
    return mod, out


@pytest.fixture(scope="module")
def crosscheck(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, Path, list[SimulationResult]]:
    out = tmp_path_factory.mktemp("gavel_crosscheck")
    mod = load_example("gavel_crosscheck")
    ran: list[SimulationResult] = []
    real = mod.run_sweep

    def recording(specs, **kwargs):  # type: ignore[no-untyped-def]
        results = real(specs, **kwargs)
        ran.extend(results)
        return results

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mod, "run_sweep", recording)
        assert mod.main(["--quick", "--out", str(out)]) == 0
    return mod, out, ran


def test_comparison_writes_every_output(comparison: tuple[ModuleType, Path]) -> None:
    _, out = comparison
    for name in ("main_comparison.md", "main_comparison.csv"):
        assert (out / name).stat().st_size > 0
    for name in ("main_comparison_jct_cdf.png", "main_comparison_h200_jct_cdf.png",
                 "main_comparison_jct_vs_load.png"):
        assert (out / name).read_bytes()[:8] == PNG


def test_comparison_has_a_row_per_policy_and_cluster(comparison: tuple[ModuleType, Path]) -> None:
    mod, out = comparison
    rows = read_csv(out / "main_comparison.csv")
    labels = [label for label, _, _ in mod.POLICIES]
    # every registered peer of the published comparison is a row, each label once
    assert len(set(labels)) == len(labels)
    assert {"fairshare", "gavel", "gavel-ss", "ftf", "max-throughput", "las"} <= set(labels)
    for cluster in ("het108", "het108+h200"):
        assert sorted(r["policy"] for r in rows if r["cluster"] == cluster) == sorted(labels)
    md = (out / "main_comparison.md").read_text().splitlines()
    assert len(md) == 2 + len(rows)
    # one row per simulation; the aggregated table's mean is the mean of its seeds' rows
    runs = read_csv(out / "main_comparison_runs.csv")
    assert len(runs) == len(rows) * len(mod.QUICK["seeds"])
    for r in rows:
        mine = [float(x["gpu_busy_fraction"]) for x in runs
                if (x["cluster"], x["load_jobs_per_hour"], x["policy"]) == (r["cluster"], r["load (jobs/h)"],
                                                                           r["policy"])]
        assert len(mine) == len(mod.QUICK["seeds"])
        assert math.isclose(sum(mine) / len(mine), float(r["gpu_busy_fraction_mean"]), rel_tol=1e-12)


def test_crosscheck_keeps_gavels_rule_for_starts(crosscheck: tuple[ModuleType, Path, list[SimulationResult]]) -> None:
    # Gavel's simulator starts jobs at round boundaries only; the cross-check reproduces it, not our default
    _, _, ran = crosscheck
    assert ran and all(r.config.starts == "round" for r in ran)


def test_crosscheck_writes_a_finite_positive_factor(crosscheck: tuple[ModuleType, Path, list[SimulationResult]]) \
        -> None:
    mod, out, _ = crosscheck
    for name in ("gavel_crosscheck.md", "gavel_crosscheck.csv", "gavel_crosscheck_factor.md",
                 "gavel_crosscheck_factor.csv"):
        assert (out / name).stat().st_size > 0
    for name in ("gavel_crosscheck_factor.png", "gavel_crosscheck_jct_vs_load.png"):
        assert (out / name).read_bytes()[:8] == PNG
    assert sorted(r["policy"] for r in read_csv(out / "gavel_crosscheck.csv")) == ["equal-share", "gavel", "las"]
    (row,) = read_csv(out / "gavel_crosscheck_factor.csv")
    factor = float(row["factor"])
    assert math.isfinite(factor) and factor > 0
    assert math.isfinite(float(row["factor_equal_share"])) and float(row["factor_equal_share"]) > 0
    assert float(row["published_factor"]) == mod.PUBLISHED_FACTOR == 3.5


def test_crosscheck_window_measures_only_the_window_and_waits_for_it(tmp_path: Path) -> None:
    mod = load_example("gavel_crosscheck")
    ids = mod.window_ids(12, 6.0, 0, (4, 8))
    assert len(ids) == len(set(ids)) == 4
    trace = mod.generate_trace(12, jobs_per_hour=6.0, seed=0, multi_gpu=False)
    arrival = dict(zip(trace.id, trace.arrival, strict=True))
    ranks = sorted(trace.arrival)
    assert [arrival[i] for i in ids] == ranks[4:8]
    assert mod.main(["--quick", "--num-jobs", "12", "--window", "4", "8", "--max-rounds", "1000",
                     "--policies", "gavel", "las", "--out", str(tmp_path)]) == 0
    rows = read_csv(tmp_path / "gavel_crosscheck.csv")
    assert sorted(r["policy"] for r in rows) == ["gavel", "las"]
    # every watched job finished: the run waited for the window, whatever happened to the later jobs
    assert all(int(r["unfinished_jobs"]) == 0 for r in rows)
    (row,) = read_csv(tmp_path / "gavel_crosscheck_factor.csv")
    assert math.isfinite(float(row["factor"])) and float(row["factor"]) > 0
    assert math.isnan(float(row["factor_equal_share"]))  # not run
    runs = read_csv(tmp_path / "gavel_crosscheck_runs.csv")
    assert sorted(r["policy"] for r in runs) == ["gavel", "las"] and all(int(r["rounds"]) > 0 for r in runs)


@pytest.mark.parametrize("window", [["5", "3"], ["0", "99"], ["-1", "2"]])
def test_crosscheck_rejects_a_bad_window(window: list[str], tmp_path: Path) -> None:
    mod = load_example("gavel_crosscheck")
    with pytest.raises(SystemExit):
        mod.main(["--quick", "--window", *window, "--out", str(tmp_path)])
