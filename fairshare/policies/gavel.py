"""``gavel`` and ``gavel-ss``: Gavel's heterogeneity-aware max-min fairness, rounds by Gavel's priority rule.

Source: Narayanan et al., OSDI'20, "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", sections 3.1 (allocations as time fractions), 4.1 (max-min fairness) and 5 (round-based
mechanism). By default the plan is the optimum of Gavel's own ``MaxMinFairnessPolicyWithPerf`` (with
``space_sharing=True``, ``MaxMinFairnessPolicyWithPacking``) at commit c4fa400 of
github.com/stanford-futuredata/gavel, written here from its definition and checked against the optima of
Gavel's code in ``tests/policies/test_gavel_reference.py``.

Variables
    ``X_c in [0, 1]``: time fraction of the round that placement column ``c`` runs; the columns are every
    (job, type) alone column and, with ``space_sharing=True``, every co-location candidate (Gavel's "job
    combinations"; fairshare pairs only jobs of equal gang size); ``v``: the max-min level.
Constraints (Gavel's)
    ``sum_{c ∋ j} X_c <= 1`` for every job (a pair counts for both of its jobs),
    ``sum_{c on g} s_j X_c <= C_g`` for every type (a pair occupies its gang once).
Objective (``normalization="proportional"``, the default: Gavel's)
    maximise ``min_j s_j tau_j / (w_j prop_j)``, with ``tau_j = sum_{c ∋ j} T_{jc} X_c`` the job's
    throughput under the plan, ``s_j`` its gang size, ``w_j`` its weight and ``prop_j = sum_g (C_g / C)
    T[j, g]`` its proportional throughput (:func:`fairshare.policies.gavel_shares.proportional_throughput`):
    the row of job ``j`` is ``(s_j / w_j) sum_{c ∋ j} (T_{jc} / prop_j) X_c >= v``. No fair share and no
    water-filling enter; ``plan.objective`` is Gavel's objective value.
Option ``normalization="water-filled"`` (fairshare's earlier adaptation)
    maximise ``min_j tau_j / Tfair_j`` with ``Tfair_j`` the model's water-filled fair throughput
    (``model.fair.fair_throughput``, spec round-problem.md section 2), in which gang sizes cap the entitlement
    and weights enter through the water level. The two objectives have the same optima exactly when the
    water-filling caps no job's entitlement unevenly (``e_j / w_j`` equal for every job, so that
    ``Tfair_j`` is proportional to ``w_j prop_j / s_j``); with gangs capped by the water level or with
    unequal weights they differ.
Refinement (``refine=True``, default; fairshare's choice, not Gavel's)
    A max-min LP pins only its bottleneck jobs. A second LP keeps every job's level at ``(1 - 1e-7) v*``
    and maximises total normalised throughput ``sum_c eff_c X_c``, so that capacity that max-min leaves free
    goes where it is most productive (Gavel's solver, ECOS, returns an interior optimum instead; Gavel's
    separate water-filling policy, which raises the second-lowest level and so on, is not implemented).
Round
    Gavel's priority rule turns the time fractions into this round's integer placement:
    ``priority[j, g] = X[j, g] / (received[j, g] / (time - arrival_j))`` (``inf`` for a target not yet
    served), columns taken in descending priority (ties by ``X_c``, then job index) where capacity allows,
    then a fill pass over every alone column (:func:`fairshare.policies._timeshare.priority_round`).
Status
    ``optimal`` only when HiGHS proved the LP(s) optimal and the plan is itself integral and placed as is;
    otherwise ``heuristic``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairshare.errors import InvalidInputError
from fairshare.formulation import RoundModel
from fairshare.policies._timeshare import (
    Progress,
    column_mask,
    column_progress,
    efficiency_refine,
    job_levels,
    max_min_plan,
    priority_round,
    status_of,
)
from fairshare.policies.base import Placed, Policy, RoundState, TimeSharePlan, register
from fairshare.policies.gavel_shares import proportional_throughput

__all__ = ["GAVEL_NORMALIZATIONS", "GavelPolicy", "GavelSpaceSharingPolicy", "gavel_plan"]

GAVEL_NORMALIZATIONS = ("proportional", "water-filled")
"""Values of ``normalization``: Gavel's proportional share (default), fairshare's water-filled fair share."""


def _rows(model: RoundModel, normalization: str) -> tuple[Progress, np.ndarray | None]:
    """Progress per column and per-job scale of the level rows for ``normalization`` (module doc)."""
    if normalization == "water-filled":
        return column_progress(model), None
    p = model.problem
    scale = p.scale.astype(np.float64) / p.weight
    return column_progress(model, proportional_throughput(p)), scale


def gavel_plan(model: RoundModel, *, space_sharing: bool = False, normalization: str = "proportional",
               refine: bool = True) -> TimeSharePlan:
    """Gavel's max-min time-share plan of a round (the LP of the module doc, then the refinement).

    Returns
    -------
    TimeSharePlan
        ``job_values``: each job's level (``s_j tau_j / (w_j prop_j)``, or ``tau_j / Tfair_j`` with
        ``normalization="water-filled"``); ``objective``: their minimum at ``x``; ``bound``: the max-min LP's
        optimum ``v*``.

    Examples
    --------
    Two jobs share one GPU; Gavel's level is ``s_j tau_j / (w_j prop_j)`` with ``prop = T``, so each gets half
    the round and level 0.5; the water-filled fair throughput is already half of ``T``, so its level is 1:

    >>> from fairshare.problem import RoundProblem
    >>> from fairshare.formulation import build_model
    >>> p = RoundProblem.from_dict({"gpus": {"A": 1}, "jobs": [
    ...     {"id": "x", "scale": 1, "throughput": {"A": 2.0}},
    ...     {"id": "y", "scale": 1, "throughput": {"A": 4.0}}]})
    >>> plan = gavel_plan(build_model(p))
    >>> round(plan.objective, 6), plan.x.round(6).tolist()
    (0.5, [0.5, 0.5])
    >>> round(gavel_plan(build_model(p), normalization="water-filled").bound, 6)
    1.0
    """
    if normalization not in GAVEL_NORMALIZATIONS:
        raise InvalidInputError("normalization", normalization, f"must be one of {', '.join(GAVEL_NORMALIZATIONS)}")
    usable = column_mask(model, space_sharing)
    progress, scale = _rows(model, normalization)
    plan = max_min_plan(model, usable, progress=progress, scale=scale)
    if not refine or plan.solves == 0:
        return plan
    better = efficiency_refine(model, usable, np.full(model.problem.num_jobs, plan.bound), progress=progress,
                               scale=scale)
    if better is None:  # pragma: no cover
        return plan
    levels = job_levels(model, better.x, progress, scale)
    return TimeSharePlan(better.x, levels, float(levels.min()), plan.bound, plan.optimal and better.optimal, 2,
                         better.message)


@register("gavel")
@dataclass(frozen=True)
class GavelPolicy(Policy):
    """Gavel's heterogeneity-aware max-min fairness (``MaxMinFairnessPolicyWithPerf``), rounded by its priority rule.

    Parameters
    ----------
    space_sharing : bool
        Also plan co-located pairs (Gavel's ``MaxMinFairnessPolicyWithPacking``; registered as ``gavel-ss``).
    normalization : {"proportional", "water-filled"}
        What each job's throughput is measured against: Gavel's ``prop_j`` scaled by ``s_j / w_j``
        (default), or fairshare's water-filled fair throughput ``Tfair_j`` (the behaviour before 0.2).
    refine : bool
        Maximise normalised throughput among the max-min optimal plans (second LP).
    """

    space_sharing: bool = False
    normalization: str = "proportional"
    refine: bool = True

    def __post_init__(self) -> None:
        """Check ``normalization``."""
        if self.normalization not in GAVEL_NORMALIZATIONS:
            raise InvalidInputError("normalization", self.normalization,
                                    f"must be one of {', '.join(GAVEL_NORMALIZATIONS)}")

    def plan(self, state: RoundState) -> TimeSharePlan:
        """The fractional max-min plan of the round (:func:`gavel_plan`), before the priority rule.

        ``plan.x`` is over ``state.model.columns``; with the default options ``plan.objective`` is Gavel's
        objective ``min_j s_j tau_j / (w_j prop_j)`` at ``plan.x``.
        """
        return gavel_plan(state.model, space_sharing=self.space_sharing, normalization=self.normalization,
                          refine=self.refine)

    def place(self, state: RoundState) -> Placed:
        """The plan (:meth:`plan`), rounded by Gavel's priority rule and a fill pass."""
        model = state.model
        plan = self.plan(state)
        x = priority_round(model, state, plan.x)
        return Placed(x, status_of(plan, x), f"max-min level {plan.bound:.6g}; LP {plan.message}")


@register("gavel-ss")
@dataclass(frozen=True)
class GavelSpaceSharingPolicy(GavelPolicy):
    """Gavel's max-min fairness with space sharing: ``gavel`` with ``space_sharing=True``.

    The plan is the optimum of Gavel's ``MaxMinFairnessPolicyWithPacking``: co-located pairs of jobs of equal
    gang size are columns of the LP besides every job alone. (At c4fa400 Gavel's class fails when jobs of
    different gang sizes are active; this one does not.) Options as for :class:`GavelPolicy`;
    ``space_sharing`` is always true.
    """

    space_sharing: bool = True

    def __post_init__(self) -> None:
        """Refuse ``space_sharing=False`` (that is ``gavel``), then check the other options."""
        if not self.space_sharing:
            raise InvalidInputError("space_sharing", self.space_sharing,
                                    "gavel-ss always space-shares (use the policy 'gavel' without it)")
        super().__post_init__()
