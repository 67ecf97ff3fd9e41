"""A pending plan and its commit: the deficit update for the part of a round that ran."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import allocate
from fairshare.engine_config import EngineConfig
from fairshare.engine_plans import PlanLog, describe, pending_plan, settle
from fairshare.errors import InvalidInputError
from fairshare.fair_share import next_deficit
from fairshare.problem import MAX_VALUE, RoundProblem
from fairshare.testing.random_rounds import random_round


def _planned(seed: int, fraction: float, held: dict[str, float] | None = None, epsilon: float = 0.1):
    problem = random_round(12, seed=seed)
    problem = RoundProblem.from_dict({**problem.to_dict(), "epsilon": epsilon})
    config = EngineConfig(epsilon=epsilon)
    alloc = allocate(problem, mode="fast")
    plan = pending_plan(alloc, problem, held or {}, deficits={"old": 2.0}, config=config,
                        seconds=fraction * config.round_seconds)
    return problem, alloc, plan, config


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 3_000), ran=st.floats(0.05, 1.0), fraction=st.floats(0.1, 1.0),
       progress=st.lists(st.floats(0.0, 3.0), min_size=12, max_size=12))
def test_settle_is_the_deficit_update_for_the_part_that_ran(seed, ran, fraction, progress) -> None:
    """D <- (t/R) max(0, D R/t + 1 - eps - rho): never negative, and a whole round is next_deficit."""
    problem, alloc, plan, config = _planned(seed, fraction)
    delivered = dict(zip(problem.job_ids, progress))
    seconds = ran * config.round_seconds
    new = settle(plan, progress=delivered, seconds=seconds, round_seconds=config.round_seconds)
    assert list(new) == list(problem.job_ids)  # every job of the round, none other
    start = problem.deficit * fraction  # what each owed, in rounds of the engine's length
    expect = ran * next_deficit(np.minimum(MAX_VALUE, start / ran), problem.epsilon, np.array(progress))
    np.testing.assert_allclose(list(new.values()), expect, rtol=1e-12, atol=1e-12)
    assert min(new.values()) >= 0


def test_settle_takes_the_plan_as_delivered_and_held_jobs_got_nothing() -> None:
    problem, alloc, plan, config = _planned(5, 1.0, held={"waiting": 0.0, "old": 0.0})
    new = settle(plan, progress=None, seconds=None, round_seconds=config.round_seconds)
    rho = alloc.jobs.progress
    np.testing.assert_allclose([new[j] for j in problem.job_ids], next_deficit(problem.deficit, 0.1, rho))
    assert new["waiting"] == pytest.approx(0.9)  # a newcomer that could run nowhere: owed one round, less epsilon
    assert new["old"] == pytest.approx(2.9)  # a known job keeps its deficit and is owed this round too


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"progress": [1.0]}, "progress"),
    ({"progress": {"nobody": 1.0}}, "progress.nobody"),
    ({"progress": {"J0": -1.0}}, "progress.J0"),
    ({"progress": {"J0": float("nan")}}, "progress.J0"),
    ({"seconds": 0}, "seconds"),
    ({"seconds": True}, "seconds"),
])
def test_settle_refuses_bad_input_naming_the_field(kwargs: dict, field: str) -> None:
    problem, alloc, plan, config = _planned(2, 1.0)
    if "J0" in field:
        field = field.replace("J0", problem.job_ids[0])
        kwargs = {"progress": {problem.job_ids[0]: kwargs["progress"]["J0"]}}
    args = {"progress": None, "seconds": None, **kwargs}
    with pytest.raises(InvalidInputError) as err:
        settle(plan, round_seconds=config.round_seconds, **args)
    assert err.value.field == field


def test_the_log_says_why_a_plan_is_not_pending() -> None:
    _, first, _, _ = _planned(1, 1.0)
    _, second, _, _ = _planned(2, 1.0)
    log = PlanLog()
    assert not log.last_committed
    log.add(first, "superseded")
    log.add(second, "committed")
    assert log.last_committed
    assert "already committed" in log.why_not_pending(second)
    assert "older plan" in log.why_not_pending(first)
    assert "not the pending plan" in log.why_not_pending(allocate(random_round(3, seed=9), mode="fast"))
    assert "must be the Allocation" in log.why_not_pending({"status": "optimal"})
    assert describe(second).startswith("<Allocation of 12 jobs") and describe(3) == "int"
