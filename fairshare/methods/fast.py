"""``fast``: the tightened LP relaxation rounded to a feasible placement, then improved when the gap is large.

Steps (:mod:`fairshare.methods.rounding` has the details and guarantees): solve the tightened LP; round
greedily with a fill step; when the certified gap to the LP bound exceeds ``polish_gap``, run the local
search (rounds of at most :data:`LOCAL_SEARCH_MAX_COLUMNS` columns) and the polish MILP. The result is always
feasible; its status is ``heuristic`` and ``mip_gap`` is certified by the LP bound.

:func:`round_relaxation` is these steps on a built LP, optionally against a deadline: ``exact`` under a time
limit runs it first, so that it always has fast's placement to return (:mod:`fairshare.methods.exact`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fairshare.allocation import Status
from fairshare.formulation import LinearProgram, RoundModel
from fairshare.methods.lp import solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.methods.rounding import greedy_round, improve, polish
from fairshare.methods.solved import Solved, relative_gap

__all__ = ["LOCAL_SEARCH_MAX_COLUMNS", "Rounded", "round_relaxation", "solve", "value_bound"]

LOCAL_SEARCH_MAX_COLUMNS = 1000
"""The local search is O(columns x placed); beyond this many columns greedy is within 0.1 % (measured)."""


@dataclass(frozen=True, slots=True)
class Rounded:
    """fast's placement of a round (:func:`round_relaxation`).

    Attributes
    ----------
    x : array (M,)
        0/1 column values of a feasible placement.
    bound : float
        Proven upper bound on the tightened objective (``value @ x`` for any placement; add ``obj_null`` for
        section 3's): the LP optimum, or :func:`value_bound` when the LP did not finish before the deadline.
    message : str
        What was done (``"LP Optimal; rounded"``).
    lp_seconds : float
        Wall time of the LP relaxation.
    """

    x: np.ndarray
    bound: float
    message: str
    lp_seconds: float


def value_bound(model: RoundModel) -> float:
    """A bound on the tightened objective known without solving anything.

    A placement holds each job in at most one column, so its columns have distinct first jobs ``a(c)`` and
    ``value @ x <= sum_j max(0, max_{c: a(c) = j} v_c)``.

    Examples
    --------
    >>> from fairshare.formulation import build_model
    >>> from fairshare.problem import RoundProblem
    >>> m = build_model(RoundProblem(["V100"], [1], ["a", "b"], [1, 1], [[2.0], [1.0]]))
    >>> value_bound(m) >= float(m.value.max())
    True
    """
    best = np.zeros(model.problem.num_jobs)
    np.maximum.at(best, model.columns.job_a, model.value)
    return float(best.sum())


def round_relaxation(model: RoundModel, lp: LinearProgram, opts: SolveOptions, *,
                     deadline: float | None = None) -> Rounded:
    """Fast's steps on ``lp`` (``model.tightened_lp()``); see the module documentation.

    With a ``deadline`` (``time.perf_counter()`` seconds) the LP and the polish stop by it. If the LP has not
    finished, the greedy pass runs on the column values alone (by value per GPU) and the bound is
    :func:`value_bound`; the local search and the polish are skipped once the deadline has passed. The
    placement is feasible in every case.
    """
    t0 = time.perf_counter()
    out = solve_relaxation(model, lp, opts, deadline=deadline)
    lp_seconds = time.perf_counter() - t0
    if out.x is None or not out.optimal:  # the deadline came first
        x = greedy_round(model, np.zeros(model.columns.num))
        return Rounded(x, max(value_bound(model), float(model.value @ x)),
                       f"LP {out.message}; greedy by value", lp_seconds)
    x = greedy_round(model, out.x)
    small = model.columns.num <= LOCAL_SEARCH_MAX_COLUMNS
    polish_gap = opts.polish_gap if opts.polish_gap is not None else (1e-2 if small else 2e-2)
    if small and relative_gap(out.bound, float(model.value @ x)) > polish_gap and _before(deadline):
        x = improve(model, x)
    seconds = opts.polish_seconds if deadline is None else min(opts.polish_seconds, deadline - time.perf_counter())
    polished = polish(model, lp, out, x, seconds=max(seconds, 0.0), gap=polish_gap, seed=opts.seed,
                      threads=opts.threads)
    return Rounded(polished.x, polished.bound, f"LP {out.message}; rounded", lp_seconds)


def solve(model: RoundModel, opts: SolveOptions) -> Solved:
    """Solve ``model`` the fast way (see the module documentation)."""
    t0 = time.perf_counter()
    lp = model.tightened_lp()
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    r = round_relaxation(model, lp, opts)
    gap = relative_gap(r.bound, float(model.value @ r.x))
    return Solved(r.x, Status.HEURISTIC, gap, r.bound + model.obj_null, r.message, None, build_s,
                  time.perf_counter() - t1)


def _before(deadline: float | None) -> bool:
    return deadline is None or time.perf_counter() < deadline
