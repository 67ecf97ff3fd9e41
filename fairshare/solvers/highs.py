"""HiGHS backend: pass a :class:`~fairshare.formulation.LinearProgram` whole to highspy, solve, report.

:class:`IncrementalLP` keeps one LP in a HiGHS object so that columns can be added and the LP solved again
from its basis (the priced LP of :mod:`fairshare.methods.warm`), optionally starting from a given basis.

This is the only module that imports ``highspy``. Models arrive as sparse CSC matrices and are passed in
one call (``Highs.passModel``); nothing here loops over variables in Python. HiGHS's model status is mapped
to a :class:`~fairshare.solvers.Termination` by one table, :data:`STATUS`, and its text is kept.

Two things HiGHS leaves to its caller are handled here:

* **Deadlines.** HiGHS's ``time_limit`` starts at ``run`` and is checked between steps only; passing the
  model comes before it. :func:`solve_highs` takes an absolute ``deadline`` (``time.perf_counter()`` seconds)
  and gives HiGHS what is left of it just before ``run``; a deadline already past returns ``TIME_LIMIT``
  without running.
* **The thread pool.** HiGHS keeps one global thread pool per process, sized at first use; a solve that asks
  for another ``threads`` count must reset it, which breaks solves running in other Python threads.
  :func:`scheduler` lets solves that agree on the count run together and makes a solve that needs another
  count wait until the running ones have ended (tests/sim/test_reliability.py runs three threads with
  alternating counts).
* **Forked processes.** HiGHS's pool threads do not survive ``fork``: a child that inherits a pool the parent
  had started (a ``ProcessPoolExecutor`` under Linux's default ``fork`` start method, after the parent solved
  anything) waits forever on threads that do not exist, spinning at 100 % CPU. A hook registered with
  :func:`os.register_at_fork` marks the child's pool as stale (and renews this module's locks, which a
  thread of the parent may have held at the fork); the child's first solve resets the pool before it runs.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from fairshare.errors import InvalidInputError, SolverError
from fairshare.formulation import LinearProgram
from fairshare.solvers.base import BASIS_BASIC, BASIS_LOWER, BASIS_UPPER, SolverOutcome, Termination

__all__ = ["BASIS_BASIC", "BASIS_LOWER", "BASIS_UPPER", "STATUS", "IncrementalLP", "scheduler", "solve_highs"]

try:  # pragma: no cover - import guard
    import highspy
except ImportError as exc:  # pragma: no cover
    raise ImportError("fairshare needs highspy: pip install highspy") from exc

_MS = highspy.HighsModelStatus

STATUS: dict[Any, Termination] = {
    _MS.kOptimal: Termination.OPTIMAL,
    _MS.kModelEmpty: Termination.OPTIMAL,
    _MS.kTimeLimit: Termination.TIME_LIMIT,
    _MS.kIterationLimit: Termination.LIMIT,
    _MS.kSolutionLimit: Termination.LIMIT,
    _MS.kObjectiveBound: Termination.LIMIT,
    _MS.kObjectiveTarget: Termination.LIMIT,
    _MS.kInterrupt: Termination.INTERRUPTED,
    _MS.kInfeasible: Termination.INFEASIBLE,
    _MS.kUnbounded: Termination.UNBOUNDED,
    _MS.kUnboundedOrInfeasible: Termination.UNBOUNDED,
}
"""HiGHS model status -> :class:`~fairshare.solvers.Termination`; any other status is ``ERROR``."""

_LP_ALGORITHMS = {"dual": "simplex", "primal": "simplex", "ipm": "ipm", "choose": "choose", "pdlp": "pdlp"}
_BANNER = {"silenced": False}


class _Scheduler:
    """The thread count of HiGHS's global pool, how many solves use it now, and how often it was reset."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.threads: int | None = None
        self.running = 0
        self.generation = 0
        self.forked = False


