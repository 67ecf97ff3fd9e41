"""The stateful engine: deficit update (spec section 4), arrivals and departures, atomic save and load."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import InvalidInputError
from fairshare.documents import MAX_JSON_BYTES
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
    rho = dict(zip(alloc.job_ids, alloc.jobs.progress.tolist()))
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
        assert (alloc.jobs.next_deficit >= 0).all()
        assert all(d >= 0 for d in eng.deficits.values())
        assert np.allclose(sorted(eng.deficits.values()), sorted(alloc.jobs.next_deficit.tolist()))


def test_reload_keeps_gpu_type_order_and_rejects_missing_gpus(tmp_path) -> None:
    eng = Engine({"V100": 1, "K80": 2, "A100": 1})
    path = tmp_path / "s.json"
    eng.save(path)
    assert list(Engine.load(path).gpus) == ["V100", "K80", "A100"]
    path.write_text(json.dumps({"version": 1}))
    with pytest.raises(InvalidInputError, match=r"state\.gpus"):
        Engine.load(path)


# ---------------------------------------------------------------------------------------------- state schema
def valid_state() -> dict:
    return Engine({"V100": 2, "K80": 1}, mode="exact", epsilon=0.1, options={"time_limit": 5},
                  deficits={"j1": 0.5, "j3": 1.25}, round_index=7).state()


RAW = "@@raw@@"


def with_value(path: tuple[str, ...], value: object, raw: str | None = None) -> str:
    """A valid state's text with the value at ``path`` replaced (``raw``: a literal JSON text instead)."""
    doc = valid_state()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = RAW if raw is not None else value
    text = json.dumps(doc)
    return text.replace(json.dumps(RAW), raw) if raw is not None else text


def without(key: str) -> str:
    doc = valid_state()
    del doc[key]
    return json.dumps(doc)


def duplicated(text_key: str, extra: str) -> str:
    """A valid state's text with ``extra`` (``"key": value``) inserted right after the opening of the
    object that starts with ``text_key``."""
    text = json.dumps(valid_state())
    i = text.index(text_key) + len(text_key)
    return text[:i] + extra + ", " + text[i:]


