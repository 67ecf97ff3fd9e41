"""The engine at events (spec section 11): parts of a round, running jobs, newcomers' waits, price rules."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairshare import Engine
from fairshare.errors import InvalidInputError

JOBS = [{"id": "a", "scale": 1, "throughput": {"V100": 2.0, "K80": 1.0}},
        {"id": "b", "scale": 1, "throughput": {"V100": 2.0, "K80": 1.0}},
        {"id": "c", "scale": 1, "throughput": {"V100": 2.0, "K80": 1.0}}]


def test_a_newcomer_is_owed_the_time_it_waited():
    eng = Engine({"V100": 1, "K80": 0}, mode="exact", priority="none", round_seconds=100.0, epsilon=0.2)
    p = eng.problem([{**JOBS[0], "age_seconds": 50.0}, JOBS[1]])
    assert p.deficit.tolist() == pytest.approx([0.8 * 0.5, 0.0])
    # a job the engine knows keeps its own deficit whatever its age
    eng = Engine({"V100": 1, "K80": 0}, mode="exact", priority="none", deficits={"a": 0.1}, round_seconds=100.0)
    assert eng.problem([{**JOBS[0], "age_seconds": 500.0}]).deficit.tolist() == [0.1]


@given(st.floats(0.05, 0.95), st.lists(st.floats(0.0, 3.0), min_size=3, max_size=3),
       st.lists(st.floats(0.0, 2.0), min_size=3, max_size=3))
def test_two_parts_of_a_round_with_the_same_progress_carry_what_one_round_does(part, deficits, rho):
    gpus = {"V100": 1, "K80": 1}
    start = dict(zip("abc", deficits))
    progress = dict(zip("abc", rho))
    whole = Engine(gpus, mode="exact", priority="none", deficits=start)
    whole.commit(whole.plan(JOBS), progress=progress)
    split = Engine(gpus, mode="exact", priority="none", deficits=start)
    split.commit(split.plan(JOBS, round_seconds=360.0 * part), progress=progress)
    split.commit(split.plan(JOBS, round_seconds=360.0 * (1 - part)), progress=progress)
    got, want = split.deficits, whole.deficits
    assert all(v >= 0 for v in got.values())
    for j in "abc":
        assert got[j] == pytest.approx(want[j], rel=1e-9, abs=1e-9)


def test_a_plan_cut_short_counts_only_the_time_it_ran():
    eng = Engine({"V100": 1, "K80": 0}, mode="exact", priority="none")
    alloc = eng.plan(JOBS[:2])
    waiting = next(j for j in alloc.job_ids if not alloc.jobs.placed[alloc.job_ids.index(j)])
    deficits = eng.commit(alloc, seconds=90.0)
    assert deficits[waiting] == pytest.approx(0.25)  # a quarter of a round unserved
    with pytest.raises(InvalidInputError, match="`seconds`"):
        eng.commit(eng.plan(JOBS[:2]), seconds=0)


def test_a_part_of_a_round_states_deficits_in_its_own_units():
    eng = Engine({"V100": 1, "K80": 0}, mode="exact", priority="none", deficits={"a": 0.5})
    assert eng.problem(JOBS[:1], round_seconds=180.0).deficit.tolist() == [1.0]


def test_a_running_job_is_not_moved_when_its_restart_costs_more_than_the_move_gives():
    eng = Engine({"V100": 1, "K80": 1}, mode="exact", priority="none", fairness_weight=1.0)
    running = {**JOBS[0], "current": {"gpu": "K80", "partner": None}, "restart_seconds": 300.0}
    alloc = eng.plan([running], round_seconds=360.0)
    assert [p.gpu for p in alloc.placements] == ["K80"] and alloc.jobs.moved.tolist() == [False]
    alloc = eng.plan([{**running, "restart_seconds": 10.0}])
    assert [p.gpu for p in alloc.placements] == ["V100"] and alloc.jobs.moved.tolist() == [True]


def test_state_keeps_the_price_rule_and_round_length(tmp_path):
    eng = Engine({"V100": 1}, shortfall_price="finish-time", round_seconds=120.0)
    eng.save(tmp_path / "s.json")
    back = Engine.load(tmp_path / "s.json")
    assert back.round_seconds == 120.0 and back.state()["shortfall_price"] == eng.state()["shortfall_price"]
    assert back.state()["shortfall_price"]["rule"] == "finish-time"
    custom = Engine({"V100": 1}, shortfall_price=lambda p, s, t: np.ones(p.num_jobs))
    with pytest.raises(InvalidInputError, match="shortfall_price"):
        Engine.from_state(custom.state())
    with pytest.raises(InvalidInputError, match="round_seconds"):
        Engine({"V100": 1}, round_seconds=-1)


def test_the_price_rule_reads_the_jobs_work():
    eng = Engine({"V100": 1, "K80": 0}, mode="exact", priority="none", shortfall_price="finish-time")
    p = eng.problem([{**JOBS[0], "remaining_iterations": 100.0}, {**JOBS[1], "remaining_iterations": 400.0}])
    assert p.shortfall_price.tolist() == pytest.approx([2.0, 0.5])
    with pytest.raises(InvalidInputError, match=r"jobs\[0\]\.shortfall_price"):
        eng.problem([{**JOBS[0], "shortfall_price": 2.0}])
    # the short job wins the only GPU
    alloc = eng.plan([{**JOBS[0], "remaining_iterations": 4000.0}, {**JOBS[1], "remaining_iterations": 40.0}])
    assert [p.jobs for p in alloc.placements] == [("b",)]
