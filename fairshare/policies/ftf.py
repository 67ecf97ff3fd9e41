"""``ftf``: finish-time fairness (Themis, NSDI'20) in Gavel's heterogeneity-aware form (OSDI'20).

Sources: Mahajan et al., NSDI'20, "Themis: Fair and Efficient GPU Cluster Scheduling"; Narayanan et al.,
OSDI'20, section 4.2 ("minimize maximum finish-time fairness"). By default the plan is the optimum of Gavel's
own ``FinishTimeFairnessPolicyWithPerf`` at commit c4fa400 of github.com/stanford-futuredata/gavel, written
here from its definition and checked against the optima of Gavel's code in ``tests/policies/test_gavel_reference.py``.

Finish-time fairness of job ``j`` under time shares ``X`` (Gavel's definition, the default):

    ``rho_j(X) = (t_j + R_j / tau_j(X)) / (done_j / iso_j + R_j / iso_j)``,

the time from its arrival to its expected finish under ``X`` over the time the whole job would take at its
isolated throughput: ``t_j = time - arrival_j`` (time elapsed), ``R_j`` the remaining iterations, ``done_j``
the iterations done, ``tau_j(X) = sum_c T_{jc} X_c`` and ``iso_j`` Gavel's isolated throughput (an equal split
of the cluster, :func:`fairshare.policies.gavel_shares.isolated_throughput`; no weights, no water-filling).
``done_j / iso_j`` is Gavel's *cumulative isolated time*: how long the work done so far would have taken at
the isolated share, so a job that was starved (``done_j`` small for its age) is owed more. Weights do not
enter. With no history (``t_j = done_j = 0``) ``rho_j = iso_j / tau_j``.

Options that depart from Gavel (fairshare's earlier adaptation: ``normalization="water-filled",
history="elapsed"``)
    ``normalization="water-filled"`` measures against the water-filled fair throughput ``Tfair_j``
    (``model.fair.fair_throughput``) instead of ``iso_j``; ``history="elapsed"`` counts the past as the elapsed
    time ``t_j`` instead of ``done_j / iso_j``, so that ``rho_j = (t_j + R_j / tau_j) / (t_j + R_j / ref_j)``
    and a starved job is not compensated.

With the reference throughput ``ref_j`` (``iso_j`` or ``Tfair_j``), ``u_j = tau_j / ref_j``,
``a_j = t_j ref_j / R_j`` and ``c_j = past_j ref_j / R_j`` (``past_j`` = ``done_j / ref_j`` or ``t_j``; both
0 for a job with no history or unknown remaining work), every definition reads

    ``rho_j = (a_j + 1 / u_j) / (c_j + 1)``   (:class:`FtfTerms`).

Problem
    minimise ``max_j rho_j`` over ``X`` subject to Gavel's constraints (one placement at a time per job,
    capacity; pair columns with ``space_sharing=True``). The reference plan (every ``u_j = 1``: Gavel's
    isolated plan, or the fair share) is feasible, so the optimum is at most ``max_j (a_j + 1) / (c_j + 1)``.
Solution
    ``rho_j <= r`` is ``u_j >= b_j(r) = 1 / (r (c_j + 1) - a_j)``, convex and decreasing in ``r``. Newton's
    method by tangent LPs: at the current upper bound ``r_k`` (``r_0`` = the reference plan's) replace ``b_j``
    by its tangent, which lies below it, and solve the LP ``min r: u_j >= b_j(r_k) + b_j'(r_k) (r - r_k)``
    (rows divided by ``-b_j'(r_k)`` so that ``r`` has coefficient 1;
    :func:`fairshare.policies._timeshare.solve_level_lp`). Its optimum is a lower bound on ``r*`` (a
    relaxation) and its plan ``X_k`` keeps every ``u_j >= b_j(r_k)``, so ``r_{k+1} = max_j rho_j(X_k) <= r_k``
    is the next upper bound. Stop when the bounds are within ``tol`` (relative; default 1e-6) or after
    ``max_solves`` LPs; in measurements two LPs closed the gap to about 1e-6 and a third to 1e-12. With no
    history (every ``a_j = c_j = 0``) ``rho_j = 1 / u_j`` and the problem is a max-min LP, solved once,
    exactly. Gavel solves the same convex program in one go with ``cvxpy``; the LPs keep the solve inside
    :func:`fairshare.solvers.solve_lp`. The best plan is then refined (``refine=True``) to the most normalised
    throughput among the plans with every ``rho_j <= r`` (second-stage LP, as in ``gavel``; fairshare's
    choice among the optima).
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
from fairshare.errors import InvalidInputError
from fairshare.formulation import RoundModel
from fairshare.policies._timeshare import (
    Progress,
    column_mask,
    column_progress,
    efficiency_refine,
    max_min_plan,
    priority_round,
    solve_level_lp,
)
from fairshare.policies.base import Placed, Policy, RoundState, TimeSharePlan, register
from fairshare.policies.gavel_shares import isolated_throughput

__all__ = ["FTF_HISTORIES", "FTF_NORMALIZATIONS", "FinishTimeFairnessPolicy", "FtfTerms", "ftf_plan", "ftf_rho",
           "ftf_terms"]

FTF_NORMALIZATIONS = ("isolated", "water-filled")
"""Values of ``normalization``: Gavel's isolated throughput (default), fairshare's water-filled fair share."""
FTF_HISTORIES = ("isolated-time", "elapsed")
"""Values of ``history``: the past as Gavel's cumulative isolated time (default), or as the elapsed time."""


