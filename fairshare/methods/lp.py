"""``lp``: the LP relaxation of the round; shares are time fractions of the round.

``relaxation="section3"`` (default) solves section 3's relaxation, ``"tightened"`` the column one of
section 5a (whose optimum is offset by ``obj_null``). ``backend="pyomo"`` solves section 3's relaxation in
the Pyomo reference model.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from fairshare.allocation import Status
from fairshare.errors import SolverError
from fairshare.formulation import LinearProgram, RoundModel
from fairshare.methods.options import SolveOptions
from fairshare.methods.solved import Solved
from fairshare.solvers import Feature, SolverOutcome, Termination, backend, solve_lp, solve_reference

if TYPE_CHECKING:  # pragma: no cover
    from fairshare.methods.kept import KeptLP
    from fairshare.methods.warm import WarmStart

__all__ = ["DUAL_SIMPLEX_MAX_COLUMNS", "IPM_WITHOUT_CROSSOVER", "NO_CROSSOVER_MIN_COLUMNS", "lagrangian_bound",
           "lp_algorithm", "solve", "solve_relaxation"]

DUAL_SIMPLEX_MAX_COLUMNS = 20_000
"""``lp_algorithm="auto"`` uses dual simplex up to this many columns of the tightened LP, interior point above
(the faster of the two on each side: docs/performance.md)."""

NO_CROSSOVER_MIN_COLUMNS = 150_000
"""``lp_algorithm="auto"`` solves a tightened LP of at least this many columns (about 26,000 jobs of the
benchmark rounds) by interior point without crossover (:data:`IPM_WITHOUT_CROSSOVER`) and certifies its
bound by :func:`lagrangian_bound` at the interior point's duals."""

IPM_WITHOUT_CROSSOVER = {"run_crossover": "off", "ipm_optimality_tolerance": 1e-5, "presolve": "off"}
"""HiGHS options of the interior point solve without crossover (HiGHS's default tolerance is 1e-8; the
measurements behind them are in docs/results/huge_rounds.md)."""


def lagrangian_bound(model: RoundModel, job_dual: np.ndarray, cap_dual: np.ndarray) -> float:
    """``sum_j u_j + sum_g C_g y_g + sum_c max(0, v_c - u_a(c) - u_b(c) - size_c y_g(c))`` at ``u, y`` clipped at 0.

    A bound on ``model.value @ x`` for every placement ``x`` of the round, whatever the multipliers (one per job
    and one per GPU type): a placement holds each job once and fills each type at most to its capacity. At an
    optimal dual solution of the tightened LP it equals the LP optimum.

    Examples
    --------
    >>> from fairshare.formulation import build_model
    >>> from fairshare.problem import RoundProblem
    >>> m = build_model(RoundProblem(["V100"], [1], ["a", "b"], [1, 1], [[2.0], [1.0]]))
    >>> lagrangian_bound(m, np.zeros(2), np.zeros(1)) == float(m.value.sum())
    True
    """
    return float(_lagrangian(model, job_dual, cap_dual)[0])


def _lagrangian(model: RoundModel, job_dual: np.ndarray, cap_dual: np.ndarray) -> tuple[float, np.ndarray]:
    """:func:`lagrangian_bound` and the reduced values ``v_c - u_a(c) - u_b(c) - size_c y_g(c)``."""
    c = model.columns
    u = np.maximum(job_dual, 0.0)
    y = np.maximum(cap_dual, 0.0)
    reduced = model.value - u[c.job_a] - np.append(u, 0.0)[c.job_b] - c.size * y[c.gpu]
    return float(u.sum() + model.problem.capacity @ y + np.maximum(reduced, 0.0).sum()), reduced


def lp_algorithm(model: RoundModel, lp: LinearProgram, opts: SolveOptions) -> str:
    """The LP method ``opts.lp_algorithm`` stands for on ``lp`` (resolves ``auto``)."""
    if opts.lp_algorithm != "auto":
        return opts.lp_algorithm
    tightened = lp.num_placement_cols == lp.cost.shape[0]  # interior point pays off on the tightened LP only
    return "ipm" if tightened and model.columns.num > DUAL_SIMPLEX_MAX_COLUMNS else "dual"