CORRUPT: list[tuple[str, str | bytes, str]] = [
    # version: the int 1 exactly
    ("version-true", with_value(("version",), True), "state.version"),
    ("version-float", with_value(("version",), 1.0), "state.version"),
    ("version-2", with_value(("version",), 2), "state.version"),
    ("version-string", with_value(("version",), "1"), "state.version"),
    ("version-null", with_value(("version",), None), "state.version"),
    ("version-missing", without("version"), "state.version"),
    # round_index: a non-negative int
    ("round-string", with_value(("round_index",), "7"), "state.round_index"),
    ("round-fraction", with_value(("round_index",), 1.9), "state.round_index"),
    ("round-integral-float", with_value(("round_index",), 7.0), "state.round_index"),
    ("round-negative", with_value(("round_index",), -5), "state.round_index"),
    ("round-null", with_value(("round_index",), None), "state.round_index"),
    ("round-bool", with_value(("round_index",), True), "state.round_index"),
    ("round-overflow", with_value(("round_index",), None, raw="1e400"), "state.round_index"),
    ("round-huge-int", with_value(("round_index",), 2**64), "state.round_index"),
    ("round-5000-digits", with_value(("round_index",), None, raw="9" * 5000), "state.round_index"),
    # deficits: job id -> finite number in [0, MAX_VALUE]
    ("deficits-list", with_value(("deficits",), [0.5, 1.25]), "state.deficits"),
    ("deficits-null", with_value(("deficits",), None), "state.deficits"),
    ("deficit-bool", with_value(("deficits", "j3"), True), "state.deficits.j3"),
    ("deficit-negative", with_value(("deficits", "j3"), -1), "state.deficits.j3"),
    ("deficit-string", with_value(("deficits", "j3"), "1"), "state.deficits.j3"),
    ("deficit-null", with_value(("deficits", "j3"), None), "state.deficits.j3"),
    ("deficit-list", with_value(("deficits", "j3"), [1]), "state.deficits.j3"),
    ("deficit-nan", with_value(("deficits", "j3"), None, raw="NaN"), "state.deficits.j3"),
    ("deficit-infinity", with_value(("deficits", "j3"), None, raw="Infinity"), "state.deficits.j3"),
    ("deficit-overflow", with_value(("deficits", "j3"), None, raw="1e400"), "state.deficits.j3"),
    ("deficit-too-large", with_value(("deficits", "j3"), 1e13), "state.deficits.j3"),
    ("deficit-empty-id", with_value(("deficits", ""), 1.0), "state.deficits"),
    # gpus: GPU type -> int in [0, MAX_GPUS]
    ("gpus-missing", without("gpus"), "state.gpus"),
    ("gpus-list", with_value(("gpus",), [["V100", 2]]), "state.gpus"),
    ("gpus-null", with_value(("gpus",), None), "state.gpus"),
    ("gpu-float", with_value(("gpus", "V100"), 2.0), "state.gpus.V100"),
    ("gpu-bool", with_value(("gpus", "V100"), True), "state.gpus.V100"),
    ("gpu-negative", with_value(("gpus", "V100"), -1), "state.gpus.V100"),
    ("gpu-string", with_value(("gpus", "V100"), "2"), "state.gpus.V100"),
    ("gpu-too-many", with_value(("gpus", "V100"), 2**31 + 1), "state.gpus.V100"),
    ("gpu-empty-type", with_value(("gpus", ""), 1), "state.gpus"),
    # gpu_order: each GPU type of gpus once
    ("order-string", with_value(("gpu_order",), "V100"), "state.gpu_order"),
    ("order-missing-type", with_value(("gpu_order",), ["V100"]), "state.gpu_order"),
    ("order-unknown-type", with_value(("gpu_order",), ["V100", "A100"]), "state.gpu_order"),
    ("order-repeated", with_value(("gpu_order",), ["V100", "K80", "K80"]), "state.gpu_order"),
    ("order-number", with_value(("gpu_order",), ["V100", 1]), "state.gpu_order"),
    # mode, epsilon, fairness_weight
    ("mode-unknown", with_value(("mode",), "turbo"), "state.mode"),
    ("mode-number", with_value(("mode",), 1), "state.mode"),
    ("epsilon-one", with_value(("epsilon",), 1), "state.epsilon"),
    ("epsilon-negative", with_value(("epsilon",), -0.1), "state.epsilon"),
    ("epsilon-string", with_value(("epsilon",), "0.1"), "state.epsilon"),
    ("epsilon-bool", with_value(("epsilon",), True), "state.epsilon"),
    ("epsilon-null", with_value(("epsilon",), None), "state.epsilon"),
    ("epsilon-nan", with_value(("epsilon",), None, raw="NaN"), "state.epsilon"),
    ("lambda-zero", with_value(("fairness_weight",), 0), "state.fairness_weight"),
    ("lambda-negative", with_value(("fairness_weight",), -1.0), "state.fairness_weight"),
    ("lambda-bool", with_value(("fairness_weight",), True), "state.fairness_weight"),
    ("lambda-too-large", with_value(("fairness_weight",), 1e13), "state.fairness_weight"),
    ("lambda-infinity", with_value(("fairness_weight",), None, raw="-Infinity"), "state.fairness_weight"),
    # options: a valid SolveOptions mapping for the mode
    ("options-list", with_value(("options",), []), "state.options"),
    ("options-null", with_value(("options",), None), "state.options"),
    ("option-unknown", with_value(("options", "bogus"), 1), "state.options.bogus"),
    ("option-threads-zero", with_value(("options", "threads"), 0), "state.options.threads"),
    ("option-threads-float", with_value(("options", "threads"), 2.0), "state.options.threads"),
    ("option-threads-bool", with_value(("options", "threads"), True), "state.options.threads"),
    ("option-time-limit-string", with_value(("options", "time_limit"), "5"), "state.options.time_limit"),
    ("option-not-for-mode", with_value(("mode",), "fast"), "state.options.time_limit"),
    # unknown and repeated keys
    ("unknown-key", with_value(("extra",), 1), "state.extra"),
    ("duplicate-top-key", duplicated("{", '"round_index": 3'), "state.round_index"),
    ("duplicate-deficit", duplicated('"deficits": {', '"j3": 0.0'), "state.deficits.j3"),
    ("duplicate-gpu", duplicated('"gpus": {', '"V100": 4'), "state.gpus.V100"),
    ("duplicate-option", duplicated('"options": {', '"threads": 1'), "state.options.threads"),
    # the text as a whole
    ("empty", "", "state"),
    ("not-json", "{not json", "state"),
    ("truncated", json.dumps(valid_state())[:-20], "state"),
    ("list", "[]", "state"),
    ("null", "null", "state"),
    ("utf16", json.dumps(valid_state()).encode("utf-16"), "state"),
    ("latin1", '{"version": 1, "gpus": {"V100\xe9": 1}}'.encode("latin-1"), "state"),
    ("binary", bytes(range(256)), "state"),
    ("deeply-nested", "[" * 100_000 + "]" * 100_000, "state"),
    ("nested-in-deficits", with_value(("deficits",), None, raw="[" * 100 + "]" * 100), "state"),
]


