"""``gavel``: heterogeneity-aware max-min fairness, rounds by Gavel's priority rule.

Source: Narayanan et al., OSDI'20, "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", sections 3.1 (allocations as time fractions), 4.1 (max-min fairness) and 5 (round-based
mechanism).

Variables
    ``X_c in [0, 1]``: time fraction of the round that placement column ``c`` runs; the columns are every
    (job, type) alone column and, with ``space_sharing=True``, every co-location candidate (Gavel's
    "job combinations"); ``s``: the max-min level.
Constraints
    ``sum_{c ∋ j} X_c <= 1`` for every job (a pair counts for both of its jobs),
    ``sum_{c on g} s_j X_c <= C_g`` for every type (a pair occupies its gang once),
    ``sum_{c ∋ j} (T_{jc} / Tfair_j) X_c >= s`` for every job.
Objective
    maximise ``s``: the smallest effective throughput ``sum_c T_{jc} X_c`` normalised by the job's throughput
    under the fair share. For the fair share we use the model's ``Tfair_j`` (``model.fair.throughput``): the
    weighted, capacity-proportional share of spec round-problem.md section 2, which is what Gavel's "isolated"
    equal-share allocation is; weights enter through it (Gavel's code divides by ``w_j`` once more and
    multiplies by the scale factor on top of a share that already has both; we do not double-count).
Refinement (``refine=True``, default)
    A second LP keeps every job at ``(1 - 1e-7) s*`` and maximises total normalised throughput
    ``sum_c eff_c X_c``, so that capacity that max-min leaves free goes where it is most productive (Gavel's
    water-filling, which instead maximises the second-lowest level and so on, is not implemented).
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

from fairshare.formulation import RoundModel
from fairshare.policies._timeshare import (
    FractionalPlan,
    column_mask,
    efficiency_refine,
    max_min_plan,
    priority_round,
    status_of,
)
from fairshare.policies.base import Placed, Policy, RoundState, register

__all__ = ["GavelPolicy", "gavel_plan"]


def gavel_plan(model: RoundModel, *, space_sharing: bool = False, refine: bool = True) -> FractionalPlan:
    """Gavel's max-min time-share plan of a round (the LP of the module doc).

    Examples
    --------
    >>> from fairshare.problem import RoundProblem
    >>> from fairshare.formulation import build_model
    >>> p = RoundProblem.from_dict({"gpus": {"A": 1}, "jobs": [
    ...     {"id": "x", "scale": 1, "throughput": {"A": 2.0}},
    ...     {"id": "y", "scale": 1, "throughput": {"A": 4.0}}]})
    >>> plan = gavel_plan(build_model(p))
    >>> round(plan.level, 6), plan.x.round(6).tolist()
    (1.0, [0.5, 0.5])
    """
    usable = column_mask(model, space_sharing)
    plan = max_min_plan(model, usable)
    if not refine or plan.solves == 0:
        return plan
    better = efficiency_refine(model, usable, np.full(model.problem.num_jobs, plan.level))
    if better is None:  # pragma: no cover
        return plan
    return FractionalPlan(better.x, plan.level, plan.optimal and better.optimal, 2, better.message)


@register("gavel")
@dataclass(frozen=True)
class GavelPolicy(Policy):
    """Gavel's heterogeneity-aware max-min fairness policy with its priority-based rounds.

    Parameters
    ----------
    space_sharing : bool
        Also plan co-located pairs (Gavel's "with space sharing" variant).
    refine : bool
        Maximise normalised throughput among the max-min optimal plans (second LP).
    """

    space_sharing: bool = False
    refine: bool = True

    def place(self, state: RoundState) -> Placed:
        """Gavel's max-min plan (:func:`gavel_plan`), rounded by its priority rule."""
        model = state.model
        plan = gavel_plan(model, space_sharing=self.space_sharing, refine=self.refine)
        x = priority_round(model, state, plan.x)
        return Placed(x, status_of(plan, x), f"max-min level {plan.level:.6g}; LP {plan.message}")
