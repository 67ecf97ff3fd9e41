"""Tests of fairshare.formulation: placement columns, the section 3 model and the tightened one (section 5a)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import allocate
from fairshare.cli import example_round_text
from fairshare.fair_share import fair_share
from fairshare.formulation import RoundModel, build_model
from fairshare.problem import RoundProblem
from fairshare.solvers import solve_lp
from fairshare.testing.strategies import round_problems

SPEC_ROUND = json.loads(example_round_text())  # the round of spec section 6, bundled


def section3_objective(problem: RoundProblem, model: RoundModel, x: np.ndarray) -> float:
    """Section 3 objective of column values ``x``, computed from the round (sigma at its smallest)."""
    c = model.columns
    n = problem.num_jobs
    tau = np.zeros(n)
    for k in np.flatnonzero(x):
        tau[c.job_a[k]] += x[k] * c.tput_a[k]
        if c.job_b[k] >= 0:
            tau[c.job_b[k]] += x[k] * c.tput_b[k]
    tfair = fair_share(problem).fair_throughput
    tmax = np.where(problem.runnable, problem.throughput, 0.0).max(axis=1)
    w = problem.weight / problem.weight.mean()
    sigma = np.maximum(0.0, 1 - problem.epsilon + problem.deficit - tau / tfair)
    return float((problem.scale * tau / tmax).sum() - problem.fairness_weight * (w * sigma).sum())


def random_integer_placement(model: RoundModel, rng: np.random.Generator, density: float) -> np.ndarray:
    """A random feasible 0/1 placement (not necessarily filled): columns tried in random order."""
    c, p = model.columns, model.problem
    x = np.zeros(c.num)
    free = np.ones(p.num_jobs, bool)
    cap = p.capacity.copy()
    for k in rng.permutation(c.num):
        if rng.random() > density:
            continue
        members = [c.job_a[k]] + ([c.job_b[k]] if c.job_b[k] >= 0 else [])
        if all(free[m] for m in members) and cap[c.gpu[k]] >= c.size[k]:
            x[k] = 1.0
            free[members] = False
            cap[c.gpu[k]] -= c.size[k]
    return x


def random_fractional_point(model: RoundModel, rng: np.random.Generator) -> np.ndarray:
    """A random point of the LP relaxation's placement polytope (per-job time <= 1, capacity)."""
    c, p = model.columns, model.problem
    x = rng.random(c.num) * (rng.random(c.num) < 0.6)
    per_job = np.bincount(c.job_a, weights=x, minlength=p.num_jobs)
    per_job += np.bincount(c.job_b[c.is_pair], weights=x[c.is_pair], minlength=p.num_jobs)
    used = np.bincount(c.gpu, weights=c.size * x, minlength=len(p.capacity))
    with np.errstate(divide="ignore", invalid="ignore"):
        worst = max(1.0, float(np.nanmax(np.concatenate([per_job, used / p.capacity]))) if c.num else 1.0)
    return np.minimum(x / worst, 1.0)


