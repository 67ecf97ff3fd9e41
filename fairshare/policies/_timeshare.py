"""Helpers shared by the peer policies: max-min LPs over placement columns, integer rounds from time shares.

Max-min LP (:func:`max_min_plan`)
    Over the columns ``c`` of a :class:`~fairshare.formulation.RoundModel` that a policy allows (alone
    columns, and pair columns when it space-shares), with ``X_c`` the time fraction of the round that column
    ``c`` runs:

    maximise   ``v``
    subject to ``sum_{c ∋ j} X_c <= 1``                       (one job runs in one place at a time)
               ``sum_{c on g} size_c X_c <= C_g``              (capacity)
               ``k_j sum_{c ∋ j} p_{jc} X_c >= v``             (every job reaches level ``v``)
               ``0 <= X_c <= 1``

    with ``p_{jc}`` the *progress* of job ``j`` per unit of time in column ``c`` (:func:`column_progress`:
    its throughput there over a reference throughput of the job; by default the model's ``rho_a`` /
    ``rho_b``, progress in fair-share units) and a per-job scale ``k_j`` (default 1). ``gavel`` uses
    ``p_{jc} = T_{jc} / prop_j`` and ``k_j = s_j / w_j``; ``las`` ``p_{jc} = 1`` and the same ``k_j``;
    FTF's Newton steps use the same rows with other right-hand sides (:func:`solve_level_lp`). These are
    Gavel's constraints (Narayanan et al., OSDI'20, section 3.1) written over columns, so a co-located pair
    counts once against capacity and against the time of both of its jobs.

Efficiency refinement (:func:`efficiency_refine`)
    A max-min LP has many optima: only the bottleneck jobs are pinned at the optimal level. Among them, the
    refinement picks one that maximises total normalised throughput ``sum_c eff_c X_c`` subject to the same
    rows and ``k_j sum_{c ∋ j} p_{jc} X_c >= (1 - 1e-7) * level_j``. The slack keeps the LP feasible within
    HiGHS's tolerances; targets are compared at 1e-6 in the round below, so it does not reorder ties.
    (Gavel's optional water-filling, which raises the second-lowest level and so on, is not implemented; see
    docs/policies.md.)

Integer round from time shares (:func:`priority_round`)
    Gavel's round mechanism (OSDI'20, section 5): the priority of job ``j`` on type ``g`` is its target time
    fraction there divided by the fraction of its time on ``g`` so far,
    ``priority[j, g] = X[j, g] / (received[j, g] / (time - arrival_j))`` (``inf`` when it has a target but has
    received nothing, ``0`` without a target). Columns are taken in descending priority, ties by target
    ``X_c`` (descending, compared at 1e-6) then job index, whenever all of their jobs are still unplaced and
    their type has room. The state does not record time per co-located pair, so a column's priority is its
    job's priority on the column's type (the received time is split over the job's columns on that type in
    proportion to their targets), and a pair takes the smaller priority of its two jobs. A **fill** pass
    follows: every alone column, jobs in increasing attained service per unit of weight (ties by job index),
    each job's types by decreasing normalised throughput ``T[j, g] / Tmax_j`` (heterogeneity-agnostic
    policies: by decreasing GPU count ``C_g``), so no GPU stays idle while an unplaced job fits on it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fairshare.allocation import Status
from fairshare.errors import SolverError
from fairshare.formulation import RoundModel
from fairshare.methods.rounding import greedy_take
from fairshare.policies.base import RoundState, TimeSharePlan
from fairshare.solvers import LinearProgram, solve_lp

__all__ = [
    "LevelSolution", "Progress", "alone_column_index", "column_mask", "column_progress", "efficiency_refine",
    "fill_order", "job_levels", "max_min_plan", "place_alone", "priority_round", "received_fraction",
    "solve_level_lp", "status_of", "take_in_order",
]

_TOL = 1e-6  # a time fraction below this counts as 0
_REFINE_SLACK = 1e-7  # relative slack on the levels kept by the efficiency refinement


Progress = tuple[np.ndarray, np.ndarray]
"""Per-column progress of the two members of each column, ``(p_a, p_b)`` (``p_b`` is 0 on alone columns)."""


def column_mask(model: RoundModel, space_sharing: bool) -> np.ndarray:
    """Columns a policy may use: every alone column, and the pair columns when ``space_sharing``."""
    c = model.columns
    return np.ones(c.num, dtype=bool) if space_sharing else ~c.is_pair


def alone_column_index(model: RoundModel) -> np.ndarray:
    """``(N, G)`` int array: the alone column of job ``j`` on type ``g``, or -1 where ``j`` cannot run."""
    c, p = model.columns, model.problem
    idx = np.full((p.num_jobs, len(p.gpu_types)), -1, dtype=np.int64)
    k = np.arange(c.num_alone)
    idx[c.job_a[k], c.gpu[k]] = k
    return idx


def column_progress(model: RoundModel, reference: np.ndarray | None = None) -> Progress:
    """Progress per unit of time of each column's members: their throughput there over ``reference``.

    Parameters
    ----------
    model : RoundModel
    reference : array (N,), optional
        A positive reference throughput of every job (steps/s). ``None``: the fair throughput ``Tfair_j``,
        that is the model's own ``rho_a`` and ``rho_b``.

    Returns
    -------
    (p_a, p_b) : arrays (M,)
        ``T_{a c} / reference_a`` and ``T_{b c} / reference_b`` (0 for the missing member of an alone column).
    """
    if reference is None:
        return model.rho_a, model.rho_b
    c = model.columns
    ref = np.asarray(reference, dtype=np.float64)
    if c.num == 0:
        return np.zeros(0), np.zeros(0)
    pair = c.is_pair
    jb = np.where(pair, c.job_b, 0)
    return c.tput_a / ref[c.job_a], np.where(pair, c.tput_b / ref[jb], 0.0)


def job_levels(model: RoundModel, x: np.ndarray, progress: Progress | None = None,
               scale: np.ndarray | None = None) -> np.ndarray:
    """``k_j sum_{c ∋ j} p_{jc} x_c`` for every job: the left-hand side of the level rows (module doc)."""
    c, n = model.columns, model.problem.num_jobs
    pa, pb = column_progress(model) if progress is None else progress
    x = np.asarray(x, dtype=np.float64)
    level = np.bincount(c.job_a, weights=pa * x, minlength=n)
    pair = c.is_pair
    if pair.any():
        level += np.bincount(c.job_b[pair], weights=(pb * x)[pair], minlength=n)
    return level if scale is None else level * np.asarray(scale, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class LevelSolution:
    """Result of :func:`solve_level_lp`: column values ``x`` (M,), the scalar ``v`` and HiGHS's outcome."""

    x: np.ndarray
    v: float
    optimal: bool
    message: str