_SCHEDULER = _Scheduler()
_THREAD = threading.local()  # per OS thread: the generation of the pool its HiGHS state refers to
_BANNER_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """In a forked child: new locks, no running solves, and HiGHS's inherited pool to be reset before use."""
    global _SCHEDULER, _THREAD, _BANNER_LOCK
    threads = _SCHEDULER.threads
    _SCHEDULER = _Scheduler()
    _SCHEDULER.threads = threads
    _SCHEDULER.forked = True
    _THREAD = threading.local()
    _BANNER_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def scheduler(threads: int | None) -> Iterator[int | None]:
    """Hold HiGHS's global thread pool at ``threads`` for one solve; yields the count to set as ``threads``.

    ``None`` takes the pool as it is (the count yielded is ``None`` until some solve has set one). A count
    other than the pool's waits until no solve is running, then resets the pool: solves in other Python
    threads never see the pool change under them. HiGHS also keeps per-thread state that refers to the pool;
    a thread whose state predates the last reset has it reset before its solve (without that, its solve
    fails with model status "Not Set", even when no other solve is running).
    """
    s = _SCHEDULER
    with s.changed:
        if s.forked:  # the pool's threads stayed in the parent: start a new pool before any solve uses it
            highspy.Highs.resetGlobalScheduler(True)
            s.forked = False
            s.generation += 1
        if threads is not None:
            while threads != s.threads and s.running:
                s.changed.wait()
            if threads != s.threads:
                highspy.Highs.resetGlobalScheduler(True)
                s.threads = int(threads)
                s.generation += 1
                _THREAD.generation = s.generation
        if getattr(_THREAD, "generation", s.generation) != s.generation:
            highspy.Highs.resetThreadScheduler(True)
        _THREAD.generation = s.generation
        s.running += 1
        current = s.threads
    try:
        yield current
    finally:
        with s.changed:
            s.running -= 1
            s.changed.notify_all()


def _new_highs() -> highspy.Highs:
    """A new HiGHS solver object, made silently.

    HiGHS prints a copyright banner on stdout when the first one of a process is made, before any option can
    be set; a library must not print, so that first one is made with stdout redirected to the null device.
    """
    if _BANNER["silenced"]:
        return highspy.Highs()
    with _BANNER_LOCK:  # solves started together in several threads: one makes the first, the others wait
        if _BANNER["silenced"]:
            return highspy.Highs()
        try:
            sys.stdout.flush()
            fd = os.dup(1)
        except (OSError, ValueError):  # pragma: no cover - no real stdout
            _BANNER["silenced"] = True
            return highspy.Highs()
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(fd, 1)
            os.close(fd)
        _BANNER["silenced"] = True
    return h


