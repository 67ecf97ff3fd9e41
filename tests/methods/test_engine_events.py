"""The rest of a round after an event: who stays, where each runs now, and the event's arguments checked."""

from __future__ import annotations

import pytest

from fairshare import allocate
from fairshare.engine_events import event_round, with_current
from fairshare.errors import InvalidInputError
from fairshare.problem import RoundProblem

JOBS = [{"id": "a", "scale": 1, "throughput": {"V100": 2.0}},
        {"id": "b", "scale": 1, "throughput": {"V100": 1.0}},
        {"id": "c", "scale": 1, "throughput": {"V100": 1.5}},
        {"id": "d", "scale": 2, "throughput": {"V100": 0.5}}]  # a slow gang of the whole cluster
PAIRS = [{"jobs": ["a", "b"], "gpu": "V100", "throughput": [2.0, 1.0]}]  # sharing costs nothing


@pytest.fixture(scope="module")
def plan():
    """a and b share a GPU, c runs alone, d waits (two V100s)."""
    alloc = allocate(RoundProblem.from_dict({"gpus": {"V100": 2}, "jobs": JOBS, "colocation": PAIRS}), mode="exact")
    where = {j: p for p in alloc.placements for j in p.jobs}
    assert where["a"].jobs == ("a", "b") and where["c"].jobs == ("c",) and "d" not in where
    return alloc


def test_the_rest_of_the_round(plan) -> None:
    new = {"id": "e", "scale": 1, "throughput": {"V100": 1.0}, "current": {"gpu": "V100"}}
    changed = {"id": "c", "scale": 1, "throughput": {"V100": 3.0}}
    ev = event_round(plan, 360.0, JOBS, PAIRS, seconds=60.0, arrived=[new], departed=["b"], changed=[changed],
                     colocation=[])
    assert (ev.ran, ev.rest) == (60.0, 300.0)
    assert [j["id"] for j in ev.jobs] == ["a", "c", "d", "e"]
    by_id = {j["id"]: j for j in ev.jobs}
    assert by_id["a"]["current"] == {"gpu": "V100"}  # its partner left: it runs alone now
    assert by_id["c"]["current"] == {"gpu": "V100"} and by_id["c"]["throughput"] == {"V100": 3.0}
    assert "current" not in by_id["d"] and "current" not in by_id["e"]  # not running; an arrival never is
    assert ev.colocation == []  # the pair named a departed job
    assert ev.placed == {"a": {"gpu": "V100"}}  # changed objects carry their own placement
    assert ev.departed == {"b"} and ev.read == {"c", "e"}
    assert [j["id"] for j in ev.changed] == ["c"]
    assert JOBS[0].get("current") is None  # the caller's objects are not modified


def test_partners_keep_each_other(plan) -> None:
    ev = event_round(plan, 360.0, JOBS, PAIRS, seconds=10.0, arrived=[], departed=["d"], changed=[], colocation=[])
    by_id = {j["id"]: j for j in ev.jobs}
    assert by_id["a"]["current"] == {"gpu": "V100", "partner": "b"}
    assert by_id["b"]["current"] == {"gpu": "V100", "partner": "a"}
    assert ev.colocation == PAIRS


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"seconds": 360.0}, "seconds"),
    ({"seconds": 0.0}, "seconds"),
    ({"seconds": "10"}, "seconds"),
    ({"departed": "a"}, "departed"),
    ({"departed": ["zz"]}, "departed[0]"),
    ({"arrived": {"id": "x"}}, "arrived"),
    ({"changed": [{"id": "zz"}]}, "changed[0].id"),
    ({"changed": [{"id": "a"}], "departed": ["a"]}, "changed[0].id"),
    ({"changed": [7]}, "changed[0].id"),
    ({"colocation": {"jobs": []}}, "colocation"),
])
def test_bad_events_are_refused_naming_the_field(plan, kwargs: dict, field: str) -> None:
    args = {"seconds": 30.0, "arrived": [], "departed": [], "changed": [], "colocation": [], **kwargs}
    with pytest.raises(InvalidInputError) as err:
        event_round(plan, 360.0, JOBS, PAIRS, **args)
    assert err.value.field == field


def test_with_current() -> None:
    job = {"id": "a", "current": {"gpu": "V100"}}
    assert with_current(job, {"gpu": "V100"}) is job
    assert with_current(job, None) == {"id": "a"}
    assert with_current(job, {"gpu": "K80"}) == {"id": "a", "current": {"gpu": "K80"}}
    assert with_current(5, None) == 5  # not an object: left for the round's checks
