"""``las-tiresias``: heterogeneity-agnostic least attained service, Tiresias-style (fairshare's rule).

Source: Gu et al., NSDI'19, "Tiresias: A GPU Cluster Manager for Distributed Deep Learning". This was
fairshare's ``las`` before 0.2; ``las`` is now Gavel's heterogeneity-agnostic max-min policy
(:mod:`fairshare.policies.las`), which this rule only resembles: it has no time-share plan, and in simulation
it pins some jobs to slow types.

Order
    Jobs in increasing attained service per unit of weight, ``attained_service_j / w_j`` (GPU-seconds received
    so far, ``state.attained_service``; with unit weights this is plain LAS), ties by arrival, then job index.
Placement
    Each job in turn runs alone on ``s_j`` GPUs of the type with the most free GPUs at that moment among the
    types where it can run at all (ties by type index): the choice never looks at throughputs. A job that fits
    nowhere is skipped and the next one is tried, so the pass is also the fill step (no GPU stays idle while a
    job that fits waits). No co-location.
Simplifications
    Tiresias's discretised two-dimensional priority queues, its starvation guard and its gang placement
    consolidation are not modelled; re-planning every round makes the policy preemptive at round boundaries.
Status
    ``heuristic``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairshare.allocation import Status
from fairshare.policies._timeshare import place_alone
from fairshare.policies.base import Placed, Policy, RoundState, register

__all__ = ["TiresiasLasPolicy", "las_order"]


def las_order(state: RoundState) -> np.ndarray:
    """Job indices by attained service per unit of weight, then arrival, then index."""
    p = state.model.problem
    service = np.asarray(state.attained_service, dtype=np.float64) / p.weight
    return np.lexsort((np.arange(p.num_jobs), np.asarray(state.arrival, dtype=np.float64), service))


@register("las-tiresias")
@dataclass(frozen=True)
class TiresiasLasPolicy(Policy):
    """Tiresias-style LAS: least attained service first, each job alone on the type with the most free GPUs."""

    def place(self, state: RoundState) -> Placed:
        """Jobs in :func:`las_order`, each alone on the type with the most free GPUs."""
        return Placed(place_alone(state.model, las_order(state)), Status.HEURISTIC)