def solve_highs(
    lp: LinearProgram,
    *,
    integer: bool = False,
    time_limit: float | None = None,
    mip_rel_gap: float = 1e-6,
    threads: int | None = None,
    seed: int = 0,
    lp_algorithm: str = "dual",
    col_lower: np.ndarray | None = None,
    col_upper: np.ndarray | None = None,
    verbose: bool = False,
    allow_infeasible: bool = False,
    extra_options: dict[str, Any] | None = None,
    deadline: float | None = None,
) -> SolverOutcome:
    """Solve ``lp`` (maximisation) with HiGHS, as an LP or as a MILP.

    With ``integer=True`` the placement columns (the first ``lp.num_placement_cols``) are integer.

    Parameters
    ----------
    lp : LinearProgram
    integer : bool
        Make the placement columns integer.
    time_limit : float, optional
        Seconds; ``None`` = no limit.
    mip_rel_gap : float
        HiGHS ``mip_rel_gap``.
    threads : int, optional
        HiGHS ``threads`` (HiGHS fixes its thread pool at first use in a process).
    seed : int
        HiGHS ``random_seed``.
    lp_algorithm : {"dual", "primal", "ipm", "choose", "pdlp"}
        LP method (for an LP; for a MILP's root, HiGHS chooses).
    col_lower, col_upper : array, optional
        Bounds that replace the model's (used to fix columns).
    verbose : bool
        Let HiGHS print its log.
    allow_infeasible : bool
        Report infeasibility as an outcome (``Termination.INFEASIBLE``) instead of raising; used when columns
        were fixed and an empty restricted problem is a valid answer.
    extra_options : dict, optional
        Further HiGHS options by their HiGHS names (e.g. ``{"run_crossover": "off"}``).
    deadline : float, optional
        Absolute ``time.perf_counter()`` time by which HiGHS must stop (with ``time_limit``, the earlier of the
        two counts). Checked after the model is passed; if it has already passed, HiGHS does not run and the
        outcome is ``TIME_LIMIT`` without a point.

    Raises
    ------
    SolverError
        If HiGHS fails (model error, solve error, infeasible or unbounded, which a valid round cannot be).
    """
    if lp_algorithm not in _LP_ALGORITHMS:
        raise InvalidInputError("lp_algorithm", lp_algorithm, f"must be one of {', '.join(_LP_ALGORITHMS)}")
    start = time.perf_counter()
    if time_limit is not None:
        deadline = start + float(time_limit) if deadline is None else min(deadline, start + float(time_limit))
    h = _new_highs()
    h.setOptionValue("output_flag", bool(verbose))
    h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    h.setOptionValue("random_seed", int(seed))
    for key, value in (extra_options or {}).items():
        h.setOptionValue(key, value)
    h.setOptionValue("solver", _LP_ALGORITHMS[lp_algorithm])
    if lp_algorithm == "primal":
        h.setOptionValue("simplex_strategy", 4)
    elif lp_algorithm == "dual":
        h.setOptionValue("simplex_strategy", 1)

    a = lp.matrix
    m = a.shape[1]
    lo = lp.col_lower if col_lower is None else col_lower
    hi = lp.col_upper if col_upper is None else col_upper
    inf = highspy.kHighsInf
    integrality = np.zeros(m, np.int32)
    if integer:
        integrality[: lp.num_placement_cols] = 1
    status = h.passModel(
        m, a.shape[0], a.nnz, 1, -1, 0.0,  # colwise, maximise, offset
        np.ascontiguousarray(lp.cost, np.float64),
        np.ascontiguousarray(np.where(np.isinf(lo), -inf, lo), np.float64),
        np.ascontiguousarray(np.where(np.isinf(hi), inf, hi), np.float64),
        np.ascontiguousarray(np.where(np.isinf(lp.row_lower), -inf, lp.row_lower), np.float64),
        np.ascontiguousarray(np.where(np.isinf(lp.row_upper), inf, lp.row_upper), np.float64),
        np.ascontiguousarray(a.indptr, np.int32), np.ascontiguousarray(a.indices, np.int32),
        np.ascontiguousarray(a.data, np.float64), integrality)
    if status == highspy.HighsStatus.kError:
        raise SolverError("HiGHS rejected the model (passModel returned kError); please report this round")
    # No setSolution: HiGHS 1.16 returned a start given that way as "optimal" with a wrong objective.
    ran = _run_by(h, threads, deadline)
    if ran is None:
        return _too_late()
    run_status, seconds = ran
    if run_status == highspy.HighsStatus.kError:
        raise SolverError(f"HiGHS failed to run (model status {h.modelStatusToString(h.getModelStatus())!r}); "
                          "check the options (for example `threads`) or report the round")
    ms = h.getModelStatus()
    text = h.modelStatusToString(ms)
    termination = STATUS.get(ms, Termination.ERROR)
    if termination is Termination.INFEASIBLE and allow_infeasible:
        return SolverOutcome(None, float("nan"), -float("inf"), termination, text, seconds)
    if termination in (Termination.INFEASIBLE, Termination.UNBOUNDED, Termination.ERROR):
        raise SolverError(f"HiGHS stopped with status {text!r}; a valid round is always feasible and bounded. "
                          "Try another lp_algorithm, or report the round (RoundProblem.to_json()).")
    if ms == _MS.kModelEmpty:
        return SolverOutcome(np.zeros(m), 0.0, 0.0, termination, text, seconds, mip_gap=0.0)
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2 or termination is Termination.OPTIMAL
    sol = h.getSolution()
    x = np.asarray(sol.col_value, dtype=np.float64) if has_solution else None
    objective = float(info.objective_function_value) if has_solution else float("nan")
    if integer:
        return SolverOutcome(x, objective, float(info.mip_dual_bound), termination, text, seconds,
                             mip_gap=float(info.mip_gap) if has_solution else float("inf"))
    optimal = termination is Termination.OPTIMAL
    return SolverOutcome(
        x, objective, objective if optimal else float("nan"), termination, text, seconds,
        mip_gap=0.0 if optimal else float("inf"),
        col_dual=np.asarray(sol.col_dual) if sol.dual_valid else None,
        row_dual=np.asarray(sol.row_dual) if sol.dual_valid else None)


