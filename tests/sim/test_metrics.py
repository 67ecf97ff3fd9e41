"""Tests of fairshare.sim.metrics: hand-built schedules with hand-computed numbers, hypothesis properties."""

from __future__ import annotations

import csv
import dataclasses
import io
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.errors import InvalidInputError
from fairshare.sim.metrics import (
    METRIC_COLUMNS,
    UNFAIR_RHO,
    MetricColumn,
    RunMetrics,
    compute_metrics,
    finish_time_fairness,
    jain_index,
    job_completion_times,
    metrics_by_tenant,
    normalized_throughput,
    results_table,
)
from fairshare.sim.records import JobRecord, RoundRecord

NAN = float("nan")
H = 3600.0


def job(
    id: str,
    arrival: float,
    finish: float,
    iterations: float,
    fair: float,
    *,
    done: float | None = None,
    active: float | None = None,
    tenant: str = "",
    first: float = NAN,
) -> JobRecord:
    """A job record; a finished job gets done = iterations and active = JCT unless given."""
    if done is None:
        done = iterations
    if active is None:
        active = finish - arrival
    return JobRecord(id, "resnet18", tenant, 1, 1.0, arrival, finish, iterations, done, fair, active,
                     first_start=first)


def rnd(
    index: int, active: int, eff: float, busy: float, solver: float, status: str = "optimal"
) -> RoundRecord:
    """A 360 s round on 8 GPUs (capacity 2,880 GPU-s)."""
    return RoundRecord(index, 360.0 * index, 360.0, active, min(active, 8), eff, busy, 2880.0, solver, status)


# Hand-built schedule. Finished jobs:
#   A: 0 -> 3600 s (JCT 1 h), 90 it at Tfair 0.05 it/s  -> fair time 1800 s, rho = 2,  norm tp 0.5
#   B: 1800 -> 9000 s (JCT 2 h), 720 it at Tfair 0.1    -> fair time 7200 s, rho = 1,  norm tp 1
#   C: 3600 -> 14400 s (JCT 3 h), 1080 it at Tfair 0.1  -> fair time 10800 s, rho = 1, norm tp 1
# Unfinished:
#   D: arrived 7200, active 7200 s, 180 of 1000 it, Tfair 0.05 -> norm tp (180 / 7200) / 0.05 = 0.5
#   E: arrived at the end (active 0 s, Tfair nan): counted as unfinished, left out of Jain.
# Queueing delays (first start - arrival): A 0, B 360, C 1800, D 720 s; E never started (left out).
JOBS = [
    job("A", 0.0, 3600.0, 90.0, 0.05, tenant="t1", first=0.0),
    job("B", 1800.0, 9000.0, 720.0, 0.1, tenant="t2", first=2160.0),
    job("C", 3600.0, 14400.0, 1080.0, 0.1, tenant="t2", first=5400.0),
    job("D", 7200.0, NAN, 1000.0, 0.05, done=180.0, active=7200.0, tenant="t1", first=7920.0),
    job("E", 14400.0, NAN, 1000.0, NAN, done=0.0, active=0.0, tenant="t2"),
]
# Round 0 has no active job and is left out of the round metrics.
ROUNDS = [
    rnd(0, 0, NAN, 0.0, 0.0),
    rnd(1, 3, 0.5, 1440.0, 0.010),
    rnd(2, 5, 1.0, 2880.0, 0.030, "time_limit"),
    rnd(3, 2, 0.75, 1440.0, 0.020),
]


# ---------------------------------------------------------------------------------------------------------
# Hand-computed numbers
# ---------------------------------------------------------------------------------------------------------


def test_jct_statistics_by_hand() -> None:
    m = compute_metrics(JOBS, ROUNDS)
    assert (m.jobs, m.finished, m.unfinished) == (5, 3, 2)
    # JCT = [3600, 7200, 10800]; linear interpolation: p95 at rank 0.95 * 2 = 1.9, p99 at 1.98.
    assert m.mean_jct == pytest.approx(7200.0)
    assert m.median_jct == pytest.approx(7200.0)
    assert m.p95_jct == pytest.approx(7200.0 + 0.9 * 3600.0)  # 10440
    assert m.p99_jct == pytest.approx(7200.0 + 0.98 * 3600.0)  # 10728
    np.testing.assert_allclose(job_completion_times(JOBS), [3600.0, 7200.0, 10800.0])