# ---------------------------------------------------------------- columns and coefficients by hand
def test_columns_of_the_spec_example():
    p = RoundProblem.from_dict(SPEC_ROUND)
    m = build_model(p)
    c = m.columns
    # alone columns: 3 scale-1 jobs x 3 types + resnet50-4 on V100 and P100 = 11; then the one pair
    assert c.num_alone == 11 and c.num == 12
    assert c.is_pair.tolist() == [False] * 11 + [True]
    assert (c.job_a[11], c.job_b[11], c.gpu[11], c.size[11]) == (0, 1, 0, 1)
    alone = {(int(j), int(g)) for j, g in zip(c.job_a[:11], c.gpu[:11])}
    assert alone == {(j, g) for j in range(3) for g in range(3)} | {(3, 0), (3, 1)}
    assert (c.size[:11] == p.scale[c.job_a[:11]]).all()
    assert m.tmax.tolist() == [24.1, 64.7, 8.6, 7.9]
    assert m.obj_null == pytest.approx(-410.0)
    # pair column: eff = 15.2/24.1 + 41/64.7; rho = (15.2/17.8333, 41/46.6667) = (0.8523, 0.8786), both below
    # need 0.9, so v = 100 (0.8523 + 0.8786) + eff = 174.35
    eff = 15.2 / 24.1 + 41.0 / 64.7
    rho = (15.2 / (53.5 / 3), 41.0 / (140 / 3))
    assert m.eff[11] == pytest.approx(eff)
    assert (m.rho_a[11], m.rho_b[11]) == pytest.approx(rho)
    assert m.value[11] == pytest.approx(100 * sum(rho) + eff)
    # transformer-3 alone on V100: rho = 8.6 / 5.1667 = 1.6645 is capped at its need 1.4: v = 140 + 1
    k = int(np.flatnonzero((c.job_a == 2) & (c.gpu == 0) & ~c.is_pair)[0])
    assert m.rho_a[k] == pytest.approx(8.6 / (15.5 / 3))
    assert m.value[k] == pytest.approx(141.0)
    # resnet50-4 alone on P100: eff = 2 * 4.7/7.9, rho = 4.7/4.2 = 1.119 capped at 0.9: v = 90 + 1.18987
    k = int(np.flatnonzero((c.job_a == 3) & (c.gpu == 1))[0])
    assert m.value[k] == pytest.approx(90 + 2 * 4.7 / 7.9)


def test_pair_with_no_throughput_is_dropped():
    doc = dict(SPEC_ROUND, colocation=[{"jobs": ["resnet18-1", "lm-2"], "gpu": "V100", "throughput": [0.0, 0.0]},
                                       {"jobs": ["lm-2", "transformer-3"], "gpu": "K80", "throughput": [0.0, 1.0]}])
    m = build_model(RoundProblem.from_dict(doc))
    assert m.columns.num == 12  # the useless pair is dropped, the half-useful one kept
    assert (m.columns.job_a[11], m.columns.job_b[11], m.columns.gpu[11]) == (1, 2, 2)


def test_weights_are_normalised_in_the_model():
    doc = dict(SPEC_ROUND, jobs=[dict(j, weight=w) for j, w in zip(SPEC_ROUND["jobs"], (2.0, 2.0, 6.0, 2.0))])
    m = build_model(RoundProblem.from_dict(doc))
    assert m.weight.tolist() == [2 / 3, 2 / 3, 2.0, 2 / 3]
    # obj_null = -100 * sum w_j need_j = -100 * (2/3 * 0.9 * 3 + 2 * 1.4) = -100 * 4.6
    assert m.obj_null == pytest.approx(-460.0)


def test_linear_program_shapes():
    p = RoundProblem.from_dict(SPEC_ROUND)
    m = build_model(p)
    n, g, k = p.num_jobs, len(p.gpu_types), m.columns.num
    t = m.tightened_lp()
    assert t.matrix.shape == (n + g, k) and t.num_placement_cols == k
    s3 = m.section3_lp()
    assert s3.matrix.shape == (2 * n + g, k + n) and s3.num_placement_cols == k
    assert s3.cost[k:].tolist() == pytest.approx([-100.0] * n)
    assert s3.row_lower[n + g:].tolist() == pytest.approx([0.9, 0.9, 1.4, 0.9])


# ---------------------------------------------------------------- the two objectives agree on integer placements
@given(round_problems(min_jobs=1), st.integers(0, 2**32 - 1), st.sampled_from([0.3, 0.7, 1.0]))
def test_tightened_objective_equals_section3_minus_null_on_integer_placements(problem, seed, density):
    model = build_model(problem)
    x = random_integer_placement(model, np.random.default_rng(seed), density)
    reference = section3_objective(problem, model, x)
    assert float(model.value @ x) == pytest.approx(reference - model.obj_null, rel=1e-9, abs=1e-9)
    assert model.evaluate(x).objective == pytest.approx(reference, rel=1e-9, abs=1e-9)
    # and the section 3 LP, with sigma at its smallest, is feasible and has the same objective
    lp = model.section3_lp()
    sigma = np.maximum(0.0, model.need - model.evaluate(x).progress)
    z = np.concatenate([x, sigma])
    row = lp.matrix @ z
    assert (row >= lp.row_lower - 1e-9).all() and (row <= lp.row_upper + 1e-9).all()
    assert float(lp.cost @ z) == pytest.approx(reference, rel=1e-9, abs=1e-9)