@dataclass(frozen=True, slots=True)
class FtfTerms:
    """Per-job terms of ``rho_j = (a_j + 1 / u_j) / (c_j + 1)`` with ``u_j = tau_j / reference_j`` (module doc).

    Attributes
    ----------
    reference : array (N,)
        ``ref_j``, the throughput finish times are measured against (steps/s).
    elapsed : array (N,)
        ``a_j = t_j ref_j / R_j``: time since arrival over the time the remaining work takes at ``ref_j``
        (0 without history or with unknown remaining work; ``inf`` when no work remains: no constraint).
    past : array (N,)
        ``c_j = past_j ref_j / R_j``: the past counted in the isolated finish time, over the same time
        (``inf`` exactly where ``elapsed`` is).
    """

    reference: np.ndarray
    elapsed: np.ndarray
    past: np.ndarray

    @property
    def has_history(self) -> bool:
        """Some job with a constraint has a positive ``a_j`` or ``c_j``."""
        finite = np.isfinite(self.elapsed)
        return bool(finite.any() and ((self.elapsed[finite] > 0) | (self.past[finite] > 0)).any())


def ftf_terms(state: RoundState, *, normalization: str = "isolated", history: str = "isolated-time") -> FtfTerms:
    """The terms of every job's finish-time fairness in ``state`` (module doc).

    Parameters
    ----------
    state : RoundState
        Supplies ``time``, ``arrival``, ``done_iterations`` and ``remaining_iterations``.
    normalization : {"isolated", "water-filled"}
        ``ref_j``: Gavel's isolated throughput ``iso_j`` or the fair throughput ``Tfair_j``.
    history : {"isolated-time", "elapsed"}
        ``past_j``: ``done_j / ref_j`` (Gavel's cumulative isolated time) or the elapsed time ``t_j``.

    Raises
    ------
    InvalidInputError
        For an unknown ``normalization`` or ``history``.
    """
    if normalization not in FTF_NORMALIZATIONS:
        raise InvalidInputError("normalization", normalization, f"must be one of {', '.join(FTF_NORMALIZATIONS)}")
    if history not in FTF_HISTORIES:
        raise InvalidInputError("history", history, f"must be one of {', '.join(FTF_HISTORIES)}")
    model = state.model
    if normalization == "isolated":
        ref = isolated_throughput(model.problem)
    else:
        ref = np.asarray(model.fair.fair_throughput, dtype=np.float64)
    elapsed = np.maximum(0.0, float(state.time) - np.asarray(state.arrival, dtype=np.float64))
    remaining = np.asarray(state.remaining_iterations, dtype=np.float64)
    none_left, unknown = remaining <= 0, np.isinf(remaining)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = elapsed * ref / remaining
        if history == "elapsed":
            c = a
        else:
            c = np.asarray(state.done_iterations, dtype=np.float64) / remaining
    a = np.where(none_left, np.inf, np.where(unknown, 0.0, a))
    c = np.where(none_left, np.inf, np.where(unknown, 0.0, c))
    return FtfTerms(ref, a, c)


