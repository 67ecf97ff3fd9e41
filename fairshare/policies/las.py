"""``las``: Gavel's heterogeneity-agnostic max-min fairness (its "LAS" baseline), rounds by Gavel's priority rule.

Source: Narayanan et al., OSDI'20 (the heterogeneity-agnostic least-attained-service / max-min baseline). The
plan is an optimum of Gavel's own ``MaxMinFairnessPolicy`` at commit c4fa400 of
github.com/stanford-futuredata/gavel, written here from its definition and checked against the optima of
Gavel's code in ``tests/policies/test_gavel_reference.py``. The Tiresias-style ordering that fairshare called ``las``
before 0.2 is registered as ``las-tiresias`` (:mod:`fairshare.policies.las_tiresias`).

Program (Gavel's)
    Gavel's agnostic class gives every job throughput 1 on every type and solves its max-min program: over
    the alone columns, with ``share_j = sum_{c ∋ j} X_c`` the job's time fraction,

    maximise ``min_j s_j share_j / w_j``
    subject to ``share_j <= 1`` and ``sum_{c on g} s_j X_c <= C_g`` (Gavel's constraints; no co-location).

    Its optimum is ``v* = min(min_j s_j / w_j, C' / sum_j w_j)`` when every job can run on every type in use
    (``C'``: the GPUs of the types some job can run on).
Which optimum (fairshare's choice; Gavel's program pins only the bottleneck jobs)
    The plan is the weighted water-filling of GPU time, ``e_j = min(s_j, theta w_j)`` GPUs per job with
    ``sum_j e_j = min(C', sum_j s_j)``, each job's time ``e_j / s_j`` spread over the types in proportion to
    their GPU counts: the fair allocation of spec round-problem.md section 2 (``model.fair.shares``). Its
    smallest level ``min_j e_j / w_j`` is ``v*``, so it is an optimum of Gavel's program; among the optima it is
    the lexicographically fairest, and, like the central optimum Gavel's interior-point solver returns, it
    spreads every job over the types rather than pinning it to one. No throughput is looked at. When some job
    cannot run on some type in use, that spread is not always feasible: then two LPs give the plan, Gavel's
    max-min LP (``v*``), then the plan closest to the water-filled target that keeps every level at
    ``(1 - 1e-7) v*`` (most GPU time in agreement with the target, each job's target spread over the types it
    can run on in proportion to their GPU counts; leftover GPU time used as a tie-break).
Round
    Gavel's priority rule (:func:`fairshare.policies._timeshare.priority_round`); the fill pass is
    heterogeneity-agnostic too (each job's types by decreasing GPU count).
Status
    ``optimal`` only when the plan is itself integral and placed as is; otherwise ``heuristic``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fairshare.errors import SolverError
from fairshare.formulation import RoundModel
from fairshare.policies._timeshare import Progress, job_levels, max_min_plan, priority_round, status_of
from fairshare.policies.base import Placed, Policy, RoundState, TimeSharePlan, register
from fairshare.solvers import LinearProgram, solve_lp

__all__ = ["LeastAttainedServicePolicy", "las_plan", "water_filled_target"]

_KEEP = 1.0 - 1e-7  # relative slack on the max-min level kept by the second LP
_LEFTOVER = 1e-3  # weight of GPU time beyond the target in the second LP (a tie-break)
_LP2_ALGORITHM = "ipm"  # 0.09 s against 0.21 s for the dual simplex at 1,000 jobs (random_round)


def _agnostic_rows(model: RoundModel) -> tuple[Progress, np.ndarray, np.ndarray]:
    """Usable columns (alone), progress 1 per unit of time, and the scale ``s_j / w_j`` of the level rows."""
    c, p = model.columns, model.problem
    usable = ~c.is_pair
    ones = usable.astype(np.float64)
    return (ones, np.zeros(c.num)), p.scale.astype(np.float64) / p.weight, usable


def water_filled_target(model: RoundModel) -> np.ndarray:
    """``(N, G)`` time fractions: the water-filled GPU time of each job spread over the types it can run on.

    ``e_j / s_j`` (``e_j`` = ``model.fair.entitlement``) over the types where ``j`` can run, in proportion to
    their GPU counts. When every job can run on every type in use this is ``model.fair.shares``.
    """
    p = model.problem
    run = p.runnable
    cap = np.where(run, p.capacity.astype(np.float64)[None, :], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(run, cap / cap.sum(axis=1, keepdims=True), 0.0)
    return (np.asarray(model.fair.entitlement, dtype=np.float64) / p.scale)[:, None] * spread


def las_plan(model: RoundModel) -> TimeSharePlan:
    """An optimum of Gavel's agnostic max-min program: the water-filled plan of the module doc.

    Returns
    -------
    TimeSharePlan
        ``job_values``: each job's level ``s_j share_j / w_j``; ``objective``: their minimum at ``x``;
        ``bound``: the optimum ``v*``.

    Examples
    --------
    Three single-GPU jobs, one of weight 2, on 2 + 2 GPUs: every gang fits, so each job runs all the time,
    half of it on each type (the throughputs do not matter); the weight-2 job's level, 0.5, is the optimum:

    >>> from fairshare.problem import RoundProblem
    >>> from fairshare.formulation import build_model
    >>> p = RoundProblem.from_dict({"gpus": {"A": 2, "B": 2}, "jobs": [
    ...     {"id": i, "scale": 1, "weight": w, "throughput": {"A": 1.0, "B": 5.0}}
    ...     for i, w in (("x", 1), ("y", 1), ("z", 2))]})
    >>> plan = las_plan(build_model(p))
    >>> plan.x.round(4).tolist(), plan.job_values.round(4).tolist(), plan.solves
    ([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], [1.0, 1.0, 0.5], 0)
    """
    c, p = model.columns, model.problem
    n = p.num_jobs
    progress, scale, usable = _agnostic_rows(model)
    if n == 0 or not usable.any():
        return TimeSharePlan(np.zeros(c.num), np.zeros(n), 0.0, 0.0, True, 0, "empty")
    target = water_filled_target(model)
    alone = np.arange(c.num_alone)
    x = np.zeros(c.num)
    x[alone] = target[c.job_a[alone], c.gpu[alone]]
    usable_types = np.asarray(p.runnable.any(axis=0), dtype=bool)
    if (p.runnable | ~usable_types[None, :]).all():
        levels = job_levels(model, x, progress, scale)
        v = float(levels.min())
        return TimeSharePlan(x, levels, v, v, True, 0, "water-filled share (every job runs on every type in use)")
    first = max_min_plan(model, usable, progress=progress, scale=scale)
    closer = _closest_to_target(model, usable, x, scale, first.bound)
    if closer is None:  # pragma: no cover - the max-min plan is feasible for the second LP
        return first
    levels = job_levels(model, closer, progress, scale)
    return TimeSharePlan(closer, levels, float(levels.min()), first.bound, first.optimal, 2,
                         "max-min LP, then the plan closest to the water-filled share")


def _closest_to_target(model: RoundModel, usable: np.ndarray, target: np.ndarray, scale: np.ndarray,
                       level: float) -> np.ndarray | None:
    """The plan keeping every level at ``(1 - 1e-7) level`` with the most GPU time in agreement with ``target``.

    maximise ``sum_c size_c y_c + 1e-3 sum_c size_c X_c`` subject to ``y_c <= X_c``, ``0 <= y_c <= target_c``,
    the time and capacity rows and ``scale_j share_j >= (1 - 1e-7) level``; over the usable (alone) columns.
    Returns ``None`` if HiGHS does not prove an optimum.
    """
    c, p = model.columns, model.problem
    n, g = p.num_jobs, len(p.gpu_types)
    cols = np.flatnonzero(usable)
    m = len(cols)
    size = c.size[cols].astype(np.float64)
    k = np.arange(m)
    place_rows, place_cols, place_vals = model.placement_rows(cols)  # rows 0..N-1 time, N..N+G-1 capacity
    ja = c.job_a[cols]
    rows = np.concatenate([place_rows, n + g + ja, n + g + n + k, n + g + n + k])
    colx = np.concatenate([place_cols, k, k, m + k])
    vals = np.concatenate([place_vals, scale[ja], -np.ones(m), np.ones(m)])
    a = sp.csc_matrix((vals, (rows, colx)), shape=(n + g + n + m, 2 * m))
    row_lower = np.concatenate([np.full(n + g, -np.inf), np.full(n, _KEEP * level), np.full(m, -np.inf)])
    row_upper = np.concatenate([np.ones(n), p.capacity.astype(np.float64), np.full(n, np.inf), np.zeros(m)])
    cost = np.concatenate([_LEFTOVER * size, size])
    col_upper = np.concatenate([np.ones(m), np.clip(target[cols], 0.0, 1.0)])
    try:
        out = solve_lp(LinearProgram(cost, a, row_lower, row_upper, np.zeros(2 * m), col_upper, 2 * m),
                       lp_algorithm=_LP2_ALGORITHM)
    except SolverError:  # pragma: no cover
        return None
    if out.x is None or not out.optimal:  # pragma: no cover
        return None
    x = np.zeros(c.num)
    x[cols] = np.clip(out.x[:m], 0.0, 1.0)
    return x


@register("las")
@dataclass(frozen=True)
class LeastAttainedServicePolicy(Policy):
    """Gavel's heterogeneity-agnostic max-min fairness (``MaxMinFairnessPolicy``), rounded by its priority rule."""

    def plan(self, state: RoundState) -> TimeSharePlan:
        """The fractional plan of the round (:func:`las_plan`), before the priority rule.

        ``plan.x`` is over ``state.model.columns`` (alone columns only); ``plan.objective`` is Gavel's
        objective ``min_j s_j share_j / w_j`` at ``plan.x``.
        """
        return las_plan(state.model)

    def place(self, state: RoundState) -> Placed:
        """The plan (:meth:`plan`), rounded by Gavel's priority rule and an agnostic fill pass."""
        model = state.model
        plan = self.plan(state)
        x = priority_round(model, state, plan.x, agnostic=True)
        return Placed(x, status_of(plan, x), f"max-min level {plan.bound:.6g}; {plan.message}")

