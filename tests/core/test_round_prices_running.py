"""Spec sections 10 (per-job shortfall price) and 11 (running jobs and the price of moving them) in one round."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairshare import RoundProblem, allocate
from fairshare.errors import InvalidInputError
from fairshare.formulation import build_model
from fairshare.running import Running
from fairshare.testing.recompute import placements_of, recompute
from fairshare.testing.strategies import round_documents

BASE = {"gpus": {"V100": 1, "K80": 1},
        "jobs": [{"id": "short", "scale": 1, "throughput": {"V100": 10.0, "K80": 5.0}},
                 {"id": "long", "scale": 1, "throughput": {"V100": 10.0, "K80": 5.0}},
                 {"id": "third", "scale": 1, "throughput": {"V100": 10.0, "K80": 5.0}}]}


def _doc(**job_extra):
    doc = {**BASE, "jobs": [dict(j) for j in BASE["jobs"]]}
    for job in doc["jobs"]:
        job.update(job_extra.get(job["id"], {}))
    return doc


# ------------------------------------------------------------------------------------ section 10
@given(round_documents(max_jobs=8))
def test_all_prices_one_gives_todays_round_exactly(doc):
    priced = {**doc, "jobs": [{**j, "shortfall_price": 1.0} for j in doc["jobs"]]}
    for mode in ("exact", "fast", "lp"):
        a, b = allocate(doc, mode=mode), allocate(priced, mode=mode)
        va, vb = a.values.objective, b.values.objective
        assert va == vb or (math.isnan(va) and math.isnan(vb))
        assert placements_of(a) == placements_of(b)
        assert a.values.shortfall == b.values.shortfall
        assert b.values.priced_shortfall == pytest.approx(b.values.shortfall, rel=1e-12, abs=1e-12)


@given(round_documents(max_jobs=8, shortfall_prices=True))
def test_objective_and_both_shortfalls_recomputed_from_the_placement(doc):
    problem = RoundProblem.from_dict(doc)
    for mode in ("exact", "fast", "lp"):
        alloc = allocate(problem, mode=mode)
        ref = recompute(problem, placements_of(alloc))
        assert alloc.values.shortfall == pytest.approx(ref["shortfall"], rel=1e-7, abs=1e-7)
        assert alloc.values.priced_shortfall == pytest.approx(ref["priced_shortfall"], rel=1e-7, abs=1e-7)
        assert alloc.values.objective == pytest.approx(ref["objective"], rel=1e-7, abs=1e-6)
        assert alloc.values.obj_null == pytest.approx(ref["obj_null"], rel=1e-9, abs=1e-9)


@given(round_documents(max_jobs=8, shortfall_prices=True, running=True))
def test_exact_never_worse_than_fast_with_prices_and_running_jobs(doc):
    exact, fast = allocate(doc, mode="exact"), allocate(doc, mode="fast")
    assert exact.status == "optimal"
    scale = max(1.0, abs(exact.values.objective))
    assert exact.values.objective >= fast.values.objective - 1e-6 * scale


def test_a_higher_price_wins_the_only_gpu_of_the_round():
    one = {"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 1, "throughput": {"V100": 1.0}},
                                        {"id": "b", "scale": 1, "throughput": {"V100": 1.0}}]}
    for priced in ("a", "b"):
        doc = {**one, "jobs": [{**j, "shortfall_price": 3.0 if j["id"] == priced else 1.0} for j in one["jobs"]]}
        alloc = allocate(doc, mode="exact")
        assert [p.jobs for p in alloc.placements] == [(priced,)]
        # the plain shortfall is the same whoever runs; the priced one counts the unpaid job's price
        assert alloc.values.shortfall == pytest.approx(1.0)
        assert alloc.values.priced_shortfall == pytest.approx(1.0)  # the waiting job: w = 1, f = 1, sigma = 1


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "2", True, None, 1e13])
def test_bad_shortfall_price_is_rejected_naming_the_field(bad):
    with pytest.raises(InvalidInputError, match=r"`jobs\[1\]\.shortfall_price`"):
        RoundProblem.from_dict(_doc(long={"shortfall_price": bad}))


def test_shortfall_price_round_trips_and_default_is_left_out():
    p = RoundProblem.from_dict(_doc(long={"shortfall_price": 2.5}))
    doc = p.to_dict()
    assert doc["jobs"][1]["shortfall_price"] == 2.5 and "shortfall_price" not in doc["jobs"][0]
    assert RoundProblem.from_dict(doc).shortfall_price.tolist() == [1.0, 2.5, 1.0]


def test_with_prices_equals_a_rebuilt_model():
    doc = _doc(short={"deficit": 0.5})
    model = build_model(RoundProblem.from_dict(doc))
    f = np.array([4.0, 0.25, 1.0])
    fresh = build_model(RoundProblem.from_dict(_doc(short={"deficit": 0.5, "shortfall_price": 4.0},
                                                    long={"shortfall_price": 0.25})))
    quick = model.with_prices(shortfall_price=f, priority=np.array([1.0, 2.0, 1.0]))
    fresh = fresh.with_priority(np.array([1.0, 2.0, 1.0]))
    np.testing.assert_allclose(quick.value, fresh.value)
    assert quick.obj_null == pytest.approx(fresh.obj_null)


# ------------------------------------------------------------------------------------ section 11
def test_no_running_job_gives_todays_round():
    plain = RoundProblem.from_dict(_doc())
    with_restart = RoundProblem.from_dict({**_doc(long={"restart_seconds": 30.0}), "round_seconds": 60.0})
    assert with_restart.running is None
    assert placements_of(allocate(plain, mode="exact")) == placements_of(allocate(with_restart, mode="exact"))


def test_a_running_job_stays_unless_moving_is_worth_its_restart():
    # "long" runs on the K80; the V100 is free. Moving gives 10 it/s but costs the restart.
    doc = {"gpus": {"V100": 1, "K80": 1}, "fairness_weight": 1.0, "round_seconds": 360.0,
           "jobs": [{"id": "long", "scale": 1, "throughput": {"V100": 10.0, "K80": 5.0},
                     "current": {"gpu": "K80", "partner": None}}]}
    for restart, expect in ((0.0, "V100"), (60.0, "V100"), (300.0, "K80"), (360.0, "K80")):
        doc["jobs"][0]["restart_seconds"] = restart
        alloc = allocate(doc, mode="exact")
        assert [p.gpu for p in alloc.placements] == [expect], restart
        kept = 1 - restart / 360.0
        assert alloc.jobs.throughput[0] == pytest.approx(10.0 * kept if expect == "V100" else 5.0)
        assert alloc.jobs.moved.tolist() == [expect == "V100"]


def test_moving_away_from_a_partner_is_a_move():
    doc = {"gpus": {"V100": 2}, "round_seconds": 100.0,
           "jobs": [{"id": "a", "scale": 1, "throughput": {"V100": 10.0}, "restart_seconds": 50.0,
                     "current": {"gpu": "V100", "partner": "b"}},
                    {"id": "b", "scale": 1, "throughput": {"V100": 10.0}, "restart_seconds": 50.0,
                     "current": {"gpu": "V100", "partner": "a"}}],
           "colocation": [{"jobs": ["a", "b"], "gpu": "V100", "throughput": [6.0, 6.0]}]}
    model = build_model(RoundProblem.from_dict(doc))
    c = model.columns
    alone = c.job_b < 0
    np.testing.assert_allclose(c.tput_a[alone], 5.0)      # alone: 10 it/s for half the round
    np.testing.assert_allclose(c.tput_a[~alone], 6.0)     # together where they are: no restart
    np.testing.assert_allclose(c.tput_b[~alone], 6.0)


@given(round_documents(max_jobs=8, running=True))
def test_running_rounds_recomputed_from_the_placement(doc):
    problem = RoundProblem.from_dict(doc)
    for mode in ("exact", "fast"):
        alloc = allocate(problem, mode=mode)
        ref = recompute(problem, placements_of(alloc))
        np.testing.assert_allclose(alloc.jobs.throughput, ref["tau"], rtol=1e-9, atol=1e-9)
        assert alloc.values.objective == pytest.approx(ref["objective"], rel=1e-7, abs=1e-6)
        if problem.running is not None:
            run = problem.running
            moved = run.is_running & (alloc.jobs.job_gpu >= 0) & ((alloc.jobs.job_gpu != run.gpu)
                                                            | (alloc.jobs.job_partner != run.partner))
            assert alloc.jobs.moved.tolist() == moved.tolist()


@given(round_documents(max_jobs=8, running=True, shortfall_prices=True))
def test_running_documents_round_trip(doc):
    p = RoundProblem.from_dict(doc)
    q = RoundProblem.from_dict(p.to_dict())
    assert (p.running is None) == (q.running is None)
    if p.running is not None:
        for name in ("gpu", "partner", "restart_seconds"):
            assert getattr(p.running, name).tolist() == getattr(q.running, name).tolist()
        assert p.running.round_seconds == q.running.round_seconds
    assert p.shortfall_price.tolist() == q.shortfall_price.tolist()


@pytest.mark.parametrize(("extra", "field", "why"), [
    ({"long": {"current": {"gpu": "A100"}}}, r"jobs\[1\]\.current\.gpu", "not in `gpus`"),
    ({"long": {"current": "K80"}}, r"jobs\[1\]\.current", "must be an object"),
    ({"long": {"current": {"gpu": "K80", "node": 3}}}, r"jobs\[1\]\.current\.node", "unknown key"),
    ({"long": {"current": {"gpu": "K80", "partner": "nobody"}}}, r"jobs\[1\]\.current\.partner", "unknown job"),
    ({"long": {"current": {"gpu": "K80", "partner": "long"}}}, r"jobs\[1\]\.current\.partner", "partner must"),
    ({"long": {"current": {"gpu": "K80", "partner": "short"}}}, r"jobs\[1\]\.current\.partner", "partner must"),
    ({"long": {"current": {"gpu": "K80", "partner": "short"}}, "short": {"current": {"gpu": "V100",
                                                                                     "partner": "long"}}},
     r"jobs\[\d\]\.current\.partner", "same type"),
    ({"long": {"restart_seconds": -1}}, r"jobs\[1\]\.restart_seconds", "finite and >= 0"),
    ({"long": {"restart_seconds": "30"}}, r"jobs\[1\]\.restart_seconds", "finite and >= 0"),
    ({"long": {"restart_seconds": float("inf")}}, r"jobs\[1\]\.restart_seconds", "finite and >= 0"),
])
def test_bad_running_fields_are_rejected_naming_the_field(extra, field, why):
    with pytest.raises(InvalidInputError, match=field + ".*" + why):
        RoundProblem.from_dict(_doc(**extra))


@pytest.mark.parametrize("bad", [0, -5, float("nan"), "360", 1e12])
def test_bad_round_seconds_is_rejected(bad):
    doc = {**_doc(long={"current": {"gpu": "K80"}}), "round_seconds": bad}
    with pytest.raises(InvalidInputError, match="`round_seconds`"):
        RoundProblem.from_dict(doc)


@given(round_documents(max_jobs=8, running=True), st.data())
def test_take_jobs_keeps_running_state_of_the_rows(doc, data):
    p = RoundProblem.from_dict(doc)
    if p.num_jobs == 0:
        return
    rows = data.draw(st.lists(st.integers(0, p.num_jobs - 1), unique=True, min_size=1))
    sub = p.take_jobs(rows)
    if p.running is None:
        assert sub.running is None
        return
    run = p.running
    expect_gpu = run.gpu[rows]
    if sub.running is None:
        assert (expect_gpu < 0).all()
        return
    assert sub.running.gpu.tolist() == expect_gpu.tolist()
    for i, r in enumerate(rows):
        k = int(run.partner[r])
        got = int(sub.running.partner[i])
        if k >= 0:
            assert got == (rows.index(k) if k in rows else -2)
        else:
            assert got == k


def test_running_checked_directly():
    r = Running.checked(2, 1, [0, -1], [-1, -1], [30.0, 0.0], 60.0)
    assert r.kept_fraction.tolist() == [0.5, 1.0]
    assert r.column_factor(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([-1, -1, -1])).tolist() == [1, .5, 1]
