"""HiGHS backend: pass a :class:`~fairshare.formulation.LinearProgram` whole to highspy, solve, report.

This is the only module that imports ``highspy``. Models arrive as sparse CSC matrices and are passed in
one call (``Highs.passModel``); nothing here loops over variables in Python.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairshare.errors import SolverError
from fairshare.formulation import LinearProgram

__all__ = ["HighsOutcome", "solve_highs"]

try:  # pragma: no cover - import guard
    import highspy

    _MS = highspy.HighsModelStatus
except ImportError as exc:  # pragma: no cover
    raise ImportError("fairshare needs highspy: pip install highspy") from exc


def _silence_banner() -> None:
    """HiGHS prints a copyright banner on stdout when the first solver object of a process is made, before
    any option can be set; a library must not print, so that first object is made with stdout redirected."""
    import os
    import sys

    try:
        sys.stdout.flush()
        fd = os.dup(1)
    except (OSError, ValueError):  # pragma: no cover - no real stdout
        highspy.Highs()
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
    finally:
        os.dup2(fd, 1)
        os.close(fd)


_silence_banner()


@dataclass(frozen=True, slots=True)
class HighsOutcome:
    """What one HiGHS run returned.

    Attributes
    ----------
    model_status : str
        HiGHS's model status, as HiGHS spells it (``"Optimal"``, ``"Time limit reached"``, ...).
    optimal : bool
        HiGHS proved optimality (within the MIP gap tolerance for a MILP).
    has_solution : bool
        A primal feasible point is available in ``x``.
    x : array or None
        Column values.
    objective : float
        Objective of ``x`` (nan without a solution).
    bound : float
        Dual bound (the LP optimum for an LP; ``mip_dual_bound`` for a MILP).
    mip_gap : float
        HiGHS's relative gap (0 for an LP solved to optimality; inf when there is no incumbent).
    col_dual, row_dual : array or None
        Reduced costs and row duals (LP only).
    seconds : float
        Wall time of ``run()``.
    message : str
        Native status text, kept for the user.
    """

    model_status: str
    optimal: bool
    has_solution: bool
    x: np.ndarray | None
    objective: float
    bound: float
    mip_gap: float
    col_dual: np.ndarray | None
    row_dual: np.ndarray | None
    seconds: float
    message: str


_SCHEDULER: dict[str, int | None] = {"threads": None}
_LP_ALGORITHMS = {"dual": "simplex", "primal": "simplex", "ipm": "ipm", "choose": "choose", "pdlp": "pdlp"}


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
) -> HighsOutcome:
    """Solve ``lp`` (maximisation) with HiGHS, as an LP or, with ``integer=True``, a MILP over all of its columns
    that have upper bound 1 (the placement columns).

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
        LP method (for an LP, or the root of a MILP it is HiGHS's choice).
    col_lower, col_upper : array, optional
        Bounds that replace the model's (used to fix columns).
    verbose : bool
        Let HiGHS print its log.
    allow_infeasible : bool
        Report infeasibility as an outcome (``model_status == "Infeasible"``) instead of raising; used when
        columns were fixed and an empty restricted problem is a valid answer.
    extra_options : dict, optional
        Further HiGHS options by their HiGHS names (e.g. ``{"run_crossover": "off"}``).

    Raises
    ------
    SolverError
        If HiGHS fails (model error, solve error, infeasible or unbounded, which a valid round cannot be).
    """
    h = highspy.Highs()
    h.setOptionValue("output_flag", bool(verbose))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    h.setOptionValue("random_seed", int(seed))
    if threads is not None and threads != _SCHEDULER["threads"]:
        # HiGHS sizes one global thread pool at first use; a different count needs a reset first.
        h.resetGlobalScheduler(True)
        _SCHEDULER["threads"] = int(threads)
    if _SCHEDULER["threads"] is not None:
        h.setOptionValue("threads", _SCHEDULER["threads"])
    for key, value in (extra_options or {}).items():
        h.setOptionValue(key, value)
    if lp_algorithm not in _LP_ALGORITHMS:
        raise ValueError(f"`lp_algorithm` = {lp_algorithm!r}: expected one of {sorted(_LP_ALGORITHMS)}")
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
    args: list[Any] = [
        m, a.shape[0], a.nnz, 1, -1, 0.0,  # colwise, maximise, offset
        np.ascontiguousarray(lp.cost, np.float64),
        np.ascontiguousarray(np.where(np.isinf(lo), -inf, lo), np.float64),
        np.ascontiguousarray(np.where(np.isinf(hi), inf, hi), np.float64),
        np.ascontiguousarray(np.where(np.isinf(lp.row_lower), -inf, lp.row_lower), np.float64),
        np.ascontiguousarray(np.where(np.isinf(lp.row_upper), inf, lp.row_upper), np.float64),
        np.ascontiguousarray(a.indptr, np.int32), np.ascontiguousarray(a.indices, np.int32),
        np.ascontiguousarray(a.data, np.float64),
    ]
    args.append(integrality)
    status = h.passModel(*args)
    if status == highspy.HighsStatus.kError:
        raise SolverError("HiGHS rejected the model (passModel returned kError); please report this round")
    # No setSolution: HiGHS 1.16 returned a start given that way as "optimal" with a wrong objective
    # (tests/test_allocate.py::test_exact_regression_start_solution).
    t0 = time.perf_counter()
    run_status = h.run()
    seconds = time.perf_counter() - t0
    if run_status == highspy.HighsStatus.kError:
        raise SolverError(f"HiGHS failed to run (model status {h.modelStatusToString(h.getModelStatus())!r}); "
                          "check the options (for example `threads`) or report the round")
    ms = h.getModelStatus()
    text = h.modelStatusToString(ms)
    info = h.getInfo()
    if allow_infeasible and ms == _MS.kInfeasible:
        return HighsOutcome(text, False, False, None, float("nan"), -float("inf"), float("inf"), None, None,
                            seconds, text)
    if ms in (_MS.kInfeasible, _MS.kUnbounded, _MS.kUnboundedOrInfeasible, _MS.kModelError, _MS.kSolveError,
              _MS.kLoadError, _MS.kPresolveError, _MS.kPostsolveError, _MS.kMemoryLimit):
        raise SolverError(f"HiGHS stopped with status {text!r}; a valid round is always feasible and bounded. "
                          "Try another lp_algorithm, or report the round (RoundProblem.to_json()).")
    has_solution = info.primal_solution_status == 2 or ms == _MS.kOptimal or ms == _MS.kModelEmpty
    sol = h.getSolution()
    x = np.asarray(sol.col_value, dtype=np.float64) if has_solution else None
    optimal = ms in (_MS.kOptimal, _MS.kModelEmpty)
    if integer:
        objective = float(info.objective_function_value) if has_solution else float("nan")
        bound = float(info.mip_dual_bound)
        gap = float(info.mip_gap) if has_solution else float("inf")
        col_dual = row_dual = None
    else:
        objective = float(info.objective_function_value) if has_solution else float("nan")
        bound = objective if optimal else float("nan")
        gap = 0.0 if optimal else float("inf")
        col_dual = np.asarray(sol.col_dual) if sol.dual_valid else None
        row_dual = np.asarray(sol.row_dual) if sol.dual_valid else None
    if ms == _MS.kModelEmpty:
        objective = bound = 0.0
        gap = 0.0
        x = np.zeros(m)
    return HighsOutcome(text, optimal, has_solution, x, objective, bound, gap, col_dual, row_dual, seconds, text)