# fairshare's basis codes (solvers.base) index this tuple; HiGHS's kZero is 3 and kNonbasic 4
_BASIS_STATUS = (highspy.HighsBasisStatus.kLower, highspy.HighsBasisStatus.kBasic, highspy.HighsBasisStatus.kUpper,
                 highspy.HighsBasisStatus.kZero, highspy.HighsBasisStatus.kNonbasic)


class IncrementalLP:
    """An LP kept in one HiGHS object: solved, given more columns, solved again from where it stopped.

    Used by the priced solve of the tightened LP (:mod:`fairshare.methods.warm`): the restricted LP is solved
    by dual simplex, columns that price out are added with :meth:`add_columns`, and :meth:`run` goes on from
    the basis HiGHS holds (the new columns enter nonbasic at 0, so the basis stays primal feasible).

    Parameters
    ----------
    lp : LinearProgram
        The (restricted) LP, a maximisation; its columns are continuous.
    threads, seed, verbose
        As for :func:`solve_highs`.
    col_status, row_status : int8 arrays, optional
        A starting basis (:data:`BASIS_LOWER`, :data:`BASIS_BASIC`, :data:`BASIS_UPPER` per column and row),
        given to HiGHS as an *alien* basis: HiGHS repairs it (a wrong count of basic variables, a singular
        basis matrix) before its first iteration. Ignored if HiGHS refuses it.
    reuse : highspy.Highs, optional
        The ``highs`` of an earlier ``IncrementalLP`` that is no longer used: cleared and given back its default
        options, then used for this LP (the same runs as a new object, without making one; only HiGHS's run
        clock goes on, which :meth:`run` allows for when it sets a deadline's time limit).
    """

    def __init__(self, lp: LinearProgram, *, threads: int | None = None, seed: int = 0, verbose: bool = False,
                 col_status: np.ndarray | None = None, row_status: np.ndarray | None = None,
                 reuse: highspy.Highs | None = None) -> None:
        self.threads = threads
        if reuse is None:
            h = _new_highs()
        else:  # made and destroyed every round, an object cost a sixth of HiGHS's own run on a long queue
            h = reuse
            h.clearModel()  # model, solution, basis and solver state
            h.resetOptions()  # every option at its default, as in a new object
        h.setOptionValue("output_flag", bool(verbose))
        h.setOptionValue("random_seed", int(seed))
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 1)
        h.setOptionValue("presolve", "off")  # it removed nothing from the restricted LPs measured, and cost 10 %
        a = lp.matrix
        m = a.shape[1]
        inf = highspy.kHighsInf
        status = h.passModel(
            m, a.shape[0], a.nnz, 1, -1, 0.0,
            np.ascontiguousarray(lp.cost, np.float64),
            np.ascontiguousarray(np.where(np.isinf(lp.col_lower), -inf, lp.col_lower), np.float64),
            np.ascontiguousarray(np.where(np.isinf(lp.col_upper), inf, lp.col_upper), np.float64),
            np.ascontiguousarray(np.where(np.isinf(lp.row_lower), -inf, lp.row_lower), np.float64),
            np.ascontiguousarray(np.where(np.isinf(lp.row_upper), inf, lp.row_upper), np.float64),
            np.ascontiguousarray(a.indptr, np.int32), np.ascontiguousarray(a.indices, np.int32),
            np.ascontiguousarray(a.data, np.float64), np.zeros(m, np.int32))
        if status == highspy.HighsStatus.kError:
            raise SolverError("HiGHS rejected the model (passModel returned kError); please report this round")
        self.started_from_basis = False
        if col_status is not None and row_status is not None:
            basis = highspy.HighsBasis()
            basis.col_status = [_BASIS_STATUS[s] for s in np.asarray(col_status).tolist()]
            basis.row_status = [_BASIS_STATUS[s] for s in np.asarray(row_status).tolist()]
            basis.alien = True
            basis.valid = True
            self.started_from_basis = h.setBasis(basis) != highspy.HighsStatus.kError
        self.highs = h
        self.num_cols = m
        self.iterations = 0
        self.passes = 0

    def add_columns(self, cost: np.ndarray, matrix: Any) -> None:
        """Append columns (bounds [0, 1]) with objective ``cost`` and CSC coefficients ``matrix`` (rows x k)."""
        k = matrix.shape[1]
        status = self.highs.addCols(k, np.ascontiguousarray(cost, np.float64), np.zeros(k), np.ones(k), matrix.nnz,
                                    np.ascontiguousarray(matrix.indptr[:-1], np.int32),
                                    np.ascontiguousarray(matrix.indices, np.int32),
                                    np.ascontiguousarray(matrix.data, np.float64))
        if status == highspy.HighsStatus.kError:  # pragma: no cover - the columns come from a valid model
            raise SolverError("HiGHS refused the priced columns (addCols returned kError)")
        self.num_cols += k

    def add_rows(self, upper: np.ndarray) -> None:
        """Append empty rows ``-inf <= . <= upper`` (the columns added later fill them)."""
        k = len(upper)
        status = self.highs.addRows(k, np.full(k, -highspy.kHighsInf), np.ascontiguousarray(upper, np.float64), 0,
                                    np.zeros(k, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float64))
        if status == highspy.HighsStatus.kError:  # pragma: no cover - empty rows with finite bounds
            raise SolverError("HiGHS refused the priced rows (addRows returned kError)")

    def delete_columns(self, index: np.ndarray) -> None:
        """Remove the columns at positions ``index`` (ascending); the others keep their order and basis status."""
        if len(index):
            self._check(self.highs.deleteCols(len(index), np.ascontiguousarray(index, np.int32)), "deleteCols")
            self.num_cols -= len(index)

    def delete_rows(self, index: np.ndarray) -> None:
        """Remove the rows at positions ``index`` (ascending); the others keep their order."""
        if len(index):
            self._check(self.highs.deleteRows(len(index), np.ascontiguousarray(index, np.int32)), "deleteRows")

    def change_costs(self, index: np.ndarray, cost: np.ndarray) -> None:
        """Set the objective coefficients of the columns at positions ``index``."""
        if len(index):
            self._check(self.highs.changeColsCost(len(index), np.ascontiguousarray(index, np.int32),
                                                  np.ascontiguousarray(cost, np.float64)), "changeColsCost")

    def change_row_upper(self, index: np.ndarray, upper: np.ndarray) -> None:
        """Set the upper bounds of the rows at positions ``index`` (their lower bounds stay ``-inf``)."""
        if len(index):
            change = getattr(self.highs, "changeRowsBounds")  # noqa: B009 - missing from highspy's type stubs
            self._check(change(len(index), np.ascontiguousarray(index, np.int32),
                               np.full(len(index), -highspy.kHighsInf), np.ascontiguousarray(upper, np.float64)),
                        "changeRowsBounds")

    @staticmethod
    def _check(status: Any, what: str) -> None:
        if status == highspy.HighsStatus.kError:  # pragma: no cover - the changes come from a valid model
            raise SolverError(f"HiGHS refused a change of the kept LP ({what} returned kError)")

    def run(self, deadline: float | None = None) -> SolverOutcome:
        """Solve from the current basis; the outcome carries the column and row duals (LP)."""
        h = self.highs
        ran = _run_by(h, self.threads, deadline)
        if ran is None:
            return _too_late()
        run_status, seconds = ran
        self.passes += 1
        if run_status == highspy.HighsStatus.kError:
            raise SolverError(f"HiGHS failed to run (model status {h.modelStatusToString(h.getModelStatus())!r})")
        ms = h.getModelStatus()
        text = h.modelStatusToString(ms)
        termination = STATUS.get(ms, Termination.ERROR)
        info = h.getInfo()
        self.iterations += max(0, int(info.simplex_iteration_count))
        if ms == _MS.kModelEmpty:
            return SolverOutcome(np.zeros(self.num_cols), 0.0, 0.0, termination, text, seconds, mip_gap=0.0,
                                 col_dual=np.zeros(self.num_cols), row_dual=np.zeros(h.getNumRow()))
        if termination is not Termination.OPTIMAL:
            return SolverOutcome(None, float("nan"), float("nan"), termination, text, seconds)
        sol = h.getSolution()
        objective = float(info.objective_function_value)
        return SolverOutcome(np.asarray(sol.col_value, dtype=np.float64), objective, objective, termination, text,
                             seconds, mip_gap=0.0,
                             col_dual=np.asarray(sol.col_dual) if sol.dual_valid else None,
                             row_dual=np.asarray(sol.row_dual) if sol.dual_valid else None)

    def basis(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The current basis as int8 arrays (columns, rows), or ``None`` if HiGHS has no valid one."""
        b = self.highs.getBasis()
        if not b.valid:
            return None
        return (np.fromiter((int(s) for s in b.col_status), np.int8, self.num_cols),
                np.fromiter((int(s) for s in b.row_status), np.int8, len(b.row_status)))


def _run_by(h: Any, threads: int | None, deadline: float | None) -> tuple[Any, float] | None:
    """``h.run()`` by ``deadline``: ``(run status, seconds)``, or None if the deadline passed before the run.

    The run uses the thread budget of :func:`scheduler`; HiGHS's time limit is what is left. HiGHS's clock
    runs only inside its runs (and adds up over the runs of one object), so time spent outside them (passing
    the model, pricing) is taken off here, and the limit is set from the clock's current reading.
    """
    with scheduler(threads) as pool_threads:
        if pool_threads is not None:
            h.setOptionValue("threads", pool_threads)
        t0 = time.perf_counter()
        if deadline is not None:
            left = deadline - t0
            if left <= 0:
                return None
            # HiGHS compares its limit with its own clock, which runs on over every run of an object (pricing
            # passes, a reused object): the limit is that clock now plus the time left.
            h.setOptionValue("time_limit", _run_time(h) + left)
        run_status = h.run()
        return run_status, time.perf_counter() - t0


def _run_time(h: Any) -> float:
    """Seconds on ``h``'s run clock (0 for a highspy without ``getRunTime``)."""
    get = getattr(h, "getRunTime", None)
    return float(get()) if get is not None else 0.0


def _too_late() -> SolverOutcome:
    """The outcome of a solve whose deadline passed before HiGHS started."""
    return SolverOutcome(None, float("nan"), float("inf"), Termination.TIME_LIMIT,
                         "Time limit reached before the solve started", 0.0)
