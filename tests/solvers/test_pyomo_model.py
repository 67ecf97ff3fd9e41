"""The Pyomo reference model (section 3 as written) agrees with the array-built HiGHS models."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from fairshare import allocate
from fairshare.testing.random_rounds import random_round
from fairshare.testing.strategies import round_problems


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


@settings(max_examples=20, deadline=None)
@given(round_problems(min_jobs=1, max_jobs=8))
def test_same_lp_optimum_on_random_rounds(problem) -> None:
    ref = allocate(problem, mode="lp", backend="pyomo")
    arr = allocate(problem, mode="lp")
    assert str(ref.status) == str(arr.status) == "optimal"
    assert close(ref.values.objective, arr.values.objective)


@settings(max_examples=15, deadline=None)
@given(round_problems(min_jobs=1, max_jobs=8))
def test_same_milp_optimum_on_random_rounds(problem) -> None:
    ref = allocate(problem, mode="exact", backend="pyomo")
    arr = allocate(problem, mode="exact")
    assert str(ref.status) == str(arr.status) == "optimal"
    assert close(ref.values.objective, arr.values.objective)


@pytest.mark.parametrize("n, seed", [(64, 0), (150, 1)])
def test_same_optima_on_catalog_shaped_rounds(n: int, seed: int) -> None:
    p = random_round(n, seed=seed, weighted_fraction=0.2, epsilon=0.1)
    assert close(allocate(p, mode="lp", backend="pyomo").values.objective, allocate(p, mode="lp").values.objective)
    ref, arr = allocate(p, mode="exact", backend="pyomo"), allocate(p, mode="exact")
    # both proven within mip_rel_gap = 1e-6 of the achievable improvement
    assert abs(ref.values.objective - arr.values.objective) <= 2e-6 * arr.values.value_gain + 1e-6