def solve_level_lp(model: RoundModel, usable: np.ndarray, *, rhs: np.ndarray, progress: Progress | None = None,
                   scale: np.ndarray | None = None, v_coef: np.ndarray | float = 0.0, v_cost: float = 0.0,
                   v_bounds: tuple[float, float] = (0.0, 0.0), x_cost: np.ndarray | None = None,
                   lp_algorithm: str = "dual") -> LevelSolution:
    """Solve the LP of the peer policies: columns ``X``, one scalar ``v``, time, capacity and level rows.

    ``max x_cost @ X + v_cost * v`` over the usable columns and ``v`` subject to the time and capacity rows of
    the module doc (:meth:`~fairshare.formulation.RoundModel.placement_rows`) and, for every job with a finite
    ``rhs_j``, ``scale_j * sum_{c ∋ j} p_{jc} X_c + v_coef_j * v >= rhs_j``.

    Every LP of the peer policies is of this form: the max-min LPs (``v`` the level, ``v_coef = -1``,
    ``rhs = 0``), FTF's Newton steps (``v = r``) and the efficiency refinement (no ``v``, ``rhs`` = the levels
    to keep).

    Parameters
    ----------
    model : RoundModel
    usable : bool array (M,)
        Columns that may be used (the others are left out of the LP and are 0 in the result).
    rhs : array (N,)
        Right-hand sides; ``-inf`` (or any non-finite value) leaves the job without a row.
    progress : (array (M,), array (M,)), optional
        ``p_{jc}`` of the columns' two members (:func:`column_progress`; default: the model's ``rho_a``,
        ``rho_b``).
    scale : array (N,), optional
        Row scaling of the progress terms (default 1).
    v_coef : float or array (N,)
        Coefficient of ``v`` in each job's row (0: ``v`` does not appear).
    v_cost : float
        Objective coefficient of ``v``.
    v_bounds : (float, float)
        Bounds of ``v``.
    x_cost : array (M,), optional
        Objective coefficients of the columns (default 0).
    lp_algorithm : str
        HiGHS LP method (see :func:`fairshare.solvers.solve_lp`).

    Returns
    -------
    LevelSolution
    """
    c, p = model.columns, model.problem
    n, g = p.num_jobs, len(p.gpu_types)
    cols = np.flatnonzero(usable)
    m = len(cols)
    prog_a, prog_b = column_progress(model) if progress is None else progress
    rhs = np.asarray(rhs, dtype=np.float64)
    scale = np.ones(n) if scale is None else np.asarray(scale, dtype=np.float64)
    v_coef = np.broadcast_to(np.asarray(v_coef, dtype=np.float64), (n,))
    ja, jb = c.job_a[cols], c.job_b[cols]
    pair = jb >= 0
    jbs = np.where(pair, jb, 0)
    fair_jobs = np.flatnonzero(np.isfinite(rhs))
    fair_row = np.full(n, -1, dtype=np.int64)
    fair_row[fair_jobs] = n + g + np.arange(len(fair_jobs))
    k = np.arange(m)
    a_f = fair_row[ja] >= 0
    b_f = pair & (fair_row[jbs] >= 0)
    v_rows = fair_jobs[v_coef[fair_jobs] != 0]
    place_rows, place_cols, place_vals = model.placement_rows(cols)  # job rows 0..N-1, capacity rows N..N+G-1
    rows = np.concatenate([place_rows, fair_row[ja[a_f]], fair_row[jb[b_f]], fair_row[v_rows]])
    colx = np.concatenate([place_cols, k[a_f], k[b_f], np.full(len(v_rows), m)])
    vals = np.concatenate([place_vals, (scale[ja] * prog_a[cols])[a_f], (scale[jbs] * prog_b[cols])[b_f],
                           v_coef[v_rows]])
    nrows = n + g + len(fair_jobs)
    a = sp.csc_matrix((vals, (rows, colx)), shape=(nrows, m + 1))
    row_lower = np.concatenate([np.full(n + g, -np.inf), rhs[fair_jobs]])
    row_upper = np.concatenate([np.ones(n), p.capacity.astype(np.float64), np.full(len(fair_jobs), np.inf)])
    cost = np.concatenate([np.zeros(m) if x_cost is None else np.asarray(x_cost, np.float64)[cols], [v_cost]])
    col_lower = np.concatenate([np.zeros(m), [v_bounds[0]]])
    col_upper = np.concatenate([np.ones(m), [v_bounds[1]]])
    out = solve_lp(LinearProgram(cost, a, row_lower, row_upper, col_lower, col_upper, m + 1),
                   lp_algorithm=lp_algorithm)
    x = np.zeros(c.num)
    if out.x is None:  # pragma: no cover - every LP built here is feasible (X = 0 or a known plan), bounded
        return LevelSolution(x, float("nan"), False, out.message)
    x[cols] = np.clip(out.x[:m], 0.0, 1.0)
    return LevelSolution(x, float(out.x[m]), out.optimal, out.message)


