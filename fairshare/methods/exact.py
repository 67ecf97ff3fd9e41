"""``exact``: the round MILP solved by HiGHS to proven optimality (or to ``time_limit``).

By default the tightened column formulation (spec section 5a: the same optima as section 3, a far
tighter bound) is built from arrays and passed to highspy; ``backend="pyomo"`` solves section 3's MILP as
written in the Pyomo reference model. The status is ``optimal`` only when HiGHS proved it; otherwise
``time_limit`` with HiGHS's incumbent and gap, or ``no_solution``.
"""

from __future__ import annotations

import time

import numpy as np

from fairshare.allocation import Status
from fairshare.formulation import RoundModel
from fairshare.methods.options import SolveOptions
from fairshare.methods.solved import Solved, relative_gap
from fairshare.solvers import solve_lp, solve_reference

__all__ = ["solve"]


def solve(model: RoundModel, opts: SolveOptions) -> Solved:
    """Solve ``model`` as a MILP (see the module documentation)."""
    if opts.backend == "pyomo":
        return _solve_pyomo(model, opts)
    t0 = time.perf_counter()
    lp = model.tightened_lp()
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    # No start solution is given (HiGHS 1.16 returned one given by setSolution as optimal with a wrong
    # objective: tests/test_allocate.py::test_exact_regression_start_solution).
    out = solve_lp(lp, integer=True, time_limit=opts.time_limit, mip_rel_gap=opts.mip_rel_gap,
                   threads=opts.threads, seed=opts.seed, verbose=opts.verbose)
    solve_s = time.perf_counter() - t1
    bound = out.bound + model.obj_null
    if out.x is None:
        return Solved(None, Status.NO_SOLUTION, float("inf"), bound, out.message, None, build_s, solve_s)
    x = np.round(out.x)
    status = Status.OPTIMAL if out.optimal else Status.TIME_LIMIT
    gap = relative_gap(out.bound, float(model.value @ x))
    return Solved(x, status, gap, bound, out.message, None, build_s, solve_s)


def _solve_pyomo(model: RoundModel, opts: SolveOptions) -> Solved:
    t0 = time.perf_counter()
    out = solve_reference(model, integer=True, time_limit=opts.time_limit, mip_rel_gap=opts.mip_rel_gap,
                          threads=opts.threads, seed=opts.seed, verbose=opts.verbose)
    total = time.perf_counter() - t0
    if out.x is None:
        return Solved(None, Status.NO_SOLUTION, float("inf"), out.bound, out.message, None,
                      total - out.seconds, out.seconds)
    x = np.round(out.x)
    gap = relative_gap(out.bound - model.obj_null, float(model.value @ x))
    if out.optimal:
        gap = min(gap, opts.mip_rel_gap)
    status = Status.OPTIMAL if out.optimal else Status.TIME_LIMIT
    return Solved(x, status, gap, out.bound, out.message, None, total - out.seconds, out.seconds)
