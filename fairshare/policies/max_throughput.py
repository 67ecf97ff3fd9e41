"""``max-throughput``: no fairness; maximise the total throughput (Gavel's ``ThroughputSumWithPerf``).

Source: Gavel's "maximize total throughput" policy (Narayanan et al., OSDI'20, section 4.2). By default the
plan is the optimum of Gavel's own ``ThroughputSumWithPerf`` (with ``space_sharing=True``, the default here:
its packing class ``ThroughputNormalizedByCostSumWithPackingSLOs`` with no costs and no SLOs) at commit
c4fa400 of github.com/stanford-futuredata/gavel, written here from its definition and checked against the
optima of Gavel's code in ``tests/policies/test_gavel_reference.py``.

Variables
    ``X_c``: time fraction (plan) or 0/1 value (placement) of column ``c``: every alone column, and the
    co-location candidates when ``space_sharing=True``.
Constraints
    ``sum_{c ∋ j} X_c <= 1`` (one placement per job; a pair counts for both),
    ``sum_{c on g} size_c X_c <= C_g`` (capacity).
Objective (``objective="raw"``, the default: Gavel's)
    maximise ``sum_j tau_j = sum_c (T_{a c} + T_{b c}) X_c``, the raw sum of every job's throughput in
    iterations (steps) per second, models of different speeds added as they are. (Gavel's class computes a
    per-job normalisation factor but never uses it in its objective.)
Option ``objective="normalized"`` (fairshare's earlier adaptation)
    maximise ``sum_c eff_c X_c`` with ``eff_c = sum_{j in c} s_j T_{jc} / Tmax_j`` (``model.eff``): best-GPU
    equivalents of work, the efficiency ``E`` of spec round-problem.md section 3, so that fast models do not
    crowd out slow ones. This is fairshare's own measure, not Gavel's.
Solution
    :meth:`MaxThroughputPolicy.plan` is the LP relaxation (HiGHS dual simplex), Gavel's program. The placement
    rounds it with :func:`fairshare.methods.rounding.greedy_round` on the same objective (columns by LP
    value, then by objective per GPU; the pass over every column is also the fill step). The LP is a
    multi-knapsack relaxation and is integral but for a few columns, so rounding loses little.
    ``milp=True`` solves the 0/1 problem with HiGHS instead, within ``time_limit`` seconds, and fills after it.
Status
    ``optimal`` when the LP (or MILP) was proven optimal and the placement is exactly its solution (for the
    LP: the relaxation happened to be integral); otherwise ``heuristic``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from fairshare.allocation import Status
from fairshare.errors import InvalidInputError
from fairshare.formulation import RoundModel
from fairshare.methods.rounding import greedy_round
from fairshare.policies._timeshare import column_mask
from fairshare.policies.base import Placed, Policy, RoundState, TimeSharePlan, register
from fairshare.solvers import LinearProgram, solve_lp

__all__ = ["THROUGHPUT_OBJECTIVES", "MaxThroughputPolicy", "column_throughput", "throughput_lp"]

THROUGHPUT_OBJECTIVES = ("raw", "normalized")
"""Values of ``objective``: Gavel's raw sum of throughputs (default), fairshare's normalised efficiency."""


def column_throughput(model: RoundModel, objective: str = "raw") -> np.ndarray:
    """Objective coefficient of every column: ``T_{a c} + T_{b c}`` (``"raw"``) or ``eff_c`` (``"normalized"``).

    Raises
    ------
    InvalidInputError
        For an unknown ``objective``.
    """
    if objective not in THROUGHPUT_OBJECTIVES:
        raise InvalidInputError("objective", objective, f"must be one of {', '.join(THROUGHPUT_OBJECTIVES)}")
    if objective == "normalized":
        return np.asarray(model.eff, dtype=np.float64)
    c = model.columns
    return c.tput_a + c.tput_b


def throughput_lp(model: RoundModel, usable: np.ndarray, objective: str = "raw") -> LinearProgram:
    """``max sum_c cost_c X_c`` over the one-placement and capacity rows; unusable columns fixed to 0.

    ``cost`` is :func:`column_throughput` for ``objective``.
    """
    base = model.tightened_lp()
    cost = np.where(usable, column_throughput(model, objective), 0.0)
    upper = np.where(usable, base.col_upper, 0.0)
    return LinearProgram(cost, base.matrix, base.row_lower, base.row_upper, base.col_lower, upper,
                         base.num_placement_cols)


@register("max-throughput")
@dataclass(frozen=True)
class MaxThroughputPolicy(Policy):
    """Maximise the total throughput, ignoring fairness (Gavel's ``ThroughputSumWithPerf``).

    Parameters
    ----------
    space_sharing : bool
        Consider co-located pairs (Gavel's packing variant; ``False``: ``ThroughputSumWithPerf`` itself).
    objective : {"raw", "normalized"}
        Gavel's raw sum of throughputs (default) or fairshare's normalised efficiency ``sum_c eff_c X_c``
        (the behaviour before 0.2).
    milp : bool
        Solve the 0/1 problem (HiGHS MILP) instead of rounding the LP.
    time_limit : float
        ``milp=True``: seconds before HiGHS stops with its incumbent.
    """

    space_sharing: bool = True
    objective: str = "raw"
    milp: bool = False
    time_limit: float = 1.0

    def __post_init__(self) -> None:
        """Check ``objective``."""
        if self.objective not in THROUGHPUT_OBJECTIVES:
            raise InvalidInputError("objective", self.objective,
                                    f"must be one of {', '.join(THROUGHPUT_OBJECTIVES)}")

    def plan(self, state: RoundState) -> TimeSharePlan:
        """The LP optimum of the round: time fractions of ``state.model.columns`` maximising the objective.

        ``job_values`` are the jobs' throughputs ``tau_j`` at ``x`` (steps/s); with the default objective
        ``plan.objective`` is their sum, Gavel's objective.
        """
        model = state.model
        m, n = model.columns.num, model.problem.num_jobs
        if m == 0:
            return TimeSharePlan(np.zeros(0), np.zeros(n), 0.0, 0.0, True, 0, "empty round")
        usable = column_mask(model, self.space_sharing)
        out = solve_lp(throughput_lp(model, usable, self.objective))
        x = np.zeros(m) if out.x is None else np.clip(out.x, 0.0, 1.0)
        cost = np.where(usable, column_throughput(model, self.objective), 0.0)
        return TimeSharePlan(x, model.job_throughput(x), float(cost @ x), float(out.objective), out.optimal, 1,
                             f"LP {out.message}")

    def place(self, state: RoundState) -> Placed:
        """The LP (or MILP) of the module doc, rounded greedily with a fill pass."""
        model = state.model
        if model.columns.num == 0:
            return Placed(np.zeros(0), Status.OPTIMAL, "empty round")
        usable = column_mask(model, self.space_sharing)
        # greedy_round orders by LP value, then by value per GPU, and skips columns of value <= 0
        scored = dataclasses.replace(model, value=np.where(usable, column_throughput(model, self.objective), 0.0))
        lp = throughput_lp(model, usable, self.objective)
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
