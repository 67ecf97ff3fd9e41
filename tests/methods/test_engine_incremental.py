"""The incremental engine (kept jobs, kept LP) answers as a cold plan does, on random sequences of events."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import Engine, allocate
from fairshare.engine_rounds import JOB_STATE_KEYS
from fairshare.errors import InvalidInputError
from fairshare.formulation import build_model
from fairshare.kept_jobs import KeptJobs
from fairshare.methods.kept import KeptLP
from fairshare.methods.lp import solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.testing.random_rounds import random_round

RULES = ("none", "remaining")
STATE = JOB_STATE_KEYS


def _pool(n: int, seed: int) -> tuple[dict, list[dict], list[dict]]:
    doc = random_round(n, seed=seed).to_dict()
    jobs = doc["jobs"]
    for k, job in enumerate(jobs):
        job.pop("deficit", None)
        job["restart_seconds"] = float(10 * (k % 4))
        job["remaining_iterations"] = float(100 + 37 * k)
    return doc["gpus"], jobs, doc.get("colocation", [])


def _pairs(pairs: list[dict], ids: set[str]) -> list[dict]:
    return [c for c in pairs if all(j in ids for j in c["jobs"])]


def _same_round(a, b) -> None:
    """Two round problems hold the same jobs, numbers and candidates (in the same order)."""
    da, db = a.to_dict(), b.to_dict()
    assert da == db


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), steps=st.lists(st.tuples(st.sampled_from(["event", "round", "plan"]),
                                                             st.integers(0, 3), st.integers(0, 3),
                                                             st.floats(5.0, 300.0)), min_size=3, max_size=6),
       rule=st.sampled_from(RULES))
def test_incremental_plans_equal_cold_plans(seed: int, steps: list, rule: str) -> None:
    """Every plan of an incremental engine: the round the full path builds, and its LP optimum.

    After each plan (whole rounds, events with arrivals and departures, a job changed under the same id) the
    incremental engine's round equals the one the full path builds from the same jobs and deficits (a twin
    engine loaded from its state), the kept LP's optimum equals a cold solve of that round, and the placement
    is as good as a cold plan's within the gaps both certify.
    """
    gpus, pool, pairs = _pool(48, seed)
    price = "none" if rule == "none" else "finish-time"
    live = Engine(gpus, mode="fast", incremental=True, priority=rule, shortfall_price=price)
    active, waiting = pool[:32], pool[32:]
    ids = {j["id"] for j in active}
    a = live.plan(active, _pairs(pairs, ids))
    _check(live, a, rule, price)
    for kind, leave, arrive, seconds in steps:
        last = list(live.last_jobs)
        gone = [j["id"] for j in last[:leave]]
        new, waiting = waiting[:arrive], waiting[arrive:]
        new_ids = {j["id"] for j in new}
        ids = {j["id"] for j in last if j["id"] not in gone} | new_ids
        cand = [c for c in pairs if all(j in ids for j in c["jobs"]) and any(j in new_ids for j in c["jobs"])]
        if kind == "event" and seconds < live.pending_seconds:
            a = live.event(seconds=seconds, arrived=new, departed=gone, colocation=cand)
        else:
            live.commit(a)
            jobs = [_without_partner(j, gone) for j in last if j["id"] not in gone] + new
            if kind == "plan":  # a changed job (same id, other numbers) must be validated again
                jobs = [dict(jobs[0], throughput={g: 2 * v for g, v in jobs[0]["throughput"].items()})] + jobs[1:]
            col = [c for c in list(live.last_colocation) if all(j in ids for j in c["jobs"])] + cand
            a = live.plan(jobs, col)
        _check(live, a, rule, price)


def _without_partner(job: dict, gone: list[str]) -> dict:
    cur = job.get("current")
    if cur and cur.get("partner") in gone:
        return dict(job, current={"gpu": cur["gpu"]})
    return job


def _check(live: Engine, a, rule: str, price: str) -> None:
    jobs, col = list(live.last_jobs), list(live.last_colocation)
    length = live.pending_seconds
    twin = Engine.from_state(live.state(), priority=rule, shortfall_price=price)  # the full path, same deficits
    twin.incremental = False
    p_live = live.problem(jobs, col, round_seconds=length)
    p_full = twin.problem(jobs, col, round_seconds=length)
    _same_round(p_live, p_full)
    model = build_model(p_full)
    optimum = solve_relaxation(model, model.tightened_lp(), SolveOptions()).objective  # over the empty placement
    assert live._kept_lp.objective == pytest.approx(optimum, rel=1e-7, abs=1e-6)  # the LP optimum
    cold = allocate(p_full, mode="fast")
    assert a.job_ids == cold.job_ids
    for alloc in (a, cold):  # placements: within their certified gaps of each other and below the LP optimum
        assert alloc.values.objective - model.obj_null <= optimum + 1e-6 * (1 + abs(optimum))
        assert alloc.values.objective <= alloc.report.bound + 1e-6 * (1 + abs(alloc.report.bound))
    va, vc = a.values.objective, cold.values.objective
    assert va >= vc - (a.report.bound - va) - 1e-6 * (1 + abs(vc))
    assert vc >= va - (cold.report.bound - vc) - 1e-6 * (1 + abs(va))


def test_kept_lp_matches_cold_lp_over_changing_rounds() -> None:
    """A KeptLP changed from round to round (jobs leave and arrive, values move) finds each cold LP optimum."""
    kept = KeptLP()
    for k in range(6):
        p = random_round(120 + 9 * k, seed=k % 3)
        warm = allocate(p, mode="fast", warm=kept)
        cold = allocate(p, mode="fast")
        assert warm.report.bound == pytest.approx(cold.report.bound, rel=1e-8)
        assert kept.rounds == k + 1
        assert kept.changed == (k > 0)
    assert kept.added_columns > 0 and kept.deleted_columns > 0


def test_kept_jobs_validates_only_changes_and_names_the_callers_position() -> None:
    gpus, pool, pairs = _pool(20, 1)
    kept = KeptJobs(tuple(gpus))
    ids = kept.sync(pool, [], STATE)
    assert kept.validated == 20 and ids == tuple(j["id"] for j in pool)
    kept.sync(pool, [], STATE)
    assert kept.validated == 0
    changed = [dict(j) for j in pool]
    changed[7]["scale"] = 2
    kept.sync(changed, [], STATE)
    assert kept.validated == 1
    bad = [dict(j) for j in pool]
    bad[13]["scale"] = -1
    with pytest.raises(InvalidInputError) as err:
        kept.sync(bad, [], STATE)
    assert err.value.field == "jobs[13].scale"
    typo = [dict(j) for j in pool]
    typo[4]["wieght"] = 2
    with pytest.raises(InvalidInputError) as err:
        kept.sync(typo, [], STATE)
    assert err.value.field.startswith("jobs[4]")
    dup = pool + [dict(pool[2])]
    with pytest.raises(InvalidInputError, match="duplicate"):
        kept.sync(dup, [], STATE)
    wrong_pair = [{"jobs": [pool[0]["id"], "nobody"], "gpu": next(iter(gpus)), "throughput": [1.0, 1.0]}]
    with pytest.raises(InvalidInputError) as err:
        kept.sync(pool, list(pairs[:0]) + wrong_pair, STATE)
    assert err.value.field == "colocation[0].jobs"
    # a job that only moved (its `current` changed) is checked without validating the rest again
    g0 = next(iter(gpus))
    kept.sync(pool, [], STATE)
    running = [dict(j, current={"gpu": g0}) if k < 3 else j for k, j in enumerate(pool)]
    kept.sync(running, [], STATE)
    assert (kept.validated, kept.placed) == (0, 3)
    problem = kept.problem([j["id"] for j in pool], np.array(list(gpus.values())), np.zeros(20), 0.0, 100.0, 360.0)
    assert problem.running is not None and problem.running.gpu.tolist()[:4] == [0, 0, 0, -1]
    wrong = [dict(j, current={"gpu": "TPU"}) if k == 5 else j for k, j in enumerate(running)]
    with pytest.raises(InvalidInputError) as err:
        kept.sync(wrong, [], STATE)
    assert err.value.field == "jobs[5].current.gpu"
    typo_cur = [dict(j, current={"gpu": g0, "mate": "x"}) if k == 1 else j for k, j in enumerate(running)]
    with pytest.raises(InvalidInputError) as err:
        kept.sync(typo_cur, [], STATE)
    assert err.value.field == "jobs[1].current.mate"
    kept.sync(pool, [], STATE)
    assert kept.placed == 3  # stopped running
    # a caller that changes its objects after a plan does not change what is kept
    mine = [dict(j, throughput=dict(j["throughput"])) for j in pool]
    kept.sync(mine, [], STATE)
    g = next(iter(mine[0]["throughput"]))
    mine[0]["throughput"][g] = 12345.0
    kept.sync(mine, [], STATE)
    assert kept.validated == 1


def test_event_arguments_are_checked_before_anything_is_committed() -> None:
    gpus, pool, _ = _pool(16, 2)
    eng = Engine(gpus, incremental=True)
    with pytest.raises(InvalidInputError, match="no plan pending"):
        eng.event(seconds=10)
    eng.plan(pool[:10])
    for bad in (0, -1, 360, float("nan"), "10"):
        with pytest.raises(InvalidInputError) as err:
            eng.event(seconds=bad)
        assert err.value.field == "seconds"
    with pytest.raises(InvalidInputError) as err:
        eng.event(seconds=10, departed=["nobody"])
    assert err.value.field == "departed[0]"
    assert eng.round_index == 0  # nothing committed
    alloc = eng.event(seconds=60, arrived=pool[10:12], departed=[pool[0]["id"]])
    assert eng.round_index == 1
    assert pool[0]["id"] not in alloc.job_ids and pool[10]["id"] in alloc.job_ids
    with pytest.raises(InvalidInputError) as err:  # the rest of the round is 300 s now
        eng.event(seconds=300)
    assert err.value.field == "seconds"


def test_event_makes_running_jobs_pay_their_restart_to_move() -> None:
    """After an event the jobs of the committed plan run where it put them: the new plan knows it."""
    gpus, pool, _ = _pool(24, 3)
    eng = Engine(gpus, incremental=True, priority="none", shortfall_price="none")
    first = eng.plan(pool[:16])
    eng.event(seconds=30, arrived=pool[16:18])
    jobs = list(eng.last_jobs)
    placed = {j for p in first.placements for j in p.jobs}
    running = {j["id"] for j in jobs if "current" in j}
    assert running == placed
    problem = eng.problem(jobs, round_seconds=330)
    assert problem.running is not None
    assert int((problem.running.gpu >= 0).sum()) == len(placed)


def test_incremental_is_checked_and_settable() -> None:
    with pytest.raises(InvalidInputError) as err:
        Engine({"V100": 1}, incremental=1)
    assert err.value.field == "incremental"
    eng = Engine.from_state(Engine({"V100": 1}).state())
    assert eng.incremental is True
    eng.incremental = False
    assert eng.incremental is False
    eng.incremental = True
    a = eng.plan([{"id": "a", "scale": 1, "throughput": {"V100": 2.0}}])
    assert [p.jobs for p in a.placements] == [("a",)]
    assert np.isfinite(a.values.objective)


@pytest.mark.parametrize("incremental", [True, False])
def test_an_event_with_a_bad_job_commits_nothing(incremental: bool) -> None:
    gpus, pool, _ = _pool(16, 4)
    eng = Engine(gpus, incremental=incremental)
    first = eng.plan(pool[:10])
    bad = dict(pool[10], scale=-2)
    with pytest.raises(InvalidInputError) as err:
        eng.event(seconds=60, arrived=[pool[11], bad])
    assert err.value.field == ("arrived[1].scale" if incremental else "jobs[11].scale")  # full path: its list
    assert eng.round_index == 0 and eng.pending_seconds == 360.0
    with pytest.raises(InvalidInputError) as err:
        eng.event(seconds=60, changed=[dict(pool[3], throughput={"nowhere": 1.0})])
    assert err.value.field.startswith("changed[0]" if incremental else "jobs[3]")
    assert eng.round_index == 0
    alloc = eng.commit(first)  # the first plan is still the pending one
    assert set(alloc) == {j["id"] for j in pool[:10]}


def test_an_event_changes_a_job_and_drops_a_departed_partner() -> None:
    gpus, pool, pairs = _pool(40, 5)
    ids = {j["id"] for j in pool[:30]}
    eng = Engine(gpus, priority="none", shortfall_price="none")
    plan = eng.plan(pool[:30], _pairs(pairs, ids))
    together = [p.jobs for p in plan.placements if len(p.jobs) == 2]
    if not together:
        pytest.skip("no co-located pair in this plan")
    a, b = together[0]
    job_a = next(j for j in pool if j["id"] == a)
    more = dict(job_a, remaining_iterations=5.0, restart_seconds=99.0)
    plan2 = eng.event(seconds=30, departed=[b], changed=[more])
    jobs = {j["id"]: j for j in eng.last_jobs}
    assert b not in jobs and jobs[a]["restart_seconds"] == 99.0
    assert jobs[a]["current"] == {"gpu": next(p.gpu for p in plan.placements if p.jobs == (a, b))}
    twin = Engine.from_state(eng.state(), priority="none", shortfall_price="none")
    twin.incremental = False
    _same_round(eng.problem(list(eng.last_jobs), list(eng.last_colocation), round_seconds=330),
                twin.problem(list(eng.last_jobs), list(eng.last_colocation), round_seconds=330))
    assert b not in plan2.job_ids


def test_problem_is_a_query_that_leaves_the_kept_jobs_alone() -> None:
    gpus, pool, _ = _pool(20, 6)
    a, b = Engine(gpus), Engine(gpus)
    a.plan(pool[:12])
    b.plan(pool[:12])
    a.problem(pool[5:18])  # another set of jobs, asked about only
    pa = a.event(seconds=40, arrived=pool[12:14], departed=[pool[0]["id"]])
    pb = b.event(seconds=40, arrived=pool[12:14], departed=[pool[0]["id"]])
    assert pa.job_ids == pb.job_ids
    assert pa.values.objective == pytest.approx(pb.values.objective, rel=1e-12)


@pytest.mark.parametrize("incremental", [True, False])
def test_a_job_with_every_throughput_zero_is_held_out_on_both_paths(incremental: bool) -> None:
    eng = Engine({"V100": 2}, incremental=incremental)
    alloc = eng.plan([{"id": "a", "scale": 1, "throughput": {"V100": 3.0}},
                      {"id": "z", "scale": 1, "throughput": {"V100": 0.0}}])
    assert alloc.job_ids == ("a",) and eng.held_out == ("z",)
    assert eng.commit() == {"a": 0.0, "z": 1.0}


def test_an_event_refuses_two_arrivals_with_one_id() -> None:
    gpus, pool, _ = _pool(12, 7)
    eng = Engine(gpus)
    eng.plan(pool[:8])
    with pytest.raises(InvalidInputError) as err:
        eng.event(seconds=30, arrived=[pool[8], dict(pool[9], id=pool[8]["id"])])
    assert err.value.field == "arrived[1].id"
    with pytest.raises(InvalidInputError) as err:
        eng.event(seconds=30, arrived=[dict(pool[9], id=pool[0]["id"])])
    assert err.value.field == "arrived[0].id"
    assert eng.round_index == 0


@pytest.mark.parametrize("incremental", [True, False])
@pytest.mark.parametrize("bad", [5, "job", None])
def test_an_event_refuses_an_arrival_that_is_not_an_object(incremental: bool, bad: object) -> None:
    gpus, pool, _ = _pool(6, 3)
    eng = Engine(gpus, incremental=incremental)
    eng.plan(pool[:4])
    with pytest.raises(InvalidInputError) as err:
        eng.event(seconds=30, arrived=[pool[4], bad])
    assert err.value.field == "arrived[1]"  # on both paths
    assert eng.round_index == 0 and eng.pending_seconds is not None  # nothing committed


@pytest.mark.parametrize("incremental", [True, False])
@pytest.mark.parametrize("gpus", [None, {"V100": 3}, {"V100": 2, "K80": 1}])
@pytest.mark.parametrize(("bad", "key"), [({"priority": 2.0}, "priority"), ({"age_seconds": -1}, "age_seconds"),
                                          ({"remaining_iterations": "many"}, "remaining_iterations")])
def test_an_event_with_a_bad_rule_input_commits_nothing(incremental: bool, gpus: dict | None, bad: dict,
                                                         key: str) -> None:
    """The arrived job is refused before the running plan is committed, on every path (a cluster change too)."""
    eng = Engine({"V100": 2}, incremental=incremental)
    eng.plan([{"id": "a", "scale": 1, "throughput": {"V100": 1.0}}])
    with pytest.raises(InvalidInputError) as err:
        eng.event(seconds=10, arrived=[{"id": "b", "scale": 1, "throughput": {"V100": 1.0}, **bad}], gpus=gpus)
    assert err.value.field == f"arrived[0].{key}"  # on every path
    assert eng.round_index == 0 and eng.pending_seconds == 360.0 and dict(eng.gpus) == {"V100": 2}
    assert [j["id"] for j in eng.last_jobs] == ["a"] and eng.deficits == {}
    after = eng.event(seconds=10, arrived=[{"id": "b", "scale": 1, "throughput": {"V100": 1.0}}], gpus=gpus)
    assert after.job_ids == ("a", "b")  # the engine goes on as if the bad event had not been given


J2 = [{"id": "a", "scale": 1, "throughput": {"V100": 3.0}}, {"id": "b", "scale": 1, "throughput": {"V100": 2.0}}]
C1 = {"id": "c", "scale": 1, "throughput": {"V100": 1.0}}


def _switch_on(eng: Engine) -> None:
    eng.incremental = True


def _new_types(eng: Engine) -> None:
    eng.gpus = {"V100": 1, "K80": 1}


def _query(eng: Engine) -> None:
    eng.problem(J2)


def _bad_plan(eng: Engine) -> None:
    with pytest.raises(InvalidInputError):
        eng.plan([J2[0], dict(J2[1], deficit=1.0), C1])


def _bad_plan_late(eng: Engine) -> None:  # refused after the kept jobs were synced (a rule input)
    with pytest.raises(InvalidInputError):
        eng.plan([J2[0], dict(J2[1], age_seconds=-1.0), C1])


def _not_a_list(eng: Engine) -> None:
    with pytest.raises(InvalidInputError):
        eng.plan("notalist")  # type: ignore[arg-type]


@pytest.mark.parametrize("steps", [(_switch_on, _query), (_switch_on, _not_a_list), (_new_types, _query),
                                   (_query,), (_bad_plan,), (_bad_plan_late,), (_switch_on, _bad_plan_late)])
def test_an_event_after_queries_and_refused_plans_keeps_every_job(steps) -> None:
    """What happened between the plan and the event (a query, a refused plan, a setting) loses no job."""
    eng = Engine({"V100": 1}, mode="exact", incremental=_switch_on not in steps)
    eng.plan(J2)
    for step in steps:
        step(eng)
    alloc = eng.event(seconds=100, arrived=[C1])
    assert sorted(alloc.job_ids) == ["a", "b", "c"] and [j["id"] for j in eng.last_jobs] == ["a", "b", "c"]
    assert sorted(eng.commit()) == ["a", "b", "c"] and eng.round_index == 2


_BAD_PAIRS = {"unknown job": "unknown job", "itself": "itself", "scales": "different scales",
              "zero throughput": "able to run alone", "no such type": "not in `gpus`",
              "negative": "non-negative", "twice": "listed twice", "key": "unknown key"}


@pytest.mark.parametrize("kind", sorted(_BAD_PAIRS))
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), where=st.integers(0, 5))
def test_a_bad_candidate_pair_is_refused_as_the_round_document_refuses_it(kind: str, seed: int,
                                                                          where: int) -> None:
    """The kept jobs check a new pair against only what they keep of its jobs: the same field and reason.

    The good pairs are kept by a first plan, so that the bad one (with, for a pair listed twice, its first
    listing) alone is new and its position in the list given (after ``where`` good ones) must be named, not
    its position among the new pairs.
    """
    from fairshare.documents import round_problem_from_dict

    gpus, pool, pairs = _pool(12, seed)
    g0 = next(iter(gpus))
    pool = [{k: v for k, v in j.items() if k not in STATE} for j in pool]
    for k in range(4):  # jobs 0-3 build the bad pair; 3 cannot run on g0, 2 asks for two GPUs
        pool[k]["scale"] = 2 if k == 2 else 1
        pool[k]["throughput"] = {**dict.fromkeys(gpus, 1.0), g0: 0.0 if k == 3 else 1.0}
    a, b = pool[0]["id"], pool[1]["id"]
    bad = {"unknown job": {"jobs": [a, "nobody"], "gpu": g0, "throughput": [1.0, 1.0]},
           "itself": {"jobs": [a, a], "gpu": g0, "throughput": [1.0, 1.0]},
           "scales": {"jobs": [b, pool[2]["id"]], "gpu": g0, "throughput": [1.0, 1.0]},
           "zero throughput": {"jobs": [b, pool[3]["id"]], "gpu": g0, "throughput": [1.0, 1.0]},
           "no such type": {"jobs": [a, b], "gpu": "TPU", "throughput": [1.0, 1.0]},
           "negative": {"jobs": [a, b], "gpu": g0, "throughput": [-1.0, 1.0]},
           "twice": {"jobs": [b, a], "gpu": g0, "throughput": [1.0, 1.0]},
           "key": {"jobs": [a, b], "gpu": g0, "throughput": [1.0, 1.0], "share": 1}}[kind]
    first = {j["id"] for j in pool[:4]}
    good = [c for c in _pairs(pairs, {j["id"] for j in pool}) if first.isdisjoint(c["jobs"])][:where]
    listed = [{"jobs": [a, b], "gpu": g0, "throughput": [1.0, 1.0]}] if kind == "twice" else []
    colocation = [*good, *listed, bad]
    with pytest.raises(InvalidInputError) as full:
        round_problem_from_dict({"gpus": gpus, "jobs": pool, "colocation": colocation})
    assert _BAD_PAIRS[kind] in full.value.reason  # the check named by the kind fired
    kept = KeptJobs(tuple(gpus))
    kept.sync(pool, good, STATE)
    with pytest.raises(InvalidInputError) as inc:
        kept.sync(pool, colocation, STATE)
    assert (inc.value.field, inc.value.reason) == (full.value.field, full.value.reason)


@pytest.mark.parametrize("incremental", [False, True])
def test_a_weight_out_of_range_is_reported_before_a_bad_pair_as_in_a_round_document(incremental: bool) -> None:
    gpus = {"V100": 8, "K80": 2}
    a = {"id": "a", "scale": 1, "throughput": {"V100": 1.0}}
    c = {"id": "c", "scale": 1, "throughput": {"V100": 1.0}}
    b = {"id": "b", "scale": 2, "weight": 1e13, "throughput": {"V100": 1.0}}  # and a pair of different scales
    eng = Engine(gpus, mode="fast", incremental=incremental)
    eng.plan([c, a], [])
    with pytest.raises(InvalidInputError) as err:
        eng.plan([c, a, b], [{"jobs": ["b", "a"], "gpu": "V100", "throughput": [0.5, 0.5]}])
    assert err.value.field == "jobs[2].weight" and "times the smallest weight" in err.value.reason


@pytest.mark.parametrize("incremental", [False, True])
def test_a_query_names_a_job_that_can_run_nowhere_by_its_place_in_the_list(incremental: bool) -> None:
    jobs = [{"id": "x", "scale": 1, "throughput": {"V100": 1.0}},
            {"id": "b", "scale": 1, "throughput": {"V100": 1.0, "K80": 1.0}},
            {"id": "a", "scale": 1, "throughput": {"V100": 0.0, "K80": 0.0}}]
    pairs = [{"jobs": ["a", "b"], "gpu": "K80", "throughput": [0.5, 0.5]}]
    with pytest.raises(InvalidInputError) as err:
        Engine({"V100": 8, "K80": 2}, mode="fast", incremental=incremental).problem(jobs, pairs)
    assert err.value.field == "jobs[2]" and "can run nowhere" in err.value.reason