def ftf_rho(terms: FtfTerms, tau: np.ndarray) -> np.ndarray:
    """``rho_j = (a_j + 1 / u_j) / (c_j + 1)`` for job throughputs ``tau`` (1 for jobs with no work left).

    Examples
    --------
    >>> t = FtfTerms(np.array([0.5, 0.5]), np.array([1.0, 1.0]), np.array([0.0, 1.0]))
    >>> ftf_rho(t, np.array([0.5, 0.25])).tolist()  # a starved job, and one that kept pace before
    [2.0, 1.5]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.asarray(tau, dtype=np.float64) / terms.reference
        return _rho(terms, u)


def _rho(terms: FtfTerms, u: np.ndarray) -> np.ndarray:
    a, c = terms.elapsed, terms.past
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (a + 1.0 / u) / (c + 1.0)
    return np.where(np.isinf(a), 1.0, np.nan_to_num(r, nan=np.inf))


def _floor(terms: FtfTerms, r: float) -> np.ndarray:
    """``b_j(r) = 1 / (r (c_j + 1) - a_j)``, the normalised throughput that gives ``rho_j = r``.

    ``-inf`` (no constraint) for jobs without remaining work.
    """
    finite = np.isfinite(terms.elapsed)
    af = np.where(finite, terms.elapsed, 0.0)
    cf = np.where(finite, terms.past, 0.0)
    return np.where(finite, 1.0 / (r * (cf + 1.0) - af), -np.inf)


def ftf_plan(model: RoundModel, terms: FtfTerms, *, space_sharing: bool = False, refine: bool = True,
             tol: float = 1e-6, max_solves: int = 8) -> TimeSharePlan:
    """Minimise the largest finish-time fairness ``rho_j`` over time shares (module doc).

    Parameters
    ----------
    model : RoundModel
    terms : FtfTerms
        :func:`ftf_terms` of the round.
    space_sharing : bool
        Also plan co-located pairs.
    refine : bool
        Most normalised throughput among plans that keep every ``rho_j`` at most the optimum found.
    tol : float
        Relative gap between the bounds on ``max_j rho_j`` at which the Newton iteration stops.
    max_solves : int
        Most Newton LPs.

    Returns
    -------
    TimeSharePlan
        ``job_values``: ``rho_j`` at ``x``; ``objective``: their maximum (over jobs with work left);
        ``bound``: the best lower bound on the optimum.

    Examples
    --------
    Gavel's two-job example: one GPU, both jobs 3,600 s old with 3,600 iterations left at 1 it/s; the first
    has done nothing, the second 3,600 iterations. FTF gives the starved job ``sqrt(3) - 1`` of the GPU:

    >>> from fairshare.problem import RoundProblem
    >>> from fairshare.formulation import build_model
    >>> p = RoundProblem.from_dict({"gpus": {"A": 1}, "jobs": [
    ...     {"id": "starved", "scale": 1, "throughput": {"A": 1.0}},
    ...     {"id": "served", "scale": 1, "throughput": {"A": 1.0}}]})
    >>> model = build_model(p)
    >>> state = RoundState(model, 3600.0, 360.0, np.zeros(2), np.zeros(2), np.zeros((2, 1)),
    ...                    np.array([0.0, 3600.0]), np.array([3600.0, 3600.0]))
    >>> plan = ftf_plan(model, ftf_terms(state))
    >>> plan.x.round(4).tolist(), round(plan.objective, 4)
    ([0.7321, 0.2679], 1.183)
    """
    n = model.problem.num_jobs
    usable = column_mask(model, space_sharing)
    progress = column_progress(model, terms.reference)
    finite = np.isfinite(terms.elapsed)
    history = terms.has_history
    if n == 0 or not history:
        # no history: rho_j = 1 / u_j, and minimising the largest rho is a max-min LP (exact, one LP)
        plan = max_min_plan(model, usable, progress=progress)
        x, solves, optimal = plan.x, plan.solves, plan.optimal
        rho = ftf_rho(terms, model.job_throughput(x)) if n else np.zeros(0)
        upper = lower = float(rho[finite].max()) if finite.any() else 1.0
        if plan.solves and plan.bound > 0:
            lower = min(upper, 1.0 / plan.bound)
    else:
        x, rho, upper, lower, solves, optimal = _newton(model, terms, usable, progress, tol, max_solves)
    if refine and n:
        # equal floors (no history) make the LP degenerate: interior point; otherwise dual simplex is faster
        algorithm = "dual" if history else "ipm"
        better = efficiency_refine(model, usable, _floor(terms, upper), progress=progress, lp_algorithm=algorithm)
        solves += 1
        if better is not None:
            x = better.x
            rho = ftf_rho(terms, model.job_throughput(x))
    objective = float(rho[finite].max()) if n and finite.any() else 0.0
    return TimeSharePlan(x, rho, objective, lower, optimal and upper - lower <= tol * upper, solves,
                         f"max rho in [{lower:.6g}, {upper:.6g}] after {solves} LPs")


def _newton(model: RoundModel, terms: FtfTerms, usable: np.ndarray, progress: Progress, tol: float,
            max_solves: int) -> tuple[np.ndarray, np.ndarray, float, float, int, bool]:
    """Newton's method on ``min r: u_j >= b_j(r)`` by tangent LPs (module doc).

    Returns the best plan, its ``rho``, the bounds, the number of LPs and whether every LP was optimal.
    """
    finite = np.isfinite(terms.elapsed)
    af = np.where(finite, terms.elapsed, 0.0)
    cf = np.where(finite, terms.past, 0.0)
    # the reference plan (every u_j = 1) is feasible: rho_j = (a_j + 1) / (c_j + 1)
    upper = float(((af[finite] + 1.0) / (cf[finite] + 1.0)).max())
    lower = float((af[finite] / (cf[finite] + 1.0)).max())  # rho_j > a_j / (c_j + 1) for any plan
    best_x: np.ndarray | None = None
    best_rho: np.ndarray | None = None
    solves = 0
    optimal = True
    r = upper
    while solves < max_solves:
        b = _floor(terms, r)
        slope = (cf + 1.0) * np.where(finite, b, 0.0) ** 2  # -b_j'(r) > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            rhs = np.where(finite, (b + slope * r) / slope, -np.inf)
        # tangent of u_j >= b_j(r') at r, divided by its slope:  u_j / slope_j + r' >= b_j / slope_j + r
        sol = solve_level_lp(model, usable, rhs=rhs, progress=progress, scale=np.where(finite, 1.0 / slope, 0.0),
                             v_coef=1.0, v_cost=-1.0, v_bounds=(0.0, np.inf), lp_algorithm="dual")
        solves += 1
        optimal = optimal and sol.optimal
        rho = ftf_rho(terms, model.job_throughput(sol.x))
        hi = float(rho[finite].max())
        if sol.optimal:
            lower = max(lower, min(sol.v, hi))
        if best_x is None or hi < upper:
            best_x, best_rho, upper = sol.x, rho, min(upper, hi)
        if upper - lower <= tol * upper or not sol.optimal:
            break
        r = upper
    assert best_x is not None and best_rho is not None
    return best_x, best_rho, upper, lower, solves, optimal


@register("ftf")
@dataclass(frozen=True)
class FinishTimeFairnessPolicy(Policy):
    """Finish-time fairness in Gavel's form (``FinishTimeFairnessPolicyWithPerf``), with Gavel's priority rounds.

    Parameters
    ----------
    space_sharing : bool
        Also plan co-located pairs.
    normalization : {"isolated", "water-filled"}
        Reference throughput: Gavel's isolated throughput ``iso_j`` (default) or fairshare's water-filled
        ``Tfair_j``.
    history : {"isolated-time", "elapsed"}
        The past in the isolated finish time: Gavel's cumulative isolated time ``done_j / ref_j`` (default) or
        the elapsed time ``t_j``. ``normalization="water-filled", history="elapsed", tol=1e-4`` is the
        behaviour before 0.2.
    refine : bool
        Second-stage LP: most normalised throughput among the FTF-optimal plans.
    tol : float
        Relative tolerance on ``max_j rho_j``.
    max_solves : int
        Most LPs of the iteration (each is one max-min LP).
    """

    space_sharing: bool = False
    normalization: str = "isolated"
    history: str = "isolated-time"
    refine: bool = True
    tol: float = 1e-6
    max_solves: int = 8

    def __post_init__(self) -> None:
        """Check ``normalization`` and ``history``."""
        if self.normalization not in FTF_NORMALIZATIONS:
            raise InvalidInputError("normalization", self.normalization,
                                    f"must be one of {', '.join(FTF_NORMALIZATIONS)}")
        if self.history not in FTF_HISTORIES:
            raise InvalidInputError("history", self.history, f"must be one of {', '.join(FTF_HISTORIES)}")

    def plan(self, state: RoundState) -> TimeSharePlan:
        """The fractional FTF plan of the round (:func:`ftf_plan`), before the priority rule.

        ``plan.x`` is over ``state.model.columns``; with the default options ``plan.objective`` is Gavel's
        objective ``max_j rho_j`` at ``plan.x``.
        """
        terms = ftf_terms(state, normalization=self.normalization, history=self.history)
        return ftf_plan(state.model, terms, space_sharing=self.space_sharing, refine=self.refine, tol=self.tol,
                        max_solves=self.max_solves)

    def place(self, state: RoundState) -> Placed:
        """The plan (:meth:`plan`), rounded by Gavel's priority rule and a fill pass."""
        plan = self.plan(state)
        return Placed(priority_round(state.model, state, plan.x), Status.HEURISTIC, plan.message)
