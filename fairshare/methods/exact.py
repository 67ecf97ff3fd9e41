"""``exact``: the round MILP solved by HiGHS to proven optimality, or the best placement known at a deadline.

By default the tightened column formulation (spec section 5a: the same optima as section 3, a far
tighter bound) is built from arrays and passed to highspy (with fractional requests, in the split form of
:meth:`~fairshare.formulation.RoundModel.tightened_milp`, whose integer GPU counts per type make HiGHS's
proof much shorter); ``backend="pyomo"`` solves section 3's MILP as
written in the Pyomo reference model. The status is ``optimal`` only when HiGHS proved it.

Under a time limit
------------------
``time_limit`` is a deadline for the whole method, counted from its start (building the LP arrays, passing
the model to HiGHS and every solve included). A scheduler that sets one wants the best placement known when
it expires, so the time is spent in this order:

1. fast's placement (:func:`fairshare.methods.relax.round_relaxation`: the tightened LP, greedy rounding and
   its polish) within the deadline; if its LP cannot finish in time the greedy pass runs on the column values
   alone;
2. the MILP with the time left, if it is at least :data:`MILP_START_FACTOR` times what fast's LP took, with
   HiGHS's presolve off: HiGHS does not check its clock during the set-up that follows its MIP presolve nor in
   the first iteration of the root LP; without presolve, and with that much time left, it stops within tens
   of milliseconds of the deadline (docs/reliability.md has the measurements);
3. the better of the two placements: HiGHS's incumbent if it has one at least as good as fast's, else
   fast's. fast's placement is compared, never handed to HiGHS as a start (:mod:`fairshare.solvers.highs`
   says why).

The status is ``optimal`` when HiGHS proved optimality, else ``time_limit``; ``mip_gap`` and ``bound`` are
measured against the best bound known (HiGHS's dual bound or the LP optimum, whichever is lower). With the
HiGHS backend and a time limit there is always a placement (``no_solution`` only comes from the pyomo
backend).

Without a time limit
--------------------
HiGHS runs to optimality. On an all-integer round it runs with :data:`DEADLINE_HIGHS_OPTIONS` too (HiGHS's
defaults spent most of their time in set-up, restarts and sub-MIP heuristics); on a round with fractional
requests it runs with HiGHS's defaults, whose presolve pays off there (docs/performance-notes.md,
"Measurements behind the defaults").
"""

from __future__ import annotations

import time
from concurrent.futures import Executor

import numpy as np

from fairshare.allocation import Status
from fairshare.formulation import LinearProgram, RoundModel
from fairshare.methods.kept import KeptLP
from fairshare.methods.options import SolveOptions
from fairshare.methods.relax import round_relaxation
from fairshare.methods.solved import Solved, relative_gap
from fairshare.methods.warm import WarmStart
from fairshare.solvers import Feature, SolverOutcome, backend, solve_lp, solve_reference

__all__ = ["DEADLINE_HIGHS_OPTIONS", "DEADLINE_MARGIN_SECONDS", "MILP_START_FACTOR", "RESERVE_SECONDS_PER_COLUMN",
           "solve"]

DEADLINE_MARGIN_SECONDS = 0.25
"""The promise: :func:`~fairshare.allocate` in ``exact`` mode with ``time_limit=T`` returns within ``T`` plus this.

``tests/sim/test_reliability.py`` checks it; docs/reliability.md has the measured overruns.
"""

MILP_START_FACTOR = 2.0
"""Under a time limit, the MILP starts only if the time left is at least this many times fast's LP time.

HiGHS's first steps on the MILP (its feasibility-jump heuristic and the first iteration of the root LP) do not
check the clock and take about as long as the LP relaxation; with less time left the MILP could not beat fast's
placement anyway (docs/performance-notes.md, "Measurements behind the defaults").
"""