@given(round_problems(min_jobs=1), st.integers(0, 2**32 - 1))
def test_tightened_objective_is_below_section3_on_fractional_points(problem, seed):
    # For sum_c x_c <= 1 per job: sum_c min(rho_c, need) x_c <= min(sum_c rho_c x_c, need), so the tightened
    # objective never exceeds section 3's (minus obj_null): the tightened relaxation is the tighter one.
    model = build_model(problem)
    x = random_fractional_point(model, np.random.default_rng(seed))
    lp = model.tightened_lp()
    row = lp.matrix @ x
    assert (row <= lp.row_upper + 1e-9).all()
    assert float(model.value @ x) <= section3_objective(problem, model, x) - model.obj_null + 1e-7


@given(round_problems(min_jobs=1))
def test_tightened_bound_lies_between_the_exact_optimum_and_the_section3_bound(problem):
    model = build_model(problem)
    tight = solve_lp(model.tightened_lp())
    sec3 = solve_lp(model.section3_lp())
    exact = allocate(problem, mode="exact")
    tol = 1e-6 * max(1.0, abs(model.obj_null))
    assert tight.optimal and sec3.optimal
    assert tight.bound + model.obj_null <= sec3.bound + tol
    assert tight.bound + model.obj_null >= exact.values.objective - tol
    # allocate reports the same numbers
    assert allocate(problem, mode="lp").values.objective == pytest.approx(sec3.bound, abs=tol)
    assert allocate(problem, mode="lp", relaxation="tightened").report.bound == pytest.approx(
        tight.bound + model.obj_null, abs=tol)


@given(round_problems(min_jobs=1, max_jobs=8))
def test_section3_milp_and_tightened_milp_have_the_same_optimum(problem):
    model = build_model(problem)
    sec3 = solve_lp(model.section3_lp(), integer=True)
    tight = solve_lp(model.tightened_lp(), integer=True)
    tol = 1e-6 * max(1.0, abs(model.obj_null))
    assert sec3.optimal and tight.optimal
    assert sec3.objective == pytest.approx(tight.objective + model.obj_null, abs=tol)
    assert allocate(problem, mode="exact").values.objective == pytest.approx(sec3.objective, abs=tol)


def test_evaluate_fractional_point_by_hand():
    # spec example, LP-style point: transformer-3 half on V100 and half on K80, nothing else.
    # tau = 0.5 * 8.6 + 0.5 * 1.8 = 5.2, rho = 5.2 / 5.1667 = 1.00645; E = 5.2 / 8.6 = 0.60465.
    # sigma = (0.9, 0.9, 1.4 - 1.00645, 0.9) -> S = 2.7 + 0.39355 = 3.09355; objective = E - 309.355
    p = RoundProblem.from_dict(SPEC_ROUND)
    m = build_model(p)
    c = m.columns
    x = np.zeros(c.num)
    x[(c.job_a == 2) & (c.gpu == 0) & ~c.is_pair] = 0.5
    x[(c.job_a == 2) & (c.gpu == 2) & ~c.is_pair] = 0.5
    ev = m.evaluate(x)
    rho = 5.2 / (15.5 / 3)
    assert ev.throughput[2] == pytest.approx(5.2)
    assert ev.progress[2] == pytest.approx(rho)
    assert ev.efficiency == pytest.approx(5.2 / 8.6)
    assert ev.shortfall == pytest.approx(2.7 + 1.4 - rho)
    assert ev.objective == pytest.approx(5.2 / 8.6 - 100 * (2.7 + 1.4 - rho))
    assert ev.next_deficit == pytest.approx([0.9, 0.9, 1.4 - rho, 0.9])


