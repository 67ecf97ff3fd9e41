"""``fifo``: first in, first out, as Gavel's FIFO baseline (Narayanan et al., OSDI'20, ``policies/fifo.py``).

Order
    Jobs by arrival time, ties by job index.
Placement
    Each job in turn runs alone on ``s_j`` GPUs of the fastest type for it (largest ``T[j, g]``, ties by type
    index) among the types with enough free GPUs: Gavel's performance-aware FIFO (``FIFO_Perf``), which we
    take as the default. With ``heterogeneity_aware=False`` the type is the one with the most free GPUs
    (Gavel's base FIFO picks a random free type; a deterministic agnostic rule replaces the randomness). No
    co-location.
Fill
    ``backfill=True`` (default): a job that fits nowhere is skipped and later jobs may take the GPUs left, so
    no GPU stays idle while a job that fits waits. ``backfill=False`` is strict FIFO as in Gavel: the pass
    stops at the first job that fits nowhere and deliberately leaves the remaining GPUs idle (head-of-line
    blocking).
Preemption
    None is modelled beyond re-planning every round: a job that started keeps its priority by arrival anyway,
    so it is placed again unless an earlier job now needs its GPUs.
Status
    ``heuristic``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairshare.allocation import Status
from fairshare.policies._timeshare import place_alone
from fairshare.policies.base import Placed, Policy, RoundState, register

__all__ = ["FifoPolicy", "fifo_order"]


def fifo_order(state: RoundState) -> np.ndarray:
    """Job indices by arrival, ties by index."""
    arrival = np.asarray(state.arrival, dtype=np.float64)
    return np.lexsort((np.arange(len(arrival)), arrival))


@register("fifo")
@dataclass(frozen=True)
class FifoPolicy(Policy):
    """Jobs in arrival order, each alone on its fastest type with room.

    Parameters
    ----------
    heterogeneity_aware : bool
        Choose the fastest type with room (``False``: the type with the most free GPUs).
    backfill : bool
        Let later jobs use GPUs that an earlier job cannot (``False``: strict FIFO, stop at the first job that
        fits nowhere).
    """

    heterogeneity_aware: bool = True
    backfill: bool = True

    def place(self, state: RoundState) -> Placed:
        """Jobs in :func:`fifo_order`, each alone on its preferred type with room."""
        p = state.model.problem
        prefer = np.where(p.runnable, p.throughput, 0.0) if self.heterogeneity_aware else None
        return Placed(place_alone(state.model, fifo_order(state), prefer, backfill=self.backfill), Status.HEURISTIC)
