"""``max-throughput``: no fairness; maximise total normalised throughput.

Source: Gavel's "maximize total throughput" policy (Narayanan et al., OSDI'20, section 4.2).

Variables
    ``X_c``: column ``c`` runs this round (every alone column, and the co-location candidates when
    ``space_sharing=True``, the default).
Constraints
    ``sum_{c ∋ j} X_c <= 1`` (one placement per job; a pair counts for both),
    ``sum_{c on g} size_c X_c <= C_g`` (capacity).
Objective
    maximise ``sum_c eff_c X_c`` with ``eff_c = sum_{j in c} s_j T_{jc} / Tmax_j`` (``model.eff``): best-GPU
    equivalents of work, the efficiency ``E`` of spec round-problem.md section 3. Normalising by ``Tmax_j``
    keeps fast models from crowding out slow ones (Gavel normalises by a reference throughput in the same
    way).
Solution
    Default: the LP relaxation (HiGHS dual simplex), rounded by
    :func:`fairshare.methods.rounding.greedy_round` on this objective (columns by LP value, then by ``eff`` per
    GPU; the pass over every column is also the fill step). The LP is a multi-knapsack relaxation and is
    integral but for a few columns, so rounding loses little. ``milp=True`` solves the 0/1 problem with HiGHS
    instead, within ``time_limit`` seconds, and fills after it.
Status
    ``optimal`` when the LP (or MILP) was proven optimal and the placement is exactly its solution (for the
    LP: the relaxation happened to be integral); otherwise ``heuristic``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from fairshare.allocation import Status
from fairshare.formulation import RoundModel
from fairshare.methods.rounding import greedy_round
from fairshare.policies._timeshare import column_mask
from fairshare.policies.base import Placed, Policy, RoundState, register
from fairshare.solvers import LinearProgram, solve_lp

__all__ = ["MaxThroughputPolicy", "throughput_lp"]


def throughput_lp(model: RoundModel, usable: np.ndarray) -> LinearProgram:
    """``max sum_c eff_c X_c`` over the one-placement and capacity rows; unusable columns fixed to 0."""
    base = model.tightened_lp()
    cost = np.where(usable, model.eff, 0.0)
    upper = np.where(usable, base.col_upper, 0.0)
    return LinearProgram(cost, base.matrix, base.row_lower, base.row_upper, base.col_lower, upper,
                         base.num_placement_cols)


@register("max-throughput")
@dataclass(frozen=True)
class MaxThroughputPolicy(Policy):
    """Maximise total normalised throughput, ignoring fairness.

    Parameters
    ----------
    space_sharing : bool
        Consider co-located pairs.
    milp : bool
        Solve the 0/1 problem (HiGHS MILP) instead of rounding the LP.
    time_limit : float
        ``milp=True``: seconds before HiGHS stops with its incumbent.
    """

    space_sharing: bool = True
    milp: bool = False
    time_limit: float = 1.0

    def place(self, state: RoundState) -> Placed:
        """The LP (or MILP) of the module doc, rounded greedily with a fill pass."""
        model = state.model
        if model.columns.num == 0:
            return Placed(np.zeros(0), Status.OPTIMAL, "empty round")
        usable = column_mask(model, self.space_sharing)
        # greedy_round orders by LP value, then by value per GPU, and skips columns of value <= 0
        scored = dataclasses.replace(model, value=np.where(usable, model.eff, 0.0))
        lp = throughput_lp(model, usable)
        if self.milp:
            out = solve_lp(lp, integer=True, time_limit=self.time_limit)
            x_opt = np.round(out.x) if out.x is not None else np.zeros(model.columns.num)
        else:
            out = solve_lp(lp)
            x_opt = out.x if out.x is not None else np.zeros(model.columns.num)
        x = greedy_round(scored, x_opt)
        exact = out.optimal and out.x is not None and bool(np.allclose(out.x, x, atol=1e-7))
        return Placed(x, Status.OPTIMAL if exact else Status.HEURISTIC,
                      f"{'MILP' if self.milp else 'LP'} {out.message}")
