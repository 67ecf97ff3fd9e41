"""An Engine that loses the last node of a GPU type keeps scheduling (issue 31, M6)."""

from __future__ import annotations

import pytest

from fairshare import Engine
from fairshare.errors import InvalidInputError

NODES = [{"id": "v", "gpu": "V100", "gpus": 4}, {"id": "k", "gpu": "K80", "gpus": 2}]
JOBS = [{"id": "a", "scale": 1, "throughput": {"V100": 10, "K80": 3}},
        {"id": "b", "scale": 1, "throughput": {"K80": 3}}]


def test_the_last_node_of_a_type_fails_and_the_engine_keeps_planning(tmp_path) -> None:
    e = Engine({"V100": 4, "K80": 2}, nodes=NODES, epsilon=0.1)
    e.commit(e.plan(JOBS))
    e.nodes = NODES[:1]  # node k fails
    assert dict(e.gpus) == {"V100": 4, "K80": 0}  # the type stays, with no GPUs
    for expected in (0.9, 1.8):
        a = e.plan(JOBS)
        assert a.job_ids == ("a",) and e.held_out == ("b",)
        assert [(pl.jobs, pl.gpu) for pl in a.placements] == [(("a",), "V100")]
        gpu, where = a.binding.gpus_of()["a"]
        assert gpu == "V100" and {node for node, _ in where} == {"v"}
        deficits = e.commit()
        assert deficits["b"] == pytest.approx(expected)  # b got nothing: D + 1 - epsilon
        assert e.held_out == ()
    e.save(tmp_path / "s.json")
    e = Engine.load(tmp_path / "s.json")
    assert dict(e.gpus) == {"V100": 4, "K80": 0} and e.deficits["b"] == pytest.approx(1.8)
    e.nodes = NODES  # repaired
    a = e.plan(JOBS)
    assert e.held_out == () and ((("b",), "K80") in [(pl.jobs, pl.gpu) for pl in a.placements])


def test_a_type_set_to_zero_gpus_holds_its_jobs_out() -> None:
    e = Engine({"V100": 4, "K80": 2})
    e.gpus = {"V100": 4, "K80": 0}
    pairs = [{"jobs": ["a", "b"], "throughput": {"K80": [2, 2]}}]
    a = e.plan(JOBS, pairs)
    assert a.job_ids == ("a",) and e.held_out == ("b",)
    e.commit(progress={"b": 0.0})
    assert e.deficits == {"a": 0.0, "b": 1.0}


def test_a_gang_larger_than_what_is_left_waits() -> None:
    e = Engine({"V100": 2})
    a = e.plan([{"id": "big", "scale": 4, "throughput": {"V100": 5}},
                {"id": "one", "scale": 1, "throughput": {"V100": 5}}])
    assert a.job_ids == ("one",) and e.held_out == ("big",)


def test_jobs_that_are_malformed_are_still_refused_naming_the_field() -> None:
    e = Engine({"V100": 4, "K80": 0})
    with pytest.raises(InvalidInputError, match=r"jobs\[0\].throughput.P100"):
        e.plan([{"id": "x", "scale": 1, "throughput": {"P100": 3}}])
    with pytest.raises(InvalidInputError, match="jobs"):
        e.plan([{"id": "x", "scale": 1, "throughput": {"K80": 3}}, {"id": "x", "scale": 1,
                                                                    "throughput": {"V100": 3}}])