def test_makespan_is_last_finish_minus_first_arrival() -> None:
    m = compute_metrics(JOBS[:3], ROUNDS)
    assert m.makespan == pytest.approx(14400.0 - 0.0)
    # Not defined while a job is unfinished.
    assert math.isnan(compute_metrics(JOBS, ROUNDS).makespan)


def test_finish_time_fairness_by_hand() -> None:
    np.testing.assert_allclose(finish_time_fairness(JOBS), [2.0, 1.0, 1.0])
    m = compute_metrics(JOBS, ROUNDS)
    assert m.unfair_fraction == pytest.approx(1 / 3)
    assert m.max_rho == pytest.approx(2.0)


def test_unfair_threshold_is_strict() -> None:
    # rho = JCT * Tfair / iterations with Tfair = 1, iterations = 100.
    jobs = [job("at", 0.0, 100.0 * UNFAIR_RHO, 100.0, 1.0), job("above", 0.0, 100.0 * 1.0501, 100.0, 1.0)]
    np.testing.assert_allclose(finish_time_fairness(jobs), [1.05, 1.0501])
    assert compute_metrics(jobs, []).unfair_fraction == pytest.approx(0.5)


def test_normalized_throughput_and_jain_by_hand() -> None:
    # Active jobs A, B, C, D (E never active): [0.5, 1, 1, 0.5]; Jain = 3^2 / (4 * 2.5) = 0.9.
    np.testing.assert_allclose(normalized_throughput(JOBS), [0.5, 1.0, 1.0, 0.5])
    m = compute_metrics(JOBS, ROUNDS)
    assert m.jain == pytest.approx(0.9)
    assert m.min_normalized_throughput == pytest.approx(0.5)
    assert m.max_normalized_throughput == pytest.approx(1.0)


def test_job_never_in_a_round_is_unfinished_but_not_in_jain() -> None:
    # F arrived during the last round: 200 s in the system, never planned, so no fair throughput.
    waiting = job("F", 14200.0, NAN, 1000.0, NAN, done=0.0, active=200.0)
    m = compute_metrics([*JOBS, waiting], ROUNDS)
    assert (m.jobs, m.unfinished) == (6, 3)
    assert m.jain == pytest.approx(0.9)
    assert normalized_throughput([waiting]).shape == (0,)


def test_normalized_throughput_of_finished_job_is_inverse_rho() -> None:
    fin = JOBS[:3]
    np.testing.assert_allclose(normalized_throughput(fin), 1.0 / finish_time_fairness(fin))


def test_jain_index_reference_values() -> None:
    assert jain_index([1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0]) == pytest.approx(1 / 3)
    assert jain_index([2.0]) == pytest.approx(1.0)
    assert jain_index(np.array([1.0, 3.0])) == pytest.approx(16 / 20)
    assert math.isnan(jain_index([]))
    assert math.isnan(jain_index([0.0, 0.0]))


def test_round_metrics_by_hand() -> None:
    m = compute_metrics(JOBS, ROUNDS)
    assert (m.rounds, m.active_rounds) == (4, 3)
    assert m.utilization == pytest.approx((0.5 + 1.0 + 0.75) / 3)
    # (1440 + 2880 + 1440) / (3 * 2880): round 0 has no active job and is left out.
    assert m.gpu_busy_fraction == pytest.approx(2 / 3)
    assert m.mean_solver_seconds == pytest.approx(0.02)
    assert m.p99_solver_seconds == pytest.approx(0.02 + 0.98 * 0.01)  # [0.01, 0.02, 0.03] at rank 1.98
    assert m.max_solver_seconds == pytest.approx(0.03)
    assert m.optimal_rounds == 2  # round 0 is optimal but has no active job; round 2 hit the time limit


def test_status_enum_values_count_as_optimal() -> None:
    from enum import Enum

    class Status(str, Enum):
        OPTIMAL = "optimal"

    r = dataclasses.replace(ROUNDS[1], status=Status.OPTIMAL)
    assert compute_metrics([], [r]).optimal_rounds == 1


# ---------------------------------------------------------------------------------------------------------
# Tenants, unfinished jobs, empty inputs
# ---------------------------------------------------------------------------------------------------------


