"""Run metrics: what a simulation achieved, computed from its job and round records alone.

The definitions follow ``shared/spec/simulator.md`` (section Metrics) and are written out with their units and
exclusions in ``docs/metrics.md``. With ``J`` the jobs of a run, ``F`` the finished ones (finite ``finish``),
``A`` the ones that were in the system for some time with a fair share (``active_seconds > 0`` and
``fair_throughput > 0``; ``nan`` marks a job never in a planned round) and ``R`` the rounds with at least one
active job:

* job completion time ``JCT_j = finish_j - arrival_j`` (s), ``j in F`` minus the jobs the trace marked censored
  (their recorded work is a lower bound; ``censored`` counts them); mean, median, p95, p99;
* queueing delay ``first_start_j - arrival_j`` (s): from arrival to the first time the job was given GPUs,
  over the jobs that were (``first_start`` finite; censored ones included); mean and p99. Jobs never started
  are among the unfinished ones;
* makespan ``max_{j in F} finish_j - min_{j in J} arrival_j`` (s), ``nan`` unless every job finished;
* finish-time fairness (Themis) ``rho_j = JCT_j / (iterations_j / Tfair_j)``, over the same jobs, where ``Tfair_j`` is
  the job's mean fair throughput over its life; the fraction of jobs with ``rho_j > 1.05`` and ``max rho``;
* normalised throughput ``n_j = (done_iterations_j / active_seconds_j) / Tfair_j``, ``j in A``; Jain's index
  ``(sum n)^2 / (|A| sum n^2)`` and ``min n``, ``max n``. For a finished job ``n_j = 1 / rho_j``;
* utilization: mean of the rounds' ``E / C`` over ``R``; GPU busy fraction ``sum_R busy / sum_R capacity``
  (GPU-seconds over GPU-seconds);
* solver wall time per round over ``R`` (mean, p99, max; s) and the number of rounds of ``R`` whose status is
  ``optimal`` (proven by the solver);
* with a cluster given as nodes: migrations (jobs that ran in consecutive rounds on different GPUs, summed over
  the rounds) and split gangs (gangs spread over several nodes, summed over the rounds).

:func:`metrics_by_duration_class` computes the job metrics per duration class (under one round, one round to
1 h, over 1 h; by ``JobRecord.ideal_seconds``), so that a round length cannot hide behind a headline number.

Percentiles use numpy's default (linear interpolation between order statistics, ``method="linear"``).
An empty set gives ``nan``, never an exception. Invalid records raise
:class:`~fairshare.errors.InvalidInputError` naming the job id (or round index) and the field.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from fairshare._validate import check_array
from fairshare.errors import InvalidInputError
from fairshare.sim.records import JobRecord, RoundRecord

__all__ = [
    "METRIC_COLUMNS",
    "UNFAIR_RHO",
    "COUNT_COLUMNS",
    "DURATION_CLASSES",
    "MetricColumn",
    "RunMetrics",
    "compute_metrics",
    "finish_time_fairness",
    "jain_index",
    "job_completion_times",
    "metrics_by_duration_class",
    "metrics_by_tenant",
    "normalized_throughput",
    "results_table",
]

#: A finished job is "unfair" when its finish-time fairness ``rho`` is strictly above this.
UNFAIR_RHO = 1.05

_NAN = float("nan")
_REL_TOL = 1e-9  # slack for float noise when comparing done work with total work, busy with capacity


@dataclass(frozen=True, slots=True)
class RunMetrics:
    """Metrics of one run (or of one tenant's jobs in a run). Times in seconds.

    Attributes
    ----------
    jobs, finished, unfinished : int
        Number of jobs; of those with a finite ``finish``; of the others (not finished when the run stopped,
        e.g. at its horizon).
    mean_jct, median_jct, p95_jct, p99_jct : float
        Job completion time ``finish - arrival`` of finished jobs that are not censored, s (``nan`` if none).
    makespan : float
        Last finish minus first arrival, s; ``nan`` unless every job finished.
    unfair_fraction : float
        Fraction of finished jobs with ``rho > 1.05``.
    max_rho : float
        Largest finish-time fairness ``rho`` over finished jobs.
    jain : float
        Jain's index of the normalised throughputs of the jobs with ``active_seconds > 0`` and a fair
        throughput (see :func:`normalized_throughput`).
    min_normalized_throughput, max_normalized_throughput : float
        Smallest and largest of those normalised throughputs.
    utilization : float
        Mean ``E / C`` over the rounds with at least one active job (``RoundRecord.utilization``).
    gpu_busy_fraction : float
        Busy GPU-seconds over capacity GPU-seconds, over the rounds with at least one active job.
    rounds, active_rounds : int
        All rounds; rounds with at least one active job (the ones the round fields are computed over).
    mean_solver_seconds, p99_solver_seconds, max_solver_seconds : float
        Policy wall time per active round, s.
    optimal_rounds : int
        Active rounds with status ``optimal``.
    censored : int
        Jobs the trace marked censored (still running when the source trace ended): left out of JCT, ``rho``
        and the unfair fraction, whether or not they finished in the simulation.
    migrations : int
        Cluster given as nodes: job moves over the run (a job that ran in consecutive rounds on different GPUs
        counts once per such round; ``RoundRecord.migrations``). 0 without nodes.
    split_gangs : int
        Cluster given as nodes: gang-rounds spread over more than one node (``RoundRecord.split_gangs``).
    mean_queue_delay, p99_queue_delay : float
        Queueing delay ``first_start - arrival`` of the jobs that were given GPUs, s (``nan`` if none, or for
        records without ``first_start``).
    """

    jobs: int
    finished: int
    unfinished: int
    mean_jct: float
    median_jct: float
    p95_jct: float
    p99_jct: float
    makespan: float
    unfair_fraction: float
    max_rho: float
    jain: float
    min_normalized_throughput: float
    max_normalized_throughput: float
    utilization: float
    gpu_busy_fraction: float
    rounds: int
    active_rounds: int
    mean_solver_seconds: float
    p99_solver_seconds: float
    max_solver_seconds: float
    optimal_rounds: int
    censored: int = 0
    migrations: int = 0
    split_gangs: int = 0
    mean_queue_delay: float = _NAN
    p99_queue_delay: float = _NAN

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the fields (``nan`` stays ``nan``).

        Examples
        --------
        >>> compute_metrics([], []).to_dict()["jobs"]
        0
        """
        return asdict(self)


# ----------------------------------------------------------------------------------------------------------
# Validated array form of the records
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Jobs:
    ids: tuple[str, ...]
    tenants: tuple[str, ...]
    arrival: np.ndarray
    finish: np.ndarray
    iterations: np.ndarray
    done: np.ndarray
    fair: np.ndarray
    active: np.ndarray
    censored: np.ndarray
    ideal: np.ndarray
    first_start: np.ndarray

    @property
    def finished(self) -> np.ndarray:
        return np.isfinite(self.finish)

    @property
    def timed(self) -> np.ndarray:
        """Jobs with a JCT: finished and not censored."""
        return np.isfinite(self.finish) & ~self.censored

    def subset(self, mask: np.ndarray) -> _Jobs:
        idx = np.flatnonzero(mask)
        return _Jobs(
            tuple(self.ids[i] for i in idx),
            tuple(self.tenants[i] for i in idx),
            self.arrival[idx],
            self.finish[idx],
            self.iterations[idx],
            self.done[idx],
            self.fair[idx],
            self.active[idx],
            self.censored[idx],
            self.ideal[idx],
            self.first_start[idx],
        )


def _job_arrays(jobs: Sequence[JobRecord]) -> _Jobs:
    """Validate job records and turn them into float64 arrays."""
    ids = tuple(j.id for j in jobs)
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            raise InvalidInputError("jobs.id", i, "duplicate job id")
        seen.add(i)

    def col(name: str) -> np.ndarray:
        return np.array([float(getattr(j, name)) for j in jobs], dtype=np.float64)

    arrival, finish, iterations = col("arrival"), col("finish"), col("iterations")
    done, fair, active = col("done_iterations"), col("fair_throughput"), col("active_seconds")

    def check(bad: np.ndarray, name: str, values: np.ndarray, reason: str) -> None:
        if bad.any():
            i = int(np.argmax(bad))
            raise InvalidInputError(f"jobs[{ids[i]!r}].{name}", float(values[i]), reason)

    check(~np.isfinite(arrival), "arrival", arrival, "must be finite")
    check(np.isinf(finish), "finish", finish, "must be finite, or nan for an unfinished job")
    with np.errstate(invalid="ignore"):
        check(finish < arrival, "finish", finish, "finish is before arrival (negative JCT)")
        check(~(np.isfinite(iterations) & (iterations > 0)), "iterations", iterations,
              "must be finite and > 0")
        check(~(np.isfinite(done) & (done >= 0)), "done_iterations", done, "must be finite and >= 0")
        check(done > iterations * (1 + _REL_TOL), "done_iterations", done, "exceeds the job's iterations")
        check(~(np.isfinite(active) & (active >= 0)), "active_seconds", active, "must be finite and >= 0")
        check((active == 0) & (done > 0), "done_iterations", done, "work done by a job with active_seconds 0")
        # A job that ran has a positive fair throughput (spec round-problem section 2); a job that never was
        # in a planned round (it arrived during the last one, or after) carries nan (or 0).
        must_have_fair = (done > 0) | np.isfinite(finish)
        check(must_have_fair & ~(np.isfinite(fair) & (fair > 0)), "fair_throughput", fair,
              "must be finite and > 0 for a job that finished or made progress")
        check(np.isinf(fair) | (fair < 0), "fair_throughput", fair, "must be nan or finite and >= 0")
        with np.errstate(divide="ignore", over="ignore"):
            norm = np.where((active > 0) & (fair > 0), done / active / fair, 0.0)
            rho = np.where(np.isfinite(finish), (finish - arrival) * fair / iterations, 0.0)
        check(~np.isfinite(norm), "active_seconds", active,
              "normalised throughput done_iterations / active_seconds / fair_throughput overflows")
        check(~np.isfinite(rho), "finish", finish, "rho = JCT * fair_throughput / iterations overflows")
    censored = np.array([bool(getattr(j, "censored", False)) for j in jobs], dtype=bool)
    ideal = np.array([float(getattr(j, "ideal_seconds", _NAN)) for j in jobs], dtype=np.float64)
    first = np.array([float(getattr(j, "first_start", _NAN)) for j in jobs], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        check(np.isinf(first), "first_start", first, "must be finite, or nan for a job never given GPUs")
        check(first < arrival, "first_start", first, "first start is before arrival (negative queueing delay)")
        check(first > finish, "first_start", first, "first start is after finish")
    for a in (arrival, finish, iterations, done, fair, active, censored, ideal, first):
        a.setflags(write=False)
    return _Jobs(ids, tuple(j.tenant for j in jobs), arrival, finish, iterations, done, fair, active, censored,
                 ideal, first)


@dataclass(frozen=True, slots=True)
class _Rounds:
    index: np.ndarray
    active_jobs: np.ndarray
    utilization: np.ndarray
    busy: np.ndarray
    capacity: np.ndarray
    solver: np.ndarray
    optimal: np.ndarray
    migrations: np.ndarray
    split_gangs: np.ndarray


def _round_arrays(rounds: Sequence[RoundRecord]) -> _Rounds:
    """Validate round records and turn them into arrays."""
    index = np.array([r.index for r in rounds], dtype=np.int64)

    def col(name: str) -> np.ndarray:
        return np.array([float(getattr(r, name)) for r in rounds], dtype=np.float64)

    active_jobs, placed = col("active_jobs"), col("placed_jobs")
    length, util, busy, cap, solver = (col(n) for n in
                                       ("length", "utilization", "busy_gpu_seconds", "capacity_gpu_seconds",
                                        "solver_seconds"))

    def check(bad: np.ndarray, name: str, values: np.ndarray, reason: str) -> None:
        if bad.any():
            i = int(np.argmax(bad))
            raise InvalidInputError(f"rounds[{int(index[i])}].{name}", float(values[i]), reason)

    with np.errstate(invalid="ignore"):
        check(~(np.isfinite(length) & (length > 0)), "length", length, "must be finite and > 0")
        check(~(active_jobs >= 0), "active_jobs", active_jobs, "must be >= 0")
        check(~((placed >= 0) & (placed <= active_jobs)), "placed_jobs", placed,
              "must be in [0, active_jobs]")
        check(~(np.isfinite(cap) & (cap >= 0)), "capacity_gpu_seconds", cap, "must be finite and >= 0")
        check(~(np.isfinite(busy) & (busy >= 0)), "busy_gpu_seconds", busy, "must be finite and >= 0")
        check(busy > cap * (1 + _REL_TOL), "busy_gpu_seconds", busy, "exceeds capacity_gpu_seconds")
        check(~(np.isfinite(solver) & (solver >= 0)), "solver_seconds", solver, "must be finite and >= 0")
        check((active_jobs > 0) & ~(np.isfinite(util) & (util >= 0)), "utilization", util,
              "must be finite and >= 0 in a round with active jobs")
    optimal = np.array([r.status == "optimal" for r in rounds], dtype=bool)  # also a StrEnum status
    moves = np.array([int(getattr(r, "migrations", 0)) for r in rounds], dtype=np.int64)
    split = np.array([int(getattr(r, "split_gangs", 0)) for r in rounds], dtype=np.int64)
    return _Rounds(index, active_jobs, util, busy, cap, solver, optimal, moves, split)


# ----------------------------------------------------------------------------------------------------------
# Elementary metrics
# ----------------------------------------------------------------------------------------------------------


def jain_index(x: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)`` of non-negative values.

    It is 1 when all values are equal and ``1/n`` when one value holds everything; it does not change when all
    values are scaled by the same positive factor or permuted. Empty input, or all zeros, gives ``nan``
    (undefined).

    Raises
    ------
    InvalidInputError
        If a value is negative or not finite.

    Examples
    --------
    >>> jain_index([1.0, 1.0, 1.0])
    1.0
    >>> round(jain_index([1.0, 0.0, 0.0]), 6)
    0.333333
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    with np.errstate(invalid="ignore"):
        check_array(a, a >= 0, "x", "Jain's index needs finite values >= 0")
    if a.size == 0 or not (a > 0).any():
        return _NAN
    a = a / a.max()  # scale first: keeps the squares away from overflow and underflow
    return float(min(1.0, a.sum() ** 2 / (a.size * np.dot(a, a))))


def job_completion_times(jobs: Sequence[JobRecord]) -> np.ndarray:
    """``finish - arrival`` (s) of the finished jobs that are not censored, in input order.

    Examples
    --------
    >>> from fairshare.sim.records import JobRecord
    >>> j = JobRecord("a", "m", "", 1, 1.0, 10.0, 70.0, 6.0, 6.0, 0.1, 60.0)
    >>> job_completion_times([j]).tolist()
    [60.0]
    """
    a = _job_arrays(jobs)
    return _jct(a)


def _jct(a: _Jobs) -> np.ndarray:
    f = a.timed
    return a.finish[f] - a.arrival[f]


def finish_time_fairness(jobs: Sequence[JobRecord]) -> np.ndarray:
    """Finish-time fairness ``rho_j = JCT_j / (iterations_j / Tfair_j)`` of the finished, uncensored jobs, in order.

    ``iterations_j / Tfair_j`` is the time the job would have taken running at its mean fair throughput
    (``JobRecord.fair_throughput``) all along; ``rho_j <= 1`` means it did at least as well as its fair share.

    Examples
    --------
    >>> from fairshare.sim.records import JobRecord
    >>> j = JobRecord("a", "m", "", 1, 1.0, 0.0, 120.0, 6.0, 6.0, 0.1, 120.0)
    >>> finish_time_fairness([j]).tolist()  # 120 s against 6 / 0.1 = 60 s at the fair share
    [2.0]
    """
    return _rho(_job_arrays(jobs))


def _rho(a: _Jobs) -> np.ndarray:
    f = a.timed
    return (a.finish[f] - a.arrival[f]) * a.fair[f] / a.iterations[f]


def normalized_throughput(jobs: Sequence[JobRecord]) -> np.ndarray:
    """``(done_iterations_j / active_seconds_j) / Tfair_j`` of the jobs with ``active_seconds > 0``.

    The mean throughput a job received while in the system, in units of its fair throughput (1 = exactly its
    fair share), in input order. Left out: jobs with ``active_seconds == 0`` and jobs without a fair
    throughput (``nan`` or 0: the job was never in a planned round, so its fair share is undefined; it also
    made no progress). For a finished job it equals ``1 / rho_j``.

    Examples
    --------
    >>> from fairshare.sim.records import JobRecord
    >>> j = JobRecord("a", "m", "", 1, 1.0, 0.0, float("nan"), 60.0, 3.0, 0.1, 60.0)
    >>> normalized_throughput([j]).tolist()  # 3 iterations in 60 s at a fair 0.1 it/s
    [0.5]
    """
    return _norm_tp(_job_arrays(jobs))


def _norm_tp(a: _Jobs) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        m = (a.active > 0) & (a.fair > 0)
    return a.done[m] / a.active[m] / a.fair[m]


def _stats(x: np.ndarray) -> tuple[float, float, float, float]:
    """Mean, median, p95, p99 (linear interpolation); ``nan`` for an empty array."""
    if x.size == 0:
        return _NAN, _NAN, _NAN, _NAN
    q = np.percentile(x, [50.0, 95.0, 99.0])
    return float(x.mean()), float(q[0]), float(q[1]), float(q[2])


# ----------------------------------------------------------------------------------------------------------
# Run metrics
# ----------------------------------------------------------------------------------------------------------


def _job_fields(a: _Jobs) -> dict[str, Any]:
    jct = _jct(a)
    rho = _rho(a)
    ntp = _norm_tp(a)
    n, nf, nt = len(a.ids), int(a.finished.sum()), jct.size
    mean, median, p95, p99 = _stats(jct)
    makespan = float(a.finish.max() - a.arrival.min()) if n > 0 and nf == n else _NAN
    started = np.isfinite(a.first_start)
    wait_mean, _, _, wait_p99 = _stats(a.first_start[started] - a.arrival[started])
    return {
        "jobs": n,
        "finished": nf,
        "unfinished": n - nf,
        "censored": int(a.censored.sum()),
        "mean_jct": mean,
        "median_jct": median,
        "p95_jct": p95,
        "p99_jct": p99,
        "makespan": makespan,
        "unfair_fraction": float((rho > UNFAIR_RHO).mean()) if nt else _NAN,
        "max_rho": float(rho.max()) if nt else _NAN,
        "jain": jain_index(ntp),
        "min_normalized_throughput": float(ntp.min()) if ntp.size else _NAN,
        "max_normalized_throughput": float(ntp.max()) if ntp.size else _NAN,
        "mean_queue_delay": wait_mean,
        "p99_queue_delay": wait_p99,
    }


def _round_fields(r: _Rounds) -> dict[str, Any]:
    act = r.active_jobs > 0
    na = int(act.sum())
    cap = float(r.capacity[act].sum())
    solver = r.solver[act]
    return {
        "utilization": float(r.utilization[act].mean()) if na else _NAN,
        "gpu_busy_fraction": float(r.busy[act].sum()) / cap if cap > 0 else _NAN,
        "rounds": int(r.index.size),
        "active_rounds": na,
        "mean_solver_seconds": float(solver.mean()) if na else _NAN,
        "p99_solver_seconds": float(np.percentile(solver, 99.0)) if na else _NAN,
        "max_solver_seconds": float(solver.max()) if na else _NAN,
        "optimal_rounds": int((r.optimal & act).sum()),
        "migrations": int(r.migrations.sum()),
        "split_gangs": int(r.split_gangs.sum()),
    }


def compute_metrics(jobs: Sequence[JobRecord], rounds: Sequence[RoundRecord]) -> RunMetrics:
    """Metrics of one run from its job and round records.

    Parameters
    ----------
    jobs : sequence of JobRecord
        Every job of the trace, finished or not (``finish`` is ``nan`` for an unfinished job).
    rounds : sequence of RoundRecord
        Every round of the run.

    Returns
    -------
    RunMetrics
        Job fields over ``jobs`` (JCT and ``rho`` over finished jobs, normalised throughput over jobs with
        ``active_seconds > 0`` and a fair throughput); round fields over the rounds with ``active_jobs > 0``.
        Empty sets give ``nan``.

    Raises
    ------
    InvalidInputError
        On a duplicate job id, a finish before the arrival (negative JCT), non-positive ``iterations``,
        ``done_iterations`` outside ``[0, iterations]``, no positive fair throughput for a job that finished
        or made progress, or an impossible round (busy above capacity, negative times, ...). The message
        names the job id or round index and the field.

    Examples
    --------
    >>> from fairshare.sim.records import JobRecord, RoundRecord
    >>> jobs = [JobRecord("a", "m", "", 1, 1.0, 0.0, 360.0, 36.0, 36.0, 0.1, 360.0),
    ...         JobRecord("b", "m", "", 1, 1.0, 0.0, 720.0, 36.0, 36.0, 0.1, 720.0)]
    >>> rounds = [RoundRecord(0, 0.0, 360.0, 2, 1, 1.0, 360.0, 360.0, 0.01, "optimal"),
    ...           RoundRecord(1, 360.0, 360.0, 1, 1, 1.0, 360.0, 360.0, 0.01, "optimal")]
    >>> m = compute_metrics(jobs, rounds)
    >>> m.mean_jct, m.makespan, m.max_rho, m.unfair_fraction, m.gpu_busy_fraction
    (540.0, 720.0, 2.0, 0.5, 1.0)
    """
    return RunMetrics(**_job_fields(_job_arrays(jobs)), **_round_fields(_round_arrays(rounds)))


def metrics_by_tenant(jobs: Sequence[JobRecord], rounds: Sequence[RoundRecord]) -> dict[str, RunMetrics]:
    """:class:`RunMetrics` of each tenant's jobs, keyed by tenant in order of first appearance.

    Job fields (JCT, makespan, ``rho``, Jain, normalised throughput, job counts) are computed over the
    tenant's jobs only; round fields (utilization, GPU busy fraction, solver times, round counts) are cluster-wide
    and the same for every tenant, since rounds are not split by tenant. Returns ``{}`` when no job has a
    tenant (every ``tenant == ""``); if only some jobs have one, the others form the tenant ``""``.

    Examples
    --------
    >>> from fairshare.sim.records import JobRecord
    >>> jobs = [JobRecord("a", "m", "t1", 1, 1.0, 0.0, 360.0, 36.0, 36.0, 0.1, 360.0),
    ...         JobRecord("b", "m", "t2", 1, 1.0, 0.0, 720.0, 36.0, 36.0, 0.1, 720.0)]
    >>> {t: m.mean_jct for t, m in metrics_by_tenant(jobs, []).items()}
    {'t1': 360.0, 't2': 720.0}
    """
    a = _job_arrays(jobs)
    rf = _round_fields(_round_arrays(rounds))
    tenants = np.array(a.tenants, dtype=object)
    names = list(dict.fromkeys(a.tenants))
    if names in ([], [""]):
        return {}
    return {t: RunMetrics(**_job_fields(a.subset(tenants == t)), **rf) for t in names}


DURATION_CLASSES = ("under one round", "one round to 1 h", "over 1 h")
"""The duration classes of :func:`metrics_by_duration_class`, in order."""


def metrics_by_duration_class(jobs: Sequence[JobRecord], rounds: Sequence[RoundRecord],
                              round_length: float) -> dict[str, RunMetrics]:
    """:class:`RunMetrics` of the jobs of each duration class (spec: so a round length cannot hide).

    A job's duration is ``JobRecord.ideal_seconds``, the time its work takes alone on its fastest GPU type
    of the cluster: a property of the job, the same under every policy. Classes (:data:`DURATION_CLASSES`):
    ``ideal < round_length``, ``round_length <= ideal <= 3600 s``, ``ideal > 3600 s`` (the middle class is
    empty when rounds are an hour or longer). Round fields are cluster-wide, as in
    :func:`metrics_by_tenant`. Empty classes and jobs without ``ideal_seconds`` (records written before 0.2)
    are left out; with none left the result is ``{}``.

    Examples
    --------
    >>> from fairshare.sim.records import JobRecord
    >>> jobs = [JobRecord("a", "m", "", 1, 1.0, 0.0, 360.0, 6.0, 6.0, 0.1, 360.0, ideal_seconds=60.0),
    ...         JobRecord("b", "m", "", 1, 1.0, 0.0, 9000.0, 600.0, 600.0, 0.1, 9000.0, ideal_seconds=6000.0)]
    >>> {c: m.mean_jct for c, m in metrics_by_duration_class(jobs, [], 360.0).items()}
    {'under one round': 360.0, 'over 1 h': 9000.0}
    """
    if not (isinstance(round_length, (int, float)) and math.isfinite(round_length) and round_length > 0):
        raise InvalidInputError("round_length", round_length, "must be a positive number of seconds")
    a = _job_arrays(jobs)
    rf = _round_fields(_round_arrays(rounds))
    with np.errstate(invalid="ignore"):
        masks = (a.ideal < round_length, (a.ideal >= round_length) & (a.ideal <= _H), a.ideal > _H)
    return {name: RunMetrics(**_job_fields(a.subset(m)), **rf) for name, m in zip(DURATION_CLASSES, masks, strict=True)
            if m.any()}


# ----------------------------------------------------------------------------------------------------------
# Results table
# ----------------------------------------------------------------------------------------------------------

_H = 3600.0


@dataclass(frozen=True, slots=True)
class MetricColumn:
    """One column of a results table: a value of :class:`RunMetrics` in the column's unit.

    Attributes
    ----------
    name : str
        CSV header, snake_case with the unit as a suffix (``mean_jct_h``).
    header : str
        Markdown header (``mean JCT (h)``).
    value : callable
        ``RunMetrics -> float`` (or ``int``), in the column's unit.
    spec : str
        Format spec of a Markdown cell (``".2f"``; ``"d"`` for counts, which CSV also writes as integers).

    Examples
    --------
    >>> col = MetricColumn("mean_jct_h", "mean JCT (h)", lambda m: m.mean_jct / 3600, ".2f")
    >>> print(results_table({"fifo": compute_metrics([], [])}, columns=[col]), end="")
    | policy | mean JCT (h) |
    |:---|---:|
    | fifo | nan |
    """

    name: str
    header: str
    value: Callable[[RunMetrics], float]
    spec: str


METRIC_COLUMNS: tuple[MetricColumn, ...] = (
    MetricColumn("mean_jct_h", "mean JCT (h)", lambda m: m.mean_jct / _H, ".2f"),
    MetricColumn("median_jct_h", "median JCT (h)", lambda m: m.median_jct / _H, ".2f"),
    MetricColumn("p95_jct_h", "p95 JCT (h)", lambda m: m.p95_jct / _H, ".2f"),
    MetricColumn("p99_jct_h", "p99 JCT (h)", lambda m: m.p99_jct / _H, ".2f"),
    MetricColumn("mean_queue_h", "mean queue (h)", lambda m: m.mean_queue_delay / _H, ".2f"),
    MetricColumn("p99_queue_h", "p99 queue (h)", lambda m: m.p99_queue_delay / _H, ".2f"),
    MetricColumn("makespan_h", "makespan (h)", lambda m: m.makespan / _H, ".2f"),
    MetricColumn("unfair_fraction", "unfair (rho>1.05)", lambda m: m.unfair_fraction, ".3f"),
    MetricColumn("max_rho", "max rho", lambda m: m.max_rho, ".2f"),
    MetricColumn("jain", "Jain", lambda m: m.jain, ".3f"),
    MetricColumn("utilization", "E/C", lambda m: m.utilization, ".3f"),
    MetricColumn("gpu_busy_fraction", "GPU busy", lambda m: m.gpu_busy_fraction, ".3f"),
    MetricColumn("mean_solver_ms", "mean solver (ms)", lambda m: m.mean_solver_seconds * 1e3, ".2f"),
    MetricColumn("p99_solver_ms", "p99 solver (ms)", lambda m: m.p99_solver_seconds * 1e3, ".2f"),
    MetricColumn("optimal_rounds", "optimal rounds", lambda m: m.optimal_rounds, "d"),
)
"""The columns of :func:`results_table`, in order (``docs/metrics.md`` lists them with their values)."""

COUNT_COLUMNS: tuple[MetricColumn, ...] = (
    MetricColumn("jobs", "jobs", lambda m: m.jobs, "d"),
    MetricColumn("unfinished", "unfinished", lambda m: m.unfinished, "d"),
    MetricColumn("censored", "censored", lambda m: m.censored, "d"),
)
"""Job counts: all jobs, those not finished when the run stopped, those the trace marked censored. The CLI
adds them to its tables, since JCT is computed over the others."""


def _md_cell(v: float, spec: str) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return format(v, spec)


def _csv_cell(v: float, spec: str) -> str:
    return str(v) if spec == "d" else repr(float(v))


def results_table(metrics: Mapping[str, RunMetrics], fmt: Literal["markdown", "csv"] = "markdown", *,
                  columns: Sequence[MetricColumn] = METRIC_COLUMNS, label: str = "policy") -> str:
    """One row per policy: JCT (h), makespan (h), unfairness, Jain, E/C, GPU busy fraction, solver time (ms).

    Parameters
    ----------
    metrics : mapping of str to RunMetrics
        Policy name -> metrics of its run, in row order.
    fmt : {"markdown", "csv"}
        Markdown: human headers, rounded numbers. CSV: snake_case headers (``policy, mean_jct_h, median_jct_h,
        p95_jct_h, p99_jct_h, makespan_h, unfair_fraction, max_rho, jain, utilization, gpu_busy_fraction,
        mean_solver_ms, p99_solver_ms, optimal_rounds``), full precision. ``nan`` is written as ``nan``.
    columns : sequence of MetricColumn
        The columns after ``policy`` (default :data:`METRIC_COLUMNS`).
    label : str
        Header of the first column (the mapping's keys).

    Examples
    --------
    >>> print(results_table({"fifo": compute_metrics([], [])}, fmt="csv").splitlines()[1])
    fifo,nan,nan,nan,nan,nan,nan,nan,nan,nan,nan,nan,nan,nan,nan,0
    """
    cols = tuple(columns)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([label, *(c.name for c in cols)])
        for name, m in metrics.items():
            w.writerow([name, *(_csv_cell(c.value(m), c.spec) for c in cols)])
        return buf.getvalue()
    if fmt == "markdown":
        head = [label, *(c.header for c in cols)]
        lines = ["| " + " | ".join(head) + " |",
                 "|" + "|".join([":---"] + ["---:"] * len(cols)) + "|"]
        for name, m in metrics.items():
            cells = [name.replace("|", "\\|"), *(_md_cell(c.value(m), c.spec) for c in cols)]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"
    raise InvalidInputError("fmt", fmt, "must be 'markdown' or 'csv'")
