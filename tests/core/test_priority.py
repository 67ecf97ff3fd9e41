"""Priorities on the efficiency term (spec section 7): validation, invariants of the formulation, output."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import RoundProblem, allocate, build_model
from fairshare.errors import InvalidInputError
from fairshare.fair_share import fair_share
from fairshare.testing.strategies import round_problems

DOC = {"gpus": {"V100": 1, "K80": 1},
       "jobs": [{"id": "a", "scale": 1, "throughput": {"V100": 4.0, "K80": 1.0}},
                {"id": "b", "scale": 1, "throughput": {"V100": 2.0, "K80": 1.0}}]}


def _with_priority(values):
    return {**DOC, "jobs": [{**j, "priority": v} for j, v in zip(DOC["jobs"], values)]}


@pytest.mark.parametrize(("value", "match"), [
    (-1.0, r"`jobs\[0\]\.priority` = -1(\.0)?: must be finite and >= 0"),
    (float("nan"), r"`jobs\[0\]\.priority` = nan"),
    (float("inf"), r"`jobs\[0\]\.priority` = inf"),
    ("high", r"`jobs\[0\]\.priority` = 'high'"),
    (True, r"`jobs\[0\]\.priority` = True"),
    (1e13, r"`jobs\[0\]\.priority` = 10000000000000\.0"),
])
def test_bad_priorities_are_rejected_naming_the_field(value, match):
    with pytest.raises(InvalidInputError, match=match):
        RoundProblem.from_dict(_with_priority([value, 1.0]))


def test_priority_array_is_validated_too():
    p = RoundProblem.from_dict(DOC)
    with pytest.raises(InvalidInputError, match=r"`jobs\[1\]\.priority` = -2\.0"):
        p.replace(priority=np.array([1.0, -2.0]))
    with pytest.raises(InvalidInputError, match=r"`priority`"):
        p.replace(priority=np.ones(3))


def test_priority_decides_who_gets_the_fast_gpu():
    # without priorities a (4x faster on the V100) takes it; a large priority on b hands it to b
    cheap = {**DOC, "fairness_weight": 0.01}  # fairness cheap, so that the efficiency term decides
    plain = allocate(cheap, mode="exact")
    assert {p.jobs[0]: p.gpu for p in plain.placements} == {"a": "V100", "b": "K80"}
    pri = allocate({**_with_priority([1.0, 10.0]), "fairness_weight": 0.01}, mode="exact")
    assert {p.jobs[0]: p.gpu for p in pri.placements} == {"a": "K80", "b": "V100"}
    # both E's are reported: plain best-GPU equivalents and the prioritised value that was optimised
    assert pri.values.efficiency == pytest.approx(1.0 / 4.0 + 2.0 / 2.0)
    assert pri.values.prioritized_efficiency == pytest.approx(1.0 / 4.0 + 10.0 * 2.0 / 2.0)
    out = json.loads(pri.to_json())
    assert out["efficiency"] == pytest.approx(pri.values.efficiency)
    assert out["prioritized_efficiency"] == pytest.approx(pri.values.prioritized_efficiency)


def test_document_round_trip_keeps_priorities_and_leaves_out_the_default():
    p = RoundProblem.from_dict(_with_priority([0.5, 1.0]))
    doc = p.to_dict()
    assert doc["jobs"][0]["priority"] == 0.5 and "priority" not in doc["jobs"][1]
    assert RoundProblem.from_dict(doc).priority.tolist() == [0.5, 1.0]
    assert "priority" not in json.dumps(RoundProblem.from_dict(DOC).to_dict())


@settings(max_examples=20)
@given(round_problems())
def test_all_ones_priority_is_todays_formulation(problem):
    ones = problem.replace(priority=np.ones(problem.num_jobs))
    a, b = build_model(problem), build_model(ones)
    assert np.array_equal(a.value, b.value) and np.array_equal(a.eff_priority, a.eff)
    for mode in ("exact", "fast"):
        x, y = allocate(problem, mode=mode), allocate(ones, mode=mode)
        assert [(p.jobs, p.gpu) for p in x.placements] == [(p.jobs, p.gpu) for p in y.placements]
        assert x.values.objective == y.values.objective and x.values.prioritized_efficiency == x.values.efficiency


@settings(max_examples=20)
@given(round_problems(), st.sampled_from([0.1, 3.0, 40.0]), st.integers(0, 2**31 - 1))
def test_scaling_priorities_and_lambda_together_scales_the_objective(problem, c, seed):
    rng = np.random.default_rng(seed)
    pi = rng.uniform(0.0, 5.0, problem.num_jobs)
    base = problem.replace(priority=pi)
    scaled = problem.replace(priority=c * pi, fairness_weight=c * problem.fairness_weight)
    a, b = allocate(base, mode="exact"), allocate(scaled, mode="exact")
    # the same optimisation problem times c: the same optimum (placements may differ only among ties)
    assert b.values.objective == pytest.approx(c * a.values.objective, rel=1e-5, abs=1e-6)
    value_of_b_in_base = build_model(base).evaluate(_columns(build_model(base), b)).objective
    assert value_of_b_in_base == pytest.approx(a.values.objective, rel=1e-5, abs=1e-6)


@settings(max_examples=20)
@given(round_problems(), st.integers(0, 2**31 - 1), st.sampled_from([0.0, 1.0, 100.0]))
def test_fairness_floor_holds_whatever_the_priorities(problem, seed, spread):
    # lambda prices the shortfall: the LP optimum can exceed the fair allocation's shortfall only by what the
    # extra prioritised efficiency pays for, S_lp <= S_fair + (E_pi_lp - E_pi_fair) / lambda
    rng = np.random.default_rng(seed)
    p = problem.replace(priority=rng.uniform(0.0, spread, problem.num_jobs))
    model = build_model(p)
    fs = fair_share(p)
    c = model.columns
    x_fair = np.where(c.is_pair, 0.0, fs.shares[c.job_a, c.gpu])
    fair = model.evaluate(x_fair)
    lp = allocate(p, mode="lp")
    lam = p.fairness_weight
    slack = (lp.values.prioritized_efficiency - fair.prioritized_efficiency) / lam
    assert lp.values.shortfall <= fair.shortfall + slack + 1e-6 * (1 + fair.shortfall)


def _columns(model, alloc):
    """0/1 column values of ``model`` for an integer allocation of the same round."""
    p, c = model.problem, model.columns
    x = np.zeros(c.num)
    gidx = {g: i for i, g in enumerate(p.gpu_types)}
    for pl in alloc.placements:
        a = p.job_index(pl.jobs[0])
        b = p.job_index(pl.jobs[1]) if len(pl.jobs) == 2 else -1
        hit = (c.job_a == a) & (c.job_b == b) & (c.gpu == gidx[pl.gpu])
        x[np.flatnonzero(hit)[0]] = 1.0
    return x


# ---------------------------------------------------------------- rules (fairshare.priority)
from fairshare import Engine  # noqa: E402
from fairshare.policies import RoundState, get_policy  # noqa: E402
from fairshare.priority import FinishTime, JobHistory, NoPriority, Remaining, priority_rule  # noqa: E402

FOUR = RoundProblem.from_dict({"gpus": {"A": 2}, "jobs": [
    {"id": str(i), "scale": 1, "throughput": {"A": 1.0}} for i in range(4)]})


def test_remaining_rule_values_unknown_work_and_clip():
    rem = np.array([100.0, 200.0, 400.0, np.inf])  # median of the known: 200 s of best-GPU time
    pi = Remaining().priorities(FOUR, JobHistory(rem))
    assert pi.tolist() == pytest.approx([2.0, 1.0, 0.5, 1.0])
    squared = Remaining(exponent=2.0, clip=(0.3, 3.0)).priorities(FOUR, JobHistory(rem))
    assert squared.tolist() == pytest.approx([3.0, 1.0, 0.3, 1.0])  # 4 and 0.25 clipped


def test_finish_time_rule_favours_the_job_that_fell_behind():
    # all four jobs are 1,000 s old with 1,000 iterations left at fair throughput 0.5 it/s; job 0 has done
    # nothing (it will finish late: high projected rho), job 3 has done the most
    state = JobHistory(remaining_iterations=np.full(4, 1000.0), done_iterations=np.array([0.0, 250.0, 500.0, 1000.0]),
                     age=np.full(4, 1000.0))
    pi = FinishTime().priorities(FOUR, state)
    assert pi[0] > pi[1] > pi[2] > pi[3]
    assert NoPriority().priorities(FOUR, state).tolist() == [1.0] * 4


@pytest.mark.parametrize(("rule", "params", "match"), [
    ("shortest", {}, r"`priority` = 'shortest': unknown rule"),
    ("remaining", {"exponent": -1}, r"`priority_exponent` = -1"),
    ("remaining", {"clip": (5, 1)}, r"`priority_clip` = \(5, 1\)"),
    ("none", {"exponent": 2}, r"`priority` = 'none': takes no options"),
])
def test_bad_rules_are_refused(rule, params, match):
    with pytest.raises(InvalidInputError, match=match):
        priority_rule(rule, **params)


def test_a_callable_rule_is_checked():
    assert priority_rule(lambda p, s: np.full(p.num_jobs, 2.0)).priorities(FOUR, JobHistory(np.ones(4))).tolist() \
        == [2.0] * 4
    with pytest.raises(InvalidInputError, match="finite values >= 0"):
        priority_rule(lambda p, s: -np.ones(p.num_jobs)).priorities(FOUR, JobHistory(np.ones(4)))


def _engine_jobs(remaining):
    return [{"id": "short", "scale": 1, "throughput": {"V100": 2.0, "K80": 1.0}, "remaining_iterations": remaining[0]},
            {"id": "long", "scale": 1, "throughput": {"V100": 2.0, "K80": 1.0}, "remaining_iterations": remaining[1]}]


def test_engine_applies_its_rule_and_saves_it(tmp_path):
    eng = Engine({"V100": 1, "K80": 1}, mode="exact", fairness_weight=0.01, priority="remaining")
    problem = eng.problem(_engine_jobs([100.0, 10000.0]))
    assert problem.priority[0] > 1 > problem.priority[1]
    alloc = eng.plan(_engine_jobs([100.0, 10000.0]))
    assert {p.jobs[0]: p.gpu for p in alloc.placements} == {"short": "V100", "long": "K80"}
    eng.save(tmp_path / "s.json")
    back = Engine.load(tmp_path / "s.json")
    assert back.state()["priority"] == {"rule": "remaining", "exponent": 1.0, "clip": [0.05, 20.0]}
    assert np.array_equal(back.problem(_engine_jobs([100.0, 10000.0])).priority, problem.priority)


def test_engine_custom_rule_must_be_given_again_on_load(tmp_path):
    eng = Engine({"V100": 1}, priority=lambda p, s: np.ones(p.num_jobs))
    eng.save(tmp_path / "s.json")
    with pytest.raises(InvalidInputError, match=r"`state\.priority` = 'custom'"):
        Engine.load(tmp_path / "s.json")
    assert Engine.load(tmp_path / "s.json", priority="none").state()["priority"] == {"rule": "none"}


def test_engine_refuses_explicit_priorities_under_a_rule_and_bad_job_state():
    eng = Engine({"V100": 1}, priority="remaining")
    with pytest.raises(InvalidInputError, match=r"`jobs\[0\]\.priority`"):
        eng.problem([{"id": "a", "scale": 1, "throughput": {"V100": 1.0}, "priority": 3.0}])
    with pytest.raises(InvalidInputError, match=r"`jobs\[0\]\.remaining_iterations` = -5"):
        eng.problem([{"id": "a", "scale": 1, "throughput": {"V100": 1.0}, "remaining_iterations": -5}])
    # rule none: explicit round-document priorities pass through
    plain = Engine({"V100": 1}, priority="none")
    assert plain.problem([{"id": "a", "scale": 1, "throughput": {"V100": 1.0}, "priority": 3.0}]).priority[0] == 3.0


def test_fairshare_policy_priority_option_uses_the_jobs_state():
    p = RoundProblem.from_dict({**DOC, "fairness_weight": 0.01})
    model = build_model(p)
    # b is close to done, a has far to go: `remaining` hands the fast GPU to b
    state = RoundState(model=model, time=0.0, round_length=360.0, arrival=np.zeros(2),
                       attained_service=np.zeros(2), received=np.zeros((2, 2)), done_iterations=np.zeros(2),
                       remaining_iterations=np.array([1e6, 10.0]))
    none = get_policy("fairshare", mode="exact", priority="none").allocate(state)
    rem = get_policy("fairshare", mode="exact", priority="remaining").allocate(state)
    assert {q.jobs[0]: q.gpu for q in none.placements}["a"] == "V100"
    assert {q.jobs[0]: q.gpu for q in rem.placements}["b"] == "V100"
    assert rem.values.efficiency < none.values.efficiency  # the plain E is reported, lower for the prioritised plan
    # the policy's default rule is `remaining` (docs/results-priority.md): same placement as asked explicitly
    default = get_policy("fairshare", mode="exact").allocate(state)
    assert [(q.jobs, q.gpu) for q in default.placements] == [(q.jobs, q.gpu) for q in rem.placements]


def test_engine_default_rule_is_remaining_and_without_job_state_places_as_none():
    eng = Engine({"V100": 1, "K80": 1})
    assert eng.state()["priority"] == {"rule": "remaining", "exponent": 1.0, "clip": [0.05, 20.0]}
    jobs = [{"id": "a", "scale": 1, "throughput": {"V100": 4.0, "K80": 1.0}},
            {"id": "b", "scale": 1, "throughput": {"V100": 2.0, "K80": 1.5}}]
    # no remaining_iterations: every pi_j is 1, so the default plans exactly as the rule none
    assert eng.problem(jobs).priority.tolist() == [1.0, 1.0]
    plain = Engine({"V100": 1, "K80": 1}, priority="none")
    assert eng.plan(jobs).to_dict()["placements"] == plain.plan(jobs).to_dict()["placements"]
    # with it, the job closer to done gets the larger priority
    rem = eng.problem([{**jobs[0], "remaining_iterations": 1e6}, {**jobs[1], "remaining_iterations": 10.0}])
    assert rem.priority[1] > rem.priority[0]