def test_metrics_by_tenant() -> None:
    by = metrics_by_tenant(JOBS, ROUNDS)
    assert list(by) == ["t1", "t2"]
    t1, t2 = by["t1"], by["t2"]
    # t1: A finished (JCT 1 h, rho 2), D unfinished; norm tp [0.5, 0.5].
    assert (t1.jobs, t1.finished, t1.unfinished) == (2, 1, 1)
    assert t1.mean_jct == pytest.approx(3600.0)
    assert t1.p99_jct == pytest.approx(3600.0)
    assert t1.unfair_fraction == pytest.approx(1.0)
    assert t1.max_rho == pytest.approx(2.0)
    assert t1.jain == pytest.approx(1.0)
    # t2: B, C finished (JCT 2 h, 3 h, rho 1), E never active.
    assert (t2.jobs, t2.finished, t2.unfinished) == (3, 2, 1)
    assert t2.mean_jct == pytest.approx(9000.0)
    assert t2.median_jct == pytest.approx(9000.0)
    assert t2.unfair_fraction == pytest.approx(0.0)
    assert t2.jain == pytest.approx(1.0)
    assert math.isnan(t2.makespan)
    # Round fields are cluster-wide, equal for every tenant.
    run = compute_metrics(JOBS, ROUNDS)
    for t in (t1, t2):
        for f in (
            "utilization",
            "gpu_busy_fraction",
            "rounds",
            "active_rounds",
            "mean_solver_seconds",
            "p99_solver_seconds",
            "max_solver_seconds",
            "optimal_rounds",
        ):
            assert getattr(t, f) == getattr(run, f)


def test_metrics_by_tenant_without_tenants_is_empty() -> None:
    untenanted = [dataclasses.replace(j, tenant="") for j in JOBS]
    assert metrics_by_tenant(untenanted, ROUNDS) == {}
    assert metrics_by_tenant([], []) == {}


def test_metrics_by_tenant_mixed_keeps_untenanted_group() -> None:
    jobs = [dataclasses.replace(JOBS[0], tenant=""), JOBS[1]]
    by = metrics_by_tenant(jobs, [])
    assert set(by) == {"", "t2"}
    assert by[""].mean_jct == pytest.approx(3600.0)


def test_no_finished_job() -> None:
    m = compute_metrics(JOBS[3:], ROUNDS)
    assert (m.jobs, m.finished, m.unfinished) == (2, 0, 2)
    for f in ("mean_jct", "median_jct", "p95_jct", "p99_jct", "makespan", "unfair_fraction", "max_rho"):
        assert math.isnan(getattr(m, f)), f
    assert m.jain == pytest.approx(1.0)  # only D was active
    assert m.min_normalized_throughput == pytest.approx(0.5)


def test_empty_inputs_give_nan() -> None:
    m = compute_metrics([], [])
    d = m.to_dict()
    counts = {"jobs", "finished", "unfinished", "rounds", "active_rounds", "optimal_rounds", "censored", "migrations",
              "split_gangs"}
    assert all(d[k] == 0 for k in counts)
    assert all(math.isnan(v) for k, v in d.items() if k not in counts)
    assert finish_time_fairness([]).shape == (0,)
    assert normalized_throughput([]).shape == (0,)


def test_only_idle_rounds_give_nan_round_metrics() -> None:
    m = compute_metrics([], [rnd(0, 0, NAN, 0.0, 0.0)])
    assert (m.rounds, m.active_rounds, m.optimal_rounds) == (1, 0, 0)
    assert math.isnan(m.utilization) and math.isnan(m.gpu_busy_fraction) and math.isnan(m.p99_solver_seconds)


def test_run_metrics_is_frozen_and_to_dict_round_trips() -> None:
    m = compute_metrics(JOBS[:3], ROUNDS)  # no nan field, so == is meaningful
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.jain = 0.0  # type: ignore[misc]
    assert RunMetrics(**m.to_dict()) == m