@given(round_problems(), st.data())
def test_setting_priorities_on_a_built_model_equals_building_it_again(p: RoundProblem, data) -> None:
    # RoundModel.with_priority (what the fairshare policy uses every round) must be the model that
    # build_model gives for the round with those priorities, array for array, bit for bit
    pi = np.array(data.draw(st.lists(st.floats(0.0, 1e3), min_size=p.num_jobs, max_size=p.num_jobs)))
    fast = build_model(p).with_priority(pi)
    slow = build_model(p.replace(priority=pi))
    from dataclasses import fields

    for f in fields(RoundProblem):
        a, b = getattr(fast.problem, f.name), getattr(slow.problem, f.name)
        assert (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b), f.name
    assert fast.obj_null == slow.obj_null
    for name in ("value", "eff_priority", "eff", "rho_a", "rho_b", "tmax", "weight", "need"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert np.array_equal(fast.columns.job_a, slow.columns.job_a) and np.array_equal(fast.columns.gpu, slow.columns.gpu)
    assert not fast.value.flags.writeable and not fast.problem.priority.flags.writeable


@given(round_problems(), st.data())
def test_priorities_set_twice_and_on_replaced_arrays(p: RoundProblem, data) -> None:
    import dataclasses

    from fairshare.formulation import _column_values

    draw = st.lists(st.floats(0.0, 1e3), min_size=p.num_jobs, max_size=p.num_jobs)
    pi1, pi2 = np.array(data.draw(draw)), np.array(data.draw(draw))
    # the second call reuses the priority-free terms kept by the first
    twice = build_model(p).with_priority(pi1).with_priority(pi2)
    assert np.array_equal(twice.value, build_model(p.replace(priority=pi2)).value)
    # a model whose needs were replaced gets values from its own needs, not the terms kept for the old ones
    m = build_model(p)
    bigger = dataclasses.replace(m, need=m.need + 10.0)
    want = _column_values(p.with_priority(pi1), m.columns, m.tmax, m.weight, bigger.need, m.rho_a, m.rho_b)[2]
    assert np.array_equal(bigger.with_priority(pi1).value, want)


def test_with_priority_validates_the_new_priorities_only() -> None:
    p = RoundProblem.from_dict(json.loads(example_round_text()))
    n = p.num_jobs
    with pytest.raises(Exception, match=r"jobs\[1\]\.priority"):
        p.with_priority(np.array([1.0, -1.0] + [1.0] * (n - 2)))
    with pytest.raises(Exception, match="priority"):
        p.with_priority(np.ones(n + 1))
    with pytest.raises(Exception, match=r"jobs\[0\]\.priority"):
        p.with_priority(np.array([np.nan] + [1.0] * (n - 1)))
    pi = np.linspace(0.5, 2.0, n)
    q = p.with_priority(pi)
    pi[0] = 99.0                                            # the copy does not follow its input
    assert q.priority[0] == 0.5 and q.job_ids == p.job_ids and p.priority.tolist() == [1.0] * n


@settings(max_examples=40, deadline=None)
@given(problem=round_problems(max_jobs=12, scales=(0.25, 0.5, 1, 2)))
def test_tightened_matrix_is_the_triplets_matrix(problem: RoundProblem) -> None:
    """The LP matrix written column by column is scipy's matrix of the placement triplets, entry for entry."""
    model = build_model(problem)
    n, g = problem.num_jobs, len(problem.gpu_types)
    rows, cols, vals = model.placement_rows()
    want = sp.csc_matrix((vals, (rows, cols)), shape=(n + g, model.columns.num))
    got = model.tightened_lp().matrix
    assert got.shape == want.shape
    for attr in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(got, attr), getattr(want, attr)), attr
        assert getattr(got, attr).dtype == getattr(want, attr).dtype, attr
