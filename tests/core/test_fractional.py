"""Part-of-a-GPU requests (fractional ``scale``) end to end: validation, share classes and packing, every solve
mode, the output, the engine, traces, the importer rule, the simulator and every peer policy.

The all-integer baseline (``tests/data/integer_rounds_baseline.json``) was written by :func:`baseline_record`
running on fairshare at commit 5548fb2, before fractional requests existed (``python tests/core/test_fractional.py
> tests/data/integer_rounds_baseline.json`` with that version installed); the test recomputes it now.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import Engine, allocate
from fairshare.allocation import Allocation
from fairshare.errors import InvalidInputError
from fairshare.formulation import build_model
from fairshare.methods.lp import solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.methods.rounding import greedy_round
from fairshare.packing import pack_shares, share_class, share_classes
from fairshare.policies import get_policy, policy_names
from fairshare.policies.base import RoundState
from fairshare.problem import MAX_GPUS, RoundProblem
from fairshare.sim import simulate
from fairshare.sim.traces import Trace, read_trace, write_trace
from fairshare.testing.random_rounds import random_round
from fairshare.testing.strategies import round_documents
from fairshare.validators import allocation_violations

BASELINE = Path(__file__).resolve().parents[1] / "data" / "integer_rounds_baseline.json"
FRACTIONAL_SCALES = (0.05, 0.1, 0.25, 0.3, 0.5, 0.7, 1, 2)


def _doc(scales: list[float], gpus: dict[str, int] | None = None) -> dict[str, Any]:
    gpus = gpus or {"V100": 2, "K80": 2}
    return {"gpus": gpus, "jobs": [
        {"id": f"j{i}", "scale": s, "throughput": {g: round((3.0 + i % 5) * (2.0 if g == "V100" else 1.0) *
                                                           min(1.0, float(s)), 3) for g in gpus}}
        for i, s in enumerate(scales)]}


# ---------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize("bad", [0, -1, -0.5, 1.5, 2.5, float("nan"), float("inf"), True, False, "1", None,
                                 MAX_GPUS + 1])
def test_invalid_scale_is_rejected_naming_the_field_and_value(bad: object) -> None:
    doc = _doc([1, 0.5, 1, 1])
    doc["jobs"][3]["scale"] = bad
    with pytest.raises(InvalidInputError) as err:
        RoundProblem.from_dict(doc)
    assert err.value.field == "jobs[3].scale"
    assert repr(bad) in str(err.value) or (isinstance(bad, float) and math.isnan(bad) and "nan" in str(err.value))


@pytest.mark.parametrize("bad", [0, -1, 1.5, 2.5, float("nan"), True])
def test_invalid_scale_in_arrays_and_traces(bad: object) -> None:
    with pytest.raises(InvalidInputError, match=r"`jobs\[1\]\.scale`"):
        RoundProblem(["A"], [2], ["a", "b"], np.array([0.5, bad], dtype=object), [[1.0], [1.0]])
    if not isinstance(bad, bool):
        with pytest.raises(InvalidInputError, match=r"`jobs\[1\]\.scale`"):
            Trace(id=["a", "b"], arrival=[0, 1], model=["A3C"] * 2, scale=[0.5, bad], iterations=[1, 1])


def test_fractional_and_integer_scales_accepted() -> None:
    p = RoundProblem.from_dict(_doc([0.3, 1, 0.5, 2, 0.01]))
    assert p.scale.dtype == np.float64 and p.scale.tolist() == [0.3, 1, 0.5, 2, 0.01]
    assert p.fractional.tolist() == [True, False, True, False, True] and p.has_fractional
    assert p.capacity_scale.tolist() == [0.5, 1, 0.5, 2, 0.0625]
    doc = p.to_dict()
    assert [j["scale"] for j in doc["jobs"]] == [0.3, 1, 0.5, 2, 0.01]
    assert isinstance(doc["jobs"][1]["scale"], int)
    assert RoundProblem.from_dict(doc).to_dict() == doc
    whole = RoundProblem.from_dict(_doc([1, 2, 1]))
    assert whole.scale.dtype == np.int64 and not whole.has_fractional and whole.capacity_scale is whole.scale
    assert whole.take_jobs([0]).scale.dtype == np.int64
    assert p.take_jobs([1, 3]).scale.dtype == np.int64  # a sub-round without parts is an integer round


def test_a_fractional_job_needs_a_type_with_a_gpu() -> None:
    doc = _doc([0.5], {"V100": 0, "K80": 1})
    p = RoundProblem.from_dict(doc)
    assert p.runnable.tolist() == [[False, True]]


# ---------------------------------------------------------------------------------------------- share classes
def test_share_classes() -> None:
    assert [share_class(s) for s in (1.0, 0.51, 0.5, 0.3, 0.25, 0.2, 0.125, 0.1, 0.0625, 0.01, 1e-300)] == \
        [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0.0625, 0.0625, 0.0625]
    s = np.array([0.3, 0.5, 0.01, 0.81, 2, 1, 0.0625, 0.07, 0.5000001, 0.2499999])
    assert share_classes(s).tolist() == [0.5, 0.5, 0.0625, 1.0, 2, 1, 0.0625, 0.125, 1.0, 0.25]
    for bad in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(InvalidInputError):
            share_class(bad)


@given(st.lists(st.floats(1e-9, 1.0, exclude_max=True), max_size=40))
def test_share_classes_is_the_smallest_class_at_least_the_request(requests: list[float]) -> None:
    got = share_classes(requests).tolist()
    assert got == [share_class(s) for s in requests]
    for s, c in zip(requests, got):
        assert c >= s and c in (1.0, 0.5, 0.25, 0.125, 0.0625) and (c == 0.0625 or c / 2 < s)


@given(st.lists(st.integers(0, 4), max_size=60), st.integers(0, 8))
def test_share_classes_always_pack_largest_first(ks: list[int], extra: int) -> None:
    shares = [1.0 / 2**k for k in ks]
    gpus = math.ceil(sum(shares)) + extra
    where = pack_shares(shares, gpus)
    load = np.bincount(where, weights=shares, minlength=gpus) if shares else np.zeros(gpus)
    assert len(where) == len(shares) and (load <= 1.0).all() and all(0 <= w < gpus for w in where)
    assert max(where, default=-1) + 1 == math.ceil(sum(shares))  # no GPU opened before the previous one is full


@given(st.lists(st.floats(0.01, 1.0), min_size=1, max_size=30))
def test_packing_of_rounded_requests_never_puts_a_gpu_over_one(requests: list[float]) -> None:
    classes = share_classes(requests)
    gpus = math.ceil(float(classes.sum()))
    where = pack_shares(classes, gpus)
    assert (np.bincount(where, weights=requests, minlength=gpus) <= 1.0 + 1e-12).all()


def test_pack_shares_rejects_what_does_not_fit() -> None:
    with pytest.raises(InvalidInputError, match="total exceeds"):
        pack_shares([0.5, 0.5, 0.25], 1)
    with pytest.raises(InvalidInputError, match="do not fit"):
        pack_shares([0.5, 0.4, 0.3, 0.3, 0.25, 0.25], 2)  # total 2, but first fit decreasing needs 3 GPUs
    with pytest.raises(InvalidInputError, match=r"`shares\[1\]`"):
        pack_shares([0.5, 1.5], 3)
    with pytest.raises(InvalidInputError, match="`gpus`"):
        pack_shares([0.5], -1)
    assert pack_shares([], 0) == []


# ---------------------------------------------------------------------------------------------- solve modes
@pytest.mark.parametrize("mode", ["fast", "exact", "lp"])
def test_every_mode_solves_a_fractional_round_feasibly(mode: str) -> None:
    p = RoundProblem.from_dict(_doc([0.3, 0.5, 0.2, 0.1, 0.7, 0.25, 1, 2, 0.05, 0.6]))
    a = allocate(p, mode=mode)
    assert allocation_violations(p, a) == []
    if mode != "lp":
        placed_parts = {pl.jobs[0] for pl in a.placements if isinstance(pl.gpus, float)}
        assert placed_parts == {j for s in a.shared_gpus for j in s.jobs} and placed_parts
        for s in a.shared_gpus:
            assert sum(s.shares) <= 1 + 1e-12
            assert sum(p.capacity_scale[p.job_index(j)] for j in s.jobs) <= 1 + 1e-12
    else:
        assert a.shared_gpus == ()


@pytest.mark.parametrize("mode", ["exact", "lp"])
def test_pyomo_reference_model_agrees_on_a_fractional_round(mode: str) -> None:
    p = RoundProblem.from_dict(_doc([0.3, 0.5, 0.2, 0.1, 0.7, 0.25, 1, 2, 0.05, 0.6]))
    ref, arr = allocate(p, mode=mode, backend="pyomo"), allocate(p, mode=mode)
    assert ref.status == arr.status == "optimal"
    assert ref.values.objective == pytest.approx(arr.values.objective, rel=1e-6)
    assert allocation_violations(p, ref) == []


def test_split_milp_has_the_same_optimum_and_is_the_plain_one_for_integer_rounds() -> None:
    from fairshare.solvers import solve_lp

    p = RoundProblem.from_dict(_doc([0.3, 0.5, 0.2, 0.1, 0.7, 0.25, 1, 2, 0.05, 0.6, 0.5, 1]))
    m = build_model(p)
    lp = m.tightened_lp()
    milp = m.tightened_milp(lp)
    assert milp.num_placement_cols == m.columns.num + len(p.gpu_types)
    plain, split = solve_lp(lp, integer=True), solve_lp(milp, integer=True)
    assert split.optimal and plain.optimal and split.objective == pytest.approx(plain.objective, rel=1e-9)
    assert split.x is not None
    assert build_model(p).columns.num == len(split.x[: m.columns.num])
    whole = build_model(RoundProblem.from_dict(_doc([1, 2, 1])))
    lp_whole = whole.tightened_lp()
    assert whole.tightened_milp(lp_whole) is lp_whole


def test_objective_and_fair_share_use_the_request_as_given() -> None:
    p = RoundProblem.from_dict(_doc([0.3, 1], {"V100": 1}))
    m = build_model(p)
    assert m.columns.size.tolist() == [0.5, 1.0]  # capacity counts the share class
    assert m.eff.tolist() == pytest.approx([0.3 * 1.0, 1.0])  # E counts s_j = 0.3 (tau / Tmax = 1)
    assert m.fair.entitlement.tolist() == pytest.approx([0.3, 0.7])  # water-filling on the requests


def test_rounding_loss_is_reported_per_type_and_in_total() -> None:
    p = RoundProblem.from_dict(_doc([0.3, 0.5, 0.2, 0.1, 0.7], {"V100": 4}))
    a = allocate(p, mode="exact")
    assert len(a.placements) == 5  # everything fits: 0.5 + 0.5 + 0.25 + 0.125 + 1 = 2.375 <= 4
    want = (0.5 - 0.3) + 0 + (0.25 - 0.2) + (0.125 - 0.1) + (1.0 - 0.7)
    assert a.values.rounding_loss is not None and float(a.values.rounding_loss.sum()) == pytest.approx(want)
    d = a.to_dict()
    assert d["rounding_loss"]["total"] == pytest.approx(want) and d["rounding_loss"]["by_type"] == \
        {"V100": pytest.approx(want)}
    assert [d["jobs"][f"j{i}"]["rounded_share"] for i in range(5)] == [0.5, 0.5, 0.25, 0.125, 1.0]
    lp = allocate(p, mode="lp")
    assert lp.values.rounding_loss is not None and float(lp.values.rounding_loss.sum()) == pytest.approx(want)


def test_fractional_jobs_are_not_pair_candidates() -> None:
    doc = _doc([0.5, 0.5, 1, 1], {"V100": 2})
    doc["colocation"] = [{"jobs": ["j0", "j1"], "gpu": "V100", "throughput": [1.0, 1.0]},
                         {"jobs": ["j2", "j3"], "gpu": "V100", "throughput": [2.0, 2.0]}]
    p = RoundProblem.from_dict(doc)
    c = build_model(p).columns
    assert c.num == 5 and c.is_pair.sum() == 1 and c.job_a[c.is_pair].tolist() == [2]


def test_output_round_trip_and_integer_output_unchanged() -> None:
    p = RoundProblem.from_dict(_doc([0.3, 0.5, 0.2, 1, 0.7, 0.25]))
    a = allocate(p, mode="fast")
    b = Allocation.from_dict(json.loads(a.to_json()))
    assert b.to_dict() == a.to_dict() and b.shared_gpus == a.shared_gpus
    assert {"shared_gpus", "rounding_loss"} <= set(a.to_dict())
    whole = allocate(RoundProblem.from_dict(_doc([1, 1, 2])), mode="fast").to_dict()
    assert not {"shared_gpus", "rounding_loss"} & set(whole)
    assert all("rounded_share" not in j for j in whole["jobs"].values())
    assert all(isinstance(pl["gpus"], int) for pl in whole["placements"])
    again = Allocation.from_dict(whole)
    assert again.values.rounding_loss is None and again.shared_gpus == () and again.to_dict() == whole


@settings(max_examples=25, deadline=None)
@given(round_documents(max_jobs=9, max_capacity=3, scales=FRACTIONAL_SCALES))  # type: ignore[arg-type]
def test_property_no_gpu_over_one_and_exact_never_below_fast(doc: dict[str, Any]) -> None:
    p = RoundProblem.from_dict(doc)
    fast, exact = allocate(p, mode="fast"), allocate(p, mode="exact")
    for a in (fast, exact, allocate(p, mode="lp")):
        assert allocation_violations(p, a) == []
    for a in (fast, exact):
        for s in a.shared_gpus:
            assert sum(p.capacity_scale[p.job_index(j)] for j in s.jobs) <= 1 + 1e-12
        placed = [pl for pl in a.placements if p.fractional[p.job_index(pl.jobs[0])]]
        assert sorted(pl.jobs[0] for pl in placed) == sorted(j for s in a.shared_gpus for j in s.jobs)
        if a.values.rounding_loss is not None:
            gave = sum(p.capacity_scale[p.job_index(pl.jobs[0])] - p.scale[p.job_index(pl.jobs[0])]
                       for pl in placed)
            assert float(a.values.rounding_loss.sum()) == pytest.approx(gave, abs=1e-12)
    assert exact.status == "optimal"
    assert exact.values.objective >= fast.values.objective - 1e-6 * max(1.0, abs(fast.values.objective))


@settings(max_examples=20, deadline=None)
@given(round_documents(max_jobs=8, max_capacity=3, scales=(1, 2), colocation=True))
def test_property_integer_rounds_keep_integer_columns(doc: dict[str, Any]) -> None:
    """An all-integer round keeps integer arrays and the same columns, sizes and values as before."""
    p = RoundProblem.from_dict(doc)
    m = build_model(p)
    assert p.scale.dtype == np.int64 and m.columns.size.dtype == np.int64
    assert (m.columns.size == p.scale[m.columns.job_a]).all()
    assert m.eff.tolist() == pytest.approx((p.scale[m.columns.job_a] * m.columns.tput_a / m.tmax[m.columns.job_a]
                                            + np.where(m.columns.is_pair, p.scale[np.maximum(m.columns.job_b, 0)]
                                                       * m.columns.tput_b / m.tmax[np.maximum(m.columns.job_b, 0)],
                                                       0.0)).tolist())


# ---------------------------------------------------------------------------------------------- integer baseline
def _hash(*arrays: Any) -> str:
    d = hashlib.sha256()
    for a in arrays:
        d.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
    return d.hexdigest()[:16]


def _placements(a: Allocation) -> list[list[Any]]:
    return sorted([list(p.jobs), p.gpu, p.gpus, round(p.share, 9)] for p in a.placements)


BASELINE_ROUNDS = [(12, 0), (12, 1), (24, 2), (24, 3), (40, 4), (64, 5), (96, 6), (32, 7)]
BASELINE_POLICIES = ("fifo", "las-tiresias", "gavel", "gandiva-fair", "max-throughput")


def baseline_record(n: int, seed: int) -> dict[str, Any]:
    """What the baseline file holds for one random all-integer round (see the module docstring)."""
    p = random_round(n, seed=seed, weighted_fraction=0.3, epsilon=0.1 * (seed % 3))
    m = build_model(p)
    t, s3 = m.tightened_lp(), m.section3_lp()
    rec: dict[str, Any] = {
        "n": n, "seed": seed,
        "tightened": _hash(t.cost, t.matrix.data, t.matrix.indices, t.matrix.indptr, t.row_upper),
        "section3": _hash(s3.cost, s3.matrix.data, s3.matrix.indices, s3.matrix.indptr, s3.row_lower, s3.row_upper)}
    ex = allocate(p, mode="exact")
    rec["exact"] = {"objective": ex.values.objective, "placements": _placements(ex), "keys": sorted(ex.to_dict())}
    lp = allocate(p, mode="lp")
    rec["lp"] = {"objective": lp.values.objective, "keys": sorted(lp.to_dict())}
    relaxed = solve_relaxation(m, t, SolveOptions())
    assert relaxed.x is not None
    rec["greedy"] = np.flatnonzero(greedy_round(m, relaxed.x) > 0.5).tolist()
    for name in BASELINE_POLICIES:
        rec[name] = _placements(get_policy(name).allocate(RoundState.first_round(m)))
    return rec


@pytest.mark.parametrize("n, seed", BASELINE_ROUNDS)
def test_all_integer_rounds_give_the_results_of_before(n: int, seed: int) -> None:
    want = next(r for r in json.loads(BASELINE.read_text()) if (r["n"], r["seed"]) == (n, seed))
    got = json.loads(json.dumps(baseline_record(n, seed)))
    for key in ("tightened", "section3", "greedy", *BASELINE_POLICIES):
        assert got[key] == want[key], key
    assert got["exact"]["placements"] == want["exact"]["placements"]
    # the output documents keep every key of before; the third release adds the priced shortfall only
    added = ["priced_shortfall"]
    assert [k for k in got["exact"]["keys"] if k not in added] == want["exact"]["keys"]
    assert [k for k in got["lp"]["keys"] if k not in added] == want["lp"]["keys"]
    assert got["exact"]["objective"] == pytest.approx(want["exact"]["objective"], rel=1e-9)
    assert got["lp"]["objective"] == pytest.approx(want["lp"]["objective"], rel=1e-9)


# ---------------------------------------------------------------------------------------------- policies
@pytest.mark.parametrize("name", policy_names())
def test_every_policy_accepts_fractional_jobs_and_keeps_gpus_at_most_one(name: str) -> None:
    p = RoundProblem.from_dict(_doc([0.3, 0.5, 0.2, 0.1, 0.7, 0.25, 1, 2, 0.05, 0.6, 0.5, 0.5]))
    a = get_policy(name).allocate(RoundState.first_round(build_model(p)))
    assert allocation_violations(p, a) == []
    assert any(isinstance(pl.gpus, float) for pl in a.placements)
    for s in a.shared_gpus:
        assert sum(p.capacity_scale[p.job_index(j)] for j in s.jobs) <= 1 + 1e-12


@settings(max_examples=10, deadline=None)
@given(round_documents(max_jobs=8, max_capacity=3, scales=FRACTIONAL_SCALES))  # type: ignore[arg-type]
def test_property_every_policy_keeps_every_gpu_at_most_one(doc: dict[str, Any]) -> None:
    p = RoundProblem.from_dict(doc)
    state = RoundState.first_round(build_model(p))
    for name in policy_names():
        a = get_policy(name).allocate(state)
        assert allocation_violations(p, a) == [], name


# ---------------------------------------------------------------------------------------------- engine, traces, sim
def test_engine_plans_commits_and_reloads_fractional_jobs(tmp_path: Path) -> None:
    eng = Engine({"V100": 1, "K80": 1}, mode="fast")
    jobs = _doc([0.3, 0.5, 0.25, 1, 0.7])["jobs"]
    a = eng.plan(jobs)
    assert a.shared_gpus and all(sum(s.shares) <= 1 for s in a.shared_gpus)
    eng.commit(a)
    eng.save(tmp_path / "state.json")
    b = Engine.load(tmp_path / "state.json").plan(jobs)
    assert b.values.rounding_loss is not None


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_trace_scale_column_accepts_fractions(tmp_path: Path, suffix: str) -> None:
    t = Trace(id=["a", "b", "c"], arrival=[0, 5, 9], model=["A3C"] * 3, scale=[0.25, 1, 0.5],
              iterations=[10, 20, 30])
    assert t.scale.dtype == np.float64 and t.scale.tolist() == [0.25, 1.0, 0.5]
    path = tmp_path / f"t{suffix}"
    write_trace(t, path)
    assert read_trace(path) == t
    assert "0.25" in path.read_text() and "gpus" not in path.read_text()
    whole = Trace(id=["a"], arrival=[0], model=["A3C"], scale=[2], iterations=[1])
    assert whole.scale.dtype == np.int64


def _fractional_trace(n: int = 24, seed: int = 0) -> Trace:
    rng = np.random.default_rng(seed)
    models = ["ResNet-50 (batch size 64)", "Transformer (batch size 64)", "LM (batch size 20)", "A3C"]
    scale = rng.choice([0.1, 0.25, 0.3, 0.5, 0.5, 1, 2], size=n)
    return Trace(id=[f"j{i}" for i in range(n)], arrival=np.sort(rng.uniform(0, 3600, n)),
                 model=[models[0] if scale[i] > 1 else models[i % 4] for i in range(n)], scale=scale,
                 iterations=rng.uniform(1000, 20000, n))


@pytest.mark.parametrize("name", policy_names())
def test_fractional_jobs_finish_in_a_simulation_on_a_small_cluster(name: str) -> None:
    trace = _fractional_trace()
    res = simulate(trace, {"V100": 2, "K80": 1}, name)
    assert len(res.jobs) == len(trace) and all(np.isfinite(r.finish) for r in res.jobs)
    scales = {r.id: r.scale for r in res.jobs}
    assert isinstance(scales[trace.id[int(np.argmax(trace.scale < 1))]], float)
    busy = sum(r.busy_gpu_seconds for r in res.rounds)
    assert busy <= sum(r.capacity_gpu_seconds for r in res.rounds) + 1e-6


def test_a_share_runs_at_its_part_of_a_whole_gpu() -> None:
    """Two half-GPU jobs share one GPU and each runs at half the one-GPU throughput (the simulator's rule)."""
    half = Trace(id=["a", "b"], arrival=[0, 0], model=["A3C"] * 2, scale=[0.5, 0.5], iterations=[1000, 1000])
    one = Trace(id=["a"], arrival=[0], model=["A3C"], scale=[1], iterations=[1000])
    r_half = simulate(half, {"V100": 1}, "fairshare")
    r_one = simulate(one, {"V100": 1}, "fairshare")
    assert [r.finish for r in r_half.jobs] == pytest.approx([2 * r_one.jobs[0].finish] * 2, rel=1e-9)


def test_command_line_allocates_and_simulates_fractional_requests(tmp_path: Path) -> None:
    from fairshare.cli import main

    src, dst = tmp_path / "round.json", tmp_path / "out.json"
    src.write_text(json.dumps(_doc([0.3, 0.5, 0.25, 1, 2])))
    assert main(["allocate", str(src), "--mode", "exact", "-o", str(dst)]) == 0
    out = json.loads(dst.read_text())
    assert out["shared_gpus"] and out["rounding_loss"]["total"] >= 0
    trace = tmp_path / "t.csv"
    write_trace(_fractional_trace(8, seed=1), trace)
    assert main(["simulate", "--trace", str(trace), "--cluster", "V100=2,K80=1", "--policy", "fairshare",
                 "--out", str(tmp_path / "res"), "--no-plots"]) == 0


if __name__ == "__main__":  # write the baseline (see the module docstring)
    print(json.dumps([baseline_record(n, s) for n, s in BASELINE_ROUNDS], indent=1))
