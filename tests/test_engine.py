"""The stateful engine: deficit update (spec section 4), arrivals and departures, atomic save and load."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import InvalidInputError
from fairshare.engine import Engine

GPUS = {"V100": 1, "K80": 1}


def job(jid: str, v100: float = 4.0, k80: float | None = 1.0, scale: int = 1) -> dict:
    tput = {"V100": v100} if k80 is None else {"V100": v100, "K80": k80}
    return {"id": jid, "scale": scale, "throughput": tput}


def test_deficit_update_matches_spec_formula() -> None:
    eng = Engine({"V100": 1}, epsilon=0.1)
    alloc = eng.plan([job("a", k80=None), job("b", k80=None)])
    new = eng.commit(alloc)
    # one GPU, two equal jobs: Tfair = 0.5 * 4 = 2; the placed job gets rho = 2, the other 0
    rho = dict(zip(alloc.job_ids, alloc.progress.tolist()))
    for jid in ("a", "b"):
        assert new[jid] == pytest.approx(max(0.0, 0.0 + 0.9 - rho[jid]))
    assert sorted(new.values()) == pytest.approx([0.0, 0.9])


def test_left_out_job_is_preferred_next_round() -> None:
    eng = Engine({"V100": 1})
    first = eng.step([job("a", k80=None), job("b", k80=None)])
    placed_first = {p.jobs[0] for p in first.placements}
    second = eng.step([job("a", k80=None), job("b", k80=None)])
    placed_second = {p.jobs[0] for p in second.placements}
    assert placed_first != placed_second  # time sharing: the one owed a share runs next


def test_delivered_progress_overrides_the_plan() -> None:
    eng = Engine(GPUS)
    alloc = eng.plan([job("a"), job("b")])
    new = eng.commit(alloc, progress={"a": 0.25})
    assert new["a"] == pytest.approx(0.75)


def test_arrivals_start_at_zero_and_departures_are_forgotten() -> None:
    eng = Engine({"V100": 1})
    eng.step([job("a", k80=None), job("b", k80=None)])
    assert set(eng.deficits) == {"a", "b"}
    eng.step([job("b", k80=None), job("c", k80=None)])
    assert set(eng.deficits) == {"b", "c"}
    prob = eng.problem([job("c", k80=None), job("d", k80=None)])
    assert prob.deficit[prob.job_index("d")] == 0.0


def test_deficit_key_in_job_is_rejected() -> None:
    eng = Engine(GPUS)
    with pytest.raises(InvalidInputError, match=r"jobs\[0\]\.deficit.*0\.5"):
        eng.plan([{**job("a"), "deficit": 0.5}])


def test_bad_progress_is_rejected() -> None:
    eng = Engine(GPUS)
    alloc = eng.plan([job("a")])
    with pytest.raises(InvalidInputError, match=r"progress\.zz"):
        eng.commit(alloc, progress={"zz": 1.0})
    with pytest.raises(InvalidInputError, match=r"progress\.a.*-1"):
        eng.commit(alloc, progress={"a": -1.0})


def test_commit_without_plan_is_an_error() -> None:
    with pytest.raises(InvalidInputError, match="allocation"):
        Engine(GPUS).commit()


def test_save_is_atomic_and_reload_continues_identically(tmp_path) -> None:
    jobs = [job("a", 4, 1), job("b", 2, 1), job("c", 3, 2), job("d", 8, 1, scale=1)]
    eng = Engine({"V100": 2, "K80": 1}, epsilon=0.05, mode="exact")
    for _ in range(3):
        eng.step(jobs)
    path = tmp_path / "state.json"
    eng.save(path)
    assert [p for p in os.listdir(tmp_path) if p != "state.json"] == []  # no temporary file left behind
    twin = Engine.load(path)
    assert twin.deficits == eng.deficits and twin.round_index == eng.round_index
    for _ in range(4):
        a, b = eng.step(jobs), twin.step(jobs)
        assert [p.to_dict() for p in a.placements] == [p.to_dict() for p in b.placements]
        assert eng.deficits == twin.deficits


def test_save_failure_keeps_the_old_file(tmp_path, monkeypatch) -> None:
    eng = Engine(GPUS, deficits={"a": 1.0})
    path = tmp_path / "state.json"
    eng.save(path)
    before = path.read_text()
    eng2 = Engine(GPUS, deficits={"a": 2.0})

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        eng2.save(path)
    assert path.read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["state.json"]


def test_load_rejects_bad_state(tmp_path) -> None:
    p = tmp_path / "s.json"
    p.write_text("{not json")
    with pytest.raises(InvalidInputError, match="state"):
        Engine.load(p)
    p.write_text(json.dumps({"version": 99, "gpus": GPUS}))
    with pytest.raises(InvalidInputError, match=r"state\.version.*99"):
        Engine.load(p)
    p.write_text(json.dumps({"version": 1, "gpus": GPUS, "deficits": {"a": -1}}))
    with pytest.raises(InvalidInputError, match=r"deficits\.a.*-1"):
        Engine.load(p)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 50), st.floats(0.1, 10)), min_size=1, max_size=6),
       st.integers(1, 4), st.floats(0, 0.9), st.integers(1, 5))
def test_deficits_never_negative(tputs, gpus, eps, rounds) -> None:
    eng = Engine({"V100": gpus, "K80": 1}, epsilon=eps)
    jobs = [job(f"j{i}", v, k) for i, (v, k) in enumerate(tputs)]
    for _ in range(rounds):
        alloc = eng.step(jobs)
        assert (alloc.next_deficit >= 0).all()
        assert all(d >= 0 for d in eng.deficits.values())
        assert np.allclose(sorted(eng.deficits.values()), sorted(alloc.next_deficit.tolist()))


def test_reload_keeps_gpu_type_order_and_rejects_missing_gpus(tmp_path) -> None:
    eng = Engine({"V100": 1, "K80": 2, "A100": 1})
    path = tmp_path / "s.json"
    eng.save(path)
    assert list(Engine.load(path).gpus) == ["V100", "K80", "A100"]
    path.write_text(json.dumps({"version": 1}))
    with pytest.raises(InvalidInputError, match=r"state\.gpus"):
        Engine.load(path)
