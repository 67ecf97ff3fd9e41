"""fast's steps on a built LP, shared by the modes: the tightened LP relaxation, rounded to a feasible placement.

:func:`round_relaxation` solves the tightened LP (by pricing with ``warm_start``), rounds it greedily with a
fill step and, unless ``polish=False``, improves the rounding when it is not good enough: a local search on
rounds of at most :data:`LOCAL_SEARCH_MAX_COLUMNS` columns, then the polish MILP (stopping at the relative gap
of :func:`polish_mip_gap`: :data:`POLISH_MIP_GAP`, or less where E is small against the value). The result is
always feasible and its bound is certified by the LP.

"Good enough" is decided from two gaps (:func:`polish_thresholds`):

- the certified value gap ``(z_LP - z) / z_LP`` at most ``polish_gap`` (default :data:`POLISH_GAP`, 0.5 %), and
- the efficiency gap (:func:`efficiency_gap`) at most ``polish_efficiency_gap`` (default
  :data:`POLISH_EFFICIENCY_GAP`, 1 %): with a small fairness weight the objective is flat across placements
  of very different efficiency, so the value gap alone can hide a large loss of E.

``fast`` (:mod:`fairshare.methods.fast`), each part of a split round (:mod:`fairshare.methods.partition`) and
``exact`` under a time limit (:mod:`fairshare.methods.exact`) all run it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fairshare.formulation import LinearProgram, RoundModel
from fairshare.methods.kept import KeptLP
from fairshare.methods.lp import lp_algorithm, solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.methods.rounding import dot, greedy_round, improve, polish
from fairshare.methods.solved import relative_gap
from fairshare.methods.warm import WarmStart, solve_priced

__all__ = ["LOCAL_SEARCH_MAX_COLUMNS", "POLISH_EFFICIENCY_GAP", "POLISH_EFFICIENCY_SHARE", "POLISH_GAP",
           "POLISH_MIP_GAP", "Rounded", "efficiency_gap", "polish_mip_gap", "polish_thresholds", "round_relaxation",
           "value_bound"]

LOCAL_SEARCH_MAX_COLUMNS = 1000
"""The local search is O(columns x placed); beyond this many columns greedy is within 0.1 % (measured)."""

POLISH_GAP = 5e-3
"""Default ``polish_gap``: the certified value gap (to the LP bound) above which fast improves its rounding."""

POLISH_EFFICIENCY_GAP = 1e-2
"""Default ``polish_efficiency_gap``: relative shortfall of the placement's E against the LP solution's E."""

POLISH_MIP_GAP = 1e-3
"""Relative gap at which the polish MILP stops (tightened objective; smaller if :func:`polish_mip_gap` says so)."""

POLISH_EFFICIENCY_SHARE = 0.1
"""The polish MILP goes on until the value it may still miss is at most this share of ``polish_efficiency_gap``
times the LP solution's E (:func:`polish_mip_gap`). With a small fairness weight the objective is flat across
placements of very different efficiency: a gap of 0.1 % of the value does not tell them apart."""


@dataclass(frozen=True, slots=True, kw_only=True)
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
        What was done (``"LP Optimal; rounded"``, ``"...; rounded, local search"``, ``"...; rounded, polished"``).
    lp_seconds : float
        Wall time of the LP relaxation.
    round_seconds : float
        Wall time of the greedy rounding and the local search.
    polish_seconds : float
        Wall time of the polish MILP (0 when it did not run).
    row_dual : array (N + G,) or None
        The LP's row duals (job rows, then capacity rows; ``None`` when the LP did not finish): with
        :func:`fairshare.methods.partition.dual_bound` they bound any round that contains this one's columns.
    lp_bound : float
        The LP optimum (nan when the LP did not finish); ``bound`` is lower when the polish proved more.
    """

    x: np.ndarray
    bound: float
    message: str
    lp_seconds: float
    round_seconds: float = 0.0
    polish_seconds: float = 0.0
    row_dual: np.ndarray | None = None
    lp_bound: float = float("nan")


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
                     deadline: float | None = None, warm: WarmStart | KeptLP | None = None,
                     crossover: bool | None = None) -> Rounded:
    """Fast's steps on ``lp`` (``model.tightened_lp()``); see the module documentation.

    With a :class:`~fairshare.methods.kept.KeptLP` as ``warm`` the LP is the kept one, changed into this round's
    (:mod:`fairshare.methods.kept`). Otherwise, with ``opts.warm_start`` the LP is solved by pricing
    (:func:`fairshare.methods.warm.solve_priced`), seeded from and updating ``warm`` when given (the LP method
    must be dual simplex, as ``auto`` chooses up to :data:`~fairshare.methods.lp.DUAL_SIMPLEX_MAX_COLUMNS`
    columns; otherwise the whole LP is solved).

    ``crossover``: that of :func:`~fairshare.methods.lp.solve_relaxation` (``None``: by the LP's size).

    With a ``deadline`` (``time.perf_counter()`` seconds) the LP and the polish stop by it. If the LP has not
    finished, the greedy pass runs on the column values alone (by value per GPU) and the bound is
    :func:`value_bound`; the local search and the polish are skipped once the deadline has passed. The
    placement is feasible in every case.
    """
    t0 = time.perf_counter()
    if isinstance(warm, KeptLP):
        out = warm.solve(model, lp, opts, deadline=deadline)
    elif opts.warm_start and lp_algorithm(model, lp, opts) == "dual":
        out = solve_priced(model, lp, opts, warm, deadline=deadline)
    else:
        out = solve_relaxation(model, lp, opts, deadline=deadline, crossover=crossover)
    lp_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    if out.x is None or not out.optimal:  # the deadline came first
        x = greedy_round(model, np.zeros(model.columns.num))
        return Rounded(x=x, bound=max(value_bound(model), dot(model.value, x)),
                       message=f"LP {out.message}; greedy by value", lp_seconds=lp_seconds,
                       round_seconds=time.perf_counter() - t1)
    x = greedy_round(model, out.x)
    small = model.columns.num <= LOCAL_SEARCH_MAX_COLUMNS
    value_gap, eff_gap = polish_thresholds(model, opts)
    done = f"LP {out.message}; rounded"
    if _needs_polish(model, out.bound, out.x, x, value_gap, eff_gap) and small and _before(deadline):
        x = improve(model, x)
        done += ", local search"
    round_s = time.perf_counter() - t1
    if not _needs_polish(model, out.bound, out.x, x, value_gap, eff_gap):
        return Rounded(x=x, bound=out.bound, message=done, lp_seconds=lp_seconds, round_seconds=round_s,
                       polish_seconds=0.0, row_dual=out.row_dual, lp_bound=out.bound)
    t2 = time.perf_counter()
    seconds = opts.polish_seconds if deadline is None else min(opts.polish_seconds, deadline - time.perf_counter())
    if seconds <= 0:
        return Rounded(x=x, bound=out.bound, message=done, lp_seconds=lp_seconds, round_seconds=round_s,
                       polish_seconds=0.0, row_dual=out.row_dual, lp_bound=out.bound)
    gap = polish_mip_gap(model, out.bound, out.x, value_gap, eff_gap)
    polished = polish(model, lp, out, x, seconds=seconds, gap=gap, seed=opts.seed, threads=opts.threads)
    return Rounded(x=polished.x, bound=polished.bound, message=done + ", polished", lp_seconds=lp_seconds,
                   round_seconds=round_s, polish_seconds=time.perf_counter() - t2, row_dual=out.row_dual,
                   lp_bound=out.bound)


