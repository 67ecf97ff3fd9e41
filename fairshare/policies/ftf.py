"""``ftf``: finish-time fairness (Themis, NSDI'20) in Gavel's heterogeneity-aware form (OSDI'20).

Sources: Mahajan et al., NSDI'20, "Themis: Fair and Efficient GPU Cluster Scheduling"; Narayanan et al.,
OSDI'20, section 4.2 ("minimize maximum finish-time fairness").

Finish-time fairness of job ``j`` under time shares ``X`` is the ratio of its expected finish time under ``X``
to the one under its fair (isolated) share, both counted from its arrival:

    ``rho_j(X) = (t_j + R_j / tau_j(X)) / (t_j + R_j / Tfair_j)``,

with ``t_j = time - arrival_j`` (time elapsed), ``R_j`` the remaining iterations,
``tau_j(X) = sum_c T_{jc} X_c`` and ``Tfair_j`` the fair throughput (``model.fair.throughput``, standing for
Gavel's isolated equal-share throughput). With the normalised throughput ``u_j = tau_j / Tfair_j`` and
``a_j = t_j Tfair_j / R_j`` (elapsed time over the isolated time still needed; 0 for a job with no history or
unknown remaining work)

    ``rho_j = (a_j + 1 / u_j) / (a_j + 1)``.

Problem
    minimise ``max_j rho_j`` over ``X`` subject to Gavel's constraints (one placement at a time per job,
    capacity; pair columns with ``space_sharing=True``). The fair share gives ``rho_j = 1`` for every job, so
    the optimum ``r* <= 1``.
Solution
    ``rho_j <= r`` is ``u_j >= b_j(r) = 1 / (r (a_j + 1) - a_j)``, convex and decreasing in ``r``. Newton's
    method by tangent LPs: at the current upper bound ``r_k`` (``r_0 = 1``) replace ``b_j`` by its tangent,
    which lies below it, and solve the LP ``min r: u_j >= b_j(r_k) + b_j'(r_k) (r - r_k)`` (rows divided by
    ``-b_j'(r_k)`` so that ``r`` has coefficient 1; :func:`fairshare.policies._timeshare.solve_level_lp`). Its
    optimum is a lower bound on ``r*`` (a relaxation) and its plan ``X_k`` keeps every ``u_j >= b_j(r_k)``, so
    ``r_{k+1} = max_j rho_j(X_k) <= r_k`` is the next upper bound. Stop when the bounds are within ``tol``
    (relative; default 1e-4) or after ``max_solves`` LPs; in measurements two LPs closed the gap to about 1e-6
    and a third to 1e-12. With no history (every ``a_j = 0``) ``rho_j = 1 / u_j`` and the problem is Gavel's
    max-min LP, solved once, exactly. Gavel solves the same convex program in one go with ``cvxpy``; the LPs
    keep the solve inside :func:`fairshare.solvers.solve_lp`. The best plan is then refined (``refine=True``) to
    the most normalised throughput among the plans with every ``rho_j <= r`` (second-stage LP, as in
    ``gavel``).
Round
    Gavel's priority rule and fill pass, shared with ``gavel``
    (:func:`fairshare.policies._timeshare.priority_round`).
Status
    ``heuristic``: the FTF optimum is reached to a tolerance, never proven exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairshare.allocation import Status
from fairshare.formulation import RoundModel
from fairshare.policies._timeshare import column_mask, efficiency_refine, max_min_plan, priority_round, solve_level_lp
from fairshare.policies.base import Placed, Policy, RoundState, register

__all__ = ["FinishTimeFairnessPolicy", "FtfPlan", "elapsed_ratio", "ftf_plan"]


@dataclass(frozen=True, slots=True)
class FtfPlan:
    """Result of :func:`ftf_plan`.

    Attributes
    ----------
    x : array (M,)
        Time fractions of the columns.
    rho : array (N,)
        Finish-time fairness of each job under ``x``.
    upper, lower : float
        Bounds on the optimal ``max_j rho_j`` (``upper = max(rho)`` before refinement).
    solves : int
        LPs solved.
    """

    x: np.ndarray
    rho: np.ndarray
    upper: float
    lower: float
    solves: int


def elapsed_ratio(state: RoundState) -> np.ndarray:
    """``a_j = t_j Tfair_j / R_j``: time since arrival over the isolated time the remaining work needs.

    0 when nothing has elapsed or the remaining work is unknown (``inf``); ``inf`` when no work remains.
    """
    fair = np.asarray(state.model.fair.throughput, dtype=np.float64)
    elapsed = np.maximum(0.0, float(state.time) - np.asarray(state.arrival, dtype=np.float64))
    remaining = np.asarray(state.remaining_iterations, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = elapsed * fair / remaining
    return np.where(remaining <= 0, np.inf, np.where(np.isinf(remaining), 0.0, a))


def _progress(model: RoundModel, x: np.ndarray) -> np.ndarray:
    return model.job_throughput(x) / model.fair.throughput


def _rho(a: np.ndarray, u: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (a + 1.0 / u) / (a + 1.0)
    return np.where(np.isinf(a), 1.0, np.nan_to_num(r, nan=np.inf))


def _floor(a: np.ndarray, r: float) -> np.ndarray:
    """``b_j(r) = 1 / (r (a_j + 1) - a_j)``, the normalised throughput that gives ``rho_j = r``.

    ``-inf`` (no constraint) for jobs without remaining work.
    """
    finite = np.isfinite(a)
    af = np.where(finite, a, 0.0)
    return np.where(finite, 1.0 / (r * (af + 1.0) - af), -np.inf)


def ftf_plan(model: RoundModel, a: np.ndarray, *, space_sharing: bool = False, refine: bool = True,
             tol: float = 1e-4, max_solves: int = 8) -> FtfPlan:
    """Minimise the largest finish-time fairness ``rho_j`` over time shares (module doc).

    Parameters
    ----------
    model : RoundModel
    a : array (N,)
        :func:`elapsed_ratio` of each job.
    space_sharing : bool
        Also plan co-located pairs.
    refine : bool
        Most normalised throughput among plans that keep every ``rho_j`` at most the optimum found.
    tol : float
        Relative gap between the bounds on ``max_j rho_j`` at which the Newton iteration stops.
    max_solves : int
        Most Newton LPs.

    Examples
    --------
    >>> from fairshare.problem import RoundProblem
    >>> from fairshare.formulation import build_model
    >>> p = RoundProblem.from_dict({"gpus": {"A": 1}, "jobs": [
    ...     {"id": "x", "scale": 1, "throughput": {"A": 2.0}},
    ...     {"id": "y", "scale": 1, "throughput": {"A": 4.0}}]})
    >>> plan = ftf_plan(build_model(p), np.array([3.0, 0.0]))
    >>> round(plan.upper, 6), plan.x.round(6).tolist()
    (1.0, [0.5, 0.5])
    """
    n = model.problem.num_jobs
    usable = column_mask(model, space_sharing)
    a = np.asarray(a, dtype=np.float64)
    finite = np.isfinite(a)
    history = bool(finite.any() and (a[finite] > 0).any())
    if n == 0 or not history:
        # no history: rho_j = 1 / u_j, and minimising the largest rho is Gavel's max-min LP (exact, one LP)
        plan = max_min_plan(model, usable)
        x, solves = plan.x, plan.solves
        rho = _rho(a, _progress(model, x)) if n else np.zeros(0)
        upper = lower = float(rho[finite].max()) if finite.any() else 1.0
    else:
        x, rho, upper, lower, solves = _newton(model, a, usable, tol, max_solves)
    if refine and n:
        # equal floors (no history) make the LP degenerate: interior point; otherwise dual simplex is faster
        algorithm = "dual" if history else "ipm"
        better = efficiency_refine(model, usable, _floor(a, upper), lp_algorithm=algorithm)
        solves += 1
        if better is not None:
            x = better.x
            rho = _rho(a, _progress(model, x))
    return FtfPlan(x, rho, upper, lower, solves)


def _newton(model: RoundModel, a: np.ndarray, usable: np.ndarray, tol: float,
            max_solves: int) -> tuple[np.ndarray, np.ndarray, float, float, int]:
    """Newton's method on ``min r: u_j >= b_j(r)`` by tangent LPs (module doc).

    Returns the best plan, its ``rho``, the bounds and the number of LPs.
    """
    finite = np.isfinite(a)
    af = np.where(finite, a, 0.0)
    upper = 1.0  # the fair share itself has rho_j = 1 for every job
    lower = float((af[finite] / (af[finite] + 1.0)).max())  # rho_j > a_j / (a_j + 1) for any plan
    best_x: np.ndarray | None = None
    best_rho: np.ndarray | None = None
    solves = 0
    r = upper
    while solves < max_solves:
        b = _floor(a, r)
        slope = (af + 1.0) * np.where(finite, b, 0.0) ** 2  # -b_j'(r) > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            rhs = np.where(finite, (b + slope * r) / slope, -np.inf)
        # tangent of u_j >= b_j(r') at r, divided by its slope:  u_j / slope_j + r' >= b_j / slope_j + r
        sol = solve_level_lp(model, usable, rhs=rhs, scale=np.where(finite, 1.0 / slope, 0.0), v_coef=1.0,
                             v_cost=-1.0, v_bounds=(0.0, np.inf), lp_algorithm="dual")
        solves += 1
        rho = _rho(a, _progress(model, sol.x))
        hi = float(rho[finite].max())
        if sol.optimal:
            lower = max(lower, min(sol.v, hi))
        if best_x is None or hi < upper:
            best_x, best_rho, upper = sol.x, rho, min(upper, hi)
        if upper - lower <= tol * upper or not sol.optimal:
            break
        r = upper
    assert best_x is not None and best_rho is not None
    return best_x, best_rho, upper, lower, solves


@register("ftf")
@dataclass(frozen=True)
class FinishTimeFairnessPolicy(Policy):
    """Finish-time fairness (Themis) in Gavel's heterogeneity-aware LP form, with Gavel's priority rounds.

    Parameters
    ----------
    space_sharing : bool
        Also plan co-located pairs.
    refine : bool
        Second-stage LP: most normalised throughput among the FTF-optimal plans.
    tol : float
        Relative tolerance on ``max_j rho_j``.
    max_solves : int
        Most LPs of the iteration (each is one max-min LP).
    """

    space_sharing: bool = False
    refine: bool = True
    tol: float = 1e-4
    max_solves: int = 8

    def place(self, state: RoundState) -> Placed:
        """The FTF plan (:func:`ftf_plan`), rounded by Gavel's priority rule."""
        model = state.model
        plan = ftf_plan(model, elapsed_ratio(state), space_sharing=self.space_sharing, refine=self.refine,
                        tol=self.tol, max_solves=self.max_solves)
        return Placed(priority_round(model, state, plan.x), Status.HEURISTIC,
                      f"max rho in [{plan.lower:.6g}, {plan.upper:.6g}] after {plan.solves} LPs")