# ---------------------------------------------------------------------------------------------------------
# Invalid records
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "match"),
    [
        (job("neg", 100.0, 50.0, 10.0, 0.1), r"`jobs\['neg'\]\.finish` = 50\.0: .*negative JCT"),
        (job("inf", 0.0, math.inf, 10.0, 0.1), r"`jobs\['inf'\]\.finish` = inf"),
        (job("arr", NAN, 50.0, 10.0, 0.1, active=50.0), r"`jobs\['arr'\]\.arrival` = nan"),
        (job("it", 0.0, 50.0, 0.0, 0.1), r"`jobs\['it'\]\.iterations` = 0\.0: must be finite and > 0"),
        (job("done", 0.0, 50.0, 10.0, 0.1, done=11.0), r"`jobs\['done'\]\.done_iterations` = 11\.0: exceeds"),
        (job("dneg", 0.0, NAN, 10.0, 0.1, done=-1.0, active=5.0), r"`jobs\['dneg'\]\.done_iterations`"),
        (job("act", 0.0, NAN, 10.0, 0.1, done=1.0, active=-5.0), r"`jobs\['act'\]\.active_seconds` = -5\.0"),
        (
            job("tf", 0.0, 50.0, 10.0, 0.0),
            r"`jobs\['tf'\]\.fair_throughput` = 0\.0: .*finished or made progress",
        ),
        (job("tfn", 0.0, NAN, 10.0, NAN, done=1.0, active=5.0), r"`jobs\['tfn'\]\.fair_throughput` = nan"),
        (job("idle", 0.0, NAN, 10.0, NAN, done=1.0, active=0.0), r"`jobs\['idle'\]\.done_iterations` = 1\.0"),
        (
            job("tiny", 0.0, NAN, 10.0, 1.0, done=1.0, active=1e-320),
            r"`jobs\['tiny'\]\.active_seconds`.*overflows",
        ),
        (job("early", 100.0, 150.0, 10.0, 0.1, first=50.0), r"`jobs\['early'\]\.first_start` = 50\.0: .*before"),
        (job("after", 0.0, 50.0, 10.0, 0.1, first=60.0), r"`jobs\['after'\]\.first_start` = 60\.0: .*after finish"),
        (job("fsi", 0.0, 50.0, 10.0, 0.1, first=math.inf), r"`jobs\['fsi'\]\.first_start` = inf: must be finite"),
    ],
)
def test_invalid_job_record_raises_naming_the_job(record: JobRecord, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        compute_metrics([JOBS[0], record], [])
    with pytest.raises(InvalidInputError, match=match):
        metrics_by_tenant([record], [])
    with pytest.raises(InvalidInputError, match=match):
        finish_time_fairness([record])


def test_invalid_input_error_is_value_error() -> None:
    with pytest.raises(ValueError, match="negative JCT"):
        job_completion_times([job("neg", 100.0, 50.0, 10.0, 0.1)])


def test_duplicate_job_id_raises() -> None:
    with pytest.raises(InvalidInputError, match=r"`jobs\.id` = 'A': duplicate job id"):
        compute_metrics([JOBS[0], JOBS[0]], [])


@pytest.mark.parametrize(
    ("record", "match"),
    [
        (rnd(7, 3, 0.5, 3000.0, 0.01), r"`rounds\[7\]\.busy_gpu_seconds` = 3000\.0: exceeds capacity"),
        (rnd(7, 3, 0.5, -1.0, 0.01), r"`rounds\[7\]\.busy_gpu_seconds` = -1\.0"),
        (rnd(7, 3, 0.5, 100.0, -0.01), r"`rounds\[7\]\.solver_seconds` = -0\.01"),
        (rnd(7, 3, NAN, 100.0, 0.01), r"`rounds\[7\]\.utilization` = nan: .*active jobs"),
        (dataclasses.replace(rnd(7, 3, 0.5, 100.0, 0.01), length=0.0), r"`rounds\[7\]\.length` = 0\.0"),
        (
            dataclasses.replace(rnd(7, 3, 0.5, 100.0, 0.01), placed_jobs=4),
            r"`rounds\[7\]\.placed_jobs` = 4\.0",
        ),
        (
            dataclasses.replace(rnd(7, 3, 0.5, 100.0, 0.01), capacity_gpu_seconds=math.inf),
            r"`rounds\[7\]\.capacity_gpu_seconds` = inf",
        ),
    ],
)
def test_invalid_round_record_raises_naming_the_round(record: RoundRecord, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        compute_metrics([], [ROUNDS[1], record])


@pytest.mark.parametrize("x", [[1.0, -1.0], [1.0, NAN], [math.inf]])
def test_jain_index_rejects_negative_or_non_finite(x: list[float]) -> None:
    with pytest.raises(InvalidInputError, match=r"`x\[\d\]` = .*: Jain's index needs finite values >= 0"):
        jain_index(x)


# ---------------------------------------------------------------------------------------------------------
# Results table
# ---------------------------------------------------------------------------------------------------------

CSV_COLUMNS = [
    "policy",
    "mean_jct_h",
    "median_jct_h",
    "p95_jct_h",
    "p99_jct_h",
    "mean_queue_h",
    "p99_queue_h",
    "makespan_h",
    "unfair_fraction",
    "max_rho",
    "jain",
    "utilization",
    "gpu_busy_fraction",
    "mean_solver_ms",
    "p99_solver_ms",
    "optimal_rounds",
]


def test_results_table_csv() -> None:
    table = {"fairshare": compute_metrics(JOBS[:3], ROUNDS), "fifo": compute_metrics(JOBS, ROUNDS)}
    rows = list(csv.DictReader(io.StringIO(results_table(table, fmt="csv"))))
    assert list(rows[0]) == CSV_COLUMNS
    assert [r["policy"] for r in rows] == ["fairshare", "fifo"]
    fs = rows[0]
    assert float(fs["mean_jct_h"]) == pytest.approx(2.0)
    assert float(fs["p95_jct_h"]) == pytest.approx(2.9)
    assert float(fs["p99_jct_h"]) == pytest.approx(2.98)
    assert float(fs["mean_queue_h"]) == pytest.approx(0.2)               # (0 + 360 + 1800) / 3 s
    assert float(fs["p99_queue_h"]) == pytest.approx((360 + 0.98 * 1440) / 3600)
    assert float(rows[1]["mean_queue_h"]) == pytest.approx(0.2)          # D's 720 s; E never started
    assert float(fs["makespan_h"]) == pytest.approx(4.0)
    assert float(fs["unfair_fraction"]) == pytest.approx(1 / 3)
    assert float(fs["max_rho"]) == pytest.approx(2.0)
    assert float(fs["jain"]) == pytest.approx(25 / 27)  # [0.5, 1, 1]: 2.5^2 / (3 * 2.25)
    assert float(fs["utilization"]) == pytest.approx(0.75)  # mean E/C of the active rounds
    assert float(fs["gpu_busy_fraction"]) == pytest.approx(2 / 3)
    assert float(fs["mean_solver_ms"]) == pytest.approx(20.0)
    assert float(fs["p99_solver_ms"]) == pytest.approx(29.8)
    assert fs["optimal_rounds"] == "2"
    assert math.isnan(float(rows[1]["makespan_h"]))


def test_results_table_markdown() -> None:
    md = results_table({"fairshare": compute_metrics(JOBS[:3], ROUNDS), "a|b": compute_metrics([], [])})
    lines = md.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(
        "| policy | mean JCT (h) | median JCT (h) | p95 JCT (h) | p99 JCT (h) | mean queue (h) | p99 queue (h) "
        "| makespan (h)"
    )
    assert all(line.count(" | ") == len(CSV_COLUMNS) - 1 for line in (lines[0], lines[2]))
    assert lines[2] == (
        "| fairshare | 2.00 | 2.00 | 2.90 | 2.98 | 0.20 | 0.49 | 4.00 | 0.333 | 2.00 | 0.926 | 0.750 | 0.667 "
        "| 20.00 | 29.80 | 2 |"
    )
    assert lines[3].startswith("| a\\|b | nan |")


def test_metric_columns_are_the_default_table_columns() -> None:
    assert [c.name for c in METRIC_COLUMNS] == CSV_COLUMNS[1:]
    assert len({c.header for c in METRIC_COLUMNS}) == len(METRIC_COLUMNS)
    m = compute_metrics(JOBS[:3], ROUNDS)
    by_name = {c.name: c for c in METRIC_COLUMNS}
    assert by_name["utilization"].value(m) == m.utilization
    assert by_name["gpu_busy_fraction"].value(m) == m.gpu_busy_fraction
    assert by_name["mean_jct_h"].value(m) == pytest.approx(m.mean_jct / 3600)


def test_results_table_with_chosen_columns() -> None:
    m = {"fairshare": compute_metrics(JOBS[:3], ROUNDS)}
    by_name = {c.name: c for c in METRIC_COLUMNS}
    cols = [by_name["jain"], MetricColumn("rounds", "rounds", lambda r: r.active_rounds, "d")]
    rows = list(csv.DictReader(io.StringIO(results_table(m, fmt="csv", columns=cols))))
    assert rows == [{"policy": "fairshare", "jain": repr(25 / 27), "rounds": "3"}]
    assert results_table(m, columns=cols).splitlines() == [
        "| policy | Jain | rounds |", "|:---|---:|---:|", "| fairshare | 0.926 | 3 |"]


def test_results_table_rejects_unknown_format() -> None:
    with pytest.raises(InvalidInputError, match=r"`fmt` = 'latex': must be 'markdown' or 'csv'"):
        results_table({}, fmt="latex")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------------------

values = st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 1e6)), min_size=1, max_size=50).filter(
    lambda v: any(x > 0 for x in v)
)