@pytest.mark.parametrize(("text", "field"), [c[1:] for c in CORRUPT], ids=[c[0] for c in CORRUPT])
def test_load_rejects_corrupt_state_naming_the_field(tmp_path, text: str | bytes, field: str) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(InvalidInputError) as info:
        Engine.load(path)
    assert info.value.field == field
    assert f"`{field}`" in str(info.value) and str(path) in str(info.value)
    assert len(str(info.value)) < 400  # a clipped value, not the whole document
    if isinstance(text, str) and field != "state":  # the same rule for a parsed document
        try:
            doc = json.loads(text, object_pairs_hook=_strict_pairs)
        except ValueError:
            return  # a literal Python's json refuses too (1e400 is inf there, duplicates)
        with pytest.raises(InvalidInputError) as info:
            Engine.from_state(doc)
        assert info.value.field == field


def _strict_pairs(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate key")
    if any(isinstance(v, float) and not math.isfinite(v) for _, v in pairs):
        raise ValueError("not finite")
    return dict(pairs)


def test_valid_state_text_loads(tmp_path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(valid_state()))
    assert Engine.load(path).state() == valid_state()


def test_from_state_rejects_a_non_object() -> None:
    with pytest.raises(InvalidInputError) as info:
        Engine.from_state([1, 2])  # type: ignore[arg-type]
    assert info.value.field == "state"


@pytest.mark.parametrize("kind", ["missing", "folder", "fifo", "device", "huge", "unreadable"])
def test_load_refuses_what_is_not_a_readable_state_file(tmp_path, kind: str) -> None:
    path = tmp_path / "state.json"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # must not block waiting for a writer
    elif kind == "device":
        path = Path("/dev/zero")  # must not read forever
    elif kind == "huge":
        with open(path, "wb") as f:
            f.truncate(MAX_JSON_BYTES + 1)  # sparse: no disk used
    elif kind == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads files whatever their mode")
        path.write_text(json.dumps(valid_state()))
        path.chmod(0)
    with pytest.raises(InvalidInputError) as info:
        Engine.load(path)
    assert info.value.field == "state" and str(path) in str(info.value)


# ---------------------------------------------------------------------------------------------- constructor
@pytest.mark.parametrize(("kwargs", "field"), [
    ({"gpus": [("V100", 1)]}, "gpus"),
    ({"gpus": {"V100": 1.5}}, "gpus.V100"),
    ({"gpus": {"V100": 2.0}}, "gpus.V100"),
    ({"gpus": {"V100": True}}, "gpus.V100"),
    ({"gpus": {"V100": -1}}, "gpus.V100"),
    ({"gpus": {1: 2}}, "gpus"),
    ({"mode": "turbo"}, "mode"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": 1.0}, "epsilon"),
    ({"epsilon": True}, "epsilon"),
    ({"epsilon": "0.1"}, "epsilon"),
    ({"fairness_weight": 0.0}, "fairness_weight"),
    ({"fairness_weight": float("inf")}, "fairness_weight"),
    ({"fairness_weight": 1e13}, "fairness_weight"),
    ({"options": {"threads": 0}}, "options.threads"),
    ({"options": {"bogus": 1}}, "options.bogus"),
    ({"options": [1]}, "options"),
    ({"mode": "fast", "options": {"time_limit": 1}}, "options.time_limit"),
    ({"deficits": {"a": True}}, "deficits.a"),
    ({"deficits": {"a": float("nan")}}, "deficits.a"),
    ({"deficits": {"a": 10**400}}, "deficits.a"),
    ({"deficits": [("a", 1.0)]}, "deficits"),
    ({"deficits": {"": 1.0}}, "deficits"),
    ({"round_index": -1}, "round_index"),
    ({"round_index": 1.5}, "round_index"),
    ({"round_index": "7"}, "round_index"),
    ({"round_index": True}, "round_index"),
    ({"round_index": 2**63}, "round_index"),
])
def test_constructor_validates_every_argument(kwargs: dict, field: str) -> None:
    kwargs = {"gpus": GPUS, **kwargs}
    with pytest.raises(InvalidInputError) as info:
        Engine(**kwargs)
    assert info.value.field == field and f"`{field}`" in str(info.value)


def test_constructor_takes_numpy_scalars_and_saves_plain_json(tmp_path) -> None:
    eng = Engine({"V100": np.int64(2)}, epsilon=np.float64(0.1), fairness_weight=np.float32(10),
                 deficits={"a": np.float32(0.5)}, round_index=np.int64(3))
    state = eng.state()
    assert json.loads(json.dumps(state, allow_nan=False)) == state  # plain Python types only
    assert state["gpus"] == {"V100": 2} and state["deficits"] == {"a": 0.5} and state["round_index"] == 3


def test_assignments_are_checked_and_gpus_is_read_only() -> None:
    eng = Engine(GPUS, mode="exact", options={"time_limit": 5}, epsilon=0.1)
    with pytest.raises(InvalidInputError, match="epsilon"):
        eng.epsilon = float("nan")
    assert eng.epsilon == 0.1
    with pytest.raises(InvalidInputError, match=r"round_index"):
        eng.round_index = -1
    with pytest.raises(InvalidInputError, match=r"options\.time_limit"):
        eng.mode = "fast"  # time_limit applies to exact only
    assert eng.mode == "exact"
    with pytest.raises(TypeError):
        eng.gpus["V100"] = 0  # type: ignore[index]  # would silently not drain the node if it were a copy
    eng.gpus = {"V100": 0, "K80": 1}  # drain the V100
    alloc = eng.plan([job("a")])
    assert [p.gpu for p in alloc.placements] == ["K80"]
    with pytest.raises(InvalidInputError, match=r"gpus\.K80"):
        eng.gpus = {"K80": -1}


# ---------------------------------------------------------------------------------------------- commit rules
def test_committing_the_same_plan_twice_is_refused() -> None:
    eng = Engine({"V100": 1})
    alloc = eng.plan([job("a", k80=None), job("b", k80=None)])
    first = eng.commit(alloc)
    with pytest.raises(InvalidInputError, match="already committed") as info:
        eng.commit(alloc)
    assert info.value.field == "allocation"
    assert eng.deficits == first and eng.round_index == 1  # not counted twice
    with pytest.raises(InvalidInputError, match="already committed"):
        eng.commit()
    eng.plan([job("a", k80=None), job("b", k80=None)])
    with pytest.raises(InvalidInputError, match="already committed"):
        eng.commit(alloc)  # still recognised after a newer plan


def test_an_older_plan_is_refused_after_a_newer_one() -> None:
    eng = Engine({"V100": 1})
    old = eng.plan([job("a", k80=None)])
    new = eng.plan([job("a", k80=None), job("b", k80=None)])
    with pytest.raises(InvalidInputError, match="older plan") as info:
        eng.commit(old)
    assert info.value.field == "allocation" and eng.round_index == 0
    assert set(eng.commit(new)) == {"a", "b"}


def test_only_the_pending_plan_of_this_engine_can_be_committed() -> None:
    from fairshare.allocate import allocate
    from fairshare.allocation import Allocation

    eng = Engine(GPUS)
    jobs = [job("a"), job("b")]
    pending = eng.plan(jobs)
    for foreign in (allocate(eng.problem(jobs)), Allocation.from_dict(pending.to_dict()),
                    Engine(GPUS).plan(jobs)):
        with pytest.raises(InvalidInputError, match="not the pending plan") as info:
            eng.commit(foreign)
        assert info.value.field == "allocation"
    with pytest.raises(InvalidInputError, match="must be the Allocation"):
        eng.commit({"placements": []})  # type: ignore[arg-type]
    eng.commit(pending)  # the pending plan itself still commits
    assert eng.round_index == 1


def test_a_refused_progress_leaves_the_plan_pending() -> None:
    eng = Engine(GPUS)
    alloc = eng.plan([job("a"), job("b")])
    for bad in ({"a": True}, {"a": float("nan")}, {"a": "0.5"}):
        with pytest.raises(InvalidInputError, match=r"progress\.a"):
            eng.commit(alloc, progress=bad)
    with pytest.raises(InvalidInputError, match="progress"):
        eng.commit(alloc, progress=[("a", 0.5)])  # type: ignore[arg-type]
    assert eng.round_index == 0
    assert eng.commit(alloc, progress={"a": 0.25})["a"] == pytest.approx(0.75)


def test_a_pending_plan_does_not_survive_save_and_load(tmp_path) -> None:
    eng = Engine(GPUS)
    eng.plan([job("a")])
    eng.save(tmp_path / "s.json")
    with pytest.raises(InvalidInputError, match="no round planned"):
        Engine.load(tmp_path / "s.json").commit()


# ---------------------------------------------------------------------------------------------- save
def _key_lists(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    assert keys == sorted(keys), keys
    return dict(pairs)


def test_saved_keys_are_sorted_and_gpu_order_is_kept(tmp_path) -> None:
    eng = Engine({"V100": 1, "K80": 2, "A100": 1}, epsilon=0.1, deficits={"z": 1.0, "a": 0.5}, round_index=4)
    path = tmp_path / "s.json"
    eng.save(path)
    doc = json.loads(path.read_text(), object_pairs_hook=_key_lists)  # every object's keys sorted
    assert doc["gpu_order"] == ["V100", "K80", "A100"]
    twin = Engine.load(path)
    assert list(twin.gpus) == ["V100", "K80", "A100"] and twin.state() == eng.state() | {
        "deficits": {"a": 0.5, "z": 1.0}}


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o664])
def test_save_keeps_the_permission_bits_of_an_existing_file(tmp_path, mode: int) -> None:
    path = tmp_path / "s.json"
    Engine(GPUS).save(path)
    path.chmod(mode)
    Engine(GPUS, deficits={"a": 1.0}).save(path)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert Engine.load(path).deficits == {"a": 1.0}


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_new_file_gets_the_umask_default(tmp_path, umask: int) -> None:
    old = os.umask(umask)
    try:
        Engine(GPUS).save(tmp_path / "s.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "s.json").stat().st_mode) == 0o666 & ~umask


def test_save_through_a_symlink_keeps_the_link(tmp_path) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = real_dir / "state.json"
    Engine(GPUS).save(real)
    link = tmp_path / "state.json"
    link.symlink_to(real)
    Engine(GPUS, deficits={"a": 2.0}).save(link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert Engine.load(real).deficits == {"a": 2.0}
    assert sorted(os.listdir(tmp_path)) == ["real", "state.json"] and os.listdir(real_dir) == ["state.json"]


@pytest.mark.parametrize("fail", ["write", "fsync", "replace", "dumps"])
def test_a_failing_save_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch, fail: str) -> None:
    import fairshare.engine as engine_module

    path = tmp_path / "state.json"
    Engine(GPUS, deficits={"a": 1.0}).save(path)
    before = path.read_bytes()

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    target = engine_module.json if fail == "dumps" else os
    monkeypatch.setattr(target, fail, boom)
    with pytest.raises(OSError, match="No space left"):
        Engine(GPUS, deficits={"a": 2.0}).save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["state.json"]


def test_save_into_a_missing_folder_raises_oserror_and_creates_nothing(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        Engine(GPUS).save(tmp_path / "missing" / "state.json")
    assert os.listdir(tmp_path) == []


def test_save_reuses_the_leftover_of_a_killed_save(tmp_path) -> None:
    path = tmp_path / "state.json"
    leftover = tmp_path / ".state.json.tmp"
    leftover.write_text('{"version": 1, "gpus": {"V1')  # a save killed mid-write
    leftover.chmod(0o600)
    other = tmp_path / ".other.json.tmp"
    other.write_text("{")
    Engine(GPUS, deficits={"a": 3.0}).save(path)
    assert Engine.load(path).deficits == {"a": 3.0}
    # files of another state are not ours
    assert sorted(os.listdir(tmp_path)) == sorted([".other.json.tmp", "state.json"])


def test_threads_saving_one_path_leave_one_complete_state(tmp_path) -> None:
    path = tmp_path / "state.json"
    engines = [Engine(GPUS, deficits={f"j{i}": float(k) for i in range(500)}, round_index=k) for k in range(4)]

    errors: list[BaseException] = []

    def saver(eng: Engine) -> None:
        try:
            for _ in range(20):
                eng.save(path)
        except BaseException as exc:  # a thread's exception is otherwise only printed
            errors.append(exc)

    threads = [threading.Thread(target=saver, args=(eng,)) for eng in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    loaded = Engine.load(path)
    assert set(loaded.deficits.values()) == {float(loaded.round_index)} and len(loaded.deficits) == 500
    assert os.listdir(tmp_path) == ["state.json"]


# ---------------------------------------------------------------------------------------------- kill -9 and concurrency
SAVER = """
import sys, time
from fairshare.engine import Engine
path, first, jobs, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
engines = [Engine({"V100": 2, "K80": 1}, deficits={f"j{i}": k + 0.5 for i in range(jobs)}, round_index=k)
           for k in (first, first + 1)]
print("ready", flush=True)
end = time.monotonic() + seconds
i = 0
while time.monotonic() < end:
    engines[i % 2].save(path)
    i += 1
print(i, flush=True)
"""


def _saver(path: Path, first: int, jobs: int, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", SAVER, str(path), str(first), str(jobs), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _check_complete(path: Path, jobs: int, rounds: set[int]) -> None:
    eng = Engine.load(path)
    assert eng.round_index in rounds
    assert eng.deficits == {f"j{i}": eng.round_index + 0.5 for i in range(jobs)}  # all old or all new


@pytest.mark.slow
def test_kill_9_during_saves_leaves_a_complete_state_and_nothing_after_the_next_save(tmp_path) -> None:
    rng = random.Random(13)
    path, jobs = tmp_path / "state.json", 20_000
    Engine({"V100": 2, "K80": 1}, deficits={f"j{i}": 1.5 for i in range(jobs)}, round_index=1).save(path)
    for _ in range(50):  # about 1 kill in 15 lands between the temporary's creation and its rename
        proc = _saver(path, 1, jobs, 60.0)
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert set(os.listdir(tmp_path)) <= {"state.json", ".state.json.tmp"}
        _check_complete(path, jobs, {1, 2})
        Engine.load(path).save(path)  # the next save
        assert os.listdir(tmp_path) == ["state.json"]
        _check_complete(path, jobs, {1, 2})


@pytest.mark.slow
def test_two_processes_saving_and_a_reader_always_see_a_complete_state(tmp_path) -> None:
    path, jobs = tmp_path / "state.json", 2_000
    Engine(GPUS, deficits={f"j{i}": 1.5 for i in range(jobs)}, round_index=1).save(path)
    writers = [_saver(path, 1, jobs, 2.0), _saver(path, 3, jobs, 2.0)]
    reads = 0
    while any(w.poll() is None for w in writers):
        _check_complete(path, jobs, {1, 2, 3, 4})
        reads += 1
    saves = [int(w.communicate(timeout=30)[0].strip()) for w in writers]
    assert [w.returncode for w in writers] == [0, 0]
    assert reads > 10 and min(saves) > 10
    _check_complete(path, jobs, {1, 2, 3, 4})
    assert os.listdir(tmp_path) == ["state.json"]
