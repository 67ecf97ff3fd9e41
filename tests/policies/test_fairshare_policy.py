"""The fairshare policy's flags: epsilon override and the type-blind (heterogeneity-agnostic) ablation."""

from __future__ import annotations

import numpy as np

from fairshare.formulation import build_model
from fairshare.policies import RoundState, get_policy
from fairshare.problem import RoundProblem
from fairshare.testing.random_rounds import random_round
from fairshare.validators import allocation_violations


def test_type_blind_plan_is_feasible_and_reported_with_true_throughputs() -> None:
    p = random_round(120, seed=4)
    state = RoundState.first_round(build_model(p))
    aware = get_policy("fairshare").allocate(state)
    blind = get_policy("fairshare", heterogeneity_aware=False).allocate(state)
    assert allocation_violations(p, blind) == []
    assert allocation_violations(p, aware) == []
    b, a = blind.values, aware.values
    assert b.efficiency <= a.efficiency + 1e-9 or b.objective <= a.objective + 1e-6


def test_type_blind_plan_ignores_speedups() -> None:
    # one fast and one slow GPU; job a gains 10x on the fast one, job b nothing. The aware plan puts a on
    # the fast GPU; a type-blind plan cannot tell the types apart and, by index order, may not.
    doc = {"gpus": {"fast": 1, "slow": 1},
           "jobs": [{"id": "b", "scale": 1, "throughput": {"fast": 1.0, "slow": 1.0}},
                    {"id": "a", "scale": 1, "throughput": {"fast": 10.0, "slow": 1.0}}]}
    p = RoundProblem.from_dict(doc)
    state = RoundState.first_round(build_model(p))
    aware = get_policy("fairshare", mode="exact").allocate(state)
    assert aware.jobs.job_gpu.tolist() == [1, 0]  # b slow, a fast
    blind = get_policy("fairshare", mode="exact", heterogeneity_aware=False).allocate(state)
    assert sorted(blind.jobs.job_gpu.tolist()) == [0, 1]  # both run ...
    assert blind.values.efficiency <= aware.values.efficiency + 1e-12  # ... and never better than the aware plan
    got = blind.jobs
    assert np.allclose(got.throughput, [p.throughput[0, got.job_gpu[0]], p.throughput[1, got.job_gpu[1]]])


def test_epsilon_override_changes_the_round() -> None:
    p = random_round(40, seed=1)
    state = RoundState.first_round(build_model(p))
    a = get_policy("fairshare", mode="exact", epsilon=0.5).allocate(state)
    b = get_policy("fairshare", mode="exact").allocate(state)
    assert a.values.objective >= b.values.objective - 1e-6  # more slack never lowers the optimum


def test_the_polish_guard_of_the_policy_is_far_above_its_work_limit() -> None:
    # a simulation must not depend on the machine's load: the policy's polish stops at its node limit, long
    # before its time guard; a user's own polish_seconds is kept, and exact gets no fast-only option
    from fairshare.policies.fairshare import POLICY_POLISH_SECONDS, FairsharePolicy

    assert FairsharePolicy()._solve_options == {"polish_seconds": POLICY_POLISH_SECONDS}
    assert POLICY_POLISH_SECONDS >= 30
    assert FairsharePolicy(options={"polish_seconds": 0.5})._solve_options == {"polish_seconds": 0.5}
    assert FairsharePolicy(mode="exact", options={"time_limit": 5})._solve_options == {"time_limit": 5}
    p = random_round(64, seed=0, fairness_weight=10.0, epsilon=0.3)  # a round that is polished
    model = build_model(p)
    state = RoundState.first_round(model)
    alloc = FairsharePolicy(priority="none").allocate(state)
    assert "polished" in alloc.report.message or "local search" in alloc.report.message
    from fairshare import allocate

    unlimited = allocate(p, mode="fast", polish_seconds=1e6)
    assert alloc.placements == unlimited.placements


def test_one_highs_thread_reaches_every_solve_of_the_policy(monkeypatch) -> None:
    # the recipe for runs that repeat exactly on a busy machine (docs/performance.md): options={"threads": 1}
    # must reach every HiGHS run of the round, the LP and the polish MILP alike
    from contextlib import contextmanager

    import fairshare.solvers.highs as highs
    from fairshare.policies.fairshare import FairsharePolicy

    asked: list[int | None] = []
    real = highs.scheduler

    @contextmanager
    def spy(threads):
        asked.append(threads)
        with real(threads) as pool:
            yield pool

    monkeypatch.setattr(highs, "scheduler", spy)
    p = random_round(64, seed=0, fairness_weight=1.0, epsilon=0.3)  # a round that is polished
    state = RoundState.first_round(build_model(p))
    one = FairsharePolicy(priority="none", options={"threads": 1}).allocate(state)
    assert "polished" in one.report.message and len(asked) >= 2 and set(asked) == {1}
    asked.clear()
    default = FairsharePolicy(priority="none").allocate(state)
    assert asked and set(asked) == {None}                          # the default takes HiGHS's own pool
    assert allocation_violations(p, one) == [] and allocation_violations(p, default) == []


def test_the_policy_binds_a_round_with_nodes_whatever_its_priority_rule() -> None:
    # a round document with nodes gets the second stage (node ids, GPU indices) from the policy as from
    # allocate(), with priorities set on the built model or without priorities
    from fairshare.policies.fairshare import FairsharePolicy

    doc = {"gpus": {"V100": 4, "K80": 2},
           "nodes": [{"id": "v0", "gpu": "V100", "gpus": 2}, {"id": "v1", "gpu": "V100", "gpus": 2},
                     {"id": "k0", "gpu": "K80", "gpus": 2}],
           "jobs": [{"id": f"j{i}", "scale": 1 + i % 2, "throughput": {"V100": 2.0 + i, "K80": 1.0}}
                    for i in range(5)]}
    p = RoundProblem.from_dict(doc)
    state = RoundState.first_round(build_model(p))
    for rule in ("remaining", "none"):
        alloc = FairsharePolicy(priority=rule).allocate(state)
        assert alloc.binding is not None, rule
        bound = {b.jobs: b for b in alloc.binding.placements}
        assert set(bound) == {pl.jobs for pl in alloc.placements}, rule
