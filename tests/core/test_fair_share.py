"""Tests of fairshare.fair_share (spec section 2): hand-computed rounds, then hypothesis properties."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairshare.errors import InvalidInputError
from fairshare.fair_share import fair_share, fair_share_of, water_fill
from fairshare.problem import RoundProblem
from fairshare.testing.strategies import round_problems


def job(jid: str, scale: int, tput: dict[str, float], **extra: Any) -> dict[str, Any]:
    return {"id": jid, "scale": scale, "throughput": tput, **extra}


def round_(gpus: dict[str, int], *jobs: dict[str, Any]) -> RoundProblem:
    return RoundProblem.from_dict({"gpus": gpus, "jobs": list(jobs)})


# ---------------------------------------------------------------- hand-computed rounds
def test_equal_weights_more_jobs_than_gpus():
    # 1 type A with 2 GPUs, three scale-1 jobs: C' = 2 < sum s = 3, so theta * 3 = 2, theta = 2/3,
    # e = 2/3 each; xfair[j, A] = (2/3) / 1 * 2/2 = 2/3; Tfair = 2/3 * (3, 6, 9) = (2, 4, 6).
    p = round_({"A": 2}, job("a", 1, {"A": 3.0}), job("b", 1, {"A": 6.0}), job("c", 1, {"A": 9.0}))
    fs = fair_share(p)
    assert fs.entitlement == pytest.approx([2 / 3] * 3)
    assert fs.theta == pytest.approx(2 / 3)
    assert fs.shares[:, 0] == pytest.approx([2 / 3] * 3)
    assert fs.fair_throughput == pytest.approx([2.0, 4.0, 6.0])
    assert fs.usable_types.tolist() == [True]


def test_weights_one_and_three():
    # 1 type A with 4 GPUs, two scale-4 jobs with weights 1 and 3: C' = 4 < sum s = 8.
    # theta * 1 + theta * 3 = 4 -> theta = 1 (raw weights), e = (1, 3), both below the cap 4.
    # xfair = e / 4 * 4/4 = (1/4, 3/4); Tfair = 8 * xfair = (2, 6).
    p = round_({"A": 4}, job("a", 4, {"A": 8.0}, weight=1.0), job("b", 4, {"A": 8.0}, weight=3.0))
    fs = fair_share(p)
    assert fs.entitlement == pytest.approx([1.0, 3.0])
    assert fs.shares[:, 0] == pytest.approx([0.25, 0.75])
    assert fs.fair_throughput == pytest.approx([2.0, 6.0])


def test_weights_are_relative():
    # weights (2, 6) give the same shares as (1, 3)
    p = round_({"A": 4}, job("a", 4, {"A": 8.0}, weight=2.0), job("b", 4, {"A": 8.0}, weight=6.0))
    assert fair_share(p).entitlement == pytest.approx([1.0, 3.0])


def test_gang_cap_raises_the_water_level_for_the_others():
    # 1 type with 6 GPUs; jobs of scale 1, 4, 4, equal weights: C' = 6 < sum s = 9.
    # An equal split would give 2 each, but the scale-1 job can use only 1 GPU: e_a = 1 and
    # 1 + 2 theta = 6 -> theta = 2.5 <= 4, so e = (1, 2.5, 2.5).
    # xfair = e / s = (1, 0.625, 0.625); Tfair = (10 * 1, 16 * 0.625, 4 * 0.625) = (10, 10, 2.5).
    p = round_({"A": 6}, job("a", 1, {"A": 10.0}), job("b", 4, {"A": 16.0}), job("c", 4, {"A": 4.0}))
    fs = fair_share(p)
    assert fs.entitlement == pytest.approx([1.0, 2.5, 2.5])
    assert fs.theta == pytest.approx(2.5)
    assert fs.shares[:, 0] == pytest.approx([1.0, 0.625, 0.625])
    assert fs.fair_throughput == pytest.approx([10.0, 10.0, 2.5])


def test_two_gang_caps():
    # 10 GPUs; scales 1, 2, 8, 8 equal weights: sum s = 19 > 10.
    # theta >= 2 caps the first two: 1 + 2 + 2 theta = 10 -> theta = 3.5 (<= 8), e = (1, 2, 3.5, 3.5).
    p = round_({"A": 10}, job("a", 1, {"A": 1.0}), job("b", 2, {"A": 1.0}), job("c", 8, {"A": 1.0}),
               job("d", 8, {"A": 1.0}))
    assert fair_share(p).entitlement == pytest.approx([1.0, 2.0, 3.5, 3.5])


def test_everyone_fits():
    # 8 GPUs, scales 1 + 2 + 4 = 7 <= 8: e = s, theta = inf; xfair = 1 on the single type.
    p = round_({"A": 8}, job("a", 1, {"A": 1.0}), job("b", 2, {"A": 2.0}), job("c", 4, {"A": 3.0}))
    fs = fair_share(p)
    assert fs.entitlement.tolist() == [1.0, 2.0, 4.0]
    assert fs.theta == float("inf")
    assert fs.fair_throughput == pytest.approx([1.0, 2.0, 3.0])


def test_types_a_job_cannot_use_contribute_zero_but_count_in_c_prime():
    # Types A (1 GPU) and B (1 GPU), four scale-1 jobs: x on A only, y on both, z on B only, w on both.
    # G' = {A, B}, C' = 2 < 4 -> e = 0.5 each; xfair[j, g] = 0.5 * 1/2 = 0.25 on BOTH types for every job
    # (x still "gets" a quarter of B, which it cannot use: that is its share of the cluster).
    # Tfair: x = 10 * 0.25 + 0 = 2.5; y = 4 * 0.25 + 2 * 0.25 = 1.5; z = 0 + 6 * 0.25 = 1.5;
    #        w = 2 * 0.25 + 8 * 0.25 = 2.5.
    p = round_({"A": 1, "B": 1}, job("x", 1, {"A": 10.0}), job("y", 1, {"A": 4.0, "B": 2.0}),
               job("z", 1, {"B": 6.0, "A": 0.0}), job("w", 1, {"A": 2.0, "B": 8.0}))
    fs = fair_share(p)
    assert fs.entitlement == pytest.approx([0.5] * 4)
    assert fs.shares == pytest.approx(np.full((4, 2), 0.25))
    assert fs.fair_throughput == pytest.approx([2.5, 1.5, 1.5, 2.5])


def test_types_no_job_can_use_are_left_out_of_c_prime():
    # Types A (2 GPUs), B (6 GPUs, no job has a throughput there), C (1 GPU, only a scale-2 job lists it:
    # too small). G' = {A}, C' = 2 (not 9!). Jobs p (1, A: 6), q (1, A: 3), r (2, A: 4, C: 9).
    # sum s = 4 > 2: theta * 3 = 2 -> theta = 2/3 (below every cap), e = (2/3, 2/3, 2/3).
    # xfair[., A] = e / s * 2/2 = (2/3, 2/3, 1/3), 0 on B and C.
    # Tfair = (6 * 2/3, 3 * 2/3, 4 * 1/3) = (4, 2, 4/3).
    # Had B and C been counted, C' = 9 >= 4 would give e = s and dilute the share over idle types.
    p = round_({"A": 2, "B": 6, "C": 1}, job("p", 1, {"A": 6.0, "B": 0.0}), job("q", 1, {"A": 3.0}),
               job("r", 2, {"A": 4.0, "C": 9.0}))
    fs = fair_share(p)
    assert fs.usable_types.tolist() == [True, False, False]
    assert fs.entitlement == pytest.approx([2 / 3] * 3)
    assert fs.shares == pytest.approx(np.array([[2 / 3, 0, 0], [2 / 3, 0, 0], [1 / 3, 0, 0]]))
    assert fs.fair_throughput == pytest.approx([4.0, 2.0, 4 / 3])


def test_spec_example():
    # Spec section 6: V100, P100, K80 with 2 GPUs each, every type usable: C' = 6; sum s = 1+1+1+2 = 5 <= 6,
    # so e = s and xfair[j, g] = 1 * 2/6 = 1/3 on every type.
    # resnet18-1: (24.1 + 22.3 + 7.1) / 3 = 53.5 / 3 = 17.8333
    # lm-2: (64.7 + 58.2 + 17.1) / 3 = 140 / 3 = 46.6667
    # transformer-3: (8.6 + 5.1 + 1.8) / 3 = 15.5 / 3 = 5.1667
    # resnet50-4: (7.9 + 4.7 + 0) / 3 = 12.6 / 3 = 4.2 (its K80 third counts in C' but gives nothing)
    p = RoundProblem.from_dict({
        "gpus": {"V100": 2, "P100": 2, "K80": 2},
        "jobs": [job("resnet18-1", 1, {"V100": 24.1, "P100": 22.3, "K80": 7.1}),
                 job("lm-2", 1, {"V100": 64.7, "P100": 58.2, "K80": 17.1}),
                 job("transformer-3", 1, {"V100": 8.6, "P100": 5.1, "K80": 1.8}, deficit=0.5),
                 job("resnet50-4", 2, {"V100": 7.9, "P100": 4.7})],
        "colocation": [{"jobs": ["resnet18-1", "lm-2"], "gpu": "V100", "throughput": [15.2, 41.0]}],
        "epsilon": 0.1})
    fs = fair_share(p)
    assert fs.entitlement.tolist() == [1.0, 1.0, 1.0, 2.0]
    assert fs.shares == pytest.approx(np.full((4, 3), 1 / 3))
    assert fs.fair_throughput == pytest.approx([53.5 / 3, 140 / 3, 15.5 / 3, 4.2])
    assert fs.fair_throughput.round(4).tolist() == [17.8333, 46.6667, 5.1667, 4.2]


def test_empty_round():
    p = RoundProblem.from_dict({"gpus": {"A": 2}, "jobs": []})
    fs = fair_share(p)
    assert fs.entitlement.shape == (0,) and fs.shares.shape == (0, 1) and fs.fair_throughput.shape == (0,)


def test_hand_made_arrays_that_bypass_validation_are_rejected():
    # RoundProblem rejects a job that can run nowhere; fair_share guards arrays that slipped through.
    p = RoundProblem(gpu_types=("A",), capacity=np.array([1]), job_ids=("x", "y"), scale=np.array([1, 1]),
                     throughput=np.array([[1.0], [2.0]]))
    t = np.array([[1.0], [0.0]])
    t.setflags(write=False)
    object.__setattr__(p, "throughput", t)
    with pytest.raises(InvalidInputError, match=r"`jobs\[1\]` = 'y': fair throughput is 0"):
        fair_share(p)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_huge_but_finite_weights_are_relative():
    # weights (1e308, 1e308) are equal weights: 2 jobs on 1 GPU get 1/2 each
    p = round_({"A": 1}, job("a", 1, {"A": 1.0}, weight=1e308), job("b", 1, {"A": 2.0}, weight=1e308))
    assert fair_share(p).entitlement == pytest.approx([0.5, 0.5])


# ---------------------------------------------------------------- water_fill directly
def test_water_fill_doc_example():
    # caps (1, 4, 4), weights (1, 1, 2), total 6: theta >= 1 caps job 0; 1 + theta + 2 theta = 6 -> theta = 5/3
    e, theta = water_fill(np.array([1, 4, 4]), np.array([1.0, 1.0, 2.0]), 6)
    assert e == pytest.approx([1.0, 5 / 3, 10 / 3])
    assert theta == pytest.approx(5 / 3)


@given(st.lists(st.tuples(st.integers(1, 8), st.integers(1, 50)), min_size=1, max_size=12),
       st.integers(1, 60))
def test_water_fill_properties(jobs, total):
    s = np.array([j[0] for j in jobs], dtype=float)
    w = np.array([j[1] / 10 for j in jobs])
    e, theta = water_fill(s, w, total)
    assert e.sum() == pytest.approx(min(total, s.sum()))
    assert (e <= s + 1e-12).all() and (e > 0).all()
    if np.isfinite(theta):
        # e_j = min(s_j, theta w_j) exactly, with the level theta reported
        assert e == pytest.approx(np.minimum(s, theta * w))
        # uncapped jobs share in proportion to weight
        free = e < s - 1e-9
        if free.sum() >= 2:
            ratio = e[free] / w[free]
            assert ratio == pytest.approx(np.full(free.sum(), ratio[0]))
    else:
        assert s.sum() <= total and e.tolist() == s.tolist()


# ---------------------------------------------------------------- properties on random rounds
@given(round_problems(min_jobs=1))
def test_entitlements_sum_to_the_usable_capacity_and_respect_gangs(problem):
    fs = fair_share(problem)
    usable = problem.runnable.any(axis=0)
    c_prime = problem.capacity[usable].sum()
    assert fs.usable_types.tolist() == usable.tolist()
    assert fs.entitlement.sum() == pytest.approx(min(c_prime, problem.scale.sum()))
    assert (fs.entitlement <= problem.scale + 1e-9).all()
    assert (fs.entitlement > 0).all()


@given(round_problems(min_jobs=1))
def test_fair_allocation_is_feasible(problem):
    fs = fair_share(problem)
    x = fs.shares
    assert (x >= 0).all()
    assert (x[:, ~fs.usable_types] == 0).all()
    # time: every job gets at most the whole round
    assert (x.sum(axis=1) <= 1 + 1e-9).all()
    # capacity: sum_j s_j xfair[j, g] <= C_g (it equals (C_g / C') sum_j e_j)
    used = (problem.scale[:, None] * x).sum(axis=0)
    assert (used <= problem.capacity + 1e-9).all()
    # the share of every type is proportional to its capacity
    c_prime = problem.capacity[fs.usable_types].sum()
    expect = problem.capacity * fs.usable_types * fs.entitlement.sum() / c_prime
    assert used == pytest.approx(expect)


@given(round_problems(min_jobs=1))
def test_fair_throughput_only_counts_runnable_types(problem):
    fs = fair_share(problem)
    expect = (np.where(problem.runnable, problem.throughput, 0.0) * fs.shares).sum(axis=1)
    assert fs.fair_throughput == pytest.approx(expect)
    assert (fs.fair_throughput > 0).all()


@given(round_problems(min_jobs=2, weights=True), st.data())
def test_entitlement_is_monotone_in_weight(problem, data):
    j = data.draw(st.integers(0, problem.num_jobs - 1), label="job")
    factor = data.draw(st.sampled_from([1.5, 2.0, 10.0]), label="factor")
    w = problem.weight.copy()
    w[j] *= factor
    before = fair_share(problem).entitlement
    after = fair_share(problem.replace(weight=w)).entitlement
    assert after[j] >= before[j] - 1e-9
    others = np.arange(problem.num_jobs) != j
    assert (after[others] <= before[others] + 1e-9).all()


@given(round_problems(min_jobs=1), st.sampled_from([0.1, 3.0, 7.5]))
def test_entitlement_is_invariant_to_a_common_weight_factor(problem, factor):
    before = fair_share(problem).entitlement
    after = fair_share(problem.replace(weight=problem.weight * factor)).entitlement
    assert after == pytest.approx(before)


@given(round_problems(min_jobs=1), st.data())
def test_fair_throughput_scales_with_the_throughput_row(problem, data):
    j = data.draw(st.integers(0, problem.num_jobs - 1), label="job")
    t = problem.throughput.copy()
    t[j] *= 3.0
    before = fair_share(problem).fair_throughput
    after = fair_share(problem.replace(throughput=t, pair_throughput=problem.pair_throughput)).fair_throughput
    assert after[j] == pytest.approx(3.0 * before[j])
    others = np.arange(problem.num_jobs) != j
    assert after[others] == pytest.approx(before[others])


@given(round_problems(min_jobs=0))
def test_array_form_is_the_fair_share_of_the_round(problem):
    # fair_share_of, which the simulator calls for arrivals inside a round, is fair_share bit for bit,
    # whether the scales are given as the round holds them or as floats
    want = fair_share(problem)
    for scale in (problem.scale, problem.scale.astype(np.float64)):
        got = fair_share_of(scale, problem.weight, problem.throughput, problem.capacity)
        assert got.theta == want.theta or (np.isinf(got.theta) and np.isinf(want.theta))
        for a, b in ((got.entitlement, want.entitlement), (got.shares, want.shares),
                     (got.fair_throughput, want.fair_throughput), (got.usable_types, want.usable_types)):
            np.testing.assert_array_equal(a, b)


def test_array_form_gives_zero_where_the_round_raises():
    fs = fair_share_of(np.array([1, 4]), np.ones(2), np.array([[2.0], [3.0]]), np.array([2]))
    assert fs.fair_throughput.tolist()[1] == 0.0 and fs.fair_throughput[0] > 0   # the gang of 4 fits no type
