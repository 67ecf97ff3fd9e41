"""The greedy pass of ``fast`` (:func:`fairshare.methods.rounding.greedy_take`): it stops walking its order
once nothing more can fit, and takes a leading run of columns that fit together in one step; neither
changes the placement."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fairshare.formulation import RoundModel, build_model
from fairshare.methods.rounding import greedy_round, greedy_take
from fairshare.packing import FINEST_SHARE
from fairshare.testing.random_rounds import random_round
from fairshare.testing.strategies import round_problems


def _walk_all(model: RoundModel, order: np.ndarray, x0: np.ndarray) -> np.ndarray:
    """The greedy pass without an early stop: every column of ``order`` is tried."""
    c, p = model.columns, model.problem
    x = np.array(x0, dtype=np.float64, copy=True)
    free = np.ones(p.num_jobs, bool)
    on = x > 0.5
    free[c.job_a[on]] = False
    free[c.job_b[on & c.is_pair]] = False
    room = p.capacity - np.bincount(c.gpu[on], weights=c.size[on], minlength=len(p.capacity)).astype(np.float64)
    for k in order:
        a, b, g, s = c.job_a[k], c.job_b[k], c.gpu[k], c.size[k]
        if model.value[k] > 0 and room[g] >= s and free[a] and (b < 0 or free[b]):
            free[a] = False
            if b >= 0:
                free[b] = False
            room[g] -= s
            x[k] = 1.0
    return x


def _check(model: RoundModel, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = model.columns.num
    order = rng.permutation(m)
    np.testing.assert_array_equal(greedy_take(model, order, np.zeros(m)), _walk_all(model, order, np.zeros(m)))
    # on top of a feasible placement: the greedy pass over a random half of the columns
    x0 = _walk_all(model, rng.permutation(m)[: m // 2], np.zeros(m))
    np.testing.assert_array_equal(greedy_take(model, order, x0), _walk_all(model, order, x0))
    # the hint that the first k columns fit together: right (the walk's own picks first) or wrong (any k)
    picked = np.flatnonzero(_walk_all(model, order, np.zeros(m)) > 0.5)
    good = np.concatenate([rng.permutation(picked), rng.permutation(np.setdiff1d(np.arange(m), picked))])
    for hint_order, k in ((good, len(picked)), (good, len(picked) // 2), (order, int(rng.integers(0, m + 1)))):
        np.testing.assert_array_equal(greedy_take(model, hint_order, x0, together=k),
                                      _walk_all(model, hint_order, x0))
        np.testing.assert_array_equal(greedy_take(model, hint_order, np.zeros(m), together=k),
                                      _walk_all(model, hint_order, np.zeros(m)))


@given(problem=round_problems(max_jobs=14, max_capacity=4), seed=st.integers(0, 2**16))
def test_early_stop_gives_the_full_walk(problem, seed: int) -> None:
    _check(build_model(problem), seed)


@given(problem=round_problems(max_jobs=10, max_capacity=3, scales=(0.25, 0.5, 1, 2)), seed=st.integers(0, 2**16))
def test_early_stop_gives_the_full_walk_with_parts_of_gpus(problem, seed: int) -> None:
    _check(build_model(problem), seed)


def test_orders_with_repeated_columns() -> None:
    # callers may list a column more than once (the time-sharing policies do): the second time it is skipped
    model = build_model(random_round(300, seed=6, num_gpus=30))
    rng = np.random.default_rng(1)
    m = model.columns.num
    order = rng.integers(0, m, size=2 * m)
    for k in (0, 10, m):
        np.testing.assert_array_equal(greedy_take(model, order, np.zeros(m), together=k),
                                      _walk_all(model, order, np.zeros(m)))


@given(problem=round_problems(max_jobs=14, max_capacity=4))
def test_greedy_round_of_an_lp_point_is_the_full_walk(problem) -> None:
    # greedy_round computes its own hint (the columns at 1 in the LP point come first): same as the walk
    from fairshare.methods.lp import solve_relaxation
    from fairshare.methods.options import SolveOptions

    model = build_model(problem)
    lp = model.tightened_lp()
    x_lp = solve_relaxation(model, lp, SolveOptions()).x
    assert x_lp is not None
    density = model.value / np.maximum(model.columns.size, FINEST_SHARE)
    order = np.lexsort((-density, -np.round(x_lp, 6)))
    m = model.columns.num
    np.testing.assert_array_equal(greedy_round(model, x_lp), _walk_all(model, order, np.zeros(m)))


@given(problem=round_problems(max_jobs=14, max_capacity=4, scales=(0.5, 1, 2)), seed=st.integers(0, 2**16))
def test_greedy_round_of_any_point_is_the_full_walk(problem, seed: int) -> None:
    # any values in [0, 1]: columns at 1 that conflict (the hint fails), ties, fractions that round to 1
    model = build_model(problem)
    m = model.columns.num
    rng = np.random.default_rng(seed)
    x_lp = rng.choice([0.0, 1.0, 0.5, 0.9999999, 1e-9, 0.25], size=m, p=[0.4, 0.25, 0.1, 0.1, 0.1, 0.05])
    density = model.value / np.maximum(model.columns.size, FINEST_SHARE)
    order = np.lexsort((-density, -np.round(x_lp, 6)))
    np.testing.assert_array_equal(greedy_round(model, x_lp), _walk_all(model, order, np.zeros(m)))


def test_early_stop_on_loaded_and_light_rounds() -> None:
    # loaded: 600 jobs on 40 GPUs (capacity runs out early); light: 60 jobs on 400 GPUs (jobs run out first)
    for problem in (random_round(600, seed=4, num_gpus=40), random_round(60, seed=5, num_gpus=400)):
        model = build_model(problem)
        _check(model, 0)
        x = greedy_round(model, np.zeros(model.columns.num))
        assert x.sum() > 0
        used = np.bincount(model.columns.gpu, weights=model.columns.size * x, minlength=len(problem.capacity))
        assert np.all(used <= problem.capacity)


def test_walk_reads_past_its_first_chunks() -> None:
    # 400 jobs on 4,000 GPUs: every job fits, so the walk over a random order ends only when the last job is
    # placed, far past the first chunks of the order it reads
    model = build_model(random_round(400, seed=8, num_gpus=4000))
    m = model.columns.num
    order = np.random.default_rng(3).permutation(m)
    x = greedy_take(model, order, np.zeros(m))
    np.testing.assert_array_equal(x, _walk_all(model, order, np.zeros(m)))
    position = np.empty(m, np.int64)
    position[order] = np.arange(m)
    assert position[x > 0.5].max() > 128 + 512
