"""Tests of fairshare.allocation: the grouped result (values, report, jobs) and its flat JSON document."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairshare import allocate
from fairshare.allocation import Allocation, JobResults, RoundValues, SolveReport, Status
from fairshare.cli import example_round_text
from fairshare.formulation import RoundModel, build_model
from fairshare.testing.strategies import round_documents, round_problems

SPEC_ROUND = json.loads(example_round_text())

TOP = ("status", "job_ids", "gpu_types", "placements", "values", "report", "jobs", "shared_gpus", "binding")
JOB_ARRAYS = ("fair_throughput", "throughput", "progress", "job_shortfall", "next_deficit", "job_gpu", "job_partner",
              "rounded_share", "moved")


def random_point(model: RoundModel, rng: np.random.Generator, integral: bool) -> np.ndarray:
    """A random feasible placement: 0/1 columns tried in random order, or random time shares within the rows."""
    c, p = model.columns, model.problem
    x = np.zeros(c.num)
    time_left = np.ones(p.num_jobs)
    cap = p.capacity.astype(np.float64)
    for k in rng.permutation(c.num):
        members = [c.job_a[k]] + ([c.job_b[k]] if c.job_b[k] >= 0 else [])
        share = 1.0 if integral else float(rng.uniform(0.1, 1.0))
        share = min(share, *(time_left[m] for m in members), cap[c.gpu[k]] / c.size[k])
        if rng.random() < 0.6 and (share == 1.0 if integral else share > 0.05):
            x[k] = share
            time_left[members] -= share
            cap[c.gpu[k]] -= share * c.size[k]
    return x


def same(a: object, b: object) -> bool:
    """Equal values, arrays element by element (nan equal to nan), None only to None."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f"))
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    return a == b


def test_allocation_has_what_a_scheduler_acts_on_at_the_top_and_three_groups() -> None:
    alloc = allocate(SPEC_ROUND, mode="exact")
    assert tuple(f.name for f in dataclasses.fields(Allocation)) == TOP
    assert isinstance(alloc.values, RoundValues) and isinstance(alloc.report, SolveReport)
    assert isinstance(alloc.jobs, JobResults)
    assert tuple(f.name for f in dataclasses.fields(JobResults)) == JOB_ARRAYS
    for group in (alloc.values, alloc.report, alloc.jobs):  # frozen, like the allocation itself
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(group, dataclasses.fields(group)[0].name, None)
    assert alloc.report.mode == "exact" and alloc.report.policy is None
    assert alloc.values.value_gain == pytest.approx(alloc.values.objective - alloc.values.obj_null)
    np.testing.assert_array_equal(alloc.jobs.placed, alloc.jobs.throughput > 0)


@given(round_problems(min_jobs=1), st.integers(0, 2**32 - 1), st.booleans())
def test_grouped_fields_are_the_evaluation_of_the_placement(problem, seed, integral) -> None:
    # every number of every group comes from the one placement: RoundModel.evaluate of the same x
    model = build_model(problem)
    x = random_point(model, np.random.default_rng(seed), integral)
    mode = "fast" if integral else "lp"
    alloc = Allocation.from_columns(model, x, status=Status.HEURISTIC, mode=mode, policy="p", mip_gap=0.25,
                                    bound=3.0, build_seconds=1.5, solve_seconds=2.5, message="m")
    ev = model.evaluate(x)
    for name in ("throughput", "progress", "job_shortfall", "next_deficit"):
        np.testing.assert_array_equal(getattr(alloc.jobs, name), getattr(ev, name), err_msg=name)
    np.testing.assert_array_equal(alloc.jobs.fair_throughput, model.fair.fair_throughput)
    np.testing.assert_array_equal(alloc.jobs.progress, alloc.jobs.throughput / alloc.jobs.fair_throughput)
    v = alloc.values
    assert (v.objective, v.efficiency, v.shortfall, v.prioritized_efficiency, v.priced_shortfall) == (
        ev.objective, ev.efficiency, ev.shortfall, ev.prioritized_efficiency, ev.priced_shortfall)
    assert v.utilization == pytest.approx(ev.efficiency / problem.total_gpus)
    assert v.obj_null == model.obj_null
    assert alloc.report == SolveReport(mode=mode, policy="p", mip_gap=0.25, bound=3.0, relaxation=None,
                                       build_seconds=1.5, solve_seconds=2.5, message="m")
    # a job is placed exactly when a placement names it
    named = {j for p in alloc.placements for j in p.jobs}
    assert {alloc.job_ids[i] for i in np.flatnonzero(alloc.jobs.job_gpu >= 0)} == named
    assert alloc.jobs.placed.tolist() == [j in named and t > 0 for j, t in
                                          zip(alloc.job_ids, alloc.jobs.throughput.tolist())]


@given(round_documents(), st.sampled_from(["fast", "lp"]))
def test_the_document_stays_flat_and_round_trips(doc, mode) -> None:
    alloc = allocate(doc, mode=mode)
    out = alloc.to_dict()
    assert not {"values", "report"} & set(out)  # the groups are not keys: their fields are
    for key in ("objective", "efficiency", "utilization", "shortfall", "mode", "mip_gap", "bound", "message"):
        assert key in out
    assert all(isinstance(per_job, dict) and "progress" in per_job for per_job in out["jobs"].values())
    back = Allocation.from_dict(json.loads(alloc.to_json()))
    assert back.to_json() == alloc.to_json()  # the same text, key for key
    assert (back.status, back.job_ids, back.gpu_types, back.placements, back.shared_gpus) == (
        alloc.status, alloc.job_ids, alloc.gpu_types, alloc.placements, alloc.shared_gpus)
    for group in ("values", "report", "jobs"):
        for f in dataclasses.fields(getattr(alloc, group)):
            if mode == "lp" and f.name == "job_partner":
                continue  # lp shares are time fractions: a document's share of 1 reads as a partner
            got, want = getattr(getattr(back, group), f.name), getattr(getattr(alloc, group), f.name)
            assert same(got, want), (group, f.name, got, want)


def test_the_spec_round_document_keeps_its_keys_in_order() -> None:
    out = allocate(SPEC_ROUND, mode="exact").to_dict()
    assert list(out) == ["status", "mode", "objective", "efficiency", "prioritized_efficiency", "utilization",
                         "shortfall", "priced_shortfall", "mip_gap", "bound", "obj_null", "build_seconds",
                         "solve_seconds", "message", "gpu_types", "placements", "jobs"]
    assert list(next(iter(out["jobs"].values()))) == ["fair_throughput", "throughput", "progress", "shortfall",
                                                      "next_deficit"]