def solve_relaxation(model: RoundModel, lp: LinearProgram, opts: SolveOptions, *,
                     deadline: float | None = None, presolve: bool = True,
                     crossover: bool | None = None) -> SolverOutcome:
    """Solve ``lp`` to optimality, or raise.

    Anything but an optimal solution raises :class:`~fairshare.errors.SolverError` (a valid round's
    relaxation is always feasible and bounded), except the ``TIME_LIMIT`` outcome when a ``deadline``
    (``time.perf_counter()`` seconds) is given and passes first.

    With ``lp_algorithm="auto"``, a simplex solve that fails is solved again by interior point: HiGHS's
    simplex can end with a wrong status on a valid round whose fair-share coefficients span many orders of
    magnitude (found by tests/sim/test_reliability.py: weights 1, 1e5 and 1e-5 with ``fairness_weight`` 1e-6 made
    section 3's relaxation "Unbounded"; interior point solves it).

    With ``lp_algorithm="auto"`` a tightened LP of at least :data:`NO_CROSSOVER_MIN_COLUMNS` columns is solved
    by interior point without crossover (:data:`IPM_WITHOUT_CROSSOVER`): ``x`` is then an interior point (not
    a vertex), ``bound`` is :func:`lagrangian_bound` at its duals (a proven bound, above the LP optimum by
    about the interior point's tolerance) and ``col_dual`` the reduced values at those duals. If that solve
    fails, the LP is solved again with crossover. ``crossover=False`` takes that path whatever the LP's size
    (when ``auto`` chooses interior point), ``crossover=True`` never does; ``None`` decides by size.

    ``presolve=False`` turns HiGHS's presolve off. On a round's tightened LP it usually finds nothing to
    remove (every job has a column on every type it can run on), and HiGHS then solves the LP as given, the
    same way as without presolve: the same point and duals, in less time (docs/performance-notes.md). Where it
    does remove something (tiny rounds, jobs with a single
    column), the optimum is the same but, with several optima, the point may differ. Warm rounds
    (:mod:`fairshare.methods.warm`) solve their small rounds this way; cold rounds keep HiGHS's default.
    """
    algorithm = lp_algorithm(model, lp, opts)
    large = model.columns.num >= NO_CROSSOVER_MIN_COLUMNS if crossover is None else not crossover
    if (algorithm == "ipm" and opts.lp_algorithm == "auto" and lp.num_placement_cols == lp.cost.shape[0]
            and large and lp.cost.shape[0] == model.columns.num):
        out = _without_crossover(model, lp, opts, deadline)
        if out is not None:
            return out
    try:
        out = _solve_once(lp, opts, algorithm, deadline, presolve)
    except SolverError:
        if opts.lp_algorithm != "auto" or algorithm == "ipm":
            raise
        out = _solve_once(lp, opts, "ipm", deadline, presolve)
    if deadline is not None and out.termination is Termination.TIME_LIMIT:
        return out
    if not out.optimal or out.x is None:
        raise SolverError(f"HiGHS did not solve the LP relaxation ({out.message!r}); try lp_algorithm='ipm'")
    return out


def _without_crossover(model: RoundModel, lp: LinearProgram, opts: SolveOptions,
                       deadline: float | None) -> SolverOutcome | None:
    """The tightened ``lp`` by interior point without crossover, its bound certified; ``None`` if that failed.

    The interior point's duals are not exactly optimal: the outcome's ``bound`` is :func:`lagrangian_bound` at
    them (a bound whatever the duals), and its ``col_dual`` the reduced values at the same duals, so that the
    polish's reduced-cost fixing (:func:`fairshare.methods.rounding.polish`) stays exact against that bound.
    """
    try:
        out = _solve_once(lp, opts, "ipm", deadline, True, IPM_WITHOUT_CROSSOVER)
    except SolverError:
        return None
    if not out.optimal or out.x is None or out.row_dual is None:
        return out if deadline is not None and out.termination is Termination.TIME_LIMIT else None
    n = model.problem.num_jobs
    bound, reduced = _lagrangian(model, out.row_dual[:n], out.row_dual[n:])
    return replace(out, bound=max(bound, out.objective), col_dual=reduced,
                   message=f"{out.message} (interior point without crossover)")


def _solve_once(lp: LinearProgram, opts: SolveOptions, algorithm: str, deadline: float | None,
                presolve: bool = True, options: dict[str, object] | None = None) -> SolverOutcome:
    extra = dict(options or {})
    if not presolve:
        extra["presolve"] = "off"
    out = solve_lp(lp, integer=False, threads=opts.threads, seed=opts.seed, lp_algorithm=algorithm,
                   verbose=opts.verbose, deadline=deadline, extra_options=extra or None)
    if out.optimal and out.x is None:  # pragma: no cover - HiGHS always returns the point of an optimal LP
        raise SolverError("HiGHS reported an optimal LP without a point")
    if not out.optimal and out.termination is not Termination.TIME_LIMIT:
        raise SolverError(f"HiGHS did not solve the LP relaxation ({out.message!r})")
    return out


def solve(model: RoundModel, opts: SolveOptions, *, warm: WarmStart | KeptLP | None = None,
          executor: Executor | None = None) -> Solved:
    """Solve the relaxation chosen by ``opts`` (see the module documentation); ``warm``, ``executor``: not used."""
    if not backend(opts.backend).supports(Feature.ARRAY_MODEL):  # the reference model only
        t0 = time.perf_counter()
        ref = solve_reference(model, integer=False, threads=opts.threads, seed=opts.seed, verbose=opts.verbose)
        total = time.perf_counter() - t0
        if ref.x is None:  # pragma: no cover - a valid round's relaxation always has a solution
            raise SolverError(f"HiGHS via Pyomo did not solve the LP relaxation ({ref.message})")
        status = Status.OPTIMAL if ref.optimal else Status.TIME_LIMIT
        return Solved(x=ref.x, status=status, mip_gap=0.0 if ref.optimal else float("nan"), bound=ref.bound,
                      message=ref.message, relaxation="section3", build_seconds=total - ref.seconds,
                      solve_seconds=ref.seconds)
    t0 = time.perf_counter()
    section3 = opts.relaxation == "section3"
    lp = model.section3_lp() if section3 else model.tightened_lp()
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    out = solve_relaxation(model, lp, opts)
    offset = 0.0 if section3 else model.obj_null
    assert out.x is not None  # solve_relaxation raises otherwise
    return Solved(x=out.x[: lp.num_placement_cols], status=Status.OPTIMAL, mip_gap=0.0, bound=out.bound + offset,
                  message=out.message, relaxation=opts.relaxation, build_seconds=build_s,
                  solve_seconds=time.perf_counter() - t1)
