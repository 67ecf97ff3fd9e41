"""``lp``: the LP relaxation of the round; shares are time fractions of the round.

``relaxation="section3"`` (default) solves section 3's relaxation, ``"tightened"`` the column one of
section 5a (whose optimum is offset by ``obj_null``). ``backend="pyomo"`` solves section 3's relaxation in
the Pyomo reference model.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from typing import TYPE_CHECKING

from fairshare.allocation import Status
from fairshare.errors import SolverError
from fairshare.formulation import LinearProgram, RoundModel
from fairshare.methods.options import SolveOptions
from fairshare.methods.solved import Solved
from fairshare.solvers import SolverOutcome, Termination, solve_lp, solve_reference

if TYPE_CHECKING:  # pragma: no cover
    from fairshare.methods.kept import KeptLP
    from fairshare.methods.warm import WarmStart

__all__ = ["DUAL_SIMPLEX_MAX_COLUMNS", "lp_algorithm", "solve", "solve_relaxation"]

DUAL_SIMPLEX_MAX_COLUMNS = 20_000
"""``lp_algorithm="auto"`` uses dual simplex up to this many columns of the tightened LP, interior point above
(the faster of the two on each side: docs/performance.md)."""


def lp_algorithm(model: RoundModel, lp: LinearProgram, opts: SolveOptions) -> str:
    """The LP method ``opts.lp_algorithm`` stands for on ``lp`` (resolves ``auto``)."""
    if opts.lp_algorithm != "auto":
        return opts.lp_algorithm
    tightened = lp.num_placement_cols == lp.cost.shape[0]  # interior point pays off on the tightened LP only
    return "ipm" if tightened and model.columns.num > DUAL_SIMPLEX_MAX_COLUMNS else "dual"


def solve_relaxation(model: RoundModel, lp: LinearProgram, opts: SolveOptions, *,
                     deadline: float | None = None, presolve: bool = True) -> SolverOutcome:
    """Solve ``lp`` to optimality, or raise.

    Anything but an optimal solution raises :class:`~fairshare.errors.SolverError` (a valid round's
    relaxation is always feasible and bounded), except the ``TIME_LIMIT`` outcome when a ``deadline``
    (``time.perf_counter()`` seconds) is given and passes first.

    With ``lp_algorithm="auto"``, a simplex solve that fails is solved again by interior point: HiGHS's
    simplex can end with a wrong status on a valid round whose fair-share coefficients span many orders of
    magnitude (found by tests/test_reliability.py: weights 1, 1e5 and 1e-5 with ``fairness_weight`` 1e-6 made
    section 3's relaxation "Unbounded"; interior point solves it).

    ``presolve=False`` turns HiGHS's presolve off. On a round's tightened LP it usually finds nothing to
    remove (every job has a column on every type it can run on), and HiGHS then solves the LP as given, the
    same way as without presolve: the same point and duals, in less time (docs/performance-notes.md). Where it
    does remove something (tiny rounds, jobs with a single
    column), the optimum is the same but, with several optima, the point may differ. Warm rounds
    (:mod:`fairshare.methods.warm`) solve their small rounds this way; cold rounds keep HiGHS's default.
    """
    algorithm = lp_algorithm(model, lp, opts)
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


def _solve_once(lp: LinearProgram, opts: SolveOptions, algorithm: str, deadline: float | None,
                presolve: bool = True) -> SolverOutcome:
    out = solve_lp(lp, integer=False, threads=opts.threads, seed=opts.seed, lp_algorithm=algorithm,
                   verbose=opts.verbose, deadline=deadline,
                   extra_options=None if presolve else {"presolve": "off"})
    if out.optimal and out.x is None:  # pragma: no cover - HiGHS always returns the point of an optimal LP
        raise SolverError("HiGHS reported an optimal LP without a point")
    if not out.optimal and out.termination is not Termination.TIME_LIMIT:
        raise SolverError(f"HiGHS did not solve the LP relaxation ({out.message!r})")
    return out


def solve(model: RoundModel, opts: SolveOptions, *, warm: WarmStart | KeptLP | None = None,
          executor: Executor | None = None) -> Solved:
    """Solve the relaxation chosen by ``opts`` (see the module documentation); ``warm``, ``executor``: not used."""
    if opts.backend == "pyomo":
        t0 = time.perf_counter()
        ref = solve_reference(model, integer=False, threads=opts.threads, seed=opts.seed, verbose=opts.verbose)
        total = time.perf_counter() - t0
        if ref.x is None:  # pragma: no cover - a valid round's relaxation always has a solution
            raise SolverError(f"HiGHS via Pyomo did not solve the LP relaxation ({ref.message})")
        status = Status.OPTIMAL if ref.optimal else Status.TIME_LIMIT
        return Solved(ref.x, status, 0.0 if ref.optimal else float("nan"), ref.bound, ref.message, "section3",
                      total - ref.seconds, ref.seconds)
    t0 = time.perf_counter()
    section3 = opts.relaxation == "section3"
    lp = model.section3_lp() if section3 else model.tightened_lp()
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    out = solve_relaxation(model, lp, opts)
    offset = 0.0 if section3 else model.obj_null
    assert out.x is not None  # solve_relaxation raises otherwise
    return Solved(out.x[: lp.num_placement_cols], Status.OPTIMAL, 0.0, out.bound + offset, out.message,
                  opts.relaxation, build_s, time.perf_counter() - t1)