DEADLINE_HIGHS_OPTIONS: dict[str, str | bool] = {
    "presolve": "off", "mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False}
"""HiGHS options of the MILP under a time limit, and without one on all-integer rounds (see the module
documentation).

Presolve off: HiGHS does not check its clock in the set-up after its MIP presolve. The sub-MIP heuristics
(RINS, RENS, root reduced cost) off: each runs a presolve of its own that can overrun the deadline, and without
them HiGHS also proves all-integer rounds optimal sooner (docs/performance-notes.md).
"""

RESERVE_SECONDS_PER_COLUMN = 1e-6
"""Under a time limit, the solvers stop this long per placement column before the deadline, for the work
that follows them (a greedy pass, then assembling the allocation)."""


def solve(model: RoundModel, opts: SolveOptions, *, warm: WarmStart | KeptLP | None = None,
          executor: Executor | None = None) -> Solved:
    """Solve ``model`` as a MILP (see the module documentation); ``warm`` and ``executor`` are not used."""
    if not backend(opts.backend).supports(Feature.ARRAY_MODEL):  # the reference model only
        return _solve_pyomo(model, opts)
    t0 = time.perf_counter()
    deadline = None if opts.time_limit is None else t0 + float(opts.time_limit)
    lp = model.tightened_lp()
    build_s = time.perf_counter() - t0
    if deadline is None:
        return _solve_to_optimality(model, lp, opts, build_s)
    return _solve_by_deadline(model, lp, opts, deadline, build_s)


def _milp(lp: LinearProgram, opts: SolveOptions, deadline: float | None,
          highs_options: dict[str, str | bool] | None) -> SolverOutcome:
    # No start solution is given (see fairshare.solvers.highs).
    return solve_lp(lp, integer=True, mip_rel_gap=opts.mip_rel_gap, threads=opts.threads, seed=opts.seed,
                    verbose=opts.verbose, deadline=deadline, extra_options=highs_options)


def _solve_to_optimality(model: RoundModel, lp: LinearProgram, opts: SolveOptions, build_s: float) -> Solved:
    t1 = time.perf_counter()
    # HiGHS's defaults only where its presolve pays off: fractional requests (see the module documentation)
    highs_options = None if model.problem.has_fractional else DEADLINE_HIGHS_OPTIONS
    out = _milp(model.tightened_milp(lp), opts, None, highs_options)
    solve_s = time.perf_counter() - t1
    bound = out.bound + model.obj_null
    if out.x is None:  # pragma: no cover - HiGHS without a limit always ends with a point
        return Solved(x=None, status=Status.NO_SOLUTION, mip_gap=float("inf"), bound=bound, message=out.message,
                      relaxation=None, build_seconds=build_s, solve_seconds=solve_s)
    x = np.round(out.x[: model.columns.num])
    status = Status.OPTIMAL if out.optimal else Status.TIME_LIMIT
    gap = relative_gap(out.bound, float(model.value @ x))
    return Solved(x=x, status=status, mip_gap=gap, bound=bound, message=out.message, relaxation=None,
                  build_seconds=build_s, solve_seconds=solve_s)


def _solve_by_deadline(model: RoundModel, lp: LinearProgram, opts: SolveOptions, deadline: float,
                       build_s: float) -> Solved:
    t1 = time.perf_counter()
    deadline -= RESERVE_SECONDS_PER_COLUMN * model.columns.num
    fast = round_relaxation(model, lp, opts, deadline=deadline)
    fast_value = float(model.value @ fast.x)
    bound = fast.bound
    left = deadline - time.perf_counter()
    if left <= 0 or left < MILP_START_FACTOR * fast.lp_seconds:
        return Solved(x=fast.x, status=Status.TIME_LIMIT, mip_gap=relative_gap(bound, fast_value),
                      bound=bound + model.obj_null,
                      message=f"Time limit reached; fast's placement ({fast.message}; no time left for the MILP)",
                      relaxation=None, build_seconds=build_s, solve_seconds=time.perf_counter() - t1)
    out = _milp(model.tightened_milp(lp), opts, deadline, DEADLINE_HIGHS_OPTIONS)
    if np.isfinite(out.bound):
        bound = min(bound, out.bound)
    x, source = fast.x, "fast's placement"
    if out.x is not None:
        x_milp = np.round(out.x[: model.columns.num])
        if float(model.value @ x_milp) >= fast_value:
            x, source = x_milp, "HiGHS's incumbent"
        else:
            source += " (HiGHS's incumbent is worse)"
    else:
        source += " (HiGHS has no incumbent)"
    status = Status.OPTIMAL if out.optimal else Status.TIME_LIMIT
    gap = relative_gap(bound, float(model.value @ x))
    message = out.message if source == "HiGHS's incumbent" else f"{out.message}; {source}"
    return Solved(x=x, status=status, mip_gap=gap, bound=bound + model.obj_null, message=message, relaxation=None,
                  build_seconds=build_s, solve_seconds=time.perf_counter() - t1)


def _solve_pyomo(model: RoundModel, opts: SolveOptions) -> Solved:
    t0 = time.perf_counter()
    out = solve_reference(model, integer=True, time_limit=opts.time_limit, mip_rel_gap=opts.mip_rel_gap,
                          threads=opts.threads, seed=opts.seed, verbose=opts.verbose)
    total = time.perf_counter() - t0
    if out.x is None:
        return Solved(x=None, status=Status.NO_SOLUTION, mip_gap=float("inf"), bound=out.bound, message=out.message,
                      relaxation=None, build_seconds=total - out.seconds, solve_seconds=out.seconds)
    x = np.round(out.x)
    gap = relative_gap(out.bound - model.obj_null, float(model.value @ x))
    if out.optimal:
        gap = min(gap, opts.mip_rel_gap)
    status = Status.OPTIMAL if out.optimal else Status.TIME_LIMIT
    return Solved(x=x, status=status, mip_gap=gap, bound=out.bound, message=out.message, relaxation=None,
                  build_seconds=total - out.seconds, solve_seconds=out.seconds)