def max_min_plan(model: RoundModel, usable: np.ndarray, *, progress: Progress | None = None,
                 scale: np.ndarray | None = None, lp_algorithm: str = "ipm") -> TimeSharePlan:
    """The max-min LP of the module doc: the largest ``v`` with every job's level ``>= v``.

    ``job_values`` are the jobs' levels ``k_j sum_c p_{jc} X_c`` at ``x``, ``objective`` their minimum and
    ``bound`` the LP optimum. The interior-point method is the default: with equal floors the LP is massively
    degenerate, and interior point solves it faster than the dual simplex (docs/performance-notes.md).
    """
    n, m = model.problem.num_jobs, model.columns.num
    if n == 0 or not usable.any():
        return TimeSharePlan(np.zeros(m), np.zeros(n), 0.0, 0.0, True, 0, "empty")
    sol = solve_level_lp(model, usable, rhs=np.zeros(n), progress=progress, scale=scale, v_coef=-1.0, v_cost=1.0,
                         v_bounds=(0.0, np.inf), lp_algorithm=lp_algorithm)
    levels = job_levels(model, sol.x, progress, scale)
    return TimeSharePlan(sol.x, levels, float(levels.min()), sol.v, sol.optimal, 1, sol.message)


def efficiency_refine(model: RoundModel, usable: np.ndarray, levels: np.ndarray, *,
                      progress: Progress | None = None, scale: np.ndarray | None = None,
                      lp_algorithm: str = "ipm") -> LevelSolution | None:
    """The plan with the most normalised throughput among those that keep every job's level.

    Among plans giving every job a level ``k_j sum_c p_{jc} X_c`` of at least ``(1 - 1e-7) * levels_j``, one
    with the most normalised throughput ``sum_c eff_c X_c``. Returns ``None`` when HiGHS does not prove an
    optimum (the caller keeps its unrefined, feasible plan).
    """
    n = model.problem.num_jobs
    if n == 0 or not usable.any():
        return None
    rhs = np.where(np.isfinite(levels), levels * (1.0 - _REFINE_SLACK), -np.inf)
    rhs = np.where(rhs > 0, rhs, -np.inf)
    try:
        sol = solve_level_lp(model, usable, rhs=rhs, progress=progress, scale=scale, x_cost=model.eff,
                             lp_algorithm=lp_algorithm)
    except SolverError:  # pragma: no cover - the unrefined plan is feasible; HiGHS tolerances could disagree
        return None
    if not sol.optimal:  # pragma: no cover
        return None
    return sol


