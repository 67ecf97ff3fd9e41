"""Huge rounds: the interior point without crossover and its certified bound (issue 29, item 3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairshare import allocate
from fairshare.formulation import build_model
from fairshare.methods import lp as lp_module
from fairshare.methods.lp import lagrangian_bound, solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.testing.random_rounds import random_round
from fairshare.testing.strategies import round_problems
from fairshare.validators import allocation_violations


def _interior_point_everywhere() -> pytest.MonkeyPatch:
    """A patch under which ``auto`` takes the interior point without crossover on rounds of any size."""
    mp = pytest.MonkeyPatch()
    mp.setattr(lp_module, "DUAL_SIMPLEX_MAX_COLUMNS", 0)
    mp.setattr(lp_module, "NO_CROSSOVER_MIN_COLUMNS", 0)
    return mp


@given(round_problems(max_jobs=8), st.integers(0, 2**32 - 1))
def test_lagrangian_bound_holds_for_any_multipliers(problem, seed) -> None:
    exact = allocate(problem, mode="exact")
    model = build_model(problem)
    rng = np.random.default_rng(seed)
    scale = float(np.abs(model.value).max(initial=1.0))
    u = rng.uniform(-0.5, 1.0, problem.num_jobs) * scale  # negative entries count as 0
    y = rng.uniform(-0.5, 1.0, len(problem.gpu_types)) * scale
    tol = 1e-6 * max(1.0, abs(exact.values.value_gain))
    assert lagrangian_bound(model, u, y) >= exact.values.value_gain - tol


def test_without_crossover_matches_the_vertex_solve() -> None:
    problem = random_round(1024, seed=3)
    model = build_model(problem)
    lp = model.tightened_lp()
    vertex = solve_relaxation(model, lp, SolveOptions(lp_algorithm="ipm"))
    mp = _interior_point_everywhere()
    try:
        interior = solve_relaxation(model, lp, SolveOptions())
        fast = allocate(problem, mode="fast")
    finally:
        mp.undo()
    assert "without crossover" in interior.message and "without crossover" in fast.report.message
    assert interior.bound >= vertex.bound - 1e-9 * abs(vertex.bound)  # a proven bound
    assert interior.bound <= vertex.bound * (1 + 1e-4)  # and a close one
    assert interior.col_dual is not None and interior.x is not None
    assert allocation_violations(problem, fast) == []
    assert fast.report.bound - fast.values.obj_null >= vertex.bound - 1e-9 * abs(vertex.bound)
    vertex_fast = allocate(problem, mode="fast", lp_algorithm="ipm")
    assert fast.values.objective >= vertex_fast.values.objective - 1e-3 * abs(vertex_fast.values.objective)


@given(round_problems(max_jobs=10))
def test_polish_after_the_interior_point_keeps_its_guarantees(problem) -> None:
    # polish_gap 0 polishes every round, with reduced-cost fixing on the interior point's reduced values
    exact = allocate(problem, mode="exact")
    mp = _interior_point_everywhere()
    try:
        fast = allocate(problem, mode="fast", polish_gap=0.0)
    finally:
        mp.undo()
    assert allocation_violations(problem, fast) == []
    tol = 1e-6 * max(1.0, abs(exact.values.value_gain))
    assert fast.values.value_gain <= exact.values.value_gain + tol
    assert fast.report.bound - fast.values.obj_null >= exact.values.value_gain - tol


def test_huge_rounds_benchmark_runs(tmp_path, monkeypatch) -> None:
    # the code paths of benchmarks/bench_huge_rounds.py at a small size: whole, split, split on a LocalCluster
    import csv
    import importlib
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    bench = importlib.import_module("bench_huge_rounds")
    assert bench.main(["--sizes", "2048", "--variants", "whole", "split-2", "dask-2", "split-2-norepair", "--out",
                       str(tmp_path), "--label", "this tree"]) == 0
    rows = list(csv.DictReader((tmp_path / "huge_rounds.csv").open()))
    assert [r["variant"] for r in rows] == ["whole", "split-2", "dask-2", "split-2-norepair"]
    whole, split, dask, plain = rows
    assert int(plain["repaired"]) == 0 and float(plain["objective"]) <= float(split["objective"])
    assert float(whole["vs_whole"]) == 0.0
    assert split["objective"] == dask["objective"]  # the placement does not depend on the executor
    assert float(dask["worker_rss_mib"]) > 0 and int(dask["workers"]) == 2 and int(dask["part_bytes"]) > 0
    assert (tmp_path / "huge_rounds.md").read_text().startswith("Code measured: this tree.")
