"""The certified bound of a split round (fairshare.methods.split_bound): a bound whatever the multipliers."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fairshare import allocate
from fairshare.formulation import build_model
from fairshare.methods import split_bound
from fairshare.methods.split_bound import dual_bound, tighten_bound
from fairshare.solvers import solve_lp
from fairshare.testing.random_rounds import random_round
from fairshare.testing.strategies import round_problems


@given(round_problems(max_jobs=8), st.integers(0, 2**32 - 1))
def test_tightened_bound_holds_from_any_start(problem, seed) -> None:
    exact = allocate(problem, mode="exact")
    model = build_model(problem)
    rng = np.random.default_rng(seed)
    scale = float(np.abs(model.value).max(initial=1.0))
    u = rng.uniform(-0.5, 1.0, problem.num_jobs) * scale
    y = rng.uniform(-0.5, 1.0, len(problem.gpu_types)) * scale
    tight = tighten_bound(model, u, y)
    tol = 1e-6 * max(1.0, abs(exact.values.value_gain))
    assert tight >= exact.values.value_gain - tol  # a bound on the optimum
    assert tight <= dual_bound(model, u, y) + tol  # never above where it started


def test_descent_from_zero_multipliers_reaches_the_lp_optimum() -> None:
    # at the LP's own prices the best job multipliers give the LP optimum; from u = 0 (the bound is then the
    # sum of every column's value above its GPUs' price, 1.98 times the optimum) 30 steps come within 0.015 %
    model = build_model(random_round(1024, seed=2))
    out = solve_lp(model.tightened_lp())
    assert out.row_dual is not None
    n = model.problem.num_jobs
    y = out.row_dual[n:]
    start = dual_bound(model, np.zeros(n), y)
    tight = tighten_bound(model, np.zeros(n), y)
    assert out.bound - 1e-6 * out.bound <= tight < 1.001 * out.bound < start


def test_projected_lbfgs_minimises_a_convex_function_on_the_positive_orthant() -> None:
    target = np.array([3.0, -2.0, 0.5])  # the minimum of |x - target|^2 over x >= 0 is (3, 0, 0.5)

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        return float(((x - target) ** 2).sum()), 2 * (x - target)

    x = split_bound._projected_lbfgs(fg, np.ones(3), 50)
    assert np.allclose(x, [3.0, 0.0, 0.5], atol=1e-6)