def received_fraction(state: RoundState) -> np.ndarray:
    """``(N, G)``: the fraction of its time since arrival each job ran on each type (0 without history)."""
    received = np.asarray(state.received, dtype=np.float64)
    age = float(state.time) - np.asarray(state.arrival, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(age[:, None] > 0, received / age[:, None], 0.0)
    return np.clip(np.nan_to_num(frac, nan=0.0, posinf=0.0), 0.0, None)


def fill_order(model: RoundModel, state: RoundState, *, agnostic: bool = False) -> np.ndarray:
    """Alone columns in fill order.

    Jobs by attained service per unit of weight (ties by index), each job's types by decreasing
    ``T[j, g] / Tmax_j`` (``agnostic=True``: by decreasing GPU count ``C_g``, never looking at throughputs),
    ties by type index.
    """
    c, p = model.columns, model.problem
    k = np.arange(c.num_alone)
    ja = c.job_a[k]
    service = np.asarray(state.attained_service, dtype=np.float64) / p.weight
    if agnostic:
        pref = p.capacity.astype(np.float64)[c.gpu[k]]
    else:
        pref = c.tput_a[k] / model.tmax[ja]
    return k[np.lexsort((c.gpu[k], -pref, ja, service[ja]))]


def take_in_order(model: RoundModel, order: np.ndarray) -> np.ndarray:
    """Take the columns in ``order`` whenever all their jobs are unplaced and their type has room.

    :func:`fairshare.methods.rounding.greedy_take` from the empty placement, with every column counted as
    worth taking (``greedy_take`` skips columns of value ``<= 0``, a rule of fairshare's objective that the
    peers do not have).

    Parameters
    ----------
    model : RoundModel
    order : int array
        Column indices, in the order they are tried (a column may appear more than once).

    Returns
    -------
    array (M,)
        0/1 column values (a feasible placement).
    """
    m = model.columns.num
    worth = dataclasses.replace(model, value=np.ones(m))
    return greedy_take(worth, np.asarray(order, dtype=np.int64), np.zeros(m))


def place_alone(model: RoundModel, order: np.ndarray, prefer: np.ndarray | None = None, *,
                backfill: bool = True) -> np.ndarray:
    """Place jobs alone, one after the other in ``order``, each on a type where it can run and that has room.

    Parameters
    ----------
    model : RoundModel
    order : int array
        Job indices, in placement order.
    prefer : array (N, G), optional
        Preference score of each (job, type); the best-scoring type with room is chosen (ties by type index).
        ``None``: the type with the most free GPUs at that moment (heterogeneity-agnostic).
    backfill : bool
        Skip a job that fits nowhere and go on (``False``: stop there, leaving the rest unplaced).

    Returns
    -------
    array (M,)
        0/1 column values (alone columns only).
    """
    c, p = model.columns, model.problem
    x = np.zeros(c.num)
    col = alone_column_index(model).tolist()
    cap = p.capacity.tolist()
    scale = p.capacity_scale.tolist()  # a fractional job takes its share class
    pref = None if prefer is None else np.asarray(prefer, dtype=np.float64).tolist()
    types = range(len(cap))
    for j in np.asarray(order, dtype=np.int64).tolist():
        cols, s = col[j], scale[j]
        best, best_key = -1, 0.0
        for g in types:
            if cols[g] < 0 or cap[g] < s:
                continue
            key = cap[g] if pref is None else pref[j][g]
            if best < 0 or key > best_key:
                best, best_key = g, key
        if best < 0:
            if not backfill:
                break
            continue
        cap[best] -= s
        x[cols[best]] = 1.0
    return x


def priority_round(model: RoundModel, state: RoundState, target: np.ndarray, *,
                   fill: bool = True, agnostic: bool = False) -> np.ndarray:
    """Gavel's priority rule from column time shares ``target`` to a 0/1 placement, then a fill pass.

    Parameters
    ----------
    model : RoundModel
    state : RoundState
        Supplies the history (``received``, ``arrival``, ``time``; ``attained_service`` for the fill order).
    target : array (M,)
        Time fraction of each column; columns with ``target <= 1e-6`` take no part in the priority pass.
    fill : bool
        Follow with the fill pass of the module doc.
    agnostic : bool
        Heterogeneity-agnostic fill order (:func:`fill_order`).

    Returns
    -------
    array (M,)
        0/1 column values (feasible).
    """
    c, p = model.columns, model.problem
    n, g = p.num_jobs, len(p.gpu_types)
    target = np.asarray(target, dtype=np.float64)
    pair = c.is_pair
    jb = np.where(pair, c.job_b, 0)
    per_type = np.zeros((n, g))
    np.add.at(per_type, (c.job_a, c.gpu), target)
    np.add.at(per_type, (c.job_b[pair], c.gpu[pair]), target[pair])
    frac = received_fraction(state)
    with np.errstate(divide="ignore", invalid="ignore"):
        served = per_type / np.where(frac > 0, frac, 1.0)
        prio_jg = np.where(per_type > _TOL, np.where(frac > 0, served, np.inf), 0.0)
    prio = prio_jg[c.job_a, c.gpu]
    prio = np.where(pair, np.minimum(prio, prio_jg[jb, c.gpu]), prio)
    active = np.flatnonzero((target > _TOL) & (prio > 0))
    tie = -np.round(target[active], 6)  # targets equal up to LP noise tie, and go by job index
    first = active[np.lexsort((c.gpu[active], c.job_b[active], c.job_a[active], tie, -prio[active]))]
    order = np.concatenate([first, fill_order(model, state, agnostic=agnostic)]) if fill else first
    return take_in_order(model, order)


def status_of(plan: TimeSharePlan, x: np.ndarray) -> Status:
    """``OPTIMAL`` only if the plan's LPs were proven optimal and the integer placement is that very plan."""
    if plan.optimal and np.allclose(plan.x, x, atol=1e-7):
        return Status.OPTIMAL
    return Status.HEURISTIC
