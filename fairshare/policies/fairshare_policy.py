"""``fairshare``: the round MILP of spec round-problem.md (efficiency under spatiotemporal fairness).

maximise ``E - lambda * sum_j w_j sigma_j`` subject to one placement per job, capacity, whole gangs and
``rho_j + sigma_j >= (1 - epsilon) + D_j``, where ``D_j`` carries what a job was owed from earlier rounds
(the simulator supplies the deficits in ``state.problem``). Modes ``fast`` (LP + rounding + polish, the
default) and ``exact`` (HiGHS to proven optimality or a time limit); see :func:`fairshare.allocate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fairshare.allocation import Allocation
from fairshare.policies.base import RoundState, register


@register("fairshare")
@dataclass(frozen=True)
class FairsharePolicy:
    """fairshare's own policy.

    Parameters
    ----------
    mode : {"fast", "exact"}
    epsilon : float, optional
        Overrides the round's epsilon (the simulator builds rounds with this value too).
    options : dict
        :class:`~fairshare.allocate.SolveOptions` fields (``time_limit``, ``polish_seconds``, ...).
    """

    mode: str = "fast"
    epsilon: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    name: str = "fairshare"

    def allocate(self, state: RoundState) -> Allocation:
        from fairshare.allocate import allocate, solve_model

        problem = state.problem
        if self.epsilon is not None and self.epsilon != problem.epsilon:
            return allocate(problem.replace(epsilon=self.epsilon), mode=self.mode, options=self.options)
        return solve_model(state.model, mode=self.mode, options=self.options)