@settings(max_examples=30, deadline=None)
@given(values)
def test_jain_index_between_one_over_n_and_one(x: list[float]) -> None:
    j = jain_index(x)
    assert 1.0 / len(x) * (1 - 1e-12) <= j <= 1.0


@settings(max_examples=30, deadline=None)
@given(values, st.floats(1e-3, 1e3))
def test_jain_index_scale_invariant(x: list[float], c: float) -> None:
    assert jain_index(np.asarray(x) * c) == pytest.approx(jain_index(x), rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(values, st.randoms(use_true_random=False))
def test_jain_index_permutation_invariant(x: list[float], r: object) -> None:
    y = list(x)
    r.shuffle(y)  # type: ignore[attr-defined]
    assert jain_index(y) == pytest.approx(jain_index(x), rel=1e-12)


@st.composite
def job_records(draw: st.DrawFn) -> list[JobRecord]:
    n = draw(st.integers(0, 12))
    out = []
    for i in range(n):
        arrival = draw(st.floats(0.0, 1e5))
        iterations = draw(st.floats(1.0, 1e5))
        fair = draw(st.floats(1e-3, 10.0))
        if draw(st.booleans()):
            jct = draw(st.floats(1.0, 1e6))
            rec = job(f"j{i}", arrival, arrival + jct, iterations, fair, tenant=draw(st.sampled_from("xy")))
        else:
            active = draw(st.one_of(st.just(0.0), st.floats(1.0, 1e6)))
            done = draw(st.floats(0.0, 1.0)) * iterations if active > 0 else 0.0
            rec = job(
                f"j{i}",
                arrival,
                NAN,
                iterations,
                fair if active > 0 else NAN,
                done=done,
                active=active,
                tenant=draw(st.sampled_from("xy")),
            )
        out.append(rec)
    return out


def _same(a: RunMetrics, b: RunMetrics) -> bool:
    for k, v in a.to_dict().items():
        w = getattr(b, k)
        if not (v == w or (math.isnan(v) and math.isnan(w)) or math.isclose(v, w, rel_tol=1e-9)):
            return False
    return True


@settings(max_examples=30, deadline=None)
@given(job_records(), st.randoms(use_true_random=False))
def test_metrics_invariant_to_job_order(jobs: list[JobRecord], r: object) -> None:
    shuffled = list(jobs)
    r.shuffle(shuffled)  # type: ignore[attr-defined]
    assert _same(compute_metrics(jobs, ROUNDS), compute_metrics(shuffled, ROUNDS))
    by, by_shuffled = metrics_by_tenant(jobs, ROUNDS), metrics_by_tenant(shuffled, ROUNDS)
    assert set(by) == set(by_shuffled)
    assert all(_same(by[t], by_shuffled[t]) for t in by)


@settings(max_examples=30, deadline=None)
@given(job_records())
def test_metric_ranges(jobs: list[JobRecord]) -> None:
    m = compute_metrics(jobs, ROUNDS)
    assert m.finished + m.unfinished == m.jobs == len(jobs)
    if m.finished:
        assert m.mean_jct > 0 and m.median_jct <= m.p95_jct <= m.p99_jct
        assert 0.0 <= m.unfair_fraction <= 1.0 and m.max_rho > 0
    if not math.isnan(m.jain):
        n_active = sum(j.active_seconds > 0 for j in jobs)
        assert 1.0 / n_active * (1 - 1e-12) <= m.jain <= 1.0
        assert m.min_normalized_throughput <= m.max_normalized_throughput
    per_tenant = metrics_by_tenant(jobs, ROUNDS)
    assert sum(t.jobs for t in per_tenant.values()) == (len(jobs) if per_tenant else 0)