def polish_mip_gap(model: RoundModel, z_lp: float, x_lp: np.ndarray, value_gap: float, eff_gap: float) -> float:
    """Relative gap (on the tightened objective) at which the polish MILP stops.

    The smallest of :data:`POLISH_MIP_GAP`, the value threshold ``value_gap`` and
    ``POLISH_EFFICIENCY_SHARE * eff_gap * E(x_lp) / z_LP``: the MILP stops only once the value it may still leave
    on the table is at most that share of the efficiency threshold's worth of the LP solution's E. Positive
    whenever ``value_gap`` and ``eff_gap`` are.

    Examples
    --------
    >>> from fairshare.formulation import build_model
    >>> from fairshare.problem import RoundProblem
    >>> m = build_model(RoundProblem(["V100"], [1], ["a"], [1], [[2.0]]))
    >>> polish_mip_gap(m, 1.0, np.zeros(1), 5e-3, 1e-2) == POLISH_MIP_GAP  # no E in the LP solution
    True
    """
    gap = min(POLISH_MIP_GAP, value_gap)
    e_lp = dot(model.eff_priority, x_lp)
    if np.isfinite(eff_gap) and eff_gap > 0 and z_lp > 0 and e_lp > 0:
        gap = min(gap, POLISH_EFFICIENCY_SHARE * eff_gap * e_lp / z_lp)
    return gap


def polish_thresholds(model: RoundModel, opts: SolveOptions) -> tuple[float, float]:
    """The value gap and the efficiency gap above which fast improves its rounding (options or defaults).

    Both are infinite with ``polish=False``: the greedy rounding is kept whatever its gaps.
    """
    if not opts.polish:
        return float("inf"), float("inf")
    value_gap = opts.polish_gap if opts.polish_gap is not None else POLISH_GAP
    eff_gap = opts.polish_efficiency_gap if opts.polish_efficiency_gap is not None else POLISH_EFFICIENCY_GAP
    return value_gap, eff_gap


def efficiency_gap(model: RoundModel, x_lp: np.ndarray, x: np.ndarray) -> float:
    """``max(0, E(x_lp) - E(x)) / E(x_lp)``: the efficiency the rounding gave away against the LP solution.

    E is the (priority-weighted) efficiency term of the objective. The LP solution's E is not a bound on
    the optimal placement's E (the LP trades E against fairness), but with a small fairness weight a small
    value gap can hide a large efficiency gap, which this measures.

    Examples
    --------
    >>> from fairshare.formulation import build_model
    >>> from fairshare.problem import RoundProblem
    >>> m = build_model(RoundProblem(["V100"], [1], ["a"], [1], [[2.0]]))
    >>> efficiency_gap(m, np.ones(1), np.zeros(1))
    1.0
    """
    e_lp = dot(model.eff_priority, x_lp)
    if e_lp <= 0:
        return 0.0
    return max(0.0, e_lp - dot(model.eff_priority, x)) / e_lp


def _needs_polish(model: RoundModel, bound: float, x_lp: np.ndarray, x: np.ndarray, value_gap: float,
                  eff_gap: float) -> bool:
    return (relative_gap(bound, dot(model.value, x)) > value_gap
            or efficiency_gap(model, x_lp, x) > eff_gap)


def _before(deadline: float | None) -> bool:
    return deadline is None or time.perf_counter() < deadline
