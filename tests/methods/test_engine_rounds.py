"""The round an engine plans: the full path (round_of_jobs) and the kept path (KeptRound) build the same round."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.cluster import Cluster
from fairshare.engine_config import EngineConfig
from fairshare.engine_rounds import (
    KeptRound,
    _inputs_of,
    _rule_inputs,
    cannot_run,
    owed_on_arrival,
    refuse_deficits,
    round_of_jobs,
    without,
)
from fairshare.errors import InvalidInputError
from fairshare.problem import MAX_VALUE
from fairshare.testing.random_rounds import random_round


def _jobs(n: int, seed: int) -> tuple[dict, list[dict], list[dict]]:
    doc = random_round(n, seed=seed).to_dict()
    for k, job in enumerate(doc["jobs"]):
        job.pop("deficit", None)
        job["remaining_iterations"] = float(50 + 13 * k)
        job["done_iterations"] = float(k)
        job["age_seconds"] = float(30 * (k % 5))
    return doc["gpus"], doc["jobs"], doc.get("colocation", [])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 5_000), known=st.integers(0, 24), length=st.floats(10.0, 360.0),
       rule=st.sampled_from(["none", "remaining"]), epsilon=st.sampled_from([0.0, 0.2]))
def test_both_paths_build_the_same_round(seed: int, known: int, length: float, rule: str, epsilon: float) -> None:
    """Whatever the deficits, rules and round length, the kept path's round equals the full path's."""
    gpus, jobs, pairs = _jobs(24, seed)
    config = EngineConfig(priority=rule, shortfall_price="none" if rule == "none" else "finish-time",
                          epsilon=epsilon)
    deficits = {j["id"]: 0.25 * k for k, j in enumerate(jobs[:known])}
    cluster = Cluster.of_counts(gpus, "gpus")
    full = round_of_jobs(jobs, pairs, cluster=cluster, deficits=deficits, config=config, length=length)
    kept = KeptRound(cluster.gpu_types)
    ids = kept.sync(jobs, pairs)
    live = kept.problem(jobs, ids, capacity=np.array(cluster.capacity), deficits=deficits, config=config,
                        length=length)
    assert live.to_dict() == full.to_dict()
    # a newcomer is owed its wait; a known job its deficit, both in the units of the round planned
    for i, job in enumerate(jobs):
        owed = deficits.get(job["id"], owed_on_arrival(job["age_seconds"], epsilon, config.round_seconds))
        assert full.deficit[i] == pytest.approx(min(MAX_VALUE, owed * config.round_seconds / length))
        assert full.deficit[i] >= 0


def test_a_query_copy_leaves_the_kept_jobs_as_they_were() -> None:
    gpus, jobs, pairs = _jobs(8, 3)
    kept = KeptRound(tuple(gpus))
    kept.sync(jobs, pairs)
    query = kept.copy()
    query.sync(jobs[:3], [])
    assert kept.sync(jobs, pairs) == tuple(j["id"] for j in jobs)
    assert kept.jobs.validated == 0  # nothing changed for the original: nothing validated again


def test_read_limits_which_rule_inputs_are_read_again() -> None:
    gpus, jobs, pairs = _jobs(6, 1)
    config = EngineConfig(priority="remaining", shortfall_price="none")
    kept = KeptRound(tuple(gpus))
    ids = kept.sync(jobs, pairs)
    args = {"capacity": np.array(list(gpus.values())), "deficits": {}, "config": config, "length": 360.0}
    first = kept.problem(jobs, ids, **args)
    bad = [dict(j, remaining_iterations=-1.0) for j in jobs]
    same = kept.problem(bad, ids, read={"nobody"}, **args)  # the others as last read: the bad values unread
    np.testing.assert_array_equal(same.priority, first.priority)
    with pytest.raises(InvalidInputError, match=r"jobs\[0\]\.remaining_iterations"):
        kept.problem(bad, ids, read={ids[0]}, **args)


@pytest.mark.parametrize(("job", "field"), [
    ({"id": "a", "scale": 1, "throughput": {"V100": 1.0}, "deficit": 0.5}, "jobs[0].deficit"),
    ({"id": "a", "scale": 1, "throughput": {"V100": 1.0}, "priority": 2.0}, "jobs[0].priority"),
    ({"id": "a", "scale": 1, "throughput": {"V100": 1.0}, "shortfall_price": 2.0}, "jobs[0].shortfall_price"),
    ({"id": "a", "scale": 1, "throughput": {"V100": 1.0}, "age_seconds": -3}, "jobs[0].age_seconds"),
    ({"id": "a", "scale": 1, "throughput": {"V100": 1.0}, "done_iterations": float("inf")},
     "jobs[0].done_iterations"),
])
def test_the_engine_owned_keys_are_refused_naming_the_field(job: dict, field: str) -> None:
    cluster = Cluster.of_counts({"V100": 2}, "gpus")
    with pytest.raises(InvalidInputError) as err:
        round_of_jobs([job], [], cluster=cluster, deficits={}, config=EngineConfig(), length=360.0)
    assert err.value.field == field
    with pytest.raises(InvalidInputError) as err:
        kept = KeptRound(("V100",))
        ids = kept.sync([job], [])
        kept.problem([job], ids, capacity=np.array([2]), deficits={}, config=EngineConfig(), length=360.0)
    assert err.value.field == field


def test_refuse_deficits_names_the_list_and_position() -> None:
    refuse_deficits([{"id": "a"}, 3, "x"], "arrived")  # only objects with the key are refused
    with pytest.raises(InvalidInputError) as err:
        refuse_deficits([{"id": "a"}, {"id": "b", "deficit": 1}], "changed")
    assert err.value.field == "changed[1].deficit"


def test_cannot_run_and_without() -> None:
    jobs = [{"id": "a", "scale": 1, "throughput": {"V100": 1.0, "K80": 0.5}},
            {"id": "b", "scale": 4, "throughput": {"V100": 1.0}, "age_seconds": 12.0},  # a gang larger than V100s
            {"id": "c", "scale": 1, "throughput": {"K80": 1.0}},  # only on a type with no GPUs
            {"id": "d", "scale": 1, "throughput": {"P100": 1.0}},  # unknown type: the round's error, not held
            {"id": "e", "scale": 0, "throughput": {"K80": 1.0}}]  # malformed: left to the round's checks
    held = cannot_run(jobs, {"V100": 2, "K80": 0})
    assert held == {"b": 12.0, "c": 0.0}
    pairs = [{"jobs": ["a", "b"], "gpu": "V100", "throughput": [0.5, 0.5]},
             {"jobs": ["a", "d"], "gpu": "V100", "throughput": [0.5, 0.5]}]
    kept, kept_pairs = without(jobs, pairs, held)
    assert [j["id"] for j in kept] == ["a", "d", "e"]
    assert kept_pairs == pairs[1:]


_VALUE = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 10**400), st.none(),
                   st.booleans(), st.just("7"), st.floats(0, 1e6))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({}, optional={"remaining_iterations": _VALUE, "done_iterations": _VALUE,
                                                     "age_seconds": _VALUE, "priority": st.just(1.0)}),
                min_size=1, max_size=6),
       st.booleans())
def test_rule_inputs_read_as_arrays_equal_one_job_at_a_time(jobs: list[dict], ruled: bool) -> None:
    """The array read of the rules' inputs gives the per-job values, or the same first error."""
    def one_by_one():
        return np.array([_rule_inputs(j, i, ruled, False) for i, j in enumerate(jobs)], np.float64)

    try:
        expect = one_by_one()
    except InvalidInputError as err:
        with pytest.raises(InvalidInputError) as got:
            _inputs_of(jobs, range(len(jobs)), ruled, False)
        assert (got.value.field, str(got.value)) == (err.field, str(err))
        return
    np.testing.assert_array_equal(_inputs_of(jobs, range(len(jobs)), ruled, False), expect)
